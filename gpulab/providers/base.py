"""What a provider is and what it answers (gpulab.providers).

`ClusterChoice` is the user's choice (provider, and for `existing` the kubeconfig and context);
`ClusterIdentity` is what says two kubeconfigs reach the same cluster: the API server's URL, the
context, and the uid of the `kube-system` namespace (it lives as long as the cluster does, so a
kubeconfig that now points at another cluster is told apart even at the same address).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    from gpulab.adapters.base import LabAdapters
    from gpulab.doctor import Finding
    from gpulab.engine.runner import Reporter
    from gpulab.engine.step import Step
    from gpulab.netcalc import AddressRange
    from gpulab.profile.base import LabProfile

__all__ = [
    "RBAC",
    "Access",
    "AddressNeed",
    "AddressRanges",
    "ClusterChoice",
    "ClusterFacts",
    "ClusterIdentity",
    "ClusterNeeds",
    "ClusterProvider",
    "ExistingNeeds",
    "FakeNode",
    "GpuNode",
    "Ground",
    "HostTools",
    "LabCluster",
    "ManagementRow",
    "NodePool",
    "PodForward",
    "PortNeed",
    "ProviderPackage",
    "Session",
    "StackSide",
    "Teardown",
    "chart_cluster_access",
    "release_access",
]


@dataclass
class Teardown:
    """What `down` removed and what (if anything) is left."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how it was done (kind: no kind binary)


@dataclass(frozen=True)
class ClusterChoice:
    provider: str  # kind | existing
    kubeconfig: Path | None = None  # existing: None = $KUBECONFIG, else ~/.kube/config
    context: str | None = None  # existing: None = the kubeconfig's current context
    expose: str = "auto"  # existing: auto | LoadBalancer | NodePort
    node_address: str | None = None
    helm_parallel: int = 4  # existing: Helm installs at once (teams install concurrently)


@dataclass(frozen=True)
class NodePool:
    """Worker nodes a stack needs in the cluster, each carrying `labels` from the moment it
    exists (vcluster-kai's GPU pool)."""

    name: str
    count: int
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodForward:
    """Where a port need is served inside the cluster, for a provider that reaches it through
    the cluster's API (a port-forward) when nothing else answers: the newest live pod in
    `namespace` carrying every label of `labels`, at `port`."""

    namespace: str
    labels: tuple[tuple[str, str], ...]
    port: int

    @property
    def selector(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.labels)


@dataclass(frozen=True)
class PortNeed:
    """An HTTPS NodePort this host must reach (vcluster-kai: a team's vCluster API), at
    `host_port` on `address` of this host; `member`: the lab member whose saved kubeconfig
    names it; `forward`: the pod that serves it, for a port-forward."""

    name: str
    node_port: int
    host_port: int
    address: str = "127.0.0.1"
    member: str = ""
    forward: PodForward | None = None


@dataclass(frozen=True)
class AddressNeed:
    """LoadBalancer addresses the stack hands out itself (kamaji-hami's MetalLB pool): `size`
    addresses ending `offset_from_top` below the top of the cluster network's IPv4 subnet;
    `what` names them in plan's notes ('MetalLB range')."""

    what: str
    size: int
    offset_from_top: int


@dataclass(frozen=True)
class ClusterNeeds:
    """What a stack asks of the cluster, pure, from its profile (the stack's `cluster_needs`):
    node pools, host ports, LoadBalancer addresses. The provider meets them (kind renders its
    cluster config from them: providers.kind.config) and answers `ClusterFacts`; the stack
    never says how."""

    pools: tuple[NodePool, ...] = ()
    ports: tuple[PortNeed, ...] = ()
    load_balancer: AddressNeed | None = None


