"""TC-03: HAMi's webhook rewrote schedulerName (through Konnectivity) and HAMi placed the pod."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

from tests import kube_wire as kw
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as hw
from tests.kamaji_hami.builders import judge, run_replace, tenant_replace, with_gpus

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.state import PodRun

KONNECTIVITY = (
    "HAMi's webhook was not called: the tenant API server could not reach it through "
    "Konnectivity (failurePolicy Ignore hides this); check konnectivity-agent pods in "
    "kube-system of the tenant"
)


def _first(state: LabState, tenant: str = "tenant-a") -> PodRun:
    run = state.tenants[tenant].pod_run("gpu-share-1")
    assert run is not None
    return run


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(healthy, profile, "TC-03")
    assert result.status == "pass", result.reason
    assert "schedulerName hami-scheduler" in result.evidence
    assert f"hami.io/vgpu-node={b.worker('tenant-a')}" in result.evidence
    assert "FilteringSucceed: find fit node(" in result.evidence
    assert "BindingSucceed: Successfully binding node [" in result.evidence


def test_scheduler_name_left_default(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    pod = b.verify_pod(spec, "gpu-share-1", scheduler=None)
    pod["spec"]["schedulerName"] = "default-scheduler"
    run = replace(_first(healthy), created=pod, pod=pod, events=(), outcome="timeout")
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "gpu-share-1 kept schedulerName default-scheduler: " + KONNECTIVITY in result.reason
    assert "konnectivity-agent-gxqbv Running" in result.reason


def test_scheduler_name_unset_counts_as_default(healthy: LabState,
                                                profile: KamajiHamiProfile) -> None:
    pod = b.verify_pod(profile.tenant("tenant-a"), "gpu-share-1", scheduler=None)
    run = replace(_first(healthy), created=pod, pod=pod, events=())
    assert KONNECTIVITY in judge(run_replace(healthy, "tenant-a", run), profile, "TC-03").reason


def test_another_scheduler(healthy: LabState, profile: KamajiHamiProfile) -> None:
    pod = b.verify_pod(profile.tenant("tenant-a"), "gpu-share-1", scheduler="volcano")
    run = replace(_first(healthy), created=pod, pod=pod, events=())
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "names scheduler volcano" in result.reason


def test_lock_contention(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = b.lock_contended(profile.tenant("tenant-a"), "gpu-share-1")
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "HAMi could not bind gpu-share-1: node lock contention" in result.reason
    assert "has been locked within 5m0s" in result.reason
    assert "components.hami.node_lock_timeout = 5s" in result.reason
    assert "grep node-lock-timeout" in result.reason  # where to look next


def test_node_unregistered(healthy: LabState, profile: KamajiHamiProfile) -> None:
    created = b.verify_pod(profile.tenant("tenant-a"), "gpu-share-1")
    # HAMi names an unregistered node only in the failed nodes it hands kube-scheduler, which
    # counts it in FailedScheduling; its own event says that no node fits (hami_wire).
    events = (b.event("gpu-share-1", "FailedScheduling",
                      kw.failed_scheduling(1, {hw.NODE_UNREGISTERED: 1})),
              b.event("gpu-share-1", hw.FILTERING_FAILED, hw.no_available_node(1)))
    run = replace(_first(healthy), pod=created, created=created, events=events,
                  outcome="timeout")
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "HAMi found no card for gpu-share-1 (node unregistered" in result.reason
    assert "see TC-04" in result.reason


def test_hami_scheduler_silent(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    sched = b.pod("hami-scheduler-7d9f6c8b9-4qj2w", "kube-system", b.worker("tenant-a"),
                  ["kube-scheduler", "vgpu-scheduler-extender"], tenant="tenant-a",
                  phase="Running", statuses=[b.waiting("kube-scheduler", "ImagePullBackOff", 0),
                                             b.running("vgpu-scheduler-extender")])
    system = (*(p for p in b.system_pods(spec)
                if not p["metadata"]["name"].startswith("hami-scheduler")), sched)
    created = b.verify_pod(spec, "gpu-share-1")
    run = replace(_first(healthy), pod=created, created=created, events=(), outcome="timeout")
    state = tenant_replace(run_replace(healthy, "tenant-a", run), "tenant-a", system_pods=system)
    result = judge(state, profile, "TC-03")
    assert result.status == "fail"
    assert "no scheduler left an event" in result.reason
    assert "kube-scheduler: waiting ImagePullBackOff" in result.reason


def test_webhook_denied_the_pod(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = replace(_first(healthy), created=None, pod=None, events=(), outcome="create-failed",
                  create_error='apply Pod gpulab-verify/gpu-share-1: 400 BadRequest: admission '
                               'webhook "vgpu.hami.io" denied the request: exceeds quota')
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "HAMi's admission webhook denied it" in result.reason


def test_placed_without_events(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = replace(_first(healthy), events=())
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "no FilteringSucceed / BindingSucceed event" in result.reason


def test_placed_on_a_node_of_another_tenant(healthy: LabState,
                                            profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-1", host=b.worker("tenant-b"))
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert "which is not a worker of tenant-a" in result.reason


def test_bound_by_another_scheduler_than_hami_chose(healthy: LabState,
                                                    profile: KamajiHamiProfile) -> None:
    run = _first(healthy)
    assert run.pod is not None
    pod = {**run.pod, "spec": {**run.pod["spec"], "nodeName": "other-node"}}
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-03")
    assert result.status == "fail"
    assert "another scheduler bound it" in result.reason


def test_skipped_without_gpus(healthy: LabState, profile: KamajiHamiProfile) -> None:
    no_gpus = profile.model_copy(update={"tenants": [
        t.model_copy(update={"gpus": []}) if t.name == "tenant-a" else t
        for t in profile.tenants]})
    result = judge(healthy, no_gpus, "TC-03")
    assert result.status == "skip"
    assert "has no GPUs in the profile" in result.reason


def test_skipped_when_no_size_fits_the_sizing_rule(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    tiny = with_gpus(profile, "tenant-a", {"model": "NVIDIA-T4", "memory_mib": 16384,
                                           "cores": 5})
    result = judge(healthy, tiny, "TC-03")
    assert result.status == "skip"
    assert "sizing rule, docs/checks.md" in result.reason


def test_scenario_not_run_is_an_error(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", gpu_pods=None,
                           scenario_error="namespace gpulab-verify (left by an earlier run) is "
                                          "still terminating after 60s")
    result = judge(state, profile, "TC-03")
    assert result.status == "error"
    assert "still terminating" in result.reason


def test_tenant_api_down_fails(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", gpu_pods=None, api_error="connection refused")
    result = judge(state, profile, "TC-03")
    assert result.status == "fail"
    assert "see TC-01" in result.reason


def test_a_bypass_with_hamis_webhook_server_down_blames_the_server(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    pod = b.verify_pod(spec, "gpu-share-1", scheduler=None)
    run = replace(_first(healthy), created=pod, pod=pod, events=())
    crashing = {"phase": "Running", "containerStatuses": [
        b.running("kube-scheduler"), b.waiting("vgpu-scheduler-extender", "CrashLoopBackOff")]}
    pods = [{**p, "status": crashing} if p["metadata"]["name"].startswith("hami-scheduler")
            else p for p in b.system_pods(spec)]
    state = tenant_replace(run_replace(healthy, "tenant-a", run), "tenant-a",
                           system_pods=tuple(pods))
    result = judge(state, profile, "TC-03")
    assert result.status == "fail"
    assert "HAMi's webhook was not called because its server is not serving" in result.reason
    assert "vgpu-scheduler-extender: waiting CrashLoopBackOff" in result.reason
    assert "Konnectivity" not in result.reason


# --------------------------------------------------------------------------- evidence (#24)


def test_webhook_bypassed_shows_the_pod_as_last_seen(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    """The evidence is the pod as last observed, not as created."""
    created = b.verify_pod(profile.tenant("tenant-a"), "gpu-share-1", scheduler=None)
    live = copy.deepcopy(created)
    live["spec"]["nodeName"] = "elsewhere"
    live["status"] = {"phase": "Running"}
    run = replace(_first(healthy), created=created, pod=live, events=())
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-03")
    assert result.status == "fail"
    assert result.evidence == ("gpu-share-1: Running, schedulerName default-scheduler, "
                               "node elsewhere")


def test_bound_without_hami_choosing_a_node(healthy: LabState,
                                            profile: KamajiHamiProfile) -> None:
    run = _first(healthy)
    assert run.pod is not None
    pod = copy.deepcopy(run.pod)
    del pod["metadata"]["annotations"]["hami.io/vgpu-node"]
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-03")
    assert result.status == "fail"
    assert "which is not a worker" not in result.reason
    assert result.evidence == (f"gpu-share-1 admitted with schedulerName hami-scheduler; "
                               f"Running, schedulerName hami-scheduler, node "
                               f"{b.worker('tenant-a')}")


def test_placed_on_a_node_of_another_tenant_lists_every_worker(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    two = profile.model_copy(update={"tenants": [
        t.model_copy(update={"workers": t.workers.model_copy(update={"count": 2})})
        if t.name == "tenant-a" else t for t in profile.tenants]})
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-1", host=b.worker("tenant-b"))
    result = judge(run_replace(healthy, "tenant-a", run), two, "TC-03")
    assert result.status == "fail"
    assert (f"which is not a worker of tenant-a ({b.worker('tenant-a')}, "
            f"{b.worker('tenant-a', 1)})") in result.reason
    assert result.evidence.startswith("gpu-share-1 admitted with schedulerName hami-scheduler; "
                                      "Running")


def test_bound_by_another_scheduler_keeps_the_evidence(healthy: LabState,
                                                       profile: KamajiHamiProfile) -> None:
    run = _first(healthy)
    assert run.pod is not None
    pod = {**run.pod, "spec": {**run.pod["spec"], "nodeName": "other-node"}}
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-03")
    assert result.evidence == ("gpu-share-1 admitted with schedulerName hami-scheduler; "
                               "Running, schedulerName hami-scheduler, node other-node")


def test_filtered_but_no_binding_event(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = _first(healthy)
    filtering = tuple(e for e in run.events if e["reason"] == "FilteringSucceed")
    result = judge(run_replace(healthy, "tenant-a", replace(run, events=filtering)), profile,
                   "TC-03")
    assert result.status == "fail"
    assert (f"HAMi placed gpu-share-1 on {b.worker('tenant-a')} but no BindingSucceed event "
            f"from hami-scheduler was found") in result.reason
    assert "FilteringSucceed /" not in result.reason
    assert result.evidence.startswith("gpu-share-1 admitted with schedulerName hami-scheduler; ")
    assert "; events: FilteringSucceed: find fit node(" in result.evidence


def test_placed_but_not_running_keeps_the_evidence(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    run = _first(healthy)
    assert run.pod is not None
    pod = {**run.pod, "status": {"phase": "Pending"}}
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-03")
    assert result.status == "fail"
    assert "is bound to" in result.reason and "but not running" in result.reason
    assert result.evidence == (f"gpu-share-1 admitted with schedulerName hami-scheduler; "
                               f"Pending, schedulerName hami-scheduler, node "
                               f"{b.worker('tenant-a')}")


def test_pass_names_the_phase_and_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(healthy, profile, "TC-03")
    assert result.evidence.endswith(f"; Running on {b.worker('tenant-a')}")
