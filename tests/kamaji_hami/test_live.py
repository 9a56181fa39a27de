"""The live path (observe → evaluate) against in-memory API servers where the test plays HAMi."""

from __future__ import annotations

import _thread
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from gpulab import naming
from gpulab.errors import AdapterError
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks.registry import select
from gpulab.stacks.kamaji_hami.observe import Gateways, Timeouts, observe_lab
from gpulab.stacks.kamaji_hami.record import read_recording, write_recording
from gpulab.stacks.kamaji_hami.run import evaluate, run_verify
from gpulab.verify import observe as verify_observe
from gpulab.verify.observe import Clock
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as hw
from tests.kamaji_hami.builders import with_gpus
from tests.kamaji_hami.fakes import FakeLab, fake_lab

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.verify.report import VerifyReport

NS = verify_observe.VERIFY_NAMESPACE
TIMEOUTS = Timeouts(running=30, refused=20, cleanup=10, interval=1)
# Longest possible observation per tenant: three share pods + two refusals + cleanup wait.
BOUND = 3 * TIMEOUTS.running + 2 * TIMEOUTS.refused + TIMEOUTS.cleanup + 10


def _run(lab: FakeLab, profile: KamajiHamiProfile, **kwargs: Any) -> VerifyReport:
    kwargs.setdefault("timeouts", TIMEOUTS)
    return run_verify(profile, b.LAB, Gateways(lab.management, lab.tenant, lab.cross),
                      clock=Clock(lab.clock.now, lab.clock.sleep), **kwargs)


def _status(report: VerifyReport) -> dict[tuple[str, str], str]:
    return {(r.id, r.tenant): r.status for r in report.results}


def _verify_objects(lab: FakeLab, tenant: str) -> list[tuple[str, str, str]]:
    """verify's own objects (the namespace's `default` ServiceAccount is the controller's)."""
    return sorted(k for k in lab.tenants[tenant].objects
                  if (k[1] == NS and k[0] != "ServiceAccount")
                  or (k[0] == "Namespace" and k[2] == NS))