class AddressRanges(Protocol):
    """Where the addresses of an `AddressNeed` come from (kind: its Docker network, and the
    range each lab on the host recorded: providers.kind.network)."""

    def planned(self) -> AddressRange | None:
        """The range, when it is known before `up` runs (None: pending)."""
        ...

    @property
    def pending(self) -> str:
        """Why it is not known yet ('' when it is, or nothing more is known)."""
        ...

    def resolve(self, adapters: LabAdapters) -> AddressRange:
        """The range, during `up` (HostError when it cannot be had)."""
        ...

    def keep(self, addresses: AddressRange) -> None:
        """Remember `addresses` as the lab's, once they are in use."""
        ...


@dataclass(frozen=True)
class GpuNode:
    """A node that advertises GPUs (nvidia.com/gpu), as found."""

    name: str
    gpus: int
    product: str
    source: str  # what advertises the GPUs: GPU Operator, device plugin, fake-gpu-operator
    # why a scheduler places nothing there now (cordoned, a NotReady or pressure condition:
    # gpulab.cluster.rules.kai_not_ready); () when it is schedulable
    not_ready: tuple[str, ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()  # gpulab.taints.blocking_taints
    mig_enabled: bool = False  # MIG as KAI tells it (node-role.kubernetes.io/mig-enabled, mig-*)
    mig_strategy: str = ""  # the nvidia.com/mig.strategy label: single | mixed | "" (none)


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
class ClusterFacts:
    """What the provider answers for a stack's `ClusterNeeds` before anything is created (plan
    shows what is not known yet as pending); a stack builds its one plan from these facts,
    never from which provider answered them:

    - `pool_nodes`: each pool's node names; `management_nodes`: the nodes this host loads
      images into (() : none it can); `urls`: where this host reaches each port need;
      `lb_range`: the LoadBalancer addresses the lab hands out itself (None: none, the
      cluster has its own or none was needed);
    - `shared`: the cluster is not the lab's alone; the lab creates its namespaces and records
      everything it creates (down removes exactly that), and what is installed there already
      (`found`: the stack's own read of the cluster, ExistingNeeds.read) is reused;
    - `gpus`: `pool`, simulated GPUs the lab installs on its pool's nodes; `found`, the GPUs
      the cluster's nodes advertise (`gpu_nodes`), plus fake ones on nodes named for them
      (`fake_nodes`);
    - `expose`: how this host reaches the APIs the stack publishes: `published` (host ports
      the provider maps), `LoadBalancer`, `NodePort` (on `node_address`) or `port-forward`;
    - `workers`: `containers`, worker containers on this host; `join`, machines the user
      joins."""

    pool_nodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    management_nodes: tuple[str, ...] = ()
    urls: Mapping[str, str] = field(default_factory=dict)
    lb_range: AddressRanges | None = None
    shared: bool = False
    gpus: str = "pool"
    gpu_nodes: tuple[GpuNode, ...] = ()
    fake_nodes: tuple[FakeNode, ...] = ()
    expose: str = "published"
    node_address: str | None = None
    workers: str = "containers"
    found: Any = None
    # existing clusters: each RuntimeClass as (name, handler); None when they could not be read
    runtime_classes: tuple[tuple[str, str], ...] | None = ()

    def nodes(self, pool: str) -> tuple[str, ...]:
        """The nodes of `pool` (a `NodePool`'s name)."""
        return tuple(self.pool_nodes.get(pool, ()))

    def url_for(self, port: PortNeed) -> str:
        """Where this host reaches `port`."""
        return self.urls[port.name]


@dataclass(frozen=True)
class Access:
    """One thing the user must be allowed in the cluster (provider existing asks it as a
    SelfSubjectAccessReview's `spec.resourceAttributes`); `text` names it in a refusal."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None
    subresource: str = ""  # e.g. portforward (v1_resource_attributes.py: `subresource`)

    @property
    def text(self) -> str:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        what += f"/{self.subresource}" if self.subresource else ""
        return f"{self.verb} {what}" + (f" in {self.namespace}" if self.namespace else "")


RBAC = "rbac.authorization.k8s.io"
# What a chart's release creates in its namespace (both stacks' charts; a stack adds its own).
RELEASE_OBJECTS: tuple[tuple[str, str], ...] = (
    ("", "services"), ("", "serviceaccounts"), ("", "configmaps"), ("apps", "deployments"),
    ("apps", "statefulsets"), (RBAC, "roles"), (RBAC, "rolebindings"))


def chart_cluster_access() -> list[Access]:
    """The cluster-wide rights a chart install needs: its CRDs, its RBAC, its webhooks."""
    access = [Access(verb, "apiextensions.k8s.io", "customresourcedefinitions")
              for verb in ("create", "delete")]
    access += [Access("create", RBAC, r) for r in ("clusterroles", "clusterrolebindings")]
    access += [Access("create", "admissionregistration.k8s.io", r)
               for r in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")]
    return access


def release_access(namespace: str, objects: Sequence[tuple[str, str]] = RELEASE_OBJECTS
                   ) -> list[Access]:
    """The rights a Helm release in `namespace` needs: its release Secrets (create, get,
    delete) and `create` of each (group, resource) in `objects`."""
    access = [Access(verb, "", "secrets", namespace) for verb in ("create", "get", "delete")]
    return access + [Access("create", group, r, namespace) for group, r in objects]


@dataclass(frozen=True)
class ExistingNeeds:
    """What a stack's plan will create in a cluster gpulab did not make (the stack's
    `existing_needs`): the questions of provider existing's read-only preflight."""

    namespaces: tuple[str, ...]
    queues: tuple[str, ...]
    access: tuple[Access, ...]
    owned_before: tuple[dict[str, Any], ...] = field(default=())  # this lab's, from lab.json
    fake_nodes: tuple[str, ...] = ()  # nodes that get fake GPUs (cluster.fake_gpu_nodes)
    fake_labels: tuple[tuple[str, str], ...] = ()  # the labels each of them gets
    absent: tuple[tuple[str, str, str], ...] = ()  # (apiVersion, kind, name) that must not exist
    read: Callable[[Any], Any] | None = None  # the stack's own read-only questions (GETs)
    # (namespace, Pod Security level its pods need, what needs it): each the lab labels when it
    # creates it (stacks.common.LabNamespaces); one it made before is read again (pod_security)
    pod_security: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class ClusterIdentity:
    server: str
    context: str
    kubeconfig: str
    kube_system_uid: str

    def to_record(self) -> dict[str, Any]:
        return {"provider": "existing", **asdict(self)}


