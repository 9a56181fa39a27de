"""The registry (TC order, --tc parsing) and the HAMi/Kubernetes readers the checks share."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.errors import AdapterError, UsageError
from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.registry import (
    CHECK_IDS,
    CHECKS,
    parse_tc,
    pods_needed,
    select,
)
from gpulab.verify.hami import DeviceGrant
from gpulab.verify.observe import classify_probe_error, cross_kubeconfig
from tests import kube_wire as kw
from tests.existing.kamaji_machines import A100, a100, joined, registering
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as hw
from tests.kamaji_hami.builders import judge, node_replace, run_replace, tenant_replace

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState


def test_checks_in_tc_order() -> None:
    assert tuple(f"TC-0{i}" for i in range(1, 9)) == CHECK_IDS
    assert [c.title for c in CHECKS] == [
        "control planes", "workers", "GPU admission path", "GPU inventory", "sharing",
        "core over-commit", "memory over-commit", "isolation"]


def test_parse_tc() -> None:
    assert parse_tc(None) is None
    assert parse_tc("TC-06, tc-05") == ("TC-05", "TC-06")
    assert parse_tc("5,8") == ("TC-05", "TC-08")
    with pytest.raises(UsageError, match="unknown check"):
        parse_tc("TC-09")
    with pytest.raises(UsageError, match="no check selected"):
        parse_tc(" , ")


def test_pods_needed_follow_the_selection() -> None:
    assert pods_needed(select(["TC-01", "TC-02", "TC-04"])) == frozenset()
    assert pods_needed(select(["TC-06"])) == {"gpu-share-1", "gpu-share-2", "gpu-share-3",
                                              "gpu-share-4"}
    assert pods_needed(select(["TC-07"])) == {"gpu-mem-big"}


def _unregistered(node: dict[str, Any]) -> dict[str, Any]:
    node["status"]["allocatable"]["nvidia.com/gpumem"] = "0"
    return node


# One way each check fails: no check may pass whatever the lab looks like.
def _breakers(profile: KamajiHamiProfile) -> dict[str, Callable[[LabState], LabState]]:
    spec = profile.tenant("tenant-a")
    return {
        "TC-01": lambda s: tenant_replace(s, "tenant-a", tcp=b.tcp(spec, state="NotReady")),
        "TC-02": lambda s: node_replace(s, "tenant-a", b.node(spec, ready=False)),
        "TC-03": lambda s: run_replace(s, "tenant-a", replace(
            b.placed(spec, "gpu-share-1"), created=b.verify_pod(spec, "gpu-share-1",
                                                                scheduler=None))),
        "TC-04": lambda s: node_replace(s, "tenant-a", _unregistered(b.node(spec))),
        "TC-05": lambda s: run_replace(s, "tenant-a", b.lock_contended(spec, "gpu-share-3")),
        "TC-06": lambda s: run_replace(s, "tenant-a", replace(
            b.placed(spec, "gpu-share-1"), name="gpu-share-4", check="TC-06")),
        "TC-07": lambda s: run_replace(s, "tenant-a", b.refused(spec, "gpu-mem-big",
                                                                hw.CARD_INSUFFICIENT_CORE)),
        "TC-08": lambda s: tenant_replace(s, "tenant-a", listing=replace(
            s.tenants["tenant-b"].listing)),
    }


@pytest.mark.parametrize("check", CHECK_IDS)
def test_every_check_can_fail(healthy: LabState, profile: KamajiHamiProfile,
                              check: str) -> None:
    assert judge(healthy, profile, check).status == "pass"
    broken = _breakers(profile)[check](healthy)
    result = judge(broken, profile, check)
    assert result.status == "fail", result
    assert result.reason


def test_allocations() -> None:
    pod = {"metadata": {"annotations": {
        o.ALLOCATED: "GPU-MOCK-0,NVIDIA,20000,30:;GPU-MOCK-B0,NVIDIA,12288,100:GPU-MOCK-B1,"
                     "NVIDIA,12288,100:;"}}}
    uses = o.allocations(pod)
    assert uses == [[DeviceGrant("GPU-MOCK-0", "NVIDIA", 20000, 30)],
                    [DeviceGrant("GPU-MOCK-B0", "NVIDIA", 12288, 100),
                     DeviceGrant("GPU-MOCK-B1", "NVIDIA", 12288, 100)]]
    assert o.allocations({"metadata": {}}) is None  # HAMi did not place it
    assert o.allocations({"metadata": {"annotations": {o.ALLOCATED: "GPU,NVIDIA,x,1:;"}}}) == []


def test_hami_reasons_from_the_write_up_events() -> None:
    host = b.worker("tenant-a")
    score = hw.node_score((1, 30, 20000), (10, 100, 81920))  # a node with one share pod on it
    events = [
        b.event("p", "FailedScheduling", b.FAILED_SCHEDULING.format(
            reasons=hw.gen_reason({hw.CARD_INSUFFICIENT_CORE: 1}, 1))),
        b.event("p", hw.FILTERING_FAILED, hw.filter_failed(hw.CARD_INSUFFICIENT_CORE, [host])),
        b.event("p", hw.BINDING_FAILED, hw.node_locked(host)),
        b.event("p", hw.FILTERING_SUCCEED, hw.filter_succeeded(host, 1, [(host, score)]),
                kind="Normal"),
        b.event("p", hw.BINDING_SUCCEED, hw.bind_succeeded([host], b.NS, "p"), kind="Normal"),
    ]
    assert o.hami_reasons(events) == [hw.CARD_INSUFFICIENT_CORE, hw.LOCK_CONTENTION]
    assert o.lock_contention(events) is events[2]


def test_hami_reasons_come_from_warnings_only() -> None:
    # MADE UP: none of HAMi's Normal events (FilteringSucceed, BindingSucceed: event.go:56-78)
    # can name a reason, so this one is a Warning's text marked Normal, to show that a Normal
    # event is not read as a refusal.
    made_up = b.event("p", hw.FILTERING_FAILED,
                      hw.filter_failed(hw.CARD_INSUFFICIENT_MEMORY, [b.worker("tenant-a")]),
                      kind="Normal")
    assert o.hami_reasons([made_up]) == []
    assert o.hami_reasons([{**made_up, "type": "Warning"}]) == [hw.CARD_INSUFFICIENT_MEMORY]


def test_int_quantity() -> None:
    assert [o.int_quantity(v) for v in ("81920", 10, "1k", "2Ki", None, "1.5", "abc")] == [
        81920, 10, 1000, 2048, None, None, None]


# What a tenant's API server answers foreign credentials it cannot authenticate, and credentials
# it authenticates but does not authorize, in gpulab's client's words (kube_wire).
UNAUTHORIZED = kw.kube_client_says(kw.unauthorized())
FORBIDDEN = kw.kube_client_says(kw.forbidden("kubernetes-admin", "list", "namespaces"))


@pytest.mark.parametrize(("error", "outcome"), [
    (AdapterError(b.rejected_probe("172.18.255.201:6443")), "rejected"),
    (AdapterError(f"list Namespace list at https://x: {FORBIDDEN}"), "forbidden"),
    # A port or an address that contains 401 or 403 says nothing of the answer.
    (AdapterError(f"list Namespace list at https://127.0.0.1:40123: {FORBIDDEN}"), "forbidden"),
    (AdapterError(f"list Namespace list at https://127.0.0.1:40399: {UNAUTHORIZED}"), "rejected"),
    (AdapterError("list Namespace list at https://127.0.0.1:40123: connection failed (SSLError: "
                  "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed)"), "error"),
    (AdapterError("list Namespace list at https://x: connection failed (SSLError: [SSL: "
                  "TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca)"), "rejected"),
    (AdapterError("list Namespace list at https://x: connection failed (SSLError: [SSL: "
                  "CERTIFICATE_VERIFY_FAILED] certificate verify failed)"), "error"),
    (AdapterError("list Namespace list at https://x: connection failed (timed out)"), "error"),
    (FileNotFoundError("tenant-b.kubeconfig"), "error"),
])
def test_classify_probe_error(error: BaseException, outcome: str) -> None:
    assert classify_probe_error(error) == outcome


def test_classify_uses_the_status_attribute() -> None:
    err = AdapterError("list Namespace list: Unauthorised (spelt oddly)")
    err.status = 401  # type: ignore[attr-defined]  # KubeApiError has it
    assert classify_probe_error(err) == "rejected"


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: {t}
  cluster:
    server: https://{ip}:6443
    certificate-authority-data: {t}-CA
users:
- name: kubernetes-admin
  user:
    client-certificate-data: {t}-CERT
    client-key-data: {t}-KEY
contexts:
- name: kubernetes-admin@{t}
  context: {{cluster: {t}, user: kubernetes-admin}}
current-context: kubernetes-admin@{t}
"""


