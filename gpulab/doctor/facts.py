"""What doctor reads and reports: Finding, ImageState, HostSnapshot, and the host's thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulab.adapters.base import ContainerInfo, NetworkInfo, RuntimeInfo


GIB = 1024**3
INOTIFY_WATCHES = 524288
INOTIFY_INSTANCES = 512
MIN_DOCKER_MAJOR = 20
# A kindest/node image on disk: kind's docs list 1.23GB for v1.17.0 (kind fed26882
# site/content/docs/user/working-offline.md:66); docs/dev/upstream-facts/peers-and-users.md:88
# records about 1 GB (956 MB for v1.29.2).
NODE_IMAGE_SIZE = "about 1 GB"


@dataclass(frozen=True)
class Finding:
    """One doctor line: what was checked, ok/warn/fail/unknown (the check could not run:
    the detail says why, the fix what to run), what was seen and the fix."""

    check: str
    status: str  # ok | warn | fail | unknown
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True)
class ImageState:
    """A node image the lab needs: `present` on the host, `pulled` now (detail: how long),
    `skipped` (not there, not pulled: --no-pull) or `failed` (detail: why it cannot be pulled)."""

    image: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class HostSnapshot:
    """Everything doctor looks at, observed once."""

    docker: RuntimeInfo | None = None
    docker_error: str = ""
    disk_free_bytes: int | None = None
    inotify_watches: int | None = None
    inotify_instances: int | None = None
    swap_active: bool | None = None
    kind_version: str | None = None  # None: not found
    helm_version: str | None = None
    kind_clusters: tuple[str, ...] = ()
    containers: tuple[ContainerInfo, ...] = ()
    networks: tuple[NetworkInfo, ...] = ()
    images_present: dict[str, bool] = field(default_factory=dict)
    # A throw-away --privileged container: None = not tried (no kindest/node image on the
    # host yet), "" = it ran, else the engine's reason.
    privileged_probe: str | None = None
    probe_image: str = ""
    docker_endpoint: str = ""  # the engine gpulab and kind use (and the context naming it)
    node_images: tuple[ImageState, ...] = ()
    # The profile's host ports that could not be bound here: (address, port, protocol) → who
    # holds them; None when the engine is not on this host (then only containers are checked).
    busy_ports: dict[tuple[str, int, str], str] | None = field(default_factory=dict)
    git_found: bool = True
    host_routes: tuple[str, ...] = ()  # IPv4 destinations of the host's routes (not default)
    state_dir: str = ""  # where lab folders go (GPULAB_HOME or the XDG data dir)
    state_problem: str = ""  # why gpulab cannot write there ('' when it can)
    docker_local: bool = True  # the engine is reached on a unix socket of this host
    host_os: str = "linux"  # this host's sys.platform (gpulab.docker_engines.classify)
