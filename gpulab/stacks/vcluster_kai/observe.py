"""The only I/O of the vcluster-kai `verify`: the host cluster and each team's vCluster API.

A live run observes the lab in phases (teams concurrently within a phase):

0. host: the GPU pool's nodes;
1. per team: its vCluster's control-plane pods (host), the vCluster API (`/version`, nodes), then
   namespace `gpulab-verify` inside the vCluster, its `default` ServiceAccount (bounded wait: pods
   are refused until it exists) and the `gpu-share` pod, followed to the host
   (vCluster's translated name in `vcluster-<team>`) and waited for until Running;
2. host: the queues, once every team queue shows its share pod's allocation (bounded), and a
   fresh snapshot of every share pod, so KAI-05 sees them at one moment;
3. per team: `gpu-over-limit`, then `gpu-over-capacity` (only when every share pod runs), each
   waited for until KAI says why it stays Pending (or places it);
4. per team: the first team's `queue-foreign` pod (waited for until KAI groups it), the pod
   listing of each vCluster and each team's credentials presented to the other vClusters;
5. unless `keep`: the verify pods and namespace are deleted inside each vCluster (vCluster
   deletes their host copies).

API failures never escape: they are stored in the state, because a verdict is a value. Waits are
bounded and use an injectable clock.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab import naming
from gpulab.errors import GpulabError
from gpulab.stacks.vcluster_kai import objects as ko
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.checks.registry import CHECKS, Check, pods_needed
from gpulab.stacks.vcluster_kai.state import HostState, KaiLabState, ProbeRun, TeamState
from gpulab.verify import objects as o
from gpulab.verify import observe as verify_observe
from gpulab.verify.kai import SHARE_ANNOTATIONS
from gpulab.verify.observe import (
    Clock,
    CrossTenantGateway,
    clean_all,
    clean_object,
    clear_leftovers,
    default_service_account,
    delete_verify_objects,
    guard,
    labelled,
    listing_pod,
    one_line,
    poll,
    probe_credentials,
    stop_on_interrupt,
    stoppable,
)
from gpulab.verify.state import Listing

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gpulab.adapters.base import KubeGateway
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile
    from gpulab.verify.state import JsonObj

__all__ = ["KaiGateways", "Timeouts", "find_host_pod", "observe_lab"]

NS = verify_observe.VERIFY_NAMESPACE
CHECK_LABEL = kr.CHECK_LABEL
VC_NAME_ANNOTATION = kr.VC_NAME_ANNOTATION  # the virtual name, on the host copy


@dataclass(frozen=True)
class KaiGateways:
    """host: the kind cluster (management kubeconfig); team: team → its vCluster API (may raise
    GpulabError); cross: the credential-probe factory for KAI-08 (None: not observed)."""

    host: KubeGateway
    team: Callable[[str], KubeGateway]
    cross: CrossTenantGateway | None = None


@dataclass(frozen=True)
class Timeouts:
    """Every wait's bound, in seconds."""

    running: float = 180.0  # a share pod Running (KAI's binder waits up to 40 s for the
    #                         reservation pod's annotation, then the kubelet starts it)
    refused: float = 90.0  # a probe pod to get KAI's reason (or be placed)
    grouped: float = 60.0  # the queue probe's PodGroup
    allocated: float = 60.0  # the team queues to show the share pods' allocation
    cleanup: float = 60.0  # leftovers of an earlier run to disappear
    service_account: float = 60.0  # the new namespace's `default` ServiceAccount to appear
    interval: float = 2.0


def _no_progress(_team: str, _message: str) -> None:
    return None


def find_host_pod(host: KubeGateway, team: TeamSpec, name: str) -> JsonObj | None:
    """The host copy of the virtual pod `name` in namespace gpulab-verify: by vCluster's
    translated name, else by its `vcluster.loft.sh/name` annotation."""
    pod = host.get("v1", "Pod", kr.host_pod_name(name, NS, team.name), team.namespace)
    if pod is not None:
        return pod
    for candidate in host.list_objects("v1", "Pod", team.namespace,
                                       label_selector=f"{naming.LABEL_TENANT}={team.name}"):
        if o.annots(candidate).get(VC_NAME_ANNOTATION) == name:
            return candidate
    return None


