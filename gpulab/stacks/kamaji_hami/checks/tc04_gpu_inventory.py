"""TC-04 GPU inventory: every worker advertises exactly the profile's GPUs (nvidia.com/gpu,
gpumem, gpucores, gpumem-percentage) and HAMi's registered devices match ids, memory, cores and
model. On machines that joined the tenant: each GPU node registers healthy cards, advertises
their slices and carries HAMi's handshake (the cards are whatever the machine has)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare, system_pods_summary
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.state import JsonObj

__all__ = ["ID", "check"]

ID = "TC-04"
_FIELDS = (("devmem", "memory"), ("devcore", "cores"), ("type", "model"), ("count", "split"))
# HAMi v2.10.0 pkg/device/nvidia/device.go:41. The scheduler's resync (every 15 s,
# pkg/scheduler/scheduler.go:420-439, all nodes: the chart sets no --node-label-selector) writes
# "Requesting_<time.DateTime>" when the value holds no "Requesting" (pkg/device/devices.go:
# 576-606), and removes the annotation when it finds the node unhealthy (NodeCleanUp,
# scheduler.go:478-503; nvidia/device.go:229-231). The real device plugin answers
# "Reported_<time>"; the mock plugin never does, so the timestamp stays that of the first resync
# and its age says nothing: after 60 s HAMi keeps the node only while allocatable nvidia.com/gpu
# > 0, which _allocatable_problems checks.
HANDSHAKE_ANNOTATION = "hami.io/node-handshake"
_HANDSHAKE_STATES = ("Requesting", "Reported")


def _allocatable_problems(ctx: Ctx, node: JsonObj) -> tuple[list[str], str]:
    want = render.gpu_capacity(ctx.spec)
    status = node.get("status") or {}
    alloc = status.get("allocatable") or {}
    got = {key: o.int_quantity(alloc.get(key)) or 0 for key in want}
    node_name = o.name(node)
    shown = ", ".join(f"{k.removeprefix('nvidia.com/')}={v}" for k, v in got.items())
    if got == want:
        return [], shown
    wrong = ", ".join(f"{k}={got[k]} (want {v})" for k, v in want.items() if got[k] != v)
    capacity = o.int_quantity((status.get("capacity") or {}).get("nvidia.com/gpu")) or 0
    if not ctx.spec.gpus:
        hint = "the profile gives this tenant no GPUs, yet the node advertises some"
    elif capacity <= 0:
        hint = ("node capacity nvidia.com/gpu is not set: gpulab patches it so that HAMi's mock "
                "plugin starts reporting (it reports zero until then); re-run `gpulab up`")
    elif not got["nvidia.com/gpumem"] or not got["nvidia.com/gpucores"]:
        hint = ("HAMi's mock device plugin has not registered the cards: check its pods in "
                f"kube-system [{system_pods_summary(ctx.st, 'hami-mock-device-plugin')}] and "
                f"that ConfigMap hami-scheduler-device exists "
                f"({'yes' if ctx.st.hami_device_configmap else 'no'})")
    else:
        hint = ("the node describes other cards than the profile: its "
                f"{render.GPU_REGISTER_ANNOTATION} annotation differs; `gpulab up` rewrites it")
    return [f"node {node_name} allocatable {wrong}: {hint}"], shown


def _handshake_problems(ctx: Ctx, node: JsonObj, gpu: bool | None = None
                        ) -> tuple[list[str], str]:
    """hami-scheduler's handshake mark on a GPU worker (`gpu`; default: the profile gives the
    tenant GPUs): present and well formed."""
    if not (bool(ctx.spec.gpus) if gpu is None else gpu):
        return [], ""
    node_name = o.name(node)
    raw = o.annots(node).get(HANDSHAKE_ANNOTATION)
    look = (f"hami-scheduler pods in kube-system: "
            f"[{system_pods_summary(ctx.st, 'hami-scheduler')}]; kubectl -n kube-system logs "
            f"deploy/hami-scheduler -c vgpu-scheduler-extender | grep {node_name} in {ctx.tenant}")
    if raw is None:
        return [f"node {node_name} has no {HANDSHAKE_ANNOTATION} annotation: hami-scheduler "
                f"writes it on every resync (15 s), so it has not processed the node or just "
                f"dropped it as unhealthy; {look}"], ""
    state, _, stamp = str(raw).partition("_")
    try:
        datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")  # Go's time.DateTime
    except ValueError:
        stamp = ""
    if state not in _HANDSHAKE_STATES or not stamp:
        return [f"node {node_name} annotation {HANDSHAKE_ANNOTATION} is {str(raw)[:80]!r}, not "
                f"HAMi's 'Requesting_<time>' or 'Reported_<time>': something else wrote it; "
                f"{look}"], ""
    return [], f"handshake {raw}"


def _registered_problems(ctx: Ctx, node: JsonObj, index: int) -> tuple[list[str], str]:
    node_name = o.name(node)
    raw = o.annots(node).get(render.GPU_REGISTER_ANNOTATION)
    want: list[dict[str, Any]] = (
        json.loads(render.gpu_register_annotation(ctx.spec, index)) if ctx.spec.gpus else []
    )
    if raw is None:
        if not want:
            return [], "no cards registered"
        return [f"node {node_name} has no {render.GPU_REGISTER_ANNOTATION} annotation: HAMi "
                f"knows no cards on it; `gpulab up` writes it"], ""
    got = o.registered_devices(raw)
    if got is None:
        return [f"node {node_name} annotation {render.GPU_REGISTER_ANNOTATION} is not a JSON "
                f"list of devices (HAMi v2.10 reads JSON only): {raw[:120]}"], ""
    by_id = {str(d.get("id")): d for d in got}
    problems: list[str] = []
    for card in want:
        have = by_id.pop(str(card["id"]), None)
        if have is None:
            problems.append(f"node {node_name} has no registered device {card['id']}")
            continue
        for key, label in _FIELDS:
            if have.get(key) != card[key]:
                problems.append(f"registered device {card['id']} on {node_name} has {label} "
                                f"{have.get(key)!r}, the profile says {card[key]!r}")
        if have.get("health") is not True:
            problems.append(f"registered device {card['id']} on {node_name} is not healthy")
    for extra in by_id:
        problems.append(f"node {node_name} registers device {extra}, which the profile "
                        f"does not have")
    if problems:
        problems[-1] += f"; `gpulab up` rewrites {render.GPU_REGISTER_ANNOTATION}"
    shown = ", ".join(f"{c['id']} {c['type']} {c['devmem']} MiB {c['devcore']} cores"
                      for c in want)
    return problems, shown


# HAMi's NVIDIA device plugin registers each card with `count` = its deviceSplitCount
# (pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:179-189 at v2.10.0) and
# advertises to the kubelet that many devices per card under one resource, nvidia.com/gpu
# (rm/devices.go:195-216, plugin/server.go:585); memory and cores are no node resources: the
# chart's scheduler config marks them ignoredByScheduler (charts/hami/templates/_helpers.tpl:
# 195-202), so only nvidia.com/gpu is compared on a joined machine.
GPU_RESOURCE = "nvidia.com/gpu"


def _mig(card: JsonObj) -> str:
    """' MIG (1g.10gb, 7g.80gb)' for a card HAMi registered in MIG mode (its profiles'
    names: HAMi v2.10.0 register.go:190-202), else ''."""
    from gpulab.verify.hami import MIG_MODE

    if card.get("mode") != MIG_MODE:
        return ""
    names = [str(p.get("name")) for p in card.get("migprofiles") or [] if isinstance(p, dict)]
    return f" MIG ({', '.join(names) or 'no profile'})"


def _machine_problems(ctx: Ctx, node: JsonObj) -> tuple[list[str], str, bool]:
    """A joined machine: (problems, evidence, whether it is a GPU node). It is one when it
    carries HAMi's device plugin label (gpu=on, what gpulab join asks) or registers cards; it
    then registers healthy cards HAMi decodes, advertises their slices as nvidia.com/gpu and
    carries hami-scheduler's handshake."""
    from gpulab.stacks.kamaji_hami.existing import HAMI_GPU_LABEL
    from gpulab.verify.hami import decode_register

    node_name = o.name(node)
    key, value = HAMI_GPU_LABEL
    labelled = o.labels(node).get(key) == value
    raw = o.annots(node).get(render.GPU_REGISTER_ANNOTATION)
    if raw is None:
        if not labelled:
            return [], f"{node_name}: no GPU (not labelled {key}={value}, no card registered)", \
                False
        return [f"node {node_name} is labelled {key}={value} but registers no card with HAMi "
                f"(no {render.GPU_REGISTER_ANNOTATION}): HAMi's NVIDIA device plugin has not "
                f"run on it; `gpulab join {ctx.tenant}` prints the command that installs HAMi; "
                f"its pods in kube-system: [{system_pods_summary(ctx.st, 'hami-device-plugin')}]"
                ], "", True
    cards = decode_register(raw)
    if cards is None:
        return [f"node {node_name} annotation {render.GPU_REGISTER_ANNOTATION} is not a list "
                f"of devices HAMi v2.10 decodes: {raw[:120]}"], "", True
    problems = [f"registered device {c['id']} on {node_name} is not healthy" for c in cards
                if c["health"] is not True]
    slices = sum(int(c["count"]) for c in cards)
    advertised = o.int_quantity(((node.get("status") or {}).get("allocatable") or {}).get(
        GPU_RESOURCE)) or 0
    if advertised != slices:
        problems.append(f"node {node_name} allocatable {GPU_RESOURCE}={advertised}, but HAMi "
                        f"registered {len(cards)} card(s) of {slices} slice(s) in all: the "
                        f"device plugin's registration with the kubelet is stale or failed "
                        f"(kubectl -n kube-system logs of its pod on {node_name})")
    shakes, handshake = _handshake_problems(ctx, node, gpu=True)
    problems += shakes
    shown = ", ".join(f"{c['id']} {c['type']} {c['devmem']} MiB {c['devcore']} cores split "
                      f"{c['count']}{_mig(c)}" for c in cards)
    return problems, (f"{node_name} registers {len(cards)} card(s) with HAMi: {shown}; "
                      f"{GPU_RESOURCE}={advertised}; {handshake}"), True


