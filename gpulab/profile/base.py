"""What every profile shares: the strict base, field validators, component types, `LabProfile`.

A stack's profile (`stacks/<stack>/profile.py`) subclasses `LabProfile` and names its `stack`.
Pydantic models: unknown keys are refused, every field is typed; cross-field rules come from
`semantic_problems`, so a bad profile is refused before anything is created.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpulab.providers import registry

__all__ = [
    "API_VERSION",
    "LOOPBACK",
    "NODE_PORTS",
    "ChartRef",
    "HelmComponent",
    "HostNeeds",
    "HostPort",
    "HostWorkers",
    "LabProfile",
    "ManagementSpec",
    "ManifestComponent",
    "Strict",
    "dns_label",
    "ipv4_cidr",
    "kube_version",
    "pinned_image",
    "release_tag",
]

API_VERSION = "gpulab.dev/v1alpha1"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")

_KUBE_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


class Strict(BaseModel):
    """Base for every profile section: unknown keys are errors, objects are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False, strict=True)


def dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise ValueError(
            f"'{value}' is not a DNS-1123 label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)"
        )
    return value


def pinned_image(value: str) -> str:
    if not _DIGEST.search(value):
        raise ValueError(f"image '{value}' must be pinned by digest (…@sha256:<64 hex>)")
    return value


def kube_version(value: str) -> str:
    if not _KUBE_VERSION.match(value):
        raise ValueError(f"'{value}' is not a Kubernetes version like v1.36.4")
    return value


def release_tag(value: str) -> str:
    if not re.match(r"^v\d+\.\d+\.\d+$", value):
        raise ValueError(f"'{value}' must be an exact release tag like v1.2.3")
    return value


def ipv4_cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as err:
        raise ValueError(f"'{value}' is not a valid CIDR: {err}") from None
    if net.version != 4:
        raise ValueError(f"'{value}' must be an IPv4 CIDR")
    return value


class ChartRef(Strict):
    """Where a Helm chart comes from and the exact version to install."""

    repo: str | None = Field(
        default=None, description="HTTPS chart repository URL; omit when `name` is an oci:// ref"
    )
    name: str = Field(description="chart name in the repo, or a full oci:// reference")
    version: str = Field(min_length=1, description="exact chart version (never a range)")
    commit: str | None = Field(
        default=None, description="take the chart from the git repository `repo` at this "
        "commit (40 hex digits) instead of a chart repository")
    path: str | None = Field(default=None, description="the chart's folder in that repository")

    @field_validator("version")
    @classmethod
    def _exact_version(cls, value: str) -> str:
        if any(ch in value for ch in "^~*<>= ,|") or value in {"latest", "stable"}:
            raise ValueError(f"chart version '{value}' must be exact, not a range or channel")
        return value

    @model_validator(mode="after")
    def _repo_or_oci(self) -> ChartRef:
        if self.commit is not None or self.path is not None:
            return self._git_source()
        is_oci = self.name.startswith("oci://")
        if is_oci and self.repo:
            raise ValueError("give either an oci:// name or a repo URL, not both")
        if not is_oci and not self.repo:
            raise ValueError("a chart needs a repo URL unless its name is an oci:// reference")
        if self.repo and not self.repo.startswith(("https://", "http://")):
            raise ValueError(f"repo '{self.repo}' must be an http(s) URL")
        return self

    def _git_source(self) -> ChartRef:
        if not self.commit or not re.fullmatch(r"[0-9a-f]{40}", self.commit):
            raise ValueError("commit must be a full git commit id (40 lowercase hex digits)")
        if not self.repo or not self.repo.startswith("https://"):
            raise ValueError("a chart taken from a commit needs repo: the git repository's "
                             "https:// URL")
        parts = (self.path or "").split("/")
        if not self.path or self.path.startswith("/") or ".." in parts:
            raise ValueError("path must be the chart's folder inside the repository, e.g. "
                             "charts/kamaji")
        return self

    @property
    def display(self) -> str:
        if self.commit:
            return f"{self.repo}@{self.commit[:12]}:{self.path}"
        return self.name if self.name.startswith("oci://") else f"{self.repo} {self.name}"


