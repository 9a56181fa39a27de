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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.errors import AdapterError, UsageError
from gpulab.providers.base import ClusterChoice, ClusterIdentity, Teardown

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import Step, StepContext

__all__ = [
    "HELM_PARALLEL",
    "Access",
    "BoundedHelm",
    "ExistingCluster",
    "ExistingFacts",
    "GpuNode",
    "KaiFound",
    "Needs",
    "Owning",
    "connect",
    "identity_of",
    "observe",
    "owned_entries",
    "teardown",
]

GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
CRD_API = "apiextensions.k8s.io/v1"
HELM_PARALLEL = 4  # Helm installs at once by default (cluster.helm_parallel)


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
    195: the chart's `global.gpuSharing`), None when unreadable."""

    namespace: str
    version: str
    gpu_sharing: bool | None


@dataclass(frozen=True)
class Access:
    verb: str
    group: str
    resource: str
    namespace: str | None = None

    @property
    def text(self) -> str:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {what}" + (f" in {self.namespace}" if self.namespace else "")


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
    expose: str = "NodePort"

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


def _gpu_nodes(nodes: list[dict[str, Any]]) -> tuple[GpuNode, ...]:
    found = []
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        try:
            gpus = int(str(allocatable.get(GPU_RESOURCE, "0")))
        except ValueError:
            gpus = 0
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


def _kai(kube: KubeGateway) -> KaiFound | None:
    for dep in kube.list_objects("apps/v1", "Deployment"):
        if dep["metadata"]["name"] != "kai-operator":
            continue
        containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "containers") or []
        image = next((str(c.get("image", "")) for c in containers
                      if c.get("name") == "operator"), "")
        version = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
        config = kube.get("kai.scheduler/v1", "Config", "kai-config") or {}
        sharing = ((config.get("spec") or {}).get("admission") or {}).get("gpuSharing")
        return KaiFound(str(dep["metadata"].get("namespace", "")), version,
                        sharing if isinstance(sharing, bool) else None)
    return None


def _allowed(kube: Any, access: Access) -> bool:
    attributes: dict[str, Any] = {"verb": access.verb, "group": access.group,
                                  "resource": access.resource}
    if access.namespace:
        attributes["namespace"] = access.namespace
    answer = kube.create({"apiVersion": "authorization.k8s.io/v1",
                          "kind": "SelfSubjectAccessReview",
                          "spec": {"resourceAttributes": attributes}})
    return bool((answer.get("status") or {}).get("allowed"))


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


@dataclass(frozen=True)
class Needs:
    """What a stack's plan will create in the cluster (its preflight's questions)."""

    namespaces: tuple[str, ...]
    queues: tuple[str, ...]
    access: tuple[Access, ...]
    owned_before: tuple[dict[str, Any], ...] = field(default=())  # this lab's, from lab.json


def observe(kube: Any, identity: ClusterIdentity, needs: Needs, *, expose: str = "auto",
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
    chosen = expose if expose != "auto" else ("LoadBalancer" if balanced else "NodePort")
    denied = tuple(a.text for a, ok in zip(needs.access,
                                           _at_once(lambda a: _allowed(kube, a), needs.access),
                                           strict=True) if not ok)
    kai = _kai(kube)
    if kai is not None and ("Namespace", kai.namespace) in ours:
        kai = None  # the KAI this lab installed (an earlier `up`), not one found there
    return ExistingFacts(identity=identity, version=version, default_storage_class=default,
                         gpu_nodes=_gpu_nodes(nodes), node_address=_node_address(nodes,
                                                                                 node_address),
                         load_balancer=balanced, kai=kai, namespaces_found=namespaces,
                         queues_found=queues, denied=denied, expose=chosen)


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

        lab_record.record_cluster(ctx.lab, self.identity.to_record())
        write_secret(ctx.adapters.management_kubeconfig(), self.kubeconfig_text.encode())


def owned_entries(step: Step) -> list[dict[str, Any]]:
    """What `step` creates in the cluster, as lab.json's `owned` entries."""
    out: list[dict[str, Any]] = []
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
                        "namespace": meta.get("namespace")})
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


def teardown(owned: tuple[dict[str, Any], ...], kube: KubeGateway, helm: Any) -> Teardown:
    """Remove what lab.json says gpulab created, newest first; then check it is gone."""
    result = Teardown()
    for entry in reversed(owned):
        if entry.get("type") == "helm-release":
            helm.uninstall(entry["name"], entry["namespace"])
            result.removed.append(f"helm release {entry['namespace']}/{entry['name']}")
        elif entry.get("type") == "object" and kube.delete(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            where = f"{entry['namespace']}/" if entry.get("namespace") else ""
            result.removed.append(f"{entry['kind']} {where}{entry['name']}")
    for entry in owned:
        if entry.get("type") == "object" and entry["kind"] != "Namespace" and kube.get(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            result.leftovers.append(f"{entry['kind']} {entry['name']}")
    return result
