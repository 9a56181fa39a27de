"""Provider `existing`: a lab inside a cluster you already have (kubeconfig + context).

Read-only first (`observe`): the API answers, the cluster's identity (server, context, the
`kube-system` namespace's uid), its Kubernetes version, default StorageClass, GPU nodes, an
installed KAI Scheduler, whether a LoadBalancer works, which of the namespaces and queues the plan
needs exist already, and whether the user may do what the plan does (one SelfSubjectAccessReview
per verb and resource, authorization.k8s.io/v1: `spec.resourceAttributes` {verb, group,
resource, namespace} answered in `status.allowed`, as the kubernetes client 37.0.2 models it:
kubernetes/client/models/v1_resource_attributes.py:108-116,
v1_subject_access_review_status.py:106-109). Then `management/cluster` copies the kubeconfig at
its context into the lab folder (0600), and every step that creates something records it in
`lab.json` before it acts (`Owning`), so `down` removes exactly that, in reverse order, and
never what was there before.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.errors import AdapterError, UsageError
from gpulab.pod_security import ENFORCE_LABEL, allows, enforced
from gpulab.providers.base import (
    Access,
    ClusterChoice,
    ClusterFacts,
    ClusterIdentity,
    ExistingNeeds,
    Ground,
    ManagementRow,
    Session,
    Teardown,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway, LabAdapters
    from gpulab.doctor import Finding
    from gpulab.engine.runner import Reporter
    from gpulab.engine.step import Step, StepContext
    from gpulab.lab_record import LabRecord
    from gpulab.profile.base import HostWorkers, LabProfile
    from gpulab.providers.base import ClusterNeeds, HostTools, PortNeed, StackSide

__all__ = [
    "HELM_PARALLEL",
    "BoundedHelm",
    "ExistingCluster",
    "ExistingFacts",
    "ExistingProvider",
    "FakeNode",
    "GpuNode",
    "KaiFound",
    "Owning",
    "choice_of",
    "cluster_facts",
    "connect",
    "denied",
    "identity_of",
    "kubeconfig_finding",
    "observe",
    "owned_entries",
    "pod_security_problems",
    "port_url",
    "teardown",
]

GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
CRD_API = "apiextensions.k8s.io/v1"
HELM_PARALLEL = 4  # Helm installs at once by default (cluster.helm_parallel)
API_SECONDS = 10.0  # doctor: the API must answer GET /version within this
SURVEY_SECONDS = 120.0  # doctor: the whole read-only preflight, every request together
WORKER_PULL_STEP = "preflight/worker-image"


@dataclass(frozen=True)
class GpuNode:
    name: str
    gpus: int
    product: str
    source: str  # what advertises the GPUs: GPU Operator, device plugin, fake-gpu-operator


@dataclass(frozen=True)
class KaiFound:
    """KAI Scheduler found installed: the namespace of its `kai-operator` Deployment, the
    operator image's tag (KAI v0.16.8 deployments/kai-scheduler/templates/services/operator.yaml
    :7,22-24; the tag defaults to the chart's appVersion, templates/_helpers.tpl:7-8), and
    `spec.admission.gpuSharing` of its Config `kai-config` (templates/_helpers.tpl:18-24,172,
    195: the chart's `global.gpuSharing`), None when unreadable.
    `spec.binder.resourceReservation.namespace` of that Config is where its binder puts GPU
    reservation pods (templates/_helpers.tpl:74,91-93; None when the Config leaves it out)."""

    namespace: str
    version: str
    gpu_sharing: bool | None
    reservation_namespace: str | None = None


@dataclass(frozen=True)
class FakeNode:
    """A node named in `cluster.fake_gpu_nodes`, as found: whether it exists, the GPUs it
    advertises that are not this lab's fake ones (0: none), the labels gpulab will set (absent
    now, or set by this lab before: lab.json) and those it would overwrite (`key=value` now)."""

    name: str
    found: bool
    gpus: int = 0
    adds: tuple[tuple[str, str], ...] = ()
    conflicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExistingFacts:
    """What the cluster is, read before anything is created (`plan` and `up`'s preflight)."""

    identity: ClusterIdentity
    version: str
    default_storage_class: str | None
    gpu_nodes: tuple[GpuNode, ...]
    node_address: str | None
    load_balancer: bool
    kai: KaiFound | None
    namespaces_found: tuple[str, ...]
    queues_found: tuple[str, ...]
    denied: tuple[str, ...] = ()
    provider: str = "existing"
    plan_note: str = ""
    expose: str = "NodePort"  # LoadBalancer | NodePort | port-forward
    expose_why: str = ""
    fake_nodes: tuple[FakeNode, ...] = ()  # cluster.fake_gpu_nodes, as found
    objects_found: tuple[str, ...] = ()  # ExistingNeeds.absent that exist ("RuntimeClass nvidia")
    # the lab's own namespaces of ExistingNeeds.pod_security as found: (name, the level their
    # pod-security.kubernetes.io/enforce label enforces, None when unlabelled)
    namespace_levels: tuple[tuple[str, str | None], ...] = ()
    stack: Any = None  # what the stack's own reader (ExistingNeeds.read) found: its add-ons, names
    asked: int = 0  # how many access reviews were asked (`denied`: those answered no)
    # the stack's ClusterNeeds answered on this cluster (`cluster_facts`), as kind answers them
    cluster: ClusterFacts = field(default_factory=lambda: ClusterFacts(provider="existing"))

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


def _gpu_nodes(nodes: list[dict[str, Any]]) -> tuple[GpuNode, ...]:
    found = []
    for node in nodes:
        gpus = _gpus(node)
        if gpus <= 0:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        source = ("fake-gpu-operator" if "run.ai/simulated-gpu-node-pool" in labels
                  else "GPU Operator" if "nvidia.com/gpu.deploy.device-plugin" in labels
                  else "a device plugin")
        found.append(GpuNode(node["metadata"]["name"], gpus,
                             str(labels.get("nvidia.com/gpu.product", "")), source))
    return tuple(found)


def _node_address(nodes: list[dict[str, Any]], wanted: str | None) -> str | None:
    if wanted:
        return wanted
    for kind in ("ExternalIP", "InternalIP"):
        for node in nodes:
            for address in (node.get("status") or {}).get("addresses") or []:
                if address.get("type") == kind and address.get("address"):
                    return str(address["address"])
    return None


def image_tag(image: str) -> str:
    """The tag of an image reference, '' when it has none (a digest alone says no version):
    `reference := name [ ":" tag ] [ "@" digest ]`, a port only in the domain before the first
    '/' (distribution/reference reference.go:6-18, vendored by moby at v28.5.2)."""
    last = image.rsplit("/", 1)[-1].split("@", 1)[0]
    return last.rsplit(":", 1)[1] if ":" in last else ""


def _kai(kube: KubeGateway) -> KaiFound | None:
    for dep in kube.list_objects("apps/v1", "Deployment"):
        if dep["metadata"]["name"] != "kai-operator":
            continue
        containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "containers") or []
        image = next((str(c.get("image", "")) for c in containers
                      if c.get("name") == "operator"), "")
        version = image_tag(image)
        config = kube.get("kai.scheduler/v1", "Config", "kai-config") or {}
        spec = config.get("spec") or {}
        sharing = (spec.get("admission") or {}).get("gpuSharing")
        reservation = ((spec.get("binder") or {}).get("resourceReservation") or {}).get(
            "namespace")
        return KaiFound(str(dep["metadata"].get("namespace", "")), version,
                        sharing if isinstance(sharing, bool) else None,
                        str(reservation) if reservation else None)
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


