"""Narrow interfaces to the outside world.

The engine, steps and checks talk only to these protocols. The real implementations live beside
this file (`docker_runtime.py` and its `docker_*` siblings, `kind.py`, `helm.py`, `kube/`) and
are the only modules that import docker-py, pyhelm3, the kubernetes client or run `kind`/`helm`.
Tests use in-memory fakes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path


__all__ = [
    "ContainerInfo",
    "ContainerRuntime",
    "ContainerSpec",
    "DockerReader",
    "ExecResult",
    "HelmGateway",
    "HelmRelease",
    "KindProvider",
    "KubeGateway",
    "LabAdapters",
    "NetworkInfo",
    "PublishedPort",
    "RuntimeInfo",
    "oci_platform",
]


@dataclass(frozen=True)
class ContainerSpec:
    """A worker container as docker will run it (kind's node flags)."""

    name: str
    image: str
    network: str
    labels: dict[str, str]
    privileged: bool = True
    security_opt: tuple[str, ...] = ("seccomp=unconfined", "apparmor=unconfined")
    tmpfs: tuple[str, ...] = ("/tmp", "/run")
    anonymous_volumes: tuple[str, ...] = ("/var",)
    readonly_binds: tuple[tuple[str, str], ...] = (("/lib/modules", "/lib/modules"),)
    cgroupns: str = "private"
    restart_policy: str = "on-failure:1"
    extra: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    binds: tuple[tuple[str, str], ...] = ()  # read-write host paths (kind: /dev/mapper)
    devices: tuple[str, ...] = ()  # host devices (kind: /dev/fuse on rootless Docker)
    userns_mode: str = ""  # "host" where the daemon remaps user namespaces (kind: usernsRemap)

    @property
    def hostname(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hostname": self.hostname,
            "image": self.image,
            "network": self.network,
            "privileged": self.privileged,
            "security_opt": list(self.security_opt),
            "tmpfs": list(self.tmpfs),
            "volumes": [f"{v} (anonymous)" for v in self.anonymous_volumes]
            + [f"{src}:{dst}:ro" for src, dst in self.readonly_binds],
            "cgroupns": self.cgroupns,
            "restart": self.restart_policy,
            "labels": dict(self.labels),
            **({"binds": [f"{src}:{dst}" for src, dst in self.binds]} if self.binds else {}),
            **({"devices": list(self.devices)} if self.devices else {}),
            **({"userns": self.userns_mode} if self.userns_mode else {}),
            # proxy variables are shown by name only (they may carry credentials)
            **({"env": sorted(self.env)} if self.env else {}),
        }


@dataclass(frozen=True)
class HelmRelease:
    """One Helm release exactly as it will be installed."""

    name: str
    namespace: str
    chart: str
    repo: str | None
    version: str
    values: dict[str, Any]
    kubeconfig_of: str = "management"  # or a tenant name
    git_commit: str | None = None  # the chart comes from `repo` (a git URL) at this commit
    git_path: str = ""  # ... in this folder of the repository

    def to_dict(self) -> dict[str, Any]:
        return {
            "release": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "repo": self.repo,
            "version": self.version,
            **({"git": {"commit": self.git_commit, "path": self.git_path}}
               if self.git_commit else {}),
            "cluster": self.kubeconfig_of,
            "values": self.values,
        }


@dataclass(frozen=True)
class ExecResult:
    """What a command run inside a container returned."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class PublishedPort:
    """A container port published on the Docker host: the host address and port it holds."""

    address: str  # "0.0.0.0", "::", "127.0.0.1", ... ("" when the engine named none)
    port: int
    protocol: str = "tcp"

    @classmethod
    def from_summary(cls, entry: Mapping[str, Any]) -> PublishedPort | None:
        """From one `Ports` entry of the Engine API's container list: moby
        api/types/container/port_summary.go:20-32 (docker-v29.7.2): `IP` (omitted when empty),
        `PrivatePort`, `PublicPort` (omitted when the port is only exposed) and `Type`."""
        public = entry.get("PublicPort")
        if not public:
            return None
        return cls(str(entry.get("IP") or ""), int(public), str(entry.get("Type") or "tcp"))

    @classmethod
    def from_port_map(cls, ports: Mapping[str, Any] | None) -> tuple[PublishedPort, ...]:
        """From a container inspect's `NetworkSettings.Ports` (moby api/swagger.yaml:1667-1716
        `"<port>/<protocol>"` → `[{"HostIp", "HostPort"}]`, null when not published)."""
        found: list[PublishedPort] = []
        for key, bindings in (ports or {}).items():
            protocol = str(key).partition("/")[2] or "tcp"
            for binding in bindings or ():
                host_port = str((binding or {}).get("HostPort") or "")
                if host_port.isdigit():
                    found.append(cls(str(binding.get("HostIp") or ""), int(host_port), protocol))
        return tuple(found)


@dataclass(frozen=True)
class ContainerInfo:
    """A container as observed (never as wished)."""

    id: str
    name: str
    image: str
    status: str  # created, running, exited, ...
    labels: Mapping[str, str] = field(default_factory=dict)
    networks: Mapping[str, str] = field(default_factory=dict)  # network name → IPv4 address
    ports: tuple[PublishedPort, ...] = ()  # what it holds on the host (running containers only)

    @property
    def running(self) -> bool:
        return self.status == "running"

    @classmethod
    def from_summary(cls, entry: Mapping[str, Any]) -> ContainerInfo:
        """From one entry of the Engine API's container list (`GET /containers/json`)."""
        names = entry.get("Names") or [""]
        networks = (entry.get("NetworkSettings") or {}).get("Networks") or {}
        return cls(
            id=str(entry.get("Id", "")),
            name=str(names[0]).lstrip("/"),
            image=str(entry.get("Image") or ""),
            status=str(entry.get("State") or ""),
            labels={str(k): str(v) for k, v in (entry.get("Labels") or {}).items()},
            networks={str(n): str((e or {}).get("IPAddress") or "") for n, e in networks.items()},
            ports=tuple(p for p in (PublishedPort.from_summary(e) for e in entry.get("Ports") or ()
                                    if isinstance(e, dict)) if p is not None),
        )


