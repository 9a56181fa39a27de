"""TC-05: three pods share one card, running together (write-up: 60000 MiB and 90 cores)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami.state import TenantState
from gpulab.verify.state import PodRun
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, run_replace, tenant_replace, with_gpus

if TYPE_CHECKING:
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
                "status": {"phase": "Running"}}
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
