"""TC-06 (cores) and TC-07 (memory): HAMi refuses to over-commit and names the reason."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.verify.state import PodRun
from tests import kube_wire as kube
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as hw
from tests.kamaji_hami.builders import judge, run_replace, with_gpus

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

CASES = {"TC-06": ("gpu-share-4", hw.CARD_INSUFFICIENT_CORE),
         "TC-07": ("gpu-mem-big", hw.CARD_INSUFFICIENT_MEMORY)}


def _run(state: LabState, name: str, tenant: str = "tenant-a") -> PodRun:
    run = state.tenants[tenant].pod_run(name)
    assert run is not None
    return run


def test_write_up_events_pass(healthy: LabState, profile: KamajiHamiProfile) -> None:
    core = judge(healthy, profile, "TC-06")
    assert core.status == "pass", core.reason
    assert core.evidence == (
        f"gpu-share-4 (20000 MiB, 30 cores) stays Pending: FilteringFailed '1 nodes "
        f"CardInsufficientCore({b.worker('tenant-a')})' from hami-scheduler"
    )
    memory = judge(healthy, profile, "TC-07")
    assert memory.status == "pass", memory.reason
    assert "gpu-mem-big (90000 MiB, 10 cores) stays Pending" in memory.evidence
    assert "CardInsufficientMemory" in memory.evidence
    assert judge(healthy, profile, "TC-07", "tenant-b").evidence.startswith(
        "gpu-mem-big (30000 MiB, 10 cores)")


def test_failed_scheduling_event_alone_is_enough(healthy: LabState,
                                                 profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    state = run_replace(healthy, "tenant-a", replace(run, events=run.events[:1]))
    result = judge(state, profile, "TC-06")
    assert result.status == "pass"
    assert "FailedScheduling '0/1 nodes are available: 1 1/1 CardInsufficientCore." in (
        result.evidence)


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_pod_placed_means_overcommit(healthy: LabState, profile: KamajiHamiProfile,
                                     check: str) -> None:
    name, _ = CASES[check]
    placed = b.placed(profile.tenant("tenant-a"), "gpu-share-1")
    created = _run(healthy, name).created
    assert created is not None and placed.pod is not None
    live = {**placed.pod, "metadata": {**created["metadata"],
                                       "annotations": placed.pod["metadata"]["annotations"]}}
    run = replace(placed, name=name, check=check, created=created, pod=live)
    result = judge(run_replace(healthy, "tenant-a", run), profile, check)
    assert result.status == "fail"
    assert f"HAMi placed {name}" in result.reason
    assert "over-committed its " + ("cores" if check == "TC-06" else "memory") in result.reason


def test_lock_contention_on_the_fourth_pod_means_its_filter_accepted_it(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = replace(b.lock_contended(profile.tenant("tenant-a"), "gpu-share-4"), check="TC-06")
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-06")
    assert result.status == "fail"
    assert "its filter accepted gpu-share-4 (20000 MiB, 30 cores) and only node lock " \
           "contention kept it from binding" in result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_missing_reason_event(healthy: LabState, profile: KamajiHamiProfile,
                              check: str) -> None:
    name, reason = CASES[check]
    run = _run(healthy, name)
    events = (b.event(name, hw.FILTERING_FAILED, hw.no_available_node(1)),)
    result = judge(run_replace(healthy, "tenant-a", replace(run, events=events,
                                                            outcome="timeout", waited=60)),
                   profile, check)
    assert result.status == "fail"
    assert f"no event names {reason} within 60s" in result.reason
    assert f"kubectl -n gpulab-verify describe pod {name}" in result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_the_describe_hint_names_verifys_namespace_whatever_was_read(
        healthy: LabState, profile: KamajiHamiProfile, check: str) -> None:
    """A pod known only as created (never read back), its namespace missing from what was
    recorded: the hint still names the namespace verify creates every pod in."""
    name, reason = CASES[check]
    run = _run(healthy, name)
    created = copy.deepcopy(run.created)
    assert created is not None
    created["metadata"].pop("namespace", None)
    events = (b.event(name, hw.FILTERING_FAILED, hw.no_available_node(1)),)
    result = judge(run_replace(healthy, "tenant-a", replace(
        run, created=created, pod=None, events=events, outcome="timeout")), profile, check)
    assert f"no event names {reason}" in result.reason
    assert f"kubectl -n gpulab-verify describe pod {name}` in tenant-a" in result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_no_events_at_all(healthy: LabState, profile: KamajiHamiProfile, check: str) -> None:
    name, _ = CASES[check]
    run = replace(_run(healthy, name), events=(), outcome="timeout")
    result = judge(run_replace(healthy, "tenant-a", run), profile, check)
    assert result.status == "fail"
    assert "no scheduler left an event" in result.reason


def test_core_check_refused_for_memory(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = b.refused(profile.tenant("tenant-a"), "gpu-share-4", hw.CARD_INSUFFICIENT_MEMORY)
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-06")
    assert result.status == "fail"
    assert "HAMi refused it for CardInsufficientMemory, not CardInsufficientCore" in result.reason
    assert "other pods may be using GPU-MOCK-0" in result.reason


def test_memory_check_refused_for_uuid(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = b.refused(profile.tenant("tenant-a"), "gpu-mem-big", hw.CARD_UUID_MISMATCH)
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-07")
    assert result.status == "fail"
    assert result.reason == (
        "gpu-mem-big (90000 MiB, 10 cores) is Pending but HAMi refused it for CardUuidMismatch, "
        "not CardInsufficientMemory: HAMi would have named CardInsufficientMemory if card "
        "GPU-MOCK-0 were registered as the profile's 81920 MiB NVIDIA-A100-SXM4-80GB, so the "
        "card HAMi sees differs (see TC-04)")


def test_memory_check_on_joined_machines_names_the_card_as_the_machine_registered_it(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    """On joined machines verify sizes gpu-mem-big from the card a machine registered, so a
    refusal for another reason names that card and machine, not the profile's mock card."""
    from tests.existing.kamaji_machines import A100, joined

    state = b.tenant_replace(healthy, "tenant-a", workers="machines", nodes=(joined(),))
    run = b.refused(profile.tenant("tenant-a"), "gpu-mem-big", hw.CARD_UUID_MISMATCH)
    result = judge(run_replace(state, "tenant-a", run), profile, "TC-07")
    assert result.status == "fail"
    assert result.reason.endswith(
        "not CardInsufficientMemory: HAMi would have named CardInsufficientMemory if card "
        f"{A100} were registered as 81920 MiB NVIDIA A100-SXM4-80GB, as gpu-7 registered it "
        "when verify sized its pods, so the card HAMi sees differs (see TC-04)"), result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_webhook_bypassed(healthy: LabState, profile: KamajiHamiProfile, check: str) -> None:
    name, _ = CASES[check]
    pod = b.verify_pod(profile.tenant("tenant-a"), name, scheduler=None)
    # The default scheduler's own refusal: NodeResourcesFit's "Insufficient <resource>"
    # (plugins/noderesources/fit.go) for HAMi's resource it does not know.
    events = (b.event(name, "FailedScheduling",
                      kube.failed_scheduling(1, {"Insufficient nvidia.com/gpumem": 1}),
                      component="default-scheduler"),)
    run = replace(_run(healthy, name), created=pod, pod=pod, events=events)
    result = judge(run_replace(healthy, "tenant-a", run), profile, check)
    assert result.status == "fail"
    assert "HAMi's webhook was not called" in result.reason


