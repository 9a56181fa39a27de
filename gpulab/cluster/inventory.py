"""What a cluster has, from a snapshot: pure, no I/O (docs/verify-any-cluster.md, "Discovery").

How each piece is recognised, and where upstream names it:

- HAMi's scheduler: a Deployment labelled `app.kubernetes.io/component=hami-scheduler`, its
  webhook: a MutatingWebhookConfiguration with a webhook `vgpu.hami.io`, its device plugin: a
  DaemonSet labelled `app.kubernetes.io/component=hami-device-plugin` (HAMi chart v2.10.0,
  templates/scheduler/deployment.yaml, webhook.yaml, device-plugin/daemonsetnvidia.yaml); a
  DaemonSet running `mock-device-plugin` is HAMi's mock plugin (Project-HAMi/mock-device-plugin);
  the scheduler's own settings come from its command line (`--scheduler-name`, the name its
  webhook writes into pods, pkg/scheduler/webhook.go:64-113; `--node-label-selector`) and the
  resource names it counts from its device config (gpulab.cluster.rules);
- cards: each node's `hami.io/node-nvidia-register` as HAMi decodes it (gpulab.verify.hami), in
  use by the pods HAMi assigned there (`hami.io/vgpu-node`, `hami.io/vgpu-devices-allocated`);
- KAI: its scheduler is the Deployment `<schedulerName>-<shard>` the operator makes for each
  SchedulingShard (pkg/operator/operands/scheduler/resources_for_shard.go:374-376, args :336-344),
  `schedulerName` from the Config `kai-config` `spec.global` (pkg/apis/kai/v1/global.go:67-74,
  default `kai-scheduler`, :120-122); verify uses the default shard (partition label value "",
  chart templates/default-shard.yaml), which sees only the nodes and queues without the node-pool
  label (pkg/scheduler/conf/scheduler_conf.go:99-116,
  pkg/scheduler/cache/cluster_info/data_lister/kubernetes_lister.go:127-135); `kai-operator` is
  not a scheduler; Queues (`scheduling.run.ai/v2`), and whether GPU sharing is on:
  `spec.admission.gpuSharing` of the Config (chart templates/_helpers.tpl:172-195, applied by the
  chart's post-install hook, templates/kai-config.yaml);
- tenancy: Kamaji's TenantControlPlanes; vCluster control planes: workloads labelled
  `app=vcluster` (vcluster chart 0.35.3).

Each fact is found, absent, or unknown: a fact read from a kind discovery could not read is
never "none" or "not found" but `unknown` and why (`why_unread`: a refusal, 403, with the grant
it needs; another failure with its status; a read the API server did not answer). A kind the
API server does not serve (404: its group is not there) was read: what it would hold is absent.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gpulab.cluster import rules
from gpulab.cluster.accounting import (
    other_advertiser,
    other_device_plugins,
    queue_usage,
)
from gpulab.cluster.accounting import quantity as _quantity
from gpulab.cluster.hami_config import DEFAULT_GPU_POLICY, go_bool
from gpulab.cluster.observe import UNANSWERED
from gpulab.taints import gpu_taints, taint_text, tolerations_for
from gpulab.verify import objects as o
from gpulab.verify.hami import (
    CORDON_ANNOTATION,
    DEFAULT_RESOURCES,
    REGISTER_ANNOTATION,
    HamiResources,
    decode_register,
    hami_usage,
)
from gpulab.verify.kai import KAI_SCHEDULER, QUEUE_LABEL

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from gpulab.cluster.state import ClusterSnapshot, JsonObj

__all__ = ["Card", "Component", "GpuNode", "Inventory", "Queue", "http_status", "inventory",
           "why_unread"]

HANDSHAKE_ANNOTATION = "hami.io/node-handshake"
HAMI_WEBHOOK = "vgpu.hami.io"
WHOLE_GPU = "nvidia.com/gpu"  # what KAI and NVIDIA's device plugin count (KAI constants.go:10)
KAI_NODE_POOL_LABEL = "kai.scheduler/node-pool"  # KAI constants.go:26 (DefaultNodePoolLabelKey)
# KAI's own annotations for a share of one GPU: a fraction, or memory (docs/gpu-sharing).
KAI_SHARE_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")
# What each read needs granted: the ClusterRoles in docs/verify-any-cluster.md ("RBAC").
GRANTS = {
    "Node": "list on nodes", "Pod": "list on pods", "Deployment": "list on deployments.apps",
    "DaemonSet": "list on daemonsets.apps", "StatefulSet": "list on statefulsets.apps",
    "MutatingWebhookConfiguration":
        "list on mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "Queue": "list on queues.scheduling.run.ai", "Config": "get on configs.kai.scheduler",
    "TenantControlPlane": "list on tenantcontrolplanes.kamaji.clastix.io",
    "ConfigMap": "get on configmaps", "Event": "list on events",
}
# "<verb> <what> at <server>: <status> <reason>": the gateway's error (gpulab.adapters.kube)
_HTTP_STATUS = re.compile(r" at \S+: (\d{3})(?=[ (]|$)")


def http_status(error: str) -> int:
    """The HTTP status a failed call was answered with (0: none, it was not answered)."""
    status = _HTTP_STATUS.search(error)
    return int(status.group(1)) if status is not None else 0


def why_unread(kind: str, error: str, grant: str = "") -> str:
    """What to say of a fact read from `kind` when that read failed with `error`: "unknown,
    because the API server did not answer ..." (a deadline), "unknown: Pod could not be read (403
    Forbidden: grant list on pods, ...)" (a refusal: only then is RBAC named, `grant` or what
    discovery's read of `kind` needs), "unknown: Pod could not be read (500 Internal Server Error
    ...)" (any other failure). Never "none"."""
    if error.startswith(UNANSWERED):
        return error.partition(" (")[0].partition(": ")[0]
    status = _HTTP_STATUS.search(error)
    if status is not None and status.group(1) == "403":
        grant = grant or GRANTS.get(kind, f"read access to {kind}")
        return (f"unknown: {kind} could not be read (403 Forbidden: grant {grant}, "
                f"docs/verify-any-cluster.md \"RBAC\")")
    detail = error[status.start(1):] if status is not None else error
    return f"unknown: {kind} could not be read ({detail})"


