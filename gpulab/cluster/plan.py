"""The pods `verify --kubeconfig` would create, derived from what was found: pure, no I/O.

HAMi: the same rule as the labs (gpulab.verify.hami.sharing_sizes, docs/checks.md "Sizing rule")
on a card chosen in the cluster: the smallest idle card HAMi would offer whose sizes apply, on a
node kube-scheduler would place the pods on. Idle: no pod holds a slice of it (as HAMi counts
them); a card in use would make "three fit, a fourth does not" depend on someone else's pods.
The pods ask with the resource names HAMi is configured with, and its webhook must hand them to
its own `--scheduler-name`.

KAI (when HAMi is absent): two pods asking half a GPU each (`gpu-fraction: 0.5`) on the
smallest GPU node KAI's default shard sees, ready for KAI, that no pod uses GPUs on, which must
share one GPU, and one pod asking one whole GPU more than the largest GPU node has, which no node
can hold; all in a leaf queue whose GPU limit, and every ancestor's, lets KAI answer for
capacity, not for the queue.

Each rule that decides is in gpulab.cluster.rules (or the module it names), with its upstream
source; when nothing qualifies the plan refuses, saying why, and nothing is created. A refusal
rests only on facts that are known: when a fact the plan needs could not be read, it says
"cannot plan, because <Kind> could not be read (<why>)" instead (Inventory.unknown).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpulab.cluster.hami_config import NAMESPACE_NAME_LABEL, PodShape, pod_shape
from gpulab.cluster.inventory import WHOLE_GPU, http_status
from gpulab.cluster.observe import UNANSWERED
from gpulab.naming import LABEL_MANAGED, LABEL_RUN
from gpulab.verify.hami import (
    DEFAULT_RESOURCES,
    MIG_MODE,
    HamiResources,
    SharingSizes,
    share_pod,
    sharing_sizes,
)
from gpulab.verify.kai import QUEUE_LABEL, kai_pod

if TYPE_CHECKING:
    from gpulab.cluster.inventory import Card, GpuNode, Inventory, Queue

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
    scheduler_name: str = "hami-scheduler"  # the schedulerName the pods must come back with
    resources: HamiResources = DEFAULT_RESOURCES  # hami: the names the pods ask with
    hostname: str = ""  # kai: the node's kubernetes.io/hostname label, which the pods select
    queue_label: str = QUEUE_LABEL  # kai: the label naming the queue
    pods: tuple[PlannedPod, ...] = ()
    # hami: the labels, annotations and schedulerName HAMi as configured needs
    shape: PodShape = field(default_factory=PodShape)
    tolerations: tuple[dict[str, str], ...] = ()  # the GPU nodes' GPU taints (gpulab.taints)
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
                     "metadata": {"name": self.namespace,
                                  "labels": {**self.shape.namespace_labels, **labels}}}
        pods = []
        for p in self.pods:
            mine = {**self.shape.pod_labels, **labels, CHECK_LABEL: p.check}
            if self.scheduler == "kai":
                pods.append(kai_pod(p.name, self.namespace, mine, VERIFY_IMAGE, queue=self.queue,
                                    fraction=p.fraction, gpus=p.gpus,
                                    node=self.hostname if p.fraction else "",
                                    scheduler_name=self.scheduler_name,
                                    queue_label=self.queue_label))
            else:
                assert self.card is not None
                pods.append(share_pod(p.name, self.namespace, mine, VERIFY_IMAGE,
                                      memory=p.memory_mib, cores=p.cores,
                                      card_id=self.card.device_id, resources=self.resources,
                                      annotations=self.shape.pod_annotations,
                                      scheduler_name=self.shape.scheduler_name))
        for pod in pods:
            if self.tolerations:
                pod["spec"]["tolerations"] = [dict(t) for t in self.tolerations]
            _restricted(pod["spec"])
        return [namespace, *pods]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["objects"] = self.objects()
        return out


# Pod Security's restricted standard (kubernetes/pod-security-admission v0.36.2 policy/
# check_allowPrivilegeEscalation.go, check_capabilities_restricted.go, check_runAsNonRoot.go,
# check_seccompProfile_restricted.go; gpulab.pod_security): clusters that enforce it by default
# (Rancher's rancher-restricted, RKE2's CIS profile) refuse pods without these. The pause
# process needs no privilege: it runs as 65535 (nobody), named so no image USER is assumed.
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 65535, "runAsGroup": 65535,
                  "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _restricted(spec: dict[str, Any]) -> None:
    """Make a verify pod pass Pod Security's restricted level, whatever the namespace's."""
    spec["securityContext"] = {**RESTRICTED_POD, "seccompProfile": {"type": "RuntimeDefault"}}
    for container in spec.get("containers") or ():
        container["securityContext"] = {**RESTRICTED_CONTAINER, "capabilities": {"drop": ["ALL"]}}


def default_namespace(run_id: str) -> str:
    return f"gpulab-verify-{run_id}"


def _card_where(card: Card) -> str:
    return f"{card.node}/{card.device_id} ({card.model}, {card.memory_mib} MiB)"


def _why_not(card: Card, nodes: dict[str, GpuNode]) -> str:
    """Why verify cannot use `card` ('' when it can): the node first (HAMi must offer its cards,
    kube-scheduler must place pods there), then the card in HAMi's Fit order
    (pkg/device/nvidia/device.go:727-739: health, then device-cordon), then verify's own needs.
    A card HAMi counts nothing on is idle: pods it did not assign (no `hami.io/vgpu-node`) or that
    are Failed/Succeeded hold no slice (gpulab.verify.hami.hami_usage)."""
    where = _card_where(card)
    node = nodes.get(card.node)
    if node is None or not node.ready:
        return f"{where}: node is not Ready"
    if node.hami_unseen:
        return f"{where}: {node.hami_unseen}"
    if node.other_advertiser:
        return f"{where}: {node.other_advertiser}"
    if node.blockers:
        return f"{where}: kube-scheduler will not place a pod there ({'; '.join(node.blockers)})"
    if not card.healthy:
        return (f"{where}: HAMi marks it unhealthy (registered without health: true; "
                f"pkg/device/devices.go:138, device.go:730-734)")
    if card.cordoned:
        return f"{where}: cordoned by the node's hami.io/device-cordon (device.go:735-739)"
    if card.mode == MIG_MODE:
        return (f"{where}: registered in MIG mode, HAMi gives MIG profiles, not memory and core "
                f"slices (device.go:602-619, 645-659): sharing by slices cannot be checked on it")
    if card.split < 4:
        return (f"{where}: split {card.split}, under 4: a fourth pod would be refused for "
                f"time slicing, not cores")
    if not sharing_sizes(card, card.device_id).applicable:
        return f"{where}: {card.cores} cores admit no size where three fit and four do not"
    if not card.idle:
        return f"{where}: in use by {', '.join(card.users or ()) or 'a pod'}"
    return ""


def _mig_notes(found: Inventory) -> tuple[str, ...]:
    """MIG nodes (mixed strategy) hold GPUs, and their pods use them, but neither HAMi's slices
    nor KAI's fractions are checked there: say so."""
    return tuple(
        f"{n.name} advertises MIG devices ({', '.join(n.mig)}): its GPUs are partitioned by MIG "
        f"(the device plugin's mixed strategy), not shared by "
        f"{'HAMi slices' if found.has_hami else 'KAI fractions'}; verify does not check there"
        + (f" (in use by {', '.join(n.users)})" if n.users else "")
        for n in found.gpu_nodes or () if n.mig)


