"""What `verify --kubeconfig` read from one cluster: a snapshot of summaries, never Secrets.

Conventions as gpulab.verify.state: `None` = not read (the call failed: its error is in
`read_errors`), `()` = read, nothing there. Objects are summaries (`observe.summarize_*`), so a
recording of a cluster with thousands of pods stays small and holds no pod specs beyond names,
labels, GPU annotations and resources.
"""

from __future__ import annotations

# pydantic reads these dataclasses' annotations at run time (gpulab.verify.recording).
from collections.abc import Mapping  # noqa: TC003
from dataclasses import asdict, dataclass, field
from typing import Any

from gpulab.verify.state import (  # noqa: TC001 - pydantic reads them at run time
    CredentialProbe,
    PodRun,
)

__all__ = ["ClusterRun", "ClusterSnapshot", "ClusterVerifyState", "IsolationProbe", "JsonObj"]

JsonObj = dict[str, Any]


@dataclass(frozen=True)
class ClusterSnapshot:
    """One cluster (one kubeconfig and context), as read by `observe.read_cluster`.

    name: the member name (the context, else the kubeconfig's file name).
    server: the API server URL; version: its `/version` gitVersion; error: it did not answer.
    nodes: whole Nodes minus managedFields (HAMi's annotations and allocatable live there).
    pods: summaries of every pod; workloads: Deployments, DaemonSets and StatefulSets (those
    of a kind in `read_errors` were not read: None only when no kind was);
    webhooks: MutatingWebhookConfigurations; queues: KAI Queues (name, labels, spec, and
    status.allocated); kai_config: KAI's `Config` (its admission and global settings; None:
    absent or unread); tenant_control_planes: Kamaji's TenantControlPlanes;
    hami_device_config: the `device-config.yaml` of the ConfigMap HAMi's scheduler mounts
    (None: no HAMi scheduler, absent or unread).
    read_errors: what could not be read (e.g. 403 for lack of RBAC), by what.
    """

    name: str
    server: str = ""
    version: str = ""
    error: str = ""
    nodes: tuple[JsonObj, ...] | None = None
    pods: tuple[JsonObj, ...] | None = None
    workloads: tuple[JsonObj, ...] | None = None
    webhooks: tuple[JsonObj, ...] | None = None
    queues: tuple[JsonObj, ...] | None = None
    kai_config: JsonObj | None = None
    tenant_control_planes: tuple[JsonObj, ...] | None = None
    hami_device_config: JsonObj | None = None
    read_errors: Mapping[str, str] = field(default_factory=dict)
    observed_at: str = ""

    def to_dict(self) -> JsonObj:
        return asdict(self)


@dataclass(frozen=True)
class IsolationProbe:
    """Another cluster's view of this run's pods, taken while they existed (GPU-06).

    other: the other member; same_server: both kubeconfigs name one API server (tenancy by
    namespace: the credential probe does not apply); listed: this run's pods the other's
    credentials could list in this run's namespace (by uid); refused: the listing was refused
    (403: what isolation needs); listing_error: it failed otherwise; credentials: this member's
    credentials presented to the other's API server (None when same_server).
    """

    other: str
    same_server: bool = False
    listed: tuple[str, ...] = ()
    refused: str = ""
    listing_error: str = ""
    credentials: CredentialProbe | None = None


@dataclass(frozen=True)
class ClusterRun:
    """What verify did in one cluster and saw of its pods (`execute.run_plan`).

    namespace, run_id: where its pods lived and the `gpulab.dev/run` label they carried (the
    plan is derived again from the snapshot on replay: same card, same pods).
    pods: one PodRun per plan pod in plan order (None: no pod was attempted; see
    `namespace_error`); cleanup_error: the namespace could not be removed (a note, never a
    verdict); left: `--keep` left it on purpose.
    """

    member: str
    namespace: str
    run_id: str
    pods: tuple[PodRun, ...] | None = None
    namespace_error: str = ""
    cleanup_error: str = ""
    left: bool = False
    seconds: float = 0.0
    isolation: tuple[IsolationProbe, ...] | None = None  # None: one cluster, or not probed


@dataclass(frozen=True)
class ClusterVerifyState:
    """One `verify --kubeconfig` run: every cluster's snapshot and run (the reports' state)."""

    lab: str  # what reports call the subject: "cluster <names>"
    snapshots: tuple[ClusterSnapshot, ...]
    runs: tuple[ClusterRun, ...] = ()
    observed_at: str = ""
    seconds: float = 0.0
