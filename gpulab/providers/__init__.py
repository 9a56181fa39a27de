"""Where a lab's cluster and its nodes come from: the provider registry.

A stack says what it installs; a provider says how the cluster comes to be. `kind` makes one
(today's behaviour, the default); `existing` installs into a cluster you already have, reached
through a kubeconfig and context. The provider is chosen by `up --kubeconfig/--context`, else by
the profile's `cluster.provider`, else kind. Imports no stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.providers.base import ClusterChoice

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime
    from gpulab.adapters.base import KindProvider as KindBinary
    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile
    from gpulab.providers.base import ClusterProvider, HostTools

__all__ = ["PROVIDERS", "ClusterChoice", "choose", "for_choice", "with_fake_gpu_nodes"]

PROVIDERS = ("kind", "existing")


def choose(profile: LabProfile, kubeconfig: Path | None = None, context: str | None = None
           ) -> ClusterChoice:
    """The provider for `profile`: `--kubeconfig`/`--context` mean existing (they override the
    profile's `cluster.kubeconfig`/`context`); else the profile's `cluster:`; else kind."""
    from pathlib import Path

    spec = profile.cluster
    if kubeconfig is None and context is None and (spec is None or spec.provider == "kind"):
        return ClusterChoice("kind")
    file = kubeconfig or (Path(spec.kubeconfig).expanduser() if spec and spec.kubeconfig
                          else None)
    return ClusterChoice("existing", kubeconfig=file,
                         context=context or (spec.context if spec else None),
                         expose=spec.expose if spec else "auto",
                         node_address=spec.node_address if spec else None,
                         helm_parallel=(spec.helm_parallel or 4) if spec else 4)


def with_fake_gpu_nodes(loaded: LoadedProfile, lab: str, nodes: list[str] | None, *,
                        existing: bool) -> LoadedProfile:
    """`up`/`plan --fake-gpu-node NODE...`: the profile with `cluster.fake_gpu_nodes` set (the
    field the stack builds from, so `plan` shows and `up` builds the same, and lab.json's
    recorded document keeps them for `--name` re-runs; `down` removes what lab.json lists).
    `existing`: the cluster is one you have (`--kubeconfig/--context`). UsageError, one line,
    on kind, for a stack without fake GPUs, or when the profile (or the lab, as built) names
    other nodes. Without `nodes`, only that last check."""
    from pydantic import ValidationError

    from gpulab import lab_record
    from gpulab.errors import UsageError
    from gpulab.profile.base import ClusterSpec
    from gpulab.profile.load import LoadedProfile

    profile = loaded.profile
    spec = profile.cluster
    named = list(spec.fake_gpu_nodes or []) if spec is not None else []
    record = lab_record.read(lab)
    if record is not None and record.document is not None:  # a lab built: its nodes stay
        before = sorted((record.document.get("cluster") or {}).get("fake_gpu_nodes") or [])
        wanted = sorted(nodes or named)
        if before != wanted:
            had = f"fake GPUs on {', '.join(before)}" if before else "no fake GPU nodes"
            now = f"not on {', '.join(wanted)}" if wanted else "and this run names none"
            raise UsageError(f"lab '{lab}' was built with {had} (lab.json), {now}",
                             hint=f"gpulab up --name {lab} continues it as built; gpulab down "
                                  f"--name {lab} first to put them elsewhere")
    if not nodes:
        return loaded
    if not (existing or (spec is not None and spec.provider == "existing")
            or (record is not None and record.provider == "existing")):
        raise UsageError("--fake-gpu-node goes with a cluster you already have "
                         "(--kubeconfig FILE [--context NAME]): on kind the GPU workers are "
                         "the lab's own (gpu_pool.nodes)")
    if named and sorted(named) != sorted(nodes):
        raise UsageError(f"--fake-gpu-node {', '.join(nodes)} and the profile's "
                         f"cluster.fake_gpu_nodes ({', '.join(named)}) name other nodes",
                         hint="name them in one place")
    fields = spec.model_dump(exclude_unset=True) if spec is not None else {}
    try:
        cluster = ClusterSpec.model_validate({**fields, "provider": "existing",
                                              "fake_gpu_nodes": list(nodes)})
    except ValidationError as err:
        message = str(err.errors()[0]["msg"]).removeprefix("Value error, ")
        raise UsageError(f"--fake-gpu-node: {message}") from None
    profile = profile.model_copy(update={"cluster": cluster})
    problems = [m for loc, m in profile.semantic_problems()
                if loc[:2] == ("cluster", "fake_gpu_nodes")]
    if problems:
        raise UsageError(f"--fake-gpu-node: {problems[0]} (profile stack: {profile.stack})")
    return LoadedProfile(profile, loaded.source, loaded.builtin)


def for_choice(choice: ClusterChoice, host: HostTools | None = None, *,
               runtime: ContainerRuntime | None = None, kind: KindBinary | None = None,
               helm: Callable[[Path], Any] | None = None) -> ClusterProvider:
    """The provider of `choice` (providers.kind or providers.existing), reaching this host's
    tools through `host`; `runtime` (kind's Docker engine, or existing's for worker
    containers), `kind` (the kind binary) and `helm` (a Helm gateway factory) when the caller
    has them already."""
    if choice.provider == "existing":
        from gpulab.providers.existing import ExistingProvider

        return ExistingProvider(choice, host, helm=helm, runtime=runtime)
    from gpulab.providers.kind import KindProvider

    return KindProvider(host, runtime=runtime, kind=kind)