def _cannot_plan(found: Inventory, *facts: str) -> str:
    """'cannot plan, because Pod could not be read (403 Forbidden: grant ...)' when one of the
    `facts` the plan needs is unknown ('' when all are known)."""
    why = dict.fromkeys(found.unknown[f].removeprefix("unknown: ") for f in facts
                        if f in found.unknown)
    return f"cannot plan, because {'; '.join(why)}" if why else ""


def plan(found: Inventory, run_id: str, namespace: str | None = None) -> VerifyPlan:
    """The verify pods for `found`, or the refusals (nothing is created when there are any)."""
    ns = namespace or default_namespace(run_id)
    base = VerifyPlan(member=found.member, namespace=ns, run_id=run_id,
                      tolerations=found.gpu_tolerations)
    if found.error:
        said = "could not be read" if http_status(found.error) else "did not answer"
        return _refuse(base, f"the API server {said}: {found.error}")
    if not found.has_hami and found.has_kai:  # a KAI cluster: its checks, whatever follows
        base = _kai_base(found, base)
    late = [u for u in found.unseen if UNANSWERED in u]
    if late:  # what was not read is unknown, not absent
        return _refuse(base, f"discovery did not finish: {'; '.join(late)} (--discovery-timeout "
                             f"and --request-timeout give it more time)")
    if blind := _cannot_plan(found, "GPU nodes", "GPU users"):
        return _refuse(base, f"{blind}: which GPUs are free would be a guess")
    if blind := _cannot_plan(found, "HAMi scheduler"):
        return _refuse(base, f"{blind}: whether HAMi's or KAI's scheduler is installed is not "
                             f"known")
    if not found.has_hami:
        if found.has_kai:
            return _kai_plan(found, base)
        if blind := _cannot_plan(found, "KAI scheduler", "queues"):
            return _refuse(base, f"{blind}: whether KAI is installed is not known")
        webhook = ("" if found.hami_webhook.unknown else ", no vgpu.hami.io webhook")
        return _refuse(base, f"neither HAMi (no hami-scheduler Deployment{webhook}) nor KAI (no "
                             f"kai-scheduler) is installed: gpulab's GPU checks need one of them")
    scheduler = found.hami_scheduler
    if not scheduler.serving:
        state = f"{scheduler.where}, {scheduler.ready} ready" if scheduler.found else "not found"
        return _refuse(base, f"HAMi's scheduler is not serving ({state}): nothing would place "
                             f"verify's pods")
    if not found.hami_scheduler_name:
        return _refuse(base, "hami-scheduler runs without --scheduler-name: its webhook then "
                             "leaves GPU pods to the default scheduler (pkg/scheduler/webhook.go:"
                             "107-108), so HAMi would not place verify's pods")
    names = found.hami_resources
    if not (names.count and names.memory and names.cores):
        return _refuse(base, f"HAMi's device config ({found.hami_resources_from}) names no "
                             f"count, memory or core resource (resourceCountName "
                             f"{names.count!r}, resourceMemoryName {names.memory!r}, "
                             f"resourceCoreName {names.cores!r}): verify cannot ask for a slice")
    if not found.cards:
        return _refuse(base, "no node has cards registered by HAMi "
                             "(hami.io/node-nvidia-register): is HAMi's device plugin running?",
                       notes=_mig_notes(found))
    labels = {LABEL_MANAGED: "gpulab", LABEL_RUN: run_id}
    shape = pod_shape(
        gpu_policy=found.hami_gpu_policy, force_overwrite=found.hami_force_overwrite,
        scheduler_name=found.hami_scheduler_name, webhook=found.hami_webhook_name,
        namespace_selector=found.hami_namespace_selector,
        object_selector=found.hami_object_selector,
        namespace_labels={**labels, NAMESPACE_NAME_LABEL: ns},
        pod_labels=[{**labels, CHECK_LABEL: c} for c in ("GPU-03", "GPU-04", "GPU-05")])
    if shape.refusal:
        return _refuse(base, shape.refusal)
    nodes = {n.name: n for n in found.gpu_nodes or ()}
    candidates = [c for c in found.cards if not _why_not(c, nodes)]
    if not candidates:
        return _refuse(base, "no card can be used ("
                             + "; ".join(_why_not(c, nodes) for c in found.cards)
                             + "): free a card, or wait for one, and run verify again",
                       notes=_mig_notes(found))
    card = min(candidates, key=lambda c: (c.memory_mib, c.cores, c.node, c.device_id))
    sizes = sharing_sizes(card, card.device_id)
    pods = tuple(
        [PlannedPod(f"gpu-share-{i}", "GPU-03", sizes.share_memory, sizes.share_cores,
                    "Running, on the card with the others") for i in (1, 2, 3)]
        + [PlannedPod("gpu-share-4", "GPU-04", sizes.share_memory, sizes.share_cores,
                      "Pending: HAMi says CardInsufficientCore", "CardInsufficientCore"),
           PlannedPod("gpu-mem-big", "GPU-05", sizes.big_memory, sizes.big_cores,
                      "Pending: HAMi says CardInsufficientMemory", "CardInsufficientMemory")])
    notes: tuple[str, ...] = (
        "verify never touches nodes: it does not release HAMi's node lock, so each pod waits "
        "for hami-scheduler's --node-lock-timeout when the device plugin does not release it "
        "(the mock plugin never does)",) if "mock" in found.hami_device_plugin.detail else ()
    for fact, then in (("HAMi device plugin", "if it is HAMi's mock, which never releases the "
                        "node lock, each pod waits for hami-scheduler's --node-lock-timeout"),
                       ("HAMi device config", "the pods ask with the chart's resource names"),
                       ("HAMi webhook", "GPU-02 shows whether it handles verify's pods")):
        if fact in found.unknown:
            notes += (f"{fact} is {found.unknown[fact]}: {then}",)
    return VerifyPlan(member=found.member, namespace=ns, run_id=run_id, card=card, sizes=sizes,
                      pods=pods, shape=shape, tolerations=found.gpu_tolerations,
                      notes=shape.notes + notes + _advertiser_notes(found, card)
                      + _taint_notes(found) + _mig_notes(found),
                      scheduler_name=found.hami_scheduler_name, resources=names)


