"""The profile: a declarative, user-editable description of one lab.

A profile is YAML (`profiles/*.yaml`). These pydantic models are its schema: unknown keys are
refused, every field is typed, and cross-field rules (unique names, CIDRs, version support, pinned
digests) are validated here so that a bad profile is refused before anything is created.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpulab.profile import compat

if TYPE_CHECKING:
    from gpulab.profile.vcluster_kai import VclusterKaiProfile

__all__ = [
    "API_VERSION",
    "ChartRef",
    "ControlPlaneSpec",
    "GpuSpec",
    "HelmComponent",
    "KamajiHamiProfile",
    "ManagementSpec",
    "Profile",
    "TenantSpec",
    "WorkerSpec",
]

API_VERSION = "gpulab.dev/v1alpha1"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_KUBE_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
_KINDEST_TAG = re.compile(r"^kindest/node:(v\d+\.\d+\.\d+)@sha256:[0-9a-f]{64}$")


class _Strict(BaseModel):
    """Base for every profile section: unknown keys are errors, objects are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise ValueError(
            f"'{value}' is not a DNS-1123 label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)"
        )
    return value


def _pinned_image(value: str) -> str:
    if not _DIGEST.search(value):
        raise ValueError(f"image '{value}' must be pinned by digest (…@sha256:<64 hex>)")
    return value


def _kube_version(value: str) -> str:
    if not _KUBE_VERSION.match(value):
        raise ValueError(f"'{value}' is not a Kubernetes version like v1.36.4")
    return value


def _release_tag(value: str) -> str:
    if not re.match(r"^v\d+\.\d+\.\d+$", value):
        raise ValueError(f"'{value}' must be an exact release tag like v1.2.3")
    return value


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as err:
        raise ValueError(f"'{value}' is not a valid CIDR: {err}") from None
    if net.version != 4:
        raise ValueError(f"'{value}' must be an IPv4 CIDR")
    return value


DnsLabel = Annotated[str, Field(min_length=1)]


class ChartRef(_Strict):
    """Where a Helm chart comes from and the exact version to install."""

    repo: str | None = Field(
        default=None, description="HTTPS chart repository URL; omit when `name` is an oci:// ref"
    )
    name: str = Field(description="chart name in the repo, or a full oci:// reference")
    version: str = Field(min_length=1, description="exact chart version (never a range)")

    @field_validator("version")
    @classmethod
    def _exact_version(cls, value: str) -> str:
        if any(ch in value for ch in "^~*<>= ,|") or value in {"latest", "stable"}:
            raise ValueError(f"chart version '{value}' must be exact, not a range or channel")
        return value

    @model_validator(mode="after")
    def _repo_or_oci(self) -> ChartRef:
        is_oci = self.name.startswith("oci://")
        if is_oci and self.repo:
            raise ValueError("give either an oci:// name or a repo URL, not both")
        if not is_oci and not self.repo:
            raise ValueError("a chart needs a repo URL unless its name is an oci:// reference")
        if self.repo and not self.repo.startswith(("https://", "http://")):
            raise ValueError(f"repo '{self.repo}' must be an http(s) URL")
        return self

    @property
    def display(self) -> str:
        return self.name if self.name.startswith("oci://") else f"{self.repo} {self.name}"


class HelmComponent(_Strict):
    """A component installed as one Helm release."""

    release: str = Field(description="Helm release name")
    namespace: str
    chart: ChartRef
    values: dict[str, Any] = Field(default_factory=dict, description="merged into gpulab's values")

    _ns = field_validator("namespace", "release")(_dns_label)


class ManifestComponent(_Strict):
    """A component installed from a pinned upstream manifest URL (server-side apply)."""

    version: str = Field(description="upstream release tag, e.g. v0.16.1")
    manifest: str = Field(description="URL of the manifest; `{version}` is substituted")

    _tag = field_validator("version")(_release_tag)

    @property
    def url(self) -> str:
        return self.manifest.replace("{version}", self.version)