def _events(host: KubeGateway, namespace: str, objs: Sequence[JsonObj | None]
            ) -> tuple[JsonObj, ...]:
    """Host events about these very objects (matched by uid: events outlive their objects)."""
    out: list[JsonObj] = []
    for obj in objs:
        if obj is None:
            continue
        uid = str(o.metadata(obj).get("uid") or "")
        out += clean_all(o.events_about(host.events(namespace, o.name(obj)), {uid}))
    return tuple(out)


@dataclass
class _Follow:
    """What following one verify pod on the host has seen so far."""

    host: JsonObj | None = None
    pod_group: JsonObj | None = None
    events: tuple[JsonObj, ...] = ()
    synced: bool = False


def _look(host: KubeGateway, team: TeamSpec, name: str, seen: _Follow) -> None:
    pod = find_host_pod(host, team, name)
    seen.host = clean_object(pod)
    seen.synced = seen.synced or pod is not None
    group_name = o.annots(pod).get(kr.POD_GROUP_ANNOTATION) if pod else None
    group = host.get(kr.PODGROUP_API, "PodGroup", group_name, team.namespace) if group_name \
        else None
    seen.pod_group = clean_object(group)
    seen.events = _events(host, team.namespace, [pod, group])


def _verdict(awaited: str, seen: _Follow) -> str | None:
    pod = seen.host
    if pod is None:
        return None
    phase = o.pod_phase(pod)
    if awaited == "running":
        if phase == "Running":
            return "running"
        if phase in ("Failed", "Succeeded"):
            return "failed"
        return None
    if awaited == "grouped":
        return "grouped" if seen.pod_group is not None else None
    if o.pod_node(pod) or phase in ("Running", "Succeeded"):
        return "scheduled"
    if phase == "Failed":
        return "failed"
    # KAI's verdict: the PodGroup's scheduling conditions, or its Unschedulable event (written
    # together). A PodScheduled=False condition alone does not end the wait: it may be transient.
    kai_event = any(e.get("reason") == "Unschedulable" and e.get("type") != "Normal"
                    for e in seen.events)
    if ko.queue_reasons(seen.pod_group) or kai_event:
        return "pending"
    return None


def _summary(seen: _Follow) -> str:
    if seen.host is None:
        return "not on the host yet"
    reasons = ko.kai_reasons(seen.host, seen.pod_group, seen.events)
    group = f"PodGroup {o.name(seen.pod_group)}" if seen.pod_group else "no PodGroup"
    why = f"; KAI: {ko.reasons_text(reasons, 1)}" if reasons else ""
    return f"{o.pod_summary(seen.host)}; {group}{why}"


def _follow(
    vc: KubeGateway, host: KubeGateway, team: TeamSpec, lab: str, pod: JsonObj, awaited: str, *,
    run_id: str, timeout: float, timeouts: Timeouts, clock: Clock, say: Callable[[str], None],
) -> ProbeRun:
    """Create `pod` in the vCluster, labelled with this run's id (vCluster copies the labels to
    the host pod), then wait on the host until `awaited` (running | pending | grouped) or the
    bound."""
    name = o.name(pod)
    check = o.labels(pod).get(CHECK_LABEL, "")
    host_name = kr.host_pod_name(name, NS, team.name)
    start = clock.now()
    mine = labelled(pod, lab, team.name)
    mine["metadata"]["labels"][naming.LABEL_RUN] = run_id
    try:
        created = clean_object(vc.apply(mine))
    except GpulabError as err:
        say(f"{name} refused by the vCluster API: {one_line(str(err), 120)}")
        return ProbeRun(name, check, create_error=one_line(str(err)), host_name=host_name,
                        outcome="create-failed", waited=round(clock.now() - start, 3))
    say(f"{name} created, waiting on the host for {awaited}")
    seen = _Follow()

    def probe() -> tuple[str | None, str]:
        _look(host, team, name, seen)
        return _verdict(awaited, seen), _summary(seen)

    outcome, last = poll(probe, timeout, timeouts.interval, clock)
    if outcome == "timeout" and not seen.synced:
        outcome = "not-synced"
    waited = round(clock.now() - start, 3)
    say(f"{name}: {outcome} after {waited:.0f}s")
    return ProbeRun(name, check, created=created, host_name=host_name, host=seen.host,
                    pod_group=seen.pod_group, events=seen.events, outcome=outcome, waited=waited,
                    last_seen=last)