def _gpus(node: GpuNode) -> int:
    """Whole GPUs a node advertises (`nvidia.com/gpu`, what KAI counts)."""
    if node.resource != WHOLE_GPU:
        return 0
    try:
        return int(node.gpus)
    except ValueError:
        return 0


def _kai_node_refusal(node: GpuNode, pool_label: str) -> str:
    """Why KAI's default shard would not put the fractions on `node` ('' when it would)."""
    if node.pooled:  # the default shard selects `DoesNotExist`: an empty value is no default
        shown = node.pool or '"" (empty, a pool no shard selects)'
        return (f"in node pool {shown} ({pool_label}): the default shard sees only nodes "
                f"without that label (pkg/scheduler/conf/scheduler_conf.go:99-116)")
    if node.kai_unready:
        return (f"not ready for KAI: {', '.join(node.kai_unready)} "
                f"(pkg/scheduler/scheduler_util/scheduler_utils.go:12-40)")
    if node.blockers:
        return f"KAI's predicates will not place a pod there ({'; '.join(node.blockers)})"
    if not node.hostname:
        return "has no kubernetes.io/hostname label to pin the fractions with"
    if node.users:
        return f"in use by {', '.join(node.users)}"
    return ""


def _queue_refusal(queue: Queue, queues: dict[str, Queue], need: float) -> str:
    """Why KAI would refuse `need` GPUs in `queue` for the queue itself ('' when it would not):
    resultsOverLimit walks the queue and each parent (KAI v0.16.8
    pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go:16-66): a limit of -1
    is unlimited (pkg/common/constants/constants.go:14), any other must hold what the queue has
    allocated plus the request. A limit that is not set is 0, never unlimited: `Limit float64
    json:"limit"` has no default (pkg/apis/scheduling/v2/resources.go:17-24, nor has the CRD), a
    Queue without `resources` gets all zeros (pkg/scheduler/api/queue_info/queue_info.go:82-91),
    and the proportion plugin takes the limit as is (proportion.go:344-347)."""
    current: Queue | None = queue
    while current is not None:
        limit = current.gpu_limit if current.gpu_limit is not None else 0.0
        if limit != -1 and limit < current.allocated + need:
            what = "its" if current is queue else f"its ancestor {current.name}'s"
            shown = "not set (KAI reads 0)" if current.gpu_limit is None else f"{limit:g}"
            stale = (f" (its status.allocated says {current.reported:g})"
                     if current.reported != current.allocated else "")
            return (f"{what} gpu limit {shown} < {current.allocated:g} allocated{stale} + "
                    f"{need:g} asked")
        current = queues.get(current.parent) if current.parent else None
    return ""


