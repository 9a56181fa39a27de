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
from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError, UsageError
from gpulab.providers.base import (
    Access,
    ClusterChoice,
    FakeNode,
    GpuNode,
    Ground,
    LabCluster,
    ManagementRow,
    Session,
    Teardown,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path

    from gpulab.adapters.base import LabAdapters
    from gpulab.doctor import Finding
    from gpulab.engine.runner import Reporter
    from gpulab.engine.step import Step
    from gpulab.lab_record import LabRecord
    from gpulab.profile.base import HostWorkers, LabProfile
    from gpulab.providers.base import ClusterNeeds, HostTools, PodForward, StackSide


from gpulab.providers.existing.facts import (
    API_SECONDS,
    HELM_PARALLEL,
    SURVEY_SECONDS,
    WORKER_PULL_STEP,
    ExistingFacts,
    cluster_facts,
    connect,
    denied,
    identity_of,
    kubeconfig_finding,
    observe,
    pod_security_problems,
    port_url,
)
from gpulab.providers.existing.ledger import BoundedHelm, ExistingCluster, Owning, owned_entries
from gpulab.providers.existing.teardown import remove_owned

LABS_API_TIMEOUT = 3.0  # seconds `gpulab labs` waits for an existing cluster's API

__all__ = [
    "HELM_PARALLEL",
    "LABS_API_TIMEOUT",
    "BoundedHelm",
    "ExistingCluster",
    "ExistingFacts",
    "ExistingProvider",
    "FakeNode",
    "GpuNode",
    "Owning",
    "choice_of",
    "claims",
    "cluster_facts",
    "cluster_text",
    "connect",
    "container_lab",
    "denied",
    "identity_of",
    "kubeconfig_finding",
    "make",
    "observe",
    "owned_entries",
    "pod_security_problems",
    "port_url",
    "remove_owned",
    "restore",
]



class ExistingProvider:
    """A lab in a cluster gpulab did not make, reached as `choice` says. `host` gives Helm and
    the Docker engine (only for worker containers on this host: kamaji-hami's
    `cluster.workers: containers`), asked for only when needed; `helm` and `runtime`, when
    given, are used instead."""

    name = "existing"
    tools = ("helm",)

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
                from gpulab.providers.existing.forward import forwards_of

                asks = [Access("create", "", "pods", ns, "portforward")
                        for ns in sorted({f.namespace for f in forwards_of(
                            stack.cluster_needs(profile)).values()})]
                facts = replace(facts, denied=facts.denied + denied(client, asks),
                                asked=facts.asked + len(asks))
        except GpulabError as err:
            raise HostError(f"the cluster at {client.server} (context {context}) cannot be "
                            f"read: {err.message}", hint=unreadable) from None
        facts = replace(facts, cluster=cluster_facts(stack.cluster_needs(profile), facts,
                                                     _workers(profile)))
        return Ground(facts.cluster,
                      [ExistingCluster(identity, text, facts.version, expose=facts.expose)],
                      "", stack.existing_problems(profile, facts)
                      + pod_security_problems(needs, facts), survey=facts)

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
        facts = ground.survey
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
        from gpulab.providers.existing.forward import ForwardingKube, forwards_of

        forwarding = ForwardingKube(adapters.kube, adapters.management_kubeconfig(),
                                    forwards_of(stack.cluster_needs(profile)))
        return Session(steps, replace(adapters, kube=forwarding), forwarding.close)

    def built(self, lab: str, adapters: LabAdapters) -> None:
        """Nothing more to record: each step recorded its creations before it acted."""

    def connect(self) -> None:
        """Nothing from this host: each command reaches the cluster itself."""

    def exists(self, lab: str) -> bool:
        """The lab has a folder (its record is in it)."""
        from gpulab.paths import lab_folder_exists

        return lab_folder_exists(lab)

    def machines(self) -> None:
        """None: status reads what the lab has from the cluster's API."""

    def logs(self, lab: str, folder: Path, profile: LabProfile, *,
             kube: Callable[[Path], Any] | None = None, needs: ClusterNeeds | None = None
             ) -> None:
        """gpulab.diagnostics.collect_existing: only what the lab's record says gpulab created
        in the cluster, every read within diagnostics.EXISTING_DEADLINE (no Docker, no helm);
        the member APIs of a port-forward lab (`needs`' port needs) through forwards of the
        cluster's API. `kube`: a client per kubeconfig (default 15 s a request, no
        retries)."""
        from gpulab import lab_record
        from gpulab.adapters.kube import KubeClient, RetryPolicy
        from gpulab.diagnostics import collect_existing
        from gpulab.paths import lab_dir
        from gpulab.providers.existing.forward import ForwardingKube, forwards_of

        def client(path: Path) -> Any:
            return KubeClient(path, request_timeout=15, retry=RetryPolicy.disabled())

        record = lab_record.read(lab)
        owned = record.owned if record is not None else ()
        expose = str(record.cluster.get("expose") or "") if record is not None else ""
        factory = kube or client
        forwarding = ForwardingKube(factory, lab_dir(lab) / "management.kubeconfig",
                                    forwards_of(needs)) \
            if expose == "port-forward" and needs is not None else None
        try:
            collect_existing(lab, folder, owned=owned, members=profile.member_names(),
                             kube=forwarding or factory, lab_files=lab_dir(lab))
        finally:
            if forwarding is not None:
                forwarding.close()

    @contextmanager
    def reach(self, lab: str, profile: LabProfile, needs: ClusterNeeds | None = None
              ) -> Iterator[Callable[[Path], Path] | None]:
        """A lab whose member APIs are reached by port-forward (its record's `expose`): each
        member's saved kubeconfig that names a port need (`needs`, the stack's) through a
        forward of the cluster's API to the pod serving it (ForwardingKube), every forward
        closed after; else None (reached as saved)."""
        from gpulab import lab_record
        from gpulab.adapters.kube import KubeClient
        from gpulab.paths import lab_dir
        from gpulab.providers.existing.forward import ForwardingKube, forwards_of

        record = lab_record.read(lab)
        if record is None or record.cluster.get("expose") != "port-forward" or needs is None:
            yield None
            return
        forwarding = ForwardingKube(KubeClient, lab_dir(lab) / "management.kubeconfig",
                                    forwards_of(needs))
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

    def where(self, lab: str) -> dict[str, str]:
        """The cluster's server and context as lab.json keeps them (a server URL's
        user:password part, if any, left out: `labs` never prints credentials)."""
        from urllib.parse import urlsplit, urlunsplit

        from gpulab import lab_record

        record = lab_record.read(lab)
        kept = record.cluster if record is not None else {}
        server = str(kept.get("server") or "")
        try:
            parts = urlsplit(server)
            if parts.username or parts.password:
                server = urlunsplit(parts._replace(netloc=parts.hostname + (
                    f":{parts.port}" if parts.port else "") if parts.hostname else ""))
        except ValueError:
            server = "(unreadable server URL)"
        return {"provider": self.name, "server": server, "context": str(kept.get("context") or "")}

    def lab_state(self, lab: str, containers: Sequence[Any], kubeconfigs: Sequence[str],
                  members: Sequence[str], *, observed: bool) -> str:
        """unreachable when the cluster's API does not answer within LABS_API_TIMEOUT through
        the saved kubeconfig; else ready when every kubeconfig is saved, partial otherwise."""
        from gpulab.adapters.kube import KubeClient, RetryPolicy
        from gpulab.paths import lab_dir

        path = lab_dir(lab) / "management.kubeconfig"
        if "management" in kubeconfigs and path.is_file():
            client: Any = None
            try:
                client = KubeClient(path, request_timeout=LABS_API_TIMEOUT,
                                    retry=RetryPolicy.disabled())
                client.server_version()
            except GpulabError:
                return "unreachable"
            finally:
                if client is not None:
                    client.close()
        wanted = {"management", *members}
        return "ready" if members and wanted <= set(kubeconfigs) else "partial"

    def lab_cluster(self, lab: str, profile: LabProfile) -> LabCluster:
        """The GPUs are whatever the cluster's nodes advertise (real, or faked on nodes the
        user named); workers are machines that join, unless the profile runs containers."""
        return LabCluster(gpus="found", workers=_workers(profile))

    def forwarded(self, lab: str) -> bool:
        """The lab's vClusters are reached by port-forward (its record's `expose`)."""
        from gpulab import lab_record

        record = lab_record.read(lab)
        return record is not None and record.cluster.get("expose") == "port-forward"

    def refuse_join(self, lab: str) -> None:
        """Machines join a lab on a cluster you brought (the stack says how)."""

    def refuse_forward(self, lab: str, member: str) -> None:
        """Any member API of a lab here can be reached through the cluster's API."""

    def open_forward(self, host: Any, forward: PodForward, saved: Path, **options: Any) -> Any:
        """A forward of `host`'s API to the pod `forward` names (providers.existing.forward)."""
        from gpulab.providers.existing.forward import open_forward

        return open_forward(host, forward, saved, **options)

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
            result = remove_owned(owned, client, helm(path), runtime=runtime)
        finally:
            client.close()
            if folder is not None:
                folder.cleanup()
        result.removed += forget()
        result.kept.append(f"the cluster at {kept.get('server')} and everything gpulab found "
                           "there")
        return result


def _workers(profile: LabProfile) -> str:
    """How a lab's workers come here: `containers` on this host when the profile's
    `cluster.workers` says so, else machines that `join`."""
    spec = profile.cluster
    return "containers" if spec is not None and getattr(spec, "workers", "") == "containers" \
        else "join"


def choice_of(record: LabRecord, kubeconfig: Path | None = None, context: str | None = None,
              profile: LabProfile | None = None) -> ClusterChoice:
    """How a lab's existing cluster is reached: `kubeconfig`/`context` when given, else those
    its record names; how its APIs are exposed from `profile`'s `cluster:` when given."""
    from pathlib import Path

    kept = record.cluster
    recorded = kept.get("kubeconfig")
    file = kubeconfig or (Path(recorded) if recorded and recorded != "(default)" else None)
    spec = profile.cluster if profile is not None else None
    if spec is None:
        return ClusterChoice("existing", kubeconfig=file, context=context or kept.get("context"))
    return ClusterChoice("existing", kubeconfig=file, context=context or kept.get("context"),
                         expose=spec.expose, node_address=spec.node_address,
                         helm_parallel=spec.helm_parallel or HELM_PARALLEL)


# ---------------------------------------------------------------- the registry's questions


def claims(profile: LabProfile, kubeconfig: Path | None, context: str | None
           ) -> ClusterChoice | None:
    """existing takes `--kubeconfig/--context` (they override the profile's
    `cluster.kubeconfig`/`context`), or a profile with `cluster.provider: existing`."""
    from pathlib import Path

    spec = profile.cluster
    if kubeconfig is None and context is None and (spec is None or spec.provider != "existing"):
        return None
    file = kubeconfig or (Path(spec.kubeconfig).expanduser() if spec and spec.kubeconfig
                          else None)
    return ClusterChoice("existing", kubeconfig=file,
                         context=context or (spec.context if spec else None),
                         expose=spec.expose if spec else "auto",
                         node_address=spec.node_address if spec else None,
                         helm_parallel=(spec.helm_parallel or HELM_PARALLEL) if spec
                         else HELM_PARALLEL)


def restore(record: LabRecord, kubeconfig: Path | None = None, context: str | None = None,
            profile: LabProfile | None = None) -> ClusterChoice:
    """The cluster lab.json records (choice_of)."""
    return choice_of(record, kubeconfig, context, profile)


def make(choice: ClusterChoice, host: HostTools | None = None, *,
         helm: Callable[[Path], Any] | None = None, runtime: Any = None, **_given: Any
         ) -> ExistingProvider:
    """The existing provider for `choice` (`helm`, `runtime`: already at hand)."""
    return ExistingProvider(choice, host, helm=helm, runtime=runtime)


def container_lab(labels: Mapping[str, str]) -> str:
    """'': the worker containers this provider runs carry gpulab's own lab label."""
    return ""


def cluster_text(where: Mapping[str, str]) -> str:
    return f"{where.get('server', '?')} (context {where.get('context', '?')})"
