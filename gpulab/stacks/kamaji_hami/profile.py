"""The kamaji-hami profile: tenants with a Kamaji control plane, kindest/node workers and mock
GPUs shared through HAMi.

Shared field types and the `LabProfile` base are gpulab.profile.base's; this module adds the
stack's sections and its cross-field rules (unique tenants, CIDRs, version support, device ids).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gpulab.profile.base import (
    LOOPBACK,
    HelmComponent,
    HostNeeds,
    HostPort,
    HostWorkers,
    LabProfile,
    ManifestComponent,
    Strict,
    dns_label,
    ipv4_cidr,
    kube_version,
    node_port,
    pinned_image,
)
from gpulab.stacks.kamaji_hami import compat

__all__ = [
    "ComponentsSpec",
    "ControlPlaneSpec",
    "GpuSpec",
    "HamiSpec",
    "KamajiHamiProfile",
    "KamajiSpec",
    "MetalLBSpec",
    "TenantSpec",
    "WorkerSpec",
]

# HAMi v2.10.0 DeviceInfo (pkg/device/devices.go:127-144): devmem, devcore and count are int32;
# a larger number fails the JSON decode of the whole node annotation (every card is lost).
HAMI_INT32_MAX = 2**31 - 1

# Rough budgets (docs/peers-and-users.md §3): a control plane ~0.5 GiB, a worker ~0.3 GiB before
# add-ons; with cert-manager, MetalLB, Kamaji, etcd, Calico and HAMi the write-up needed 8 GB free
# for two tenants.
TENANT_MEMORY_GIB = 2.0
TENANT_DISK_GIB = 4.0
WORKER_MEMORY_GIB = 0.3
# Each tenant's API on the host: a NodePort of the management node that kind publishes on
# 127.0.0.1 (render.tenant_api_port). The default for tenant i (from 0) is this + i: the low
# end of the NodePort range is the band Kubernetes hands out last to Services that ask for no
# port (KEP-3668, ServiceNodePortStaticSubrange, GA in v1.29: the lower band of
# min(max(16, range/32), 128) ports, 86 for 30000-32767), so MetalLB's LoadBalancer Services
# (Kamaji's, with NodePorts allocated) do not take it first.
TENANT_API_NODE_PORT = 30061
_KINDEST_TAG = re.compile(r"^kindest/node:(v\d+\.\d+\.\d+)@sha256:[0-9a-f]{64}$")


class MetalLBSpec(ManifestComponent):
    """MetalLB in L2 mode; the address pool is derived from the kind network at `up`."""

    pool_name: str = "kind-ip-pool"

    _pool = field_validator("pool_name")(dns_label)
    pool_size: int = Field(default=51, ge=1, le=1024, description="addresses in the pool")
    pool_offset_from_top: int = Field(
        default=5,
        ge=1,
        description="addresses kept free between the pool's end and the subnet's broadcast",
    )


class KamajiSpec(HelmComponent):
    """Kamaji; the open-source chart is only published as 0.0.0+latest, so pin the image."""

    image_tag: str = Field(description="clastix/kamaji image tag, e.g. 26.8.2-edge")
    tenant_namespace: str = "tenants"

    _tenant_ns = field_validator("tenant_namespace")(dns_label)

    @field_validator("image_tag")
    @classmethod
    def _pinned_tag(cls, value: str) -> str:
        if value in {"", "latest", "edge"}:
            raise ValueError("image_tag must pin a Kamaji build such as 26.8.2-edge")
        return value


class HamiSpec(HelmComponent):
    """HAMi with its mock device plugin (no real NVIDIA device plugin)."""

    mock_device_plugin_tag: str = Field(default="1.0.1")
    kube_scheduler_registry: str = Field(
        default="registry.k8s.io",
        description="registry holding kube-scheduler:<tenant version> (upstream default is an "
        "aliyun mirror that may lack new versions)",
    )
    node_lock_timeout: str = Field(
        default="5s",
        description="HAMi's node-lock timeout (the extender's --node-lock-timeout flag, upstream "
        "default 5m); the mock plugin never releases the lock, so a short timeout lets the next "
        "GPU pod on a node bind within seconds",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "node_lock_expire" in data:
            raise ValueError(
                "node_lock_expire was renamed node_lock_timeout: it now sets HAMi's "
                "--node-lock-timeout flag (the old key set HAMI_NODELOCK_EXPIRE, which HAMi "
                "v2.10's scheduler overrides with the flag's 5m default)")
        return data

    @field_validator("node_lock_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not re.match(r"^[1-9]\d*(ms|s|m|h)$", value):
            raise ValueError(f"'{value}' must be a Go duration such as 5s or 1m")
        return value


class ComponentsSpec(Strict):
    """Every add-on gpulab installs, each pinned."""

    cert_manager: HelmComponent
    metallb: MetalLBSpec
    kamaji: KamajiSpec
    calico: ManifestComponent
    hami: HamiSpec


class GpuSpec(Strict):
    """One kind of mock GPU card on each worker of a tenant."""

    model: str = Field(min_length=1, description="device type HAMi reports, e.g. NVIDIA-L4")
    count: int = Field(default=1, gt=0, le=16, description="cards of this model per worker")
    memory_mib: int = Field(gt=0, le=HAMI_INT32_MAX,
                            description="memory of one card in MiB (HAMi stores it in an int32)")
    cores: int = Field(default=100, gt=0, le=100, description="compute of one card, 100 = all")
    split: int = Field(default=10, description="how many pods may share one card")
    id_prefix: str = Field(
        default="GPU-MOCK-", description="device ids are <id_prefix><n>, n counting per tenant"
    )

    @field_validator("split")
    @classmethod
    def _split(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be >= 1 (a card shared by 0 pods can never be used)")
        if value > 100:
            raise ValueError("must be <= 100")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if "," in value or ":" in value or ";" in value:
            raise ValueError("must not contain ',', ':' or ';' (HAMi's annotation separators)")
        if "nvidia" not in value.lower():
            # HAMi v2.10.0 pkg/scheduler/score.go:43-52 keeps only devices whose type contains
            # "nvidia" (any case) for NVIDIA requests; the real plugin prefixes "NVIDIA-"
            # (plugin/register.go:170-174). Any other model is skipped without a word.
            raise ValueError(
                f"'{value}' would be ignored by HAMi: its scheduler only counts devices whose "
                f"type contains 'NVIDIA' (write e.g. NVIDIA-{value})")
        return value


class WorkerSpec(Strict):
    """The tenant's worker node containers (kindest/node joined with kubeadm)."""

    count: int = Field(default=1, ge=1, le=8)
    image: str = Field(description="kindest/node image at the tenant's version, by digest")

    _img = field_validator("image")(pinned_image)