def test_core_check_needs_the_three_share_pods(healthy: LabState,
                                               profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    state = run_replace(healthy, "tenant-a", b.lock_contended(spec, "gpu-share-3"))
    state = run_replace(state, "tenant-a", PodRun(
        "gpu-share-4", "TC-06", outcome="not-created",
        last_seen="not created because gpu-share-3 did not run (timeout)"))
    result = judge(state, profile, "TC-06")
    assert result.status == "fail"
    assert "the three share pods were not all running" in result.reason
    assert "node lock contention" in result.reason


def test_memory_check_does_not_need_the_share_pods(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    state = run_replace(healthy, "tenant-a", b.lock_contended(spec, "gpu-share-1"))
    assert judge(state, profile, "TC-07").status == "pass"


def test_create_refused(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = PodRun("gpu-mem-big", "TC-07", outcome="create-failed",
                 create_error="apply Pod gpulab-verify/gpu-mem-big: 403 Forbidden: exceeded "
                              "quota: gpu, requested: limits.nvidia.com/gpumem=90000")
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-07")
    assert result.status == "fail"
    assert "the tenant API refused gpu-mem-big (the create call failed)" in result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_skip_and_missing(healthy: LabState, profile: KamajiHamiProfile, check: str) -> None:
    assert judge(healthy, with_gpus(profile, "tenant-a"), check).status == "skip"
    name, _ = CASES[check]
    st = healthy.tenants["tenant-a"]
    state = replace(healthy, tenants={**healthy.tenants, "tenant-a": replace(
        st, gpu_pods=tuple(r for r in st.gpu_pods or () if r.name != name))})
    result = judge(state, profile, check)
    assert result.status == "error"
    assert "not in this observation or recording" in result.reason


@pytest.mark.parametrize("check", ["TC-06", "TC-07"])
def test_a_refusal_event_of_an_earlier_pod_with_the_same_name_is_no_pass(
        healthy: LabState, profile: KamajiHamiProfile, check: str) -> None:
    name, _ = CASES[check]
    run = _run(healthy, name)
    result = judge(run_replace(healthy, "tenant-a", b.events_of_uid(run, "an-earlier-run")),
                   profile, check)
    assert result.status == "fail"
    assert f"{name} is Pending with schedulerName hami-scheduler but no scheduler left an event" \
        in result.reason


# --------------------------------------------------------------------------- what the user reads (#24)

W = b.worker("tenant-a")
CORE_EVIDENCE = (f"gpu-share-4 (20000 MiB, 30 cores) stays Pending: FilteringFailed '1 nodes "
                 f"CardInsufficientCore({W})' from hami-scheduler")


def _core(state: LabState, **changes: Any) -> LabState:
    return run_replace(state, "tenant-a", replace(_run(state, "gpu-share-4"), **changes))


def _limitless(pod: dict[str, Any] | None) -> dict[str, Any]:
    assert pod is not None
    bare = copy.deepcopy(pod)
    for container in bare["spec"]["containers"]:
        container.pop("resources", None)
    return bare


def test_the_request_is_read_from_the_pod_as_created(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    result = judge(_core(healthy, pod=_limitless(run.pod or run.created)), profile, "TC-06")
    assert result.evidence == CORE_EVIDENCE


def test_a_pod_without_limits_shows_question_marks(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    bare = _limitless(run.created)
    result = judge(_core(healthy, created=bare, pod=bare), profile, "TC-06")
    assert result.evidence.startswith("gpu-share-4 (? MiB, ? cores) stays Pending")


def test_the_filter_event_is_preferred_whatever_the_order(healthy: LabState,
                                                          profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    result = judge(_core(healthy, events=tuple(reversed(run.events))), profile, "TC-06")
    assert result.evidence == CORE_EVIDENCE


def test_an_event_without_source_is_the_schedulers(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    events = tuple({k: v for k, v in e.items() if k != "source"} for e in run.events)
    result = judge(_core(healthy, events=events), profile, "TC-06")
    assert result.evidence.endswith(f"CardInsufficientCore({W})' from the scheduler")


def test_a_normal_event_naming_the_reason_is_no_refusal(healthy: LabState,
                                                        profile: KamajiHamiProfile) -> None:
    # MADE UP: no Normal event names a HAMi reason; a FilteringFailed text under another reason.
    events = (b.event("gpu-share-4", "Scheduled", hw.filter_failed(hw.CARD_INSUFFICIENT_CORE, [W]),
                      kind="Normal"),)
    result = judge(_core(healthy, events=events, waited=None), profile, "TC-06")
    assert result.status == "fail"
    assert result.reason.startswith(
        "gpu-share-4 (20000 MiB, 30 cores) is Pending but no event names CardInsufficientCore: "
        "HAMi did not report its reason; `kubectl -n gpulab-verify describe pod gpu-share-4` "
        "in tenant-a")
    assert result.evidence == f"events: Scheduled: 1 nodes CardInsufficientCore({W})"


def test_refused_for_other_reasons_names_them_all(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    events = (*b.refused(spec, "gpu-share-4", hw.CARD_INSUFFICIENT_MEMORY).events,
              *b.refused(spec, "gpu-share-4", hw.CARD_UUID_MISMATCH).events)
    result = judge(_core(healthy, events=events), profile, "TC-06")
    assert result.status == "fail"
    assert result.reason.startswith(
        "gpu-share-4 (20000 MiB, 30 cores) is Pending but HAMi refused it for "
        "CardInsufficientMemory, CardUuidMismatch, not CardInsufficientCore: ")
    assert result.evidence.startswith("events: ")
    assert f"FilteringFailed: 1 nodes CardUuidMismatch({W})" in result.evidence


def test_webhook_bypassed_names_the_pod(healthy: LabState, profile: KamajiHamiProfile) -> None:
    pod = b.verify_pod(profile.tenant("tenant-a"), "gpu-share-4", scheduler=None)
    result = judge(_core(healthy, created=pod, pod=pod), profile, "TC-06")
    assert result.reason.startswith("gpu-share-4 kept schedulerName default-scheduler: ")
    assert result.evidence == "gpu-share-4: Pending, schedulerName default-scheduler, node -"


def test_chosen_by_hami_but_not_bound_is_overcommit(healthy: LabState,
                                                    profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    assert run.created is not None
    pod = copy.deepcopy(run.created)
    pod["metadata"].setdefault("annotations", {})["hami.io/vgpu-node"] = W
    result = judge(_core(healthy, pod=pod), profile, "TC-06")
    assert result.status == "fail"
    assert result.reason.startswith(f"HAMi placed gpu-share-4 (20000 MiB, 30 cores) on {W}: ")
    assert result.evidence.startswith(
        "gpu-share-4: Pending, schedulerName hami-scheduler, node -; events: FailedScheduling: ")


def test_running_is_overcommit_even_unbound(healthy: LabState,
                                            profile: KamajiHamiProfile) -> None:
    run = _run(healthy, "gpu-share-4")
    assert run.created is not None
    pod = copy.deepcopy(run.created)
    pod["status"] = {"phase": "Running"}
    result = judge(_core(healthy, pod=pod), profile, "TC-06")
    assert result.status == "fail"
    assert result.reason.startswith("HAMi placed gpu-share-4 (20000 MiB, 30 cores) on : ")


def test_lock_contention_without_a_chosen_node(healthy: LabState,
                                               profile: KamajiHamiProfile) -> None:
    run = replace(b.lock_contended(profile.tenant("tenant-a"), "gpu-share-4"), check="TC-06")
    assert run.pod is not None
    pod = copy.deepcopy(run.pod)
    del pod["metadata"]["annotations"]["hami.io/vgpu-node"]
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-06")
    assert result.status == "fail"
    assert result.reason.startswith("its filter accepted gpu-share-4 (20000 MiB, 30 cores) and "
                                    "only node lock contention kept it from binding: ")