def _kai_queues(found: Inventory) -> dict[str, Queue]:
    """The queues KAI's default shard schedules with: those without the node-pool label
    (kubernetes_lister.go:133-135); with --full-hierarchy-fairness=false only those with a
    parent, under KAI's own unlimited `default` (pkg/scheduler/cache/cluster_info/queue.go:
    22-75); a queue whose parent is missing is dropped with its children (queue.go:105-115)."""
    seen = {q.name: q for q in found.queues or () if not q.pooled}
    if not found.kai_full_hierarchy:
        seen = {n: replace(q, parent="") for n, q in seen.items() if q.parent}
    kept: dict[str, Queue] = {}
    for name, queue in seen.items():
        chain, current, ok = {name}, queue, True
        while current.parent:
            parent = seen.get(current.parent)
            if parent is None or parent.name in chain:
                ok = False
                break
            chain.add(parent.name)
            current = parent
        if ok:
            kept[name] = queue
    return kept


def _kai_base(found: Inventory, base: VerifyPlan) -> VerifyPlan:
    return replace(base, scheduler="kai", scheduler_name=found.kai_scheduler_name,
                   queue_label=found.kai_queue_label)


def _kai_plan(found: Inventory, base: VerifyPlan) -> VerifyPlan:
    """Two half-GPU pods that must share one GPU, one request no node can hold (module doc)."""
    base = _kai_base(found, base)
    kai = found.kai_scheduler
    if blind := _cannot_plan(found, "KAI scheduler", "KAI GPU sharing", "queues"):
        return _refuse(base, blind)
    if not kai.serving:
        where = (f"{kai.where}, {kai.ready} ready" if kai.found else
                 f"no Deployment {found.kai_scheduler_name}-<shard> for the default shard; "
                 f"kai-operator is not a scheduler")
        return _refuse(base, f"KAI's scheduler is not serving ({where})")
    if found.kai_gpu_sharing != "on":
        where = ("" if found.kai_config_found else
                 "no Config kai-config, which the chart's post-install hook creates, to set ")
        return _refuse(base, f"KAI's GPU sharing is {found.kai_gpu_sharing} ({where}Config "
                             f"kai-config spec.admission.gpuSharing, the chart's "
                             f"global.gpuSharing): KAI refuses fractional pods without it")
    gpu_nodes = [n for n in found.gpu_nodes or () if _gpus(n) > 0]
    if not gpu_nodes:
        return _refuse(base, "no node advertises nvidia.com/gpu", notes=_mig_notes(found))
    too_big = max(_gpus(n) for n in gpu_nodes) + 1
    why = {n.name: _kai_node_refusal(n, found.kai_node_pool_label) for n in gpu_nodes}
    idle = [n for n in gpu_nodes if not why[n.name]]
    if not idle:
        busy = "; ".join(f"{n.name}: {why[n.name]}" for n in gpu_nodes)
        return _refuse(base, f"no GPU node can take the fractions ({busy}): free one, or "
                             f"wait, and run verify again", notes=_mig_notes(found))
    node = min(idle, key=lambda n: (_gpus(n), n.name))
    queues = _kai_queues(found)
    parents = {q.parent for q in queues.values()}
    need = 1.0 + too_big  # both halves stay allocated when the capacity probe is asked
    leaves = sorted((q for q in queues.values() if q.name not in parents), key=lambda q: q.name)
    fits = [q for q in leaves if not _queue_refusal(q, queues, need)]
    if not fits:
        shown = "; ".join(f"{q.name}: {_queue_refusal(q, queues, need)}" for q in leaves) \
            or "none in the default shard"
        return _refuse(base, f"no leaf queue can hold {need:g} GPUs ({shown}): KAI would refuse "
                             f"the capacity probe for the queue; create a queue (and parents) "
                             f"with gpu limit -1 for verify")
    queue = fits[0].name
    pods = (PlannedPod("gpu-frac-1", "GPU-12", expect=f"Running on {node.name}, sharing a GPU",
                       fraction="0.5"),
            PlannedPod("gpu-frac-2", "GPU-12", expect=f"Running on {node.name}, the same GPU",
                       fraction="0.5"),
            PlannedPod("gpu-over-capacity", "GPU-13", expect="Pending: KAI gives a capacity "
                       "reason, not a queue reason", awaited=KAI_REFUSAL, gpus=too_big))
    chain, current = [], queues.get(queue)
    while current is not None and current not in chain:
        chain.append(current)
        current = queues.get(current.parent) if current.parent else None
    stale = tuple(
        f"queue {q.name}: its pods hold {q.allocated:g} GPUs, its status.allocated says "
        f"{q.reported:g}; verify counts the pods as KAI's scheduler does (pkg/scheduler/plugins/"
        f"proportion/proportion.go:359-401): status is the queue controller's, stale while it is "
        f"down" for q in chain if q.reported != q.allocated)
    return replace(base, node=node.name, hostname=node.hostname, queue=queue, pods=pods,
                   notes=stale + _taint_notes(found) + _mig_notes(found))