class MetalLBSpec(ManifestComponent):
    """MetalLB in L2 mode; the address pool is derived from the kind network at `up`."""

    pool_name: str = "kind-ip-pool"
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
    node_lock_expire: str = Field(
        default="5s",
        description="HAMi node-lock expiry; the mock plugin never releases the lock, so a short "
        "expiry lets the next GPU pod bind within seconds (upstream default 5m)",
    )

    @field_validator("node_lock_expire")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not re.match(r"^\d+(ms|s|m)$", value):
            raise ValueError(f"'{value}' must be a Go duration such as 5s or 1m")
        return value


class ComponentsSpec(_Strict):
    """Every add-on gpulab installs, each pinned."""

    cert_manager: HelmComponent
    metallb: MetalLBSpec
    kamaji: KamajiSpec
    calico: ManifestComponent
    hami: HamiSpec


class ManagementSpec(_Strict):
    """The kind management cluster."""

    kind_version: str = Field(description="kind release used to create the cluster")
    node_image: str = Field(description="kindest/node image pinned by digest")
    network: str = Field(default="kind", description="Docker network kind attaches nodes to")

    _img = field_validator("node_image")(_pinned_image)

    _tag = field_validator("kind_version")(_release_tag)


class GpuSpec(_Strict):
    """One kind of mock GPU card on each worker of a tenant."""

    model: str = Field(min_length=1, description="device type HAMi reports, e.g. NVIDIA-L4")
    count: int = Field(default=1, gt=0, le=16, description="cards of this model per worker")
    memory_mib: int = Field(gt=0, description="memory of one card in MiB")
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
        return value


class WorkerSpec(_Strict):
    """The tenant's worker node containers (kindest/node joined with kubeadm)."""

    count: int = Field(default=1, ge=1, le=8)
    image: str = Field(description="kindest/node image at the tenant's version, by digest")

    _img = field_validator("image")(_pinned_image)


class ControlPlaneSpec(_Strict):
    """How Kamaji runs the tenant's control plane."""

    replicas: int = Field(default=1, ge=1, le=3)
    service_type: Literal["LoadBalancer", "NodePort", "ClusterIP"] = "LoadBalancer"
    port: int = Field(default=6443, ge=1, le=65535)
    konnectivity_port: int = Field(default=8132, ge=1, le=65535)
    konnectivity_agent_mode: Literal["DaemonSet", "Deployment"] = "DaemonSet"
    kubelet_cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"


class TenantSpec(_Strict):
    """One tenant: a hosted control plane, its workers and their mock GPUs."""

    name: str
    kubernetes_version: str
    pod_cidr: str = "10.244.0.0/16"
    service_cidr: str = "10.96.0.0/16"
    control_plane: ControlPlaneSpec = Field(default_factory=ControlPlaneSpec)
    workers: WorkerSpec
    gpus: list[GpuSpec] = Field(default_factory=list)

    _name = field_validator("name")(_dns_label)
    _version = field_validator("kubernetes_version")(_kube_version)
    _cidrs = field_validator("pod_cidr", "service_cidr")(_cidr)

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


class KamajiHamiProfile(_Strict):
    """Kamaji hosted control planes per tenant, HAMi GPU sharing with mock GPUs."""

    apiVersion: Literal["gpulab.dev/v1alpha1"]
    kind: Literal["Lab"]
    name: str = Field(description="default lab name (`--name` overrides)")
    description: str = ""
    stack: Literal["kamaji-hami"]
    management: ManagementSpec
    components: ComponentsSpec
    tenants: list[TenantSpec] = Field(min_length=1)

    _name = field_validator("name")(_dns_label)

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
        return problems

    def member_names(self) -> list[str]:
        """The tenants, each with a kubeconfig of its own (`gpulab kubeconfig <tenant>`)."""
        return [tenant.name for tenant in self.tenants]

    def tenant(self, name: str) -> TenantSpec:
        for tenant in self.tenants:
            if tenant.name == name:
                return tenant
        known = ", ".join(t.name for t in self.tenants)
        raise KeyError(f"no tenant '{name}' in profile (tenants: {known})")


# One profile type per stack; `stack` selects which (gpulab/profile/load.py). The vcluster-kai
# model lives in its own module, which imports this one, hence the string alias.
Profile: TypeAlias = "KamajiHamiProfile | VclusterKaiProfile"
