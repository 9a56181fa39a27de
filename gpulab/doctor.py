"""`gpulab doctor` and `up`'s preflight: pure findings over observed host facts.

Observation (`observe_host`) is the only I/O; `diagnose` turns facts into ok/warn/fail findings,
each with the fix, so it is tested without a host.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_LAB, kind_cluster_name
from gpulab.netcalc import ipv4_subnets
from gpulab.paths import labs_root
from gpulab.tools import HELM_MAJORS, HELM_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gpulab.adapters.base import (
        ContainerInfo,
        ContainerRuntime,
        ContainerSpec,
        NetworkInfo,
        PublishedPort,
        RuntimeInfo,
    )
    from gpulab.adapters.docker_endpoint import DockerEndpoint
    from gpulab.engine.runner import Reporter
    from gpulab.profile.base import HostPort, HostWorkers, LabProfile

__all__ = ["NODE_IMAGE_SIZE", "Finding", "HostSnapshot", "ImageState", "cluster_findings",
           "diagnose", "diagnose_workers", "helm_finding", "needs", "observe_host",
           "observe_workers", "reported_pull", "state_finding"]

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
    """One doctor line: what was checked, ok/warn/fail, what was seen and the fix."""

    check: str
    status: str  # ok | warn | fail
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


def needs(profile: LabProfile) -> tuple[float, float, int]:
    """(memory GiB, disk GiB, CPUs) the profile needs (its stack's estimate)."""
    wanted = profile.host_needs()
    return wanted.memory_gib, wanted.disk_gib, wanted.cpus


def diagnose(snapshot: HostSnapshot, profile: LabProfile, lab: str) -> list[Finding]:
    """Findings in a stable order; any `fail` stops `up` before it creates anything."""
    out: list[Finding] = []
    info = snapshot.docker
    if info is None:
        return [_no_docker(snapshot)]
    out.append(_docker(snapshot, info))
    out.extend(_privileged(snapshot, info))
    out.extend(_node_images(snapshot))
    memory, disk, cpus = needs(profile)
    out.extend(_resources(info, memory, cpus, "the profile needs"))
    if snapshot.disk_free_bytes is not None:
        free = snapshot.disk_free_bytes / GIB
        out.append(Finding(
            "disk", "ok" if free >= disk else "warn",
            f"{free:.1f} GiB free for Docker; the profile needs about {disk:.0f} GiB",
            "" if free >= disk else "free disk space (docker system prune)",
        ))
    out.extend(_inotify(snapshot))
    if snapshot.swap_active is not None:
        # Tolerated like kind's nodes: every lab's kubelets run with failSwapOn: false
        # (kamaji-hami: Kamaji's configurationJSONPatches; kind: its own kubeadm config).
        out.append(Finding(
            "swap", "ok",
            "swap is on (tolerated: the lab's kubelets run with failSwapOn: false, as kind's)"
            if snapshot.swap_active else "swap is off",
        ))
    out.append(_tool("kind", snapshot.kind_version, profile.management.kind_version))
    out.append(_tool("helm", snapshot.helm_version, HELM_VERSION, minimum=True))
    from_git = [c.display for c in profile.charts() if c.commit]
    if from_git:
        out.append(Finding(
            "git", "ok" if snapshot.git_found else "fail",
            f"git {'found' if snapshot.git_found else 'not found'}; charts pinned to a commit: "
            f"{', '.join(from_git)}",
            "" if snapshot.git_found else "install git (apt-get install git, brew install git)"))
    out.extend(_collisions(snapshot, profile, lab))
    out.extend(_ports(snapshot, profile, lab))
    out.append(_state(snapshot.state_dir, snapshot.state_problem))
    return out


def diagnose_workers(snapshot: HostSnapshot, workers: HostWorkers) -> list[Finding]:
    """What a lab whose cluster is elsewhere needs of this host for its worker containers
    (kindest/node, with kind's node options; no kind): Docker, their image, privileged
    containers, memory and CPUs for the workers alone."""
    info = snapshot.docker
    if info is None:
        return [_no_docker(snapshot)]
    many = "s" if workers.count != 1 else ""
    return [_docker(snapshot, info),
            *_privileged(snapshot, info, WORKER_NODES),
            *_node_images(snapshot),
            *_resources(info, workers.memory_gib, workers.cpus,
                        f"the lab's {workers.count} worker container{many} need")]


def _no_docker(snapshot: HostSnapshot) -> Finding:
    return Finding("docker", "fail", snapshot.docker_error or "Docker not reachable",
                   "start the Docker engine (or choose one: DOCKER_HOST, DOCKER_CONTEXT, "
                   "docker context use), then retry")


def _docker(snapshot: HostSnapshot, info: RuntimeInfo) -> Finding:
    major = _major(info.version)
    at = f" at {snapshot.docker_endpoint}" if snapshot.docker_endpoint else ""
    return Finding(
        "docker", "ok" if major >= MIN_DOCKER_MAJOR else "warn",
        f"Docker {info.version} (API {info.api_version}, {info.os}){at}",
        "" if major >= MIN_DOCKER_MAJOR else f"Docker {MIN_DOCKER_MAJOR}+ is recommended",
    )


def _resources(info: RuntimeInfo, memory: float, cpus: int, who: str) -> list[Finding]:
    """Memory and CPUs Docker has against what `who` (the profile, the workers) needs."""
    have_mem = info.memory_bytes / GIB
    return [
        Finding("memory", "ok" if have_mem >= memory else "fail",
                f"{have_mem:.1f} GiB for Docker; {who} about {memory:.1f} GiB",
                "" if have_mem >= memory else "free memory, give Docker more, or remove a tenant"),
        Finding("cpu", "ok" if info.cpus >= cpus else "fail", f"{info.cpus} CPUs (need {cpus})",
                "" if info.cpus >= cpus else f"give Docker at least {cpus} CPUs"),
    ]


def _state(state_dir: str, problem: str) -> Finding:
    return Finding("state", "fail" if problem else "ok",
                   problem or f"lab folders go to {state_dir}",
                   "set GPULAB_HOME to a writable folder with free space, or free space"
                   if problem else "")


def state_finding() -> Finding:
    """Whether lab folders can be written where they go (GPULAB_HOME or the XDG data dir)."""
    return _state(str(labs_root()), _state_problem(labs_root()))


def helm_finding() -> Finding:
    """The helm gpulab finds (its cache, then PATH): there, and the pin or newer of a major
    whose post-renderer gpulab knows (as `gpulab.tools.check_version` takes it)."""
    from gpulab.tools import find_tool

    return _tool("helm", helm_version(find_tool("helm")), HELM_VERSION, minimum=True)


def helm_version(binary: str | None) -> str | None:
    """What `helm version` says (None: no binary; 'unknown': it says no version)."""
    return _tool_version(binary, ["version", "--template", "{{.Version}}"], r"(v[\d.]+)")


ROOTLESS_DOCS = "https://kind.sigs.k8s.io/docs/user/rootless/"
KIND_NODES = "kind's nodes"
# kamaji-hami's `cluster.workers: containers` on an existing cluster: kindest/node containers
# started with a kind node's options (node_options), no kind cluster
WORKER_NODES = "the lab's worker containers (kindest/node, with kind's node options)"


def privileged_advice(nodes: str = KIND_NODES) -> str:
    """What makes an engine run `nodes` (privileged containers)."""
    return (f"{nodes} need --privileged: use rootful Docker, or rootless Docker with cgroup v2 "
            f"and systemd Delegate=yes ({ROOTLESS_DOCS}); no authorization plugin may deny "
            "privileged containers")


PRIVILEGED_ADVICE = privileged_advice()


def _privileged(snapshot: HostSnapshot, info: RuntimeInfo, nodes: str = KIND_NODES
                ) -> list[Finding]:
    """Can this engine run kind's privileged nodes (or `nodes` started as they are)? kind's own
    rules first (create.go validateProvider, v0.33), then the probe's answer when one was
    made."""
    if info.rootless and info.cgroup_version != "2":
        return [Finding("privileged", "fail", "rootless Docker on cgroup v1",
                        f"running kind with rootless provider requires cgroup v2, see "
                        f"{ROOTLESS_DOCS}")]
    if info.rootless and not (info.memory_limit and info.pids_limit and info.cpu_shares):
        return [Finding("privileged", "fail",
                        "rootless Docker without the memory, pids and cpu cgroup controllers",
                        f'running kind with rootless provider requires setting systemd property '
                        f'"Delegate=yes", see {ROOTLESS_DOCS}')]
    if snapshot.privileged_probe:
        return [Finding("privileged", "fail",
                        f"Docker refused a --privileged container of {snapshot.probe_image}: "
                        f"{snapshot.privileged_probe}", privileged_advice(nodes))]
    mode = "rootless" if info.rootless else "rootful"
    if snapshot.privileged_probe == "":
        return [Finding("privileged", "ok", f"{mode} Docker runs --privileged containers "
                                            f"(probed with {snapshot.probe_image})")]
    if info.authorization_plugins:
        return [Finding("privileged", "warn",
                        f"authorization plugin(s) {', '.join(info.authorization_plugins)} may "
                        "refuse --privileged (not probed: no image on this host to probe with)",
                        privileged_advice(nodes))]
    return [Finding("privileged", "ok",
                    f"{mode} Docker (not probed: no image on this host to probe with)")]


def _node_images(snapshot: HostSnapshot) -> list[Finding]:
    """The node image kind (and the probe) need: on the host, pulled now, or why not."""
    out: list[Finding] = []
    for seen in snapshot.node_images:
        if seen.state == "present":
            out.append(Finding("node image", "ok", f"{seen.image} is on this host"))
        elif seen.state == "pulled":
            out.append(Finding("node image", "ok", f"pulled {seen.image} ({seen.detail})"))
        elif seen.state == "skipped":
            probe = (f"the privileged probe used {snapshot.probe_image}" if snapshot.probe_image
                     else "the privileged probe could not run")
            out.append(Finding(
                "node image", "warn",
                f"{seen.image} is not on this host and was not pulled (--no-pull); {probe}",
                f"gpulab doctor without --no-pull pulls it ({NODE_IMAGE_SIZE}, once per host; "
                "up needs it anyway) and probes with it"))
        else:
            out.append(Finding(
                "node image", "fail", f"cannot pull {seen.image}: {seen.detail}",
                "the Docker daemon pulls it: check its internet access (or its registry mirror "
                "and proxy), or docker load the image, then retry"))
    return out


def _published(port: PublishedPort, wanted: HostPort) -> bool:
    """Whether a container's published port takes `wanted` (the same port and protocol, on the
    same address or on a wildcard one: 0.0.0.0 and :: hold every address)."""
    if port.port != wanted.port or port.protocol != wanted.protocol:
        return False
    wildcards = ("", "0.0.0.0", "::")
    return port.address in wildcards or wanted.address in wildcards \
        or port.address == wanted.address


def _owner(container: ContainerInfo) -> tuple[str, str]:
    """(lab, kind cluster) a container belongs to, from its labels ('' when none)."""
    cluster = container.labels.get("io.x-k8s.kind.cluster", "")
    lab = container.labels.get(LABEL_LAB, "") or (cluster.removeprefix("gpulab-")
                                                    if cluster.startswith("gpulab-") else "")
    return lab, cluster


def _ports(snapshot: HostSnapshot, profile: LabProfile, lab: str) -> list[Finding]:
    """Every host port the profile publishes is free, or held by this very lab (re-running
    `up`); else who holds it: a container of another lab or kind cluster (its published ports,
    as Docker reports them), or another process (a bind test on this host)."""
    wanted = profile.host_ports()
    if not wanted:
        return []
    taken: list[str] = []
    mine: list[str] = []
    for port in wanted:
        holder = next((c for c in snapshot.containers
                       if c.running and any(_published(p, port) for p in c.ports)), None)
        if holder is not None:
            other, cluster = _owner(holder)
            if other == lab:
                mine.append(port.text)
                continue
            who = (f"lab '{other}' (container {holder.name})" if other
                   else f"kind cluster '{cluster}' (container {holder.name})" if cluster
                   else f"container {holder.name}")
            taken.append(f"{port.text} ({port.what}) is published by {who}")
            continue
        busy = (snapshot.busy_ports or {}).get((port.address, port.port, port.protocol))
        if busy:
            taken.append(f"{port.text} ({port.what}) is in use by {busy}")
    if taken:
        return [Finding("ports", "fail", "; ".join(taken),
                        "free them (gpulab down --name <lab> for another lab), or give the "
                        "profile other ports")]
    free = [p.text for p in wanted if p.text not in mine]
    parts = [f"{', '.join(free)} free" if free else "",
             f"{', '.join(mine)} published by this lab already" if mine else ""]
    detail = "; ".join(part for part in parts if part)
    if snapshot.busy_ports is None:
        detail += (" (the engine is not on this host: only its containers were checked, not "
                   "other processes)")
    return [Finding("ports", "ok", detail)]


def _major(version: str) -> int:
    match = re.match(r"v?(\d+)", version)
    return int(match.group(1)) if match else 0


def _inotify(snapshot: HostSnapshot) -> list[Finding]:
    out = []
    for name, value, want in (
        ("inotify watches", snapshot.inotify_watches, INOTIFY_WATCHES),
        ("inotify instances", snapshot.inotify_instances, INOTIFY_INSTANCES),
    ):
        if value is None:
            continue
        key = "max_user_watches" if "watches" in name else "max_user_instances"
        ok = value >= want
        out.append(Finding(
            name, "ok" if ok else "warn", f"fs.inotify.{key} = {value} (kind recommends {want})",
            "" if ok else f"sudo sysctl fs.inotify.{key}={want}",
        ))
    return out


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def _tool(name: str, found: str | None, wanted: str, *, minimum: bool = False) -> Finding:
    if found is None:
        return Finding(name, "fail", f"{name} not found",
                       f"gpulab doctor --install-tools, or install {name} {wanted}")
    if minimum:  # helm: the pin or newer, of a major whose post-renderer gpulab knows
        ok = _version_tuple(found) >= _version_tuple(wanted) and \
            _version_tuple(found)[:1] in [(m,) for m in HELM_MAJORS]
        return Finding(name, "ok" if ok else "fail", f"{name} {found}",
                       "" if ok else f"install {name} {wanted} or newer, of major version "
                       f"{' or '.join(map(str, HELM_MAJORS))}")
    same = _version_tuple(found) == _version_tuple(wanted)
    return Finding(name, "ok" if same else "warn", f"{name} {found} (profile pins {wanted})",
                   "" if same else f"gpulab doctor --install-tools installs {name} {wanted}")


def _collisions(snapshot: HostSnapshot, profile: LabProfile, lab: str) -> list[Finding]:
    out: list[Finding] = []
    prefix = f"gpulab-{lab}-"
    foreign = [c.name for c in snapshot.containers
               if c.name.startswith(prefix) and c.labels.get(LABEL_LAB) != lab]
    if foreign:
        out.append(Finding("names", "fail",
                           f"containers named like this lab's but not labelled for it: "
                           f"{', '.join(sorted(foreign))}",
                           "remove them, or choose another --name"))
    else:
        ours = sum(1 for c in snapshot.containers if c.labels.get(LABEL_LAB) == lab)
        cluster = kind_cluster_name(lab)
        state = "exists (up resumes it)" if cluster in snapshot.kind_clusters or ours else "free"
        out.append(Finding("names", "ok", f"lab '{lab}' {state}"))
    network = next((n for n in snapshot.networks if n.name == profile.management.network), None)
    subnets = ipv4_subnets(network.ipam_config) if network else []
    clashes = []
    for label, cidr in profile.docker_cidrs():
        net = ipaddress.ip_network(cidr)
        for subnet in subnets:
            if net.overlaps(subnet):
                clashes.append(f"{label} {cidr} overlaps Docker network "
                               f"'{profile.management.network}' {subnet}")
    for label, cidr in profile.docker_cidrs():
        net = ipaddress.ip_network(cidr)
        for route in snapshot.host_routes:
            if net.overlaps(ipaddress.ip_network(route)):
                clashes.append(f"{label} {cidr} overlaps the host's route to {route}")
    if clashes:
        out.append(Finding("subnets", "fail", "; ".join(clashes),
                           "change the tenant CIDRs in the profile"))
    elif network is not None:
        out.append(Finding("subnets", "ok",
                           f"network '{network.name}' {', '.join(map(str, subnets)) or 'no IPv4'}"))
    else:
        out.append(Finding("subnets", "ok",
                           f"network '{profile.management.network}' will be created by kind"))
    return out


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
    from gpulab.node_options import probe_node

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
            images = _pull_missing(runtime, probe_images, pull)
            engine = info
            probe_image, probe = _probe_privileged(
                runtime, probe_images, lambda image: probe_node(image, engine, env))
        except GpulabError as err:
            docker_error = str(err)
            info = None
    local = endpoint is None or endpoint.unix_socket is not None
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
    )


