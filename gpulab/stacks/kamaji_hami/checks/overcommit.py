"""Shared by TC-06 and TC-07: a pod that must not fit stays Pending and HAMi names the reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import (
    Ctx,
    explain_gpu_pod,
    webhook_bypassed,
)
from gpulab.verify.observe import VERIFY_NAMESPACE
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


__all__ = ["asks", "refusal"]


def asks(pod: Mapping[str, Any] | None) -> str:
    """'20000 MiB, 30 cores' from the first container's limits."""
    containers = ((pod or {}).get("spec") or {}).get("containers") or [{}]
    limits = (containers[0].get("resources") or {}).get("limits") or {}
    return (f"{limits.get('nvidia.com/gpumem', '?')} MiB, "
            f"{limits.get('nvidia.com/gpucores', '?')} cores")


def refusal(ctx: Ctx, pod_name: str, expected: str, accepted_story: str,
            other_reason_hint: str) -> CheckResult:
    """Pass when `pod_name` is unscheduled and an event names HAMi's reason `expected`.

    accepted_story: the actionable text when HAMi placed the pod anyway (over-commit allowed);
    other_reason_hint: appended when HAMi refused it for another reason than `expected`.
    """
    run = ctx.verify_run(pod_name)
    if isinstance(run, CheckResult):
        return run
    admitted = run.created or run.pod
    pod = run.pod or admitted
    if admitted is None or pod is None:
        return ctx.failed(explain_gpu_pod(ctx, run, pod_name))
    request = asks(admitted)
    if o.scheduler_name(admitted) != o.HAMI_SCHEDULER:
        return ctx.failed(webhook_bypassed(ctx.st, admitted), f"{pod_name}: {o.pod_summary(pod)}")
    bound = o.pod_node(pod)
    chosen = o.annots(pod).get(o.VGPU_NODE, "")
    lock = o.lock_contention(run.events)
    if bound or chosen or o.pod_phase(pod) == "Running" or lock is not None:
        how = (f"its filter accepted {pod_name} ({request}) and only node lock contention kept "
               f"it from binding" if lock is not None and not bound
               else f"HAMi placed {pod_name} ({request}) on {bound or chosen}")
        return ctx.failed(f"{how}: {accepted_story}",
                          f"{pod_name}: {o.pod_summary(pod)}; events: {o.short_events(run.events)}")
    hits = [e for e in run.events if e.get("type") != "Normal"
            and expected in o.event_message(e)]
    if hits:
        best = next((e for e in hits if e.get("reason") == "FilteringFailed"), hits[-1])
        source = o.event_source(best) or "the scheduler"
        return ctx.passed(
            f"{pod_name} ({request}) stays {o.pod_phase(pod)}: {best.get('reason')} "
            f"'{o.event_message(best)}' from {source}"
        )
    reasons = [r for r in o.hami_reasons(run.events) if r != o.LOCK_CONTENTION]
    if reasons:
        return ctx.failed(
            f"{pod_name} ({request}) is {o.pod_phase(pod)} but HAMi refused it for "
            f"{', '.join(reasons)}, not {expected}: {other_reason_hint}",
            f"events: {o.short_events(run.events)}",
        )
    if not run.events:
        return ctx.failed(explain_gpu_pod(ctx, run, pod_name))
    waited = f" within {run.waited:.0f}s" if run.waited else ""
    return ctx.failed(
        f"{pod_name} ({request}) is {o.pod_phase(pod)} but no event names {expected}{waited}: "
        f"HAMi did not report its reason; `kubectl -n {VERIFY_NAMESPACE} "
        f"describe pod {pod_name}` in {ctx.tenant}",
        f"events: {o.short_events(run.events)}",
    )
