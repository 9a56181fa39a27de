"""Provider `kind` (the default): the lab's management cluster is a kind cluster on this host's
Docker engine, and what the lab runs beside it (kamaji-hami's tenant workers) are containers
labelled for the lab.

It owns what is kind's or Docker's about a lab: the kind binary set to drive the same engine as
gpulab (`kind_cli`), the real adapters of a kind lab (`lab_adapters`), doctor's host checks as
`up`'s preflight (`preflight`, pulling the node image as a step of its own), what Docker holds for
a lab (`lab_exists`, `created`), status's management row (the control-plane node container),
`logs` (`KindProvider.logs`) and `down` (`KindProvider.teardown`: kind delete, then a sweep by
label, then what is left), each after `connect` (Docker and kind on one endpoint); `plan`'s
host facts (`ground`), `up`'s preflight and adapters (`open`), and step `management/cluster`
(`ManagementCluster`: `kind create cluster` from the kind config providers.kind.config renders
for the stack's `cluster_needs`). Imports no stack.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.errors import GpulabError, HostError, PreflightError
from gpulab.providers.base import (
    ClusterChoice,
    ClusterFacts,
    Ground,
    LabCluster,
    ManagementRow,
    Session,
    Teardown,
)
from gpulab.providers.kind.config import kind_config

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime, DockerReader, LabAdapters
    from gpulab.adapters.base import KindProvider as KindBinary
    from gpulab.adapters.docker_endpoint import DockerEndpoint
    from gpulab.adapters.kind import KindCli
    from gpulab.doctor import Finding
    from gpulab.engine.runner import Reporter
    from gpulab.engine.step import Step, StepContext
    from gpulab.lab_record import LabRecord
    from gpulab.netcalc import AddressRange
    from gpulab.profile.base import LabProfile
    from gpulab.providers.base import ClusterNeeds, HostTools, PodForward, StackSide

__all__ = [
    "KIND_NODE_LABEL",
    "PULL_STEP",
    "KindProvider",
    "ManagementCluster",
    "claims",
    "cluster_facts",
    "cluster_step",
    "cluster_text",
    "container_lab",
    "created",
    "kind_cli",
    "kind_lab",
    "kind_steps",
    "lab_adapters",
    "lab_exists",
    "make",
    "preflight",
    "restore",
    "spec_problems",
]

KIND_NODE_LABEL = "io.x-k8s.kind.cluster"  # what kind labels its node containers with
PULL_STEP = "preflight/node-image"


def _endpoint() -> DockerEndpoint:
    from gpulab.adapters.docker_endpoint import resolve_endpoint

    return resolve_endpoint()


def kind_cli(endpoint: DockerEndpoint, *, kubeconfig: Path | None = None,
             required: bool = False) -> KindCli | None:
    """The kind binary (PATH or gpulab's cache) set to drive the engine at `endpoint`: its
    docker CLI gets DOCKER_HOST (and the context's TLS) and no DOCKER_CONTEXT, so kind and
    gpulab never talk to two engines. None when kind is not installed (HostError if
    `required`)."""
    from gpulab.adapters.kind import KindCli
    from gpulab.tools import find_tool

    binary = find_tool("kind")
    if binary is None:
        if required:
            raise HostError("kind not found on PATH or in gpulab's cache",
                            hint="run gpulab doctor --install-tools")
        return None
    return KindCli(binary=binary, kubeconfig=kubeconfig, env=endpoint.client_env())


def lab_adapters(profile: LabProfile, lab: str, runtime: ContainerRuntime,
                 endpoint: DockerEndpoint | None = None) -> LabAdapters:
    """The real adapters for a lab (kind, helm and the Kubernetes client by kubeconfig path);
    kind drives `endpoint`, the engine `runtime` talks to."""
    from gpulab.adapters.base import LabAdapters
    from gpulab.adapters.helm import PyHelm3Gateway
    from gpulab.adapters.kind import KindCli
    from gpulab.adapters.kube import KubeClient
    from gpulab.manifests import fetch_manifest
    from gpulab.naming import chart_labels
    from gpulab.paths import HELM_POST_RENDER, lab_dir
    from gpulab.reach import tcp_dial
    from gpulab.tools import find_tool

    kind_binary = find_tool("kind")
    helm_binary = find_tool("helm")
    if kind_binary is None or helm_binary is None:
        missing = " and ".join(n for n, b in (("kind", kind_binary), ("helm", helm_binary))
                               if b is None)
        raise HostError(f"{missing} not found on PATH or in gpulab's cache",
                        hint="run gpulab doctor --install-tools")
    folder = lab_dir(lab)  # created by the first file written into it (mode 0700)
    endpoint = endpoint or _endpoint()
    return LabAdapters(
        runtime=runtime,
        kind=KindCli(binary=kind_binary, kubeconfig=folder / "management.kubeconfig",
                     env=endpoint.client_env()),
        kube=KubeClient,
        helm=lambda path: PyHelm3Gateway(path, executable=helm_binary,
                                         labels=chart_labels(lab),
                                         folder=folder / HELM_POST_RENDER),
        fetch=fetch_manifest,
        lab_dir=folder,
        dial=tcp_dial,
    )


def preflight(profile: LabProfile, lab: str, runtime: ContainerRuntime | None,
              docker_error: str = "", *, endpoint: DockerEndpoint | None = None,
              pull: bool = False, report: Reporter | None = None) -> list[Finding]:
    """Doctor's findings for this profile and lab. With `pull`, the profile's node image is
    pulled first when it is missing (kind needs it anyway; `report` shows the pull as a step),
    so the privileged probe runs the node's own image with the node's own options."""
    from gpulab.doctor import diagnose, observe_host, reported_pull
    from gpulab.tools import find_tool

    clusters: tuple[str, ...] = ()
    kind = kind_cli(endpoint or _endpoint()) if runtime is not None else None
    if kind is not None:
        try:
            clusters = tuple(kind.clusters())
        except GpulabError:
            clusters = ()
    pull_image = reported_pull(runtime, report, PULL_STEP) if pull and runtime is not None \
        else None
    snapshot = observe_host(runtime, docker_error, kind_binary=find_tool("kind"),
                            helm_binary=find_tool("helm"), kind_clusters=clusters,
                            probe_images=(profile.management.node_image,), pull=pull_image,
                            host_ports=profile.host_ports(), endpoint=endpoint)
    return diagnose(snapshot, profile, lab)


def _platform_notes(profile: LabProfile, reader: DockerReader) -> list[str]:
    """`plan`'s lines on the profile's images against the engine's platform (one per image)."""
    from gpulab.platforms import verdict

    try:
        architecture = reader.architecture()
    except GpulabError as err:
        return [f"image platforms unknown, because Docker's info could not be read ({err})"]
    return verdict(profile, architecture).plan_notes()


def _selectors(lab: str) -> tuple[dict[str, str], dict[str, str]]:
    """What Docker holds for the lab: gpulab's lab label, and kind's label of its nodes."""
    from gpulab.naming import LABEL_LAB, kind_cluster_name

    return {LABEL_LAB: lab}, {KIND_NODE_LABEL: kind_cluster_name(lab)}


def kind_lab(labels: Mapping[str, str]) -> str:
    """The lab whose kind cluster a container is a node of, by kind's label ('' for a kind
    cluster gpulab did not name: naming.kind_cluster_name)."""
    cluster = str(labels.get(KIND_NODE_LABEL, ""))
    return cluster.removeprefix("gpulab-") if cluster.startswith("gpulab-") else ""


def lab_exists(lab: str, runtime: ContainerRuntime) -> bool:
    """The lab has a folder, or Docker holds something labelled for it (a leftover)."""
    from gpulab.paths import lab_folder_exists

    if lab_folder_exists(lab):
        return True
    for labels in _selectors(lab):
        if runtime.containers(labels) or runtime.networks(labels) or runtime.volumes(labels):
            return True
    return False


def created(lab: str, runtime: ContainerRuntime) -> dict[str, list[str]]:
    """The Docker objects labelled for the lab, and its kind cluster when a node carries it."""
    from gpulab.naming import kind_cluster_name

    cluster = kind_cluster_name(lab)
    found: dict[str, set[str]] = {"kind_clusters": set(), "containers": set(),
                                  "networks": set(), "volumes": set()}
    for labels in _selectors(lab):
        for container in runtime.containers(labels):
            found["containers"].add(container.name)
            if container.labels.get(KIND_NODE_LABEL) == cluster:
                found["kind_clusters"].add(cluster)
        found["networks"].update(n.name for n in runtime.networks(labels))
        found["volumes"].update(runtime.volumes(labels))
    return {kind: sorted(names) for kind, names in found.items()}


@dataclass
class ManagementCluster:
    """Step `management/cluster`: the kind management cluster from its kind config
    (`config`; kubeconfig saved 0600)."""

    config: dict[str, Any]
    lab: str
    name: str = "management/cluster"
    title: str = "Creating management cluster (kind)"
    requires: tuple[str, ...] = ()

    @property
    def cluster(self) -> str:
        from gpulab.naming import kind_cluster_name

        return kind_cluster_name(self.lab)

    def describe(self) -> list[Artifact]:
        return [
            Artifact("kind-cluster", self.cluster, self.config),
            Artifact("file", "management.kubeconfig", {"mode": "0600"}),
        ]

    def satisfied(self, ctx: StepContext) -> bool:
        adapters: LabAdapters = ctx.adapters
        if self.cluster not in adapters.kind.clusters():
            return False
        node = adapters.runtime.get(f"{self.cluster}-control-plane")
        if node is None or not node.running:
            raise HostError(
                f"kind cluster '{self.cluster}' exists but its node is not running",
                hint=f"docker start {self.cluster}-control-plane, or gpulab down then gpulab up",
            )
        self._save_kubeconfig(ctx, adapters)
        return True

    def apply(self, ctx: StepContext) -> None:
        adapters: LabAdapters = ctx.adapters
        ctx.note(f"kind create cluster --name {self.cluster}")
        adapters.kind.create(self.cluster, self.config)
        self._save_kubeconfig(ctx, adapters)

    def _save_kubeconfig(self, ctx: StepContext, adapters: LabAdapters) -> None:
        """Save kind's kubeconfig, then prove this host reaches the API server it names
        (gpulab.reach), before any step talks to it."""
        import yaml

        from gpulab.docker_engines import route_text
        from gpulab.paths import write_secret
        from gpulab.reach import engine_of, host_port, prove, route_fix

        text = adapters.kind.kubeconfig(self.cluster)
        write_secret(adapters.management_kubeconfig(), text.encode())
        if adapters.dial is None:
            return
        config = yaml.safe_load(text) or {}
        servers = [str((c.get("cluster") or {}).get("server") or "")
                   for c in config.get("clusters") or [] if isinstance(c, dict)]
        if not servers or not servers[0]:
            return
        engine = engine_of(adapters.runtime)
        node = f"{self.cluster}-control-plane"
        prove(adapters.dial, servers[0], "the management cluster's API server", engine,
              route_fix(engine, node, host_port(servers[0])[1]))
        ctx.note(f"this host reaches the management API at {servers[0]}"
                 + (f" ({engine.label}: {route_text(engine)})" if engine else ""))


def kind_steps(profile: LabProfile, lab: str, stack: StackSide, facts: ClusterFacts
               ) -> list[Step]:
    """Every step of `up` on kind: `management/cluster` for what the stack needs, then the
    stack's steps on `facts` (`cluster_facts`)."""
    return [cluster_step(profile, lab, stack), *stack.build_steps(profile, lab, facts)]


def cluster_facts(profile: LabProfile, lab: str, needs: ClusterNeeds,
                  runtime: DockerReader | None, *, lb_range: AddressRange | None = None
                  ) -> ClusterFacts:
    """What a stack may rely on from the kind cluster that meets `needs`: the names kind gives
    the pools' nodes and the control-plane node, the URL of each port on this host, and the
    LoadBalancer range on the kind network as Docker shows it (`runtime` None: pending until
    `up`; `lb_range` fixes it outright: tests, benchmarks)."""
    from gpulab.providers.kind.config import control_plane_node, node_names, port_url
    from gpulab.providers.kind.network import KindAddresses, observe

    need = needs.load_balancer
    network = profile.management.network
    addresses = None if need is None else (
        KindAddresses(need, lab, network, fixed=lb_range) if lb_range is not None
        else observe(need, lab, network, runtime))
    return ClusterFacts(pool_nodes=node_names(lab, needs),
                        management_nodes=(control_plane_node(lab),),
                        urls={port.name: port_url(port) for port in needs.ports},
                        lb_range=addresses)


def _route_note(reader: DockerReader, needs: ClusterNeeds) -> str:
    """`plan`'s word on how this host reaches the APIs the lab publishes, on this engine (the
    reader's GET /info and /version: gpulab.docker_engines); '' when nothing is published."""
    import sys

    from gpulab.docker_engines import classify, route_text
    from gpulab.providers.kind.config import port_url

    if not needs.ports:
        return ""
    urls = ", ".join(f"{port.name} {port_url(port)}" for port in needs.ports)
    engine = getattr(reader, "engine", None)
    try:
        info = engine() if callable(engine) else None
    except GpulabError:
        info = None
    if info is None:
        return f"route: {urls}, ports published on 127.0.0.1 (engine not known)"
    found = classify(info, local=True, host_os=sys.platform)  # the reader is a unix socket
    return f"route on {found.label}: {urls}, {route_text(found)}"


def cluster_step(profile: LabProfile, lab: str, stack: StackSide) -> ManagementCluster:
    """`management/cluster`: the kind cluster that meets the stack's `cluster_needs`."""
    return ManagementCluster(kind_config(profile, lab, stack.cluster_needs(profile)), lab)


class KindProvider:
    """The kind cluster of a lab on this host's Docker engine: `runtime` talks to it (None:
    connected through `host` when `up` needs it) and `kind` is the kind binary set to drive the
    same engine (None: not installed; `down` then sweeps by label)."""

    name = "kind"
    tools = ("kind", "helm")

    def __init__(self, host: HostTools | None = None, *, runtime: ContainerRuntime | None = None,
                 kind: KindBinary | None = None) -> None:
        self.host = host
        self.runtime = runtime
        self.kind = kind
        self.endpoint: DockerEndpoint | None = None

    def _docker(self) -> ContainerRuntime:
        if self.runtime is None:  # pragma: no cover - every caller connects first
            raise HostError("the kind provider needs the Docker engine")
        return self.runtime

    def _tools(self) -> HostTools:
        if self.host is None:  # pragma: no cover - core hands its tools to plan and up
            raise HostError("the kind provider was given no way to reach this host's tools")
        return self.host

    def ground(self, profile: LabProfile, lab: str, stack: StackSide, *, probe: bool
               ) -> Ground:
        """The stack's cluster facts from a read-only look at Docker (`probe`); without Docker,
        the host-dependent ones are pending and the note says why."""
        runtime: DockerReader | None = None
        note = ""
        if probe:
            try:
                runtime = self._tools().reader(timeout=3)
            except GpulabError as err:
                note = f"Docker not reachable ({err}); host-dependent values are shown as pending"
        needs = stack.cluster_needs(profile)
        facts = cluster_facts(profile, lab, needs, runtime)
        if runtime is not None and not note and needs.load_balancer and facts.lb_range \
                and facts.lb_range.pending:  # what Docker could not tell yet
            note = f"{needs.load_balancer.what} pending: {facts.lb_range.pending}"
        if runtime is not None:
            route = _route_note(runtime, needs)
            note = "\n".join(line for line in (note, route, *_platform_notes(profile, runtime))
                              if line)
        return Ground(facts, [cluster_step(profile, lab, stack)], note)

    def open(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
             adapters: LabAdapters | None, preflight: bool) -> Session:
        """Without `adapters`: the Docker engine (one endpoint for gpulab's client and kind),
        doctor's host checks unless `preflight` is False, then the real adapters. The stack's
        steps (`kind_steps`) on the host facts the engine shows."""
        if adapters is None:
            tools = self._tools()
            self.endpoint = tools.endpoint()  # once: gpulab's client and kind use the same engine
            self.runtime = tools.docker(endpoint=self.endpoint)
            if preflight:
                self.refuse(profile, lab, report)
            adapters = self.adapters(profile, lab)
        facts = cluster_facts(profile, lab, stack.cluster_needs(profile), adapters.runtime)
        return Session(kind_steps(profile, lab, stack, facts), adapters)

    def doctor(self, profile: LabProfile, lab: str, stack: StackSide, report: Reporter, *,
               pull: bool) -> list[Finding]:
        """`gpulab doctor`: this host's checks for a kind lab (`preflight`, through `host`'s
        `host_checks` when core names it), on the Docker engine the docker CLI would use (a
        `docker` fail when it does not answer in 5 s); the node image pulled first unless
        `pull` is False."""
        tools = self._tools()
        runtime = None
        endpoint = None
        docker_error = ""
        try:
            endpoint = tools.endpoint()
            runtime = tools.docker(timeout=5, endpoint=endpoint)
        except GpulabError as error:
            docker_error = str(error)
        checks = tools.host_checks or preflight  # looked up now: tests replace it
        findings: list[Finding] = checks(profile, lab, runtime, docker_error, endpoint=endpoint,
                                         pull=pull, report=report)
        return findings

    def built(self, lab: str, adapters: LabAdapters) -> None:
        """What exists now (Docker's objects for the lab, its kind cluster), kept in the lab
        folder (gpulab.lab_record)."""
        from gpulab import lab_record

        lab_record.record_created(lab, created(lab, adapters.runtime))

    def refuse(self, profile: LabProfile, lab: str, report: Reporter | None) -> None:
        """`up`'s preflight: doctor's host checks (the node image pulled first, shown as a
        step); PreflightError with every failure, before anything is created."""
        findings = preflight(profile, lab, self._docker(), endpoint=self.endpoint, pull=True,
                             report=report)
        failed = [f for f in findings if f.status == "fail"]
        if failed:  # a line per problem, its fix on its own line (cli.common prints them)
            raise PreflightError([(f.check, f.detail, f.fix) for f in failed],
                                 more="gpulab doctor shows every check")

    def adapters(self, profile: LabProfile, lab: str) -> LabAdapters:
        return lab_adapters(profile, lab, self._docker(), self.endpoint)

    def connect(self) -> None:
        """Unless given: the Docker engine (HostError when it does not answer) and the kind
        binary set to drive the same engine (None: not installed), from one endpoint."""
        if self.runtime is None:
            tools = self._tools()
            self.endpoint = tools.endpoint()  # kind must act on what gpulab sees: one engine
            self.runtime = tools.docker(endpoint=self.endpoint)
            self.kind = (kind_cli if tools.kind is None else tools.kind)(self.endpoint)

    def exists(self, lab: str) -> bool:
        """The lab has a folder, or Docker holds something labelled for it (a leftover)."""
        return lab_exists(lab, self._docker())

    def machines(self) -> ContainerRuntime:
        """The Docker engine: the lab's nodes and workers are its containers."""
        return self._docker()

    @contextmanager
    def reach(self, lab: str, profile: LabProfile, needs: ClusterNeeds | None = None
              ) -> Iterator[Callable[[Path], Path] | None]:
        """None: this host reaches each saved kubeconfig as it is (127.0.0.1 ports)."""
        yield None

    def same_cluster(self, lab: str, kube: Callable[[Path], Any] | None = None) -> None:
        """Nothing to tell apart: a kind lab's cluster is this host's containers, found by the
        lab's labels."""

    def logs(self, lab: str, folder: Path, profile: LabProfile, *,
             kube: Callable[[Path], Any] | None = None, needs: ClusterNeeds | None = None
             ) -> None:
        """gpulab.diagnostics.collect: the nodes' containers and journals, and each cluster
        the lab's kubeconfigs reach (`kube`: a client per kubeconfig; default 15 s a request,
        no retries), with helm's releases when helm is installed."""
        from gpulab.adapters.kube import KubeClient, RetryPolicy
        from gpulab.diagnostics import collect
        from gpulab.paths import lab_dir
        from gpulab.tools import find_tool

        helm_binary = find_tool("helm")

        def helm(path: Path) -> Any:
            from gpulab.adapters.helm import PyHelm3Gateway

            return PyHelm3Gateway(path, executable=helm_binary or "helm")

        def client(path: Path) -> Any:
            return KubeClient(path, request_timeout=15, retry=RetryPolicy.disabled())

        collect(lab, folder, runtime=self._docker(), kube=kube or client,
                helm=helm if helm_binary else None, lab_files=lab_dir(lab))

    def management(self, lab: str) -> ManagementRow:
        """The kind cluster and the state of its control-plane node container."""
        from gpulab.naming import kind_cluster_name

        cluster = kind_cluster_name(lab)
        node = self._docker().get(f"{cluster}-control-plane")
        return ManagementRow(cluster, node.status if node else "missing", node is not None)

    def teardown(self, lab: str, record: LabRecord | None,
                 forget: Callable[[], list[str]]) -> Teardown:
        """kind delete, then whatever kind could not remove (no kind binary, a crash
        mid-create) by label, then `forget` (the lab's files and contexts); leftovers: what
        Docker still holds by label, and by name what `record` says up created."""
        from gpulab.naming import kind_cluster_name

        runtime, kind = self._docker(), self.kind
        result = Teardown()
        cluster = kind_cluster_name(lab)
        if kind is None:
            result.notes.append("kind not found; removed the cluster's containers by label")
        elif cluster in kind.clusters():
            kind.delete(cluster)
            result.removed.append(f"kind cluster {cluster}")
        for labels in _selectors(lab):
            for container in runtime.containers(labels):
                if runtime.remove(container.name):
                    result.removed.append(f"container {container.name}")
            for volume in runtime.volumes(labels):
                if runtime.remove_volume(volume):
                    result.removed.append(f"volume {volume}")
            for network in runtime.networks(labels):
                if runtime.remove_network(network.name):
                    result.removed.append(f"network {network.name}")
        for labels in _selectors(lab):
            result.leftovers += [f"container {c.name}" for c in runtime.containers(labels)]
            result.leftovers += [f"volume {v}" for v in runtime.volumes(labels)]
            result.leftovers += [f"network {n.name}" for n in runtime.networks(labels)]
        if kind is not None and cluster in kind.clusters():
            result.leftovers.append(f"kind cluster {cluster}")
        if record is not None:  # what up created, by name, even were its labels gone
            named = ({f"container {n}" for n in record.created.get("containers", [])
                      if runtime.get(n) is not None}
                     | {f"network {n}" for n in record.created.get("networks", [])
                        if runtime.network(n) is not None})
            result.leftovers += sorted(named - set(result.leftovers))
        result.removed += forget()  # Docker's state above does not depend on these files
        shared = runtime.network("kind")
        if shared is not None and result.removed:
            result.kept.append("Docker network 'kind' (shared by every kind cluster on this "
                               "host; `docker network rm kind` when nothing uses it)")
        return result

    def where(self, lab: str) -> dict[str, str]:
        """The kind cluster's name."""
        from gpulab.naming import kind_cluster_name

        return {"provider": self.name, "name": kind_cluster_name(lab)}

    def lab_state(self, lab: str, containers: Sequence[Any], kubeconfigs: Sequence[str],
                  members: Sequence[str], *, observed: bool) -> str:
        """ready: its containers all running and every kubeconfig saved; broken: a container
        is not running; partial: otherwise (being built, or failed half-way); unknown without
        Docker."""
        if not observed:
            return "unknown"
        if any(not c.running for c in containers):
            return "broken"
        wanted = {"management", *members}
        if containers and members and wanted <= set(kubeconfigs):
            return "ready"
        return "partial"

    def lab_cluster(self, lab: str, profile: LabProfile) -> LabCluster:
        """The lab's own GPU pool and worker containers on this host."""
        return LabCluster(gpus="pool", workers="containers")

    def forwarded(self, lab: str) -> bool:
        """False: every member API is published on this host."""
        return False

    def refuse_join(self, lab: str) -> None:
        from gpulab.errors import UsageError

        raise UsageError(f"lab '{lab}' runs on kind: its workers are containers gpulab starts "
                         "itself; gpulab join is for labs on an existing cluster (up "
                         "--kubeconfig)")

    def refuse_forward(self, lab: str, member: str) -> None:
        from gpulab.errors import UsageError

        raise UsageError(f"lab '{lab}' runs on kind, which publishes each vCluster on "
                         "127.0.0.1 already; --port-forward is for labs in an existing cluster",
                         hint=f"gpulab kubeconfig {member} --name {lab}")

    def open_forward(self, host: Any, forward: PodForward, saved: Path, **options: Any) -> Any:
        """Never: refuse_forward refuses first."""
        self.refuse_forward(saved.parent.name, saved.stem)


# ---------------------------------------------------------------- the registry's questions


def claims(profile: LabProfile, kubeconfig: Path | None, context: str | None
           ) -> ClusterChoice | None:
    """kind takes a profile without `cluster:` or with `provider: kind`, and no
    `--kubeconfig/--context` (those reach a cluster gpulab does not make)."""
    spec = profile.cluster
    if kubeconfig is None and context is None and (spec is None or spec.provider == "kind"):
        return ClusterChoice("kind")
    return None


def restore(record: LabRecord | None, kubeconfig: Path | None = None,
            context: str | None = None, profile: LabProfile | None = None) -> ClusterChoice:
    """A kind lab is this host's: nothing to restore but the name; `--kubeconfig/--context`
    do not apply (UsageError)."""
    if kubeconfig is not None or context is not None:
        from gpulab.errors import UsageError

        raise UsageError("--kubeconfig and --context go with a lab in an existing cluster")
    return ClusterChoice("kind")


def make(choice: ClusterChoice, host: HostTools | None = None, *,
         runtime: ContainerRuntime | None = None, kind: KindBinary | None = None,
         **_given: Any) -> KindProvider:
    """The kind provider on `host`'s Docker engine (`runtime`, `kind`: already connected)."""
    return KindProvider(host, runtime=runtime, kind=kind)


def spec_problems(spec: Any) -> list[str]:
    """What of a profile's `cluster:` section kind does not take, each a line: a kind lab
    installs MetalLB on the kind network itself, its workers are always containers, and it
    reaches no cluster of yours (kubeconfig, context...)."""
    problems = []
    if spec.metallb != "refuse" or spec.metallb_range:
        problems.append("metallb, metallb_range: only with provider: existing (on kind the lab "
                        "installs MetalLB on the kind network itself)")
    if spec.workers != "machines":
        problems.append("workers: only with provider: existing (on kind the workers are always "
                        "containers)")
    given = [n for n in ("kubeconfig", "context", "node_address", "helm_parallel",
                         "fake_gpu_nodes") if getattr(spec, n) is not None]
    given += ["expose"] if spec.expose != "auto" else []
    if given:
        problems.append(f"{', '.join(given)}: only with provider: existing")
    return problems


def container_lab(labels: Mapping[str, str]) -> str:
    """The lab a container is a kind node of (kind_lab)."""
    return kind_lab(labels)


def cluster_text(where: Mapping[str, str]) -> str:
    return f"kind {where.get('name', '?')}"
