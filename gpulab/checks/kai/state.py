"""What vcluster-kai's `verify` observed: frozen snapshots the checks read and recordings store.

Same conventions as gpulab.checks.state (the kamaji-hami verify): raw API objects are the JSON the
API returned minus `metadata.managedFields`; `None` = not observed in this run, `()` = observed and
empty, a non-empty `..._error` = the call that would have filled a field failed. `to_dict` and
`from_dict` define the recording format (docs/vcluster-kai.md); unknown keys are ignored on
read and missing ones take their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gpulab.checks.state import CredentialProbe, JsonObj, Listing

__all__ = ["HostState", "KaiLabState", "ProbeRun", "TeamState"]


def _objs(value: Any) -> tuple[JsonObj, ...]:
    return tuple(dict(v) for v in value or () if isinstance(v, Mapping))


def _opt_objs(value: Any) -> tuple[JsonObj, ...] | None:
    return None if value is None else _objs(value)


def _opt_obj(value: Any) -> JsonObj | None:
    return dict(value) if isinstance(value, Mapping) else None


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return "" if value is None else str(value)


@dataclass(frozen=True)
class ProbeRun:
    """One pod verify created in a team's vCluster, followed to the host.

    created: the virtual pod as the vCluster API returned it on create; None if not created.
    host_name: the host pod's name (render.host_pod_name) in the team's host namespace.
    host: the host pod's last snapshot (what KAI sees: schedulerName, queue label, node);
      None when the vCluster never synced it.
    pod_group: KAI's PodGroup of the host pod (annotation `pod-group-name`), last snapshot.
    events: host events about the host pod and its PodGroup, oldest first.
    outcome: how the bounded wait ended: running | pending (KAI said why it cannot place it) |
      grouped (a PodGroup exists: all the queue probe waits for) | scheduled (placed though it
      should not be) | failed | timeout | not-synced | not-created | create-failed.
    """

    name: str
    check: str
    created: JsonObj | None = None
    create_error: str = ""
    host_name: str = ""
    host: JsonObj | None = None
    pod_group: JsonObj | None = None
    events: tuple[JsonObj, ...] = ()
    outcome: str = "not-created"
    waited: float = 0.0
    last_seen: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeRun:
        return cls(
            name=_str(data, "name"),
            check=_str(data, "check"),
            created=_opt_obj(data.get("created")),
            create_error=_str(data, "create_error"),
            host_name=_str(data, "host_name"),
            host=_opt_obj(data.get("host")),
            pod_group=_opt_obj(data.get("pod_group")),
            events=_objs(data.get("events")),
            outcome=_str(data, "outcome") or "not-created",
            waited=float(data.get("waited") or 0.0),
            last_seen=_str(data, "last_seen"),
        )


@dataclass(frozen=True)
class TeamState:
    """Everything observed about one team: its vCluster on the host and through its own API."""

    team: str
    # The host (management cluster): the vCluster's control-plane pods (KAI-01 diagnostics).
    control_plane_pods: tuple[JsonObj, ...] | None = None
    host_error: str = ""
    # The vCluster's API, reached from the host with the team's saved kubeconfig.
    api_server: str = ""
    api_version: str = ""
    api_error: str = ""
    nodes: tuple[JsonObj, ...] | None = None
    nodes_error: str = ""
    # verify's pods (KAI-04..KAI-07, the queue finding).
    pods: tuple[ProbeRun, ...] | None = None
    scenario_error: str = ""
    # Isolation (KAI-08).
    listing: Listing | None = None
    credential_probes: tuple[CredentialProbe, ...] | None = None
    # Bookkeeping.
    timings: Mapping[str, float] = field(default_factory=dict)
    cleanup_error: str = ""
    internal_error: str = ""

    def run(self, name: str) -> ProbeRun | None:
        for run in self.pods or ():
            if run.name == name:
                return run
        return None

    def to_dict(self) -> JsonObj:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TeamState:
        listing = data.get("listing")
        probes = data.get("credential_probes")
        pods = data.get("pods")
        return cls(
            team=_str(data, "team"),
            control_plane_pods=_opt_objs(data.get("control_plane_pods")),
            host_error=_str(data, "host_error"),
            api_server=_str(data, "api_server"),
            api_version=_str(data, "api_version"),
            api_error=_str(data, "api_error"),
            nodes=_opt_objs(data.get("nodes")),
            nodes_error=_str(data, "nodes_error"),
            pods=None if pods is None else tuple(ProbeRun.from_dict(p) for p in pods),
            scenario_error=_str(data, "scenario_error"),
            listing=Listing.from_dict(listing) if isinstance(listing, Mapping) else None,
            credential_probes=None if probes is None
            else tuple(CredentialProbe.from_dict(p) for p in probes),
            timings={str(k): float(v) for k, v in (data.get("timings") or {}).items()},
            cleanup_error=_str(data, "cleanup_error"),
            internal_error=_str(data, "internal_error"),
        )


@dataclass(frozen=True)
class HostState:
    """What verify read on the host cluster itself.

    gpu_nodes: the pool's nodes (label run.ai/simulated-gpu-node-pool), read first.
    queues: every Queue, read once every team's share pod had been waited for and (when they all
      ran) the team queues showed their allocation, or the wait for that ran out (`queue_wait`).
    """

    gpu_nodes: tuple[JsonObj, ...] | None = None
    nodes_error: str = ""
    queues: tuple[JsonObj, ...] | None = None
    queues_error: str = ""
    queue_wait: str = ""

    def to_dict(self) -> JsonObj:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostState:
        return cls(
            gpu_nodes=_opt_objs(data.get("gpu_nodes")),
            nodes_error=_str(data, "nodes_error"),
            queues=_opt_objs(data.get("queues")),
            queues_error=_str(data, "queues_error"),
            queue_wait=_str(data, "queue_wait"),
        )


@dataclass(frozen=True)
class KaiLabState:
    """One observation of a vcluster-kai lab."""

    lab: str
    host: HostState
    teams: Mapping[str, TeamState]
    checks: tuple[str, ...]  # check ids observed for, in registry order
    observed_at: str = ""
    seconds: float = 0.0

    def team(self, name: str) -> TeamState | None:
        return self.teams.get(name)
