"""What kamaji-hami's `verify` observed: one `TenantState` per tenant, in a `LabState`.

Built from the shared pieces of `gpulab.verify.state` (see its conventions); `to_dict`/`from_dict`
define the recording format (docs/recording-format.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gpulab.verify.state import (
    CredentialProbe,
    JsonObj,
    Listing,
    LogsProbe,
    PodRun,
    opt_json_obj,
    opt_json_objs,
    str_field,
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

    def pod_run(self, name: str) -> PodRun | None:
        for run in self.gpu_pods or ():
            if run.name == name:
                return run
        return None

    def to_dict(self) -> JsonObj:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TenantState:
        listing = data.get("listing")
        probes = data.get("credential_probes")
        logs = data.get("logs_probes")
        runs = data.get("gpu_pods")
        cm = data.get("hami_device_configmap")
        return cls(
            tenant=str_field(data, "tenant"),
            tcp=opt_json_obj(data.get("tcp")),
            tcp_pods=opt_json_objs(data.get("tcp_pods")),
            management_error=str_field(data, "management_error"),
            api_version=str_field(data, "api_version"),
            api_error=str_field(data, "api_error"),
            nodes=opt_json_objs(data.get("nodes")),
            nodes_error=str_field(data, "nodes_error"),
            system_pods=opt_json_objs(data.get("system_pods")),
            calico=opt_json_obj(data.get("calico")),
            hami_device_configmap=None if cm is None else bool(cm),
            system_error=str_field(data, "system_error"),
            logs_probes=None if logs is None else tuple(LogsProbe.from_dict(p) for p in logs),
            gpu_pods=None if runs is None else tuple(PodRun.from_dict(r) for r in runs),
            scenario_error=str_field(data, "scenario_error"),
            listing=Listing.from_dict(listing) if isinstance(listing, Mapping) else None,
            credential_probes=None if probes is None
            else tuple(CredentialProbe.from_dict(p) for p in probes),
            timings={str(k): float(v) for k, v in (data.get("timings") or {}).items()},
            cleanup_error=str_field(data, "cleanup_error"),
            internal_error=str_field(data, "internal_error"),
        )


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