def _machines(ctx: Ctx) -> CheckResult:
    """TC-04 on machines that joined the tenant: what their device plugin registers."""
    if (skip := ctx.no_machine()) is not None:
        return skip
    problems: list[str] = []
    evidence: list[str] = []
    gpu_nodes = 0
    for worker in ctx.workers():
        node = ctx.node(worker)
        if node is None:  # pragma: no cover - the workers are the listed nodes
            continue
        more, shown, gpu = _machine_problems(ctx, node)
        problems += more
        gpu_nodes += gpu
        if shown and not more:
            evidence.append(shown)
    if not gpu_nodes:
        from gpulab.stacks.kamaji_hami.existing import HAMI_GPU_LABEL

        key, value = HAMI_GPU_LABEL
        problems.append(f"no node of {ctx.tenant} is a GPU worker ({', '.join(ctx.workers())} "
                        f"neither labelled {key}={value} nor registering a card with HAMi): "
                        f"label the GPU machine and install HAMi as `gpulab join {ctx.tenant}` "
                        f"prints (its steps 2 and 3)")
    if problems:
        return ctx.failed(summarize_problems(problems), "; ".join(evidence))
    return ctx.passed("; ".join(evidence))


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """Allocatable GPU resources equal render.gpu_capacity, the registered devices equal
    render.gpu_register_annotation and hami-scheduler's handshake mark is present, on every
    worker."""
    ctx = prepare(lab, profile, tenant, ID)
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.nodes is None:
        return ctx.nodes_missing()
    if ctx.machines:
        return _machines(ctx)
    problems: list[str] = []
    evidence: list[str] = []
    for index, worker in enumerate(ctx.workers()):
        node = ctx.node(worker)
        if node is None:
            problems.append(f"worker {worker} is not a node of {tenant} (see TC-02)")
            continue
        more, shown = _allocatable_problems(ctx, node)
        problems += more
        regs, registered = _registered_problems(ctx, node, index)
        problems += regs
        shakes, handshake = _handshake_problems(ctx, node)
        problems += shakes
        if not more and not regs and not shakes:
            tail = f"; {handshake}" if handshake else ""
            evidence.append(f"{worker} advertises {shown}; registered: {registered}{tail}")
    if problems:
        return ctx.failed(summarize_problems(problems), "; ".join(evidence))
    return ctx.passed("; ".join(evidence))
