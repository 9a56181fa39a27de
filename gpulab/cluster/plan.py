"""The pods `verify --kubeconfig` would create, derived from the cards found: pure, no I/O.

The same rule as the labs (gpulab.verify.hami.sharing_sizes, docs/checks.md "Sizing rule") on a
card chosen in the cluster: the smallest idle, healthy card whose sizes apply, on a Ready node.
Idle: no pod holds a slice of it (`hami.io/vgpu-devices-allocated`); a card in use would make
"three fit, a fourth does not" depend on someone else's pods. When no card qualifies the plan
refuses, saying why for each card, and nothing is created.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from gpulab.naming import LABEL_MANAGED, LABEL_RUN
from gpulab.verify.hami import SharingSizes, share_pod, sharing_sizes

if TYPE_CHECKING:
    from gpulab.cluster.inventory import Card, Inventory

__all__ = ["CHECK_LABEL", "PlannedPod", "VerifyPlan", "default_namespace", "plan"]

CHECK_LABEL = "gpulab.dev/check"
# The pods only hold a GPU slice: the pause image the labs use too (gpulab.stacks.common
# VERIFY_IMAGE). kind nodes ship it; elsewhere it is one small pull from registry.k8s.io.
VERIFY_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class PlannedPod:
    name: str
    check: str
    memory_mib: int
    cores: int
    expect: str


@dataclass(frozen=True)
class VerifyPlan:
    """What verify would do in one cluster: the card, the pods, or why it refuses."""

    member: str
    namespace: str
    run_id: str
    card: Card | None = None
    sizes: SharingSizes | None = None
    pods: tuple[PlannedPod, ...] = ()
    refusals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        return not self.refusals

    def objects(self) -> list[dict[str, Any]]:
        """The namespace and pods, as verify would create them (labelled with the run id)."""
        if self.card is None:
            return []
        labels = {LABEL_MANAGED: "gpulab", LABEL_RUN: self.run_id}
        namespace = {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": self.namespace, "labels": dict(labels)}}
        return [namespace, *(share_pod(p.name, self.namespace, {**labels, CHECK_LABEL: p.check},
                                       VERIFY_IMAGE, memory=p.memory_mib, cores=p.cores,
                                       card_id=self.card.device_id) for p in self.pods)]

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
    if not found.has_hami:
        why = ("KAI was found; verify's checks for KAI clusters are not built yet "
               "(docs/verify-any-cluster.md, 'Limits')" if found.has_kai else
               "gpulab's GPU checks need HAMi")
        return _refuse(base, f"HAMi is not installed (no hami-scheduler Deployment, no "
                             f"vgpu.hami.io webhook): {why}")
    blind = [u for u in found.unseen if u.split(":", 1)[0] in ("Node", "Pod")]
    if blind:
        return _refuse(base, f"cannot tell which cards are free: {'; '.join(blind)} (grant the "
                             f"read access in docs/verify-any-cluster.md, 'RBAC')")
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
                      "Pending: HAMi says CardInsufficientCore"),
           PlannedPod("gpu-mem-big", "GPU-05", sizes.big_memory, sizes.big_cores,
                      "Pending: HAMi says CardInsufficientMemory")])
    notes = ("verify never touches nodes: it does not release HAMi's node lock, so each pod "
             "waits for hami-scheduler's --node-lock-timeout when the device plugin does not "
             "release it (the mock plugin never does)",) if "mock" in \
        found.hami_device_plugin.detail else ()
    return VerifyPlan(member=found.member, namespace=ns, run_id=run_id, card=card, sizes=sizes,
                      pods=pods, notes=notes)


def _refuse(base: VerifyPlan, *why: str) -> VerifyPlan:
    return VerifyPlan(member=base.member, namespace=base.namespace, run_id=base.run_id,
                      refusals=tuple(why))