@dataclass(frozen=True)
class ManagementRow:
    """`gpulab status`'s management row, as the provider sees its cluster."""

    cluster: str  # kind: the kind cluster's name; existing: "existing <server> (context <c>)"
    state: str  # kind: the node container's state; existing: in use | missing
    present: bool  # there is a cluster to read (kind: its node container; existing: the
    # lab's saved management.kubeconfig)


@dataclass(frozen=True)
class LabCluster:
    """What a built lab's cluster is, as its provider answers it (`ClusterProvider.lab_cluster`),
    for what a stack does after `up` (verify, status): where the GPUs are and how workers come.

    - `gpus`: `pool`, the lab's own GPU pool (nodes it made and labelled, simulated GPUs); or
      `found`, whatever nodes of the cluster advertise nvidia.com/gpu (real, or faked on
      nodes the user named), which verify sizes its pods from;
    - `workers`: `containers`, worker containers gpulab runs on this host; or `join`,
      machines the user joins (`gpulab join`), whose cards only the machine registers."""

    gpus: str = "pool"
    workers: str = "containers"


@dataclass(frozen=True)
class HostTools:
    """How a provider reaches this host's tools; core hands in its own functions (the names
    the CLI and tests use): the Docker endpoint, the engine (`docker(endpoint=...)`), a
    read-only view of it (`reader(timeout=...)`), Helm (`helm(lab)`: a gateway factory whose
    installs carry the lab's labels, `helm(None)` one without, or HostError when helm is not
    installed) and the kind binary driving an endpoint
    (`kind(endpoint)`, None when kind is not installed); `host_checks`: doctor's checks of this
    host for a kind lab as core names them (providers.kind.preflight; None: that one)."""

    endpoint: Callable[[], Any]
    docker: Callable[..., Any]
    reader: Callable[..., Any]
    helm: Callable[[str | None], Callable[[Path], Any]]
    kind: Callable[[Any], Any] | None = None
    host_checks: Callable[..., list[Finding]] | None = None