class HelmComponent(Strict):
    """A component installed as one Helm release."""

    release: str = Field(description="Helm release name")
    namespace: str
    chart: ChartRef
    values: dict[str, Any] = Field(default_factory=dict, description="merged into gpulab's values")

    _ns = field_validator("namespace", "release")(dns_label)

    @field_validator("release")
    @classmethod
    def _helm_limit(cls, value: str) -> str:
        if len(value) > HELM_RELEASE_MAX:
            raise ValueError(f"'{value}' is {len(value)} characters; Helm release names are at "
                             f"most {HELM_RELEASE_MAX}")
        return value


HELM_RELEASE_MAX = 53  # helm: release names are DNS-1123 labels of at most 53 characters


class ManifestComponent(Strict):
    """A component installed from a pinned upstream manifest URL (server-side apply)."""

    version: str = Field(description="upstream release tag, e.g. v0.16.1")
    manifest: str = Field(description="URL of the manifest; `{version}` is substituted")

    _tag = field_validator("version")(release_tag)

    @property
    def url(self) -> str:
        return self.manifest.replace("{version}", self.version)


KIND_SUPPORTED = ((0, 31), (0, 33))  # kind minors whose node images gpulab pins
# kind appends "-control-plane" (14 characters) to a cluster's name for its node's hostname and
# caps names at 50 (pkg/cluster/internal/create/create.go, clusterNameMax); a hostname is at most
# 63 characters (a DNS label).
KIND_CLUSTER_NAME_MAX = 50
HOSTNAME_MAX = 63


class ManagementSpec(Strict):
    """The kind management cluster."""

    kind_version: str = Field(description="kind release used to create the cluster")
    node_image: str = Field(description="kindest/node image pinned by digest")
    network: str = Field(default="kind", description="Docker network kind attaches nodes to")

    _img = field_validator("node_image")(pinned_image)

    _tag = field_validator("kind_version")(release_tag)

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        if value in ("host", "none", "bridge"):
            raise ValueError(f"'{value}' is Docker's own network; kind nodes need a user-defined "
                             "bridge network such as 'kind'")
        if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}", value):
            raise ValueError(f"'{value}' is not a Docker network name")
        return value

    @field_validator("kind_version")
    @classmethod
    def _kind_range(cls, value: str) -> str:
        minor = tuple(int(x) for x in value.lstrip("v").split(".")[:2])
        if not KIND_SUPPORTED[0] <= minor <= KIND_SUPPORTED[1]:
            low, high = (f"v{a}.{b}" for a, b in KIND_SUPPORTED)
            raise ValueError(f"kind {value} is outside what gpulab supports ({low} to {high}.x: "
                             "the node images it pins are built for them)")
        return value


