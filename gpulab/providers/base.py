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
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["ClusterChoice", "ClusterIdentity", "ClusterProvider", "ManagementRow", "Teardown"]


@dataclass
class Teardown:
    """What `down` removed and what (if anything) is left."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ClusterChoice:
    provider: str  # kind | existing
    kubeconfig: Path | None = None  # existing: None = $KUBECONFIG, else ~/.kube/config
    context: str | None = None  # existing: None = the kubeconfig's current context
    expose: str = "auto"  # existing: auto | LoadBalancer | NodePort
    node_address: str | None = None
    helm_parallel: int = 4  # existing: Helm installs at once (teams install concurrently)


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


class ClusterProvider(Protocol):
    """How a lab's cluster comes to be and goes again (kind's providers.Provider is the model):
    what it refuses before anything is created, status's management row, and how what gpulab
    made is removed again (`forget` removes the lab's files and merged contexts, once, after
    what the provider removed itself). The `management/cluster` step is the provider's:
    providers.existing.ExistingCluster; kind's is still built by the stacks
    (stacks.common.ManagementCluster)."""

    name: str

    def management(self, lab: str) -> ManagementRow: ...

    def teardown(self, lab: str, record: Any,  # gpulab.lab_record.LabRecord | None (its
                 forget: Callable[[], list[str]]) -> Teardown: ...  # import would be a cycle)