class StackSide(Protocol):
    """What a provider asks of the lab's stack (a gpulab.stacks.Stack offers it; providers
    import no stack)."""

    def existing_needs(self, profile: Any, lab: str, owned_before: Any) -> ExistingNeeds: ...

    def existing_problems(self, profile: Any, facts: Any) -> list[str]: ...

    def build_steps(self, profile: Any, lab: str, facts: Any) -> list[Step]: ...

    def cluster_needs(self, profile: Any) -> ClusterNeeds: ...


@dataclass
class Ground:
    """What the provider found before anything is created: the facts the stack builds its
    steps from, the provider's own steps (first in the plan), a note for `plan`, why `up`
    would refuse ([]: it would not), and the provider's own reading of the cluster (`survey`,
    for doctor; None when it has none beyond `facts`)."""

    facts: ClusterFacts
    steps: list[Step] = field(default_factory=list)
    note: str = ""
    problems: list[str] = field(default_factory=list)
    survey: Any = None


@dataclass
class Session:
    """What `up` runs: `steps` on `adapters`; `close` when the run is over."""

    steps: list[Step]
    adapters: LabAdapters
    close: Callable[[], None] = field(default=lambda: None)


class ProviderPackage(Protocol):
    """What a provider's package offers at module level, found through providers.registry:
    whether a profile (and `up`'s `--kubeconfig/--context`) chooses it (`claims`: its choice, or
    None), its choice again for a lab from what lab.json recorded (`restore`; UsageError when
    flags it cannot take are given), the provider itself (`make`), the lab a container of
    this host belongs to when only the provider labels it (`container_lab`, '' for none), and
    the one line `gpulab labs` prints for what its `where` answered (`cluster_text`)."""

    def claims(self, profile: LabProfile, kubeconfig: Path | None, context: str | None
               ) -> ClusterChoice | None: ...

    def restore(self, record: Any, kubeconfig: Path | None = None, context: str | None = None,
                profile: LabProfile | None = None) -> ClusterChoice: ...

    def make(self, choice: ClusterChoice, host: HostTools | None = None, **given: Any
             ) -> ClusterProvider: ...

    def container_lab(self, labels: Mapping[str, str]) -> str: ...

    def cluster_text(self, where: Mapping[str, str]) -> str: ...