# a node's name: a DNS subdomain (RFC 1123), as the API server validates Node names
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ClusterSpec(Strict):
    """Where the lab's cluster comes from (gpulab.providers): `kind` makes one (the default,
    and what a profile without `cluster:` means); `existing` installs into a cluster you
    already have, reached through a kubeconfig and context (`up --kubeconfig/--context`
    override these)."""

    provider: str = Field(default=registry.DEFAULT, description="kind or existing (a name "
                          "gpulab.providers.registry knows)")
    kubeconfig: str | None = Field(default=None, description="existing: the kubeconfig file "
                                   "(default: $KUBECONFIG, else ~/.kube/config)")
    context: str | None = Field(default=None, description="existing: the context (default: "
                                "the kubeconfig's current context)")
    expose: Literal["auto", "LoadBalancer", "NodePort", "port-forward"] = Field(
        default="auto", description="existing: how each vCluster API is reached; auto: "
        "LoadBalancer when the cluster already has a LoadBalancer Service with an address, else "
        "NodePort when a node's address answers from this machine, else port-forward (through "
        "the cluster's API, as vcluster connect does)")
    node_address: str | None = Field(default=None, description="existing, NodePort: the node "
                                     "address to reach (default: a node's ExternalIP, else its "
                                     "InternalIP)")
    helm_parallel: int | None = Field(default=None, ge=1, le=32, description="existing: "
                                      "how many Helm installs run at once (default 4; the "
                                      "teams install concurrently)")
    fake_gpu_nodes: list[str] | None = Field(
        default=None, min_length=1, description="existing, vcluster-kai: nodes (by name) that "
        "get fake GPUs from fake-gpu-operator, for a cluster without GPUs; each gets the GPU "
        "pool's labels, which `down` removes again (docs/own-cluster.md)")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in registry.names():
            raise ValueError(f"'{value}' is not a provider gpulab knows: "
                             f"{', '.join(sorted(registry.names()))}")
        return value

    @field_validator("fake_gpu_nodes")
    @classmethod
    def _node_names(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for name in value:
            if len(name) > 253 or not _NODE_NAME.match(name):
                raise ValueError(f"'{name}' is not a node name (a DNS subdomain: lowercase "
                                 "letters, digits, '-' and '.')")
        twice = sorted({n for n in value if value.count(n) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named more than once")
        return value

    metallb: Literal["refuse", "allow"] = Field(
        default="refuse", description="existing, kamaji-hami: when the cluster has no "
        "LoadBalancer, allow gpulab to install MetalLB (L2) on `metallb_range`; refuse: say so "
        "and create nothing")
    metallb_range: str | None = Field(default=None, description="existing, metallb: allow: the "
                                      "IPv4 range MetalLB hands out, first-last (free addresses "
                                      "on the nodes' network)")

    workers: Literal["machines", "containers"] = Field(
        default="machines", description="existing, kamaji-hami: where the tenants' workers "
        "come from: machines of yours that join with `gpulab join`, or kindest/node containers "
        "on this Docker host (it must reach the control planes' LoadBalancer addresses)")

    @field_validator("metallb_range")
    @classmethod
    def _address_range(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            first, last = (ipaddress.IPv4Address(p.strip()) for p in value.split("-"))
        except ValueError:
            raise ValueError(f"'{value}' is not an IPv4 range first-last") from None
        if int(last) < int(first):
            raise ValueError(f"'{value}': the last address comes before the first")
        return f"{first}-{last}"

    @model_validator(mode="after")
    def _what_the_provider_takes(self) -> ClusterSpec:
        """The provider's own rules first (`spec_problems` of its package: kind takes no
        option of a cluster you bring), then those of every provider."""
        rules = getattr(registry.package(self.provider), "spec_problems", None)
        problems = list(rules(self)) if callable(rules) else []
        if problems:
            raise ValueError(problems[0])
        if self.metallb_range and self.metallb != "allow":
            raise ValueError("metallb_range: only with metallb: allow")
        return self


@dataclass(frozen=True)
class HostNeeds:
    """What a lab needs of the Docker host (doctor compares it with what the host has)."""

    memory_gib: float
    disk_gib: float
    cpus: int = 2


@dataclass(frozen=True)
class HostWorkers:
    """Worker containers a lab runs on this Docker host while its cluster is elsewhere
    (provider existing): how many, their images, and what they need of the host (doctor
    checks only these then)."""

    count: int
    images: tuple[str, ...]
    memory_gib: float
    cpus: int = 1  # nothing reserves CPUs for a worker container (no --cpus: node_options)


NODE_PORTS = (30000, 32767)  # Kubernetes' default --service-node-port-range
# Where kind publishes the APIs a lab hands the user: loopback only, as kind publishes its own
# API server (kind fed26882 pkg/internal/apis/config/default.go:56-57); kind's default for
# extraPortMappings would be every address (providers/docker/provision.go:395-398). A node's
# container address is not reachable from the host on Docker Desktop (kind fed26882
# site/content/docs/user/known-issues.md:379-388), colima, OrbStack, rootless Docker or Podman;
# a published loopback port is, on every engine.
LOOPBACK = "127.0.0.1"


def node_port(value: int) -> int:
    """A NodePort in Kubernetes' default range."""
    low, high = NODE_PORTS
    if not low <= value <= high:
        raise ValueError(f"must be a NodePort in {low}-{high}")
    return value


@dataclass(frozen=True)
class HostPort:
    """A port the lab publishes on the Docker host (kind's `extraPortMappings`, `--publish`)."""

    address: str  # the host address it listens on: 127.0.0.1, 0.0.0.0, ::
    port: int
    protocol: str = "tcp"
    what: str = ""  # what it is for, with the profile field that sets it

    @property
    def text(self) -> str:
        address = f"[{self.address}]" if ":" in self.address else self.address
        return f"{address}:{self.port}" + ("" if self.protocol == "tcp" else f"/{self.protocol}")


# Rough budgets (docs/peers-and-users.md §3): the kind management cluster with its add-ons.
BASE_MEMORY_GIB = 4.0
BASE_DISK_GIB = 12.0


class LabProfile(Strict):
    """The fields every profile has; a stack's profile adds its own and narrows `stack`."""

    apiVersion: Literal["gpulab.dev/v1alpha1"]
    kind: Literal["Lab"]
    name: str = Field(description="default lab name (`--name` overrides)")
    description: str = ""
    stack: str
    management: ManagementSpec
    cluster: ClusterSpec | None = Field(default=None, exclude_if=lambda v: v is None,
                                        description="where the cluster comes from; absent: "
                                                    "provider kind")

    _name = field_validator("name")(dns_label)

    def semantic_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Rules across fields, each with the field path it is about."""
        return []

    def member_names(self) -> list[str]:
        """The lab's members (tenants, teams), each with a kubeconfig of its own."""
        raise NotImplementedError

    def host_needs(self) -> HostNeeds:
        """Memory, disk and CPUs the lab needs of the Docker host."""
        return HostNeeds(BASE_MEMORY_GIB, BASE_DISK_GIB)

    def host_workers(self) -> HostWorkers | None:
        """The worker containers the lab runs on this Docker host when its cluster is one you
        have (provider existing); None: it runs none here."""
        return None

    def docker_cidrs(self) -> list[tuple[str, str]]:
        """(field path, CIDR) pairs that must not overlap the Docker network."""
        return []

    def host_ports(self) -> list[HostPort]:
        """Host ports the lab publishes, which must be free before `up` (doctor checks them).
        None by default: kind publishes its API server on 127.0.0.1 and a port it finds free
        itself (kind fed26882 providers/docker/provision.go:102-108 with `APIServerPort` unset,
        common/getport.go:25-37)."""
        return []

    def composed_names(self, lab: str) -> list[tuple[str, str, int]]:
        """(what, name, limit) for every name the lab composes from its name and the profile,
        with the limit of the system that receives it."""
        from gpulab.naming import kind_cluster_name

        return [("the kind cluster", kind_cluster_name(lab), KIND_CLUSTER_NAME_MAX)]

    def name_problems(self, lab: str) -> list[str]:
        """One line per composed name over its limit, with the name."""
        return [f"{what} would be named '{name}' ({len(name)} characters; at most {limit})"
                for what, name, limit in self.composed_names(lab) if len(name) > limit]

    def pins(self) -> dict[str, Any]:
        """Every pinned version the profile deploys (for `gpulab version`): kind and its node
        image, each chart, each manifest, and every image tag field."""
        pins: dict[str, Any] = {"kind": self.management.kind_version,
                                "node_image": self.management.node_image,
                                "charts": [], "manifests": [], "images": {}}

        def walk(value: Any, path: str) -> None:
            if isinstance(value, ChartRef):
                pins["charts"].append({"chart": value.name, "version": value.version,
                                       "from": value.display})
            elif isinstance(value, ManifestComponent):
                pins["manifests"].append({"component": path.rsplit(".", 1)[-1],
                                          "version": value.version, "url": value.url})
            if isinstance(value, BaseModel) and not isinstance(value, ChartRef):
                for name in type(value).model_fields:
                    field = getattr(value, name)
                    where = f"{path}.{name}" if path else name
                    if isinstance(field, str) and (name.endswith("_tag") or name == "image"):
                        pins["images"][where] = field
                    walk(field, where)
            elif isinstance(value, (list, tuple)):
                for index, item in enumerate(value):
                    walk(item, f"{path}[{index}]")

        walk(self, "")
        return pins

    def charts(self) -> list[ChartRef]:
        """Every chart the profile names, wherever it sits in the model."""
        found: list[ChartRef] = []

        def walk(value: Any) -> None:
            if isinstance(value, ChartRef):
                found.append(value)
            elif isinstance(value, BaseModel):
                for name in type(value).model_fields:
                    walk(getattr(value, name))
            elif isinstance(value, (list, tuple)):
                for item in value:
                    walk(item)

        walk(self)
        return found