class ControlPlaneSpec(Strict):
    """How Kamaji runs the tenant's control plane."""

    replicas: int = Field(default=1, ge=1, le=3)
    service_type: Literal["LoadBalancer", "NodePort", "ClusterIP"] = "LoadBalancer"
    port: int = Field(default=6443, ge=1, le=65535)
    konnectivity_port: int = Field(default=8132, ge=1, le=65535)
    konnectivity_agent_mode: Literal["DaemonSet", "Deployment"] = "DaemonSet"
    kubelet_cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    api_node_port: int | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="NodePort of the tenant's API on the management node, which "
        f"kind publishes on the host's {LOOPBACK} (default: {TENANT_API_NODE_PORT} + the "
        "tenant's index)")
    api_host_port: int | None = Field(
        default=None, exclude_if=lambda v: v is None, ge=1024, le=65535,
        description=f"port on the host's {LOOPBACK} where `gpulab kubeconfig <tenant>` reaches "
                    "the tenant's API (default: api_node_port)")

    @field_validator("api_node_port")
    @classmethod
    def _node_port(cls, value: int | None) -> int | None:
        return None if value is None else node_port(value)


class TenantSpec(Strict):
    """One tenant: a hosted control plane, its workers and their mock GPUs."""

    name: str
    kubernetes_version: str
    pod_cidr: str = "10.244.0.0/16"
    service_cidr: str = "10.96.0.0/16"
    control_plane: ControlPlaneSpec = Field(default_factory=ControlPlaneSpec)
    workers: WorkerSpec
    gpus: list[GpuSpec] = Field(default_factory=list)

    _name = field_validator("name")(dns_label)
    _version = field_validator("kubernetes_version")(kube_version)
    _cidrs = field_validator("pod_cidr", "service_cidr")(ipv4_cidr)

    def device_ids(self, worker_index: int) -> list[str]:
        """Mock device ids of one worker, unique across the tenant."""
        ids: list[str] = []
        per_worker = sum(g.count for g in self.gpus)
        offsets: dict[str, int] = {}
        for gpu in self.gpus:
            start = offsets.get(gpu.id_prefix, 0)
            for card in range(gpu.count):
                ids.append(f"{gpu.id_prefix}{worker_index * per_worker + start + card}")
            offsets[gpu.id_prefix] = start + gpu.count
        return ids