@dataclass(frozen=True)
class NetworkInfo:
    """A Docker network's identity and IPAM config (`IPAM.Config` entries verbatim)."""

    id: str
    name: str
    ipam_config: list[dict[str, Any]]
    labels: Mapping[str, str] = field(default_factory=dict)
    containers: tuple[str, ...] = ()  # names of attached containers

    @classmethod
    def from_inspect(cls, attrs: Mapping[str, Any]) -> NetworkInfo:
        """From the Engine API's network inspect (`GET /networks/{id}`)."""
        ipam = attrs.get("IPAM") or {}
        containers = attrs.get("Containers") or {}
        return cls(
            id=str(attrs.get("Id", "")),
            name=str(attrs.get("Name", "")),
            ipam_config=[dict(entry) for entry in ipam.get("Config") or []],
            labels={str(k): str(v) for k, v in (attrs.get("Labels") or {}).items()},
            containers=tuple(sorted(str((c or {}).get("Name", "")) for c in containers.values())),
        )


@dataclass(frozen=True)
class RuntimeInfo:
    """Facts about the container engine used by doctor/preflight."""

    version: str
    api_version: str
    cpus: int
    memory_bytes: int
    os: str
    cgroup_version: str = ""
    storage_driver: str = ""
    warnings: tuple[str, ...] = ()
    architecture: str = ""  # the engine's, as `docker info` says it (x86_64, aarch64, ...)
    containerd_store: bool = False  # images in containerd's store (Docker 29's default)
    security_options: tuple[str, ...] = ()  # name=rootless, name=userns, name=seccomp,...
    driver_status: tuple[tuple[str, str], ...] = ()  # e.g. ("Backing Filesystem", "xfs")
    # cgroup controllers the engine can use (false when its cgroup driver is "none", as kind
    # reads them: providers/docker/provider.go info()); rootless needs all three (Delegate=yes)
    memory_limit: bool = True
    pids_limit: bool = True
    cpu_shares: bool = True
    authorization_plugins: tuple[str, ...] = ()  # may refuse --privileged
    name: str = ""  # `docker info`'s Name: the engine host's hostname (docker-desktop, colima)
    components: tuple[str, ...] = ()  # `docker version`'s Components names (Engine, Podman
    # Engine, containerd, runc...); gpulab.docker_engines tells the engine from these
    product: str = ""  # `docker version`'s Platform.Name ("Docker Desktop 4.33.0 (160616)")
    kernel: str = ""  # `docker info`'s KernelVersion (uname -r of the engine's host)

    @property
    def rootless(self) -> bool:
        return any(o.startswith("name=rootless") for o in self.security_options)

    @property
    def userns_remap(self) -> bool:
        return any(o.startswith("name=userns") for o in self.security_options)

    @property
    def platform(self) -> str:
        """The OCI platform of images for this engine's nodes (`linux/amd64`, ...)."""
        return oci_platform(self.architecture)