@dataclass(frozen=True)
class Component:
    """An installed piece: where it runs, how many of its pods are ready (per workload, e.g.
    `1/1, 0/2`), what else is known."""

    name: str
    found: bool = False
    where: str = ""
    ready: str = ""
    detail: str = ""
    unknown: str = ""  # not found because it could not be read: why (why_unread)

    @property
    def state(self) -> str:
        """found | absent | unknown."""
        return "found" if self.found else "unknown" if self.unknown else "absent"

    @property
    def serving(self) -> bool:
        """Found, and every one of its workloads has all its pods ready (at least one): a
        component half of whose workloads are down is not serving."""
        if not self.found:
            return False
        if not self.ready:
            return True  # a webhook configuration has no pods of its own
        for part in self.ready.split(", "):
            have, _, want = part.partition("/")
            if not (have.isdigit() and want.isdigit() and 0 < int(have) == int(want)):
                return False
        return True


@dataclass(frozen=True)
class Card:
    """One card HAMi registered on one node, and what pods use of it (as HAMi counts them)."""

    node: str
    device_id: str
    model: str
    memory_mib: int
    cores: int
    split: int
    healthy: bool
    used_memory: int | None = 0  # None (and users None): unknown, Pods could not be read
    used_cores: int | None = 0
    users: tuple[str, ...] | None = ()
    mode: str = ""  # hami-core, mig, mps (pkg/device/nvidia/device.go:61-63)
    cordoned: bool = False  # listed in the node's hami.io/device-cordon

    @property
    def idle(self) -> bool:
        """Known to be idle: no user, nothing in use (unknown usage is not idle)."""
        return not self.users and self.used_memory == 0 and self.used_cores == 0