def observe_workers(runtime: ContainerRuntime | None, docker_error: str = "",
                    images: tuple[str, ...] = (), *,
                    pull: Callable[[str], None] | None = None,
                    endpoint: DockerEndpoint | None = None,
                    environ: Mapping[str, str] | None = None) -> HostSnapshot:
    """What `diagnose_workers` reads (the only I/O): the engine, the workers' `images` (each
    missing one pulled with `pull`; None: not pulled) and the privileged probe with the options
    a kind node gets on this engine (gpulab.node_options.probe_node). No kind, ports or disk."""
    from gpulab.node_options import probe_node

    info = None
    states: tuple[ImageState, ...] = ()
    probe: str | None = None
    probe_image = ""
    env = os.environ if environ is None else environ
    if runtime is not None:
        try:
            info = runtime.info()
            states = _pull_missing(runtime, images, pull)
            engine = info
            probe_image, probe = _probe_privileged(
                runtime, images, lambda image: probe_node(image, engine, env))
        except GpulabError as err:
            docker_error = str(err)
            info = None
    return HostSnapshot(docker=info, docker_error=docker_error, node_images=states,
                        privileged_probe=probe, probe_image=probe_image,
                        docker_endpoint=endpoint.describe() if endpoint is not None else "")


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


# --------------------------------------------------------------------------- existing cluster