def oci_platform(architecture: str) -> str:
    """`docker info`'s Architecture (uname -m) as an OCI platform; linux/amd64 when unknown."""
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
            "armv7l": "arm/v7", "armv6l": "arm/v6", "ppc64le": "ppc64le", "s390x": "s390x",
            "riscv64": "riscv64"}.get(architecture.strip().lower(), "amd64")
    return f"linux/{arch}"


class DockerReader(Protocol):
    """The read-only part of the runtime that host facts need (`plan` without docker-py)."""

    def containers(self, labels: Mapping[str, str]) -> list[ContainerInfo]: ...

    def network(self, name: str) -> NetworkInfo | None: ...

    def architecture(self) -> str:
        """`docker info`'s Architecture: the engine host's `uname -m` ('' when it gave none)."""
        ...


class ContainerRuntime(Protocol):
    """The Docker operations gpulab needs (kind's node provider, narrowed)."""

    def info(self) -> RuntimeInfo: ...

    def architecture(self) -> str:
        """`info().architecture` (what a DockerReader answers)."""
        ...

    def image_present(self, image: str) -> bool: ...

    def pull(self, image: str) -> None:
        """Pull an image onto the host (the image cache every lab on this host shares)."""
        ...

    def save_image(self, image: str, platform: str | None = None) -> bytes:
        """The image as a `docker save` tar archive (what `kind load` streams into nodes);
        with `platform` (`linux/amd64`), that platform's content only where the engine can."""
        ...

    def run_node(self, spec: ContainerSpec) -> ContainerInfo:
        """Start a node container the way kind does; the image must already be present."""
        ...

    def get(self, name: str) -> ContainerInfo | None: ...

    def containers(self, labels: Mapping[str, str]) -> list[ContainerInfo]:
        """Containers (running or not) carrying all of `labels`."""
        ...

    def exec(
        self, name: str, argv: list[str], *, stdin: bytes | None = None, timeout: float = 600
    ) -> ExecResult: ...

    def wait_for_log(self, name: str, pattern: str, timeout: float) -> bool:
        """Whether a line of the container's output matches `pattern` within `timeout` s."""
        ...

    def local_images(self, limit: int = 20) -> list[str]:
        """Tagged images already on the host (a few), newest first."""
        ...

    def probe_privileged(self, spec: ContainerSpec) -> str:
        """Run `true` in a throw-away container with the node options of `spec` (its image is on
        the host; gpulab.node_options.probe_node builds it): '' when the engine allows it, else
        the engine's reason."""
        ...

    def copy_in(self, name: str, path: str, data: bytes, mode: int = 0o600) -> None:
        """Write `data` to the file `path` inside the container, creating parent folders."""
        ...

    def remove(self, name: str) -> bool:
        """Force-remove a container and its anonymous volumes; False if it did not exist."""
        ...

    def network(self, name: str) -> NetworkInfo | None: ...

    def networks(self, labels: Mapping[str, str] | None = None) -> list[NetworkInfo]: ...

    def remove_network(self, name: str) -> bool: ...

    def volumes(self, labels: Mapping[str, str]) -> list[str]: ...

    def remove_volume(self, name: str) -> bool: ...


