"""What kind adds to a node container's `docker run` on this host, for every lab and for doctor.

kind's node flags that never change are `ContainerSpec`'s defaults (gpulab.adapters.base); the ones
that depend on the engine and the environment are decided here, the way kind's Docker provider
decides them (kind v0.33 = fed26882, `pkg/cluster/internal/providers/docker/provision.go`
commonArgs, lines 134-213, and `util.go`). Stacks use them for the worker containers they start
themselves; doctor uses the same functions for its privileged probe, so the probe asks the engine
for exactly what a node will ask for (`probe_node`). Nothing here knows a stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.adapters.base import ContainerSpec

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gpulab.adapters.base import RuntimeInfo

__all__ = [
    "NO_PROXY_SERVICES",
    "PROBE_LABELS",
    "PROXY_VARIABLES",
    "NodeHostOptions",
    "docker_config_proxies",
    "mounts_dev_mapper",
    "node_host_options",
    "probe_node",
    "proxy_env",
    "with_host_options",
]

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
NO_PROXY_SERVICES = (".svc", ".svc.cluster", ".svc.cluster.local")


@dataclass(frozen=True)
class NodeHostOptions:
    """What kind adds to a node's `docker run` on this host (provision.go commonArgs)."""

    userns_host: bool = False  # --userns=host where the daemon remaps user namespaces
    mount_dev_mapper: bool = False  # --volume /dev/mapper:/dev/mapper
    fuse_device: bool = False  # --device /dev/fuse on rootless Docker
    env: tuple[tuple[str, str], ...] = ()  # proxy variables, then KIND_EXPERIMENTAL_...


def mounts_dev_mapper(info: RuntimeInfo) -> bool:
    """kind's mountDevMapper (providers/docker/util.go:51-93): never rootless; else when the
    storage driver is btrfs, zfs or devicemapper, or the backing filesystem is btrfs, zfs or
    xfs. (Docker 29's containerd store reports no backing filesystem, as kind does not either.)"""
    if info.rootless:
        return False
    if info.storage_driver in ("btrfs", "zfs", "devicemapper"):
        return True
    backing = dict(info.driver_status).get("Backing Filesystem", "")
    return backing in ("btrfs", "zfs", "xfs")


def docker_config_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """The Docker client's `proxies.default` ($DOCKER_CONFIG/config.json, else ~/.docker), which
    kind v0.33 reads when no proxy variable is set (providers/docker/proxyconfig.go, PR 4192)."""
    folder = Path(environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    proxies = ((data.get("proxies") or {}).get("default") or {}) if isinstance(data, dict) else {}
    keys = {"httpProxy": "HTTP_PROXY", "httpsProxy": "HTTPS_PROXY", "noProxy": "NO_PROXY"}
    return {keys[k]: str(v) for k, v in proxies.items() if k in keys and v}


def proxy_env(environ: Mapping[str, str], no_proxy: Sequence[str]) -> dict[str, str]:
    """The proxy variables a node gets, as kind passes them (common/proxy.go,
    provision.go getProxyEnv): upper- or lower-case HTTP(S)_PROXY/NO_PROXY from gpulab's
    environment (else the Docker client's config), both cases set, and NO_PROXY extended with
    what must never go through the proxy: the lab's CIDRs, the kind network's subnets, the node
    names and the cluster's service domains. Nothing when no proxy is configured."""
    found = {name: environ.get(name) or environ.get(name.lower()) or ""
             for name in PROXY_VARIABLES}
    if not (found["HTTP_PROXY"] or found["HTTPS_PROXY"]):
        found = dict.fromkeys(PROXY_VARIABLES, "") | docker_config_proxies(environ)
    if not (found.get("HTTP_PROXY") or found.get("HTTPS_PROXY")):
        return {}
    skip = [s for s in (found.get("NO_PROXY") or "").split(",") if s.strip()]
    for entry in [*no_proxy, *NO_PROXY_SERVICES]:
        if entry and entry not in skip:
            skip.append(entry)
    found["NO_PROXY"] = ",".join(skip)
    env: dict[str, str] = {}
    for name in PROXY_VARIABLES:
        if found.get(name):
            env[name] = env[name.lower()] = found[name]
    return env


def node_host_options(info: RuntimeInfo, environ: Mapping[str, str],
                      no_proxy: Sequence[str]) -> NodeHostOptions:
    """kind's host-dependent node options for this engine and environment."""
    env = proxy_env(environ, no_proxy)
    snapshotter = environ.get("KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER")
    if snapshotter:  # kind passes it through to the node's entrypoint
        env["KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"] = snapshotter
    return NodeHostOptions(userns_host=info.userns_remap, mount_dev_mapper=mounts_dev_mapper(info),
                           fuse_device=info.rootless, env=tuple(sorted(env.items())))


def with_host_options(spec: ContainerSpec, options: NodeHostOptions) -> ContainerSpec:
    """The node spec with what this host needs (render's specs are host-independent)."""
    return replace(
        spec,
        binds=(*spec.binds, ("/dev/mapper", "/dev/mapper")) if options.mount_dev_mapper
        else spec.binds,
        devices=(*spec.devices, "/dev/fuse") if options.fuse_device else spec.devices,
        userns_mode="host" if options.userns_host else spec.userns_mode,
        env={**spec.env, **dict(options.env)},
    )


PROBE_LABELS = {"gpulab.dev/probe": "privileged"}


def probe_node(image: str, info: RuntimeInfo, environ: Mapping[str, str]) -> ContainerSpec:
    """A kind node of `image` as this host would run it, for doctor's privileged probe: kind's
    fixed flags and the host-dependent ones (--userns=host on a userns-remap daemon, /dev/fuse on
    rootless Docker, /dev/mapper on btrfs/zfs/xfs) from the functions the labs' nodes use.
    The container runtime decides which of them a throw-away probe can leave out."""
    return with_host_options(ContainerSpec(name="gpulab-privileged-probe", image=image,
                                           network="", labels=dict(PROBE_LABELS)),
                             node_host_options(info, environ, ()))
