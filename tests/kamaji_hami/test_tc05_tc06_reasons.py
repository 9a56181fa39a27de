"""TC-05 and TC-06: the exact reason and evidence the user reads when the share pods are not
what they should be (mutation testing, docs/dev/mutation-testing.md, found these unpinned;
tests/kamaji_hami/test_tc05_sharing.py and test_tc06_tc07_overcommit.py hold the write-up's
cases)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpulab.verify.state import PodRun
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, run_replace

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

SHARES = ("gpu-share-1", "gpu-share-2", "gpu-share-3")
ALLOCATED = "hami.io/vgpu-devices-allocated"


def _share(state: LabState, name: str, tenant: str = "tenant-a") -> PodRun:
    run = state.tenants[tenant].pod_run(name)
    assert run is not None and run.pod is not None
    return run


def _annotated(run: PodRun, value: str | None, **spec: Any) -> PodRun:
    assert run.pod is not None
    notes = {k: v for k, v in run.pod["metadata"]["annotations"].items() if k != ALLOCATED}
    if value is not None:
        notes[ALLOCATED] = value
    return replace(run, pod={**run.pod, "metadata": {**run.pod["metadata"], "annotations": notes},
                             "spec": {**run.pod["spec"], **spec}})


def test_each_pod_without_a_readable_allocation_is_named(healthy: LabState,
                                                         profile: KamajiHamiProfile) -> None:
    """An allocation HAMi's format does not give (here: garbage) is as good as none."""
    state = run_replace(healthy, "tenant-a", _annotated(_share(healthy, "gpu-share-1"), "garbage"))
    state = run_replace(state, "tenant-a", _annotated(_share(healthy, "gpu-share-3"), None))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert result.reason == (
        "gpu-share-1 runs without a HAMi allocation (hami.io/vgpu-devices-allocated missing or "
        "unreadable, schedulerName hami-scheduler): it was not placed by HAMi (see TC-03); "
        "gpu-share-3 runs without a HAMi allocation (hami.io/vgpu-devices-allocated missing or "
        "unreadable, schedulerName hami-scheduler): it was not placed by HAMi (see TC-03)")
    assert result.evidence == ""


def test_each_pod_with_more_than_one_device_is_named(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    two = "GPU-MOCK-0,NVIDIA,20000,30:GPU-MOCK-1,NVIDIA,20000,30:;"
    state = run_replace(healthy, "tenant-a", _annotated(_share(healthy, "gpu-share-1"), two))
    state = run_replace(state, "tenant-a", _annotated(_share(healthy, "gpu-share-2"), two))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert result.reason == ("gpu-share-1 got 2 devices, expected 1; gpu-share-2 got 2 devices, "
                             "expected 1")
    assert result.evidence == ""


def test_pods_spread_over_cards_are_listed_card_by_card(healthy: LabState,
                                                        profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-b")
    state = run_replace(healthy, "tenant-b", b.placed(spec, "gpu-share-2", card="GPU-MOCK-B1"))
    result = judge(state, profile, "TC-05", "tenant-b")
    assert result.reason.startswith(
        "the pods were spread over cards (gpu-share-1 on GPU-MOCK-B0, gpu-share-2 on GPU-MOCK-B1, "
        "gpu-share-3 on GPU-MOCK-B0), so no card was shared: verify pins them to GPU-MOCK-B0")
    assert result.evidence == ""


def test_pods_on_two_nodes_have_no_evidence(healthy: LabState,
                                            profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-2", host=b.worker("tenant-a", 1))
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-05")
    assert result.reason.endswith("device ids must be unique per tenant")
    assert result.evidence == ""


def test_wrong_amounts_still_show_what_the_card_holds(healthy: LabState,
                                                      profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-3", memory=81920, cores=100)
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-05")
    assert result.status == "fail"
    assert result.evidence == (
        f"gpu-share-1, gpu-share-2, gpu-share-3 Running together on {b.worker('tenant-a')}, card "
        "GPU-MOCK-0: 121920/81920 MiB and 160/100 cores in use")


def test_at_most_two_pods_that_do_not_run_are_told(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    state = healthy
    for name in SHARES:
        state = run_replace(state, "tenant-a", PodRun(name, "TC-05", outcome="not-created",
                                                      last_seen="the API refused it"))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert result.reason.count("was not created") == 2
    assert result.reason.endswith("(+1 more)")
    core = judge(state, profile, "TC-06")
    assert core.reason.startswith(
        "the three share pods were not all running, so a fourth pod could not test core "
        "over-commit (see TC-05): gpu-share-1 was not created")
    assert core.reason.count("was not created") == 1
    assert core.reason.endswith("(+2 more)")


def test_a_running_pod_on_no_node_whose_containers_do_not_run(healthy: LabState,
                                                              profile: KamajiHamiProfile) -> None:
    run = _share(healthy, "gpu-share-2")
    assert run.pod is not None
    spec = {k: v for k, v in run.pod["spec"].items() if k != "nodeName"}
    spec["containers"] = [*spec["containers"], {"name": "side", "image": "pause:3.10"}]
    broken = replace(run, pod={**run.pod, "spec": spec, "status": {
        "phase": "Running", "containerStatuses": [
            b.waiting("app", "CrashLoopBackOff"), {**b.running("side"), "ready": False}]}})
    result = judge(run_replace(healthy, "tenant-a", broken), profile, "TC-05")
    assert result.reason == (
        "gpu-share-2 is Running on - but its containers are not: app: waiting CrashLoopBackOff "
        "(5 restarts), side: running but not ready; kubectl -n gpulab-verify logs gpu-share-2 "
        "--previous in tenant-a")


def test_a_fourth_pod_placed_says_how_many_cores_were_in_use(healthy: LabState,
                                                             profile: KamajiHamiProfile) -> None:
    placed = b.placed(profile.tenant("tenant-a"), "gpu-share-4")
    result = judge(run_replace(healthy, "tenant-a", replace(placed, check="TC-06")), profile,
                   "TC-06")
    assert result.status == "fail"
    assert ("90 of 100 cores of card GPU-MOCK-0 were already in use, so HAMi over-committed its "
            "cores") in result.reason
    l4 = b.placed(profile.tenant("tenant-b"), "gpu-share-4")
    other = judge(run_replace(healthy, "tenant-b", replace(l4, check="TC-06")), profile,
                  "TC-06", "tenant-b")
    assert "90 of 100 cores of card GPU-MOCK-B0 were already in use" in other.reason