@dataclass(frozen=True)
class GpuNode:
    """A node with GPUs: whole ones, HAMi's cards or MIG devices, and what keeps a verify pod
    off it (gpulab.cluster.rules)."""

    name: str
    ready: bool
    gpus: str  # allocatable `resource` (HAMi: its count resource, cards x split)
    cards: int  # registered by HAMi (as HAMi decodes them)
    handshake: str = ""
    users: tuple[str, ...] | None = ()  # pods on it that hold or ask for GPUs (None: unknown)
    resource: str = WHOLE_GPU
    hostname: str = ""  # its kubernetes.io/hostname label ("" when it has none)
    blockers: tuple[str, ...] = ()  # kube-scheduler's: cordon, untolerated taints
    hami_unseen: str = ""  # why HAMi offers none of its cards ("" when it does)
    kai_unready: tuple[str, ...] = ()  # why KAI counts it not ready
    pool: str = ""  # its KAI node-pool label value (see pooled)
    pooled: bool = False  # it has the node-pool label, even empty: the default shard skips it
    mig: tuple[str, ...] = ()  # MIG devices it advertises, `nvidia.com/mig-<profile>=<n>`
    gpu_taints: tuple[str, ...] = ()  # taints keyed by a GPU resource, which verify tolerates
    other_advertiser: str = ""  # why its count resource is not (only) HAMi's ("" when it is)


@dataclass(frozen=True)
class Queue:
    """A KAI Queue: its parent, its GPU limit (-1: unlimited; None: not set, which KAI reads as
    0, rules in gpulab.cluster.plan), its node pool, and the GPUs KAI says it has allocated."""

    name: str
    parent: str = ""
    gpu_limit: float | None = None
    pool: str = ""
    allocated: float = 0.0
    pooled: bool = False  # it has the node-pool label, even empty: the default shard skips it
    reported: float = 0.0  # what its status.allocated says (the queue controller's, may be stale)

    def text(self) -> str:
        return self.name + (f" (under {self.parent})" if self.parent else "")


@dataclass(frozen=True)
class Inventory:
    """What discovery found in one cluster.

    A collection is None when what it is read from could not be read (`unknown` says why), ()
    when it was read and holds nothing. unknown: each fact that could not be established, by
    name ("HAMi scheduler", "HAMi webhook", "HAMi device plugin", "KAI scheduler", "KAI GPU
    sharing", "queues", "Kamaji", "vCluster", "HAMi device config", "GPU nodes", "GPU users"),
    with why (why_unread). unseen: every read that failed, as `Kind: error`.
    """

    member: str
    server: str
    version: str
    error: str
    hami_scheduler: Component
    hami_webhook: Component
    hami_device_plugin: Component
    kai_scheduler: Component
    kai_gpu_sharing: str  # on | off (also: no Config kai-config) | unknown
    queues: tuple[Queue, ...] | None
    tenancy: tuple[str, ...]
    gpu_nodes: tuple[GpuNode, ...] | None
    cards: tuple[Card, ...] | None
    gpu_users: tuple[str, ...] | None
    unseen: tuple[str, ...]  # what could not be read, and why
    unknown: dict[str, str] = field(default_factory=dict)
    hami_scheduler_name: str = ""  # its --scheduler-name ("" when it has none)
    hami_resources: HamiResources = DEFAULT_RESOURCES
    hami_resources_from: str = ""  # where the names come from
    hami_node_selector: dict[str, str] = field(default_factory=dict)
    hami_gpu_policy: str = DEFAULT_GPU_POLICY  # its --gpu-scheduler-policy
    hami_force_overwrite: bool = True  # its --force-overwrite-default-scheduler
    hami_webhook_name: str = ""  # the MutatingWebhookConfiguration holding vgpu.hami.io
    hami_namespace_selector: dict[str, Any] | None = None  # its namespaceSelector (None: all)
    hami_object_selector: dict[str, Any] | None = None  # its objectSelector (None: all)
    kai_operator: bool = False
    kai_scheduler_name: str = KAI_SCHEDULER
    kai_queue_label: str = QUEUE_LABEL
    kai_node_pool_label: str = KAI_NODE_POOL_LABEL
    kai_full_hierarchy: bool = True  # the scheduler's --full-hierarchy-fairness (default true)
    kai_config_found: bool = False  # the Config kai-config exists (read, not absent)
    # what verify's pods tolerate: every GPU node's taints keyed by a GPU resource (gpu_taints)
    gpu_tolerations: tuple[dict[str, str], ...] = ()
    other_device_plugins: tuple[str, ...] = ()  # NVIDIA's device plugin DaemonSets, beside HAMi's

    @property
    def has_hami(self) -> bool:
        return self.hami_scheduler.found or self.hami_webhook.found

    @property
    def has_kai(self) -> bool:
        return self.kai_scheduler.found or self.kai_operator or bool(self.queues)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("hami_scheduler", "hami_webhook", "hami_device_plugin", "kai_scheduler"):
            out[key]["state"] = getattr(self, key).state
        return out