def cluster_facts(needs: ClusterNeeds, found: ExistingFacts) -> ClusterFacts:
    """A stack's `ClusterNeeds` answered on the cluster as found: each pool's nodes are those
    advertising GPUs, then those named for fake GPUs (`cluster.fake_gpu_nodes`); each port's
    URL as `port_url` (none yet on a LoadBalancer); no LoadBalancer range (gpulab hands out no
    addresses of a cluster it did not make)."""
    fake = tuple(n.name for n in found.fake_nodes)
    nodes = (*(n.name for n in found.gpu_nodes if n.name not in fake), *fake)
    urls = {port.name: url for port in needs.ports
            if (url := port_url(port, found.expose, found.node_address)) is not None}
    return ClusterFacts(pool_nodes={pool.name: nodes for pool in needs.pools}, urls=urls,
                        provider="existing")


def observe(kube: Any, identity: ClusterIdentity, needs: ExistingNeeds, *, expose: str = "auto",
            node_address: str | None = None) -> ExistingFacts:
    """Read the cluster (GETs and SelfSubjectAccessReviews only: nothing is stored)."""
    version = kube.server_version()
    classes = kube.list_objects("storage.k8s.io/v1", "StorageClass")
    default = next((c["metadata"]["name"] for c in classes
                    if ((c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS)) == "true"),
                   None)
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
    balanced = any((s.get("spec") or {}).get("type") == "LoadBalancer"
                   and ((s.get("status") or {}).get("loadBalancer") or {}).get("ingress")
                   for s in kube.list_objects("v1", "Service"))
    chosen, why = _expose(expose, balanced, node_address, _node_address(nodes, None))
    denied = tuple(a.text for a, ok in zip(needs.access,
                                           _at_once(lambda a: _allowed(kube, a), needs.access),
                                           strict=True) if not ok)
    kai = _kai(kube)
    if kai is not None and ("Namespace", kai.namespace) in ours:
        kai = None  # the KAI this lab installed (an earlier `up`), not one found there
    present = tuple(f"{kind} {name}" for (_api, kind, name), live in zip(
        needs.absent, _at_once(lambda a: kube.get(*a), needs.absent), strict=True) if live)
    own = [n for n, _level, _what in needs.pod_security if ("Namespace", n) in ours]
    levels = tuple((n, enforced(((live or {}).get("metadata") or {}).get("labels")))
                   for n, live in zip(own, _at_once(lambda n: kube.get("v1", "Namespace", n),
                                                    own), strict=True) if live)
    return ExistingFacts(identity=identity, version=version, default_storage_class=default,
                         gpu_nodes=_gpu_nodes(nodes), node_address=_node_address(nodes,
                                                                                 node_address),
                         load_balancer=balanced, kai=kai, namespaces_found=namespaces,
                         queues_found=queues, denied=denied, expose=chosen, expose_why=why,
                         fake_nodes=_fake_nodes(nodes, needs), objects_found=present,
                         namespace_levels=levels, asked=len(needs.access),
                         stack=needs.read(kube) if needs.read is not None else None)


