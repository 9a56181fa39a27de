"""The pods `verify --kubeconfig` would create, derived from what was found: pure, no I/O.

HAMi: the same rule as the labs (gpulab.verify.hami.sharing_sizes, docs/checks.md "Sizing rule")
on a card chosen in the cluster: the smallest idle, healthy card whose sizes apply, on a Ready
node. Idle: no pod holds a slice of it (`hami.io/vgpu-devices-allocated`); a card in use would
make "three fit, a fourth does not" depend on someone else's pods.

KAI (when HAMi is absent): two pods asking half a GPU each (`gpu-fraction: 0.5`) on the
smallest Ready GPU node no pod uses GPUs on, which must share one GPU, and one pod asking one
whole GPU more than the largest GPU node has, which no node can hold; all in a leaf queue whose
GPU limit lets KAI answer for capacity, not for the queue.

When nothing qualifies the plan refuses, saying why, and nothing is created.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from gpulab.naming import LABEL_MANAGED, LABEL_RUN
from gpulab.verify import objects as o
from gpulab.verify.hami import SharingSizes, share_pod, sharing_sizes
from gpulab.verify.kai import kai_pod

if TYPE_CHECKING:
    from gpulab.cluster.inventory import Card, GpuNode, Inventory

__all__ = ["CHECK_LABEL", "PlannedPod", "VerifyPlan", "default_namespace", "plan"]

CHECK_LABEL = "gpulab.dev/check"
# The pods only hold a GPU slice: the pause image the labs use too (gpulab.stacks.common
# VERIFY_IMAGE). kind nodes ship it; elsewhere it is one small pull from registry.k8s.io.
VERIFY_IMAGE = "registry.k8s.io/pause:3.10"


KAI_REFUSAL = "a KAI reason"  # what the over-capacity pod is waited for


@dataclass(frozen=True)
class PlannedPod:
    """One pod: HAMi's slice (memory_mib, cores) or KAI's ask (fraction or whole gpus), what it
    is waited for (`awaited`: running, or the refusal reason), and what is expected of it."""

    name: str
    check: str
    memory_mib: int = 0
    cores: int = 0
    expect: str = ""
    awaited: str = "running"
    fraction: str = ""
    gpus: int = 0

    def ask(self) -> str:
        if self.fraction:
            return f"gpu-fraction {self.fraction}"
        if self.gpus:
            return f"{self.gpus} x nvidia.com/gpu"
        return f"{self.memory_mib} MiB {self.cores} cores"


@dataclass(frozen=True)
class VerifyPlan:
    """What verify would do in one cluster: the card, the pods, or why it refuses."""

    member: str
    namespace: str
    run_id: str
    scheduler: str = "hami"  # hami | kai
    card: Card | None = None
    sizes: SharingSizes | None = None
    node: str = ""  # kai: where the fractions go
    queue: str = ""  # kai: the leaf queue
    pods: tuple[PlannedPod, ...] = ()
    refusals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        return not self.refusals

    def objects(self) -> list[dict[str, Any]]:
        """The namespace and pods, as verify would create them (labelled with the run id)."""
        if not self.runnable:
            return []
        labels = {LABEL_MANAGED: "gpulab", LABEL_RUN: self.run_id}
        namespace = {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": self.namespace, "labels": dict(labels)}}
        pods = []
        for p in self.pods:
            mine = {**labels, CHECK_LABEL: p.check}
            if self.scheduler == "kai":
                pods.append(kai_pod(p.name, self.namespace, mine, VERIFY_IMAGE, queue=self.queue,
                                    fraction=p.fraction, gpus=p.gpus,
                                    node=self.node if p.fraction else ""))
            else:
                assert self.card is not None
                pods.append(share_pod(p.name, self.namespace, mine, VERIFY_IMAGE,
                                      memory=p.memory_mib, cores=p.cores,
                                      card_id=self.card.device_id))
        return [namespace, *pods]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["objects"] = self.objects()
        return out


def default_namespace(run_id: str) -> str:
    return f"gpulab-verify-{run_id}"


def _why_not(card: Card, ready_nodes: set[str]) -> str:
    where = f"{card.node}/{card.device_id} ({card.model}, {card.memory_mib} MiB)"
    if card.node not in ready_nodes:
        return f"{where}: node is not Ready"
    if not card.healthy:
        return f"{where}: HAMi marks it unhealthy"
    if card.split < 4:
        return (f"{where}: split {card.split}, under 4: a fourth pod would be refused for "
                f"time slicing, not cores")
    if not sharing_sizes(card, card.device_id).applicable:
        return f"{where}: {card.cores} cores admit no size where three fit and four do not"
    if not card.idle:
        return f"{where}: in use by {', '.join(card.users) or 'a pod'}"
    return ""


def plan(found: Inventory, run_id: str, namespace: str | None = None) -> VerifyPlan:
    """The verify pods for `found`, or the refusals (nothing is created when there are any)."""
    ns = namespace or default_namespace(run_id)
    base = VerifyPlan(member=found.member, namespace=ns, run_id=run_id)
    if found.error:
        return _refuse(base, f"the API server did not answer: {found.error}")
    blind = [u for u in found.unseen if u.split(":", 1)[0] in ("Node", "Pod")]
    if blind:
        return _refuse(base, f"cannot tell which GPUs are free: {'; '.join(blind)} (grant the "
                             f"read access in docs/verify-any-cluster.md, 'RBAC')")
    if not found.has_hami:
        if found.has_kai:
            return _kai_plan(found, base)
        return _refuse(base, "neither HAMi (no hami-scheduler Deployment, no vgpu.hami.io "
                             "webhook) nor KAI (no kai-scheduler) is installed: gpulab's GPU "
                             "checks need one of them")
    if not found.cards:
        return _refuse(base, "no node has cards registered by HAMi "
                             "(hami.io/node-nvidia-register): is HAMi's device plugin running?")
    ready = {n.name for n in found.gpu_nodes if n.ready}
    candidates = [c for c in found.cards if not _why_not(c, ready)]
    if not candidates:
        return _refuse(base, "no card can be used ("
                             + "; ".join(_why_not(c, ready) for c in found.cards)
                             + "): free a card, or wait for one, and run verify again")
    card = min(candidates, key=lambda c: (c.memory_mib, c.cores, c.node, c.device_id))
    sizes = sharing_sizes(card, card.device_id)
    pods = tuple(
        [PlannedPod(f"gpu-share-{i}", "GPU-03", sizes.share_memory, sizes.share_cores,
                    "Running, on the card with the others") for i in (1, 2, 3)]
        + [PlannedPod("gpu-share-4", "GPU-04", sizes.share_memory, sizes.share_cores,
                      "Pending: HAMi says CardInsufficientCore", "CardInsufficientCore"),
           PlannedPod("gpu-mem-big", "GPU-05", sizes.big_memory, sizes.big_cores,
                      "Pending: HAMi says CardInsufficientMemory", "CardInsufficientMemory")])
    notes = ("verify never touches nodes: it does not release HAMi's node lock, so each pod "
             "waits for hami-scheduler's --node-lock-timeout when the device plugin does not "
             "release it (the mock plugin never does)",) if "mock" in \
        found.hami_device_plugin.detail else ()
    return VerifyPlan(member=found.member, namespace=ns, run_id=run_id, card=card, sizes=sizes,
                      pods=pods, notes=notes)


def _gpus(node: GpuNode) -> int:
    return o.int_quantity(node.gpus) or 0


def _kai_plan(found: Inventory, base: VerifyPlan) -> VerifyPlan:
    """Two half-GPU pods that must share one GPU, one request no node can hold (module doc)."""
    base = replace(base, scheduler="kai")
    kai = found.kai_scheduler
    if not kai.serving:
        where = f"{kai.where}, {kai.ready} ready" if kai.found else "not found"
        return _refuse(base, f"KAI's scheduler is not serving ({where})")
    if found.kai_gpu_sharing != "on":
        return _refuse(base, f"KAI's GPU sharing is {found.kai_gpu_sharing} (Config kai-config "
                             f"spec.admission.gpuSharing, the chart's global.gpuSharing): "
                             f"KAI refuses fractional pods without it")
    gpu_nodes = [n for n in found.gpu_nodes if _gpus(n) > 0]
    if not gpu_nodes:
        return _refuse(base, "no node advertises nvidia.com/gpu")
    too_big = max(_gpus(n) for n in gpu_nodes) + 1
    idle = [n for n in gpu_nodes if n.ready and not n.users]
    if not idle:
        busy = "; ".join(f"{n.name}: " + ("NotReady" if not n.ready else
                                           f"in use by {', '.join(n.users)}")
                         for n in gpu_nodes)
        return _refuse(base, f"no Ready GPU node is free ({busy}): free one, or wait, and run "
                             f"verify again")
    node = min(idle, key=lambda n: (_gpus(n), n.name))
    parents = {q.parent for q in found.queues}
    fits = [q for q in found.queues if q.name not in parents
            and (q.gpu_limit == -1 or (q.gpu_limit or 0) >= too_big + 1)]
    if not fits:
        leaves = ", ".join(f"{q.name} (gpu limit {q.gpu_limit})" for q in found.queues
                           if q.name not in parents) or "none"
        return _refuse(base, f"no leaf queue can hold {too_big + 1} GPUs (leaf queues: "
                             f"{leaves}): KAI would refuse the capacity probe for the queue; "
                             f"create a queue with gpu limit -1 for verify")
    queue = min(fits, key=lambda q: q.name).name
    pods = (PlannedPod("gpu-frac-1", "GPU-12", expect=f"Running on {node.name}, sharing a GPU",
                       fraction="0.5"),
            PlannedPod("gpu-frac-2", "GPU-12", expect=f"Running on {node.name}, the same GPU",
                       fraction="0.5"),
            PlannedPod("gpu-over-capacity", "GPU-13", expect="Pending: KAI gives a capacity "
                       "reason, not a queue reason", awaited=KAI_REFUSAL, gpus=too_big))
    return VerifyPlan(member=base.member, namespace=base.namespace, run_id=base.run_id,
                      scheduler="kai", node=node.name, queue=queue, pods=pods)


def _refuse(base: VerifyPlan, *why: str) -> VerifyPlan:
    return replace(base, refusals=tuple(why))