def _advertiser_notes(found: Inventory, card: Card) -> tuple[str, ...]:
    """NVIDIA's device plugin beside HAMi's, both advertising the same resource: the chosen
    node's capacity is HAMi's now, but the kubelet keeps whichever registers last."""
    if not found.other_device_plugins or found.hami_resources.count != WHOLE_GPU:
        return ()
    return (f"NVIDIA's device plugin ({', '.join(found.other_device_plugins)}) runs beside HAMi's "
            f"and both advertise {WHOLE_GPU}: on {card.node} the capacity is HAMi's now, but the "
            f"kubelet keeps the plugin that registers last (pkg/kubelet/cm/devicemanager/"
            f"manager.go, PluginConnected); keep one of them per node",)


def _taint_notes(found: Inventory) -> tuple[str, ...]:
    """Say which GPU taints verify's pods tolerate, and why it adds the tolerations itself."""
    tainted = [f"{n.name} ({', '.join(n.gpu_taints)})" for n in found.gpu_nodes or ()
               if n.gpu_taints]
    if not tainted:
        return ()
    return (f"GPU nodes are tainted for their GPU resource: {'; '.join(tainted)}; verify's pods "
            f"tolerate these taints as Kubernetes' ExtendedResourceToleration would "
            f"(plugin/pkg/admission/extendedresourcetoleration/admission.go:54-97), and carry "
            f"the tolerations themselves: whether this API server runs that plugin is unknown "
            f"(no API shows its admission plugins)",)


def _refuse(base: VerifyPlan, *why: str, notes: tuple[str, ...] = ()) -> VerifyPlan:
    return replace(base, refusals=tuple(why), notes=notes)