OWN_CLUSTER_DOCS = "docs/own-cluster.md"
# Each line of an existing cluster's preflight (the stack's existing_problems, word for word as
# `up` refuses with it) under the check it is about, with what to do; the first match wins.
_CLUSTER_CHECKS: tuple[tuple[str, str, str], ...] = (
    (r"Kubernetes ", "version",
     f"use a cluster at a Kubernetes version the profile's pins support ({OWN_CLUSTER_DOCS}, "
     "'Before anything is created')"),
    (r"no default StorageClass", "storage class",
     "mark one default: kubectl annotate storageclass NAME "
     "storageclass.kubernetes.io/is-default-class=true"),
    (r"no node advertises", "gpus",
     "install the NVIDIA GPU Operator or device plugin, or name nodes for fake GPUs "
     "(cluster.fake_gpu_nodes, --fake-gpu-node)"),
    (r"namespace \S+ enforces Pod Security", "pod security",
     "as the line says (kubectl label namespace ... --overwrite), or gpulab down and up again"),
    (r"(namespace|queue|TenantControlPlane) \S+ already exists", "names",
     "gpulab never adopts what it did not create: remove it, or choose other names in a copy "
     "of the profile"),
    (r".*(fake_gpu_nodes|fake-gpu-operator)", "fake gpus",
     f"as the line says ({OWN_CLUSTER_DOCS}, 'Fake GPUs on nodes you name')"),
    (r"KAI Scheduler", "kai scheduler",
     f"as the line says; gpulab never upgrades, reconfigures or removes it ({OWN_CLUSTER_DOCS})"),
    (r"cert-manager", "cert-manager",
     f"as the line says; gpulab never changes a cert-manager it found ({OWN_CLUSTER_DOCS})"),
    (r"Kamaji", "kamaji",
     f"as the line says; gpulab never upgrades or removes a Kamaji it found "
     f"({OWN_CLUSTER_DOCS})"),
    (r"no LoadBalancer|cluster\.metallb|cluster\.expose", "load balancer",
     f"as the line says ({OWN_CLUSTER_DOCS}, kamaji-hami's 'Before anything is created')"),
    (r"no node address", "node address",
     "set cluster.node_address to an address of a node this machine reaches"),
)
DENIED_PREFIX = "not allowed to "


