"""TC-07 memory over-commit: a pod asking more memory than the whole card stays Pending and HAMi
reports CardInsufficientMemory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami.checks.common import prepare_gpu
from gpulab.stacks.kamaji_hami.checks.overcommit import refusal
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

__all__ = ["ID", "POD", "REASON", "check"]

ID = "TC-07"
POD = "gpu-mem-big"
REASON = "CardInsufficientMemory"


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """gpu-mem-big (card memory rounded up to the next 10000 MiB) unscheduled with an event
    naming CardInsufficientMemory."""
    prepared = prepare_gpu(lab, profile, tenant, ID)
    if isinstance(prepared, CheckResult):
        return prepared
    ctx, sizes = prepared
    gpu = ctx.sized_card()
    shape = f"{gpu.memory_mib} MiB {gpu.model}"
    what = (f"{shape}, as {gpu.node} registered it when verify sized its pods" if gpu.node
            else f"the profile's {shape}")
    return refusal(
        ctx, POD, REASON,
        accepted_story=(
            f"card {sizes.card_id} has {gpu.memory_mib} MiB, so HAMi over-committed its memory; "
            f"check the card's registered devmem (TC-04) and that the pod's nvidia.com/gpumem "
            f"limit reached hami-scheduler"
        ),
        other_reason_hint=(
            f"HAMi would have named {REASON} if card {sizes.card_id} were registered as "
            f"{what}, so the card HAMi sees differs (see TC-04)"
        ),
    )
