"""The `vcluster-kai` profile: teams with their own vCluster sharing simulated GPUs through KAI.

Reproduces the vCluster + KAI write-up (three teams, one L40S, KAI Scheduler's hierarchical
queues) on a kind cluster whose GPU worker is simulated by fake-gpu-operator. Facts and pins:
docs/dev/upstream-facts/stack-vcluster-kai.md. Same rules as every profile: unknown keys are
refused, every field is typed, and cross-field rules are reported with the field path they are
about.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gpulab.profile.base import (
    LOOPBACK,
    NODE_PORTS,
    ChartRef,
    HelmComponent,
    HostNeeds,
    HostPort,
    LabProfile,
    Strict,
    dns_label,
    node_port,
)

__all__ = [
    "DEFAULT_QUEUES",
    "VCLUSTER_LISTEN_ADDRESS",
    "GpuPoolSpec",
    "KaiComponentsSpec",
    "KaiSchedulerSpec",
    "OrgQueueSpec",
    "QueueResource",
    "QueueResources",
    "TeamQueueSpec",
    "TeamSpec",
    "VClusterChartSpec",
    "VclusterKaiProfile",
]

# Queues KAI creates itself (defaultQueue.createDefaultQueue); a profile may not redefine them.
DEFAULT_QUEUES = ("default-parent-queue", "default-queue")
# Where kind publishes each team's vCluster API on the host (profile.base.LOOPBACK says why).
VCLUSTER_LISTEN_ADDRESS = LOOPBACK
# Each vCluster Service also exposes the kubelet port (10250) when
# `networking.advanced.proxyKubelets.byHostname` is on, its default (chart templates/service.yaml
# :39-45, values.yaml:1159-1162 at vCluster v0.35.3), with `nodePort:
# controlPlane.service.kubeletNodePort`, default 0 = any free port (values.yaml:586-587): a random
# NodePort can take another team's API NodePort before that team's vCluster is installed. gpulab
# pins it per team at the API NodePort minus this offset (31443 -> 30443).
KUBELET_PORT_OFFSET = 1000
_KINDEST_MINOR = re.compile(r"^kindest/node:v1\.(\d+)\.\d+@")
# Host Kubernetes minors each pinned release is tested with (facts doc §4): KAI v0.16.8's release
# e2e runs v1.28-v1.36; vCluster 0.35's compatibility matrix lists hosts v1.34-v1.36.
_KAI_HOST_MINORS = {"v0.16": (28, 36)}
_VCLUSTER_HOST_MINORS = {"0.35": (34, 36)}
# KAI's seven deployments and fake-gpu-operator on the host (~1.5 GiB), a vCluster control plane
# per team (~0.7 GiB each, its SQLite PVC on the node's disk), a simulated GPU node (~0.3 GiB).
KAI_MEMORY_GIB = 1.5
TEAM_MEMORY_GIB = 0.7
TEAM_DISK_GIB = 1.0
GPU_NODE_MEMORY_GIB = 0.3


def _number(value: float) -> float | int:
    """1.0 → 1 (KAI's docs and the write-up write whole numbers as integers)."""
    return int(value) if float(value).is_integer() else value


def _release_line(version: str) -> str:
    """'v0.16.8' → 'v0.16', '0.35.3' → '0.35'."""
    return ".".join(version.split(".")[:2])


class QueueResource(Strict):
    """One resource of a KAI queue, as in the Queue CRD (`spec.resources.<gpu|cpu|memory>`).

    Units are KAI's: GPUs (fractions allowed), CPU millicores, memory MB (10^6 bytes); -1 means
    unlimited. `limit` has no default on purpose: KAI reads an omitted limit as 0, which lets
    nothing run in the queue.
    """

    quota: float = Field(description="guaranteed amount (deserved quota); -1 = unlimited")
    limit: float = Field(description="the most the queue may use, over quota included; -1 = "
                                     "unlimited (required: an omitted limit is 0 in KAI)")
    overQuotaWeight: float = Field(default=1, ge=0,
                                   description="share of idle capacity beyond quota")

    @field_validator("quota", "limit")
    @classmethod
    def _amount(cls, value: float) -> float:
        if value < 0 and value != -1:
            raise ValueError("must be >= 0, or -1 for unlimited")
        return value

    @model_validator(mode="after")
    def _limit_covers_quota(self) -> QueueResource:
        if self.limit != -1 and (self.quota == -1 or self.limit < self.quota):
            raise ValueError(f"limit {self.limit:g} is below quota {self.quota:g}")
        return self

    def to_kai(self) -> dict[str, float | int]:
        """The CRD's form; every key written out (an omitted limit would be 0 in KAI)."""
        return {"quota": _number(self.quota), "limit": _number(self.limit),
                "overQuotaWeight": _number(self.overQuotaWeight)}


def _unlimited() -> QueueResource:
    return QueueResource(quota=0, limit=-1, overQuotaWeight=1)


class QueueResources(Strict):
    """`gpu` is required; `cpu` and `memory` default to quota 0, limit -1 (unlimited), as KAI's own
    default queues: a queue limit on them would also count the requests vCluster injects."""

    gpu: QueueResource
    cpu: QueueResource = Field(default_factory=_unlimited)
    memory: QueueResource = Field(default_factory=_unlimited)

    def to_kai(self) -> dict[str, dict[str, float | int]]:
        return {"gpu": self.gpu.to_kai(), "cpu": self.cpu.to_kai(),
                "memory": self.memory.to_kai()}


class _QueueBase(Strict):
    display_name: str = Field(default="", description="the Queue's spec.displayName")
    priority: int | None = Field(default=None, description="KAI queue priority (KAI's default "
                                                           "is 100 when unset)")
    resources: QueueResources


class OrgQueueSpec(_QueueBase):
    """The parent queue every team queue hangs under (the write-up's `ml-org`)."""

    name: str

    _name = field_validator("name")(dns_label)


class TeamQueueSpec(_QueueBase):
    """A team's leaf queue; its name defaults to the team's name."""

    name: str | None = None

    @field_validator("name")
    @classmethod
    def _queue_name(cls, value: str | None) -> str | None:
        return None if value is None else dns_label(value)


class TeamSpec(Strict):
    """One team: a vCluster (Helm release `<name>` in namespace `vcluster-<name>`) and a queue."""

    name: str
    api_node_port: int = Field(description="NodePort of the vCluster API on the kind nodes")
    api_host_port: int | None = Field(
        default=None, ge=1024, le=65535,
        description="port on the host's 127.0.0.1 that kind publishes to the NodePort; the host "
                    "reaches the vCluster at https://127.0.0.1:<port> (default: api_node_port)")
    queue: TeamQueueSpec

    @field_validator("name")
    @classmethod
    def _team_name(cls, value: str) -> str:
        value = dns_label(value)
        if len(value) > 53:
            raise ValueError("must be at most 53 characters (it is the Helm release name)")
        if value == "management":
            raise ValueError("'management' is the host cluster's kubeconfig name; choose another")
        return value

    _node_port = field_validator("api_node_port")(node_port)

    @property
    def kubelet_node_port(self) -> int:
        """The NodePort of the vCluster's kubelet port (see KUBELET_PORT_OFFSET); the profile
        refuses one below the NodePort range or taken by another team's port."""
        return self.api_node_port - KUBELET_PORT_OFFSET

    @property
    def host_port(self) -> int:
        """Where the host reaches this team's vCluster API (127.0.0.1)."""
        return self.api_host_port or self.api_node_port

    @property
    def queue_name(self) -> str:
        return self.queue.name or self.name

    @property
    def namespace(self) -> str:
        """The host namespace of the team's vCluster (the vcluster CLI's default)."""
        return f"vcluster-{self.name}"


class GpuPoolSpec(Strict):
    """The simulated GPU node pool: kind workers fake-gpu-operator turns into GPU nodes."""

    name: str = Field(default="default",
                      description="value of the run.ai/simulated-gpu-node-pool node label")
    model: str = Field(min_length=1, description="gpuProduct fake-gpu-operator reports, e.g. "
                                                 "NVIDIA-L40S")
    count: int = Field(default=1, ge=1, le=16, description="GPUs per node")
    memory_mib: int = Field(gt=0, description="memory of one GPU in MiB")
    nodes: int = Field(default=1, ge=1, le=4, description="kind workers in the pool")

    _pool = field_validator("name")(dns_label)

    @field_validator("model")
    @classmethod
    def _label_value(cls, value: str) -> str:
        if len(value) > 63 or not re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", value):
            raise ValueError(f"'{value}' must be a valid label value (it becomes "
                             "nvidia.com/gpu.product): letters, digits, '-', '_', '.'")
        return value

    @property
    def total(self) -> int:
        return self.count * self.nodes


class KaiSchedulerSpec(HelmComponent):
    """KAI Scheduler (GPU sharing is always on: the lab is about fractions)."""

    reservation_namespace: str = Field(
        default="kai-resource-reservation",
        description="where KAI's binder creates GPU reservation pods; fake-gpu-operator's "
                    "status-updater must watch the same namespace",
    )

    _reservation = field_validator("reservation_namespace")(dns_label)


class VClusterChartSpec(Strict):
    """The vCluster chart; one release per team (values apply to every team)."""

    chart: ChartRef
    values: dict[str, Any] = Field(default_factory=dict, description="merged into gpulab's values")


class KaiComponentsSpec(Strict):
    fake_gpu_operator: HelmComponent
    kai_scheduler: KaiSchedulerSpec
    vcluster: VClusterChartSpec


class VclusterKaiProfile(LabProfile):
    """vClusters per team on a kind host, sharing simulated GPUs through KAI Scheduler's queues."""

    stack: Literal["vcluster-kai"]
    gpu_pool: GpuPoolSpec
    components: KaiComponentsSpec
    org_queue: OrgQueueSpec
    # verify's KAI-05 shares one GPU among every team in hundredths (render.ProbeSizes:
    # floor(100 / teams) / 100 each): beyond 100 teams a share would be 0
    teams: list[TeamSpec] = Field(min_length=1, max_length=100)

    def member_names(self) -> list[str]:
        """The teams, each with a kubeconfig of its own (`gpulab kubeconfig <team>`)."""
        return [team.name for team in self.teams]

    def host_needs(self) -> HostNeeds:
        base = super().host_needs()
        teams = len(self.teams)
        memory = (base.memory_gib + KAI_MEMORY_GIB + TEAM_MEMORY_GIB * teams
                  + GPU_NODE_MEMORY_GIB * self.gpu_pool.nodes)
        return HostNeeds(memory, base.disk_gib + TEAM_DISK_GIB * teams, base.cpus)

    def host_ports(self) -> list[HostPort]:
        """Each team's vCluster API port on the host's 127.0.0.1 (render.cluster_needs asks for
        exactly these, and kind publishes them)."""
        return [HostPort(VCLUSTER_LISTEN_ADDRESS, team.host_port, "tcp",
                         f"team {team.name}'s vCluster API (teams[{index}]."
                         f"{'api_host_port' if team.api_host_port else 'api_node_port'})")
                for index, team in enumerate(self.teams)]

    def team(self, name: str) -> TeamSpec:
        for team in self.teams:
            if team.name == name:
                return team
        known = ", ".join(t.name for t in self.teams)
        raise KeyError(f"no team '{name}' in profile (teams: {known})")

    def semantic_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Rules across fields, each with the field path it is about."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        problems += self._version_problems()
        queues: dict[str, str] = {self.org_queue.name: "org_queue"}
        if self.org_queue.name in DEFAULT_QUEUES:
            problems.append((("org_queue", "name"),
                             f"'{self.org_queue.name}' is created by KAI itself; choose another"))
        teams: set[str] = set()
        ports: dict[int, str] = {}
        host_ports: dict[int, str] = {}
        for index, team in enumerate(self.teams):
            at = ("teams", index)
            if team.name in teams:
                problems.append(((*at, "name"), f"duplicate team name '{team.name}'"))
            teams.add(team.name)
            queue = team.queue_name
            where = (*at, "queue", "name") if team.queue.name else (*at, "name")
            if queue in DEFAULT_QUEUES:
                problems.append((where, f"queue '{queue}' is created by KAI itself; choose "
                                        "another"))
            elif queue in queues:
                problems.append((where, f"queue '{queue}' is already used by {queues[queue]}"))
            queues.setdefault(queue, f"teams[{index}]")
            if team.api_node_port in ports:
                problems.append(((*at, "api_node_port"),
                                 f"port {team.api_node_port} is already used by "
                                 f"{ports[team.api_node_port]}"))
            ports.setdefault(team.api_node_port, f"teams[{index}]")
            if team.host_port in host_ports:
                problems.append(((*at, "api_host_port"),
                                 f"host port {team.host_port} is already used by "
                                 f"{host_ports[team.host_port]}"))
            host_ports.setdefault(team.host_port, f"teams[{index}]")
        problems += self._kubelet_port_problems(ports)
        return problems

    def _kubelet_port_problems(self, api_ports: dict[int, str]
                               ) -> list[tuple[tuple[str | int, ...], str]]:
        """Every team's kubelet NodePort (api_node_port - 1000) is in the NodePort range and
        differs from every team's API NodePort and every other kubelet NodePort: the ports of all
        vCluster Services are fixed, so none is left to the API server's random choice."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        kubelet_ports: dict[int, str] = {}
        low, _ = NODE_PORTS
        for index, team in enumerate(self.teams):
            at = ("teams", index, "api_node_port")
            port = team.kubelet_node_port
            if port < low:
                problems.append((at, f"{team.api_node_port} leaves no NodePort for the "
                                     f"vCluster's kubelet port (api_node_port - "
                                     f"{KUBELET_PORT_OFFSET} = {port} is below {low}); choose "
                                     f"{low + KUBELET_PORT_OFFSET}-{NODE_PORTS[1]}"))
                continue
            owner = api_ports.get(port) or kubelet_ports.get(port)
            if owner is not None:
                problems.append((at, f"the vCluster's kubelet NodePort {port} (api_node_port - "
                                     f"{KUBELET_PORT_OFFSET}) is already used by {owner}"))
            kubelet_ports.setdefault(port, f"teams[{index}] (kubelet NodePort)")
        return problems

    def _version_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        match = _KINDEST_MINOR.match(self.management.node_image)
        if not match:
            return [(("management", "node_image"),
                     "must be a kindest/node:v1.X.Y@sha256:… image (its version decides whether "
                     "KAI and vCluster support the host)")]
        minor = int(match.group(1))
        return [(("management", "node_image"), line) for line in self.host_minor_problems(minor)]

    def host_minor_problems(self, minor: int) -> list[str]:
        """Why a host at Kubernetes v1.<minor> is outside the pinned KAI's and vCluster's tested
        hosts (the kind node image's minor, or an existing cluster's `/version`)."""
        problems: list[str] = []
        for what, table, version in (
            ("KAI Scheduler", _KAI_HOST_MINORS, self.components.kai_scheduler.chart.version),
            ("vCluster", _VCLUSTER_HOST_MINORS, self.components.vcluster.chart.version),
        ):
            supported = table.get(_release_line(version))
            if supported and not supported[0] <= minor <= supported[1]:
                low, high = supported
                problems.append(f"Kubernetes v1.{minor} is outside {what} {version}'s tested "
                                f"hosts (v1.{low}-v1.{high})")
        return problems
