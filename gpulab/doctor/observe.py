"""The host observed (`observe_host`, `observe_workers`, tool versions) and missing images
pulled: doctor's only I/O.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.doctor.facts import NODE_IMAGE_SIZE, HostSnapshot, ImageState
from gpulab.errors import GpulabError
from gpulab.paths import labs_root

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gpulab.adapters.base import (
        ContainerInfo,
        ContainerRuntime,
        ContainerSpec,
        NetworkInfo,
        RuntimeInfo,
    )
    from gpulab.adapters.docker_endpoint import DockerEndpoint
    from gpulab.engine.runner import Reporter
    from gpulab.profile.base import HostPort


def helm_version(binary: str | None) -> str | None:
    """What `helm version` says (None: no binary; 'unknown': it says no version)."""
    return _tool_version(binary, ["version", "--template", "{{.Version}}"], r"(v[\d.]+)")


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _swap_active() -> bool | None:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()
    except OSError:
        return None
    return len(lines) > 1


def _tool_version(binary: str | None, argv: list[str], pattern: str) -> str | None:
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, *argv], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(pattern, done.stdout + done.stderr)
    return match.group(1) if match else "unknown"


# What an image without a shell answers: the probe says nothing about privileges then.
_NO_SHELL = ("no such file", "executable file not found", "exec format error")


def _probe_privileged(runtime: ContainerRuntime, wanted: tuple[str, ...],
                      node: Callable[[str], ContainerSpec]) -> tuple[str, str | None]:
    """(image, answer) of the privileged probe: a container with the options `node(image)` gives
    (a kind node's on this host), of the profile's kindest/node image when it is on the host,
    else of a few images already there; ("", None) when none gives an answer."""
    candidates = [i for i in wanted if runtime.image_present(i)]
    candidates += [i for i in runtime.local_images(10) if i not in candidates]
    for image in candidates[:5]:
        answer = runtime.probe_privileged(node(image))
        if answer and any(marker in answer.lower() for marker in _NO_SHELL):
            continue  # the image has no /bin/sh: try another
        return image, answer
    return "", None


def _host_routes(path: str = "/proc/net/route") -> tuple[str, ...]:
    """The host's IPv4 routes other than the default one, as CIDRs (Linux; () elsewhere)."""
    import socket
    import struct

    routes: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()[1:]
    except OSError:
        return ()
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        try:
            dest = socket.inet_ntoa(struct.pack("<L", int(fields[1], 16)))
            mask = bin(int(fields[7], 16)).count("1")
        except (ValueError, OSError):
            continue
        if mask:
            routes.append(str(ipaddress.ip_network(f"{dest}/{mask}", strict=False)))
    return tuple(sorted(set(routes)))


def _state_problem(root: Path) -> str:
    """Why lab folders cannot be written under `root` ('' when they can)."""
    import os

    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder (lab folders go to {root})"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"no permission to write {existing} (lab folders go to {root})"
    try:
        free = shutil.disk_usage(existing).free
    except OSError as err:
        return f"cannot read the free space of {existing}: {err.strerror}"
    if free < 16 * 1024 * 1024:
        return f"only {free // 1024} KiB free on {existing} (lab folders go to {root})"
    return ""


def _pull_missing(runtime: ContainerRuntime, images: Sequence[str],
                  pull: Callable[[str], None] | None) -> tuple[ImageState, ...]:
    """Each image present, or pulled now with `pull` (None: not pulled), or why it cannot be."""
    states: list[ImageState] = []
    for image in dict.fromkeys(images):
        if runtime.image_present(image):
            states.append(ImageState(image, "present"))
            continue
        if pull is None:
            states.append(ImageState(image, "skipped"))
            continue
        started = time.monotonic()
        try:
            pull(image)
        except GpulabError as err:
            reason = err.message  # without the image's name twice (DockerRuntime.pull's words)
            for prefix in (f"Docker could not pull image {image}: ", f"pull image {image}: "):
                reason = reason.removeprefix(prefix)
            states.append(ImageState(image, "failed", reason))
            continue
        states.append(ImageState(image, "pulled", f"{time.monotonic() - started:.0f}s"))
    return tuple(states)


def _process_on(port: int, protocol: str) -> str:
    """The process listening on `port`, as psutil sees it (when it is installed and may look);
    '' when it cannot tell."""
    import importlib

    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return ""
    try:
        for conn in psutil.net_connections(kind="udp" if protocol == "udp" else "tcp"):
            listening = protocol == "udp" or conn.status == psutil.CONN_LISTEN
            if conn.laddr and conn.laddr.port == port and listening and conn.pid:
                return f"{psutil.Process(conn.pid).name()}, pid {conn.pid}"
    except (psutil.Error, OSError):  # not allowed to look (AccessDenied), or the process ended
        return ""
    return ""


def _port_holder(address: str, port: int, protocol: str) -> str:
    """'' when `address:port` can be bound on this host (as Docker binds a published port, with
    SO_REUSEADDR), else who holds it: "another process" (named when psutil can see it)."""
    if protocol not in ("tcp", "udp"):
        return ""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    kind = socket.SOCK_DGRAM if protocol == "udp" else socket.SOCK_STREAM
    try:
        with socket.socket(family, kind) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address or "0.0.0.0", port))
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            return ""  # EACCES below 1024, no IPv6...: the engine binds it, not gpulab
        name = _process_on(port, protocol)
        return f"another process ({name})" if name else "another process"
    return ""


