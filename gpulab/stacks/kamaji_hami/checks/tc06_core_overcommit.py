"""TC-06 core over-commit: with the three share pods on the card, a fourth share pod (its cores
no longer fit) stays Pending and HAMi reports CardInsufficientCore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami.checks.common import prepare_gpu
from gpulab.stacks.kamaji_hami.checks.overcommit import refusal
from gpulab.stacks.kamaji_hami.checks.tc05_sharing import share_pods_running
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

__all__ = ["ID", "POD", "REASON", "check"]

ID = "TC-06"
POD = "gpu-share-4"
REASON = "CardInsufficientCore"


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """gpu-share-4 unscheduled with an event naming CardInsufficientCore, while gpu-share-1..3
    run on the card."""
    prepared = prepare_gpu(lab, profile, tenant, ID)
    if isinstance(prepared, CheckResult):
        return prepared
    ctx, sizes = prepared
    not_running = share_pods_running(ctx)
    if not_running:
        return ctx.failed(
            "the three share pods were not all running, so a fourth pod could not test core "
            f"over-commit (see TC-05): {summarize_problems(not_running, limit=1)}"
        )
    gpu = ctx.sized_card()
    used = 3 * sizes.share_cores
    return refusal(
        ctx, POD, REASON,
        accepted_story=(
            f"{used} of {gpu.cores} cores of card {sizes.card_id} were already in use, so HAMi "
            f"over-committed its cores; check that the pods' nvidia.com/gpucores limits reached "
            f"hami-scheduler (webhook) and that HAMi is the profile's version"
        ),
        other_reason_hint=(
            f"the card ran out of something else before its cores: other pods may be using "
            f"{sizes.card_id} (`kubectl get pods -A -o wide` in {tenant})"
        ),
    )