_READ_FROM = {"Node": "nodes", "Pod": "pods", "MutatingWebhookConfiguration": "webhooks",
              "Queue": "queues", "TenantControlPlane": "tenant_control_planes",
              **dict.fromkeys(WORKLOAD_KINDS, "workloads")}


def _unread(snapshot: ClusterSnapshot, *kinds: str) -> str:
    """Why what is read from `kinds` is unknown ('' when every one of them was read)."""
    why = []
    for kind in kinds:
        error = snapshot.read_errors.get(kind)
        if error is not None:
            why.append(why_unread(kind, error))
        elif kind in _READ_FROM and getattr(snapshot, _READ_FROM[kind]) is None:
            why.append(f"unknown: {kind} was not read")
    return "; ".join(dict.fromkeys(why))


def _workloads(snapshot: ClusterSnapshot, kind: str) -> list[JsonObj]:
    return [w for w in snapshot.workloads or () if w.get("kind") == kind]


def _component(name: str, workloads: Iterable[Mapping[str, Any]], detail: str = "",
               unknown: str = "") -> Component:
    found = list(workloads)
    if not found:
        return Component(name, unknown=unknown)
    where = ", ".join(f"{w['namespace']}/{w['name']} ({w['kind']})" for w in found)
    ready = ", ".join(f"{w['ready']}/{w['desired']}" for w in found)
    return Component(name, True, where, ready, detail)


def _image_tag(workload: Mapping[str, Any], marker: str) -> str:
    """The tag of the first image naming `marker` ('' when none does): `latest` when it has none
    (Docker's default), its digest when it is pinned by digest alone. A registry's port is no
    tag, nor is the digest of an image pinned by both."""
    for image in workload.get("images") or ():
        if marker in image:
            name, _, digest = image.partition("@")
            last = name.rsplit("/", 1)[-1]
            return last.partition(":")[2] or digest or "latest"
    return ""


def _hami_scheduler_workloads(snapshot: ClusterSnapshot) -> list[JsonObj]:
    return [w for w in _workloads(snapshot, "Deployment")
            if w["labels"].get("app.kubernetes.io/component") == "hami-scheduler"]


def _hami_scheduler(snapshot: ClusterSnapshot) -> Component:
    found = _hami_scheduler_workloads(snapshot)
    if not found:
        return Component("HAMi scheduler", unknown=_unread(snapshot, "Deployment"))
    tag = _image_tag(found[0], "hami")
    lock = next((a for a in found[0].get("args") or () if "node-lock-timeout" in a), "")
    detail = ", ".join(x for x in (f"HAMi {tag}" if tag else "", lock or
                                   "--node-lock-timeout default (5m, cmd/scheduler/main.go:79)")
                       if x)
    return _component("HAMi scheduler", found, detail)