class KindProvider(Protocol):
    """The `kind` binary: management cluster lifecycle."""

    def version(self) -> str: ...

    def clusters(self) -> list[str]: ...

    def create(self, name: str, config: dict[str, Any], *, wait_seconds: int = 120) -> None: ...

    def delete(self, name: str) -> None: ...

    def kubeconfig(self, name: str) -> str:
        """The cluster's kubeconfig text (host endpoint)."""
        ...


class HelmGateway(Protocol):
    """Helm releases on one cluster (pyhelm3 behind a sync facade)."""

    def installed(self, release: HelmRelease) -> bool:
        """True when the release exists, is deployed, at this chart version with these values."""
        ...

    def install(self, release: HelmRelease, *, timeout_seconds: int = 600) -> None: ...

    def uninstall(self, name: str, namespace: str) -> None: ...

    def releases(self) -> list[dict[str, Any]]:
        """Every release in every namespace: name, namespace, chart, version, status."""
        ...

    def template(
        self, release: HelmRelease, *, kube_version: str | None = None, include_crds: bool = False
    ) -> list[dict[str, Any]]:
        """The release's objects as `helm template` renders them (no cluster contacted)."""
        ...


class KubeGateway(Protocol):
    """A Kubernetes API server (management cluster or a tenant)."""

    def server_version(self) -> str: ...

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply with field manager `gpulab`; returns the live (or dry-run) object."""
        ...

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...

    def list_objects(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[dict[str, Any]]: ...

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool: ...

    def patch_node_status(self, name: str, patch: list[dict[str, Any]]) -> None:
        """JSON patch on the node's status subresource."""
        ...

    def annotate(
        self,
        api_version: str,
        kind: str,
        name: str,
        annotations: Mapping[str, str | None],
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
    ) -> None:
        """Merge-patch annotations; a None value removes the key. With `resource_version`, the
        patch only applies to that version of the object (AdapterError with status 409 if it
        changed meanwhile), as HAMi's own lock release does."""
        ...

    def label(
        self,
        api_version: str,
        kind: str,
        name: str,
        labels: Mapping[str, str | None],
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
    ) -> None:
        """Merge-patch labels; a None value removes the key; `resource_version` as annotate."""
        ...

    def secret_data(self, name: str, namespace: str, key: str) -> bytes | None: ...

    def pod_logs(
        self, name: str, namespace: str, *, tail_lines: int = 20, container: str | None = None
    ) -> str: ...

    def events(self, namespace: str, involved_name: str | None = None) -> list[dict[str, Any]]: ...


def kubeconfig_path_hint(path: Path) -> str:
    """How to use a saved kubeconfig, without printing its contents."""
    return f"export KUBECONFIG={path}"


@dataclass
class LabAdapters:
    """The adapters a lab's steps use (every stack's); tests pass fakes."""

    runtime: ContainerRuntime
    kind: KindProvider
    kube: Callable[[Path], KubeGateway]
    helm: Callable[[Path], HelmGateway]
    fetch: Callable[[str], str]
    lab_dir: Path
    # a TCP connect from this host (host, port, timeout; OSError when it fails) that proves the
    # route to an API server before the steps that need it (gpulab.reach); None: not proved
    dial: Callable[[str, int, float], None] | None = None

    def management_kubeconfig(self) -> Path:
        return self.lab_dir / "management.kubeconfig"

    def tenant_kubeconfig(self, tenant: str) -> Path:
        return self.lab_dir / f"{tenant}.kubeconfig"
