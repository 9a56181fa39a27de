"""What an existing cluster is, read before anything is created (`observe`): the API answers,
the cluster's identity (server, context, the `kube-system` namespace's uid), its Kubernetes
version, default StorageClass, GPU nodes, whether a LoadBalancer works, which of the names the
plan needs exist already, and whether the user may do what the plan does (one
SelfSubjectAccessReview per verb and resource, authorization.k8s.io/v1:
`spec.resourceAttributes` {verb, group, resource, namespace} answered in `status.allowed`, as
the kubernetes client 37.0.2 models it: kubernetes/client/models/v1_resource_attributes.py:
108-116, v1_subject_access_review_status.py:106-109)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.errors import AdapterError, GpulabError, UsageError
from gpulab.pod_security import ENFORCE_LABEL, allows, enforced
from gpulab.providers.base import (
    Access,
    ClusterChoice,
    ClusterFacts,
    ClusterIdentity,
    ExistingNeeds,
    FakeNode,
    GpuNode,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.doctor import Finding
    from gpulab.providers.base import ClusterNeeds, PortNeed


GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
# the beta annotation still marks a default: kubernetes pkg/volume/util/storageclass.go:29-37,
# 73-85 (IsDefaultAnnotation, read at 962235c8 as the source index stores it): either
# annotation "true" makes a class the default
BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
# KAI v0.16.8: a node is MIG-enabled when this label parses true, or when it advertises any
# nvidia.com/mig-* resource (pkg/scheduler/api/node_info/node_info.go:662-676; the label key is
# the default of pkg/scheduler/conf/global_config.go:29); its MIG strategy is the label
# nvidia.com/mig.strategy (node_info.go:678-691, pkg/common/constants/constants.go:76)
MIG_ENABLED_LABEL = "node-role.kubernetes.io/mig-enabled"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
CRD_API = "apiextensions.k8s.io/v1"
HELM_PARALLEL = 4  # Helm installs at once by default (cluster.helm_parallel)
API_SECONDS = 10.0  # doctor: the API must answer GET /version within this
SURVEY_SECONDS = 120.0  # doctor: the whole read-only preflight, every request together
WORKER_PULL_STEP = "preflight/worker-image"


@dataclass(frozen=True)
class ExistingFacts:
    """What the cluster is, read before anything is created (`plan` and `up`'s preflight)."""

    identity: ClusterIdentity
    version: str
    default_storage_class: str | None
    gpu_nodes: tuple[GpuNode, ...]
    node_address: str | None
    load_balancer: bool
    namespaces_found: tuple[str, ...]
    queues_found: tuple[str, ...]
    denied: tuple[str, ...] = ()
    plan_note: str = ""
    expose: str = "NodePort"  # LoadBalancer | NodePort | port-forward
    expose_why: str = ""
    fake_nodes: tuple[FakeNode, ...] = ()  # cluster.fake_gpu_nodes, as found
    objects_found: tuple[str, ...] = ()  # ExistingNeeds.absent that exist ("RuntimeClass nvidia")
    # the lab's own namespaces of ExistingNeeds.pod_security as found: (name, the level their
    # pod-security.kubernetes.io/enforce label enforces, None when unlabelled)
    namespace_levels: tuple[tuple[str, str | None], ...] = ()
    # the NodePorts Services of others hold: (port, "namespace/name"); the lab's own namespaces
    # (lab.json) left out, so a re-run of `up` does not find its own vClusters in the way
    node_ports: tuple[tuple[int, str], ...] = ()
    # each RuntimeClass (name, handler); None when they could not be read (`runtime_classes_why`)
    runtime_classes: tuple[tuple[str, str], ...] | None = ()
    runtime_classes_why: str = ""
    stack: Any = None  # what the stack's own reader (ExistingNeeds.read) found: its add-ons, names
    asked: int = 0  # how many access reviews were asked (`denied`: those answered no)
    # the stack's ClusterNeeds answered on this cluster (`cluster_facts`), as kind answers them
    cluster: ClusterFacts = field(default_factory=lambda: ClusterFacts(shared=True,
                                                                       gpus="found"))

    @property
    def minor(self) -> int | None:
        parts = self.version.lstrip("v").split(".")
        try:
            return int(parts[1]) if parts[0] == "1" else None
        except (IndexError, ValueError):
            return None


def connect(choice: ClusterChoice, *, request_timeout: float = 10) -> tuple[Any, str, str]:
    """(KubeClient, context, kubeconfig text at that context) for the choice, read as kubectl
    reads kubeconfigs; UsageError for an unusable kubeconfig or unknown context."""
    import yaml

    from gpulab.adapters.kube import KubeClient, RetryPolicy
    from gpulab.cluster.kubeconfig import resolve

    members = resolve([choice.kubeconfig] if choice.kubeconfig else [],
                      [choice.context] if choice.context else [])
    member = members[0]
    config = _minified(member.config, member.context)
    try:
        client = KubeClient(config=config, context=member.context,
                            request_timeout=request_timeout, retry=RetryPolicy.disabled(),
                            unreachable_hint="check the kubeconfig's server and the network "
                                             "path to it")
    except AdapterError as err:
        raise UsageError(f"{member.source.describe()}, context {member.context}: "
                         f"{err.message}") from None
    return client, member.context, yaml.safe_dump(config, sort_keys=False)


def kubeconfig_finding(files: Sequence[Path], where: str, context: str) -> Finding:
    """doctor's line for the kubeconfig `files` (read already, at `context`): ok, or warn
    when a file is readable or writable by others than its owner (it holds credentials; gpulab
    writes its own 0600)."""
    import stat

    from gpulab.doctor import Finding

    loose = []
    for path in files:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            continue
        if mode & 0o077:
            loose.append((path, mode))
    seen = f"{where}, context {context}"
    if not loose:
        return Finding("kubeconfig", "ok", seen)
    return Finding("kubeconfig", "warn",
                   f"{seen}; open to others than its owner: "
                   f"{', '.join(f'{p} (mode {m:04o})' for p, m in loose)}",
                   f"chmod 600 {' '.join(str(p) for p, _m in loose)}")


def _minified(config: dict[str, Any], context: str) -> dict[str, Any]:
    """The kubeconfig reduced to `context`, its cluster and its user (kubectl's --minify)."""
    ctx = next(c for c in config.get("contexts") or [] if c.get("name") == context)
    cluster = (ctx.get("context") or {}).get("cluster")
    user = (ctx.get("context") or {}).get("user")
    return {"apiVersion": "v1", "kind": "Config", "current-context": context,
            "contexts": [ctx],
            "clusters": [c for c in config.get("clusters") or [] if c.get("name") == cluster],
            "users": [u for u in config.get("users") or [] if u.get("name") == user]}


def identity_of(kube: KubeGateway, server: str, context: str, kubeconfig: str
                ) -> ClusterIdentity:
    namespace = kube.get("v1", "Namespace", "kube-system") or {}
    uid = str((namespace.get("metadata") or {}).get("uid") or "")
    return ClusterIdentity(server=server, context=context, kubeconfig=kubeconfig,
                           kube_system_uid=uid)


def _gpus(node: dict[str, Any]) -> int:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    try:
        return int(str(allocatable.get(GPU_RESOURCE, "0")))
    except ValueError:
        return 0


def is_default_class(storage_class: dict[str, Any]) -> bool:
    """Whether Kubernetes takes `storage_class` for the default: its GA or beta
    is-default-class annotation is "true" (IsDefaultAnnotation, storageclass.go:73-85)."""
    notes = (storage_class.get("metadata") or {}).get("annotations") or {}
    return notes.get(DEFAULT_CLASS) == "true" or notes.get(BETA_DEFAULT_CLASS) == "true"


def _mig_enabled(node: dict[str, Any], labels: dict[str, Any]) -> bool:
    """KAI's NodeInfo.IsMIGEnabled (node_info.go:662-676): the label, when set, decides
    (strconv.ParseBool); else any nvidia.com/mig-* resource allocatable above 0."""
    if MIG_ENABLED_LABEL in labels:
        return str(labels[MIG_ENABLED_LABEL]) in ("1", "t", "T", "TRUE", "true", "True")
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for name, value in allocatable.items():
        if str(name).startswith(MIG_RESOURCE_PREFIX):
            try:
                if int(str(value)) > 0:
                    return True
            except ValueError:
                continue
    return False


def _gpu_nodes(nodes: list[dict[str, Any]]) -> tuple[GpuNode, ...]:
    from gpulab.cluster.rules import kai_not_ready
    from gpulab.taints import blocking_taints

    found = []
    for node in nodes:
        gpus = _gpus(node)
        if gpus <= 0:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        source = ("fake-gpu-operator" if "run.ai/simulated-gpu-node-pool" in labels
                  else "GPU Operator" if "nvidia.com/gpu.deploy.device-plugin" in labels
                  else "a device plugin")
        strategy = str(labels.get(MIG_STRATEGY_LABEL) or "")
        found.append(GpuNode(node["metadata"]["name"], gpus,
                             str(labels.get("nvidia.com/gpu.product", "")), source,
                             not_ready=tuple(kai_not_ready(node)),
                             taints=blocking_taints(node),
                             mig_enabled=_mig_enabled(node, labels),
                             mig_strategy=strategy if strategy in ("single", "mixed") else ""))
    return tuple(found)


def _node_ports(services: list[dict[str, Any]], ours: set[str]) -> tuple[tuple[int, str], ...]:
    """Each NodePort a Service holds (its `spec.ports[].nodePort`, any type: a LoadBalancer
    Service has them too), but those in the lab's own namespaces `ours`."""
    out = []
    for service in services:
        meta = service.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        if namespace in ours:
            continue
        for port in (service.get("spec") or {}).get("ports") or ():
            number = port.get("nodePort") if isinstance(port, dict) else None
            if isinstance(number, int) and number > 0:
                out.append((number, f"{namespace}/{meta.get('name')}"))
    return tuple(out)


def _runtime_classes(kube: Any) -> tuple[tuple[tuple[str, str], ...] | None, str]:
    """Each RuntimeClass (name, handler), or None and why they could not be read: a refused
    or failed read leaves it unknown, never "none"."""
    try:
        found = kube.list_objects("node.k8s.io/v1", "RuntimeClass")
    except GpulabError as err:
        first = (err.message.strip().splitlines() or [type(err).__name__])[0]
        return None, f"listing RuntimeClasses (node.k8s.io/v1) failed: {first}"
    return tuple((str(c["metadata"]["name"]), str(c.get("handler") or "")) for c in found), ""


def _node_address(nodes: list[dict[str, Any]], wanted: str | None) -> str | None:
    if wanted:
        return wanted
    for kind in ("ExternalIP", "InternalIP"):
        for node in nodes:
            for address in (node.get("status") or {}).get("addresses") or []:
                if address.get("type") == kind and address.get("address"):
                    return str(address["address"])
    return None


def _allowed(kube: Any, access: Access) -> bool:
    attributes: dict[str, Any] = {"verb": access.verb, "group": access.group,
                                  "resource": access.resource}
    if access.namespace:
        attributes["namespace"] = access.namespace
    if access.subresource:
        attributes["subresource"] = access.subresource
    answer = kube.create({"apiVersion": "authorization.k8s.io/v1",
                          "kind": "SelfSubjectAccessReview",
                          "spec": {"resourceAttributes": attributes}})
    return bool((answer.get("status") or {}).get("allowed"))


def denied(kube: Any, asked: Sequence[Access]) -> tuple[str, ...]:
    """What of `asked` the user may not do (one SelfSubjectAccessReview each, in order)."""
    return tuple(a.text for a, ok in zip(asked, _at_once(lambda a: _allowed(kube, a), asked),
                                         strict=True) if not ok)


READS_AT_ONCE = 8  # preflight requests in flight at once


def _at_once(ask: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """ask(item) for each item, answers in order, up to READS_AT_ONCE in flight: the preflight
    asks per team (its namespace and queue, ten SelfSubjectAccessReviews in its namespace), so
    20 teams ask ~260 questions, and one after the other its time was their round trips."""
    if len(items) <= 1:
        return [ask(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    first = ask(items[0])  # alone: the client's discovery of the kind is cached, not raced
    with ThreadPoolExecutor(max_workers=min(READS_AT_ONCE, len(items) - 1),
                            thread_name_prefix="gpulab-preflight") as pool:
        return [first, *pool.map(ask, items[1:])]


def pod_security_problems(needs: ExistingNeeds, facts: ExistingFacts) -> list[str]:
    """The lab's own namespaces (an earlier `up` made them) whose Pod Security label now
    refuses the pods gpulab puts there: someone set a stricter level since. Namespaces of
    others are never used (the stack refuses them); an unlabelled one of the lab's gets its
    label again (LabNamespaces)."""
    found = dict(facts.namespace_levels)
    problems = []
    for namespace, need, what in needs.pod_security:
        level = found.get(namespace)
        if level is not None and not allows(level, need):
            problems.append(
                f"namespace {namespace} enforces Pod Security '{level}' ({ENFORCE_LABEL}) and "
                f"{what} needs '{need}': its pods would be refused; `kubectl label namespace "
                f"{namespace} {ENFORCE_LABEL}={need} --overwrite`, or `gpulab down` and up again")
    return problems


def _fake_nodes(nodes: list[dict[str, Any]], needs: ExistingNeeds) -> tuple[FakeNode, ...]:
    """Each node named for fake GPUs as found. A label this lab set before (lab.json's
    `node-label` entries) is its own; a node carrying one of them advertises this lab's fake
    GPUs, not GPUs of its own."""
    by_name = {str(n["metadata"]["name"]): n for n in nodes}
    ours = {(str(o.get("node")), str(o.get("key"))): o.get("value")
            for o in needs.owned_before if o.get("type") == "node-label"}
    out = []
    for name in needs.fake_nodes:
        node = by_name.get(name)
        if node is None:
            out.append(FakeNode(name, False))
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        mine = any(n == name for n, _key in ours)
        adds: list[tuple[str, str]] = []
        conflicts: list[str] = []
        for key, value in needs.fake_labels:
            have = labels.get(key)
            if have is None or ((name, key) in ours and have == value):
                adds.append((key, value))
            elif have != value:
                conflicts.append(f"{key}={have}")
        out.append(FakeNode(name, True, 0 if mine else _gpus(node), tuple(adds),
                            tuple(conflicts)))
    return tuple(out)


NODE_PROBE_PORT = 10250  # the kubelet's port: on every node, whatever runs there
NODE_PROBE_SECONDS = 2.0


def node_reachable(address: str, port: int = NODE_PROBE_PORT,
                   timeout: float = NODE_PROBE_SECONDS) -> bool:
    """Whether this machine reaches `address`: a TCP connection to the kubelet's port is
    accepted or refused (the host answered) within `timeout`; a timeout or an unreachable
    network means the vClusters' NodePorts would not answer from here either."""
    import socket

    try:
        socket.create_connection((address, port), timeout=timeout).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return True


def _expose(wanted: str, balanced: bool, given: str | None, found: str | None
            ) -> tuple[str, str]:
    """How the vClusters are reached, and why (auto: LoadBalancer when the cluster has one;
    else NodePort at the address given, or at a node's address when it answers from here;
    else port-forward through the cluster's API, which always works where the API does)."""
    if wanted != "auto":
        return wanted, f"cluster.expose: {wanted}"
    if balanced:
        return "LoadBalancer", "a LoadBalancer Service of the cluster has an address"
    if given:
        return "NodePort", f"cluster.node_address {given}"
    if found is None:
        return "port-forward", "no LoadBalancer, and no node has an address"
    if node_reachable(found):
        return "NodePort", f"node address {found} answers from this machine"
    return "port-forward", (f"no LoadBalancer, and node address {found} does not answer from "
                            f"this machine (TCP {NODE_PROBE_PORT} within "
                            f"{NODE_PROBE_SECONDS:g} s)")


def port_url(port: PortNeed, expose: str, node_address: str | None) -> str | None:
    """Where this host reaches `port` on an existing cluster, as `expose` chose: port-forward,
    `port.address` at `port.host_port` (where `gpulab kubeconfig TEAM --port-forward` listens
    by default); NodePort, the node's address at `port.node_port`; None on a LoadBalancer
    (known once its Service has an address) or a NodePort without an address."""
    if expose == "port-forward":
        host, number = port.address, port.host_port
    elif expose == "NodePort" and node_address:
        host, number = node_address, port.node_port
    else:
        return None
    return f"https://{f'[{host}]' if ':' in host else host}:{number}"


def cluster_facts(needs: ClusterNeeds, found: ExistingFacts, workers: str = "join"
                  ) -> ClusterFacts:
    """A stack's `ClusterNeeds` answered on the cluster as found: shared (not the lab's
    alone); the GPUs those its nodes advertise, each pool's nodes those advertising GPUs, then
    those named for fake GPUs (`cluster.fake_gpu_nodes`); each port's URL as `port_url` (none
    yet on a LoadBalancer), reached as `found.expose` says; no LoadBalancer range (gpulab hands
    out no addresses of a cluster it did not make); no node this host loads images into;
    `workers` as the profile says (machines that join, or containers on this host); what the
    stack's own reader found there."""
    fake = tuple(n.name for n in found.fake_nodes)
    nodes = (*(n.name for n in found.gpu_nodes if n.name not in fake), *fake)
    urls = {port.name: url for port in needs.ports
            if (url := port_url(port, found.expose, found.node_address)) is not None}
    return ClusterFacts(pool_nodes={pool.name: nodes for pool in needs.pools}, urls=urls,
                        shared=True, gpus="found", gpu_nodes=found.gpu_nodes,
                        fake_nodes=found.fake_nodes, expose=found.expose,
                        node_address=found.node_address, workers=workers, found=found.stack,
                        runtime_classes=found.runtime_classes)


def observe(kube: Any, identity: ClusterIdentity, needs: ExistingNeeds, *, expose: str = "auto",
            node_address: str | None = None) -> ExistingFacts:
    """Read the cluster (GETs and SelfSubjectAccessReviews only: nothing is stored)."""
    version = kube.server_version()
    classes = kube.list_objects("storage.k8s.io/v1", "StorageClass")
    default = next((c["metadata"]["name"] for c in classes if is_default_class(c)), None)
    nodes = kube.list_objects("v1", "Node")
    ours = {(o.get("kind"), o.get("name")) for o in needs.owned_before}
    # a GET per name, not a LIST: a user may be allowed to get a namespace but not list them all
    asked = [("v1", "Namespace", n) for n in needs.namespaces if ("Namespace", n) not in ours]
    asked += [("scheduling.run.ai/v2", "Queue", q) for q in needs.queues
              if ("Queue", q) not in ours]
    found = [what for what, live in zip(asked, _at_once(lambda a: kube.get(*a), asked),
                                        strict=True) if live]
    namespaces = tuple(name for _api, kind, name in found if kind == "Namespace")
    queues = tuple(name for _api, kind, name in found if kind == "Queue")
    services = kube.list_objects("v1", "Service")
    balanced = any((s.get("spec") or {}).get("type") == "LoadBalancer"
                   and ((s.get("status") or {}).get("loadBalancer") or {}).get("ingress")
                   for s in services)
    runtime_classes, runtime_why = _runtime_classes(kube)
    chosen, why = _expose(expose, balanced, node_address, _node_address(nodes, None))
    denied = tuple(a.text for a, ok in zip(needs.access,
                                           _at_once(lambda a: _allowed(kube, a), needs.access),
                                           strict=True) if not ok)
    present = tuple(f"{kind} {name}" for (_api, kind, name), live in zip(
        needs.absent, _at_once(lambda a: kube.get(*a), needs.absent), strict=True) if live)
    own = [n for n, _level, _what in needs.pod_security if ("Namespace", n) in ours]
    levels = tuple((n, enforced(((live or {}).get("metadata") or {}).get("labels")))
                   for n, live in zip(own, _at_once(lambda n: kube.get("v1", "Namespace", n),
                                                    own), strict=True) if live)
    return ExistingFacts(identity=identity, version=version, default_storage_class=default,
                         gpu_nodes=_gpu_nodes(nodes), node_address=_node_address(nodes,
                                                                                 node_address),
                         load_balancer=balanced, namespaces_found=namespaces,
                         queues_found=queues, denied=denied, expose=chosen, expose_why=why,
                         fake_nodes=_fake_nodes(nodes, needs), objects_found=present,
                         namespace_levels=levels, asked=len(needs.access),
                         node_ports=_node_ports(services, {str(n) for k, n in ours
                                                           if k == "Namespace"}),
                         runtime_classes=runtime_classes, runtime_classes_why=runtime_why,
                         stack=needs.read(kube) if needs.read is not None else None)