# --------------------------------------------------------------------------- steps


class BoundedHelm:
    """Helm gateways whose installs and uninstalls share one bound: at most `limit` Helm calls
    that change the cluster run at once, whichever step (team) makes them. The engine runs the
    teams' steps concurrently (gpulab.engine.runner); this keeps 20 teams from starting 8 Helm
    installs (each a chart download, a render and a --wait) against one API server at once."""

    def __init__(self, factory: Any, limit: int = HELM_PARALLEL) -> None:
        import threading

        if limit < 1:
            raise UsageError(f"helm_parallel must be at least 1 (got {limit})")
        self.factory = factory
        self.limit = limit
        self.slots = threading.BoundedSemaphore(limit)

    def __call__(self, kubeconfig: Path) -> _BoundedGateway:
        return _BoundedGateway(self.factory(kubeconfig), self.slots)


class _BoundedGateway:
    def __init__(self, inner: Any, slots: Any) -> None:
        self.inner, self.slots = inner, slots

    def installed(self, release: Any) -> bool:
        return bool(self.inner.installed(release))

    def install(self, release: Any, *, timeout_seconds: int = 600) -> None:
        with self.slots:
            self.inner.install(release, timeout_seconds=timeout_seconds)

    def uninstall(self, name: str, namespace: str) -> None:
        with self.slots:
            self.inner.uninstall(name, namespace)

    def releases(self) -> list[dict[str, Any]]:
        return list(self.inner.releases())

    def template(self, release: Any, *, kube_version: str | None = None,
                 include_crds: bool = False) -> list[dict[str, Any]]:
        return list(self.inner.template(release, kube_version=kube_version,
                                        include_crds=include_crds))


@dataclass
class ExistingCluster:
    """`management/cluster` on a cluster gpulab did not make: the kubeconfig at its context
    saved to the lab folder (0600); never creates anything in the cluster."""

    identity: ClusterIdentity
    kubeconfig_text: str
    version: str = ""
    expose: str = ""  # how the stack's APIs are reached (vcluster-kai: port-forward or not)
    name: str = "management/cluster"
    title: str = "Using the existing cluster"
    requires: tuple[str, ...] = ()

    def describe(self) -> list[Artifact]:
        return [Artifact("existing-cluster", self.identity.server, {
            "context": self.identity.context, "kubeconfig": self.identity.kubeconfig,
            "kubernetes": self.version, "kube-system uid": self.identity.kube_system_uid}),
            Artifact("file", "management.kubeconfig", {"mode": "0600",
                                                       "from": self.identity.kubeconfig})]

    def satisfied(self, ctx: StepContext) -> bool:
        path: Path = ctx.adapters.management_kubeconfig()
        return path.is_file() and path.read_text(encoding="utf-8") == self.kubeconfig_text

    def apply(self, ctx: StepContext) -> None:
        from gpulab import lab_record
        from gpulab.paths import write_secret

        record = self.identity.to_record()
        if self.expose:  # how the vClusters are reached (status, verify: port-forward)
            record["expose"] = self.expose
        lab_record.record_cluster(ctx.lab, record)
        write_secret(ctx.adapters.management_kubeconfig(), self.kubeconfig_text.encode())


