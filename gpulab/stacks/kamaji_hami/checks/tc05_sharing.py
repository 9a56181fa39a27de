"""TC-05 sharing: three pods sized by render.sharing_sizes run at the same time on the same card
(one device id in `hami.io/vgpu-devices-allocated`), using 3x their memory and cores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import (
    Ctx,
    explain_gpu_pod,
    not_verifys_pod,
    other_cards,
    prepare_gpu,
)
from gpulab.verify.observe import VERIFY_NAMESPACE
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.render import SharingSizes
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.hami import DeviceGrant

__all__ = ["ID", "SHARE_PODS", "check", "share_pods_running"]

ID = "TC-05"
SHARE_PODS = ("gpu-share-1", "gpu-share-2", "gpu-share-3")


def share_pods_running(ctx: Ctx) -> list[str]:
    """Why the three share pods are not all verify's own, Running and ready in the last snapshot
    ([] when they are): a pod that is Running while its container crash-loops or is not ready
    does not count."""
    problems = []
    for pod_name in SHARE_PODS:
        run = ctx.pod_run(pod_name)
        foreign = not_verifys_pod(run, ctx.lab.run_id) if run else ""
        if foreign:
            problems.append(foreign)
        elif run is None or run.pod is None or o.pod_phase(run.pod) != "Running":
            problems.append(explain_gpu_pod(ctx, run, pod_name))
        elif containers := o.container_problems(run.pod):
            problems.append(
                f"{pod_name} is Running on {o.pod_node(run.pod) or '-'} but its containers are "
                f"not: {', '.join(containers)}; kubectl -n {VERIFY_NAMESPACE} logs {pod_name} "
                f"--previous in {ctx.tenant}")
    return problems


def _placement(ctx: Ctx, sizes: SharingSizes) -> tuple[list[str], str]:
    uses: dict[str, DeviceGrant] = {}
    nodes: dict[str, str] = {}
    problems: list[str] = []
    for pod_name in SHARE_PODS:
        run = ctx.pod_run(pod_name)
        pod = run.pod if run else None
        alloc = o.allocations(pod)
        devices = [d for container in alloc or [] for d in container]
        if alloc is None or not devices:
            problems.append(
                f"{pod_name} runs without a HAMi allocation ({o.ALLOCATED} missing or unreadable, "
                f"schedulerName {o.scheduler_name(pod)}): it was not placed by HAMi (see TC-03)"
            )
            continue
        if len(devices) != 1:
            problems.append(f"{pod_name} got {len(devices)} devices, expected 1")
            continue
        uses[pod_name] = devices[0]
        nodes[pod_name] = o.pod_node(pod)
    if problems:
        return problems, ""
    cards = sorted({u.device_id for u in uses.values()})
    if len(cards) > 1:
        spread = ", ".join(f"{p} on {u.device_id}" for p, u in uses.items())
        return [
            f"the pods were spread over cards ({spread}), so no card was shared: verify pins them "
            f"to {sizes.card_id} with the nvidia.com/use-gpuuuid annotation, which HAMi did not "
            f"honour; check that the pods kept that annotation and hami-scheduler's GPU policy"
        ], ""
    if len(set(nodes.values())) > 1:
        return [f"the pods run on different nodes ({nodes}) although they share card {cards[0]}"
                f": device ids must be unique per tenant"], ""
    card = cards[0]
    if card != sizes.card_id:
        problems.append(f"the pods share card {card}, not {sizes.card_id} they were pinned to")
    for pod_name, use in uses.items():
        if (use.memory_mib, use.cores) != (sizes.share_memory, sizes.share_cores):
            problems.append(
                f"{pod_name} was granted {use.memory_mib} MiB and {use.cores} cores on {card}, "
                f"but asked for {sizes.share_memory} MiB and {sizes.share_cores} cores: HAMi "
                f"allocated other amounts than the pod asked ({o.ALLOCATED})")
    memory = sum(u.memory_mib for u in uses.values())
    cores = sum(u.cores for u in uses.values())
    want_memory, want_cores = 3 * sizes.share_memory, 3 * sizes.share_cores
    if (memory, cores) != (want_memory, want_cores):
        problems.append(
            f"card {card} holds {memory} MiB and {cores} cores for the three pods, expected "
            f"{want_memory} MiB and {want_cores} cores ({sizes.share_memory} MiB and "
            f"{sizes.share_cores} cores each): HAMi allocated other amounts than the pods asked"
        )
    gpu = ctx.sized_card()
    node = next(iter(nodes.values()))
    return problems, (
        f"{', '.join(SHARE_PODS)} Running together on {node}, card {card}: {memory}/"
        f"{gpu.memory_mib} MiB and {cores}/{gpu.cores} cores in use"
    )


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """All three share pods Running in one snapshot, each with one HAMi device, all the same
    card and node, memory and cores adding up to three shares."""
    prepared = prepare_gpu(lab, profile, tenant, ID)
    if isinstance(prepared, CheckResult):
        return prepared
    ctx, sizes = prepared
    not_running = share_pods_running(ctx)
    if not_running:
        return ctx.failed(summarize_problems(not_running, limit=2))
    problems, evidence = _placement(ctx, sizes)
    if problems:
        return ctx.failed(summarize_problems(problems), evidence)
    return ctx.passed(evidence + other_cards(ctx))