def observe_host(runtime: ContainerRuntime | None, docker_error: str = "",
                 kind_binary: str | None = None, helm_binary: str | None = None,
                 kind_clusters: tuple[str, ...] = (),
                 probe_images: tuple[str, ...] = (), *,
                 pull: Callable[[str], None] | None = None,
                 host_ports: Sequence[HostPort] = (),
                 endpoint: DockerEndpoint | None = None,
                 environ: Mapping[str, str] | None = None) -> HostSnapshot:
    """Gather the snapshot (the only I/O in doctor).

    `probe_images` are the profile's kindest/node images: each missing one is pulled with `pull`
    (None: not pulled), then the privileged probe runs the first one on the host with the
    options a kind node gets on this engine (gpulab.node_options.probe_node). `host_ports` are
    bind-tested here when the engine runs on this host (`endpoint` is a unix socket)."""

    info = None
    containers: tuple[ContainerInfo, ...] = ()
    networks: tuple[NetworkInfo, ...] = ()
    images: tuple[ImageState, ...] = ()
    probe: str | None = None
    probe_image = ""
    env = os.environ if environ is None else environ
    if runtime is not None:
        try:
            info = runtime.info()
            containers = tuple(runtime.containers({}))
            networks = tuple(runtime.networks())
            images, probe_image, probe = _pull_and_probe(runtime, info, probe_images, pull, env)
        except GpulabError as err:
            docker_error = str(err)
            info = None
    local = _local(endpoint)
    busy = ({(p.address, p.port, p.protocol): holder for p in host_ports
             if (holder := _port_holder(p.address, p.port, p.protocol))} if local else None)
    disk_root = Path("/var/lib/docker")
    try:
        disk_free = shutil.disk_usage(disk_root if disk_root.exists() else Path.home()).free
    except OSError:
        disk_free = None
    return HostSnapshot(
        docker=info,
        docker_error=docker_error,
        disk_free_bytes=disk_free,
        inotify_watches=_read_int("/proc/sys/fs/inotify/max_user_watches"),
        inotify_instances=_read_int("/proc/sys/fs/inotify/max_user_instances"),
        swap_active=_swap_active(),
        kind_version=_tool_version(kind_binary or shutil.which("kind"), ["version"],
                                   r"kind (v[\d.]+)"),
        helm_version=helm_version(helm_binary or shutil.which("helm")),
        kind_clusters=kind_clusters,
        containers=containers,
        networks=networks,
        privileged_probe=probe,
        probe_image=probe_image,
        docker_endpoint=endpoint.describe() if endpoint is not None else "",
        node_images=images,
        busy_ports=busy,
        git_found=shutil.which("git") is not None,
        host_routes=_host_routes(),
        state_dir=str(labs_root()),
        state_problem=_state_problem(labs_root()),
        docker_local=local,
        host_os=sys.platform,
    )


def observe_workers(runtime: ContainerRuntime | None, docker_error: str = "",
                    images: tuple[str, ...] = (), *,
                    pull: Callable[[str], None] | None = None,
                    endpoint: DockerEndpoint | None = None,
                    environ: Mapping[str, str] | None = None) -> HostSnapshot:
    """What `diagnose_workers` reads (the only I/O): the engine, the workers' `images` (each
    missing one pulled with `pull`; None: not pulled) and the privileged probe with the options
    a kind node gets on this engine (gpulab.node_options.probe_node). No kind, ports or disk."""

    info = None
    states: tuple[ImageState, ...] = ()
    probe: str | None = None
    probe_image = ""
    env = os.environ if environ is None else environ
    if runtime is not None:
        try:
            info = runtime.info()
            states, probe_image, probe = _pull_and_probe(runtime, info, images, pull, env)
        except GpulabError as err:
            docker_error = str(err)
            info = None
    return HostSnapshot(docker=info, docker_error=docker_error, node_images=states,
                        privileged_probe=probe, probe_image=probe_image,
                        docker_endpoint=endpoint.describe() if endpoint is not None else "",
                        docker_local=_local(endpoint), host_os=sys.platform)


def _pull_and_probe(runtime: ContainerRuntime, info: RuntimeInfo, images: tuple[str, ...],
                    pull: Callable[[str], None] | None, env: Mapping[str, str]
                    ) -> tuple[tuple[ImageState, ...], str, str | None]:
    """(the images' states, each missing one pulled with `pull`; the privileged probe's image
    and answer), the probe run with the options a kind node gets on this engine
    (gpulab.node_options.probe_node)."""
    from gpulab.node_options import probe_node

    states = _pull_missing(runtime, images, pull)
    probe_image, probe = _probe_privileged(runtime, images,
                                           lambda image: probe_node(image, info, env))
    return states, probe_image, probe


def _local(endpoint: DockerEndpoint | None) -> bool:
    """Whether the engine runs on this host (its endpoint, when known, is a unix socket)."""
    return endpoint is None or endpoint.unix_socket is not None


def reported_pull(runtime: ContainerRuntime, report: Reporter | None, step: str,
                  what: str = "node image") -> Callable[[str], None]:
    """`runtime.pull` shown as a step of its own (`step`): `started` (with the size to
    expect), then `done` or `failed`, as the steps of `up` are shown."""
    from gpulab.engine.runner import Event

    def pull(image: str) -> None:
        title = f"Pulling {what} {image} ({NODE_IMAGE_SIZE}, once per host)"
        if report is not None:
            report(Event(step, "started", title))
        started = time.monotonic()
        try:
            runtime.pull(image)
        except GpulabError as err:
            if report is not None:
                report(Event(step, "failed", title, time.monotonic() - started, err.message))
            raise
        if report is not None:
            report(Event(step, "done", title, time.monotonic() - started))

    return pull