def _snapshot(host: KubeGateway, team: TeamSpec, run: ProbeRun) -> ProbeRun:
    """The run with a fresh look at its host pod, PodGroup and events."""
    if run.created is None:
        return run
    seen = _Follow()
    try:
        _look(host, team, run.name, seen)
    except GpulabError as err:
        return replace(run, last_seen=f"final read failed: {one_line(str(err))}")
    return replace(run, host=seen.host, pod_group=seen.pod_group, events=seen.events)


# --------------------------------------------------------------------------- per team


@dataclass
class _Obs:
    team: TeamSpec
    run_id: str  # the gpulab.dev/run label of this verify's pods
    fields: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    runs: dict[str, ProbeRun] | None = None
    vc: KubeGateway | None = None
    scenario_started: bool = False

    def time(self, check: str, seconds: float) -> None:
        self.timings[check] = round(self.timings.get(check, 0.0) + seconds, 3)

    def freeze(self) -> TeamState:
        runs = None if self.runs is None else tuple(self.runs.values())
        return TeamState(team=self.team.name, pods=runs, timings=dict(self.timings),
                         **self.fields)


def _observe_api(obs: _Obs, host: KubeGateway, gateways: KaiGateways, clock: Clock) -> None:
    team = obs.team
    start = clock.now()
    try:
        pods = host.list_objects("v1", "Pod", team.namespace,
                                 label_selector=f"app=vcluster,release={team.name}")
        obs.fields["control_plane_pods"] = clean_all(pods)
    except GpulabError as err:
        obs.fields["host_error"] = one_line(str(err))
    try:
        vc = gateways.team(team.name)
        obs.fields["api_server"] = str(getattr(vc, "server", "") or "")
        obs.fields["api_version"] = vc.server_version()
    except GpulabError as err:
        obs.fields["api_error"] = one_line(str(err))
        obs.time("KAI-01", clock.now() - start)
        return
    obs.vc = vc
    obs.time("KAI-01", clock.now() - start)
    start = clock.now()
    try:
        obs.fields["nodes"] = clean_all(vc.list_objects("v1", "Node"))
    except GpulabError as err:
        obs.fields["nodes_error"] = one_line(str(err))
    obs.time("KAI-02", clock.now() - start)


def _pods_of(profile: VclusterKaiProfile, team: TeamSpec) -> dict[str, JsonObj]:
    return {o.name(p): p for p in kr.verify_objects(profile, team)[1:]}


def _share(obs: _Obs, host: KubeGateway, profile: VclusterKaiProfile, lab: str,
           wanted: frozenset[str], *, timeouts: Timeouts, clock: Clock,
           say: Callable[[str], None]) -> None:
    vc = obs.vc
    if vc is None:
        return
    obs.runs = {}
    if not wanted & set(_pods_of(profile, obs.team)):
        return
    start = clock.now()
    obs.scenario_started = True
    try:
        problem = clear_leftovers(vc, timeouts.cleanup, timeouts.interval, clock)
        if not problem:
            vc.apply(labelled(kr.verify_objects(profile, obs.team)[0], lab, obs.team.name))
            # The pods name no ServiceAccount: until the namespace's `default` exists, the
            # vCluster's API server refuses them with 403 (verify_observe.default_service_account).
            waited = default_service_account(vc, NS, timeouts.service_account,
                                              timeouts.interval, clock)
            if waited:
                problem = f"could not prepare namespace {NS}: {waited}"
    except GpulabError as err:
        problem = f"could not prepare namespace {NS}: {one_line(str(err))}"
    if problem:
        obs.fields["scenario_error"] = problem
        obs.runs = None
        return
    if "gpu-share" in wanted:
        run = _follow(vc, host, obs.team, lab, _pods_of(profile, obs.team)["gpu-share"],
                      "running", run_id=obs.run_id, timeout=timeouts.running,
                      timeouts=timeouts, clock=clock, say=say)
        obs.runs["gpu-share"] = run
    obs.time("KAI-04", clock.now() - start)
    obs.time("KAI-05", clock.now() - start)


def _refresh_share(obs: _Obs, host: KubeGateway) -> None:
    """A fresh look at the share pod, taken when every team's share pod has been waited for."""
    if obs.runs is not None and "gpu-share" in obs.runs:
        obs.runs["gpu-share"] = _snapshot(host, obs.team, obs.runs["gpu-share"])


