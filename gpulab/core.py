"""The use cases' façade: what every command calls, and what reaches this host's tools.

The CLI (`gpulab.cli`) only parses, calls one use case here and renders. What needs this host's
tools (the Docker engine, Helm, the lab's provider connected to them) lives here, so tests
replace those once (`core.connect_runtime`, `core.read_docker`, `core._status_client`, ...);
the rest is in `gpulab.usecases` (the lab a command is about, `labs`, `down`'s removal, clusters
gpulab did not build), re-exported here.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpulab import nesting
from gpulab.errors import GpulabError, HostError, UsageError
from gpulab.providers.base import HostTools, Teardown
from gpulab.usecases.anycluster import (
    FOREIGN_UNREACHABLE,
    cluster_members,
    inspect_clusters,
    replay_clusters,
    verify_clusters,
)
from gpulab.usecases.inventory import builtin_profile_rows, install_tools, versions
from gpulab.usecases.lab import (
    lab_name,
    load,
    no_lab,
    require_lab,
    resolve_lab,
    up_cluster,
    with_fake_gpu_nodes,
)
from gpulab.usecases.labs import LAB_RECORD, cluster_text, labs, recorded_profile
from gpulab.usecases.plan import cluster_manifests
from gpulab.usecases.teardown import remove_lab

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from rich.table import Table

    from gpulab.adapters.base import (
        ContainerRuntime,
        DockerReader,
        HelmGateway,
        KubeGateway,
        LabAdapters,
    )
    from gpulab.adapters.docker_endpoint import DockerEndpoint
    from gpulab.doctor import Finding
    from gpulab.engine.runner import Reporter, RunResult
    from gpulab.engine.step import Step
    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile
    from gpulab.providers.base import ClusterChoice, ClusterProvider, LabCluster
    from gpulab.stacks import Stack
    from gpulab.verify.report import VerifyReport

__all__ = [
    "FOREIGN_UNREACHABLE",
    "LAB_RECORD",
    "TIMINGS_RECORD",
    "Teardown",
    "builtin_profile_rows",
    "check_ids",
    "cluster_manifests",
    "cluster_members",
    "cluster_text",
    "collect_logs",
    "connect_runtime",
    "docker_endpoint",
    "doctor",
    "inspect_clusters",
    "install_tools",
    "join",
    "join_ttl",
    "lab_cluster",
    "lab_forwarded",
    "lab_name",
    "lab_provider",
    "labs",
    "load",
    "management_api_problem",
    "no_lab",
    "plan_steps",
    "port_forward",
    "provider_tools",
    "read_docker",
    "record_profile",
    "record_timings",
    "record_verify",
    "recorded_profile",
    "recorded_timings",
    "remove_lab",
    "replay_clusters",
    "replay_verify",
    "require_lab",
    "resolve_lab",
    "status",
    "status_tables",
    "survey",
    "up",
    "up_cluster",
    "verify",
    "verify_checks",
    "verify_clusters",
    "versions",
    "with_fake_gpu_nodes",
]


def docker_endpoint() -> DockerEndpoint:
    """The Docker engine the docker CLI would use here (DOCKER_HOST, else DOCKER_CONTEXT, else
    `docker context use`'s, else the default socket), resolved once per command and handed to
    gpulab's clients and to kind alike; HostError for a context that cannot be used."""
    from gpulab.adapters.docker_endpoint import resolve_endpoint

    return resolve_endpoint()


def connect_runtime(timeout: float = 10, endpoint: DockerEndpoint | None = None
                    ) -> ContainerRuntime:
    """The Docker engine (`endpoint`, else `docker_endpoint()`), or HostError with what to do."""
    from gpulab.adapters.docker_runtime import connect

    return connect(timeout=timeout, endpoint=endpoint)


def read_docker(timeout: float = 3, endpoint: DockerEndpoint | None = None) -> DockerReader:
    """A read-only view of the Docker engine: the stdlib socket reader when the engine is on a
    unix socket (no docker-py import, so `plan` starts fast), else the docker-py adapter."""
    from gpulab.adapters.docker_probe import open_reader

    endpoint = endpoint or docker_endpoint()
    reader = open_reader(timeout, endpoint)
    return reader if reader is not None else connect_runtime(timeout=timeout, endpoint=endpoint)


def plan_steps(
    profile: LabProfile, name: str | None, *, probe_host: bool,
    cluster: ClusterChoice | None = None,
) -> tuple[list[Step], str]:
    """The steps `up` would run (the provider's own first, then the stack's; then what `verify`
    creates), and a note on host facts that could not be observed. On an existing cluster
    (`cluster`, else the profile's `cluster:`) the cluster is read (read-only) and the note
    says what `up` would refuse."""
    from gpulab.providers import choose, for_choice
    from gpulab.stacks import for_profile

    stack = for_profile(profile)
    lab = lab_name(profile, name)
    provider = for_choice(cluster or choose(profile), _host())
    ground = provider.ground(profile, lab, stack, probe=probe_host)
    steps = [*ground.steps, *stack.build_steps(profile, lab, ground.facts)]
    note = ("up would refuse: " + "; ".join(ground.problems)) if ground.problems \
        else ground.note
    return [*steps, *stack.verify_previews(profile)], note


def _host() -> HostTools:
    """This host's tools as core reaches them, for the providers."""
    return HostTools(endpoint=docker_endpoint, docker=connect_runtime, reader=read_docker,
                     helm=_helm_on_host)


def doctor(profile: LabProfile, lab: str, report: Reporter, *, pull: bool,
           cluster: ClusterChoice | None = None) -> list[Finding]:
    """`gpulab doctor`: what the lab's provider (`cluster`, else the profile's) needs of this
    host and its cluster, one finding per check with its fix (providers' `doctor`)."""
    from gpulab.providers import choose, for_choice
    from gpulab.stacks import for_profile

    provider = for_choice(cluster or choose(profile), _host())
    return provider.doctor(profile, lab, for_profile(profile), report, pull=pull)


def provider_tools(cluster: ClusterChoice) -> tuple[str, ...]:
    """The tools `doctor --install-tools` installs for a lab on `cluster` (its provider's)."""
    from gpulab.providers import for_choice

    return tuple(for_choice(cluster, _host()).tools)


def lab_provider(lab: str, *, kubeconfig: Path | None = None, context: str | None = None,
                 **given: Any) -> ClusterProvider:
    """The provider of a lab that exists (or may: its leftovers), for `status`, `logs` and
    `down`, as its lab.json recorded it (`kubeconfig`/`context`: how its cluster is reached
    now, for a provider that takes them), connected to what it needs of this host first (kind:
    the Docker engine and the kind binary driving it, HostError when Docker does not answer);
    `given`: what the caller has already (a Helm gateway factory, a Docker engine)."""
    from gpulab.providers import for_lab

    provider = for_lab(lab, _host(), kubeconfig=kubeconfig, context=context, **given)
    provider.connect()
    return provider


def lab_cluster(lab: str, profile: LabProfile) -> LabCluster:
    """What the lab's cluster is, as its provider answers (where the GPUs are, how workers
    come); reaches nothing."""
    from gpulab.providers import for_lab

    return for_lab(lab).lab_cluster(lab, profile)


def lab_forwarded(lab: str) -> bool:
    """The lab's member APIs answer only through a forward of its cluster's API."""
    from gpulab.providers import for_lab

    return for_lab(lab).forwarded(lab)


# --------------------------------------------------------------------------- lab record


def record_profile(lab: str, loaded: LoadedProfile) -> None:
    """Remember the profile that built the lab (its whole document: gpulab.lab_record), so
    `--name` alone is enough later, even when the profile's file is gone."""
    from gpulab import lab_record

    lab_record.record_profile(lab, loaded)


TIMINGS_RECORD = "timings.json"


def record_timings(lab: str, result: RunResult) -> None:
    """Keep how long each step of `up` took (a step a later run skipped keeps its time), for
    `status -o json` and the JUnit of `verify`."""
    import json
    from datetime import datetime, timezone

    from gpulab.paths import lab_dir

    steps = {s["step"]: s for s in recorded_timings(lab)}
    for step in result.results:
        if step.outcome.value in ("done", "failed"):
            steps[step.name] = {"step": step.name, "outcome": step.outcome.value,
                                "seconds": round(step.elapsed, 1),
                                "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    order = [s.name for s in result.results]
    rows = sorted(steps.values(), key=lambda s: order.index(s["step"]) if s["step"] in order
                  else len(order))
    folder = lab_dir(lab)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / TIMINGS_RECORD).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def recorded_timings(lab: str) -> list[dict[str, Any]]:
    """The step timings `up` recorded for the lab (oldest layout first), or []."""

    from gpulab.paths import lab_dir

    try:
        data = nesting.json_loads((lab_dir(lab) / TIMINGS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [d for d in data if isinstance(d, dict) and "step" in d] if isinstance(data, list) \
        else []


def management_api_problem(lab: str, kube: Callable[[Path], KubeGateway] | None = None
                           ) -> str | None:
    """None when the lab's management API answers (`GET /version` through its saved
    kubeconfig); else why not: the lab is not up (no kubeconfig saved yet) or the API does not
    answer (its cluster stopped, Docker restarted). Either way exit 4."""
    from gpulab.paths import lab_dir

    path = lab_dir(lab) / "management.kubeconfig"
    if not path.is_file():
        return f"lab '{lab}' is not up: no {path.name} in {path.parent}"
    client: Any = None
    try:
        client = (kube or _status_client)(path)
        client.server_version()
    except GpulabError as err:
        first = (err.message.strip().splitlines() or [type(err).__name__])[0]
        return f"lab '{lab}': its management API does not answer ({first})"
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return None


# --------------------------------------------------------------------------- up


def survey(profile: LabProfile, lab: str, choice: ClusterChoice) -> tuple[Any, Step, list[str]]:
    """Read-only, what `choice`'s cluster is for the lab: the provider's reading of it (its
    `survey`, else the facts the stack builds on), the provider's `management/cluster` step,
    and why the lab cannot go there ([]: it can).
    HostError when the cluster cannot be read."""
    from gpulab.providers import for_choice
    from gpulab.stacks import for_profile

    ground = for_choice(choice, _host()).ground(profile, lab, for_profile(profile), probe=True)
    return ground.survey or ground.facts, ground.steps[0], ground.problems


def up(profile: LabProfile, name: str | None, report: Reporter, *,
       adapters: LabAdapters | None = None, skip_preflight: bool = False,
       sleep: Callable[[float], None] | None = None,
       cluster: ClusterChoice | None = None) -> RunResult:
    """Build the lab; idempotent and resumable (state is what exists). The provider refuses
    first (kind: doctor's host checks unless `skip_preflight`; existing: what the cluster does
    not allow), then gives the adapters and the steps to run."""
    from gpulab.engine.runner import run_steps
    from gpulab.engine.step import StepContext
    from gpulab.providers import choose, for_choice
    from gpulab.stacks import for_profile

    lab = lab_name(profile, name)
    provider = for_choice(cluster or choose(profile), _host())
    session = provider.open(profile, lab, for_profile(profile), report, adapters=adapters,
                            preflight=not skip_preflight)
    ctx = StepContext(lab=lab, adapters=session.adapters)
    if sleep is not None:
        ctx.sleep = sleep
    try:
        result = run_steps(session.steps, ctx, report)
    finally:
        session.close()
    if result.built_anything:
        provider.built(lab, session.adapters)
    return result


def _helm_on_host(lab: str | None = None) -> Callable[[Path], HelmGateway]:
    """Helm gateways on the helm binary gpulab finds (its cache, then PATH), or HostError; for
    `lab`, every chart they install carries the lab's labels (naming.chart_labels)."""
    from gpulab.adapters.helm import PyHelm3Gateway
    from gpulab.naming import chart_labels
    from gpulab.paths import HELM_POST_RENDER, lab_dir
    from gpulab.tools import find_tool

    binary = find_tool("helm")
    if binary is None:
        raise HostError("helm not found on PATH or in gpulab's cache",
                        hint="run gpulab doctor --install-tools")
    if lab is None:
        return lambda path: PyHelm3Gateway(path, executable=binary)
    return lambda path: PyHelm3Gateway(path, executable=binary, labels=chart_labels(lab),
                                       folder=lab_dir(lab) / HELM_POST_RENDER)


def status(
    lab: str,
    provider: ClusterProvider,
    profile: LabProfile,
    kube: Callable[[Path], KubeGateway] | None = None,
) -> dict[str, Any]:
    """What exists for the lab, in its stack's shape (`stack`, `management`, `tenants`,
    `exists`: the lab has a folder or something its provider made); the management row and
    the lab's own containers are the provider's (lab_provider); `management.api_error` says
    why its management API cannot be used ('' when it answers); `kube` builds a client per
    kubeconfig (tests pass fakes). UsageError, before anything else is read, when the lab's
    saved kubeconfig now reaches another cluster (provider.same_cluster)."""
    from gpulab.paths import lab_dir
    from gpulab.stacks import for_profile

    provider.same_cluster(lab, kube)
    needs = for_profile(profile).cluster_needs(profile)
    with provider.reach(lab, profile, needs) if kube is None else nullcontext() as reach:
        if kube is None:  # members the provider reaches otherwise (port-forwards) as it says
            kube = _status_client if reach is None else _reached_client(reach)
        info = dict(for_profile(profile).lab_status(lab, provider.machines(), profile, kube,
                                                    provider.management(lab)))
        info["exists"] = bool(info.get("exists")) or lab_dir(lab).is_dir()
        info["timings"] = recorded_timings(lab)
        if info["exists"] and isinstance(info.get("management"), dict):
            info["management"]["api_error"] = management_api_problem(lab, kube) or ""
    return info


def _reached_client(reach: Callable[[Path], Path]) -> Callable[[Path], KubeGateway]:
    """`_status_client` on the copy of each saved kubeconfig the provider's `reach` gives."""
    return lambda path: _status_client(reach(path))


def status_tables(profile: LabProfile, info: dict[str, Any]) -> list[Table]:
    """The tables `gpulab status` prints for `status(...)`'s dict, drawn by the lab's stack."""
    from gpulab.stacks import for_profile

    return for_profile(profile).status_tables(info)


def _status_client(path: Path) -> KubeGateway:
    from gpulab.adapters.kube import KubeClient, RetryPolicy

    return KubeClient(path, request_timeout=10, retry=RetryPolicy.disabled())


def join_ttl(value: str) -> int:
    """`--ttl`: `30m`, `1h`, `90s` → seconds, 1m to 24h (kubeadm's --ttl is a Go duration,
    24h by default; a join needs minutes, so gpulab's default is 1h)."""
    import re

    match = re.fullmatch(r"([1-9]\d*)(s|m|h)", value.strip())
    seconds = int(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)] if match else 0
    if not 60 <= seconds <= 24 * 3600:
        raise UsageError(f"--ttl {value!r}: give a duration from 1m to 24h, such as 30m or 1h")
    return seconds


def join(lab: str, profile: LabProfile, member: str, *, node: str | None, ttl_seconds: int,
         kube: Callable[[Path], KubeGateway] | None = None) -> str:
    """`gpulab join`: the commands that make a real machine a worker of `member` in a lab on an
    existing cluster (a bootstrap token is created in the tenant now); UsageError on kind."""
    from gpulab.providers import for_lab
    from gpulab.stacks import for_profile

    require_lab(lab)
    provider = for_lab(lab, _host())
    provider.refuse_join(lab)
    provider.same_cluster(lab, kube or _status_client)  # the token goes in its tenant
    return for_profile(profile).join_commands(profile, lab, member, node=node,
                                              ttl_seconds=ttl_seconds,
                                              kube=kube or _status_client)


def port_forward(lab: str, profile: LabProfile, member: str, *, port: int | None,
                 on_error: Callable[[str], None] | None = None,
                 kube: Callable[[Path], KubeGateway] | None = None,
                 dial: Callable[[str], Any] | None = None) -> Any:
    """`gpulab kubeconfig TEAM --port-forward`: forward 127.0.0.1:`port` (None: the member's
    port need's host port, as its saved kubeconfig names on a port-forward lab; 0: any free
    port) through the lab's cluster's API to the pod its stack says serves it (PortNeed.forward:
    a vcluster-kai team's vCluster, as `vcluster connect` does), and write a temporary
    kubeconfig for it. The provider refuses labs whose APIs it publishes on this host itself
    (kind). The caller closes it."""
    from gpulab.adapters.kube import KubeClient, RetryPolicy
    from gpulab.paths import lab_dir
    from gpulab.providers import for_lab
    from gpulab.stacks import for_profile

    folder = require_lab(lab)
    provider = for_lab(lab, _host())
    provider.refuse_forward(lab, member)
    if member == "management":
        raise UsageError("the management cluster is the cluster you gave up --kubeconfig: "
                         "reach it directly", hint=f"gpulab kubeconfig management --name {lab}")
    need = next((p for p in for_profile(profile).cluster_needs(profile).ports
                 if p.member == member and p.forward is not None), None)
    if need is None or need.forward is None:
        raise UsageError(f"--port-forward reaches an API the lab's stack publishes through "
                         f"the cluster; {member} of lab '{lab}' ({profile.stack}) has none",
                         hint=f"gpulab kubeconfig {member} --name {lab}")

    def client(path: Path) -> KubeGateway:
        return KubeClient(path, request_timeout=10, retry=RetryPolicy.disabled())

    factory = kube or client
    provider.same_cluster(lab, factory)
    return provider.open_forward(factory(folder / "management.kubeconfig"), need.forward,
                                 lab_dir(lab) / f"{member}.kubeconfig",
                                 port=need.host_port if port is None else port, kube=factory,
                                 prefix=f"gpulab-{lab}-{member}-", dial=dial,
                                 on_error=on_error)


# --------------------------------------------------------------------------- logs


def collect_logs(lab: str, folder: Path, provider: ClusterProvider, profile: LabProfile, *,
                 tar: bool, kube: Callable[[Path], KubeGateway] | None = None) -> Path:
    """Write the diagnostics bundle of what the lab has, as its provider collects it (kind: the
    nodes and every cluster; existing: only what gpulab created there); returns the folder (or
    tarball) path. UsageError, before the folder is made, when the lab's saved kubeconfig now
    reaches another cluster (provider.same_cluster)."""
    from gpulab.diagnostics import tarball
    from gpulab.stacks import for_profile

    provider.same_cluster(lab, kube)
    provider.logs(lab, folder, profile, kube=kube,
                  needs=for_profile(profile).cluster_needs(profile))
    return tarball(folder) if tar else folder


# --------------------------------------------------------------------------- verify


def verify(
    profile: LabProfile,
    lab: str,
    *,
    checks: list[str] | None,
    keep: bool,
    progress: Callable[[str, str], None] | None = None,
) -> VerifyReport:
    """Run the acceptance checks live against the lab's saved kubeconfigs, as its provider
    reaches them (`reach`: a port-forward lab's vClusters through forwards): NoLabError without
    a lab folder, HostError when the lab is not up or its management API does not answer,
    UsageError when its saved kubeconfig now reaches another cluster (same_cluster)."""
    from gpulab.paths import lab_dir
    from gpulab.providers import for_lab
    from gpulab.stacks import for_profile

    require_lab(lab)
    problem = management_api_problem(lab)
    if problem:
        raise HostError(problem, hint=f"gpulab status --name {lab} shows the lab; gpulab up "
                                      f"--name {lab} builds or repairs it")
    provider = for_lab(lab, _host())  # connects to nothing until it is asked
    provider.same_cluster(lab)
    with provider.reach(lab, profile, for_profile(profile).cluster_needs(profile)) as reach:
        return for_profile(profile).run_checks(
            profile, lab, lab_dir(lab), checks=checks, keep=keep, progress=progress,
            reach=reach, cluster=provider.lab_cluster(lab, profile))


def _stack(stack: str) -> Stack:
    """The stack package by name (a profile's or a recording's `stack`)."""
    from gpulab.stacks import for_name

    return for_name(stack)


def check_ids(stack: str) -> list[str]:
    """Every check id of a stack, in order."""
    return _stack(stack).check_ids()


def verify_checks(stack: str, tc: str | None) -> list[str] | None:
    """`--tc` parsed by the stack's check registry (None: every check)."""
    return _stack(stack).parse_checks(tc) if tc else None


def replay_verify(directory: Path, tc: str | None, against: LoadedProfile | None = None
                  ) -> tuple[VerifyReport, LabProfile]:
    """Judge a recording offline with the checks of the stack that recorded it (the manifest's
    `stack`; recordings without one are kamaji-hami's), against `against` when given (it must
    be a profile of that stack), else against the profile the recording was made with."""
    from gpulab.stacks import RECORDING_DEFAULT_STACK
    from gpulab.verify.recording import recording_stack

    stack = recording_stack(directory) or RECORDING_DEFAULT_STACK
    if against is not None and against.profile.stack != stack:
        raise UsageError(
            f"{directory} is a {stack} recording but profile {against.source} is "
            f"{against.profile.stack}",
            hint=f"give a {stack} profile, or leave out --profile to judge against the one "
                 "it was recorded with")
    report, profile = _stack(stack).replay(directory, verify_checks(stack, tc),
                                           against.profile if against else None)
    judged = f"profile {against.source}" if against else "the recording's profile"
    return replace(report, judged_against=judged), profile


def record_verify(directory: Path, report: VerifyReport, profile: LabProfile) -> Path:
    """Save what a verify observed, in the recording format of the profile's stack."""
    return _stack(profile.stack).write_recording(directory, report, profile)
