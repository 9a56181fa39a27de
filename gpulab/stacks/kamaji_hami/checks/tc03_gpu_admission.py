"""TC-03 GPU admission path: a GPU pod created in the tenant comes back with schedulerName
hami-scheduler (HAMi's webhook, reached through Konnectivity, rewrote it), HAMi places it
(`hami.io/vgpu-node`, FilteringSucceed and BindingSucceed events) and the node runs it.

"Runs" is the pod's phase (k8s.io/api v0.36.3 core/v1/types.go:3499-3511): `Pending` while
bound means a container was never started (its image is still being pulled, or cannot be);
`Failed` without having run is the kubelet's refusal at admission (`status.reason`
UnexpectedAdmissionError when the device plugin's Allocate failed, as HAMi v2.10.0's own e2e
reads it: hack/hami-mig-e2e.sh:621). Either way the admission path did not end in a GPU pod."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import (
    explain_gpu_pod,
    prepare_gpu,
    webhook_bypassed,
)
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

__all__ = ["ID", "POD", "check"]

ID = "TC-03"
POD = "gpu-share-1"
_RAN = ("Running", "Succeeded")  # the kubelet admitted the pod and started its container


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """The first verify GPU pod was rewritten to hami-scheduler on admission, bound by HAMi to
    one of the tenant's workers, and that node runs it."""
    prepared = prepare_gpu(lab, profile, tenant, ID)
    if isinstance(prepared, CheckResult):
        return prepared
    ctx, _sizes = prepared
    run = ctx.verify_run(POD)
    if isinstance(run, CheckResult):
        return run
    admitted = run.created or run.pod
    if admitted is None:
        return ctx.failed(explain_gpu_pod(ctx, run, POD))
    if o.scheduler_name(admitted) != o.HAMI_SCHEDULER:
        return ctx.failed(webhook_bypassed(ctx.st, admitted),
                          f"{POD}: {o.pod_summary(run.pod or admitted)}")
    pod = run.pod or admitted
    chosen = o.annots(pod).get(o.VGPU_NODE, "")
    filtered = o.events_with(run.events, "FilteringSucceed")
    bound = o.events_with(run.events, "BindingSucceed")
    node = o.pod_node(pod)
    evidence = f"{POD} admitted with schedulerName hami-scheduler; {o.pod_summary(pod)}"
    if not chosen or not node:
        return ctx.failed(explain_gpu_pod(ctx, run, POD), evidence)
    if chosen not in ctx.workers():
        return ctx.failed(f"HAMi placed {POD} on {chosen}, which is not a worker of {tenant} "
                          f"({', '.join(ctx.workers())})", evidence)
    if node != chosen:
        return ctx.failed(f"{POD} is bound to {node} but HAMi chose {chosen}: another scheduler "
                          f"bound it", evidence)
    if not filtered or not bound:
        missing = [r for r, hits in (("FilteringSucceed", filtered), ("BindingSucceed", bound))
                   if not hits]
        return ctx.failed(
            f"HAMi placed {POD} on {chosen} but no {' / '.join(missing)} event from "
            f"hami-scheduler was found: events expire or may be dropped; re-run verify",
            f"{evidence}; events: {o.short_events(run.events)}",
        )
    if o.pod_phase(pod) not in _RAN:
        return ctx.failed(explain_gpu_pod(ctx, run, POD), evidence)
    return ctx.passed(
        f"{POD} admitted with schedulerName hami-scheduler; {o.VGPU_NODE}={chosen}; "
        f"FilteringSucceed: {o.event_message(filtered[-1])}; "
        f"BindingSucceed: {o.event_message(bound[-1])}; {o.pod_phase(pod)} on {node}"
    )