def test_healthy_lab_passes_everything_and_cleans_up(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    seen: list[tuple[str, str]] = []
    report = _run(lab, profile, progress=lambda t, m: seen.append((t, m)))
    assert all(s == "pass" for s in _status(report).values()), [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    assert len(report.results) == 16
    for tenant in ("tenant-a", "tenant-b"):
        assert _verify_objects(lab, tenant) == []
        created = [c for c in lab.tenants[tenant].calls if c[:2] == ("apply", "Pod")]
        assert [c[2] for c in created] == ["gpu-share-1", "gpu-share-2", "gpu-share-3",
                                           "gpu-share-4", "gpu-mem-big"]
        st = report.state.tenants[tenant]
        assert st.cleanup_error == ""
        run = st.pod_run("gpu-share-1")
        assert run is not None and run.created is not None
        assert "managedFields" not in run.created["metadata"]
        assert run.created["metadata"]["labels"][naming.LABEL_TENANT] == tenant
        assert run.created["metadata"]["labels"][naming.LABEL_RUN] == report.state.run_id
        assert len(report.state.run_id) == 12
        worker = b.worker(tenant)
        assert run.notes == (f"set hami.io/bind-phase=success on gpu-share-1 and released HAMi's "
                             f"node lock on {worker} (the mock device plugin never does)",)
        logs = [c for c in lab.tenants[tenant].calls if c[0] == "pod_logs"]
        assert logs == [("pod_logs", "kube-system", "calico-node-j62f8", "calico-node")]
        assert {t for t, _ in seen} == {"tenant-a", "tenant-b"}
    assert lab.clock.slept < BOUND
    assert report.replayed is False


def test_replay_of_the_recording_gives_the_same_verdicts(profile: KamajiHamiProfile,
                                                         tmp_path: Path) -> None:
    lab = fake_lab(profile)
    lab.hami["tenant-b"].webhook_reachable = False  # some failures to reproduce, too
    live = _run(lab, profile)
    write_recording(tmp_path / "rec", live.state, profile)
    recording = read_recording(tmp_path / "rec")
    assert recording.state == live.state
    replay = evaluate(recording.state, recording.profile())
    assert [r.to_dict() for r in replay.results] == [r.to_dict() for r in live.results]
    assert replay.replayed is True


def test_broken_tunnel_fails_silently_admitted_pods(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.hami["tenant-b"].webhook_reachable = False
    report = _run(lab, profile)
    status = _status(report)
    assert all(status[(c, "tenant-a")] == "pass" for c in ("TC-03", "TC-05", "TC-06", "TC-07"))
    for check in ("TC-03", "TC-05", "TC-06", "TC-07"):
        assert status[(check, "tenant-b")] == "fail", check
    tc03 = next(r for r in report.results if r.id == "TC-03" and r.tenant == "tenant-b")
    assert "HAMi's webhook was not called" in tc03.reason
    st = report.state.tenants["tenant-b"]
    assert [(r.name, r.outcome) for r in st.gpu_pods or ()] == [
        ("gpu-share-1", "timeout"), ("gpu-share-2", "not-created"),
        ("gpu-share-3", "not-created"), ("gpu-share-4", "not-created"),
        ("gpu-mem-big", "timeout")]
    run = st.pod_run("gpu-share-1")
    assert run is not None
    assert "schedulerName default-scheduler" in run.last_seen
    assert lab.clock.slept < BOUND  # every wait was bounded


def test_the_lock_timeout_alone_lets_every_pod_bind(profile: KamajiHamiProfile) -> None:
    """What a user's own GPU pods get: no verify to complete their binds, only HAMi's short
    --node-lock-timeout (5s in the lab) between one bind and the next."""
    lab = fake_lab(profile)
    report = _run(lab, profile, complete_binds=False)
    assert all(s == "pass" for s in _status(report).values()), [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    assert not any(c[0] == "annotate" for c in lab.tenants["tenant-a"].calls)


def test_lock_never_released_is_reported_as_lock_contention(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile, lock_expire=None)  # upstream-like: the lock outlives every wait
    report = _run(lab, profile, complete_binds=False)
    status = _status(report)
    assert status[("TC-03", "tenant-a")] == "pass"  # the first pod binds
    tc05 = next(r for r in report.results if r.id == "TC-05" and r.tenant == "tenant-a")
    assert tc05.status == "fail"
    assert "HAMi could not bind gpu-share-2: node lock contention" in tc05.reason
    run = report.state.tenants["tenant-a"].pod_run("gpu-share-2")
    assert run is not None and run.outcome == "timeout"
    assert "node lock contention" in run.last_seen
    assert not any(c[0] == "annotate" for c in lab.tenants["tenant-a"].calls)


def test_verify_can_release_its_own_pods_locks(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile, lock_expire=None)
    report = _run(lab, profile, complete_binds=True)
    assert all(s == "pass" for s in _status(report).values())
    run = report.state.tenants["tenant-a"].pod_run("gpu-share-2")
    assert run is not None
    assert run.notes == (f"set hami.io/bind-phase=success on gpu-share-2 and released HAMi's "
                         f"node lock on {b.worker('tenant-a')} (the mock device plugin never does)",)
    annotated = [c for c in lab.tenants["tenant-a"].calls if c[0] == "annotate"]
    assert ("annotate", "Node", b.worker("tenant-a"), "hami.io/mutex.lock") in annotated
    assert ("annotate", "Pod", "gpu-share-2", "hami.io/bind-phase") in annotated


def test_foreign_lock_is_left_alone(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile, lock_expire=None)
    api = lab.tenants["tenant-a"]
    node = api.obj("Node", b.worker("tenant-a"))
    assert node is not None
    node["metadata"]["annotations"]["hami.io/mutex.lock"] = (
        "2026-11-20T10:00:00Z,default,someone-elses-pod")
    report = _run(lab, profile, complete_binds=True, checks=["TC-03"])
    assert report.results[0].status == "fail"
    assert "node lock contention" in report.results[0].reason
    assert not any(c[:2] == ("annotate", "Node") for c in api.calls)


def test_pinning_ignored_spreads_the_pods(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.hami["tenant-b"].honour_pinning = False
    report = _run(lab, profile)
    tc05 = next(r for r in report.results if r.id == "TC-05" and r.tenant == "tenant-b")
    assert tc05.status == "fail"
    assert "the pods were spread over cards" in tc05.reason


def test_shared_ca_fails_isolation(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.share_ca = True
    report = _run(lab, profile, checks=["TC-08"])
    assert _status(report) == {("TC-08", "tenant-a"): "fail", ("TC-08", "tenant-b"): "fail"}
    assert "accepted tenant-a's admin credentials" in report.results[0].reason
    # TC-08 alone still creates a verify pod in each tenant to look for across tenants.
    assert [c[2] for c in lab.tenants["tenant-a"].calls if c[:2] == ("apply", "Pod")] == [
        "gpu-share-1"]


def test_tenant_down(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.down.add("tenant-b")
    report = _run(lab, profile)
    for result in report.results:
        if result.tenant == "tenant-a":
            assert result.status == "pass", (result.id, result.reason)
        elif result.id == "TC-01":
            assert result.status == "fail"
            assert "did not answer" in result.reason
        else:
            assert result.status in ("fail", "error"), result.id
            assert "did not answer" in result.reason, result.id


def test_only_selected_checks_are_observed(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    report = _run(lab, profile, checks=["TC-07"])
    assert [(r.id, r.tenant, r.status) for r in report.results] == [
        ("TC-07", "tenant-a", "pass"), ("TC-07", "tenant-b", "pass")]
    assert [c[2] for c in lab.tenants["tenant-a"].calls if c[:2] == ("apply", "Pod")] == [
        "gpu-mem-big"]
    assert report.state.checks == ("TC-07",)
    st = report.state.tenants["tenant-a"]
    assert st.logs_probes is None and st.listing is None


def test_keep_leaves_the_pods_and_the_next_run_replaces_them(
        profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    assert all(s == "pass" for s in _status(_run(lab, profile, keep=True)).values())
    assert len(_verify_objects(lab, "tenant-a")) == 6  # namespace + 5 pods
    again = _run(lab, profile)
    assert all(s == "pass" for s in _status(again).values()), [
        (r.id, r.tenant, r.reason) for r in again.results if r.status != "pass"]
    deleted = [c[2] for c in lab.tenants["tenant-a"].calls if c[:2] == ("delete", "Pod")]
    assert deleted.count("gpu-share-1") == 2  # the leftover, then this run's own
    assert _verify_objects(lab, "tenant-a") == []


def test_namespace_stuck_terminating(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.tenants["tenant-a"].put({"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": NS, "deletionTimestamp": b.TS},
                                 "status": {"phase": "Terminating"}})
    report = _run(lab, profile)
    tc03 = next(r for r in report.results if r.id == "TC-03" and r.tenant == "tenant-a")
    assert tc03.status == "error"
    assert "still terminating after 10s" in tc03.reason
    assert _status(report)[("TC-03", "tenant-b")] == "pass"


def test_pod_denied_by_the_webhook(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.tenants["tenant-a"].fail["apply:Pod"] = AdapterError(
        'apply Pod gpulab-verify/gpu-share-1 at https://172.18.255.200:6443: 400 BadRequest: '
        'admission webhook "vgpu.hami.io" denied the request: exceeds quota')
    report = _run(lab, profile, checks=["TC-03", "TC-07"])
    tc03 = next(r for r in report.results if r.id == "TC-03" and r.tenant == "tenant-a")
    assert tc03.status == "fail"
    assert "HAMi's admission webhook denied it" in tc03.reason
    run = report.state.tenants["tenant-a"].pod_run("gpu-mem-big")
    assert run is not None and run.outcome == "create-failed"
    assert _status(report)[("TC-03", "tenant-b")] == "pass"


def test_namespace_refused(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.tenants["tenant-a"].fail["apply:Namespace"] = AdapterError(
        "apply Namespace gpulab-verify: 403 Forbidden")
    report = _run(lab, profile, checks=["TC-03"])
    tc03 = report.results[0]
    assert tc03.status == "error"
    assert "could not prepare namespace gpulab-verify: apply Namespace gpulab-verify: 403" in (
        tc03.reason)


def test_changed_gpus_get_meaningful_checks(profile: KamajiHamiProfile) -> None:
    changed = with_gpus(profile, "tenant-a", {"model": "NVIDIA-A100-PCIE-40GB",
                                              "memory_mib": 40960})
    changed = with_gpus(changed, "tenant-b", {"model": "NVIDIA-H100-80GB", "count": 3,
                                              "memory_mib": 81559, "cores": 90,
                                              "id_prefix": "GPU-H"})
    lab = fake_lab(changed)
    report = _run(lab, changed)
    assert all(s == "pass" for s in _status(report).values()), [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    tc05 = {r.tenant: r.evidence for r in report.results if r.id == "TC-05"}
    assert "30000/40960 MiB and 90/100 cores" in tc05["tenant-a"]
    assert "60000/81559 MiB and 81/90 cores" in tc05["tenant-b"]


def test_observation_survives_a_bug_in_one_tenant(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)

    def broken() -> None:
        raise KeyError("spec")

    lab.tenants["tenant-b"].tick = broken
    state = observe_lab(profile, b.LAB, Gateways(lab.management, lab.tenant, lab.cross),
                        checks=select(None), timeouts=TIMEOUTS,
                        clock=Clock(lab.clock.now, lab.clock.sleep))
    assert "KeyError" in state.tenants["tenant-b"].internal_error
    report = evaluate(state, profile)
    assert all(r.status == "error" for r in report.results if r.tenant == "tenant-b")
    assert all(r.status == "pass" for r in report.results
               if r.tenant == "tenant-a" and r.id != "TC-08")


def test_events_of_an_earlier_pod_with_the_same_name_are_ignored(
        profile: KamajiHamiProfile) -> None:
    """Events outlive pods: an earlier run's refusal must not pass this run's over-commit."""
    import json

    lab = fake_lab(profile)
    api = lab.tenants["tenant-a"]
    stale = b.event("gpu-share-4", hw.FILTERING_FAILED,
                    hw.filter_failed(hw.CARD_INSUFFICIENT_CORE, [b.worker("tenant-a")]))
    stale["involvedObject"]["uid"] = "uid-of-an-earlier-run"
    api.event_list.append(stale)
    node = api.obj("Node", b.worker("tenant-a"))
    assert node is not None
    cards = json.loads(node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION])
    cards[0]["devcore"] = 130  # HAMi now believes the card has room for a fourth pod
    node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] = json.dumps(cards)
    report = _run(lab, profile, checks=["TC-04", "TC-06"])
    status = _status(report)
    assert status[("TC-04", "tenant-a")] == "fail"
    tc06 = next(r for r in report.results if r.id == "TC-06" and r.tenant == "tenant-a")
    assert tc06.status == "fail"
    assert "HAMi placed gpu-share-4 (20000 MiB, 30 cores)" in tc06.reason
    run = report.state.tenants["tenant-a"].pod_run("gpu-share-4")
    assert run is not None
    assert all(e["involvedObject"].get("uid") != "uid-of-an-earlier-run" for e in run.events)


def test_pod_listing_refused(profile: KamajiHamiProfile) -> None:
    lab = fake_lab(profile)
    lab.tenants["tenant-a"].fail["list_objects:Pod"] = AdapterError(
        "list Pod list in kube-system at https://172.18.255.200:6443: 403 Forbidden")
    report = _run(lab, profile, checks=["TC-02", "TC-05", "TC-08"])
    by = {(r.id, r.tenant): r for r in report.results}
    tc02 = by[("TC-02", "tenant-a")]
    assert tc02.status == "fail"
    assert "could not read DaemonSet kube-system/calico-node: list Pod list" in tc02.reason
    assert "could not list kube-system pods" in tc02.reason
    assert by[("TC-05", "tenant-a")].status == "pass"
    assert by[("TC-08", "tenant-a")].status == "fail"
    assert "refused to list nodes or pods" in by[("TC-08", "tenant-a")].reason
    assert all(r.status == "pass" for r in report.results if r.tenant == "tenant-b")


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_ends_the_waits_and_still_cleans_up(profile: KamajiHamiProfile) -> None:
    """Ctrl-C while verify waits for its pods (the webhook is unreachable, so they stay Pending):
    the waits of every tenant end at their next poll, the verify namespace is deleted in both
    tenants, and the interrupt reaches the caller."""
    lab = fake_lab(profile, webhook_reachable=False)
    interrupted = threading.Event()

    def started(tenant: str) -> bool:
        return any(c[:2] == ("apply", "Pod") for c in list(lab.tenants[tenant].calls))

    def sleep(seconds: float) -> None:
        if not interrupted.is_set() and all(started(t) for t in ("tenant-a", "tenant-b")):
            interrupted.set()
            _thread.interrupt_main()
        time.sleep(0.02)
        lab.clock.sleep(seconds)

    with pytest.raises(KeyboardInterrupt):
        observe_lab(profile, b.LAB, Gateways(lab.management, lab.tenant, lab.cross),
                    timeouts=TIMEOUTS, clock=Clock(lab.clock.now, sleep))
        time.sleep(5)  # pragma: no cover - the interrupt arrives before this ends
    assert lab.clock.slept < TIMEOUTS.running, "the waits did not stop at the interrupt"
    assert interrupted.is_set()
    for tenant in ("tenant-a", "tenant-b"):
        assert _verify_objects(lab, tenant) == [], f"{tenant}: verify's objects left behind"


def test_no_pod_is_created_before_the_namespaces_default_service_account(
        profile: KamajiHamiProfile) -> None:
    """A tenant whose kube-controller-manager never creates the `default` ServiceAccount refuses
    every verify pod (403): verify waits for the account, bounded, creates no pod there and says
    why; the other tenant is unaffected."""
    lab = fake_lab(profile)
    lab.tenants["tenant-a"].default_service_account = False
    report = _run(lab, profile)
    for result in report.results:
        if result.tenant == "tenant-a" and result.id in ("TC-03", "TC-05", "TC-06", "TC-07"):
            assert result.status == "error", (result.id, result.reason)
            assert "ServiceAccount gpulab-verify/default did not appear within" in result.reason
        if result.tenant == "tenant-b":
            assert result.status == "pass", (result.id, result.reason)
    assert not [c for c in lab.tenants["tenant-a"].calls if c[:2] == ("apply", "Pod")]
