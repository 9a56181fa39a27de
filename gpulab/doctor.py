"""`gpulab doctor` and `up`'s preflight: pure findings over observed host facts.

Observation (`observe_host`) is the only I/O; `diagnose` turns facts into ok/warn/fail findings,
each with the fix, so it is tested without a host.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_LAB, kind_cluster_name
from gpulab.netcalc import ipv4_subnets
from gpulab.paths import labs_root
from gpulab.tools import HELM_VERSION

if TYPE_CHECKING:
    from gpulab.adapters.base import ContainerInfo, ContainerRuntime, NetworkInfo, RuntimeInfo
    from gpulab.profile.base import LabProfile

__all__ = ["Finding", "HostSnapshot", "diagnose", "needs", "observe_host"]

GIB = 1024**3
INOTIFY_WATCHES = 524288
INOTIFY_INSTANCES = 512
MIN_DOCKER_MAJOR = 20


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
        out.append(Finding("docker", "fail", snapshot.docker_error or "Docker not reachable",
                           "start the Docker engine (or set DOCKER_HOST), then retry"))
        return out
    major = _major(info.version)
    out.append(Finding(
        "docker", "ok" if major >= MIN_DOCKER_MAJOR else "warn",
        f"Docker {info.version} (API {info.api_version}, {info.os})",
        "" if major >= MIN_DOCKER_MAJOR else f"Docker {MIN_DOCKER_MAJOR}+ is recommended",
    ))
    out.extend(_privileged(snapshot, info))
    memory, disk, cpus = needs(profile)
    have_mem = info.memory_bytes / GIB
    out.append(Finding(
        "memory", "ok" if have_mem >= memory else "fail",
        f"{have_mem:.1f} GiB for Docker; the profile needs about {memory:.1f} GiB",
        "" if have_mem >= memory else "free memory, give Docker more, or remove a tenant",
    ))
    out.append(Finding(
        "cpu", "ok" if info.cpus >= cpus else "fail", f"{info.cpus} CPUs (need {cpus})",
        "" if info.cpus >= cpus else f"give Docker at least {cpus} CPUs",
    ))
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
    out.append(Finding("state", "fail" if snapshot.state_problem else "ok",
                       snapshot.state_problem or f"lab folders go to {snapshot.state_dir}",
                       "set GPULAB_HOME to a writable folder with free space, or free space"
                       if snapshot.state_problem else ""))
    return out


ROOTLESS_DOCS = "https://kind.sigs.k8s.io/docs/user/rootless/"
PRIVILEGED_ADVICE = (
    "kind's nodes need --privileged: use rootful Docker, or rootless Docker with cgroup v2 and "
    f"systemd Delegate=yes ({ROOTLESS_DOCS}); no authorization plugin may deny privileged "
    "containers")


def _privileged(snapshot: HostSnapshot, info: RuntimeInfo) -> list[Finding]:
    """Can this engine run kind's privileged nodes? kind's own rules first (create.go
    validateProvider, v0.33), then the probe's answer when one was made."""
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
                        f"{snapshot.privileged_probe}", PRIVILEGED_ADVICE)]
    mode = "rootless" if info.rootless else "rootful"
    if snapshot.privileged_probe == "":
        return [Finding("privileged", "ok", f"{mode} Docker runs --privileged containers "
                                            f"(probed with {snapshot.probe_image})")]
    if info.authorization_plugins:
        return [Finding("privileged", "warn",
                        f"authorization plugin(s) {', '.join(info.authorization_plugins)} may "
                        "refuse --privileged (not probed: no image on this host yet)",
                        PRIVILEGED_ADVICE)]
    return [Finding("privileged", "ok",
                    f"{mode} Docker (not probed: no image on this host yet)")]


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
    if minimum:
        ok = _version_tuple(found) >= _version_tuple(wanted)
        return Finding(name, "ok" if ok else "fail", f"{name} {found}",
                       "" if ok else f"install {name} {wanted} or newer")
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


def _probe_privileged(runtime: ContainerRuntime, wanted: tuple[str, ...]
                      ) -> tuple[str, str | None]:
    """(image, answer) of the privileged probe: the profile's kindest/node image when it is on
    the host, else a few images already there; ("", None) when none gives an answer."""
    candidates = [i for i in wanted if runtime.image_present(i)]
    candidates += [i for i in runtime.local_images(10) if i not in candidates]
    for image in candidates[:5]:
        answer = runtime.probe_privileged(image)
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


def observe_host(runtime: ContainerRuntime | None, docker_error: str = "",
                 kind_binary: str | None = None, helm_binary: str | None = None,
                 kind_clusters: tuple[str, ...] = (),
                 probe_images: tuple[str, ...] = ()) -> HostSnapshot:
    """Gather the snapshot (the only I/O in doctor). The privileged probe uses the first of
    `probe_images` (the profile's kindest/node images) already on the host; none is pulled."""
    info = None
    containers: tuple[ContainerInfo, ...] = ()
    networks: tuple[NetworkInfo, ...] = ()
    probe: str | None = None
    probe_image = ""
    if runtime is not None:
        try:
            info = runtime.info()
            containers = tuple(runtime.containers({}))
            networks = tuple(runtime.networks())
            probe_image, probe = _probe_privileged(runtime, probe_images)
        except GpulabError as err:
            docker_error = str(err)
            info = None
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
        helm_version=_tool_version(helm_binary or shutil.which("helm"),
                                   ["version", "--template", "{{.Version}}"], r"(v[\d.]+)"),
        kind_clusters=kind_clusters,
        containers=containers,
        networks=networks,
        privileged_probe=probe,
        probe_image=probe_image,
        git_found=shutil.which("git") is not None,
        host_routes=_host_routes(),
        state_dir=str(labs_root()),
        state_problem=_state_problem(labs_root()),
    )
