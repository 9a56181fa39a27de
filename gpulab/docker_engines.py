"""Which Docker engine this is, from what `docker info` and `docker version` answer (the
adapters collect them: RuntimeInfo), and how this host reaches what the lab publishes. Pure.

The facts each engine is told by, and where they come from (tests/data/pinned/engines/ holds the
answers the tests feed, each with its source):

- Podman's Docker-compatible API names its server component "Podman Engine" in `version`'s
  Components, where Docker Engine names it "Engine";
- Docker Desktop: `info`'s OperatingSystem "Docker Desktop", Name "docker-desktop", or
  `version`'s Platform.Name "Docker Desktop <version> (<build>)";
- OrbStack: OperatingSystem "OrbStack", Name "orbstack", or a KernelVersion naming orbstack
  (OrbStack's maintainer: "uname -r should contain orbstack", orbstack discussion #1078; older
  releases said OperatingSystem "Alpine Linux edge (containerized)", orbstack issue #1);
- colima: the VM's hostname, `info`'s Name: "colima", or "colima-<profile>" for another profile;
- rootless Docker: SecurityOptions carries "name=rootless" (kind reads the same:
  providers/docker/provider.go info() at fed26882);
- Linux rootful Docker Engine: none of these, Components' "Engine", reached on a unix socket of
  this Linux host;
- anything else is `unknown`: gpulab says what it saw and goes on as for the others.

What gpulab supports: kind's docker provider, which kind picks when `docker -v` says "Docker
version" (pkg/cluster/internal/providers/docker/util.go:27-34 at fed26882) and which gpulab's
own worker containers and image loading follow (node_options.py). Podman is kind's podman
provider, driven through the podman CLI (providers/podman/util.go:31-38, provision.go), not the
Docker API gpulab speaks, so Podman is refused, in one line.

The route: every engine publishes a port on 127.0.0.1 (kind's extraPortMappings, `--publish`,
providers/docker/provision.go generatePortMappings), and that is how gpulab reaches every API
it hands the user, on every engine. Only a rootful Docker Engine on this Linux host also
routes the kind network's addresses to the host; on Docker Desktop "the container networks are
not exposed to the host and you cannot reach the kind nodes via IP" (kind fed26882
site/content/docs/user/known-issues.md:379-388), and colima, OrbStack and rootless Docker keep
them in a VM or a network namespace of their own as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulab.adapters.base import RuntimeInfo

__all__ = ["Engine", "classify", "route_text"]

PODMAN_COMPONENT = "Podman Engine"
DOCKER_COMPONENT = "Engine"


@dataclass(frozen=True)
class Engine:
    """What the engine is (`kind`), in words (`label`), the facts it was told by (`seen`),
    whether gpulab supports it (else `refusal`, one line, and `fix`), and whether this host
    reaches the kind network's addresses directly (`routes_nodes`)."""

    kind: str  # docker-desktop | orbstack | colima | rootless | podman | linux | unknown
    label: str
    seen: str
    supported: bool = True
    routes_nodes: bool = False
    refusal: str = ""
    fix: str = ""


def classify(info: RuntimeInfo, *, local: bool, host_os: str) -> Engine:
    """The engine `info` describes; `local`: reached on a unix socket of this host; `host_os`:
    this host's `sys.platform`."""
    name, system = info.name, info.os
    seen = f"OperatingSystem {system!r}, Name {name!r}"
    if PODMAN_COMPONENT in info.components:
        return Engine(
            "podman", f"Podman {info.version}".strip(), f"server component {PODMAN_COMPONENT!r}",
            supported=False,
            refusal=f"Podman {info.version}'s Docker-compatible API is not supported: kind runs "
                    "Podman through its podman provider (the podman CLI), while gpulab's worker "
                    "containers and image loading follow kind's docker provider",
            fix="run gpulab on Docker Engine (rootful or rootless), Docker Desktop, colima or "
                "OrbStack; point DOCKER_HOST or the docker context at it")
    if system == "Docker Desktop" or name == "docker-desktop" \
            or info.product.startswith("Docker Desktop"):
        return Engine("docker-desktop", "Docker Desktop", seen)
    if system == "OrbStack" or name == "orbstack" or "orbstack" in info.kernel:
        return Engine("orbstack", "OrbStack", f"{seen}, KernelVersion {info.kernel!r}")
    if name == "colima" or name.startswith("colima-"):
        return Engine("colima", "colima", seen)
    if info.rootless:
        return Engine("rootless", "rootless Docker", "SecurityOptions name=rootless")
    if local and host_os.startswith("linux") and (DOCKER_COMPONENT in info.components
                                                  or not info.components):
        return Engine("linux", "Docker Engine (rootful) on this Linux host",
                      f"{seen}, a unix socket of this host", routes_nodes=True)
    where = "on this host" if local else "reached over the network"
    return Engine("unknown", f"a Docker engine gpulab does not recognise ({where})", seen)


def route_text(engine: Engine) -> str:
    """How this host reaches the APIs the lab publishes, on `engine`."""
    text = "ports published on 127.0.0.1"
    if engine.routes_nodes:
        return text + " (the kind network's addresses route here too; the workers use them)"
    return text + " (the kind network's addresses do not reach this host)"