def owned_entries(step: Step) -> list[dict[str, Any]]:
    """What `step` creates in the cluster, as lab.json's `owned` entries; a step's
    `removal_wait` (seconds) makes `down` wait for each of its objects to be gone. A
    `chart-object` (an object of a Helm release, described after it) is recorded after the
    release, so `down` deletes it, and waits while its `wait` says, before `helm uninstall`."""
    out: list[dict[str, Any]] = []
    wait = getattr(step, "removal_wait", None)
    for artifact in step.describe():
        if artifact.cluster != "management":
            continue
        body = artifact.body if isinstance(artifact.body, dict) else {}
        if artifact.kind == "helm-release":
            out.append({"type": "helm-release", "name": body.get("name", artifact.name),
                        "namespace": body.get("namespace", "")})
        elif artifact.kind == "object" and body.get("kind"):
            meta = body.get("metadata") or {}
            out.append({"type": "object", "apiVersion": body["apiVersion"],
                        "kind": body["kind"], "name": meta["name"],
                        "namespace": meta.get("namespace"), **({"wait": wait} if wait else {})})
        elif artifact.kind == "node-label":
            out.append({"type": "node-label", "node": body["node"], "key": body["key"],
                        "value": body["value"]})
        elif artifact.kind == "container":  # a worker container on this Docker host
            out.append({"type": "container", "name": artifact.name})
        elif artifact.kind == "chart-object":  # a release's object `down` removes before it
            out.append({"type": "object", "apiVersion": body["apiVersion"],
                        "kind": body["kind"], "name": body["name"],
                        "namespace": body.get("namespace"),
                        **({"wait": body["wait"]} if body.get("wait") else {})})
    return out


def _crds(kube: KubeGateway) -> set[str]:
    return {c["metadata"]["name"] for c in kube.list_objects(CRD_API, "CustomResourceDefinition")}


@dataclass
class Owning:
    """A stack's step on an existing cluster: what it will create is written to lab.json
    before it acts (so a crash leaves nothing unrecorded), and CustomResourceDefinitions a Helm
    chart brought (which `helm uninstall` keeps) are recorded after, ahead of the release so
    they go after it. A step satisfied by what exists never acts, so is never recorded."""

    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def title(self) -> str:
        return str(self.inner.title)

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(self.inner.requires)

    def describe(self) -> list[Artifact]:
        return list(self.inner.describe())

    def satisfied(self, ctx: StepContext) -> bool:
        return bool(self.inner.satisfied(ctx))

    def apply(self, ctx: StepContext) -> None:
        from gpulab import lab_record

        entries = owned_entries(self.inner)
        helm = any(e["type"] == "helm-release" for e in entries)
        kube = ctx.adapters.kube(ctx.adapters.management_kubeconfig()) if helm else None
        before = _crds(kube) if kube is not None else set()
        lab_record.record_owned(ctx.lab, entries)
        try:
            self.inner.apply(ctx)
        finally:
            if kube is not None:
                added = sorted(_crds(kube) - before)
                if added:  # read and written under lab_record's lock: teams record at once
                    lab_record.insert_owned(ctx.lab, [
                        {"type": "object", "apiVersion": CRD_API,
                         "kind": "CustomResourceDefinition", "name": n, "namespace": None}
                        for n in added], entries)


# --------------------------------------------------------------------------- down

LABEL_TRIES = 3  # a node changed by someone else between read and patch: read it again


def _unlabel(kube: KubeGateway, node: str, labels: dict[str, str], result: Teardown) -> None:
    """Remove from `node` the labels gpulab set, each only while it still has the value gpulab
    set (the patch names the resourceVersion read, so a change in between is not undone)."""
    for attempt in range(LABEL_TRIES):
        live = kube.get("v1", "Node", node)
        if live is None:
            result.kept.append(f"labels of node {node}: the node is gone")
            return
        meta = live.get("metadata") or {}
        have = meta.get("labels") or {}
        ours = {k: v for k, v in labels.items() if have.get(k) == v}
        if attempt == 0:
            for key in sorted(set(labels) - set(ours)):
                now = f"now {have[key]!r}" if key in have else "removed by someone else"
                result.kept.append(f"label {key} of node {node}: {now}, not gpulab's "
                                   f"{labels[key]!r}")
        if not ours:
            return
        try:
            kube.label("v1", "Node", node, dict.fromkeys(ours),
                       resource_version=str(meta.get("resourceVersion") or "") or None)
        except AdapterError as err:
            if getattr(err, "status", None) == 409 and attempt < LABEL_TRIES - 1:
                continue
            raise
        result.removed += [f"label {k}={v} of node {node}" for k, v in sorted(ours.items())]
        return


