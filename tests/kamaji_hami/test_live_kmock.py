"""The live path of `verify` (create pods, wait, observe, clean up) over HTTP against kmock.

`run_verify` talks through real `KubeClient`s (built from kubeconfig files, as `gpulab verify`
does) to one kmock `KubernetesEmulator` per cluster, while tests/kamaji_hami/kmock_lab.py plays
Kamaji, HAMi (webhook, scheduler, node lock) and the kubelet; see its docstring for the kmock
limits worked around. TC-08's cross-tenant credential probe is simulated there: kmock cannot
authenticate (`RejectingClient`). Waits are real but short (TIMEOUTS).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from gpulab import naming
from gpulab.adapters.kube import APPLY_PATCH, MERGE_PATCH
from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.observe import Timeouts
from gpulab.stacks.kamaji_hami.record import read_recording, write_recording
from gpulab.stacks.kamaji_hami.run import evaluate, run_verify
from gpulab.verify import observe as verify_observe
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.kmock_lab import EVENTS, FELIX, NODES, PODS, KmockLab

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.verify.report import VerifyReport

    MakeLab = Callable[..., KmockLab]

NS = verify_observe.VERIFY_NAMESPACE
TENANTS = ("tenant-a", "tenant-b")
GPU_PODS = ("gpu-share-1", "gpu-share-2", "gpu-share-3", "gpu-share-4", "gpu-mem-big")
# A healthy pod runs within a few player rounds (10 ms each); the bounds only matter when a pod
# never gets there, which is what the failure scenarios wait out.
TIMEOUTS = Timeouts(running=1.5, refused=0.75, cleanup=2.0, interval=0.02)
POD_PATH = f"/api/v1/namespaces/{NS}/pods"
NS_PATH = f"/api/v1/namespaces/{NS}"


@pytest.fixture
def make_lab(profile: KamajiHamiProfile, tmp_path: Path) -> Iterator[MakeLab]:
    """KmockLab(profile, **HamiPlayer options), stopped after the test."""
    with contextlib.ExitStack() as stack:
        def make(**hami: Any) -> KmockLab:
            return stack.enter_context(KmockLab(profile, tmp_path, **hami))

        yield make


@pytest.fixture
def lab(make_lab: MakeLab) -> KmockLab:
    return make_lab()


def _run(lab: KmockLab, profile: KamajiHamiProfile, **kwargs: Any) -> VerifyReport:
    kwargs.setdefault("timeouts", TIMEOUTS)
    report = run_verify(profile, b.LAB, lab.gateways(), **kwargs)
    assert lab.problems() == []  # no exception inside the emulators or the player
    return report


def _status(report: VerifyReport) -> dict[tuple[str, str], str]:
    return {(r.id, r.tenant): r.status for r in report.results}


def _not_passed(report: VerifyReport) -> list[tuple[str, str, str]]:
    return [(r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]


def _creates(*pods: str) -> list[tuple[str, str]]:
    """What KubeClient.apply sends for a new pod to kmock: server-side apply (404: kmock does not
    create through SSA), then its documented fallback, a POST."""
    out = []
    for pod in pods:
        out += [("PATCH", f"{POD_PATH}/{pod}?fieldManager=gpulab&force=true"),
                ("POST", f"{POD_PATH}?fieldManager=gpulab")]
    return out


def _deletes(*pods: str) -> list[tuple[str, str]]:
    return [("DELETE", f"{POD_PATH}/{pod}?propagationPolicy=Background") for pod in pods]


NS_APPLY = ("PATCH", f"{NS_PATH}?fieldManager=gpulab&force=true")
NS_DELETE = ("DELETE", f"{NS_PATH}?propagationPolicy=Background")


def _object_writes(cluster: Any) -> list[tuple[str, str]]:
    """Writes of whole objects (applies, posts, deletes), without the annotation merge patches
    verify sends to complete HAMi binds (test_verify_releases_locks_... checks those)."""
    return [w for w in cluster.writes()
            if not (w[0] == "PATCH" and "?" not in w[1])]


def _verify_pods_left(lab: KmockLab, tenant: str) -> list[str]:
    return sorted(lab.tenant(tenant).names(PODS, NS))


def _has_namespace(lab: KmockLab, tenant: str) -> bool:
    cluster = lab.tenant(tenant)
    return bool(cluster.call(lambda: NS in cluster.namespaces))


def _replays_the_same(report: VerifyReport, profile: KamajiHamiProfile, folder: Path) -> None:
    write_recording(folder, report.state, profile)
    recording = read_recording(folder)
    assert recording.state == report.state
    replay = evaluate(recording.state, recording.profile())
    assert replay.replayed is True
    assert [r.to_dict() for r in replay.results] == [r.to_dict() for r in report.results]


# --------------------------------------------------------------------------- tests


def test_healthy_lab_passes_everything_over_http_and_cleans_up(
        lab: KmockLab, profile: KamajiHamiProfile, tmp_path: Path) -> None:
    report = _run(lab, profile)

    assert len(report.results) == 16
    assert all(s == "pass" for s in _status(report).values()), _not_passed(report)
    for tenant in TENANTS:
        cluster = lab.tenant(tenant)
        # Every write verify made, in order: the namespace, each pod, then the cleanup.
        assert _object_writes(cluster) == [NS_APPLY, *_creates(*GPU_PODS),
                                           *_deletes(*GPU_PODS), NS_DELETE]
        completed = [w for w in cluster.writes() if w == ("PATCH", f"{POD_PATH}/gpu-share-1")]
        assert completed, "verify completes the bind of its running pods"
        posted = [r for r in cluster.requests() if r.url.path == POD_PATH
                  and str(r.method.value) == "POST"]
        assert [r.data["metadata"]["name"] for r in posted] == list(GPU_PODS)
        assert all(r.data["metadata"]["labels"][naming.LABEL_TENANT] == tenant for r in posted)
        # objects by server-side apply; bind completion by merge patch of annotations only
        assert {r.headers.get("Content-Type") for r in cluster.requests()
                if str(r.method.value) == "PATCH"} == {APPLY_PATCH, MERGE_PATCH}
        # The tenant's own kubeconfig was used for every request to its API server.
        assert {r.headers.get("Authorization") for r in cluster.requests()} == {
            f"Bearer {cluster.token}"}
        assert _verify_pods_left(lab, tenant) == []
        assert cluster.names(EVENTS, NS) == []  # gone with the namespace
        assert not _has_namespace(lab, tenant)

        st = report.state.tenants[tenant]
        assert st.api_version == "v1.36.4"  # the /version reaction, not kmock's canned one
        assert [(p.pod, p.ok, p.excerpt.endswith(FELIX)) for p in st.logs_probes or ()] == [
            ("calico-node-j62f8", True, True)]
        assert ("GET", "/api/v1/namespaces/kube-system/pods/calico-node-j62f8/log"
                       "?tailLines=5&container=calico-node") in cluster.calls()
        assert st.cleanup_error == ""
        assert [(r.name, r.outcome) for r in st.gpu_pods or ()] == [
            ("gpu-share-1", "running"), ("gpu-share-2", "running"), ("gpu-share-3", "running"),
            ("gpu-share-4", "refused"), ("gpu-mem-big", "refused")]
        first = st.pod_run("gpu-share-1")
        assert first is not None and first.created is not None and first.pod is not None
        assert o.scheduler_name(first.created) == o.HAMI_SCHEDULER  # the webhook's rewrite
        uid = first.created["metadata"]["uid"]
        assert uid.startswith(f"{tenant}-uid-")
        card = profile.tenant(tenant).device_ids(0)[0]
        assert o.annots(first.pod)[o.ALLOCATED].startswith(f"{card},NVIDIA,")
        assert {e["reason"] for e in first.events} == {"FilteringSucceed", "BindingSucceed"}
        assert all(e["involvedObject"]["uid"] == uid for e in first.events)
        probe = (st.credential_probes or ())[0]
        assert (probe.outcome, probe.detail) == (
            "rejected", f"list Namespace list at {lab.tenant(probe.server_of).url}: "
                        f"401 Unauthorized: Unauthorized")
    # The management cluster was only read: each tenant's TenantControlPlane and its pods.
    assert sorted(lab.management.calls()) == sorted(
        [("GET", f"/apis/kamaji.clastix.io/v1alpha1/namespaces/tenants/tenantcontrolplanes/{t}")
         for t in TENANTS]
        + [("GET", f"/api/v1/namespaces/tenants/pods?labelSelector=kamaji.clastix.io/name={t}")
           for t in TENANTS])
    # Each tenant's credentials were presented to the other tenant's server (merged kubeconfig).
    assert sorted(lab.probes) == [("tenant-a", "tenant-b"), ("tenant-b", "tenant-a")]
    assert list((tmp_path / "verify").iterdir()) == []  # the probe kubeconfigs were deleted
    _replays_the_same(report, profile, tmp_path / "recording")


@pytest.mark.slow
def test_webhook_not_reached_in_tenant_b_and_the_recording_replays_the_same(
        lab: KmockLab, profile: KamajiHamiProfile, tmp_path: Path) -> None:
    lab.hami["tenant-b"].webhook_reachable = False  # a broken Konnectivity tunnel

    report = _run(lab, profile)

    status = _status(report)
    assert all(status[(c, "tenant-a")] == "pass" for c in
               ("TC-01", "TC-02", "TC-03", "TC-04", "TC-05", "TC-06", "TC-07", "TC-08"))
    for check in ("TC-03", "TC-05", "TC-06", "TC-07"):
        assert status[(check, "tenant-b")] == "fail", check
    tc03 = next(r for r in report.results if r.id == "TC-03" and r.tenant == "tenant-b")
    assert tc03.reason.startswith(
        "gpu-share-1 kept schedulerName default-scheduler: HAMi's webhook was not called: the "
        "tenant API server could not reach it through Konnectivity")
    assert "konnectivity-agent-gxqbv Running" in tc03.reason
    st = report.state.tenants["tenant-b"]
    assert [(r.name, r.outcome) for r in st.gpu_pods or ()] == [
        ("gpu-share-1", "timeout"), ("gpu-share-2", "not-created"),
        ("gpu-share-3", "not-created"), ("gpu-share-4", "not-created"),
        ("gpu-mem-big", "timeout")]
    run = st.pod_run("gpu-share-1")
    assert run is not None and run.created is not None
    assert o.scheduler_name(run.created) == "default-scheduler"
    assert run.events == ()
    # Only the pods verify could create were created, and they were cleaned up.
    assert lab.tenant("tenant-b").writes() == [
        NS_APPLY, *_creates("gpu-share-1", "gpu-mem-big"),
        *_deletes("gpu-share-1", "gpu-mem-big"), NS_DELETE]
    assert _verify_pods_left(lab, "tenant-b") == []
    _replays_the_same(report, profile, tmp_path / "recording")


@pytest.mark.slow
def test_keep_leaves_the_pods_and_the_next_run_replaces_them(
        lab: KmockLab, profile: KamajiHamiProfile) -> None:
    kept = _run(lab, profile, keep=True)
    assert all(s == "pass" for s in _status(kept).values()), _not_passed(kept)
    for tenant in TENANTS:
        assert _object_writes(lab.tenant(tenant)) == [NS_APPLY, *_creates(*GPU_PODS)]
        assert _verify_pods_left(lab, tenant) == sorted(GPU_PODS)
        assert _has_namespace(lab, tenant)
    earlier = kept.state.tenants["tenant-a"].pod_run("gpu-share-4")
    assert earlier is not None and earlier.created is not None
    stale_uid = earlier.created["metadata"]["uid"]

    again = _run(lab, profile)

    assert all(s == "pass" for s in _status(again).values()), _not_passed(again)
    for tenant in TENANTS:
        writes = _object_writes(lab.tenant(tenant))
        # The leftovers are deleted before the namespace is applied again, then this run's own.
        assert writes[11:] == [*_deletes(*GPU_PODS), NS_APPLY, *_creates(*GPU_PODS),
                               *_deletes(*GPU_PODS), NS_DELETE]
        assert _verify_pods_left(lab, tenant) == []
    # The earlier gpu-share-4's refusal events were still there; only this pod's count.
    run = again.state.tenants["tenant-a"].pod_run("gpu-share-4")
    assert run is not None and run.created is not None
    assert run.created["metadata"]["uid"] != stale_uid
    assert run.events
    assert {e["involvedObject"]["uid"] for e in run.events} == {run.created["metadata"]["uid"]}


def test_verify_releases_locks_the_mock_device_plugin_never_does(
        make_lab: MakeLab, profile: KamajiHamiProfile) -> None:
    lab = make_lab(lock_expire=None)  # HAMi's node lock never expires by itself

    report = _run(lab, profile, complete_binds=True)

    assert all(s == "pass" for s in _status(report).values()), _not_passed(report)
    for tenant in TENANTS:
        worker = b.worker(tenant)
        run = report.state.tenants[tenant].pod_run("gpu-share-2")
        assert run is not None
        assert run.notes == (f"set hami.io/bind-phase=success on gpu-share-2 and released HAMi's "
                             f"node lock on {worker} (the mock device plugin never does)",)
        cluster = lab.tenant(tenant)
        annotations = [(str(r.method.value), r.url.path, r.data) for r in cluster.requests()
                       if r.headers.get("Content-Type") == MERGE_PATCH]
        for pod in ("gpu-share-1", "gpu-share-2", "gpu-share-3"):
            assert ("PATCH", f"{POD_PATH}/{pod}",
                    {"metadata": {"annotations": {o.BIND_PHASE: "success"}}}) in annotations
        # pod first, then the lock, under the node's resourceVersion (HAMi's ReleaseNodeLock)
        releases = [data for method, path, data in annotations
                    if (method, path) == ("PATCH", f"/api/v1/nodes/{worker}")]
        assert len(releases) == 3
        assert all(d["metadata"]["annotations"] == {o.NODE_LOCK: None}
                   and d["metadata"]["resourceVersion"] for d in releases)
        order = [path for _, path, _ in annotations]
        assert order.index(f"{POD_PATH}/gpu-share-2") < [
            i for i, p in enumerate(order) if p == f"/api/v1/nodes/{worker}"][1]
        node = cluster.stored(NODES, None, worker)
        assert node is not None and o.NODE_LOCK not in o.annots(node)


@pytest.mark.slow
def test_lock_never_released_is_reported_as_lock_contention(
        make_lab: MakeLab, profile: KamajiHamiProfile) -> None:
    lab = make_lab(lock_expire=None)

    report = _run(lab, profile, checks=["TC-03", "TC-05"], complete_binds=False)

    status = _status(report)
    assert status[("TC-03", "tenant-a")] == "pass"  # the first pod binds
    tc05 = next(r for r in report.results if r.id == "TC-05" and r.tenant == "tenant-a")
    assert tc05.status == "fail"
    assert "HAMi could not bind gpu-share-2: node lock contention" in tc05.reason
    run = report.state.tenants["tenant-a"].pod_run("gpu-share-2")
    assert run is not None and run.outcome == "timeout"
    assert o.lock_contention(run.events) is not None
    assert not any(r.headers.get("Content-Type") == MERGE_PATCH
                   for r in lab.tenant("tenant-a").requests())  # verify left the lock alone