def _probes(obs: _Obs, host: KubeGateway, profile: VclusterKaiProfile, lab: str,
            wanted: frozenset[str], all_shares_run: str, *, timeouts: Timeouts, clock: Clock,
            say: Callable[[str], None]) -> None:
    """gpu-over-limit, then gpu-over-capacity (`all_shares_run`: '' when it may be created)."""
    vc, runs = obs.vc, obs.runs
    if vc is None or runs is None:
        return
    pods = _pods_of(profile, obs.team)
    for name, check in (("gpu-over-limit", "KAI-06"), ("gpu-over-capacity", "KAI-07")):
        if name not in wanted or name not in pods:
            continue
        if name == "gpu-over-capacity" and all_shares_run:
            runs[name] = ProbeRun(name, check, outcome="not-created", last_seen=all_shares_run,
                                  host_name=kr.host_pod_name(name, NS, obs.team.name))
            say(f"{name} {all_shares_run}")
            continue
        run = _follow(vc, host, obs.team, lab, pods[name], "pending", run_id=obs.run_id,
                      timeout=timeouts.refused,
                      timeouts=timeouts, clock=clock, say=say)
        runs[name] = run
        obs.time(check, run.waited)
    for name in ("gpu-over-limit", "gpu-over-capacity"):
        if name in runs:
            runs[name] = _snapshot(host, obs.team, runs[name])


def _isolation(obs: _Obs, host: KubeGateway, profile: VclusterKaiProfile, lab: str,
               gateways: KaiGateways, wanted: frozenset[str], *, timeouts: Timeouts,
               clock: Clock, say: Callable[[str], None]) -> None:
    vc = obs.vc
    if vc is None:
        return
    start = clock.now()
    pods = _pods_of(profile, obs.team)
    if obs.runs is not None and "queue-foreign" in wanted and "queue-foreign" in pods:
        obs.runs["queue-foreign"] = _follow(vc, host, obs.team, lab, pods["queue-foreign"],
                                            "grouped", run_id=obs.run_id,
                                            timeout=timeouts.grouped,
                                            timeouts=timeouts, clock=clock, say=say)
    try:
        listing = Listing(pods=tuple(listing_pod(p) for p in vc.list_objects("v1", "Pod")))
    except GpulabError as err:
        listing = Listing(error=one_line(str(err)))
    obs.fields["listing"] = listing
    others = [t.name for t in profile.teams if t.name != obs.team.name]
    if gateways.cross is not None:
        cross = gateways.cross
        obs.fields["credential_probes"] = tuple(
            probe_credentials(cross, obs.team.name, other) for other in others)
    elif not others:
        obs.fields["credential_probes"] = ()
    obs.time("KAI-08", clock.now() - start)


def _cleanup(obs: _Obs) -> None:
    vc = obs.vc
    if vc is None or not obs.scenario_started:
        return
    errors = delete_verify_objects(
        vc, [r.name for r in (obs.runs or {}).values() if r.created is not None])
    if errors:
        obs.fields["cleanup_error"] = (
            f"could not delete everything in {NS} of {obs.team.name}'s vCluster (delete the "
            f"namespace by hand): " + "; ".join(errors))


# --------------------------------------------------------------------------- the host


def _gpu_nodes(host: KubeGateway, profile: VclusterKaiProfile, gpus: str = "pool"
               ) -> dict[str, Any]:
    """The pool's nodes; where the lab's GPUs are those found (`gpus` found), every node
    advertising GPUs."""
    if gpus == "found":
        try:
            nodes = host.list_objects("v1", "Node")
        except GpulabError as err:
            return {"nodes_error": one_line(str(err))}
        return {"gpu_nodes": clean_all(n for n in nodes if kr.node_gpus(n) > 0)}
    try:
        nodes = host.list_objects("v1", "Node",
                                  label_selector=f"{kr.POOL_LABEL}={profile.gpu_pool.name}")
    except GpulabError as err:
        return {"nodes_error": one_line(str(err))}
    return {"gpu_nodes": clean_all(n for n in nodes
                                    if o.labels(n).get(kr.POOL_LABEL) == profile.gpu_pool.name)}


GPU_PODS = frozenset({"gpu-share", "gpu-over-limit", "gpu-over-capacity"})