def _label_runs(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """Consecutive `node-label` entries grouped by node (one patch per node)."""
    runs: list[tuple[str, dict[str, str]]] = []
    for entry in entries:
        node = str(entry["node"])
        if not runs or runs[-1][0] != node:
            runs.append((node, {}))
        runs[-1][1][str(entry["key"])] = str(entry["value"])
    return runs


def teardown(owned: tuple[dict[str, Any], ...], kube: KubeGateway, helm: Any, *,
             sleep: Callable[[float], None] | None = None, runtime: Any = None) -> Teardown:
    """Remove what lab.json says gpulab created, newest first; then check it is gone. An entry
    with `wait` (seconds) is waited for until it is gone before anything older goes: its
    finalizers need a controller the lab installed earlier (a TenantControlPlane's, Kamaji's).
    `container` entries (worker containers on this host) go through `runtime`."""
    result = Teardown()
    labels: list[dict[str, Any]] = []
    for entry in reversed(owned):
        if entry.get("type") == "node-label":
            labels.append(entry)
            continue
        for node, keys in _label_runs(labels):
            _unlabel(kube, node, keys, result)
        labels = []
        if entry.get("type") == "container":
            if runtime is not None and runtime.remove(entry["name"]):
                result.removed.append(f"container {entry['name']}")
        elif entry.get("type") == "helm-release":
            helm.uninstall(entry["name"], entry["namespace"])
            result.removed.append(f"helm release {entry['namespace']}/{entry['name']}")
        elif entry.get("type") == "object" and kube.delete(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            where = f"{entry['namespace']}/" if entry.get("namespace") else ""
            if entry.get("wait"):
                _wait_gone(kube, entry, float(entry["wait"]), sleep)
            result.removed.append(f"{entry['kind']} {where}{entry['name']}")
    for node, keys in _label_runs(labels):
        _unlabel(kube, node, keys, result)
    for entry in owned:
        if entry.get("type") == "node-label":
            live = kube.get("v1", "Node", str(entry["node"])) or {}
            if ((live.get("metadata") or {}).get("labels") or {}).get(entry["key"]) \
                    == entry["value"]:
                result.leftovers.append(f"label {entry['key']} of node {entry['node']}")
            continue
        if entry.get("type") == "object" and entry["kind"] != "Namespace" and kube.get(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            result.leftovers.append(f"{entry['kind']} {entry['name']}")
    for entry in owned:
        if entry.get("type") == "container" and (runtime is None
                                                 or runtime.get(entry["name"]) is not None):
            result.leftovers.append(f"container {entry['name']}")
    return result


def _wait_gone(kube: KubeGateway, entry: dict[str, Any], seconds: float,
               sleep: Callable[[float], None] | None) -> None:
    """Until the object is gone; AdapterError (down stops, lab.json kept) when it is not."""
    import time

    pause = sleep or time.sleep
    deadline = time.monotonic() + seconds
    where = f"{entry['namespace']}/" if entry.get("namespace") else ""
    while kube.get(entry["apiVersion"], entry["kind"], entry["name"],
                   entry.get("namespace")) is not None:
        if time.monotonic() >= deadline:
            raise AdapterError(f"{entry['kind']} {where}{entry['name']} is still there "
                               f"{seconds:.0f}s after it was deleted (its finalizers have not "
                               "finished); nothing older was removed",
                               hint="look at its status and the controller's logs, then re-run "
                                    "gpulab down (lab.json is kept)")
        pause(2)


class ExistingProvider:
    """A lab in a cluster gpulab did not make, reached as `choice` says. `host` gives Helm and
    the Docker engine (only for worker containers on this host: kamaji-hami's
    `cluster.workers: containers`), asked for only when needed; `helm` and `runtime`, when
    given, are used instead."""

    name = "existing"

    def __init__(self, choice: ClusterChoice, host: HostTools | None = None, *,
                 helm: Callable[[Path], Any] | None = None, runtime: Any = None) -> None:
        self.choice = choice
        self.host = host
        self.helm = helm
        self.runtime = runtime

    def _tools(self) -> HostTools:
        if self.host is None:  # pragma: no cover - core hands its tools to up and down
            raise UsageError("the existing provider was given no way to reach this host's "
                             "tools")
        return self.host

    def ground(self, profile: LabProfile, lab: str, stack: StackSide, *, probe: bool = True
               ) -> Ground:
        """Read-only (always: the cluster is the plan's ground): what the cluster is, the
        `management/cluster` step, and why the lab cannot go into it ([]: it can). HostError
        when its API does not answer, UsageError when the lab is in another cluster."""
        client, context, text = connect(self.choice)
        try:
            return self._survey(profile, lab, stack, client, context, text)
        finally:
            client.close()

    def _survey(self, profile: LabProfile, lab: str, stack: StackSide, client: Any,
                context: str, text: str) -> Ground:
        """`ground` through `client` (the choice's kubeconfig at `context`, `text`)."""
        from dataclasses import replace

        from gpulab import lab_record
        from gpulab.errors import GpulabError, HostError

        choice = self.choice
        record = lab_record.read(lab)
        needs = stack.existing_needs(profile, lab, record.owned if record else ())
        where = str(choice.kubeconfig.absolute()) if choice.kubeconfig else "(default)"
        unreadable = "check the kubeconfig, the network path and your access"
        try:
            identity = identity_of(client, client.server, context, where)
        except GpulabError as err:
            raise HostError(f"the cluster at {client.server} (context {context}) cannot be "
                            f"read: {err.message}", hint=unreadable) from None
        kept = record.cluster if record else {}
        if kept and kept.get("kube_system_uid") != identity.kube_system_uid:
            # before anything else is asked there (not even an access review)
            raise UsageError(f"lab '{lab}' is in another cluster (kube-system uid "
                             f"{kept.get('kube_system_uid')} at {kept.get('server')}); this "
                             f"kubeconfig reaches {identity.kube_system_uid} at "
                             f"{identity.server}",
                             hint="give --kubeconfig/--context of the lab's cluster")
        try:
            facts = observe(client, identity, needs, expose=choice.expose,
                            node_address=choice.node_address)
            if facts.expose == "port-forward":  # up, status, verify forward to each vCluster
                from gpulab.providers.forward import forwarded_teams

                asks = [Access("create", "", "pods", ns, "portforward")
                        for ns, _release in forwarded_teams(profile).values()]
                facts = replace(facts, denied=facts.denied + denied(client, asks),
                                asked=facts.asked + len(asks))
        except GpulabError as err:
            raise HostError(f"the cluster at {client.server} (context {context}) cannot be "
                            f"read: {err.message}", hint=unreadable) from None
        facts = replace(facts, cluster=cluster_facts(stack.cluster_needs(profile), facts))
        return Ground(facts, [ExistingCluster(identity, text, facts.version, expose=facts.expose)],
                      "", stack.existing_problems(profile, facts)
                      + pod_security_problems(needs, facts))

    def doctor(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
               pull: bool) -> list[Finding]:
        """`gpulab doctor` for a lab in this cluster: helm, the state folder, the kubeconfig at
        its context, the API answering within API_SECONDS, then the read-only preflight `up`
        runs (`ground`: version, access reviews, StorageClass, GPUs, names...) one line per
        check with its fix. No kind and no Docker, but for worker containers on this host
        (`profile.host_workers()`): then Docker, their image (pulled unless `pull` is False),
        privileged containers, memory and CPUs for the workers alone."""
        from gpulab.doctor import helm_finding, state_finding

        out = [helm_finding(), state_finding(), *self._cluster_findings(profile, lab, stack)]
        workers = profile.host_workers()
        if workers is not None:
            out += self._worker_findings(workers, report, pull=pull)
        return out

    def _cluster_findings(self, profile: LabProfile, lab: str, stack: StackSide
                          ) -> list[Finding]:
        from gpulab.cluster.kubeconfig import resolve
        from gpulab.doctor import Finding, cluster_findings
        from gpulab.errors import GpulabError

        choice = self.choice
        usage = "pass --kubeconfig FILE [--context NAME] (as for kubectl)"
        try:
            member = resolve([choice.kubeconfig] if choice.kubeconfig else [],
                             [choice.context] if choice.context else [])[0]
            client, context, text = connect(choice)
        except UsageError as err:
            return [Finding("kubeconfig", "fail", err.message, err.hint or usage)]
        out = [kubeconfig_finding(member.source.files, member.source.describe(), context)]
        try:
            try:
                with client.bounded(API_SECONDS):
                    version = client.server_version()
            except GpulabError as err:
                first = (err.message.strip().splitlines() or [type(err).__name__])[0]
                return [*out, Finding(
                    "api", "fail", f"{first} (deadline {API_SECONDS:g} s); nothing in the "
                    "cluster was checked",
                    err.hint or "check the kubeconfig's server and credentials, and the network "
                                "path to it")]
            out.append(Finding("api", "ok", f"{client.server} (context {context}) answers: "
                                            f"Kubernetes {version}"))
            try:
                with client.bounded(SURVEY_SECONDS):
                    ground = self._survey(profile, lab, stack, client, context, text)
            except GpulabError as err:
                return [*out, Finding("cluster", "fail", err.message,
                                      err.hint or "see docs/own-cluster.md")]
        finally:
            client.close()
        facts = ground.facts
        return out + cluster_findings(facts.version, facts.denied, facts.asked,
                                      facts.default_storage_class, ground.problems, context)

    def _worker_findings(self, workers: HostWorkers, report: Reporter, *, pull: bool
                         ) -> list[Finding]:
        """Docker for the worker containers only (the engine the docker CLI would use)."""
        from gpulab.doctor import diagnose_workers, observe_workers, reported_pull
        from gpulab.errors import GpulabError

        runtime = self.runtime
        endpoint = None
        error = ""
        if runtime is None:
            tools = self._tools()
            try:
                endpoint = tools.endpoint()
                runtime = tools.docker(timeout=5, endpoint=endpoint)
            except GpulabError as err:
                error = str(err)
        pulling = reported_pull(runtime, report, WORKER_PULL_STEP, "worker image") \
            if pull and runtime is not None else None
        snapshot = observe_workers(runtime, error, workers.images, pull=pulling,
                                   endpoint=endpoint)
        return diagnose_workers(snapshot, workers)

    def open(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
             adapters: LabAdapters | None, preflight: bool = True) -> Session:
        """The read-only preflight refuses (exit 4, one line) before anything is created (even
        with `preflight` False: it is what the cluster allows, not this host); every step's
        creations are recorded (`Owning`) so `down` removes exactly those; the teams' Helm
        installs share one bound; on a port-forward lab, up reaches each vCluster through the
        cluster's API (closed with the session)."""
        from dataclasses import replace
        from typing import cast

        from gpulab.errors import HostError

        ground = self.ground(profile, lab, stack)
        problems = ground.problems
        if problems:
            more = f" (+{len(problems) - 1} more; gpulab plan lists them)" \
                if len(problems) > 1 else ""
            raise HostError(f"preflight: {problems[0]}{more}",
                            hint="see docs/own-cluster.md; nothing was created")
        if adapters is None:
            from gpulab.adapters.base import LabAdapters
            from gpulab.adapters.kube import KubeClient
            from gpulab.manifests import fetch_manifest
            from gpulab.paths import lab_dir

            spec = profile.cluster  # kamaji-hami's workers as containers of this Docker host
            runtime = self._tools().docker() if spec is not None and \
                spec.workers == "containers" else cast("Any", None)
            adapters = LabAdapters(runtime=runtime, kind=cast("Any", None),
                                   kube=KubeClient, helm=self._tools().helm(lab),
                                   fetch=fetch_manifest, lab_dir=lab_dir(lab))
        adapters = replace(adapters, helm=BoundedHelm(adapters.helm, self.choice.helm_parallel))
        steps: list[Step] = [*ground.steps, *(Owning(s) for s in stack.build_steps(
            profile, lab, ground.facts))]
        if ground.facts.expose != "port-forward":
            return Session(steps, adapters)
        from gpulab.providers.forward import ForwardingKube, forwarded_teams

        forwarding = ForwardingKube(adapters.kube, adapters.management_kubeconfig(),
                                    forwarded_teams(profile))
        return Session(steps, replace(adapters, kube=forwarding), forwarding.close)

    def built(self, lab: str, adapters: LabAdapters) -> None:
        """Nothing more to record: each step recorded its creations before it acted."""

    def connect(self) -> None:
        """Nothing from this host: each command reaches the cluster itself."""

    def exists(self, lab: str) -> bool:
        """The lab has a folder (its record is in it)."""
        from gpulab.paths import lab_dir

        return lab_dir(lab).is_dir()

    def machines(self) -> None:
        """None: status reads what the lab has from the cluster's API."""

    def logs(self, lab: str, folder: Path, profile: LabProfile, *,
             kube: Callable[[Path], Any] | None = None) -> None:
        """gpulab.diagnostics.collect_existing: only what the lab's record says gpulab created
        in the cluster, every read within diagnostics.EXISTING_DEADLINE (no Docker, no helm);
        the vClusters of a port-forward lab through forwards of the cluster's API. `kube`: a
        client per kubeconfig (default 15 s a request, no retries)."""
        from gpulab import lab_record
        from gpulab.adapters.kube import KubeClient, RetryPolicy
        from gpulab.diagnostics import collect_existing
        from gpulab.paths import lab_dir
        from gpulab.providers.forward import ForwardingKube, forwarded_teams

        def client(path: Path) -> Any:
            return KubeClient(path, request_timeout=15, retry=RetryPolicy.disabled())

        record = lab_record.read(lab)
        owned = record.owned if record is not None else ()
        expose = str(record.cluster.get("expose") or "") if record is not None else ""
        factory = kube or client
        forwarding = ForwardingKube(factory, lab_dir(lab) / "management.kubeconfig",
                                    forwarded_teams(profile)) \
            if expose == "port-forward" else None
        try:
            collect_existing(lab, folder, owned=owned, members=profile.member_names(),
                             kube=forwarding or factory, lab_files=lab_dir(lab))
        finally:
            if forwarding is not None:
                forwarding.close()

    @contextmanager
    def reach(self, lab: str, profile: LabProfile) -> Iterator[Callable[[Path], Path] | None]:
        """A lab whose vClusters are reached by port-forward (its record's `expose`): each
        team's saved kubeconfig through a forward of the cluster's API to its vCluster
        (ForwardingKube), every forward closed after; else None (reached as saved)."""
        from gpulab import lab_record
        from gpulab.adapters.kube import KubeClient
        from gpulab.paths import lab_dir
        from gpulab.providers.forward import ForwardingKube, forwarded_teams

        record = lab_record.read(lab)
        if record is None or record.cluster.get("expose") != "port-forward":
            yield None
            return
        forwarding = ForwardingKube(KubeClient, lab_dir(lab) / "management.kubeconfig",
                                    forwarded_teams(profile))
        try:
            yield forwarding.kubeconfig
        finally:
            forwarding.close()

    def same_cluster(self, lab: str, kube: Callable[[Path], Any] | None = None) -> None:
        """UsageError (exit 2) when the kubeconfig the lab saved (management.kubeconfig) now
        reaches another cluster than lab.json records: its kube-system uid differs, as when the
        cluster was rebuilt or replaced behind the same address. Asks GET /version and the
        kube-system namespace, nothing more, so status, verify, logs, join and kubeconfig
        --port-forward read and change nothing in another cluster. HostError (exit 4) when the
        API answers but kube-system cannot be read: which cluster it is stays unknown. Nothing
        to compare, so no refusal: no kubeconfig saved yet, a record without the uid (`up`
        always writes it), an API that does not answer (the command's own reads say so).
        `kube`: the client factory (default 10 s a request, no retries)."""
        from gpulab import lab_record
        from gpulab.adapters.kube import KubeClient, RetryPolicy
        from gpulab.errors import GpulabError, HostError
        from gpulab.paths import lab_dir

        record = lab_record.read(lab)
        kept = record.cluster if record is not None else {}
        path = lab_dir(lab) / "management.kubeconfig"
        if "kube_system_uid" not in kept or not path.is_file():
            return
        client = (kube or (lambda p: KubeClient(p, request_timeout=10,
                                                retry=RetryPolicy.disabled())))(path)
        server = str(getattr(client, "server", "") or kept.get("server"))
        try:
            try:
                client.server_version()
            except GpulabError:
                return
            try:
                uid = identity_of(client, server, "", str(path)).kube_system_uid
            except GpulabError as err:
                first = (err.message.strip().splitlines() or [type(err).__name__])[0]
                raise HostError(f"lab '{lab}': which cluster {server} is cannot be told: "
                                f"reading its kube-system namespace failed ({first})",
                                hint="check the access of the kubeconfig saved in "
                                     f"{path.parent}") from None
        finally:
            close = getattr(client, "close", None)
            if callable(close):
                close()
        if uid != kept["kube_system_uid"]:
            raise UsageError(f"lab '{lab}' is in the cluster with kube-system uid "
                             f"{kept['kube_system_uid']} ({kept.get('server')}); the kubeconfig "
                             f"it saved now reaches {uid or '(none)'} at {server}: another "
                             "cluster, nothing read or changed there",
                             hint="see docs/own-cluster.md#another-cluster")

    def management(self, lab: str) -> ManagementRow:
        """The cluster as the lab's record names it; in use while the lab's kubeconfig is
        saved."""
        from gpulab import lab_record
        from gpulab.paths import lab_dir

        record = lab_record.read(lab)
        kept = record.cluster if record is not None else {}
        present = (lab_dir(lab) / "management.kubeconfig").exists()
        return ManagementRow(f"existing {kept.get('server', '?')} (context "
                             f"{kept.get('context', '?')})", "in use" if present else "missing",
                             present)

    def teardown(self, lab: str, record: LabRecord | None,
                 forget: Callable[[], list[str]]) -> Teardown:
        """UsageError (exit 2) when the kubeconfig now reaches another cluster (its
        kube-system uid differs); else exactly what lab.json says gpulab created, newest first
        (`teardown`), then `forget` (the lab's files and contexts). What was there before is
        never touched."""
        import tempfile
        from pathlib import Path

        from gpulab.paths import write_secret

        kept = record.cluster if record is not None else {}
        owned = record.owned if record is not None else ()
        file = self.choice.kubeconfig
        client, ctx_name, text = connect(self.choice)
        folder = None
        try:
            identity = identity_of(client, client.server, ctx_name, str(file or "(default)"))
            if identity.kube_system_uid != kept.get("kube_system_uid"):
                raise UsageError(f"lab '{lab}' is in the cluster with kube-system uid "
                                 f"{kept.get('kube_system_uid')} ({kept.get('server')}); the "
                                 f"kubeconfig now reaches {identity.kube_system_uid} at "
                                 f"{identity.server}: nothing removed",
                                 hint="give --kubeconfig/--context of the lab's cluster")
            folder = tempfile.TemporaryDirectory(prefix="gpulab-down-")
            path = Path(folder.name) / "cluster.kubeconfig"
            write_secret(path, text.encode())
            runtime = self.runtime
            if runtime is None and any(e.get("type") == "container" for e in owned):
                runtime = self._tools().docker()  # worker containers on this host
            helm = self.helm or self._tools().helm(None)  # uninstalls only
            result = teardown(owned, client, helm(path), runtime=runtime)
        finally:
            client.close()
            if folder is not None:
                folder.cleanup()
        result.removed += forget()
        result.kept.append(f"the cluster at {kept.get('server')} and everything gpulab found "
                           "there")
        return result


def choice_of(record: LabRecord, kubeconfig: Path | None = None, context: str | None = None
              ) -> ClusterChoice:
    """How `down` reaches a lab's existing cluster: `kubeconfig`/`context` when given, else
    those its record names."""
    from pathlib import Path

    kept = record.cluster
    recorded = kept.get("kubeconfig")
    file = kubeconfig or (Path(recorded) if recorded and recorded != "(default)" else None)
    return ClusterChoice("existing", kubeconfig=file, context=context or kept.get("context"))
