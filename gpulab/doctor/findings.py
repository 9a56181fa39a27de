"""The host's findings (`diagnose`, `diagnose_workers`), pure over a HostSnapshot, each with
its fix.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from gpulab.docker_engines import Engine, classify, route_text
from gpulab.doctor.facts import (
    GIB,
    INOTIFY_INSTANCES,
    INOTIFY_WATCHES,
    MIN_DOCKER_MAJOR,
    NODE_IMAGE_SIZE,
    Finding,
    HostSnapshot,
)
from gpulab.doctor.observe import _state_problem, helm_version
from gpulab.doctor.platforms import platform_findings
from gpulab.naming import LABEL_LAB, kind_cluster_name
from gpulab.netcalc import ipv4_subnets
from gpulab.paths import labs_root
from gpulab.tools import HELM_MAJORS, HELM_VERSION

if TYPE_CHECKING:
    from gpulab.adapters.base import ContainerInfo, PublishedPort, RuntimeInfo
    from gpulab.profile.base import HostPort, HostWorkers, LabProfile


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
    out.append(engine_finding(snapshot, info))
    out.extend(_privileged(snapshot, info))
    out.extend(_node_images(snapshot))
    out.extend(platform_findings(info, profile))
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
            engine_finding(snapshot, info),
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


def engine_of(snapshot: HostSnapshot, info: RuntimeInfo) -> Engine:
    """The engine the snapshot's Docker answers describe (gpulab.docker_engines)."""
    return classify(info, local=snapshot.docker_local, host_os=snapshot.host_os)


ENGINE_FACTS = "docker info --format '{{.OperatingSystem}} / {{.Name}}' and docker version"


def engine_finding(snapshot: HostSnapshot, info: RuntimeInfo) -> Finding:
    """Which engine this is and how this host reaches the lab's APIs on it; a fail for an
    engine gpulab does not support (Podman); unknown for one it does not recognise."""
    engine = engine_of(snapshot, info)
    if not engine.supported:
        return Finding("engine", "fail", engine.refusal, engine.fix)
    detail = f"{engine.label} ({engine.seen}); the lab's APIs: {route_text(engine)}"
    if engine.kind == "unknown":
        return Finding("engine", "unknown", detail,
                       f"{ENGINE_FACTS} show what gpulab read; it uses published ports as on "
                       "Docker Desktop")
    return Finding("engine", "ok", detail)


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


ROOTLESS_DOCS = "https://kind.sigs.k8s.io/docs/user/rootless/"
KIND_NODES = "kind's nodes"
# kamaji-hami's `cluster.workers: containers` on an existing cluster: kindest/node containers
# started with a kind node's options (node_options), no kind cluster
WORKER_NODES = "the lab's worker containers (kindest/node, with kind's node options)"


def privileged_advice(nodes: str = KIND_NODES, engine: Engine | None = None) -> str:
    """What makes `engine` (None: not known) run `nodes` (privileged containers)."""
    kind = engine.kind if engine is not None else "unknown"
    if kind == "linux":
        return (f"{nodes} need --privileged, which this rootful Docker refused: remove the "
                "authorization plugin or daemon setting that denies it (dockerd's "
                "authorization-plugins, a security profile), then gpulab doctor")
    if kind == "rootless":
        return (f"{nodes} need --privileged: rootless Docker runs them with cgroup v2 and "
                f"systemd Delegate=yes ({ROOTLESS_DOCS}); no authorization plugin may deny them")
    if kind in ("docker-desktop", "colima", "orbstack") and engine is not None:
        return (f"{nodes} need --privileged, which {engine.label}'s engine refused: remove the "
                f"setting or authorization plugin of {engine.label} that denies privileged "
                f"containers, restart {engine.label}, then gpulab doctor")
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
                        f"{snapshot.privileged_probe}",
                        privileged_advice(nodes, engine_of(snapshot, info)))]
    mode = "rootless" if info.rootless else "rootful"
    if snapshot.privileged_probe == "":
        return [Finding("privileged", "ok", f"{mode} Docker runs --privileged containers "
                                            f"(probed with {snapshot.probe_image})")]
    if info.authorization_plugins:
        return [Finding("privileged", "warn",
                        f"authorization plugin(s) {', '.join(info.authorization_plugins)} may "
                        "refuse --privileged (not probed: no image on this host to probe with)",
                        privileged_advice(nodes, engine_of(snapshot, info)))]
    return [Finding("privileged", "unknown",
                    f"{mode} Docker: not probed, no image on this host to probe a "
                    "--privileged container with",
                    "gpulab doctor without --no-pull pulls the node image and probes with it")]


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
