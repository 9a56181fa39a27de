"""TC-05: three pods share one card, running together (write-up: 60000 MiB and 90 cores)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.stacks.kamaji_hami.state import TenantState
from gpulab.verify.state import PodRun
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, run_replace, tenant_replace, with_gpus

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    a = judge(healthy, profile, "TC-05")
    assert a.status == "pass", a.reason
    assert a.evidence == (
        f"gpu-share-1, gpu-share-2, gpu-share-3 Running together on {b.worker('tenant-a')}, card "
        f"GPU-MOCK-0: 60000/81920 MiB and 90/100 cores in use"
    )


def test_l4_cards_get_their_own_sizes(healthy: LabState, profile: KamajiHamiProfile) -> None:
    """Sizing rule on tenant-b's 24576 MiB L4: 6000 MiB and 30 cores per pod."""
    result = judge(healthy, profile, "TC-05", "tenant-b")
    assert result.status == "pass", result.reason
    assert "card GPU-MOCK-B0: 18000/24576 MiB and 90/100 cores" in result.evidence


def test_changed_gpu_gets_a_meaningful_check(profile: KamajiHamiProfile) -> None:
    changed = with_gpus(profile, "tenant-a", {"model": "NVIDIA-A100-PCIE-40GB",
                                              "memory_mib": 40960})
    spec = changed.tenant("tenant-a")
    state = b.healthy_state(changed)
    result = judge(state, changed, "TC-05")
    assert result.status == "pass", result.reason
    assert "30000/40960 MiB and 90/100 cores" in result.evidence
    # ... and the old lab's 20000 MiB pods do not satisfy it.
    old = b.placed(profile.tenant("tenant-a"), "gpu-share-2")
    bad = run_replace(state, "tenant-a", replace(old, created=b.verify_pod(spec, "gpu-share-2")))
    failed = judge(bad, changed, "TC-05")
    assert failed.status == "fail"
    assert "expected 30000 MiB and 90 cores" in failed.reason