def _gpu_user(pod: Mapping[str, Any]) -> JsonObj:
    """What the checks need of a GPU-using pod that is not verify's: identity, queue, what it
    asks for, where it runs, its phase."""
    meta = o.metadata(pod)
    annotations = {k: v for k, v in o.annots(pod).items() if k in SHARE_ANNOTATIONS}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
                     "uid": meta.get("uid", ""), "labels": dict(o.labels(pod)),
                     "annotations": annotations},
        "spec": {"nodeName": o.pod_node(pod),
                 "containers": [{"name": c.get("name", ""), "resources": c.get("resources") or {}}
                                for c in (pod.get("spec") or {}).get("containers") or []]},
        "status": {"phase": o.pod_phase(pod)},
    }


def _gpu_users(host: KubeGateway, profile: VclusterKaiProfile) -> dict[str, Any]:
    """Pods on the host, not verify's, that hold or ask for GPUs (KAI's reservation pods aside:
    they stand for fraction pods, which are listed themselves)."""
    reservation = profile.components.kai_scheduler.reservation_namespace
    try:
        pods = host.list_objects("v1", "Pod")
    except GpulabError as err:
        return {"gpu_users_error": one_line(str(err))}
    users = [_gpu_user(p) for p in pods
             if o.metadata(p).get("namespace") != reservation
             and CHECK_LABEL not in o.labels(p)
             and o.pod_phase(p) not in ("Succeeded", "Failed")
             and ko.gpu_request(p)]
    return {"gpu_users": tuple(users)}


def _queues(host: KubeGateway, profile: VclusterKaiProfile, shares: Mapping[str, ProbeRun],
            *, timeouts: Timeouts, clock: Clock) -> dict[str, Any]:
    """Every Queue, read when each running share pod's queue shows it allocated (bounded)."""
    want = {profile.team(team).queue_name: kr.probe_sizes(profile, profile.team(team)).share
            for team, run in shares.items() if run.outcome == "running"}
    latest: list[JsonObj] = []

    def shown() -> tuple[str | None, str]:
        latest[:] = clean_all(host.list_objects(kr.QUEUE_API, "Queue"))
        missing = [f"{name} {ko.allocated(ko.find_queue(latest, name), kr.GPU_RESOURCE)}"
                   for name, share in want.items()
                   if ko.allocated(ko.find_queue(latest, name), kr.GPU_RESOURCE) != ko.quantity(
                       f"{share:g}")]
        return ("shown" if not missing else None), (
            "allocation shown" if not missing else f"not yet: {', '.join(missing)}")

    start = clock.now()
    if want and len(want) == len(shares):
        outcome, last = poll(shown, timeouts.allocated, timeouts.interval, clock)
        waited = clock.now() - start
        note = (f"read {waited:.0f}s after every share pod ran" if outcome == "shown" else
                f"the allocation did not show within {timeouts.allocated:.0f}s; last seen: "
                f"{last}")
        if outcome == "timeout" and not latest:
            return {"queues_error": last}
        return {"queues": tuple(latest), "queue_wait": note}
    try:
        queues = clean_all(host.list_objects(kr.QUEUE_API, "Queue"))
    except GpulabError as err:
        return {"queues_error": one_line(str(err))}
    note = "read once: not every share pod ran" if shares else ""
    return {"queues": queues, "queue_wait": note}


def _observe_host(host: KubeGateway, profile: VclusterKaiProfile, wanted: frozenset[str],
                  say_to: Callable[[str, str], None], gpus: str = "pool") -> dict[str, Any]:
    """Phase 0: the pool's nodes and, when GPU pods are wanted, who already uses the GPU; said
    to every team before anything is created (the GPU checks expect an idle GPU)."""
    fields: dict[str, Any] = {"gpus": gpus}
    try:
        fields.update(_gpu_nodes(host, profile, gpus))
        if wanted & GPU_PODS:
            fields.update(_gpu_users(host, profile))
    except Exception as err:  # pragma: no cover - a bug: keep observing the teams
        fields["nodes_error"] = f"{type(err).__name__}: {err}"
    if fields.get("gpu_users"):
        busy = ko.describe_users(fields["gpu_users"])
        for team in profile.teams:
            say_to(team.name, f"the GPU is in use by {busy}: the GPU checks (KAI-04..07) are not "
                              f"run and verify creates no GPU pod")
    return fields


# --------------------------------------------------------------------------- the lab