def _hami_settings(snapshot: ClusterSnapshot) -> tuple[str, dict[str, str], HamiResources, str]:
    """HAMi's scheduler name, node label selector and resource names (rules)."""
    found = _hami_scheduler_workloads(snapshot)
    args = [str(a) for a in (found[0].get("args") or ())] if found else []
    name = rules.flag_value(args, "--scheduler-name") or ""
    selector = rules.label_selector(rules.flag_value(args, "--node-label-selector"))
    config = snapshot.hami_device_config
    if config is None:
        unread = _unread(snapshot, "ConfigMap") if found else _unread(snapshot, "Deployment")
        if unread:
            why = f"the device config is {unread}"
        elif found:
            why = "no device ConfigMap found"
        else:
            why = "no hami-scheduler Deployment mounts a device ConfigMap"
        return name, selector, DEFAULT_RESOURCES, f"the chart's defaults ({why})"
    where = f"ConfigMap {config.get('namespace', '')}/{config.get('name', '')}"
    names = rules.device_config_resources(str(config.get("device-config.yaml") or ""))
    if names is None:
        return name, selector, DEFAULT_RESOURCES, f"the chart's defaults ({where} is not YAML)"
    return name, selector, names, where


def _hami_admission(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """HAMi's scheduler flags and webhook selectors that decide whether it sees and shares a
    pod (gpulab.cluster.hami_config): cmd/scheduler/main.go:71, 81; the webhook's selectors."""
    found = _hami_scheduler_workloads(snapshot)
    args = [str(a) for a in (found[0].get("args") or ())] if found else []
    out: dict[str, Any] = {
        "hami_gpu_policy": rules.flag_value(args, "--gpu-scheduler-policy") or DEFAULT_GPU_POLICY,
        "hami_force_overwrite": go_bool(
            rules.flag_value(args, "--force-overwrite-default-scheduler"), True)}
    for config in snapshot.webhooks or ():
        for hook in config.get("webhooks") or ():
            if hook.get("name") == HAMI_WEBHOOK:
                selectors = {k: dict(hook[k]) if isinstance(hook.get(k), dict) else None
                             for k in ("namespaceSelector", "objectSelector")}
                return {**out, "hami_webhook_name": str(config.get("name", "")),
                        "hami_namespace_selector": selectors["namespaceSelector"],
                        "hami_object_selector": selectors["objectSelector"]}
    return out


def _hami_webhook(snapshot: ClusterSnapshot) -> Component:
    for config in snapshot.webhooks or ():
        for hook in config.get("webhooks") or ():
            if hook.get("name") == HAMI_WEBHOOK:
                # a ServiceReference has both (kubernetes/api admissionregistration/v1/types.go:
                # 1524-1530 at kubernetes-1.36.3); without one the webhook is called by URL
                service = hook.get("service") or {}
                to = (f"service {service['namespace']}/{service['name']}" if service else
                      "a URL, not a Service")
                return Component("HAMi webhook", True, f"{config['name']} ({to})", "",
                                 f"failurePolicy {hook.get('failurePolicy') or 'Fail'}")
    return Component("HAMi webhook", unknown=_unread(snapshot, "MutatingWebhookConfiguration"))


def _device_plugin(snapshot: ClusterSnapshot) -> Component:
    daemonsets = _workloads(snapshot, "DaemonSet")
    mock = [d for d in daemonsets if any("mock-device-plugin" in i for i in d.get("images") or ())]
    if mock:
        return _component("HAMi device plugin", mock, "mock (simulated cards)")
    real = [d for d in daemonsets
            if d["labels"].get("app.kubernetes.io/component") == "hami-device-plugin"]
    return _component("HAMi device plugin", real, "real (NVIDIA driver)" if real else "",
                      unknown=_unread(snapshot, "DaemonSet"))


def _number(value: Any) -> float | None:
    """A JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _queue(obj: Mapping[str, Any], pool_label: str, held: Mapping[str, Decimal] | None
           ) -> Queue:
    """A Queue; `held`: the GPUs KAI's pods hold per queue, up the hierarchy (None: Pods were
    not read, and its status.allocated is all there is)."""
    spec = obj.get("spec") or {}
    gpu = ((spec.get("resources") or {}).get("gpu") or {})
    labels = obj.get("labels") or {}
    name = str(obj.get("name", ""))
    reported = float(_quantity((obj.get("allocated") or {}).get(WHOLE_GPU)))
    return Queue(name, str(spec.get("parentQueue") or ""),
                 _number(gpu.get("limit")) if isinstance(gpu, dict) else None,
                 str(labels.get(pool_label, "")),
                 reported if held is None else float(held.get(name, Decimal(0))),
                 pooled=pool_label in labels, reported=reported)


def _kai(snapshot: ClusterSnapshot) -> dict[str, Any]:
    config = snapshot.kai_config
    settings = (config or {}).get("global") or {}
    name = str(settings.get("schedulerName") or KAI_SCHEDULER)
    pool_label = str(settings.get("nodePoolLabelKey") or KAI_NODE_POOL_LABEL)
    deployments = _workloads(snapshot, "Deployment")
    shards = [w for w in deployments if w["name"].startswith(f"{name}-")
              and rules.flag_value(w.get("args") or (), "--scheduler-name") in (None, name)]
    default = [w for w in shards
               if rules.flag_value(w.get("args") or (), "--partition-label-value") == ""]
    if not default:  # no command line seen: the chart's default shard is named `default`
        default = [w for w in shards if w["name"] == f"{name}-default"
                   and rules.flag_value(w.get("args") or (), "--partition-label-value") is None]
    others = [f"{w['namespace']}/{w['name']}" for w in shards if w not in default]
    args = [str(a) for a in (default[0].get("args") or ())] if default else []
    detail = ", ".join(x for x in (
        f"schedulerName {name}", f"default shard (nodes and queues without {pool_label})",
        f"other shards: {', '.join(others)}" if others else "") if x)
    queue_label = str(settings.get("queueLabelKey") or QUEUE_LABEL)
    held = queue_usage(snapshot, name, queue_label)
    config_unread = _unread(snapshot, "Config")
    unknown = _unread(snapshot, "Deployment") or (
        f"{config_unread}, and it names KAI's scheduler" if config_unread else "")
    component = _component("KAI scheduler", default, detail, unknown=unknown)
    if config is None:  # unread, or absent: nothing turns sharing on (the chart's hook makes it)
        sharing = "unknown" if config_unread else "off"
    else:
        sharing = "on" if (config.get("admission") or {}).get("gpuSharing") else "off"
    return {
        "kai_scheduler": component, "kai_gpu_sharing": sharing,
        "kai_config_found": config is not None,
        "queues": None if snapshot.queues is None else tuple(
            _queue(q, pool_label, held) for q in snapshot.queues),
        "kai_operator": any(w["name"] == "kai-operator" for w in deployments)
        or config is not None,
        "kai_scheduler_name": name,
        "kai_queue_label": queue_label,
        "kai_node_pool_label": pool_label,
        "kai_full_hierarchy": rules.flag_value(args, "--full-hierarchy-fairness") != "false",
    }


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


def _is_gpu_resource(name: str, hami: HamiResources) -> bool:
    return name == WHOLE_GPU or name.startswith("nvidia.com/mig-") or name in hami.names()


def _uses_gpu(pod: Mapping[str, Any], hami: HamiResources) -> bool:
    """A pod not finished that asks a positive amount of a GPU resource (whole GPUs, HAMi's
    count, memory or core resources, MIG devices) or carries KAI's share annotations. A pod
    asking none (or `0`) is no GPU user, whatever node it runs on."""
    if o.pod_phase(pod) in ("Succeeded", "Failed"):
        return False
    notes = o.annots(pod)
    if any(_quantity(notes[k]) > 0 for k in KAI_SHARE_ANNOTATIONS if k in notes):
        return True
    for container in (pod.get("spec") or {}).get("containers") or ():
        resources = container.get("resources") or {}
        for asked in (resources.get("requests") or {}, resources.get("limits") or {}):
            if any(_is_gpu_resource(str(k), hami) and _quantity(v) > 0
                   for k, v in asked.items()):
                return True
    return False


def _label(pod: Mapping[str, Any]) -> str:
    return f"{o.metadata(pod).get('namespace', '')}/{o.name(pod)}"


def _observed(snapshot: ClusterSnapshot) -> datetime:
    try:
        when = datetime.fromisoformat(snapshot.observed_at)
    except ValueError:
        return datetime.now(timezone.utc)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _hami_unseen(node: Mapping[str, Any], cards: list[dict[str, Any]] | None,
                 selector: Mapping[str, str], count: str, now: datetime) -> str:
    """Why HAMi offers none of this node's cards ('' when it offers them)."""
    raw = o.annots(node).get(REGISTER_ANNOTATION)
    if raw is not None and cards is None:
        return (f"HAMi cannot decode its {REGISTER_ANNOTATION} (pkg/device/nvidia/device.go:"
                f"302-315): no cards")
    if not rules.matches_labels(o.labels(node), selector):
        wanted = ",".join(f"{k}={v}" for k, v in selector.items())
        return (f"not selected by hami-scheduler's --node-label-selector={wanted}: HAMi never "
                f"registers its cards")
    handshake = o.annots(node).get(HANDSHAKE_ANNOTATION, "")
    allocatable = ((node.get("status") or {}).get("allocatable") or {}).get(count)
    if rules.handshake_expired(handshake, int(_quantity(allocatable)), now):
        return (f"handshake {handshake!r} is over 60 s old and allocatable {count} is 0: HAMi "
                f"dropped its cards (pkg/device/devices.go:576-596)")
    return ""