class ClusterProvider(Protocol):
    """How a lab's cluster comes to be and goes again (kind's providers.Provider is the model).

    - `ground`: read-only, what the cluster (or host) is, for `plan` and `up` alike; `probe`
      False: look at nothing outside gpulab (plan's pending values);
    - `open`: `up`'s refusals before anything is created (`preflight`), then the adapters and
      every step to run (the provider's own first, then the stack's on the ground found);
      `built`: after a run that built something (kind records what Docker holds for the lab);
    - `connect`: what an existing lab's commands (status, logs, down) need from this host
      first (kind: the Docker engine and the kind binary driving it; HostError when Docker
      does not answer);
    - `exists`: the lab has something here (a folder, or what the provider made for it);
    - `management`: status's management row; `machines`: the container engine status lists the
      lab's own containers from (None: the cluster's API says what the lab has);
    - `doctor`: `gpulab doctor`'s findings (ok/warn/fail, each with its fix) for what this lab
      needs of this host and its cluster (kind: Docker, the node image, privileged containers,
      kind, helm...; existing: helm, the kubeconfig, the cluster's API and read-only preflight,
      and Docker only for worker containers on this host); reads only, but kind pulls the node
      image unless `pull` is False;
    - `logs`: the diagnostics bundle of what the lab has, written into a folder;
    - `reach`: for `verify` and `status`, how this host reaches the kubeconfigs the lab saved
      (`needs`: the stack's ClusterNeeds, whose port needs say which pod serves each), for as long
      as the context lasts: None, as saved (kind; an existing cluster's LoadBalancer or
      NodePort), else a function giving each one's reachable copy (existing, port-forward: a
      team's kubeconfig through a forward of the cluster's API, closed after);
    - `same_cluster`: before status, verify, logs, join or kubeconfig --port-forward reach
      the lab through the kubeconfigs it saved, UsageError when they now reach another
      cluster than the lab was built in (existing: the kube-system uid differs; kind: nothing
      to check);
    - `teardown`: what gpulab made goes again (`forget` removes the lab's files and merged
      contexts, once, after what the provider removed itself).

    - `tools`: the programs `doctor --install-tools` installs for it;
    - `where`: where the lab's cluster is, as `gpulab labs -o json` shows it (no credential);
      `lab_state`: `labs`' state of the lab (ready | partial | broken | unreachable | unknown)
      from its containers on this host (`observed` False: Docker did not answer), its saved
      kubeconfigs and members;
    - `lab_cluster`: what the built lab's cluster is (`LabCluster`), for verify and status;
      `forwarded`: the lab's member APIs answer only through a forward of the cluster's API
      (its saved kubeconfigs name ports nothing listens on until `kubeconfig --port-forward`);
    - `refuse_join`, `refuse_forward`: UsageError, in the provider's words, when machines
      cannot join this lab (`gpulab join`) or its APIs are not reached by port-forward;
      `open_forward`: `kubeconfig TEAM --port-forward`'s forward through the cluster's API.

    `management/cluster` is the provider's step: providers.kind.ManagementCluster (from the
    stack's kind config), providers.existing.ExistingCluster."""

    name: str
    tools: tuple[str, ...]

    def where(self, lab: str) -> dict[str, str]: ...

    def lab_state(self, lab: str, containers: Sequence[Any], kubeconfigs: Sequence[str],
                  members: Sequence[str], *, observed: bool) -> str: ...

    def lab_cluster(self, lab: str, profile: LabProfile) -> LabCluster: ...

    def forwarded(self, lab: str) -> bool: ...

    def refuse_join(self, lab: str) -> None: ...

    def refuse_forward(self, lab: str, member: str) -> None: ...

    def open_forward(self, host: Any, forward: PodForward, saved: Path,
                     **options: Any) -> Any: ...

    def ground(self, profile: LabProfile, lab: str, stack: StackSide, *, probe: bool
               ) -> Ground: ...

    def open(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
             adapters: LabAdapters | None, preflight: bool) -> Session: ...

    def built(self, lab: str, adapters: LabAdapters) -> None: ...

    def doctor(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
               pull: bool) -> list[Finding]: ...

    def connect(self) -> None: ...

    def exists(self, lab: str) -> bool: ...

    def management(self, lab: str) -> ManagementRow: ...

    def machines(self) -> Any: ...  # gpulab.adapters.base.ContainerRuntime | None

    def logs(self, lab: str, folder: Path, profile: LabProfile, *,
             kube: Callable[[Path], Any] | None = None, needs: ClusterNeeds | None = None
             ) -> None: ...

    def reach(self, lab: str, profile: LabProfile, needs: ClusterNeeds | None = None
              ) -> AbstractContextManager[Callable[[Path], Path] | None]: ...

    def same_cluster(self, lab: str, kube: Callable[[Path], Any] | None = None) -> None: ...

    def teardown(self, lab: str, record: Any,  # gpulab.lab_record.LabRecord | None (its
                 forget: Callable[[], list[str]]) -> Teardown: ...  # import would be a cycle)