def cluster_findings(version: str, denied: Sequence[str], asked: int,
                     storage_class: str | None, problems: Sequence[str], context: str
                     ) -> list[Finding]:
    """An existing cluster's read-only preflight as doctor lines: its Kubernetes `version`,
    the access reviews (`asked`, those `denied` each named), the default StorageClass, and each
    of `problems` (why `up` would refuse, as it says it) under its check with the fix."""
    out: list[Finding] = []
    by_check: dict[str, list[Finding]] = {}
    for problem in problems:
        if problem.startswith(DENIED_PREFIX):
            continue  # the access line below names every denied review, not the first
        check, fix = next(((c, f) for pattern, c, f in _CLUSTER_CHECKS
                           if re.match(pattern, problem)),
                          ("cluster", f"see {OWN_CLUSTER_DOCS} ('Before anything is created')"))
        by_check.setdefault(check, []).append(Finding(check, "fail", problem, fix))
    out.extend(by_check.pop("version", [])
               or [Finding("version", "ok", f"Kubernetes {version}: the profile's pins support "
                                            "it")])
    if denied:
        out.append(Finding(
            "access", "fail",
            f"{len(denied)} of {asked} access reviews denied: not allowed to "
            f"{'; '.join(denied)}",
            f"grant them to the user of context {context} ({OWN_CLUSTER_DOCS}, 'RBAC to grant'; "
            "a cluster-admin binding is what works in practice), or use a context that has "
            "them"))
    else:
        out.append(Finding("access", "ok", f"all {asked} access reviews allowed (what up "
                                           "creates and removes)"))
    classes = by_check.pop("storage class", [])
    if classes:
        out.extend(classes)
    elif storage_class is not None:
        out.append(Finding("storage class", "ok", f"default StorageClass {storage_class}"))
    for findings in by_check.values():
        out.extend(findings)
    if not any(f.status == "fail" for f in out):
        out.append(Finding("cluster", "ok", "nothing up would refuse here (gpulab plan lists "
                                            "what it would create)"))
    return out