def _nodes_and_cards(snapshot: ClusterSnapshot, hami: HamiResources,
                     selector: Mapping[str, str], pool_label: str
                     ) -> tuple[tuple[GpuNode, ...] | None, tuple[Card, ...] | None]:
    """The GPU nodes and HAMi's cards (None: Nodes could not be read); what is in use on a card
    is None when Pods could not be read."""
    if snapshot.nodes is None:
        return None, None
    known = snapshot.pods is not None
    pods = [dict(p) for p in snapshot.pods or ()]
    users: dict[str, list[str]] = {}
    for pod in pods:
        if _uses_gpu(pod, hami) and o.pod_node(pod):
            users.setdefault(o.pod_node(pod), []).append(_label(pod))
    usage = hami_usage(pods)
    now = _observed(snapshot)
    count = hami.count or WHOLE_GPU
    plugins = other_device_plugins(snapshot)
    nodes: list[GpuNode] = []
    cards: list[Card] = []
    for node in snapshot.nodes:
        name = o.name(node)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        registered = decode_register(o.annots(node).get(REGISTER_ANNOTATION))
        resource = count if count in allocatable or registered else WHOLE_GPU
        gpus = str(allocatable.get(resource, "0"))
        mig = rules.mig_resources(node)
        if _quantity(gpus) <= 0 and registered is None and not mig \
                and REGISTER_ANNOTATION not in o.annots(node):
            continue  # a CPU node, wherever the API lists it
        gpu = gpu_taints(node, lambda key: _is_gpu_resource(key, hami))
        cordon = {u.strip() for u in o.annots(node).get(CORDON_ANNOTATION, "").split(",")
                  if u.strip()}
        for device in registered or ():
            _n, memory, cores, holders = usage.get((name, str(device["id"])), (0, 0, 0, []))
            cards.append(Card(node=name, device_id=str(device["id"]), model=str(device["type"]),
                              memory_mib=int(device["devmem"]), cores=int(device["devcore"]),
                              split=int(device["count"]), healthy=device["health"] is True,
                              used_memory=memory if known else None,
                              used_cores=cores if known else None,
                              users=tuple(holders) if known else None,
                              mode=str(device["mode"]), cordoned=str(device["id"]) in cordon))
        nodes.append(GpuNode(
            name, o.node_ready(node)[0], gpus, len(registered or ()),
            o.annots(node).get(HANDSHAKE_ANNOTATION, ""),
            tuple(sorted(users.get(name, ()))) if known else None,
            resource=resource, hostname=o.labels(node).get(rules.HOSTNAME_LABEL, ""),
            blockers=tuple(rules.untolerated_taints(node, [*rules.DEFAULT_TOLERATIONS,
                                                           *tolerations_for(gpu)])),
            hami_unseen=_hami_unseen(node, registered, selector, count, now),
            other_advertiser=other_advertiser(node, registered, count, plugins),
            kai_unready=tuple(rules.kai_not_ready(node)),
            pool=o.labels(node).get(pool_label, ""), pooled=pool_label in o.labels(node),
            mig=tuple(f"{k}={v}" for k, v in sorted(mig.items())),
            gpu_taints=tuple(taint_text(t) for t in gpu)))
    return (tuple(sorted(nodes, key=lambda n: n.name)),
            tuple(sorted(cards, key=lambda c: (c.node, c.device_id))))