def _capacity_blocker(observations: Mapping[str, _Obs]) -> str:
    """Why gpu-over-capacity must not be created ('' when every team's share pod runs: only then
    is the GPU as full as the check assumes)."""
    stuck = []
    for name, obs in observations.items():
        run = (obs.runs or {}).get("gpu-share")
        if run is None:
            stuck.append(f"{name} has no gpu-share")
        elif run.outcome != "running":
            stuck.append(f"{name}'s gpu-share did not run ({run.outcome})")
    if not stuck:
        return ""
    return f"because {', '.join(stuck)}: the GPU does not hold every team's share"


def observe_lab(
    profile: VclusterKaiProfile,
    lab: str,
    gateways: KaiGateways,
    *,
    checks: Sequence[Check] = CHECKS,
    keep: bool = False,
    timeouts: Timeouts | None = None,
    clock: Clock | None = None,
    progress: Callable[[str, str], None] | None = None,
    max_workers: int | None = None,
    gpus: str = "pool",
) -> KaiLabState:
    """Observe every team of `profile` for `checks` (phases: module docstring). Never raises for
    lab problems; they are in the returned state. `gpus` found (the provider's LabCluster): the
    lab's GPU nodes are every node advertising GPUs, and the pods are sized from them
    (render.sized_for_host)."""
    timeouts = timeouts or Timeouts()
    clock, stop = stoppable(clock)  # stopped on Ctrl-C/SIGTERM: waits end, the cleanup runs
    say_to = progress or _no_progress
    ids = {c.id for c in checks}
    wanted = pods_needed(checks)
    host = gateways.host
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = clock.now()
    run_id = uuid.uuid4().hex[:12]  # the gpulab.dev/run label of this run's pods
    observations = {team.name: _Obs(team, run_id) for team in profile.teams}
    host_fields = _observe_host(host, profile, wanted, say_to, gpus)
    profile = kr.sized_for_host(profile, gpus, host_fields.get("gpu_nodes"))
    if host_fields.get("gpu_users"):
        wanted = wanted - GPU_PODS

    def say(team: str) -> Callable[[str], None]:
        return lambda message: say_to(team, message)

    def phase1(team: TeamSpec) -> None:
        obs = observations[team.name]
        say_to(team.name, "observing")

        def body() -> None:
            _observe_api(obs, host, gateways, clock)
            _share(obs, host, profile, lab, wanted, timeouts=timeouts, clock=clock,
                   say=say(team.name))

        guard(obs.fields, "observing", body)

    def phase3(team: TeamSpec, blocker: str) -> None:
        obs = observations[team.name]
        guard(obs.fields, "probing", lambda: _probes(obs, host, profile, lab, wanted, blocker,
                                               timeouts=timeouts, clock=clock,
                                               say=say(team.name)))

    def phase4(team: TeamSpec) -> None:
        obs = observations[team.name]
        guard(obs.fields, "isolation", lambda: _isolation(obs, host, profile, lab, gateways, wanted,
                                                    timeouts=timeouts, clock=clock,
                                                    say=say(team.name)))

    def phase5(team: TeamSpec) -> None:
        obs = observations[team.name]
        if not keep:
            guard(obs.fields, "cleanup", lambda: _cleanup(obs))

    with ThreadPoolExecutor(max_workers=max_workers or max(1, len(profile.teams)),
                            thread_name_prefix="gpulab-verify") as pool:
        try:
            with stop_on_interrupt(stop):
                list(pool.map(phase1, profile.teams))
                shares = {name: obs.runs["gpu-share"] for name, obs in observations.items()
                          if obs.runs and "gpu-share" in obs.runs}
                try:
                    host_fields.update(_queues(host, profile, shares, timeouts=timeouts,
                                               clock=clock))
                except Exception as err:  # pragma: no cover - a bug: keep observing the teams
                    host_fields["queues_error"] = f"{type(err).__name__}: {err}"
                for obs in observations.values():
                    guard(obs.fields, "snapshot", partial(_refresh_share, obs, host))
                blocker = _capacity_blocker(observations)
                list(pool.map(lambda t: phase3(t, blocker), profile.teams))
                if "KAI-08" in ids:
                    list(pool.map(phase4, profile.teams))
        finally:
            list(pool.map(phase5, profile.teams))
    return KaiLabState(
        lab=lab,
        host=HostState(**host_fields),
        teams={name: obs.freeze() for name, obs in observations.items()},
        checks=tuple(c.id for c in CHECKS if c.id in ids),
        observed_at=started_at,
        seconds=round(clock.now() - wall, 3),
        run_id=run_id,
    )
