"""What vcluster-kai's `verify` observed: frozen snapshots the checks read and recordings store.

Same conventions as gpulab.checks.state (the kamaji-hami verify): raw API objects are the JSON the
API returned minus `metadata.managedFields`; `None` = not observed in this run, `()` = observed and
empty, a non-empty `..._error` = the call that would have filled a field failed. `to_dict` and
the strict reading of gpulab.verify.recording define the recording format
(docs/recording-format.md); unknown keys are ignored on read and missing ones take their
defaults.
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
)

__all__ = ["HostState", "KaiLabState", "ProbeRun", "TeamState"]


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

@dataclass(frozen=True)
class HostState:
    """What verify read on the host cluster itself.

    gpu_nodes: the pool's nodes (label run.ai/simulated-gpu-node-pool), read first; on a
      cluster whose GPUs the lab found rather than made (`gpus` found: the provider's
      LabCluster) every node advertising nvidia.com/gpu, and the checks size their pods from
      those GPUs (render.sized_for_host).
    gpu_users: pods not made by verify that hold or ask for GPUs (a GPU request or KAI's
      gpu-fraction annotation), read before verify creates anything; when there are any, the GPU
      checks do not run (their expectations assume an idle GPU and empty queues).
    queues: every Queue, read once every team's share pod had been waited for and (when they all
      ran) the team queues showed their allocation, or the wait for that ran out (`queue_wait`).
    """

    gpu_nodes: tuple[JsonObj, ...] | None = None
    nodes_error: str = ""
    gpu_users: tuple[JsonObj, ...] | None = None
    gpu_users_error: str = ""
    queues: tuple[JsonObj, ...] | None = None
    queues_error: str = ""
    queue_wait: str = ""
    # pool: the lab's own simulated GPU pool; found: the nodes advertising GPUs (LabCluster.gpus)
    gpus: str = "pool"
    # a recording of an older gpulab said `provider` instead: '' (the lab's own pool) or the
    # name of the provider whose GPUs were those found; read (record.py), never written
    provider: str = ""

    def to_dict(self) -> JsonObj:
        return {k: v for k, v in asdict(self).items() if k != "provider"}

@dataclass(frozen=True)
class KaiLabState:
    """One observation of a vcluster-kai lab."""

    lab: str
    host: HostState
    teams: Mapping[str, TeamState]
    checks: tuple[str, ...]  # check ids observed for, in registry order
    observed_at: str = ""
    seconds: float = 0.0
    run_id: str = ""  # the gpulab.dev/run label of verify's pods ("" in older recordings)

    def team(self, name: str) -> TeamState | None:
        return self.teams.get(name)
