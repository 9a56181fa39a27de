"""What a cluster has, from a snapshot: pure, no I/O (docs/verify-any-cluster.md, "Discovery").

How each piece is recognised, and where upstream names it:

- HAMi's scheduler: a Deployment labelled `app.kubernetes.io/component=hami-scheduler`, its
  webhook: a MutatingWebhookConfiguration with a webhook `vgpu.hami.io`, its device plugin: a
  DaemonSet labelled `app.kubernetes.io/component=hami-device-plugin` (HAMi chart v2.10.0,
  templates/scheduler/deployment.yaml, webhook.yaml, device-plugin/daemonsetnvidia.yaml); a
  DaemonSet running `mock-device-plugin` is HAMi's mock plugin (Project-HAMi/mock-device-plugin);
- cards: each node's `hami.io/node-nvidia-register` (gpulab.verify.hami), in use by the pods
  HAMi placed there (`hami.io/vgpu-devices-allocated`);
- KAI: its Deployments (`kai-operator`, `kai-scheduler-*`, chart v0.16.8), Queues
  (`scheduling.run.ai/v2`), and whether GPU sharing is on: `spec.admission.gpuSharing` of the
  `kai.scheduler/v1` Config `kai-config` (chart templates/_helpers.tpl:172-195, applied by the
  chart's post-install hook, templates/kai-config.yaml);
- tenancy: Kamaji's TenantControlPlanes; vCluster control planes: workloads labelled
  `app=vcluster` (vcluster chart 0.35.3).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from gpulab.verify import objects as o
from gpulab.verify.hami import REGISTER_ANNOTATION, card_usage, parse_register

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from gpulab.cluster.state import ClusterSnapshot, JsonObj

__all__ = ["Card", "Component", "GpuNode", "Inventory", "Queue", "inventory"]

HANDSHAKE_ANNOTATION = "hami.io/node-handshake"
HAMI_WEBHOOK = "vgpu.hami.io"
_GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores")


@dataclass(frozen=True)
class Component:
    """An installed piece: where it runs, how many of its pods are ready, what else is known."""

    name: str
    found: bool = False
    where: str = ""
    ready: str = ""
    detail: str = ""

    @property
    def serving(self) -> bool:
        if not self.found:
            return False
        if not self.ready:
            return True  # a webhook configuration has no pods of its own
        have, _, want = self.ready.partition("/")
        return have.isdigit() and want.isdigit() and 0 < int(have) == int(want)


@dataclass(frozen=True)
class Card:
    """One card HAMi registered on one node, and what pods use of it."""

    node: str
    device_id: str
    model: str
    memory_mib: int
    cores: int
    split: int
    healthy: bool
    used_memory: int = 0
    used_cores: int = 0
    users: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        return not self.users and not self.used_memory and not self.used_cores


@dataclass(frozen=True)
class GpuNode:
    name: str
    ready: bool
    gpus: str  # allocatable nvidia.com/gpu (HAMi: cards x split)
    cards: int  # registered by HAMi
    handshake: str = ""
    users: tuple[str, ...] = ()  # pods on it that hold or ask for GPUs (ns/name)


@dataclass(frozen=True)
class Queue:
    """A KAI Queue: its parent, and its GPU limit (-1: none; None: not set, KAI reads 0)."""

    name: str
    parent: str = ""
    gpu_limit: float | None = None

    def text(self) -> str:
        return self.name + (f" (under {self.parent})" if self.parent else "")


@dataclass(frozen=True)
class Inventory:
    """What discovery found in one cluster."""

    member: str
    server: str
    version: str
    error: str
    hami_scheduler: Component
    hami_webhook: Component
    hami_device_plugin: Component
    kai_scheduler: Component
    kai_gpu_sharing: str  # on | off | unknown
    queues: tuple[Queue, ...]
    tenancy: tuple[str, ...]
    gpu_nodes: tuple[GpuNode, ...]
    cards: tuple[Card, ...]
    gpu_users: tuple[str, ...]
    unseen: tuple[str, ...]  # what could not be read, and why

    @property
    def has_hami(self) -> bool:
        return self.hami_scheduler.found or self.hami_webhook.found

    @property
    def has_kai(self) -> bool:
        return self.kai_scheduler.found or bool(self.queues)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _workloads(snapshot: ClusterSnapshot, kind: str) -> list[JsonObj]:
    return [w for w in snapshot.workloads or () if w.get("kind") == kind]


def _component(name: str, workloads: Iterable[Mapping[str, Any]], detail: str = "") -> Component:
    found = list(workloads)
    if not found:
        return Component(name)
    first = found[0]
    where = ", ".join(f"{w['namespace']}/{w['name']} ({w['kind']})" for w in found)
    return Component(name, True, where, f"{first['ready']}/{first['desired']}", detail)


def _image_tag(workload: Mapping[str, Any], marker: str) -> str:
    for image in workload.get("images") or ():
        if marker in image:
            return image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return ""


def _hami_scheduler(snapshot: ClusterSnapshot) -> Component:
    found = [w for w in _workloads(snapshot, "Deployment")
             if w["labels"].get("app.kubernetes.io/component") == "hami-scheduler"]
    detail = ""
    if found:
        tag = _image_tag(found[0], "hami")
        lock = next((a for a in found[0].get("args") or () if "node-lock-timeout" in a), "")
        detail = ", ".join(x for x in (f"HAMi {tag}" if tag else "", lock or
                                       "--node-lock-timeout default (5m, cmd/scheduler/main.go:79)")
                           if x)
    return _component("HAMi scheduler", found, detail)


def _hami_webhook(snapshot: ClusterSnapshot) -> Component:
    for config in snapshot.webhooks or ():
        for hook in config.get("webhooks") or ():
            if hook.get("name") == HAMI_WEBHOOK:
                service = hook.get("service") or {}
                to = f"service {service.get('namespace', '')}/{service.get('name', '')}"
                return Component("HAMi webhook", True, f"{config['name']} ({to})", "",
                                 f"failurePolicy {hook.get('failurePolicy') or 'Fail'}")
    return Component("HAMi webhook")


def _device_plugin(snapshot: ClusterSnapshot) -> Component:
    daemonsets = _workloads(snapshot, "DaemonSet")
    mock = [d for d in daemonsets if any("mock-device-plugin" in i for i in d.get("images") or ())]
    if mock:
        return _component("HAMi device plugin", mock, "mock (simulated cards)")
    real = [d for d in daemonsets
            if d["labels"].get("app.kubernetes.io/component") == "hami-device-plugin"]
    return _component("HAMi device plugin", real, "real (NVIDIA driver)" if real else "")


def _queue(obj: Mapping[str, Any]) -> Queue:
    spec = obj.get("spec") or {}
    limit = ((spec.get("resources") or {}).get("gpu") or {}).get("limit")
    return Queue(str(obj.get("name", "")), str(spec.get("parentQueue") or ""),
                 float(limit) if isinstance(limit, (int, float)) else None)


def _kai(snapshot: ClusterSnapshot) -> tuple[Component, str, tuple[Queue, ...]]:
    deployments = [w for w in _workloads(snapshot, "Deployment")
                   if w["name"] == "kai-operator" or w["name"].startswith("kai-scheduler")]
    scheduler = [w for w in deployments if w["name"].startswith("kai-scheduler")] or deployments
    component = _component("KAI scheduler", scheduler)
    config = snapshot.kai_config
    if config is None:
        sharing = "unknown"
    else:
        sharing = "on" if (config.get("admission") or {}).get("gpuSharing") else "off"
    return component, sharing, tuple(_queue(q) for q in snapshot.queues or ())


def _tenancy(snapshot: ClusterSnapshot) -> tuple[str, ...]:
    out: list[str] = []
    tcps = snapshot.tenant_control_planes or ()
    if tcps:
        out.append(f"Kamaji: {len(tcps)} TenantControlPlane(s) "
                   f"({', '.join(t['namespace'] + '/' + t['name'] for t in tcps)})")
    vclusters = [w for w in snapshot.workloads or () if w["labels"].get("app") == "vcluster"]
    if vclusters:
        out.append(f"vCluster: {len(vclusters)} control plane(s) "
                   f"({', '.join(w['namespace'] + '/' + w['name'] for w in vclusters)})")
    return tuple(out)


def _uses_gpu(pod: Mapping[str, Any]) -> bool:
    if o.pod_phase(pod) in ("Succeeded", "Failed"):
        return False
    if any(k in o.annots(pod) for k in ("gpu-fraction", "gpu-memory")):
        return True
    for container in (pod.get("spec") or {}).get("containers") or ():
        resources = container.get("resources") or {}
        asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        if any(key in asked for key in _GPU_RESOURCES):
            return True
    return False


def _gpu_nodes(snapshot: ClusterSnapshot) -> tuple[GpuNode, ...]:
    users: dict[str, list[str]] = {}
    for pod in snapshot.pods or ():
        if _uses_gpu(pod) and o.pod_node(pod):
            users.setdefault(o.pod_node(pod), []).append(
                f"{o.metadata(pod).get('namespace', '')}/{o.name(pod)}")
    out = []
    for node in snapshot.nodes or ():
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        registered = parse_register(o.annots(node).get(REGISTER_ANNOTATION))
        gpus = str(allocatable.get("nvidia.com/gpu", "0"))
        if gpus in ("", "0") and not registered:
            continue
        out.append(GpuNode(o.name(node), o.node_ready(node)[0], gpus, len(registered),
                           o.annots(node).get(HANDSHAKE_ANNOTATION, ""),
                           tuple(sorted(users.get(o.name(node), ())))))
    return tuple(sorted(out, key=lambda n: n.name))


def _cards(snapshot: ClusterSnapshot) -> tuple[Card, ...]:
    nodes = [dict(n) for n in snapshot.nodes or ()]
    pods = [dict(p) for p in snapshot.pods or ()]
    health = {(o.name(n), str(d.get("id"))): bool(d.get("health", True))
              for n in nodes for d in parse_register(o.annots(n).get(REGISTER_ANNOTATION))}
    return tuple(Card(node=c.node, device_id=c.device_id, model=c.model,
                      memory_mib=c.memory_mib, cores=c.cores, split=c.slots,
                      healthy=health.get((c.node, c.device_id), True),
                      used_memory=c.used_memory, used_cores=c.used_cores, users=tuple(c.pods))
                 for c in card_usage(nodes, pods))


def inventory(snapshot: ClusterSnapshot) -> Inventory:
    """Discovery over one snapshot (see the module docstring for the rules)."""
    kai, sharing, queues = _kai(snapshot)
    return Inventory(
        member=snapshot.name,
        server=snapshot.server,
        version=snapshot.version,
        error=snapshot.error,
        hami_scheduler=_hami_scheduler(snapshot),
        hami_webhook=_hami_webhook(snapshot),
        hami_device_plugin=_device_plugin(snapshot),
        kai_scheduler=kai,
        kai_gpu_sharing=sharing,
        queues=queues,
        tenancy=_tenancy(snapshot),
        gpu_nodes=_gpu_nodes(snapshot),
        cards=_cards(snapshot),
        gpu_users=tuple(sorted(f"{o.metadata(p).get('namespace', '')}/{o.name(p)}"
                               for p in snapshot.pods or () if _uses_gpu(p))),
        unseen=tuple(f"{what}: {why}" for what, why in sorted(snapshot.read_errors.items())),
    )