def test_cross_kubeconfig_takes_the_user_of_one_and_the_server_of_the_other() -> None:
    import yaml

    text = cross_kubeconfig(KUBECONFIG.format(t="tenant-a", ip="172.18.255.200"),
                            KUBECONFIG.format(t="tenant-b", ip="172.18.255.201"))
    config = yaml.safe_load(text)
    assert config["clusters"][0]["cluster"] == {
        "server": "https://172.18.255.201:6443", "certificate-authority-data": "tenant-b-CA"}
    assert config["users"][0]["user"] == {"client-certificate-data": "tenant-a-CERT",
                                          "client-key-data": "tenant-a-KEY"}
    assert config["current-context"] == "cross-tenant-probe"


def test_kubeconfig_cross_gateway_removes_its_file(tmp_path: Path) -> None:
    from gpulab.verify.observe import kubeconfig_cross_gateway

    for t, ip in (("tenant-a", "172.18.255.200"), ("tenant-b", "172.18.255.201")):
        (tmp_path / f"{t}.kubeconfig").write_text(KUBECONFIG.format(t=t, ip=ip))
    seen: dict[str, Any] = {}

    def gateway(path: Path) -> Any:
        seen["mode"] = path.stat().st_mode & 0o777
        seen["text"] = path.read_text()
        return "gateway"

    cross = kubeconfig_cross_gateway(lambda t: tmp_path / f"{t}.kubeconfig", gateway,
                                     tmp_path / "scratch")
    assert cross("tenant-a", "tenant-b") == "gateway"
    assert seen["mode"] == 0o600
    assert "tenant-a-CERT" in seen["text"] and "172.18.255.201" in seen["text"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_each_checks_next_step_is_a_command_for_this_lab_and_tenant(
        kamaji_profile: KamajiHamiProfile) -> None:
    """What a failed check tells the user to run next, lab and tenant filled in."""
    tenant = 'kubectl --kubeconfig "$(gpulab kubeconfig tenant-a --name lab1)"'
    keep = "gpulab verify --name lab1 --tc {} --keep, then " + tenant
    assert {c.id: c.next_step("lab1", "tenant-a", kamaji_profile) for c in CHECKS} == {
        "TC-01": 'kubectl --kubeconfig "$(gpulab kubeconfig management --name lab1)" -n tenants '
                 "describe tenantcontrolplane tenant-a",
        "TC-02": f"{tenant} get nodes -o wide; {tenant} -n kube-system get pods -o wide",
        "TC-03": keep.format("TC-03") + " -n gpulab-verify describe pod gpu-share-1",
        "TC-04": f"{tenant} get nodes -o yaml (hami.io/* annotations, allocatable)",
        "TC-05": keep.format("TC-05") + " -n gpulab-verify get pods -o yaml",
        "TC-06": keep.format("TC-06") + " -n gpulab-verify describe pod gpu-share-4",
        "TC-07": keep.format("TC-07") + " -n gpulab-verify describe pod gpu-mem-big",
        "TC-08": f"{tenant} get nodes,pods -A -o wide",
    }
    assert [c.pods for c in CHECKS] == [
        (), (), ("gpu-share-1",), (), ("gpu-share-1", "gpu-share-2", "gpu-share-3"),
        ("gpu-share-1", "gpu-share-2", "gpu-share-3", "gpu-share-4"), ("gpu-mem-big",),
        ("gpu-share-1",)]


# --------------------------------------------------------------------------- why a GPU pod is not
# running: the diagnosis a TC-03/05/06/07 verdict gives (checks/common.explain_gpu_pod)


def _explain(profile: KamajiHamiProfile, run: Any, name: str = "gpu-share-1") -> str:
    from gpulab.stacks.kamaji_hami.checks.common import Ctx, explain_gpu_pod, prepare

    ctx = prepare(b.healthy_state(profile), profile, "tenant-a", "TC-05")
    assert isinstance(ctx, Ctx)
    return explain_gpu_pod(ctx, run, name)


def _bound(profile: KamajiHamiProfile, status: dict[str, Any], **changes: Any) -> Any:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-1")
    pod = {**run.pod, "status": status}
    return replace(run, pod=pod, **changes)


def test_a_pod_the_kubelet_refused_at_admission_points_at_the_device_plugin(
        kamaji_profile: KamajiHamiProfile) -> None:
    host = b.worker("tenant-a")
    message = kw.unexpected_admission(kw.devices_unavailable("nvidia.com/gpu", 1, 0))
    run = _bound(kamaji_profile, {"phase": "Failed", "reason": kw.UNEXPECTED_ADMISSION_ERROR,
                                  "message": message})
    assert _explain(kamaji_profile, run) == (
        f"gpu-share-1 failed: UnexpectedAdmissionError {message}; "
        f"the kubelet refused it at admission: the device plugin on {host} could not allocate "
        f"its GPU (kubectl -n kube-system logs of the hami-mock-device-plugin pod on {host})")


@pytest.mark.parametrize(("status", "said"), [
    ({"phase": "Failed"}, "gpu-share-1 failed: no reason given"),
    ({"phase": "Failed", "reason": "Evicted"}, "gpu-share-1 failed: Evicted"),
    ({"phase": "Failed", "message": "OOM"}, "gpu-share-1 failed: OOM"),
])
def test_a_failed_pod_says_why_it_failed(kamaji_profile: KamajiHamiProfile,
                                         status: dict[str, Any], said: str) -> None:
    assert _explain(kamaji_profile, _bound(kamaji_profile, status)) == said


def test_a_bound_pod_that_does_not_run_names_its_containers_problem(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.common import VERIFY_IMAGE

    host = b.worker("tenant-a")
    pulling = _bound(kamaji_profile, {"phase": "Pending", "containerStatuses": [
        b.waiting("app", "ImagePullBackOff")]})
    said = _explain(kamaji_profile, pulling)
    assert said.startswith(f"gpu-share-1 is bound to {host} but not running: ")
    assert said.endswith(f"; the image {VERIFY_IMAGE} must be pullable or present on {host}")
    crashing = _bound(kamaji_profile, {"phase": "Pending", "containerStatuses": [
        b.waiting("app", "CrashLoopBackOff")]})
    assert "must be pullable" not in _explain(kamaji_profile, crashing)
    started = _bound(kamaji_profile, {"phase": "Pending", "containerStatuses": [b.running("app")]})
    assert _explain(kamaji_profile, started) == (
        f"gpu-share-1 is bound to {host} but not running: Pending")


def test_a_pod_not_created_or_refused_on_create_says_so(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.verify.state import PodRun

    assert _explain(kamaji_profile, PodRun("gpu-share-2", "TC-05"), "gpu-share-2") == (
        "gpu-share-2 was not created: a pod before it did not run")
    assert _explain(kamaji_profile, PodRun("gpu-share-2", "TC-05", last_seen="quota exceeded"),
                    "gpu-share-2") == "gpu-share-2 was not created: quota exceeded"
    denied = 'admission webhook "vgpu.hami.io" denied the request: no card'
    assert _explain(kamaji_profile, PodRun("gpu-share-2", "TC-05", create_error=denied,
                                           outcome="create-failed"), "gpu-share-2") == (
        f"the tenant API refused gpu-share-2 (HAMi's admission webhook denied it): {denied}")
    quota = "pods is forbidden: denied by quota"
    assert _explain(kamaji_profile, PodRun("gpu-share-2", "TC-05", create_error=quota,
                                           outcome="create-failed"), "gpu-share-2") == (
        f"the tenant API refused gpu-share-2 (the create call failed): {quota}")


def test_hamis_filter_reasons_are_named_with_what_they_mean(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami import objects as ko

    profile = b.with_gpus(kamaji_profile, "tenant-a",
                          {"model": "NVIDIA-L4", "count": 2, "memory_mib": 24576, "split": 10})
    run = b.refused(profile.tenant("tenant-a"), "gpu-share-4", hw.CARD_INSUFFICIENT_CORE)
    last = ko.event_message(ko.events_with(run.events, "FilteringFailed")[-1])
    assert _explain(profile, run, "gpu-share-4") == (
        f"HAMi found no card for gpu-share-4 (CardInsufficientCore, CardUuidMismatch: {last}); "
        "the card's cores are taken by other pods; the card the pod is pinned to "
        "(nvidia.com/use-gpuuuid) is not among the registered devices (see TC-04)")


def test_a_pending_pod_with_other_events_shows_them(kamaji_profile: KamajiHamiProfile) -> None:
    run = b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")
    pod = {**run.pod, "spec": {**run.pod["spec"], "nodeName": ""}, "status": {"phase": "Pending"}}
    waiting = replace(run, pod=pod, waited=0.0, last_seen="")
    said = _explain(kamaji_profile, waiting)
    assert said.startswith("gpu-share-1 is Pending") and "; last seen" not in said
    assert " after " not in said.split("; events:")[0]
    said = _explain(kamaji_profile, replace(waiting, waited=12.4, last_seen="Pending"))
    assert " after 12s; last seen: Pending; events: " in said


def test_a_check_that_cannot_look_says_why_for_its_check_and_tenant(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import prepare
    from gpulab.verify.result import CheckResult

    state = b.healthy_state(kamaji_profile)
    unknown = prepare(state, kamaji_profile, "tenant-z", "TC-02")
    assert isinstance(unknown, CheckResult)
    assert (unknown.id, unknown.tenant, unknown.status) == ("TC-02", "tenant-z", "error")
    assert unknown.reason == "no tenant 'tenant-z' in profile (tenants: tenant-a, tenant-b)"
    gone = replace(state, tenants={k: v for k, v in state.tenants.items() if k != "tenant-b"})
    absent = prepare(gone, kamaji_profile, "tenant-b", "TC-04")
    assert (absent.id, absent.tenant, absent.status, absent.reason) == (  # type: ignore[union-attr]
        "TC-04", "tenant-b", "error", "tenant tenant-b is not in this observation or recording")
    broken = b.tenant_replace(state, "tenant-a", internal_error="KeyError: 'nodes'")
    failed = prepare(broken, kamaji_profile, "tenant-a", "TC-01")
    assert (failed.id, failed.tenant, failed.status, failed.reason) == (  # type: ignore[union-attr]
        "TC-01", "tenant-a", "error", "verify failed while observing tenant-a: KeyError: 'nodes'")


def test_a_pod_that_kept_its_scheduler_is_explained_as_the_webhook_not_called(
        kamaji_profile: KamajiHamiProfile) -> None:
    spec = kamaji_profile.tenant("tenant-a")
    run = replace(b.placed(spec, "gpu-share-1"),
                  created=b.verify_pod(spec, "gpu-share-1", scheduler="default-scheduler"))
    said = _explain(kamaji_profile, run)
    assert said.startswith("gpu-share-1 kept schedulerName default-scheduler: HAMi's webhook was "
                           "not called")


def test_gpu_pods_not_observed_are_an_error_or_the_tenant_api_down(
        kamaji_profile: KamajiHamiProfile) -> None:
    state = b.tenant_replace(b.healthy_state(kamaji_profile), "tenant-a", gpu_pods=None)
    result = b.judge(state, kamaji_profile, "TC-05")
    assert (result.status, result.reason) == (
        "error", "the GPU pods of tenant-a was not observed in this run or recording")
    down = b.tenant_replace(state, "tenant-a", api_error="connection refused")
    result = b.judge(down, kamaji_profile, "TC-05")
    assert (result.status, result.reason) == (
        "fail", "the tenant API server of tenant-a did not answer, so the GPU pods could not be "
        "read (see TC-01): connection refused")


def test_a_pod_read_from_no_namespace_is_not_verifys(kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import not_verifys_pod

    run = b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")
    pod = {**run.pod, "metadata": {**run.pod["metadata"], "namespace": ""}}
    assert not_verifys_pod(replace(run, pod=pod)) == (
        "the gpu-share-1 that was read is in namespace (none), not verify's gpulab-verify: it is "
        "not verify's pod")


def test_system_pods_are_summarized_each_with_its_containers_problems(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import pods_not_serving, system_pods_summary

    def pod(name: str, phase: str, *containers: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "kube-system"},
                "status": {"phase": phase, "containerStatuses": list(containers)}}

    crashing = pod("konnectivity-agent-a", "Running", b.waiting("agent", "CrashLoopBackOff"),
                   b.waiting("proxy", "ImagePullBackOff"))
    pending = pod("konnectivity-agent-b", "Pending", b.running("agent"))
    state = b.healthy_state(kamaji_profile)
    st = b.tenant_replace(state, "tenant-a", system_pods=[crashing, pending]).tenants["tenant-a"]
    problems = ", ".join(o.container_problems(crashing))
    assert ", " in problems
    assert system_pods_summary(st, "konnectivity-agent") == (
        f"konnectivity-agent-a Running ({problems}); konnectivity-agent-b Pending")
    assert pods_not_serving(st, "konnectivity-agent") == [
        f"konnectivity-agent-a Running ({problems})", "konnectivity-agent-b Pending"]
    unread = b.tenant_replace(state, "tenant-a", system_pods=None).tenants["tenant-a"]
    assert system_pods_summary(unread, "konnectivity-agent") == "not observed"


# --------------------------------------------------------------------------- joined machines



def _machines(profile: KamajiHamiProfile, *nodes: dict[str, Any] | None, **changes: Any) -> Any:
    """tenant-a's workers are joined machines: the Ctx of TC-05 on `nodes` (None: not read)."""
    from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare

    shown = None if nodes == (None,) else tuple(n for n in nodes if n is not None)
    state = b.tenant_replace(b.healthy_state(profile), "tenant-a", workers="machines",
                             nodes=shown, **changes)
    ctx = prepare(state, profile, "tenant-a", "TC-05")
    assert isinstance(ctx, Ctx)
    return ctx


def _gpu_machine(name: str = "gpu-7", *cards: dict[str, Any]) -> dict[str, Any]:
    return joined(name, cards=list(cards) or None)


def test_on_joined_machines_the_gpu_checks_size_their_pods_from_the_machines_card(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami import render
    from gpulab.stacks.kamaji_hami.checks.common import gpu_scenario

    ctx = _machines(kamaji_profile, _gpu_machine())
    assert ctx.workers() == ["gpu-7"]
    assert ctx.no_machine() is None
    sizes = gpu_scenario(ctx)
    assert isinstance(sizes, render.SharingSizes), sizes
    assert sizes.card_id == A100


def test_on_joined_machines_no_node_yet_is_unknown_and_says_how_to_join(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import gpu_scenario

    ctx = _machines(kamaji_profile)
    assert ctx.workers() == []
    result = gpu_scenario(ctx)
    assert (result.id, result.tenant, result.status) == (  # type: ignore[union-attr]
        "TC-05", "tenant-a", "skip")
    assert result.reason == (  # type: ignore[union-attr]
        "unknown, because no machine has joined tenant-a yet (its API lists no node): "
        f"`gpulab join tenant-a --name {b.LAB}` prints what makes a machine its GPU worker")


def test_on_joined_machines_an_unread_node_list_is_not_observed(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import gpu_scenario

    result = gpu_scenario(_machines(kamaji_profile, None))
    assert (result.id, result.tenant, result.status, result.reason,  # type: ignore[union-attr]
            result.evidence) == (  # type: ignore[union-attr]
        "TC-05", "tenant-a", "error",
        "the node list of tenant-a was not observed in this run or recording", "")
    refused = gpu_scenario(_machines(kamaji_profile, None, nodes_error="forbidden"))
    assert (refused.status, refused.reason, refused.evidence) == (  # type: ignore[union-attr]
        "fail", "the tenant API refused to list nodes: forbidden", "")


def test_on_joined_machines_without_a_registered_card_the_gpu_checks_say_unknown(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import gpu_scenario

    node = _gpu_machine()
    del node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    result = gpu_scenario(_machines(kamaji_profile, node))
    assert (result.status, result.reason) == (  # type: ignore[union-attr]
        "skip", "unknown, because no node of tenant-a registers a healthy card with HAMi "
        "(see TC-04), so verify has no card to size its GPU pods from and created none")


def test_a_gpu_check_never_sizes_pods_without_a_card(kamaji_profile: KamajiHamiProfile) -> None:
    node = _gpu_machine()
    del node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    with pytest.raises(ValueError, match=r"^tenant-a has no card to size GPU pods from$"):
        _machines(kamaji_profile, node).sized_card()


MIG_WHY = ("HAMi v2.10.0 grants a pod on a MIG card a whole MIG instance, the smallest allowed "
           "profile whose memory fits (pkg/device/nvidia/device.go:601-644, 645-659), not the "
           "memory and cores it asks, which TC-05..TC-07 measure")
CORDON_WHY = "HAMi's Fit skips a cordoned card (pkg/device/nvidia/device.go:698-713, 726, 735)"
NO_POD = "verify created no GPU pod (TC-04 judges the cards' registration)"


def _skip_reason(profile: KamajiHamiProfile, *nodes: dict[str, Any]) -> str:
    from gpulab.stacks.kamaji_hami.checks.common import gpu_scenario

    result = gpu_scenario(_machines(profile, *nodes))
    assert result.status == "skip", result  # type: ignore[union-attr]
    return result.reason  # type: ignore[union-attr]


def test_on_joined_machines_mig_or_cordoned_cards_alone_say_why_no_gpu_pod_was_made(
        kamaji_profile: KamajiHamiProfile) -> None:
    from tests.cluster import upstream

    mig = [registering(n, upstream.REGISTER_MIG_GPU0) for n in ("gpu-8", "gpu-9")]
    both_cards = json.dumps([*json.loads(upstream.REGISTER_A100_GPU0),
                             *json.loads(upstream.REGISTER_A100_GPU1)])
    cordoned = registering("gpu-7", both_cards, cordon="GPU-0, GPU-1, ")
    lead = "unknown, because every healthy card the nodes of tenant-a register with HAMi is"
    in_mig = ("in MIG mode (gpu-8 GPU-0 (MIG profiles 1g.5gb); gpu-9 GPU-0 (MIG profiles "
              "1g.5gb))")
    in_cordon = "cordoned (hami.io/device-cordon: gpu-7 GPU-0; gpu-7 GPU-1)"
    assert _skip_reason(kamaji_profile, *mig) == f"{lead} {in_mig}: {MIG_WHY}; {NO_POD}"
    assert _skip_reason(kamaji_profile, cordoned) == f"{lead} {in_cordon}: {CORDON_WHY}; {NO_POD}"
    assert _skip_reason(kamaji_profile, cordoned, *mig) == (
        f"{lead} {in_mig} or {in_cordon}: {MIG_WHY}; {CORDON_WHY}; {NO_POD}")


def test_on_joined_machines_the_cards_verify_did_not_use_are_named(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import Ctx, other_cards, prepare
    from tests.cluster import upstream
    from tests.existing.kamaji_machines import card

    two = _gpu_machine("gpu-7", a100(), card("GPU-b", "NVIDIA L4", 23034, index=1))
    cordoned = registering("gpu-8", upstream.REGISTER_A100_GPU0, cordon=upstream.CORDON_GPU0)
    mig = registering("gpu-9", upstream.REGISTER_MIG_GPU0)
    assert other_cards(_machines(kamaji_profile, two, cordoned, mig)) == (
        "; not exercised by TC-05..TC-07 (unknown whether HAMi shares them), also registered: "
        "gpu-7 GPU-b NVIDIA L4; gpu-9 GPU-0 (MIG profiles 1g.5gb); gpu-8 GPU-0 cordoned")
    assert other_cards(_machines(kamaji_profile, _gpu_machine())) == ""
    kind = prepare(b.healthy_state(kamaji_profile), kamaji_profile, "tenant-a", "TC-05")
    assert isinstance(kind, Ctx) and other_cards(kind) == ""


# --------------------------------------------------------------------------- verdict fields


def test_each_verdict_carries_its_check_and_tenant_and_no_made_up_evidence(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare

    ctx = prepare(b.healthy_state(kamaji_profile), kamaji_profile, "tenant-a", "TC-03")
    assert isinstance(ctx, Ctx)
    for result, status in ((ctx.passed("ok"), "pass"), (ctx.failed("bad"), "fail"),
                           (ctx.error("broken"), "error"), (ctx.skipped("later"), "skip")):
        assert (result.id, result.tenant, result.status) == ("TC-03", "tenant-a", status)
    assert (ctx.failed("bad").evidence, ctx.error("broken").evidence) == ("", "")


# --------------------------------------------------------------------------- explain_gpu_pod, more


def test_a_bound_pod_with_two_problems_names_both(kamaji_profile: KamajiHamiProfile) -> None:
    host = b.worker("tenant-a")
    run = _bound(kamaji_profile, {"phase": "Pending", "containerStatuses": [
        b.waiting("app", "CrashLoopBackOff"), b.waiting("side", "CreateContainerError")]})
    spec = run.pod["spec"]
    run = replace(run, pod={**run.pod, "spec": {
        **spec, "containers": [*spec["containers"], {"name": "side", "image": "busybox"}]}})
    problems = o.container_problems(run.pod)
    assert len(problems) == 2
    assert _explain(kamaji_profile, run) == (
        f"gpu-share-1 is bound to {host} but not running: {problems[0]}, {problems[1]}")


def test_a_running_pod_is_described_not_called_not_running(
        kamaji_profile: KamajiHamiProfile) -> None:
    run = b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")
    said = _explain(kamaji_profile, run)
    assert said == (f"gpu-share-1 is {o.pod_summary(run.pod)} after 4s; last seen: "
                    f"{run.last_seen}; events: {o.short_events(run.events)}")
    assert said.startswith("gpu-share-1 is Running, schedulerName hami-scheduler, node ")


def test_a_pending_pod_without_wait_or_last_seen_adds_nothing(
        kamaji_profile: KamajiHamiProfile) -> None:
    run = b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")
    pod = {**run.pod, "spec": {**run.pod["spec"], "nodeName": ""}, "status": {"phase": "Pending"}}
    waiting = replace(run, pod=pod, waited=0.0, last_seen="")
    events = o.short_events(run.events)
    assert events != "no events"
    assert _explain(kamaji_profile, waiting) == (
        f"gpu-share-1 is Pending, schedulerName hami-scheduler, node -; events: {events}")


def test_hamis_filter_failure_is_quoted_even_when_a_later_event_follows(
        kamaji_profile: KamajiHamiProfile) -> None:
    profile = b.with_gpus(kamaji_profile, "tenant-a",
                          {"model": "NVIDIA-L4", "count": 2, "memory_mib": 24576, "split": 10})
    run = b.refused(profile.tenant("tenant-a"), "gpu-share-4", hw.CARD_INSUFFICIENT_CORE)
    last_filter = o.event_message(o.events_with(run.events, "FilteringFailed")[-1])
    later = b.event("gpu-share-4", "Pulled",
                    kw.image_pulled("busybox:1.36", "1.2s", "1.502s", 2231050), kind="Normal")
    said = _explain(profile, replace(run, events=(*run.events, later)), "gpu-share-4")
    assert said.startswith(f"HAMi found no card for gpu-share-4 (CardInsufficientCore, "
                           f"CardUuidMismatch: {last_filter}); ")


def test_a_hami_reason_without_a_hint_is_named_alone(kamaji_profile: KamajiHamiProfile) -> None:
    run = b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")
    pod = {**run.pod, "spec": {**run.pod["spec"], "nodeName": ""}, "status": {"phase": "Pending"}}
    message = hw.filter_failed(hw.NUMA_NOT_FIT, [b.worker("tenant-a")])
    unfit = b.event("gpu-share-1", "FilteringFailed", message)
    said = _explain(kamaji_profile, replace(run, pod=pod, events=(unfit,)))
    assert said == f"HAMi found no card for gpu-share-1 (NumaNotFit: {message})"


def test_not_verifys_pod_accepts_verifys_own_pod_without_a_run_id(
        kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import not_verifys_pod

    assert not_verifys_pod(b.placed(kamaji_profile.tenant("tenant-a"), "gpu-share-1")) == ""


def test_a_pods_events_are_those_about_its_uid(kamaji_profile: KamajiHamiProfile) -> None:
    from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare

    spec = kamaji_profile.tenant("tenant-a")
    run = b.placed(spec, "gpu-share-1")
    own_uid = run.pod["metadata"]["uid"]
    earlier = b.events_of_uid(run, "uid-of-an-earlier-pod").events
    mine = b.events_of_uid(run, own_uid).events

    def ctx_with(r: Any) -> Ctx:
        ctx = prepare(b.run_replace(b.healthy_state(kamaji_profile), "tenant-a", r),
                      kamaji_profile, "tenant-a", "TC-05")
        assert isinstance(ctx, Ctx)
        return ctx

    # read back without the create answer: the live pod's uid decides
    seen = ctx_with(replace(run, created=None, events=(*earlier, *mine))).pod_run("gpu-share-1")
    assert seen is not None and seen.events == mine
    # no uid anywhere: every event is kept
    bare = {**run.pod, "metadata": {k: v for k, v in run.pod["metadata"].items() if k != "uid"}}
    kept = ctx_with(replace(run, created=None, pod=bare, events=earlier)).pod_run("gpu-share-1")
    assert kept is not None and kept.events == earlier
