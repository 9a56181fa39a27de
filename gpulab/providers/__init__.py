"""Where a lab's cluster and its nodes come from: the provider registry.

A stack says what it installs; a provider says how the cluster comes to be. Which providers
there are is providers.registry's to say (one folder each under gpulab/providers/); this module
asks them: which one a profile and `up`'s flags choose (`choose`), which one a lab was built on
(`restore`, `for_lab`, from lab.json), and makes it (`for_choice`). Nothing outside
gpulab/providers/ names a provider. Imports no stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from gpulab.providers import registry

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from gpulab.lab_record import LabRecord
    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile
    from gpulab.providers.base import ClusterChoice, ClusterProvider, HostTools

__all__ = ["ClusterChoice", "choose", "cluster_text", "container_lab", "for_choice",
           "for_lab", "restore", "with_fake_gpu_nodes"]


def __getattr__(name: str) -> Any:
    """`ClusterChoice`, loaded when first asked for (PEP 562): the profile schema imports the
    registry, and loading a profile need not load every provider type with it."""
    if name == "ClusterChoice":
        from gpulab.providers.base import ClusterChoice

        return ClusterChoice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def choose(profile: LabProfile, kubeconfig: Path | None = None, context: str | None = None,
           *, lab: str | None = None) -> ClusterChoice:
    """The provider for `profile`: for a lab already built (`lab`) without `--kubeconfig/
    --context`, the one its lab.json recorded (restored with the profile's settings); else the
    first registered provider that claims the profile and flags (providers.registry)."""
    from gpulab.errors import UsageError

    if lab is not None and kubeconfig is None and context is None:
        from gpulab import lab_record

        record = lab_record.read(lab)
        if record is not None and record.provider:  # '' when up recorded no cluster yet
            return cast("ClusterChoice",
                        registry.package(record.provider).restore(record, profile=profile))
    for name in registry.names():
        choice = registry.package(name).claims(profile, kubeconfig, context)
        if choice is not None:
            return cast("ClusterChoice", choice)
    wanted = profile.cluster.provider if profile.cluster is not None else registry.DEFAULT
    raise UsageError(f"cluster.provider {wanted!r}: no provider takes this profile",
                     hint=f"providers: {', '.join(registry.names())}")


def restore(record: LabRecord, kubeconfig: Path | None = None, context: str | None = None
            ) -> ClusterChoice:
    """The provider choice of a lab from its lab.json (`kubeconfig`/`context`: how its cluster
    is reached now, for a provider that takes them; UsageError from one that does not)."""
    return cast("ClusterChoice",
                registry.package(record.provider).restore(record, kubeconfig, context))


def for_lab(lab: str, host: HostTools | None = None, *, kubeconfig: Path | None = None,
            context: str | None = None, **given: Any) -> ClusterProvider:
    """The provider of a lab as its lab.json recorded it (a lab without one: the default's),
    not connected to anything yet."""
    from gpulab import lab_record

    record = lab_record.read(lab)
    if record is None:
        choice = registry.package("").restore(None, kubeconfig, context)
    else:
        choice = restore(record, kubeconfig, context)
    return for_choice(choice, host, **given)


def container_lab(labels: Mapping[str, str]) -> str:
    """The lab a container belongs to by a provider's own labels (kind's node label), or ''."""
    for name in registry.names():
        lab = str(registry.package(name).container_lab(labels))
        if lab:
            return lab
    return ""


def cluster_text(where: Mapping[str, str]) -> str:
    """`gpulab labs`' one line for a lab's `where` (its provider's words)."""
    return str(registry.package(where.get("provider", "")).cluster_text(where))


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


def for_choice(choice: ClusterChoice, host: HostTools | None = None, **given: Any
               ) -> ClusterProvider:
    """The provider of `choice`, reaching this host's tools through `host`; `given`: what the
    caller has already (e.g. `runtime`, a Docker engine; `helm`, a Helm gateway factory)."""
    return cast("ClusterProvider", registry.package(choice.provider).make(choice, host, **given))
