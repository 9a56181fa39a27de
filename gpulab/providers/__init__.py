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
    from gpulab.providers.base import ClusterProvider, HostTools

__all__ = ["PROVIDERS", "ClusterChoice", "choose", "for_choice"]

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
