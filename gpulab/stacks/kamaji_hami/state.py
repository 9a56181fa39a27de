"""What kamaji-hami's `verify` observed: one `TenantState` per tenant, in a `LabState`.

Built from the shared pieces of `gpulab.verify.state` (see its conventions); `to_dict` and the
recording format's pydantic reading define it (docs/recording-format.md).
"""

from __future__ import annotations

# pydantic reads these dataclasses' annotations at run time (recording.read_document):
# the names they use are imported for real, not under TYPE_CHECKING.
from collections.abc import Mapping  # noqa: TC003
from dataclasses import asdict, dataclass, field

from gpulab.verify.state import (  # noqa: TC001
    CredentialProbe,
    JsonObj,
    Listing,
    LogsProbe,
    PodRun,
)

__all__ = ["LabState", "TenantState"]


@dataclass(frozen=True)
class TenantState:
    """Everything observed about one tenant, from the management cluster and its own API."""

    tenant: str
    # Management cluster (TC-01).
    tcp: JsonObj | None = None
    tcp_pods: tuple[JsonObj, ...] | None = None
    management_error: str = ""
    # The tenant's API server.
    api_version: str = ""
    api_error: str = ""
    nodes: tuple[JsonObj, ...] | None = None
    nodes_error: str = ""
    system_pods: tuple[JsonObj, ...] | None = None  # kube-system (+ HAMi's namespace)
    calico: JsonObj | None = None  # DaemonSet kube-system/calico-node (None: absent or unread)
    hami_device_configmap: bool | None = None  # ConfigMap hami-scheduler-device exists
    system_error: str = ""  # reading system pods, calico-node or HAMi's ConfigMap failed
    logs_probes: tuple[LogsProbe, ...] | None = None
    # GPU scenario (TC-03, TC-05..TC-07).
    gpu_pods: tuple[PodRun, ...] | None = None
    scenario_error: str = ""
    # Isolation (TC-08).
    listing: Listing | None = None
    credential_probes: tuple[CredentialProbe, ...] | None = None
    # Bookkeeping.
    timings: Mapping[str, float] = field(default_factory=dict)  # TC id -> seconds observing
    cleanup_error: str = ""
    internal_error: str = ""  # observation crashed (a bug): every check reports `error`
    # "machines": its workers are machines that joined it (gpulab join, on an existing
    # cluster); the checks judge the nodes it lists and the GPUs they register, not the profile's
    # kindest/node workers and mock GPUs ("": those, as on kind and cluster.workers: containers).
    workers: str = ""

    def pod_run(self, name: str) -> PodRun | None:
        for run in self.gpu_pods or ():
            if run.name == name:
                return run
        return None

    def to_dict(self) -> JsonObj:
        return asdict(self)

@dataclass(frozen=True)
class LabState:
    """One observation of a whole lab: every tenant's state, for the checks that were asked."""

    lab: str
    tenants: Mapping[str, TenantState]
    checks: tuple[str, ...]  # TC ids the observation was made for, in TC order
    observed_at: str = ""  # ISO 8601 UTC, when observation started
    seconds: float = 0.0  # wall time of the observation (including cleanup)
    run_id: str = ""  # the gpulab.dev/run label of verify's pods ("" in older recordings)

    def tenant(self, name: str) -> TenantState | None:
        return self.tenants.get(name)