def inventory(snapshot: ClusterSnapshot) -> Inventory:
    """Discovery over one snapshot (see the module docstring for the rules)."""
    kai = _kai(snapshot)
    name, selector, hami, source = _hami_settings(snapshot)
    nodes, cards = _nodes_and_cards(snapshot, hami, selector, kai["kai_node_pool_label"])
    components = (_hami_scheduler(snapshot), _hami_webhook(snapshot), _device_plugin(snapshot),
                  kai["kai_scheduler"])
    tenancy = _tenancy(snapshot)
    unknown = {c.name: c.unknown for c in components if c.unknown}
    found_here = {t.split(":", 1)[0] for t in tenancy}
    for fact, kinds in (("KAI GPU sharing", ("Config",)), ("queues", ("Queue",)),
                        ("Kamaji", ("TenantControlPlane",)),
                        ("vCluster", ("StatefulSet", "Deployment")),
                        ("HAMi device config", ("ConfigMap",)),
                        ("GPU nodes", ("Node",)), ("GPU users", ("Pod",))):
        why = "" if fact in found_here else _unread(snapshot, *kinds)
        if why:
            unknown[fact] = why
    return Inventory(
        member=snapshot.name,
        server=snapshot.server,
        version=snapshot.version,
        error=snapshot.error,
        hami_scheduler=components[0],
        hami_webhook=components[1],
        hami_device_plugin=components[2],
        tenancy=tenancy,
        gpu_nodes=nodes,
        cards=cards,
        gpu_users=None if snapshot.pods is None else tuple(sorted(
            _label(p) for p in snapshot.pods if _uses_gpu(p, hami))),
        unseen=tuple(f"{what}: {why}" for what, why in sorted(snapshot.read_errors.items())),
        unknown=unknown,
        hami_scheduler_name=name,
        hami_resources=hami,
        hami_resources_from=source,
        hami_node_selector=selector,
        **_hami_admission(snapshot),
        other_device_plugins=other_device_plugins(snapshot),
        gpu_tolerations=tuple(tolerations_for(
            {"key": t.partition(":")[0].partition("=")[0], "effect": t.rpartition(":")[2]}
            for n in nodes or () for t in n.gpu_taints)),
        **kai,
    )