def test_lock_contention(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    state = run_replace(healthy, "tenant-a", b.lock_contended(spec, "gpu-share-2"))
    state = run_replace(state, "tenant-a", PodRun(
        "gpu-share-3", "TC-05", outcome="not-created",
        last_seen="not created because gpu-share-2 did not run (timeout)"))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert "HAMi could not bind gpu-share-2: node lock contention" in result.reason
    assert "node_lock_timeout" in result.reason
    assert "gpu-share-3 was not created: not created because gpu-share-2 did not run" in (
        result.reason)


def test_spread_over_two_cards(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-b")
    state = run_replace(healthy, "tenant-b", b.placed(spec, "gpu-share-2", card="GPU-MOCK-B1"))
    result = judge(state, profile, "TC-05", "tenant-b")
    assert result.status == "fail"
    assert "the pods were spread over cards" in result.reason
    assert "gpu-share-2 on GPU-MOCK-B1" in result.reason
    assert "nvidia.com/use-gpuuuid" in result.reason


def test_shared_card_is_not_the_pinned_one(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-b")
    state = healthy
    for name in ("gpu-share-1", "gpu-share-2", "gpu-share-3"):
        state = run_replace(state, "tenant-b", b.placed(spec, name, card="GPU-MOCK-B1"))
    result = judge(state, profile, "TC-05", "tenant-b")
    assert result.status == "fail"
    assert "share card GPU-MOCK-B1, not GPU-MOCK-B0" in result.reason


def test_running_without_hami(healthy: LabState, profile: KamajiHamiProfile) -> None:
    """The webhook was bypassed and kube-scheduler ran the pods on extended resources."""
    spec = profile.tenant("tenant-a")
    state = healthy
    for name in ("gpu-share-1", "gpu-share-2", "gpu-share-3"):
        pod = b.verify_pod(spec, name, scheduler="default-scheduler")
        live = {**pod, "spec": {**pod["spec"], "nodeName": b.worker("tenant-a")},
                "status": {"phase": "Running", "containerStatuses": [b.running("app")]}}
        state = run_replace(state, "tenant-a", PodRun(name, "TC-05", created=pod, pod=live,
                                                      outcome="running"))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert "runs without a HAMi allocation" in result.reason
    assert "schedulerName default-scheduler" in result.reason


def test_one_pod_stopped_before_the_snapshot(healthy: LabState,
                                            profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-1")
    assert run.pod is not None
    pod = {**run.pod, "status": {"phase": "Failed", "reason": "Evicted",
                                 "message": "The node was low on resource: memory."}}
    result = judge(run_replace(healthy, "tenant-a", replace(run, pod=pod)), profile, "TC-05")
    assert result.status == "fail"
    assert "gpu-share-1 failed: Evicted" in result.reason


def test_allocated_amounts_differ(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-3", memory=81920, cores=100)
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-05")
    assert result.status == "fail"
    assert "holds 121920 MiB and 160 cores" in result.reason
    assert "expected 60000 MiB and 90 cores (20000 MiB and 30 cores each)" in result.reason


def test_pods_on_different_nodes(healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = b.placed(profile.tenant("tenant-a"), "gpu-share-2", host=b.worker("tenant-a", 1))
    result = judge(run_replace(healthy, "tenant-a", run), profile, "TC-05")
    assert result.status == "fail"
    assert "run on different nodes" in result.reason


def test_skipped_without_gpus(healthy: LabState, profile: KamajiHamiProfile) -> None:
    assert judge(healthy, with_gpus(profile, "tenant-a"), "TC-05").status == "skip"


def test_pod_missing_from_recording_is_explained(healthy: LabState,
                                                 profile: KamajiHamiProfile) -> None:
    st: TenantState = healthy.tenants["tenant-a"]
    state = tenant_replace(healthy, "tenant-a", gpu_pods=tuple(
        r for r in st.gpu_pods or () if r.name != "gpu-share-3"))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert "gpu-share-3 was not part of this observation" in result.reason


# One fact broken at a time: the pod must be verify's own, really running, granted what it asked.

def _share(state: LabState, name: str, tenant: str = "tenant-a") -> PodRun:
    run = state.tenants[tenant].pod_run(name)
    assert run is not None and run.pod is not None
    return run


def _with_pod(run: PodRun, **changes: Any) -> PodRun:
    assert run.pod is not None
    return replace(run, pod={**run.pod, **changes})


def _with_meta(run: PodRun, **changes: Any) -> PodRun:
    assert run.pod is not None
    return _with_pod(run, metadata={**run.pod["metadata"], **changes})


@pytest.mark.parametrize(("container", "expected"), [
    (b.waiting("app", "CrashLoopBackOff"), "app: waiting CrashLoopBackOff (5 restarts)"),
    ({**b.running("app"), "ready": False}, "app: running but not ready"),
    ({"name": "app", "state": {"terminated": {"reason": "Error"}}, "restartCount": 1},
     "app: terminated Error (1 restarts)"),
])
def test_a_running_pod_whose_container_does_not_run_is_no_share(
        healthy: LabState, profile: KamajiHamiProfile, container: dict[str, Any],
        expected: str) -> None:
    run = _share(healthy, "gpu-share-2")
    broken = _with_pod(run, status={"phase": "Running", "containerStatuses": [container]})
    result = judge(run_replace(healthy, "tenant-a", broken), profile, "TC-05")
    assert result.status == "fail"
    assert f"gpu-share-2 is Running on {b.worker('tenant-a')} but its containers are not: " \
           f"{expected}" in result.reason
    assert "kubectl -n gpulab-verify logs gpu-share-2 --previous" in result.reason


def test_per_pod_amounts_that_only_add_up_fail(healthy: LabState,
                                               profile: KamajiHamiProfile) -> None:
    """A100 shares are 20000 MiB and 30 cores: 30000 + 10000 + 20000 still sums to 60000."""
    spec = profile.tenant("tenant-a")
    state = run_replace(healthy, "tenant-a", b.placed(spec, "gpu-share-1", memory=30000))
    state = run_replace(state, "tenant-a", b.placed(spec, "gpu-share-2", memory=10000))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert ("gpu-share-1 was granted 30000 MiB and 30 cores on GPU-MOCK-0, but asked for 20000 "
            "MiB and 30 cores") in result.reason
    assert "gpu-share-2 was granted 10000 MiB" in result.reason


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda r: _with_meta(r, namespace="default"),
     "the gpu-share-3 that was read is in namespace default, not verify's gpulab-verify"),
    (lambda r: _with_meta(r, labels={}),
     "gpulab-verify/gpu-share-3 lacks verify's label gpulab.dev/check=TC-05"),
    (lambda r: _with_meta(r, uid="someone-elses"),
     "gpulab-verify/gpu-share-3 has uid someone-elses, not"),
])
def test_a_pod_of_the_same_name_is_not_verifys(
        healthy: LabState, profile: KamajiHamiProfile, edit: Callable[[PodRun], PodRun],
        expected: str) -> None:
    state = run_replace(healthy, "tenant-a", edit(_share(healthy, "gpu-share-3")))
    result = judge(state, profile, "TC-05")
    assert result.status == "fail"
    assert expected in result.reason


def test_tc03_refuses_a_same_named_pod(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = run_replace(healthy, "tenant-a",
                        _with_meta(_share(healthy, "gpu-share-1"), uid="replaced"))
    result = judge(state, profile, "TC-03")
    assert result.status == "fail"
    assert "gpulab-verify/gpu-share-1 has uid replaced" in result.reason


def test_events_of_another_pod_with_the_same_name_do_not_count(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    run = _share(healthy, "gpu-share-1")
    state = run_replace(healthy, "tenant-a", b.events_of_uid(run, "an-earlier-run"))
    result = judge(state, profile, "TC-03")
    assert result.status == "fail"
    assert "no FilteringSucceed / BindingSucceed event" in result.reason
    own_uid = run.pod["metadata"]["uid"] if run.pod else ""
    state = run_replace(healthy, "tenant-a", b.events_of_uid(run, own_uid))
    assert judge(state, profile, "TC-03").status == "pass"
