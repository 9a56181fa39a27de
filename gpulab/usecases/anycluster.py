"""`verify --kubeconfig`: clusters gpulab did not build, read, planned, run and judged."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from gpulab.adapters.kube import KubeClient
    from gpulab.cluster.kubeconfig import ClusterAccess
    from gpulab.cluster.state import ClusterSnapshot
    from gpulab.verify.observe import CrossTenantGateway
    from gpulab.verify.report import VerifyReport

__all__ = ["FOREIGN_UNREACHABLE", "cluster_members", "inspect_clusters", "replay_clusters",
           "verify_clusters"]


def cluster_members(kubeconfigs: Sequence[Path], contexts: Sequence[str]
                    ) -> list[ClusterAccess]:
    """One per cluster of `verify --kubeconfig`, read as kubectl reads kubeconfigs
    (gpulab.cluster.kubeconfig): per `--kubeconfig` (`--context` once for all files, or once per
    file, in order) or, without one, per `--context` of $KUBECONFIG / ~/.kube/config."""
    from gpulab.cluster.kubeconfig import resolve

    return resolve(kubeconfigs, contexts)


# client-go's retries of an answer carrying Retry-After (rest/request.go:166, kubernetes-1.35.2)
CLIENT_GO_RETRIES = 10
FOREIGN_UNREACHABLE = ("check the kubeconfig's server address, the network path to it, and "
                       "--request-timeout")


@contextmanager
def _cluster_clients(members: Sequence[ClusterAccess], *, request_timeout: float | None = 30
                     ) -> Iterator[list[tuple[str, str, KubeClient]]]:
    """(member, server, client) per cluster, closed on exit; an unusable kubeconfig is a
    UsageError before any cluster is contacted."""
    from gpulab.adapters.kube import KubeClient, RetryPolicy
    from gpulab.cluster.kubeconfig import exec_plugin_missing, proxy_problem
    from gpulab.errors import AdapterError

    clients: list[tuple[str, str, KubeClient]] = []
    try:
        for member in members:
            missing = (proxy_problem(member.config, member.context)
                       or exec_plugin_missing(member.config, member.context))
            if missing:  # kubectl stops here too, and nothing unauthenticated is sent
                raise UsageError(f"{member.source.describe()}, context {member.context}: "
                                 f"{missing}", hint="fix the kubeconfig's user or proxy-url "
                                                    "(kubectl fails on it too)")
            try:
                client = KubeClient(config=member.config, context=member.context,
                                    request_timeout=request_timeout,
                                    retry=RetryPolicy.disabled(), retry_after=CLIENT_GO_RETRIES,
                                    unreachable_hint=FOREIGN_UNREACHABLE)
            except AdapterError as err:
                raise UsageError(f"{member.source.describe()}, context {member.context}: "
                                 f"{err.message}",
                                 hint="check the kubeconfig (kubectl config view --minify "
                                      f"--context {member.context})") from None
            clients.append((member.name, client.server, client))
        yield clients
    finally:
        for _n, _s, made in clients:
            made.close()


def inspect_clusters(kubeconfigs: Sequence[Path], contexts: Sequence[str], *,
                     request_timeout: float | None = 30,
                     discovery_timeout: float | None = 60) -> list[ClusterSnapshot]:
    """Read each cluster, read-only (gpulab.cluster.observe), each within `discovery_timeout`."""
    from gpulab.cluster.observe import read_cluster

    with _cluster_clients(cluster_members(kubeconfigs, contexts),
                          request_timeout=request_timeout) as clients:
        return [read_cluster(kube, name, server, deadline=discovery_timeout)
                for name, server, kube in clients]


def verify_clusters(kubeconfigs: Sequence[Path], contexts: Sequence[str], *,
                    namespace: str | None, keep: bool,
                    progress: Callable[[str, str], None] | None = None,
                    explain: Callable[[Any], None] | None = None,
                    request_timeout: float | None = 30,
                    discovery_timeout: float | None = 60) -> VerifyReport:
    """`verify --kubeconfig`: read, plan, run and judge every cluster (gpulab.cluster.run)."""
    import tempfile
    from pathlib import Path

    from gpulab.cluster.run import run_verify

    members = cluster_members(kubeconfigs, contexts)
    with _cluster_clients(members, request_timeout=request_timeout) as clients, \
            tempfile.TemporaryDirectory(prefix="gpulab-verify-") as scratch:
        cross = (_cross_gateway({m.name: (m.config, m.context) for m in members},
                                Path(scratch), request_timeout=request_timeout)
                 if len(members) > 1 else None)
        return run_verify(clients, namespace=namespace, keep=keep, progress=progress,
                          cross=cross, explain=explain, discovery_timeout=discovery_timeout)


def _cross_gateway(members: dict[str, tuple[dict[str, Any], str]], scratch: Path, *,
                   request_timeout: float | None = 10) -> CrossTenantGateway:
    """GPU-06's credential probe: one member's user presented to another's API server (URL and
    CA), each kubeconfig taken at its context (written to `scratch`, 0600, then removed)."""
    import yaml

    from gpulab.adapters.kube import KubeClient, RetryPolicy
    from gpulab.paths import write_secret
    from gpulab.verify.observe import kubeconfig_cross_gateway

    def kubeconfig_of(member: str) -> Path:
        config, context = members[member]
        return write_secret(scratch / f"{member}.kubeconfig",
                            yaml.safe_dump({**config, "current-context": context}).encode())

    def gateway(path: Path) -> KubeClient:
        return KubeClient(path, request_timeout=request_timeout, retry=RetryPolicy.disabled(),
                          unreachable_hint=FOREIGN_UNREACHABLE)

    return kubeconfig_cross_gateway(kubeconfig_of, gateway, scratch)


def replay_clusters(directory: Path) -> VerifyReport:
    """Judge a recording of `verify --kubeconfig` offline."""
    from gpulab.cluster.run import replay

    return replay(directory)
