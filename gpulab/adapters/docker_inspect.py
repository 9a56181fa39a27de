"""Readers of the engine's answers: API versions, info's driver status, a container's inspect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.adapters.base import ContainerInfo, PublishedPort, RuntimeInfo

if TYPE_CHECKING:
    from collections.abc import Mapping



def _api_at_least(version: str, wanted: tuple[int, int]) -> bool:
    """'1.51' >= (1, 48); an unreadable version is too old."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= wanted


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    """`docker info`'s DriverStatus ([[key, value], ...]) as pairs; anything else is dropped."""
    return [(entry[0], entry[1]) for entry in value or ()
            if isinstance(entry, (list, tuple)) and len(entry) == 2]


def _containerd_store(info: Mapping[str, Any]) -> bool:
    """Whether images live in containerd's store: its DriverStatus says
    `driver-type io.containerd.snapshotter.v1` (moby daemon/containerd/service.go:160-165)."""
    return any(str(k) == "driver-type" and "io.containerd.snapshotter" in str(v)
               for k, v in _pairs(info.get("DriverStatus")))


def runtime_info(info: Mapping[str, Any], version: Mapping[str, Any]) -> RuntimeInfo:
    """RuntimeInfo from the engine's GET /info and GET /version answers (`docker info`,
    `docker version`)."""
    no_cgroups = info.get("CgroupDriver") == "none"
    return RuntimeInfo(
        version=str(version.get("Version") or info.get("ServerVersion") or ""),
        api_version=str(version.get("ApiVersion") or ""),
        cpus=int(info.get("NCPU") or 0),
        memory_bytes=int(info.get("MemTotal") or 0),
        os=str(info.get("OperatingSystem") or ""),
        cgroup_version=str(info.get("CgroupVersion") or ""),
        storage_driver=str(info.get("Driver") or ""),
        warnings=tuple(str(w) for w in info.get("Warnings") or ()),
        architecture=str(info.get("Architecture") or ""),
        containerd_store=_containerd_store(info),
        security_options=tuple(str(o) for o in info.get("SecurityOptions") or ()),
        memory_limit=bool(info.get("MemoryLimit", True)) and not no_cgroups,
        pids_limit=bool(info.get("PidsLimit", True)) and not no_cgroups,
        cpu_shares=bool(info.get("CPUShares", True)) and not no_cgroups,
        authorization_plugins=tuple(
            str(p) for p in ((info.get("Plugins") or {}).get("Authorization") or ())),
        driver_status=tuple((str(k), str(v)) for k, v in _pairs(info.get("DriverStatus"))),
        name=str(info.get("Name") or ""),
        components=tuple(str(c.get("Name") or "") for c in version.get("Components") or ()
                         if isinstance(c, dict)),
        product=str((version.get("Platform") or {}).get("Name") or ""),
        kernel=str(info.get("KernelVersion") or ""),
    )


def _container_from_inspect(attrs: Mapping[str, Any]) -> ContainerInfo:
    config = attrs.get("Config") or {}
    networks = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return ContainerInfo(
        id=str(attrs.get("Id", "")),
        name=str(attrs.get("Name", "")).lstrip("/"),
        image=str(config.get("Image") or attrs.get("Image") or ""),
        status=str((attrs.get("State") or {}).get("Status", "")),
        labels={str(k): str(v) for k, v in (config.get("Labels") or {}).items()},
        networks={str(n): str((e or {}).get("IPAddress") or "") for n, e in networks.items()},
        ports=PublishedPort.from_port_map((attrs.get("NetworkSettings") or {}).get("Ports")),
    )


def _anonymous_volumes(attrs: Mapping[str, Any]) -> list[str]:
    """Names of the volumes mounted without a source (created for this container alone)."""
    host_config = attrs.get("HostConfig") or {}
    targets = {
        m.get("Target")
        for m in host_config.get("Mounts") or []
        if m.get("Type") == "volume" and not m.get("Source")
    }
    targets |= set((attrs.get("Config") or {}).get("Volumes") or {})  # `-v /path` style
    named = {m.get("Source") for m in host_config.get("Mounts") or [] if m.get("Source")}
    named |= {str(b).split(":", 1)[0] for b in host_config.get("Binds") or []}
    return [
        str(m["Name"])
        for m in attrs.get("Mounts") or []
        if m.get("Type") == "volume"
        and m.get("Destination") in targets
        and m.get("Name")
        and m.get("Name") not in named
    ]