_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598, common for pods


def _usable_private(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    if net.is_loopback:
        return "is loopback"
    if net.is_link_local:
        return "is link-local"
    if net.is_multicast or net.is_reserved or net.is_unspecified:
        return "is not a unicast range"
    if not (net.is_private or net.subnet_of(_SHARED_ADDRESS_SPACE)):  # type: ignore[arg-type]
        return "is not a private range (use 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or " \
               "100.64.0.0/10)"
    return ""


def _cidr_problems(tenant: TenantSpec, at: tuple[str | int, ...]
                   ) -> list[tuple[tuple[str | int, ...], str]]:
    """Ranges a tenant's cluster can use: private; a pod range with a /24 per worker (the
    controller-manager's default node mask); a service range kube-apiserver accepts (/12 to
    /28: larger is refused, smaller leaves no room for the DNS address)."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    pod = ipaddress.ip_network(tenant.pod_cidr)
    service = ipaddress.ip_network(tenant.service_cidr)
    for field, net in (("pod_cidr", pod), ("service_cidr", service)):
        why = _usable_private(net)
        if why:
            problems.append(((*at, field), f"{net} {why}"))
    if pod.prefixlen > 24 or 2 ** (24 - pod.prefixlen) < tenant.workers.count:
        problems.append(((*at, "pod_cidr"), f"{pod} is too small: each of the "
                         f"{tenant.workers.count} worker(s) gets a /24"))
    if not 12 <= service.prefixlen <= 28:
        problems.append(((*at, "service_cidr"), f"{service} must be between /12 and /28 "
                         "(kube-apiserver refuses larger; smaller has no room for DNS)"))
    return problems


class KamajiHamiProfile(LabProfile):
    """Kamaji hosted control planes per tenant, HAMi GPU sharing with mock GPUs."""

    stack: Literal["kamaji-hami"]
    components: ComponentsSpec
    tenants: list[TenantSpec] = Field(min_length=1)

    def semantic_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Rules across fields, each with the field path it is about."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        seen: set[str] = set()
        for index, tenant in enumerate(self.tenants):
            at = ("tenants", index)
            if tenant.name in seen:
                problems.append(((*at, "name"), f"duplicate tenant name '{tenant.name}'"))
            seen.add(tenant.name)
            problem = compat.kamaji_tenant_version_problem(
                self.components.kamaji.image_tag, tenant.kubernetes_version
            )
            if problem:
                problems.append(((*at, "kubernetes_version"), problem))
            if tenant.name == "management":
                problems.append(((*at, "name"), "'management' is the management cluster's name "
                                 "(its kubeconfig); choose another"))
            problems += _cidr_problems(tenant, at)
            if ipaddress.ip_network(tenant.pod_cidr).overlaps(
                ipaddress.ip_network(tenant.service_cidr)
            ):
                problems.append((
                    (*at, "service_cidr"),
                    f"{tenant.service_cidr} overlaps pod_cidr {tenant.pod_cidr}",
                ))
            match = _KINDEST_TAG.match(tenant.workers.image)
            if match and match.group(1) != tenant.kubernetes_version:
                problems.append((
                    (*at, "workers", "image"),
                    f"kindest/node {match.group(1)} does not match kubernetes_version "
                    f"{tenant.kubernetes_version}; the worker's kubelet must match its tenant",
                ))
            cp = tenant.control_plane
            if cp.port == cp.konnectivity_port:
                problems.append((
                    (*at, "control_plane", "konnectivity_port"),
                    f"must differ from control_plane.port ({cp.port})",
                ))
            ids = tenant.device_ids(0)
            if len(set(ids)) != len(ids):
                problems.append(((*at, "gpus"), "two GPU entries produce the same device ids; "
                                 "give each model its own id_prefix"))
        if len(seen) == len(self.tenants):  # ports per tenant: names first
            problems += self._port_problems()
        if self.cluster is not None and self.cluster.fake_gpu_nodes:
            problems.append((("cluster", "fake_gpu_nodes"), "only for stack vcluster-kai "
                             "(fake-gpu-operator): kamaji-hami's GPUs are its tenants' workers "
                             "(tenants[].gpus on kind, joined machines on an existing cluster)"))
        return problems

    def api_ports(self, tenant: TenantSpec) -> tuple[int, int]:
        """(NodePort, host port) of `tenant`'s API published on the host's 127.0.0.1."""
        index = next(i for i, t in enumerate(self.tenants) if t.name == tenant.name)
        cp = tenant.control_plane
        node = cp.api_node_port or TENANT_API_NODE_PORT + index
        return node, cp.api_host_port or node

    def host_ports(self) -> list[HostPort]:
        """Each tenant's API port on the host's 127.0.0.1 (render.cluster_needs asks for
        exactly these, and kind publishes them)."""
        out = []
        for index, tenant in enumerate(self.tenants):
            cp = tenant.control_plane
            field = "api_host_port" if cp.api_host_port else \
                "api_node_port" if cp.api_node_port else "api_node_port, default"
            out.append(HostPort(LOOPBACK, self.api_ports(tenant)[1], "tcp",
                                f"tenant {tenant.name}'s API (tenants[{index}].control_plane."
                                f"{field})"))
        return out

    def _port_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """No two tenants share a NodePort or a host port."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        nodes: dict[int, str] = {}
        hosts: dict[int, str] = {}
        for index, tenant in enumerate(self.tenants):
            at = ("tenants", index, "control_plane")
            node, host = self.api_ports(tenant)
            if node in nodes:
                problems.append(((*at, "api_node_port"), f"NodePort {node} is already used by "
                                 f"{nodes[node]}"))
            if host in hosts:
                problems.append(((*at, "api_host_port"), f"host port {host} is already used by "
                                 f"{hosts[host]}"))
            nodes.setdefault(node, f"tenants[{index}]")
            hosts.setdefault(host, f"tenants[{index}]")
        return problems

    def member_names(self) -> list[str]:
        """The tenants, each with a kubeconfig of its own (`gpulab kubeconfig <tenant>`)."""
        return [tenant.name for tenant in self.tenants]

    def host_needs(self) -> HostNeeds:
        base = super().host_needs()
        workers = sum(t.workers.count for t in self.tenants)
        memory = (base.memory_gib + TENANT_MEMORY_GIB * len(self.tenants)
                  + WORKER_MEMORY_GIB * workers)
        return HostNeeds(memory, base.disk_gib + TENANT_DISK_GIB * len(self.tenants), base.cpus)

    def host_workers(self) -> HostWorkers | None:
        """With `cluster.workers: containers` (provider existing) the tenants' workers are
        kindest/node containers on this Docker host, each with a worker's rough budget."""
        if self.cluster is None or self.cluster.workers != "containers":
            return None
        count = sum(t.workers.count for t in self.tenants)
        return HostWorkers(count, tuple(dict.fromkeys(t.workers.image for t in self.tenants)),
                           WORKER_MEMORY_GIB * count)

    def composed_names(self, lab: str) -> list[tuple[str, str, int]]:
        from gpulab.profile.base import HOSTNAME_MAX

        names = super().composed_names(lab)
        for tenant in self.tenants:
            last = tenant.workers.count - 1  # the longest: worker<N>
            worker = f"gpulab-{lab}-{tenant.name}-worker{last if last else ''}"
            names.append((f"{tenant.name}'s worker container and hostname (its Node name)",
                          worker, HOSTNAME_MAX))
        return names

    def docker_cidrs(self) -> list[tuple[str, str]]:
        return [(f"{t.name}.{field}", cidr) for t in self.tenants
                for field, cidr in (("pod_cidr", t.pod_cidr), ("service_cidr", t.service_cidr))]

    def tenant(self, name: str) -> TenantSpec:
        for tenant in self.tenants:
            if tenant.name == name:
                return tenant
        known = ", ".join(t.name for t in self.tenants)
        raise KeyError(f"no tenant '{name}' in profile (tenants: {known})")
