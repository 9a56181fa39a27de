"""What each vcluster-kai verdict tells the user, word for word.

test_checks.py and test_corpus.py prove the right checks pass, fail or err; here the reason and
the evidence a user reads are held to the letter, for the healthy lab and for one state per
branch of the checks (a changed word, a lost name or a dropped clause is a different message).
The states are derived from tests/vcluster_kai/builders.py's healthy lab (whose sources are cited
there); KAI's messages follow KAI v0.16.8 where cited.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.errors import UsageError
from gpulab.stacks.vcluster_kai.checks import registry
from gpulab.stacks.vcluster_kai.checks.isolation import queue_finding
from gpulab.stacks.vcluster_kai.checks.scheduling import millis
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from gpulab.stacks.vcluster_kai.state import KaiLabState
from gpulab.verify.state import Listing
from tests.vcluster_kai import builders as b
from tests.vcluster_kai import kai_wire as kw
from tests.vcluster_kai.builders import host_replace, run_replace, team_replace

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.state import ProbeRun
    from gpulab.verify.result import CheckResult

NLP, VISION, REC = "team-nlp", "team-vision", "team-recommender"
NS = b.NS
SHARE_HOST = "gpu-share-x-gpulab-verify-x-team-nlp"
LIMIT_HOST = "gpu-over-limit-x-gpulab-verify-x-team-nlp"
CAPACITY_HOST = "gpu-over-capacity-x-gpulab-verify-x-team-nlp"
SHARE_PG = f"pg-{SHARE_HOST}-host-{SHARE_HOST}"
LIMIT_PG = f"pg-{LIMIT_HOST}-host-{LIMIT_HOST}"
CAPACITY_PG = f"pg-{CAPACITY_HOST}-host-{CAPACITY_HOST}"
GROUP = b.GPU_GROUP
OVER_LIMIT_NLP = b.OVER_LIMIT.format(queue=NLP)
NO_CAPACITY_NLP = b.NOT_FOUND.format(namespace="vcluster-team-nlp", name=CAPACITY_HOST,
                                     message=b.NO_CAPACITY)
PENDING = "Pending, schedulerName kai-scheduler, node -"
# What KAI writes on the pod: "OverLimit: <message>." (builders.over_limit_on_pod).
LIMIT_ON_POD = b.over_limit_on_pod(NLP)
Build = Callable[[KaiLabState, VclusterKaiProfile], tuple[KaiLabState, VclusterKaiProfile]]


def _run(state: KaiLabState, team: str, name: str) -> ProbeRun:
    run = state.teams[team].run(name)
    assert run is not None
    return run


def _host(state: KaiLabState, team: str, name: str) -> dict[str, Any]:
    host = _run(state, team, name).host
    assert host is not None
    return copy.deepcopy(host)


def _group(state: KaiLabState, team: str, name: str) -> dict[str, Any]:
    group = _run(state, team, name).pod_group
    assert group is not None
    return copy.deepcopy(group)


def _edit_host(name: str, edit: Callable[[dict[str, Any]], object], team: str = NLP,
               **changes: Any) -> Build:
    """The host pod of `team`'s `name` edited in place by `edit` (and the run's other fields
    replaced by `changes`)."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        host = _host(state, team, name)
        edit(host)
        return run_replace(state, team, name, host=host, **changes), profile
    return build


def _edit_group(name: str, edit: Callable[[dict[str, Any]], object], team: str = NLP,
                **changes: Any) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        group = _group(state, team, name)
        edit(group)
        return run_replace(state, team, name, pod_group=group, **changes), profile
    return build


def _replace_run(name: str, team: str = NLP, **changes: Any) -> Build:
    return lambda state, profile: (run_replace(state, team, name, **changes), profile)


def _replace_team(team: str = NLP, **changes: Any) -> Build:
    return lambda state, profile: (team_replace(state, team, **changes), profile)


def _replace_host(**changes: Any) -> Build:
    return lambda state, profile: (host_replace(state, **changes), profile)


def _queues(edit: Callable[[dict[str, Any]], object], *names: str) -> Build:
    """The host's queues `names` edited in place by `edit`."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        queues = [copy.deepcopy(q) for q in state.host.queues or ()]
        for queue in queues:
            if queue["metadata"]["name"] in names:
                edit(queue)
        return host_replace(state, queues=tuple(queues)), profile
    return build


def _both(*builds: Build) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        for step in builds:
            state, profile = step(state, profile)
        return state, profile
    return build


def _without_team(team: str) -> Build:
    """A lab observed without `team` (its state is missing from the observation)."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        return replace(state, teams={k: v for k, v in state.teams.items() if k != team}), profile
    return build


def _profile(edit: Callable[[dict[str, Any]], object]) -> Build:
    """The lab as the healthy builder makes it for the profile `edit` makes of the built-in one."""
    def build(_state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        data = profile.model_dump(mode="json")
        edit(data)
        changed = VclusterKaiProfile.model_validate(data)
        return b.healthy_state(changed), changed
    return build


def _one_team(data: dict[str, Any]) -> None:
    data["teams"] = data["teams"][:1]


def _two_gpu_nodes(state: KaiLabState, profile: VclusterKaiProfile
                   ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """A pool of two workers (kind names them -worker, -worker2), both synced into every
    vCluster."""
    second = b.node(f"{b.GPU_NODE}2", gpus="1", labels=dict(b.host_nodes(profile)[1]["metadata"]
                                                           ["labels"]))
    nodes = (*b.host_nodes(profile), second)
    state = host_replace(state, gpu_nodes=(nodes[1], second))
    for team in profile.teams:
        state = team_replace(state, team.name, nodes=nodes)
    return state, profile


def _vcluster_nodes(edit: Callable[[list[dict[str, Any]]], object]) -> Build:
    """team-nlp's vCluster's node list edited in place."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        nodes = [copy.deepcopy(n) for n in state.teams[NLP].nodes or ()]
        edit(nodes)
        return team_replace(state, NLP, nodes=tuple(nodes)), profile
    return build


def _host_nodes(edit: Callable[[list[dict[str, Any]]], object]) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        nodes = [copy.deepcopy(n) for n in state.host.gpu_nodes or ()]
        edit(nodes)
        return host_replace(state, gpu_nodes=tuple(nodes)), profile
    return build


def _named(nodes: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(n for n in nodes if n["metadata"]["name"] == name)


def _gpus(name: str, value: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(nodes: list[dict[str, Any]]) -> None:
        _named(nodes, name)["status"]["allocatable"]["nvidia.com/gpu"] = value
    return edit


def _drop_node(name: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(nodes: list[dict[str, Any]]) -> None:
        nodes.remove(_named(nodes, name))
    return edit


def _unlabel(name: str, label: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(nodes: list[dict[str, Any]]) -> None:
        del _named(nodes, name)["metadata"]["labels"][label]
    return edit


def _relabel(name: str, label: str, value: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(nodes: list[dict[str, Any]]) -> None:
        _named(nodes, name)["metadata"]["labels"][label] = value
    return edit


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set a dotted path of an object (a value None removes the key)."""
    def edit(obj: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        for part in parents:
            obj = obj.setdefault(part, {})
        if value is None:
            obj.pop(key, None)
        else:
            obj[key] = value
    return edit


def _meta(section: str, key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    """Set metadata.<section>[key] of an object (labels, annotations; a value None removes it)."""
    def edit(obj: dict[str, Any]) -> None:
        entries = obj["metadata"].setdefault(section, {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    return edit


def _crash_loop(host: dict[str, Any]) -> None:
    host["status"]["containerStatuses"] = [
        {"name": "app", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]


def _listing(team: str, edit: Callable[[list[dict[str, Any]]], object]) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        listing = state.teams[team].listing
        assert listing is not None
        pods = [copy.deepcopy(p) for p in listing.pods]
        edit(pods)
        return team_replace(state, team, listing=Listing(pods=tuple(pods))), profile
    return build


def _node_refusals(*why: str) -> Build:
    """KAI's refusal of team-nlp's gpu-over-capacity on a cluster of more nodes: the worker without
    a free GPU, each other node refused for a node condition `why` (scheduler_util/
    scheduler_utils.go:12-40), in KAI's fit-error histogram (tests/vcluster_kai/kai_wire.py)."""
    message = kw.fit_errors({kw.NOT_ENOUGH_GPUS: 1, **dict.fromkeys(why, 1)})

    def edit(group: dict[str, Any]) -> None:
        group["status"]["schedulingConditions"][0]["reasons"] = [{
            "reason": "PodSchedulingErrors",
            "message": kw.not_found("vcluster-team-nlp", CAPACITY_HOST, message)}]
    return _edit_group("gpu-over-capacity", edit)


def _verdict(build: Build, check: str, team: str) -> CheckResult:
    from gpulab.stacks import load_profile

    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    state, profile = build(b.healthy_state(profile), profile)
    run = next(c for c in registry.CHECKS if c.id == check).run
    return run(state, profile, team)


def _same(state: KaiLabState, profile: VclusterKaiProfile
          ) -> tuple[KaiLabState, VclusterKaiProfile]:
    return state, profile


# (id, check, team, how the healthy lab is changed, status, reason, evidence)
Row = tuple[str, str, str, Build, str, str, str]
W, W2, CP = b.GPU_NODE, f"{b.GPU_NODE}2", b.CONTROL_PLANE
POOL = "run.ai/simulated-gpu-node-pool"
QUEUE = "kai.scheduler/queue"
API_DOWN: dict[str, Any] = {"api_version": "", "nodes": None, "pods": None, "listing": None,
            "credential_probes": None,
            "api_error": "get server version at https://172.18.0.2:31443: connection refused"}
REFUSED = "get server version at https://172.18.0.2:31443: connection refused"
NOT_SYNCED_IN = ("host nodes are synced in only with sync.fromHost.nodes enabled and selector "
                 "all (gpulab's values)")
QUEUES = ("team-nlp under ml-org (gpu 0.33/1/1, cpu 0/-1/1, memory 0/-1/1); ml-org (gpu 1/-1/1, "
          "cpu 0/-1/1, memory 0/-1/1)")
REAPPLY = "; run gpulab up to re-apply the queues"
SHARE_POD = f"host pod vcluster-team-nlp/{SHARE_HOST}"
SHARE_SEEN = (f"{SHARE_POD}: schedulerName kai-scheduler, kai.scheduler/queue=team-nlp, "
              f"gpu-fraction 0.33")
TOGETHER = (f"gpu-share of team-nlp, team-vision, team-recommender Running together on {W} "
            f"(GPU group {GROUP}), gpu-fraction 0.33 each")
ALLOCATED = "; Queue team-nlp allocated nvidia.com/gpu 330m"
NOT_SHARED = ("'s gpu-share is not Running at the same moment ({state}), so the GPU was not shared "
              "by every team (see {team}'s KAI-05)")
LIMIT = "queue team-nlp's GPU limit 1"
LISTED = "team-nlp's vCluster lists 5 pod(s) in 2 namespace(s)"
HIDDEN = "none of the verify pods of the other teams (3 of team-vision, 3 of team-recommender) visible"
REJECTED_BY = ("{team}'s vCluster rejected team-nlp's credentials (list Namespace at "
               "https://172.18.0.2:{port}: 401 Unauthorized: Unauthorized)")
REJECTED_VISION = REJECTED_BY.format(team=VISION, port=31444)
REJECTED_REC = REJECTED_BY.format(team=REC, port=31445)


def _not_shared(team: str, state: str) -> str:
    return team + NOT_SHARED.format(team=team, state=state)


def _without_run(name: str, team: str = NLP) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        runs = tuple(r for r in state.teams[team].pods or () if r.name != name)
        return team_replace(state, team, pods=runs), profile
    return build


def _crash_loop_without_node(host: dict[str, Any]) -> None:
    _crash_loop(host)
    del host["spec"]["nodeName"]


def _after_cleanup(pods: list[dict[str, Any]]) -> None:
    """The listing once verify deleted its pods: only the system's are left."""
    pods[:] = [p for p in pods if p["metadata"]["namespace"] != NS]


def _crash_two_containers(host: dict[str, Any]) -> None:
    host["spec"]["containers"].append({"name": "sidecar", "image": "registry.k8s.io/pause:3.10"})
    host["status"]["containerStatuses"] = [
        {"name": "app", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        {"name": "sidecar", "ready": False, "restartCount": 0,
         "state": {"terminated": {"reason": "Error"}}}]


def _without_gpu_group(state: KaiLabState, profile: VclusterKaiProfile
                       ) -> tuple[KaiLabState, VclusterKaiProfile]:
    for team in profile.teams:
        state, profile = _edit_host("gpu-share", _meta("labels", "runai-gpu-group", None),
                                    team=team.name)(state, profile)
    return state, profile


def _both_containers_waiting(host: dict[str, Any]) -> None:
    host["spec"]["containers"].append({"name": "sidecar", "image": "registry.k8s.io/pause:3.10"})
    host["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": name, "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
        for name in ("app", "sidecar")]}


def _unscheduled(host: dict[str, Any]) -> None:
    host["status"] = {"phase": "Pending"}
    del host["spec"]["nodeName"]


def _share_over_limit(state: KaiLabState, profile: VclusterKaiProfile
                      ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """team-nlp's share pod refused for its queue's limit, as KAI-06's probe is."""
    limit = b.over_limit_run(profile, profile.teams[0]).pod_group
    assert limit is not None
    reasons = limit["status"]["schedulingConditions"][0]["reasons"]
    host = b.host_pod(profile, profile.teams[0], "gpu-share", running=False,
                      message=LIMIT_ON_POD)
    return run_replace(state, NLP, "gpu-share", host=host,
                       pod_group=b.pod_group(host, NLP, reasons),
                       events=(b.event(host, "Unschedulable", LIMIT_ON_POD),),
                       outcome="timeout"), profile


def _crash_looping_control_plane() -> tuple[dict[str, Any], ...]:
    """Two control-plane pods: one Running whose containers are not serving, one not started."""
    from gpulab.stacks import load_profile

    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    first = b.control_plane_pod(profile.teams[0])
    first["spec"]["containers"].append({"name": "etcd"})
    first["status"]["containerStatuses"] = [
        {"name": "syncer", "ready": False, "restartCount": 4,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        {"name": "etcd", "ready": False, "restartCount": 0, "state": {"running": {}}}]
    second = copy.deepcopy(first)
    second["metadata"].update(name="team-nlp-1", uid="host-team-nlp-1")
    second["status"] = {"phase": "Pending"}
    return first, second


def _share_pending_with_condition_only(state: KaiLabState, profile: VclusterKaiProfile
                                       ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """The share pod Pending with KAI's PodScheduled=False condition, no PodGroup condition and
    no event (read before the event was)."""
    host = b.host_pod(profile, profile.teams[0], "gpu-share", running=False,
                      message=b.NO_CAPACITY)
    return run_replace(state, NLP, "gpu-share", host=host, pod_group=b.pod_group(host, NLP),
                       events=(), outcome="timeout"), profile


def _share_pending_without_uid(state: KaiLabState, profile: VclusterKaiProfile
                               ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """The share pod Pending without a PodGroup, read without its uid; KAI's event names a pod
    uid verify cannot compare."""
    host = b.host_pod(profile, profile.teams[0], "gpu-share", running=False)
    event = b.event(host, "Unschedulable", LIMIT_ON_POD)
    event["involvedObject"]["uid"] = "uid-of-an-earlier-pod"
    del host["metadata"]["uid"]
    return run_replace(state, NLP, "gpu-share", host=host, pod_group=None, events=(event,),
                       outcome="timeout"), profile


# The Warning event KAI's pod-grouper puts on a pod it could not group (KAI v0.16.8
# pkg/podgrouper/pod_controller.go:94-98, constants.go:50), here for a cluster without the
# PodGroup CRD.
PODGROUPER_ERROR = ("the server could not find the requested resource (post "
                    "podgroups.scheduling.run.ai)")


def _ungrouped(host: dict[str, Any]) -> None:
    del host["metadata"]["labels"][QUEUE]
    host["status"] = {"phase": "Pending"}


def _podgroup_event(name: str) -> Build:
    """The Normal `Unschedulable` event KAI puts on a PodGroup it cannot schedule
    (default_status_updater.go:297-298), with the message it writes without a fit error
    (DefaultPodgroupError, common_info/job_errors.go:19-21, default_status_updater.go:420-438)."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        group = _group(state, NLP, name)
        event = b.event(group, "Unschedulable", "Unable to schedule podgroup", "Normal")
        return run_replace(state, NLP, name, events=(event,)), profile
    return build


def _pod_grouper_warning(state: KaiLabState, profile: VclusterKaiProfile
                         ) -> tuple[KaiLabState, VclusterKaiProfile]:
    host = _host(state, NLP, "gpu-over-limit")
    return run_replace(state, NLP, "gpu-over-limit", events=(
        b.event(host, "PodGrouperWarning", PODGROUPER_ERROR),)), profile


# KAI's MaxNodePoolResources refusal of gpu-over-capacity (kai_wire: pre_predicate_failed,
# max_node_resources, the PodGroup's not_found), for a probe of `gpus` on nodes of `largest`.
def _too_big(gpus: float, largest: float) -> str:
    return kw.pre_predicate_failed(NS, CAPACITY_HOST, kw.MAX_NODE_POOL_RESOURCES,
                                   kw.max_node_resources(NS, CAPACITY_HOST, gpus, largest))


def _refused_too_big(gpus: float, largest: float) -> Build:
    return _edit_group("gpu-over-capacity", lambda g: g["status"]["schedulingConditions"][
        0].update(reasons=[{"reason": "PodSchedulingErrors", "message": kw.not_found(
            NS, CAPACITY_HOST, _too_big(gpus, largest))}]))


# Two GPU nodes of one GPU each, no team limit: the probe asks two whole GPUs.
TWO_NODES = _profile(lambda d: [d["gpu_pool"].update(nodes=2), *(
    t["queue"]["resources"]["gpu"].update(limit=-1) for t in d["teams"])])
TOO_BIG_ON_PG = ("PodSchedulingErrors: Resources were not found for pod "
                 f"{NS}/{CAPACITY_HOST} due to: Scheduling conditions were not met for pod "
                 f"{NS}/{CAPACITY_HOST}: MaxNodePoolResources: The pod {NS}/{CAPACITY_HOST} "
                 "requires GPU: 2, CPU: 0 (cores), memory: 0 (GB), pods: 1. Max GPU resources "
                 "available in a single node in the default node-pool is topped at 1.")


def _placed_on_the_worker(host: dict[str, Any]) -> None:
    host["spec"]["nodeName"] = W
    host["status"] = {"phase": "Running"}


def _over_limit_of(queue: str) -> Callable[[dict[str, Any]], None]:
    def edit(group: dict[str, Any]) -> None:
        group["status"]["schedulingConditions"][0]["reasons"][0]["message"] = (
            b.OVER_LIMIT.format(queue=queue))
    return edit


def _worded_over_limit_of(queue: str) -> Build:
    """KAI's OverLimit for `queue` only on the pod (its condition and event, no code there); the
    PodGroup carries no condition."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        host = _host(state, NLP, "gpu-over-limit")
        message = b.over_limit_on_pod(queue)
        host["status"]["conditions"][0]["message"] = message
        group = _group(state, NLP, "gpu-over-limit")
        group["status"] = {"phase": "Pending"}
        return run_replace(state, NLP, "gpu-over-limit", host=host, pod_group=group,
                           events=(b.event(host, "Unschedulable", message),)), profile
    return build


def _worded_code_only(state: KaiLabState, profile: VclusterKaiProfile
                      ) -> tuple[KaiLabState, VclusterKaiProfile]:
    host = _host(state, NLP, "gpu-over-limit")
    host["status"]["conditions"][0]["message"] = "OverLimit"
    group = _group(state, NLP, "gpu-over-limit")
    group["status"] = {"phase": "Pending"}
    return run_replace(state, NLP, "gpu-over-limit", host=host, pod_group=group,
                       events=(b.event(host, "Unschedulable", "OverLimit"),)), profile


def _refused_for_capacity(state: KaiLabState, profile: VclusterKaiProfile
                          ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """gpu-over-limit refused for the GPU's capacity, not its queue's limit."""
    host = b.host_pod(profile, profile.teams[0], "gpu-over-limit", running=False,
                      message=b.NO_CAPACITY)
    group = b.pod_group(host, NLP, [{"reason": "PodSchedulingErrors", "message": b.NO_CAPACITY}])
    return run_replace(state, NLP, "gpu-over-limit", host=host, pod_group=group,
                       events=(b.event(host, "Unschedulable", b.NO_CAPACITY),)), profile


def _silent(name: str) -> Build:
    """`name` Pending after 90s with a PodGroup but no word from KAI (no condition, no event)."""
    return _both(_edit_host(name, _set("status", {"phase": "Pending"}), events=(),
                            outcome="timeout", waited=90, last_seen=""),
                 _edit_group(name, _set("status", {"phase": "Pending"})))


def _leaked(edit: Callable[[dict[str, Any]], object]) -> Build:
    """team-vision's gpu-over-capacity (as team-vision lists it) in team-nlp's listing too."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        listing = state.teams[VISION].listing
        assert listing is not None
        pod = copy.deepcopy(listing.pods[-1])
        edit(pod)
        return _listing(NLP, lambda pods: pods.append(pod))(state, profile)
    return build


def _without_uids(state: KaiLabState, profile: VclusterKaiProfile
                  ) -> tuple[KaiLabState, VclusterKaiProfile]:
    """A pod team-nlp lists without a uid, and team-vision's gpu-share created without one: an
    empty uid identifies nothing."""
    notebook = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "notebook", "namespace": "default"},
                "spec": {}, "status": {"phase": "Running"}}
    state, profile = _listing(NLP, lambda pods: pods.append(notebook))(state, profile)
    created = copy.deepcopy(_run(state, VISION, "gpu-share").created)
    assert created is not None
    del created["metadata"]["uid"]
    return run_replace(state, VISION, "gpu-share", created=created), profile


def _own_created_without_uid(state: KaiLabState, profile: VclusterKaiProfile
                             ) -> tuple[KaiLabState, VclusterKaiProfile]:
    created = copy.deepcopy(_run(state, NLP, "gpu-share").created)
    assert created is not None
    del created["metadata"]["uid"]
    return run_replace(state, NLP, "gpu-share", created=created), profile


def _probe(outcome: str, detail: str) -> Build:
    """team-nlp's credentials at team-vision's vCluster: `outcome` (`detail`)."""
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        probes = tuple(replace(p, outcome=outcome, detail=detail)  # type: ignore[arg-type]
                       if p.server_of == VISION else p
                       for p in state.teams[NLP].credential_probes or ())
        return team_replace(state, NLP, credential_probes=probes), profile
    return build


def _other_owners(group: dict[str, Any]) -> None:
    group["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": SHARE_HOST, "uid": "earlier-1"},
        {"apiVersion": "v1", "kind": "Pod", "name": SHARE_HOST, "uid": "earlier-2"}]


ROWS: list[Row] = [
    # KAI-01
    ("KAI-01 healthy", "KAI-01", NLP, _same, "pass", "",
     "https://172.18.0.2:31443 answered /version v1.36.0; control plane on the host: "
     "team-nlp-0 Running"),
    ("KAI-01 without the saved server", "KAI-01", NLP, _replace_team(api_server=""), "pass", "",
     "port 31443 answered /version v1.36.0; control plane on the host: team-nlp-0 Running"),
    ("KAI-01 down, control plane running", "KAI-01", NLP, _replace_team(**API_DOWN), "fail",
     f"the vCluster API of team-nlp at https://172.18.0.2:31443 did not answer: {REFUSED}; its "
     "control plane runs on the host, so the host cannot reach the NodePort on the kind node "
     "(docs/vcluster-kai.md, 'Reaching a vCluster from the host')",
     "control plane on the host: team-nlp-0 Running"),
    ("KAI-01 down, control plane unreadable", "KAI-01", NLP,
     _replace_team(**{**API_DOWN, "api_server": ""}, control_plane_pods=None,
                   host_error="403 Forbidden"), "fail",
     f"the vCluster API of team-nlp at port 31443 did not answer: {REFUSED}; whether its control "
     "plane runs on the host is unknown (its pods: not readable (403 Forbidden)); kubectl -n "
     "vcluster-team-nlp get pods on the host",
     "control plane on the host: not readable (403 Forbidden)"),
    ("KAI-01 down, control plane not observed", "KAI-01", NLP,
     _replace_team(**API_DOWN, control_plane_pods=None), "fail",
     f"the vCluster API of team-nlp at https://172.18.0.2:31443 did not answer: {REFUSED}; "
     "whether its control plane runs on the host is unknown (its pods: not observed); kubectl -n "
     "vcluster-team-nlp get pods on the host",
     "control plane on the host: not observed"),
    ("KAI-01 down, no control plane", "KAI-01", NLP,
     _replace_team(**API_DOWN, control_plane_pods=()), "fail",
     f"the vCluster API of team-nlp at https://172.18.0.2:31443 did not answer: {REFUSED}; its "
     "control plane is not running (Helm release team-nlp in vcluster-team-nlp; gpulab up "
     "installs it)",
     "control plane on the host: no pod (is the Helm release installed? gpulab up installs it)"),
    ("KAI-01 down, control plane crash-looping", "KAI-01", NLP,
     _replace_team(**API_DOWN, control_plane_pods=_crash_looping_control_plane()), "fail",
     f"the vCluster API of team-nlp at https://172.18.0.2:31443 did not answer: {REFUSED}; its "
     "control plane is not running (Helm release team-nlp in vcluster-team-nlp; gpulab up "
     "installs it)",
     "control plane on the host: team-nlp-0 Running (syncer: waiting CrashLoopBackOff (4 "
     "restarts), etcd: running but not ready); team-nlp-1 Pending (syncer: no status yet, etcd: "
     "no status yet)"),
    ("KAI-01 verify broke while observing", "KAI-01", NLP,
     _replace_team(internal_error="observing: KeyError: 'x'"), "error",
     "verify failed while observing team-nlp: observing: KeyError: 'x'", ""),
    ("KAI-01 not observed", "KAI-01", NLP, _replace_team(api_version=""), "error",
     "the vCluster API of team-nlp was not observed in this run or recording", ""),
    ("KAI-01 unknown team", "KAI-01", "team-x", _same, "error",
     "no team 'team-x' in profile (teams: team-nlp, team-vision, team-recommender)", ""),
    ("KAI-01 team not observed", "KAI-01", REC, _without_team(REC), "error",
     "team team-recommender is not in this observation or recording", ""),
    ("KAI-01 existing cluster, down, control plane running", "KAI-01", NLP,
     _both(_replace_team(**API_DOWN), _replace_host(gpus="found")), "fail",
     f"the vCluster API of team-nlp at https://172.18.0.2:31443 did not answer: {REFUSED}; its "
     "control plane runs on the host, so this machine cannot reach the address the vCluster is "
     "exposed at (docs/own-cluster.md, 'Reaching the vClusters')",
     "control plane on the host: team-nlp-0 Running"),
    # KAI-02
    ("KAI-02 healthy", "KAI-02", NLP, _same, "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable) among "
     "2 node(s), synced from the host"),
    ("KAI-02 nodes not observed", "KAI-02", NLP, _replace_team(nodes=None), "error",
     "the node list of team-nlp was not observed in this run or recording", ""),
    ("KAI-02 vCluster API down", "KAI-02", NLP, _replace_team(**API_DOWN), "fail",
     "the vCluster API of team-nlp did not answer, so the node list could not be read (see "
     f"KAI-01): {REFUSED}", ""),
    ("KAI-02 no node listed", "KAI-02", NLP, _replace_team(nodes=()), "fail",
     f"team-nlp's vCluster lists 0 node(s) (none) but not the GPU node {W}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 host without GPU nodes, vCluster without the worker", "KAI-02", NLP,
     _both(_replace_host(gpu_nodes=()), _vcluster_nodes(_drop_node(W))), "fail",
     f"the host has no node labelled {POOL}=default (the GPU pool; gpulab up labels the worker "
     f"and fake-gpu-operator serves it); team-nlp's vCluster lists 1 node(s) ({CP}) but not the "
     f"GPU node {W}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 host without GPU nodes", "KAI-02", NLP, _replace_host(gpu_nodes=()), "fail",
     f"the host has no node labelled {POOL}=default (the GPU pool; gpulab up labels the worker "
     "and fake-gpu-operator serves it)", ""),
    ("KAI-02 two GPU nodes", "KAI-02", NLP, _two_gpu_nodes, "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable), {W2} "
     "(NVIDIA-L40S, 1 x nvidia.com/gpu allocatable) among 3 node(s), synced from the host"),
    # With two GPU nodes, a problem with the first does not hide the second's.
    ("KAI-02 first not listed, second with two GPUs", "KAI-02", NLP,
     _both(_two_gpu_nodes, _vcluster_nodes(_drop_node(W)), _vcluster_nodes(_gpus(W2, "2"))),
     "fail",
     f"team-nlp's vCluster lists 2 node(s) ({CP}, {W2}) but not the GPU node {W}: "
     f"{NOT_SYNCED_IN}; {W2} has nvidia.com/gpu 2 in team-nlp's vCluster, the pool has 1 per node",
     ""),
    ("KAI-02 first with two GPUs on the host, second not listed", "KAI-02", NLP,
     _both(_two_gpu_nodes, _host_nodes(_gpus(W, "2")), _vcluster_nodes(_gpus(W, "2")),
           _vcluster_nodes(_drop_node(W2))), "fail",
     f"{W} has nvidia.com/gpu 2 on the host: fake-gpu-operator does not advertise the pool's 1 "
     f"GPU(s) (step management/fake-gpus; kubectl describe node {W} on the host); team-nlp's "
     f"vCluster lists 2 node(s) ({CP}, {W}) but not the GPU node {W2}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 first without GPUs in the vCluster, second unlabelled", "KAI-02", NLP,
     _both(_two_gpu_nodes, _vcluster_nodes(_gpus(W, "0")), _vcluster_nodes(_unlabel(W2, POOL))),
     "fail",
     f"{W} has nvidia.com/gpu 0 in team-nlp's vCluster, the pool has 1 per node; {W2} is listed "
     f"without its pool label {POOL}=default (has None)", ""),
    ("KAI-02 first unlabelled, second not listed", "KAI-02", NLP,
     _both(_two_gpu_nodes, _vcluster_nodes(_unlabel(W, POOL)), _vcluster_nodes(_drop_node(W2))),
     "fail",
     f"{W} is listed without its pool label {POOL}=default (has None); team-nlp's vCluster lists "
     f"2 node(s) ({CP}, {W}) but not the GPU node {W2}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 the product the node is labelled with", "KAI-02", NLP,
     _vcluster_nodes(_relabel(W, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB")), "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-A100-SXM4-40GB, 1 x nvidia.com/gpu "
     "allocatable) among 2 node(s), synced from the host"),
    ("KAI-02 the pool's model when the node has no product label", "KAI-02", NLP,
     _vcluster_nodes(_unlabel(W, "nvidia.com/gpu.product")), "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable) among "
     "2 node(s), synced from the host"),
    ("KAI-02 a node copy without allocatable", "KAI-02", NLP,
     _vcluster_nodes(lambda nodes: _named(nodes, W)["status"].pop("allocatable")), "fail",
     f"{W} has nvidia.com/gpu 0 in team-nlp's vCluster, the pool has 1 per node", ""),
    ("KAI-02 stale copy", "KAI-02", NLP, _host_nodes(_gpus(W, "0")), "fail",
     f"{W} has nvidia.com/gpu 0 on the host; team-nlp's vCluster still shows 1: its copy is stale "
     "(the host's node is the truth): fake-gpu-operator does not advertise the pool's 1 GPU(s) "
     f"(step management/fake-gpus; kubectl describe node {W} on the host)", ""),
    # KAI-02 on a cluster gpulab did not make: every node advertising GPUs, no pool label
    ("KAI-02 existing cluster", "KAI-02", NLP,
     _both(_replace_host(gpus="found"), _vcluster_nodes(_unlabel(W, POOL))), "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable) among "
     "2 node(s), synced from the host"),
    ("KAI-02 existing cluster, no GPU product label", "KAI-02", NLP,
     _both(_replace_host(gpus="found"),
           _vcluster_nodes(_unlabel(W, "nvidia.com/gpu.product"))), "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (model not labelled, 1 x nvidia.com/gpu "
     "allocatable) among 2 node(s), synced from the host"),
    ("KAI-02 existing cluster without GPU nodes", "KAI-02", NLP,
     _replace_host(gpus="found", gpu_nodes=()), "fail",
     "no node of the host advertises nvidia.com/gpu now (the GPU Operator or device plugin; "
     "kubectl describe nodes on the host)", ""),
    ("KAI-02 existing cluster, no node listed", "KAI-02", NLP,
     _both(_replace_host(gpus="found"), _replace_team(nodes=())), "fail",
     f"team-nlp's vCluster lists 0 node(s) (none) but not the GPU node {W}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 existing cluster, first not listed, second stale", "KAI-02", NLP,
     _both(_two_gpu_nodes, _replace_host(gpus="found"), _vcluster_nodes(_drop_node(W)),
           _vcluster_nodes(_gpus(W2, "2"))), "fail",
     f"team-nlp's vCluster lists 2 node(s) ({CP}, {W2}) but not the GPU node {W}: "
     f"{NOT_SYNCED_IN}; {W2} has nvidia.com/gpu 2 in team-nlp's vCluster, 1 on the host: its "
     "copy is stale (the host's node is the truth)", ""),
    ("KAI-02 existing cluster, first stale, second not listed", "KAI-02", NLP,
     _both(_two_gpu_nodes, _replace_host(gpus="found"), _vcluster_nodes(_gpus(W, "0")),
           _vcluster_nodes(_drop_node(W2))), "fail",
     f"{W} has nvidia.com/gpu 0 in team-nlp's vCluster, 1 on the host: its copy is stale (the "
     f"host's node is the truth); team-nlp's vCluster lists 2 node(s) ({CP}, {W}) but not the GPU "
     f"node {W2}: {NOT_SYNCED_IN}", ""),
    ("KAI-02 existing cluster, two GPU nodes", "KAI-02", NLP,
     _both(_two_gpu_nodes, _replace_host(gpus="found")), "pass", "",
     f"team-nlp's vCluster lists GPU node {W} (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable), {W2} "
     "(NVIDIA-L40S, 1 x nvidia.com/gpu allocatable) among 3 node(s), synced from the host"),
    # KAI-03
    ("KAI-03 healthy", "KAI-03", NLP, _same, "pass", "",
     f"quota/limit/overQuotaWeight as in the profile: {QUEUES}"),
    ("KAI-03 no queue", "KAI-03", NLP, _replace_host(queues=()), "fail",
     "Queue team-nlp does not exist on the host (gpulab up creates it); Queue ml-org does not "
     f"exist on the host (gpulab up creates it){REAPPLY}", ""),
    ("KAI-03 queues not observed", "KAI-03", NLP, _replace_host(queues=None), "error",
     "the host's queues were not observed in this run or recording", ""),
    ("KAI-03 queues unreadable", "KAI-03", NLP,
     _replace_host(queues=None, queues_error="403 Forbidden"), "error",
     "the host's queues could not be read: 403 Forbidden", ""),
    ("KAI-03 team queue without parent", "KAI-03", NLP,
     _queues(_set("spec.parentQueue", None), NLP), "fail",
     f"Queue team-nlp: spec.parentQueue is missing; the profile says ml-org{REAPPLY}",
     QUEUES.replace("team-nlp under ml-org", "team-nlp")),
    ("KAI-03 team queue without priority", "KAI-03", NLP,
     _queues(_set("spec.priority", None), NLP), "fail",
     f"Queue team-nlp: spec.priority is missing; the profile says 100{REAPPLY}", QUEUES),
    ("KAI-03 team queue without resources", "KAI-03", NLP,
     _queues(_set("spec.resources", None), NLP), "fail",
     "Queue team-nlp: spec.resources is missing; the profile says gpu quota 0.33, limit 1, "
     "overQuotaWeight 1, cpu quota 0, limit -1, overQuotaWeight 1, memory quota 0, limit -1, "
     f"overQuotaWeight 1{REAPPLY}",
     QUEUES.replace("(gpu 0.33/1/1, cpu 0/-1/1, memory 0/-1/1); ml-org",
                    "(gpu None/None/None, cpu None/None/None, memory None/None/None); ml-org")),
    ("KAI-03 team queue GPU limit 2", "KAI-03", NLP,
     _queues(_set("spec.resources.gpu.limit", 2), NLP), "fail",
     f"Queue team-nlp: spec.resources.gpu.limit is 2, the profile says 1{REAPPLY}",
     QUEUES.replace("gpu 0.33/1/1", "gpu 0.33/2/1")),
    ("KAI-03 a memory limit of seven digits", "KAI-03", NLP,
     _queues(_set("spec.resources.memory.limit", 1234567), NLP), "fail",
     f"Queue team-nlp: spec.resources.memory.limit is 1234567, the profile says -1{REAPPLY}",
     QUEUES.replace("memory 0/-1/1); ml-org", "memory 0/1234567/1); ml-org")),
    ("KAI-03 a limit written 2.0", "KAI-03", NLP,
     _queues(_set("spec.resources.gpu.limit", 2.0), NLP), "fail",
     f"Queue team-nlp: spec.resources.gpu.limit is 2, the profile says 1{REAPPLY}",
     QUEUES.replace("gpu 0.33/1/1", "gpu 0.33/2/1")),
    ("KAI-03 a limit written true is not 1", "KAI-03", NLP,
     _queues(_set("spec.resources.gpu.limit", True), NLP), "fail",
     f"Queue team-nlp: spec.resources.gpu.limit is True, the profile says 1{REAPPLY}",
     QUEUES.replace("gpu 0.33/1/1", "gpu 0.33/True/1")),
    ("KAI-03 org queue under a parent", "KAI-03", NLP,
     _queues(_set("spec.parentQueue", "default-parent-queue"), "ml-org"), "fail",
     "Queue ml-org: spec.parentQueue is 'default-parent-queue', the profile writes none (ml-org "
     f"is a top-level queue){REAPPLY}",
     QUEUES.replace("; ml-org (", "; ml-org under default-parent-queue (")),
    # KAI-04
    ("KAI-04 healthy", "KAI-04", NLP, _same, "pass", "",
     f"{SHARE_SEEN}; PodGroup {SHARE_PG} in queue team-nlp"),
    ("KAI-04 labelled with another team's queue", "KAI-04", NLP,
     _edit_host("gpu-share", _meta("labels", QUEUE, VISION)), "fail",
     f"{SHARE_POD} is labelled kai.scheduler/queue=team-vision, not team-nlp",
     f"{SHARE_SEEN.replace('=team-nlp', '=team-vision')}; PodGroup {SHARE_PG} in queue team-nlp"),
    ("KAI-04 PodGroup without a queue", "KAI-04", NLP,
     _edit_group("gpu-share", _set("spec.queue", None)), "fail",
     f"PodGroup {SHARE_PG} is in queue none, not team-nlp",
     f"{SHARE_SEEN}; PodGroup {SHARE_PG} in queue none"),
    ("KAI-04 no PodGroup", "KAI-04", NLP, _replace_run("gpu-share", pod_group=None), "fail",
     f"KAI's pod-grouper made no PodGroup for {SHARE_POD} (no pod-group-name annotation); events: "
     f"Scheduled: Successfully assigned pod vcluster-team-nlp/{SHARE_HOST} to node {W} at "
     "node-pool default", SHARE_SEEN),
    ("KAI-04 GPU in use before verify", "KAI-04", NLP,
     _replace_host(gpu_users=({"metadata": {"name": "train", "namespace": "ml",
                                            "labels": {QUEUE: "research"},
                                            "annotations": {"gpu-fraction": "0.5"}},
                               "status": {"phase": "Running"}},)), "error",
     "not run: before verify started the GPU was in use by ml/train (0.5 GPU (gpu-fraction), "
     "queue research, Running); verify needs the GPU and the team queues idle to know what must "
     "fit. Stop those pods (kubectl delete pod -n NAMESPACE NAME) or verify a fresh lab (gpulab "
     "down && gpulab up)", ""),
    ("KAI-04 GPU users read, none", "KAI-04", NLP,
     _replace_host(gpu_users=(), gpu_users_error="an earlier read timed out"), "pass", "",
     f"{SHARE_SEEN}; PodGroup {SHARE_PG} in queue team-nlp"),
    ("KAI-04 GPU users unreadable", "KAI-04", NLP,
     _replace_host(gpu_users=None, gpu_users_error="403 Forbidden"), "error",
     "could not tell whether the GPU was idle before verify started: 403 Forbidden", ""),
    ("KAI-04 vCluster API down", "KAI-04", NLP, _replace_team(**API_DOWN), "fail",
     "the vCluster API of team-nlp did not answer, so verify's pods could not be read (see "
     f"KAI-01): {REFUSED}", ""),
    ("KAI-04 pods not observed", "KAI-04", NLP, _replace_team(pods=None), "error",
     "verify's pods of team-nlp was not observed in this run or recording", ""),
    ("KAI-04 share pod not in the observation", "KAI-04", NLP, _without_run("gpu-share"),
     "error", "gpu-share was not part of this observation", ""),
    ("KAI-04 host pod without a namespace", "KAI-04", NLP,
     _edit_host("gpu-share", _set("metadata.namespace", None)), "fail",
     f"the host pod read for gpu-share is (none)/{SHARE_HOST}, outside vcluster-team-nlp where "
     "team-nlp's vCluster syncs its pods: it is not verify's pod", ""),
    ("KAI-04 host pod of another check", "KAI-04", NLP,
     _edit_host("gpu-share", _meta("labels", "gpulab.dev/check", "KAI-06")), "fail",
     f"{SHARE_POD} lacks verify's label gpulab.dev/check=KAI-05 (it has 'KAI-06'): a pod of the "
     "same name that verify did not create; delete it in the vCluster (kubectl -n gpulab-verify "
     "delete pod gpu-share) and re-run verify", ""),
    ("KAI-04 host pod without a run label", "KAI-04", NLP,
     _edit_host("gpu-share", _meta("labels", "gpulab.dev/run", None)), "fail",
     f"{SHARE_POD} belongs to another verify run (gpulab.dev/run=None, this run is "
     "'8b1e5c0a94d2'): a pod left by an earlier or concurrent verify; kubectl -n gpulab-verify "
     "delete pod gpu-share in team-nlp's vCluster", ""),
    ("KAI-04 host pod without vCluster's uid annotation", "KAI-04", NLP,
     _edit_host("gpu-share", _meta("annotations", "vcluster.loft.sh/uid", None)), "fail",
     f"{SHARE_POD} is the copy of virtual pod uid (none), not vc-team-nlp-gpu-share that verify "
     "created (vcluster.loft.sh/uid): the pod was deleted and re-created while verify waited; "
     f"kubectl -n vcluster-team-nlp get pod {SHARE_HOST} -o yaml", ""),
    ("KAI-04 PodGroup without a run label", "KAI-04", NLP,
     _edit_group("gpu-share", _meta("labels", "gpulab.dev/run", None)), "fail",
     f"PodGroup vcluster-team-nlp/{SHARE_PG} read for gpu-share belongs to another verify run "
     "(gpulab.dev/run=None, this run is '8b1e5c0a94d2'; KAI copies the pod's labels to its "
     "PodGroup): it is not this run's pod's PodGroup; kubectl -n vcluster-team-nlp get "
     f"podgroups.scheduling.run.ai {SHARE_PG} -o yaml", ""),
    ("KAI-04 host pod naming no PodGroup", "KAI-04", NLP,
     _edit_host("gpu-share", _meta("annotations", "pod-group-name", None)), "fail",
     f"PodGroup vcluster-team-nlp/{SHARE_PG} read for gpu-share is not the one its host pod "
     f"{SHARE_HOST} names in its pod-group-name annotation (none): another workload's PodGroup is "
     f"not evidence; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o "
     "yaml", ""),
    ("KAI-04 PodGroup without a namespace", "KAI-04", NLP,
     _edit_group("gpu-share", _set("metadata.namespace", None)), "fail",
     f"PodGroup (none)/{SHARE_PG} read for gpu-share is not the one its host pod {SHARE_HOST} "
     f"names in its pod-group-name annotation ({SHARE_PG}): another workload's PodGroup is not "
     f"evidence; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o yaml",
     ""),
    ("KAI-04 PodGroup owner without a uid", "KAI-04", NLP,
     _edit_group("gpu-share", lambda g: g["metadata"]["ownerReferences"][0].pop("uid")), "fail",
     f"PodGroup vcluster-team-nlp/{SHARE_PG} read for gpu-share is owned by uid (none), not by "
     f"host pod {SHARE_HOST} (uid host-{SHARE_HOST}): a PodGroup left by an earlier pod of that "
     f"name; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o yaml",
     ""),
    ("KAI-04 host pod without a uid", "KAI-04", NLP,
     _edit_host("gpu-share", lambda h: h["metadata"].pop("uid")), "fail",
     f"PodGroup vcluster-team-nlp/{SHARE_PG} read for gpu-share is owned by uid "
     f"host-{SHARE_HOST}, not by host pod {SHARE_HOST} (uid (none)): a PodGroup left by an "
     "earlier pod of that name; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai "
     f"{SHARE_PG} -o yaml", ""),
    ("KAI-04 PodGroup owned by earlier pods", "KAI-04", NLP,
     _edit_group("gpu-share", _other_owners), "fail",
     f"PodGroup vcluster-team-nlp/{SHARE_PG} read for gpu-share is owned by uid earlier-1, "
     f"earlier-2, not by host pod {SHARE_HOST} (uid host-{SHARE_HOST}): a PodGroup left by an "
     "earlier pod of that name; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai "
     f"{SHARE_PG} -o yaml", ""),
    # KAI-05
    ("KAI-05 healthy", "KAI-05", NLP, _same, "pass", "", TOGETHER + ALLOCATED),
    ("KAI-05 crash-looping", "KAI-05", NLP, _edit_host("gpu-share", _crash_two_containers),
     "fail",
     f"gpu-share is Running on {W} but its containers are not: app: waiting CrashLoopBackOff (3 "
     "restarts), sidecar: terminated Error; kubectl -n gpulab-verify logs gpu-share --previous in "
     "team-nlp's vCluster", ""),
    ("KAI-05 crash-looping, no node in the snapshot", "KAI-05", NLP,
     _edit_host("gpu-share", _crash_loop_without_node), "fail",
     "gpu-share is Running on - but its containers are not: app: waiting CrashLoopBackOff (3 "
     "restarts); kubectl -n gpulab-verify logs gpu-share --previous in team-nlp's vCluster", ""),
    ("KAI-05 not synced", "KAI-05", NLP,
     _replace_run("gpu-share", host=None, pod_group=None, outcome="not-synced", waited=180),
     "fail",
     f"the vCluster did not sync gpu-share to the host (no pod vcluster-team-nlp/{SHARE_HOST} "
     "after 180s); the vCluster's control plane on the host: team-nlp-0 Running", ""),
    ("KAI-05 accounted in another queue", "KAI-05", NLP,
     _edit_group("gpu-share", _set("spec.queue", VISION)), "fail",
     f"PodGroup {SHARE_PG} of gpu-share is in queue team-vision, not team-nlp: KAI accounts "
     "team-nlp's pod in team-vision queue (host pod labelled kai.scheduler/queue=team-nlp); "
     f"kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o yaml",
     TOGETHER + ALLOCATED),
    ("KAI-05 another team not observed", "KAI-05", NLP, _without_team(REC), "fail",
     _not_shared(REC, "not observed"),
     TOGETHER.replace(", team-recommender", "") + ALLOCATED),
    ("KAI-05 another team's pods not observed", "KAI-05", NLP, _replace_team(REC, pods=None),
     "fail", _not_shared(REC, "not observed"),
     TOGETHER.replace(", team-recommender", "") + ALLOCATED),
    ("KAI-05 another team's share crash-looping", "KAI-05", NLP,
     _edit_host("gpu-share", _crash_loop, team=VISION), "fail",
     _not_shared(VISION, "Running, app: waiting CrashLoopBackOff (3 restarts)"),
     TOGETHER.replace(", team-vision", "") + ALLOCATED),
    ("KAI-05 another team's share with two failing containers", "KAI-05", NLP,
     _edit_host("gpu-share", _crash_two_containers, team=VISION), "fail",
     _not_shared(VISION, "Running, app: waiting CrashLoopBackOff (3 restarts), sidecar: "
                         "terminated Error"),
     TOGETHER.replace(", team-vision", "") + ALLOCATED),
    ("KAI-05 another team's share not synced", "KAI-05", NLP,
     _replace_run("gpu-share", team=VISION, host=None, pod_group=None, outcome="not-synced"),
     "fail", _not_shared(VISION, "absent"), TOGETHER.replace(", team-vision", "") + ALLOCATED),
    ("KAI-05 no GPU group label", "KAI-05", NLP, _without_gpu_group, "pass", "",
     TOGETHER.replace(f" (GPU group {GROUP})", "") + ALLOCATED),
    ("KAI-05 queues unreadable", "KAI-05", NLP,
     _replace_host(queues=None, queues_error="403 Forbidden"), "error",
     "the queues' status was not observed (403 Forbidden)", TOGETHER),
    ("KAI-05 queues not observed", "KAI-05", NLP, _replace_host(queues=None), "error",
     "the queues' status was not observed (not in this run or recording)", TOGETHER),
    ("KAI-05 allocation 0, no wait recorded", "KAI-05", NLP,
     _both(_queues(_set("status.allocated", {"nvidia.com/gpu": "0"}), NLP),
           _replace_host(queue_wait="")), "fail",
     "Queue team-nlp shows allocated nvidia.com/gpu 0, expected 330m for the running share pod",
     TOGETHER + ALLOCATED.replace("330m", "0")),
    ("KAI-05 allocation unreadable", "KAI-05", NLP,
     _queues(_set("status.allocated", "330m"), NLP), "fail",
     "Queue team-nlp shows allocated nvidia.com/gpu none, expected 330m for the running share pod "
     "(read 4s after every share pod ran)", TOGETHER + ALLOCATED.replace("330m", "none")),
    ("KAI-05 team queue missing", "KAI-05", NLP,
     lambda state, profile: (host_replace(state, queues=tuple(
         q for q in state.host.queues or () if q["metadata"]["name"] != NLP)), profile),
     "fail", "Queue team-nlp does not exist (KAI-03)",
     TOGETHER + ALLOCATED.replace("330m", "none")),
    ("KAI-05 accounted in no queue", "KAI-05", NLP,
     _edit_group("gpu-share", _set("spec.queue", None)), "fail",
     f"PodGroup {SHARE_PG} of gpu-share is in queue none, not team-nlp: KAI accounts team-nlp's "
     "pod in no queue (host pod labelled kai.scheduler/queue=team-nlp); kubectl -n "
     f"vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o yaml",
     TOGETHER + ALLOCATED),
    ("KAI-05 accounted in default-queue, no queue label", "KAI-05", NLP,
     _both(_edit_host("gpu-share", _meta("labels", QUEUE, None)),
           _edit_group("gpu-share", _set("spec.queue", "default-queue"))), "fail",
     f"PodGroup {SHARE_PG} of gpu-share is in queue default-queue, not team-nlp: KAI accounts "
     "team-nlp's pod in default-queue queue (host pod labelled kai.scheduler/queue=none); "
     f"kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {SHARE_PG} -o yaml",
     TOGETHER + ALLOCATED),
    ("KAI-05 verify could not create its pods", "KAI-05", NLP,
     _replace_team(pods=None, scenario_error="namespace gpulab-verify is still terminating"),
     "error",
     "verify could not create its pods in team-nlp's vCluster: namespace gpulab-verify is still "
     "terminating", ""),
    # Why a share pod is not running, the most specific cause first (common.explain_run).
    ("KAI-05 share pod failed", "KAI-05", NLP,
     _edit_host("gpu-share", _set("status", {
         "phase": "Failed", "reason": "UnexpectedAdmissionError",
         "message": "Pod was rejected: Allocate failed due to no GPU reservation"})), "fail",
     "gpu-share failed on the host: UnexpectedAdmissionError Pod was rejected: Allocate failed "
     "due to no GPU reservation", ""),
    ("KAI-05 share pod failed, no word why", "KAI-05", NLP,
     _edit_host("gpu-share", _set("status", {"phase": "Failed"})), "fail",
     "gpu-share failed on the host: no reason given", ""),
    ("KAI-05 share pod bound, containers not started", "KAI-05", NLP,
     _edit_host("gpu-share", _both_containers_waiting), "fail",
     f"gpu-share is bound to {W} but app: waiting ContainerCreating, sidecar: waiting "
     "ContainerCreating; a fraction pod only starts once KAI's binder has a GPU reservation pod "
     "in the reservation namespace annotated by fake-gpu-operator's status-updater (the "
     "reservation RBAC) and RuntimeClass nvidia exists; events: Scheduled: Successfully assigned "
     f"pod vcluster-team-nlp/{SHARE_HOST} to node {W} at node-pool default", ""),
    ("KAI-05 share pod kept Pending by KAI", "KAI-05", NLP, _share_over_limit, "fail",
     f"KAI keeps gpu-share Pending: OverLimit: {OVER_LIMIT_NLP}", ""),
    # The PodGroup's coded reason and a copy of its message without the code: said once.
    ("KAI-05 a coded reason and its bare copy", "KAI-05", NLP,
     _both(_share_over_limit, _edit_host("gpu-share", _set("status.conditions", [
         {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
          "message": OVER_LIMIT_NLP}]))), "fail",
     f"KAI keeps gpu-share Pending: OverLimit: {OVER_LIMIT_NLP}", ""),
    # A code without a message: the code alone, as KAI writes it on the pod then.
    ("KAI-05 a code without a message", "KAI-05", NLP,
     _both(_share_over_limit, _edit_group("gpu-share", lambda g: g["status"][
         "schedulingConditions"][0].update(reasons=[{"reason": "OverLimit"}])),
           _edit_host("gpu-share", _set("status.conditions", [
               {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "OverLimit"}]), events=())), "fail",
     "KAI keeps gpu-share Pending: OverLimit", ""),
    ("KAI-05 share pod Pending, KAI's word on the pod only", "KAI-05", NLP,
     _share_pending_with_condition_only, "fail",
     f"KAI keeps gpu-share Pending: {b.NO_CAPACITY}", ""),
    # A host pod read without a uid: whose events are whose cannot be told, every one is kept.
    ("KAI-05 share pod without a uid keeps every event", "KAI-05", NLP,
     _share_pending_without_uid, "fail",
     f"KAI keeps gpu-share Pending: {LIMIT_ON_POD}", ""),
    ("KAI-05 share pod Pending, KAI silent", "KAI-05", NLP,
     _both(_edit_host("gpu-share", _unscheduled), _edit_group("gpu-share", _set("status", {})),
           _replace_run("gpu-share", events=(), waited=0.0, last_seen="Pending, no node yet")),
     "fail",
     f"gpu-share is {PENDING}, KAI gave no reason; last seen: Pending, no node yet; events: no "
     "events", ""),
    # KAI-06
    ("KAI-06 healthy", "KAI-06", NLP, _same, "pass", "",
     f"gpu-over-limit (2 x nvidia.com/gpu, {LIMIT}) stays Pending; KAI (PodGroup {LIMIT_PG}): "
     f"OverLimit: {OVER_LIMIT_NLP}"),
    ("KAI-06 create refused, a host pod read", "KAI-06", NLP,
     _replace_run("gpu-over-limit", created=None, create_error="context deadline exceeded",
                  outcome="create-failed"), "fail",
     "team-nlp's vCluster API refused gpu-over-limit: context deadline exceeded", ""),
    ("KAI-06 placed", "KAI-06", NLP,
     _edit_host("gpu-over-limit", _placed_on_the_worker, outcome="scheduled"), "fail",
     f"KAI placed gpu-over-limit (2 x nvidia.com/gpu) on {W} although {LIMIT}: the limit is not "
     "enforced; check the live queue (KAI-03)", f"Running, schedulerName kai-scheduler, node {W}"),
    ("KAI-06 Running, no node in the snapshot", "KAI-06", NLP,
     _edit_host("gpu-over-limit", _set("status", {"phase": "Running"})), "fail",
     f"KAI placed gpu-over-limit (2 x nvidia.com/gpu) on ? although {LIMIT}: the limit is not "
     "enforced; check the live queue (KAI-03)", "Running, schedulerName kai-scheduler, node -"),
    ("KAI-06 Succeeded, no node in the snapshot", "KAI-06", NLP,
     _edit_host("gpu-over-limit", _set("status", {"phase": "Succeeded"})), "fail",
     f"KAI placed gpu-over-limit (2 x nvidia.com/gpu) on ? although {LIMIT}: the limit is not "
     "enforced; check the live queue (KAI-03)", "Succeeded, schedulerName kai-scheduler, node -"),
    ("KAI-06 accounted in another queue", "KAI-06", NLP,
     _edit_group("gpu-over-limit", _set("spec.queue", VISION)), "fail",
     f"PodGroup {LIMIT_PG} of gpu-over-limit is in queue team-vision, not team-nlp: KAI accounts "
     "team-nlp's pod in team-vision queue (host pod labelled kai.scheduler/queue=team-nlp); "
     f"kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai {LIMIT_PG} -o yaml", PENDING),
    ("KAI-06 the org queue's limit, coded", "KAI-06", NLP,
     _edit_group("gpu-over-limit", _over_limit_of("ml-org")), "fail",
     f"gpu-over-limit (2 x nvidia.com/gpu) is Pending for queue ml-org's limit, not {LIMIT}: "
     f"\"OverLimit: {b.OVER_LIMIT.format(queue='ml-org')}\"; kubectl get queues.scheduling.run.ai "
     "ml-org -o yaml", PENDING),
    ("KAI-06 the org queue's limit, on the pod only", "KAI-06", NLP,
     _worded_over_limit_of("ml-org"), "fail",
     f"gpu-over-limit (2 x nvidia.com/gpu) is Pending for queue ml-org's limit, not {LIMIT}: "
     f"\"{b.over_limit_on_pod('ml-org')}\"; kubectl get queues.scheduling.run.ai ml-org -o yaml",
     PENDING),
    ("KAI-06 OverLimit on the pod, no PodGroup", "KAI-06", NLP,
     _replace_run("gpu-over-limit", pod_group=None), "pass", "",
     f"gpu-over-limit (2 x nvidia.com/gpu, {LIMIT}) stays Pending; KAI (pod condition; no "
     f"PodGroup carried no code): {LIMIT_ON_POD}"),
    ("KAI-06 OverLimit on the pod, PodGroup without a condition", "KAI-06", NLP,
     _edit_group("gpu-over-limit", _set("status", {"phase": "Pending"})), "pass", "",
     f"gpu-over-limit (2 x nvidia.com/gpu, {LIMIT}) stays Pending; KAI (pod condition; PodGroup "
     f"{LIMIT_PG} carried no code): {LIMIT_ON_POD}"),
    # The CRD's message is optional (KAI v0.16.8 pkg/apis/scheduling/v2alpha2/
    # podgroup_types.go:299-306): a code alone names no queue, so no other queue's limit.
    ("KAI-06 OverLimit without a message", "KAI-06", NLP,
     _edit_group("gpu-over-limit", lambda g: g["status"]["schedulingConditions"][0].update(
         reasons=[{"reason": "OverLimit"}])), "pass", "",
     f"gpu-over-limit (2 x nvidia.com/gpu, {LIMIT}) stays Pending; KAI (PodGroup {LIMIT_PG}): "
     "OverLimit"),
    # On the pod KAI writes the code, then its messages if any (JobFitErrorsToMessage,
    # pkg/scheduler/api/common_info/job_errors.go:44-71): the code alone without one.
    ("KAI-06 the word OverLimit on the pod only", "KAI-06", NLP, _worded_code_only, "pass", "",
     f"gpu-over-limit (2 x nvidia.com/gpu, {LIMIT}) stays Pending; KAI (pod condition; PodGroup "
     f"{LIMIT_PG} carried no code): OverLimit"),
    ("KAI-06 create refused although a pod was read", "KAI-06", NLP,
     _both(_silent("gpu-over-limit"),
           _replace_run("gpu-over-limit", create_error="etcdserver: request timed out")), "fail",
     "team-nlp's vCluster API refused gpu-over-limit: etcdserver: request timed out", ""),
    ("KAI-06 refused for capacity", "KAI-06", NLP, _refused_for_capacity, "fail",
     "gpu-over-limit (2 x nvidia.com/gpu) is Pending, but KAI gave another reason than OverLimit "
     f"although it exceeds {LIMIT}: PodSchedulingErrors: {b.NO_CAPACITY}", PENDING),
    ("KAI-06 no PodGroup, no reason", "KAI-06", NLP,
     _edit_host("gpu-over-limit", _set("status", {"phase": "Pending"}), pod_group=None,
                events=(), outcome="timeout", waited=90, last_seen="Pending; no PodGroup"),
     "fail",
     "gpu-over-limit is Pending and KAI's pod-grouper made no PodGroup for it (schedulerName "
     "kai-scheduler, kai.scheduler/queue team-nlp): check the pod-grouper deployment in KAI's "
     "namespace; events: no events", ""),
    ("KAI-06 PodGroup, no reason", "KAI-06", NLP, _silent("gpu-over-limit"), "fail",
     f"gpu-over-limit is {PENDING} after 90s, KAI gave no reason; events: no events", ""),
    ("KAI-06 PodGroup, no reason, KAI's event on it", "KAI-06", NLP,
     _both(_silent("gpu-over-limit"), _podgroup_event("gpu-over-limit")), "fail",
     f"gpu-over-limit is {PENDING} after 90s, KAI gave no reason; events: Unschedulable: Unable "
     "to schedule podgroup", ""),
    ("KAI-06 no PodGroup, the pod-grouper's warning", "KAI-06", NLP,
     _both(_edit_host("gpu-over-limit", _ungrouped, pod_group=None, outcome="timeout",
                      waited=90, last_seen=""), _pod_grouper_warning), "fail",
     "gpu-over-limit is Pending and KAI's pod-grouper made no PodGroup for it (schedulerName "
     "kai-scheduler, kai.scheduler/queue none): check the pod-grouper deployment in KAI's "
     f"namespace; events: PodGrouperWarning: {PODGROUPER_ERROR}", ""),
    ("KAI-06 no limit", "KAI-06", NLP,
     _profile(lambda d: d["teams"][0]["queue"]["resources"]["gpu"].update(limit=-1)), "skip",
     "Queue team-nlp has no GPU limit (-1), so no request can exceed it", ""),
    # KAI-07
    ("KAI-07 healthy", "KAI-07", NLP, _same, "pass", "",
     "gpu-over-capacity (gpu-fraction 0.5) stays Pending while the share pods hold 0.99 of 1 "
     f"GPU(s); KAI (PodGroup): PodSchedulingErrors: {NO_CAPACITY_NLP}"),
    ("KAI-07 create refused, a host pod read", "KAI-07", NLP,
     _replace_run("gpu-over-capacity", created=None, create_error="context deadline exceeded",
                  outcome="create-failed"), "fail",
     "team-nlp's vCluster API refused gpu-over-capacity: context deadline exceeded", ""),
    ("KAI-07 placed", "KAI-07", NLP,
     _edit_host("gpu-over-capacity", _placed_on_the_worker, outcome="scheduled"), "fail",
     f"KAI placed gpu-over-capacity (gpu-fraction 0.5) on {W} while the share pods held 0.99 of "
     "the pool's 1 GPU(s): the GPU is over-committed",
     f"Running, schedulerName kai-scheduler, node {W}"),
    ("KAI-07 accounted in another queue", "KAI-07", NLP,
     _edit_group("gpu-over-capacity", _set("spec.queue", VISION)), "fail",
     f"PodGroup {CAPACITY_PG} of gpu-over-capacity is in queue team-vision, not team-nlp: KAI "
     "accounts team-nlp's pod in team-vision queue (host pod labelled "
     "kai.scheduler/queue=team-nlp); kubectl -n vcluster-team-nlp get "
     f"podgroups.scheduling.run.ai {CAPACITY_PG} -o yaml", PENDING),
    ("KAI-07 the pod's condition when the PodGroup has none", "KAI-07", NLP,
     _both(_edit_group("gpu-over-capacity", _set("status", {"phase": "Pending"})),
           _replace_run("gpu-over-capacity", events=())), "pass", "",
     "gpu-over-capacity (gpu-fraction 0.5) stays Pending while the share pods hold 0.99 of 1 "
     f"GPU(s); KAI (pod condition): {b.NO_CAPACITY}"),
    ("KAI-07 three nodes refused for conditions", "KAI-07", NLP,
     _node_refusals("node has DiskPressure condition", "node has MemoryPressure condition",
                    "node has PIDPressure condition"), "fail",
     "KAI turned gpu-over-capacity (gpu-fraction 0.5) away for something else than the GPU on "
     "some node (1 node has DiskPressure condition; 1 node has MemoryPressure condition): KAI "
     "checks a node's GPUs before anything else, so that node had room on its GPU and this does "
     "not show the GPU is full; kubectl describe nodes on the host (conditions, taints)", PENDING),
    ("KAI-07 no GPU shortage named", "KAI-07", NLP,
     _edit_group("gpu-over-capacity", lambda g: g["status"]["schedulingConditions"][0].update(
         reasons=[{"reason": "PodSchedulingErrors", "message": "Unable to schedule pod"}])),
     "fail",
     "KAI keeps gpu-over-capacity (gpu-fraction 0.5) Pending but names no GPU shortage: "
     "PodSchedulingErrors: Unable to schedule pod; this does not show the GPU is full", PENDING),
    ("KAI-07 refused for the queue", "KAI-07", NLP,
     _edit_group("gpu-over-capacity", lambda g: g["status"]["schedulingConditions"][0].update(
         reasons=[{"reason": "OverLimit", "message": OVER_LIMIT_NLP}])), "fail",
     f"KAI refused gpu-over-capacity for its queue, not for the GPU's capacity: OverLimit: "
     f"{OVER_LIMIT_NLP}; queue team-nlp's limit should hold gpu-fraction 0.5 on top of the share "
     "pod", PENDING),
    ("KAI-07 PodGroup, no reason", "KAI-07", NLP, _silent("gpu-over-capacity"), "fail",
     f"gpu-over-capacity is {PENDING} after 90s, KAI gave no reason; events: no events", ""),
    ("KAI-07 create refused although a pod was read", "KAI-07", NLP,
     _both(_silent("gpu-over-capacity"),
           _replace_run("gpu-over-capacity", create_error="etcdserver: request timed out")),
     "fail", "team-nlp's vCluster API refused gpu-over-capacity: etcdserver: request timed out",
     ""),
    ("KAI-07 not created", "KAI-07", NLP,
     _replace_run("gpu-over-capacity", created=None, host=None, pod_group=None, events=(),
                  outcome="not-created", last_seen=""), "fail",
     "gpu-over-capacity was not created: a pod before it did not run", ""),
    ("KAI-07 two-GPU pool, limit 1", "KAI-07", NLP,
     _profile(lambda d: d["gpu_pool"].update(count=2)), "skip",
     "Queue team-nlp's GPU limit 1 cannot hold the share pod and a capacity probe (2 x "
     "nvidia.com/gpu) together, so KAI would refuse the probe for the limit (KAI-06), not for "
     "capacity", ""),
    ("KAI-07 two-GPU pool", "KAI-07", NLP,
     _profile(lambda d: [d["gpu_pool"].update(count=2), *(
         t["queue"]["resources"]["gpu"].update(limit=3) for t in d["teams"])]), "pass", "",
     "gpu-over-capacity (2 x nvidia.com/gpu) stays Pending while the share pods hold 0.99 of 2 "
     f"GPU(s); KAI (PodGroup): PodSchedulingErrors: {NO_CAPACITY_NLP}"),
    ("KAI-07 two one-GPU nodes, more than a node has", "KAI-07", NLP,
     _both(TWO_NODES, _refused_too_big(2, 1)), "pass", "",
     "gpu-over-capacity (2 x nvidia.com/gpu) stays Pending: no node of the pool has more than 1 "
     f"GPU(s); KAI (PodGroup): {TOO_BIG_ON_PG}"),
    ("KAI-07 two one-GPU nodes, no node short", "KAI-07", NLP, TWO_NODES, "pass", "",
     "gpu-over-capacity (2 x nvidia.com/gpu) stays Pending: no node KAI looked at had that many "
     f"GPUs free; KAI (PodGroup): PodSchedulingErrors: {NO_CAPACITY_NLP}"),
    ("KAI-07 two one-GPU nodes, placed", "KAI-07", NLP,
     _both(TWO_NODES, _edit_host("gpu-over-capacity", _placed_on_the_worker,
                                 outcome="scheduled")), "fail",
     f"KAI placed gpu-over-capacity (2 x nvidia.com/gpu) on {W} although no node of the pool has "
     "more than 1 GPU(s): a node is over-committed",
     f"Running, schedulerName kai-scheduler, node {W}"),
    ("KAI-07 one GPU, yet more than a node has", "KAI-07", NLP, _refused_too_big(0.5, 0),
     "fail",
     "KAI turned gpu-over-capacity (gpu-fraction 0.5) away because no node has that many GPUs, "
     "although the pool's node has 1: \"PodSchedulingErrors: Resources were not found for pod "
     f"{NS}/{CAPACITY_HOST} due to: Scheduling conditions were not met for pod "
     f"{NS}/{CAPACITY_HOST}: MaxNodePoolResources: The pod {NS}/{CAPACITY_HOST} requires GPU: "
     "0.5, CPU: 0 (cores), memory: 0 (GB), pods: 1. No node in the default node-pool has GPU "
     "resources.\"; the node KAI sees has fewer GPUs than verify found (kubectl describe nodes "
     "on the host)", PENDING),
    # KAI-08
    ("KAI-08 healthy", "KAI-08", NLP, _same, "pass", "",
     f"{LISTED}; {HIDDEN}; {REJECTED_VISION}; {REJECTED_REC}"),
    ("KAI-08 listing not observed", "KAI-08", NLP, _replace_team(listing=None), "error",
     "the isolation listing of team-nlp was not observed in this run or recording", ""),
    ("KAI-08 vCluster API down", "KAI-08", NLP, _replace_team(**API_DOWN), "fail",
     "the vCluster API of team-nlp did not answer, so the isolation listing could not be read "
     f"(see KAI-01): {REFUSED}", ""),
    ("KAI-08 listing refused", "KAI-08", NLP,
     _replace_team(listing=Listing(error="401 Unauthorized")), "fail",
     "team-nlp's vCluster refused to list pods: 401 Unauthorized", ""),
    ("KAI-08 listing taken after the cleanup", "KAI-08", NLP,
     _listing(NLP, _after_cleanup), "fail",
     "team-nlp's pod listing lacks its own verify pods of this run (gpu-share uid "
     "vc-team-nlp-gpu-share, gpu-over-limit uid vc-team-nlp-gpu-over-limit, gpu-over-capacity "
     "uid vc-team-nlp-gpu-over-capacity, queue-foreign uid vc-team-nlp-queue-foreign): it was not "
     "taken while verify's pods existed (after the cleanup, or from another run), so it cannot "
     "show that the other teams' pods are hidden; re-run gpulab verify --tc KAI-08", ""),
    # Unknown is not absent: a team missing from the observation has pods verify knows no uid
    # of, so whether team-nlp's listing shows them is unknown, not "no".
    ("KAI-08 another team not observed", "KAI-08", NLP, _without_team(REC), "skip",
     "unknown whether team-nlp's vCluster lists the verify pods of team-recommender, because "
     "team-recommender could not be observed (not in this run or recording): verify knows no "
     "uid of their pods, and their label alone does not show them hidden",
     f"{LISTED}; {HIDDEN.replace(', 3 of team-recommender', '')}; {REJECTED_VISION}; "
     f"{REJECTED_REC}"),
    ("KAI-08 two other teams not observed", "KAI-08", NLP,
     _both(_without_team(REC), _without_team(VISION)), "skip",
     "unknown whether team-nlp's vCluster lists the verify pods of team-vision and "
     "team-recommender, because team-vision and team-recommender could not be observed (not in "
     "this run or recording): verify knows no uid of their pods, and their label alone does not "
     "show them hidden", f"{LISTED}; {REJECTED_VISION}; {REJECTED_REC}"),
    # What is known wrong stays a failure, whatever else is unknown.
    ("KAI-08 another team not observed, a labelled pod of it listed", "KAI-08", NLP,
     _both(_leaked(lambda pod: pod["metadata"]["labels"].update(
         {"gpulab.dev/tenant": REC})), _without_team(REC)), "fail",
     "team-nlp's vCluster lists pod gpulab-verify/gpu-over-capacity labelled "
     "gpulab.dev/tenant=team-recommender",
     f"team-nlp's vCluster lists 6 pod(s) in 2 namespace(s); "
     f"{HIDDEN.replace(', 3 of team-recommender', '')}; {REJECTED_VISION}; {REJECTED_REC}"),
    # Credentials not presented are an error before the unknown listing.
    ("KAI-08 another team not observed, no credential probe", "KAI-08", NLP,
     _both(_without_team(REC), _replace_team(credential_probes=None)), "error",
     "team-nlp's credentials were not presented to team-vision's vCluster in this run or "
     "recording; team-nlp's credentials were not presented to team-recommender's vCluster in "
     "this run or recording", f"{LISTED}; {HIDDEN.replace(', 3 of team-recommender', '')}"),
    ("KAI-08 another team's pod, listed without a namespace", "KAI-08", NLP,
     _leaked(lambda pod: pod["metadata"].pop("namespace")), "fail",
     "team-nlp's vCluster lists pod /gpu-over-capacity labelled gpulab.dev/tenant=team-vision",
     f"team-nlp's vCluster lists 6 pod(s) in 3 namespace(s); {HIDDEN}; {REJECTED_VISION}; "
     f"{REJECTED_REC}"),
    ("KAI-08 another team's pod by uid", "KAI-08", NLP,
     _leaked(lambda pod: pod["metadata"]["labels"].pop("gpulab.dev/tenant")), "fail",
     "team-nlp's vCluster lists pod gpulab-verify/gpu-over-capacity of team-vision (same uid)",
     f"team-nlp's vCluster lists 6 pod(s) in 2 namespace(s); {HIDDEN}; {REJECTED_VISION}; "
     f"{REJECTED_REC}"),
    ("KAI-08 pods without a uid match nothing", "KAI-08", NLP, _without_uids, "pass", "",
     f"team-nlp's vCluster lists 6 pod(s) in 3 namespace(s); {HIDDEN}; {REJECTED_VISION}; "
     f"{REJECTED_REC}"),
    ("KAI-08 own pod created without a uid", "KAI-08", NLP, _own_created_without_uid, "pass", "",
     f"{LISTED}; {HIDDEN}; {REJECTED_VISION}; {REJECTED_REC}"),
    ("KAI-08 credentials accepted", "KAI-08", NLP, _probe("accepted", "200 OK"), "fail",
     "team-vision's vCluster accepted team-nlp's credentials (200 OK): the vClusters trust one "
     "CA, or team-nlp's kubeconfig points at team-vision's NodePort",
     f"{LISTED}; {HIDDEN}; {REJECTED_REC}"),
    ("KAI-08 credentials forbidden", "KAI-08", NLP, _probe("forbidden", "403 Forbidden"), "fail",
     "team-vision's vCluster authenticated team-nlp's credentials and only RBAC refused them (403 "
     "Forbidden): the vClusters trust one CA", f"{LISTED}; {HIDDEN}; {REJECTED_REC}"),
    ("KAI-08 credentials not presented", "KAI-08", NLP,
     _probe("error", "dial tcp: i/o timeout"), "error",
     "could not present team-nlp's credentials to team-vision's vCluster: dial tcp: i/o timeout",
     f"{LISTED}; {HIDDEN}; {REJECTED_REC}"),
    ("KAI-08 no credential probe", "KAI-08", NLP, _replace_team(credential_probes=None), "error",
     "team-nlp's credentials were not presented to team-vision's vCluster in this run or "
     "recording; team-nlp's credentials were not presented to team-recommender's vCluster in "
     "this run or recording", f"{LISTED}; {HIDDEN}"),
    ("KAI-08 the only team", "KAI-08", NLP, _profile(_one_team), "pass", "",
     "team-nlp's vCluster lists 4 pod(s) in 2 namespace(s); the only team of the lab: no other "
     "vCluster to present credentials to"),
]


@pytest.mark.parametrize(("name", "check", "team", "build", "status", "reason", "evidence"),
                         ROWS, ids=[r[0].replace(" ", "_") for r in ROWS])
def test_the_verdict_reads_as_written(name: str, check: str, team: str, build: Build,
                                      status: str, reason: str, evidence: str) -> None:
    result = _verdict(build, check, team)
    assert (result.id, result.tenant, result.status, result.reason, result.evidence) == (
        check, team, status, reason, evidence)


# --------------------------------------------------------------------------- the finding


def _finding(build: Build) -> tuple[dict[str, Any] | None, str]:
    from gpulab.stacks import load_profile

    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    state, profile = build(b.healthy_state(profile), profile)
    finding, note = queue_finding(state, profile)
    return (finding.to_dict() if finding is not None else None), note


ADVICE = ("Nothing on the host ties a team's pods to its queue: enforce it with host-side "
          "admission (e.g. a ValidatingAdmissionPolicy requiring kai.scheduler/queue=<team queue> "
          "on pods in vcluster-<team>), or vCluster Pro's pod patches")
FOREIGN_HOST = "queue-foreign-x-gpulab-verify-x-team-nlp"
FOREIGN_PG = f"pg-{FOREIGN_HOST}-host-{FOREIGN_HOST}"
DEMONSTRATED = {
    "id": "KAI-F1", "title": "queue label not enforced", "tenant": NLP, "status": "finding",
    "demonstrated": True,
    "evidence": "team-nlp labelled its pod queue-foreign kai.scheduler/queue=team-vision inside "
                "its vCluster, the label reached the host unchanged and KAI queued it in "
                f"team-vision (PodGroup {FOREIGN_PG}): a team can spend another team's queue, "
                "and a pod without the label lands in default-queue",
    "advice": ADVICE, "seconds": 2.0}


def _not_shown(why: str, seconds: float = 2.0) -> dict[str, Any]:
    return {**DEMONSTRATED, "demonstrated": False, "seconds": seconds,
            "evidence": "OSS vCluster passes kai.scheduler/queue through unchanged (its patches "
                        "are Pro), so a team can name another team's queue; verify could not "
                        f"show it here ({why})"}


def _foreign_created(edit: Callable[[dict[str, Any]], object]) -> Build:
    def build(state: KaiLabState, profile: VclusterKaiProfile
              ) -> tuple[KaiLabState, VclusterKaiProfile]:
        created = copy.deepcopy(_run(state, NLP, "queue-foreign").created)
        assert created is not None
        edit(created)
        return run_replace(state, NLP, "queue-foreign", created=created), profile
    return build


FINDINGS: list[tuple[str, Build, dict[str, Any] | None, str]] = [
    ("demonstrated", _same, DEMONSTRATED, ""),
    # The target is the label of the pod as created, else the one verify asks for.
    ("created pod not returned", _replace_run("queue-foreign", created=None), DEMONSTRATED, ""),
    ("created pod without the label", _foreign_created(_meta("labels", QUEUE, None)),
     DEMONSTRATED, ""),
    ("created pod naming another queue", _foreign_created(_meta("labels", QUEUE, REC)), None,
     "KAI-F1: team-nlp's pod labelled kai.scheduler/queue=team-recommender was queued in "
     "team-vision: something on the host enforces the team's queue, so the queue-label gap is "
     "closed on this lab"),
    ("PodGroup without a queue", _edit_group("queue-foreign", _set("spec.queue", None)), None,
     "KAI-F1: team-nlp's pod labelled kai.scheduler/queue=team-vision was queued in no queue: "
     "something on the host enforces the team's queue, so the queue-label gap is closed on this "
     "lab"),
    ("probe not in the observation", _without_run("queue-foreign"),
     _not_shown("not observed in this run or recording", 0.0), ""),
    ("first team not observed", _without_team(NLP),
     _not_shown("not observed in this run or recording", 0.0), ""),
    ("PodGroup of another run", _edit_group("queue-foreign", _meta("labels", "gpulab.dev/run",
                                                                  "0123456789ab")),
     _not_shown(f"PodGroup vcluster-team-nlp/{FOREIGN_PG} read for queue-foreign belongs to "
                "another verify run (gpulab.dev/run='0123456789ab', this run is '8b1e5c0a94d2'; "
                "KAI copies the pod's labels to its PodGroup): it is not this run's pod's "
                "PodGroup; kubectl -n vcluster-team-nlp get podgroups.scheduling.run.ai "
                f"{FOREIGN_PG} -o yaml"), ""),
    ("create refused", _replace_run("queue-foreign", created=None, host=None, pod_group=None,
                                    create_error="admission webhook denied", waited=0.5,
                                    outcome="create-failed"),
     _not_shown("admission webhook denied", 0.5), ""),
    ("not synced", _replace_run("queue-foreign", host=None, pod_group=None, outcome="not-synced",
                                last_seen="not on the host after 60s", waited=60.0),
     _not_shown("not on the host after 60s", 60.0), ""),
    ("no PodGroup, nothing said", _replace_run("queue-foreign", pod_group=None,
                                               outcome="timeout", last_seen=""),
     _not_shown("timeout"), ""),
]


@pytest.mark.parametrize(("name", "build", "finding", "note"), FINDINGS,
                         ids=[f[0].replace(" ", "_") for f in FINDINGS])
def test_the_finding_reads_as_written(name: str, build: Build, finding: dict[str, Any] | None,
                                      note: str) -> None:
    assert _finding(build) == (finding, note)


# --------------------------------------------------------------------------- registry


def test_each_check_says_where_to_look_further() -> None:
    from gpulab.stacks import load_profile

    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    team = 'kubectl --kubeconfig "$(gpulab kubeconfig team-vision --name lab1)"'
    host = 'kubectl --kubeconfig "$(gpulab kubeconfig management --name lab1)"'

    def keep(check: str) -> str:
        return f"gpulab verify --name lab1 --tc {check} --keep"

    assert {c.id: (c.title, c.next_step("lab1", VISION, profile)) for c in registry.CHECKS} == {
        "KAI-01": ("vCluster API", f"{host} -n vcluster-team-vision get pods,services"),
        "KAI-02": ("GPU node visible", f"{team} get nodes -o wide"),
        "KAI-03": ("queue tree", f"{host} get queues.scheduling.run.ai -o yaml"),
        "KAI-04": ("pod via KAI", f"{keep('KAI-04')}, then {host} -n vcluster-team-vision get "
                                  "pods,podgroups.scheduling.run.ai -o yaml"),
        "KAI-05": ("GPU sharing", f"{keep('KAI-05')}, then {host} -n vcluster-team-vision get "
                                  "pods -o wide"),
        "KAI-06": ("over queue limit", f"{keep('KAI-06')}, then {host} -n vcluster-team-vision "
                                       "describe podgroups.scheduling.run.ai"),
        "KAI-07": ("over GPU capacity", f"{keep('KAI-07')}, then {host} -n vcluster-team-vision "
                                        "describe podgroups.scheduling.run.ai"),
        "KAI-08": ("isolation", f"{team} get pods -A -o wide"),
    }


def test_each_check_names_the_pods_verify_makes_for_it() -> None:
    assert {c.id: registry.pods_needed([c]) for c in registry.select()} == {
        "KAI-01": frozenset(), "KAI-02": frozenset(), "KAI-03": frozenset(),
        "KAI-04": {"gpu-share"}, "KAI-05": {"gpu-share"}, "KAI-06": {"gpu-over-limit"},
        "KAI-07": {"gpu-share", "gpu-over-capacity"}, "KAI-08": {"gpu-share", "queue-foreign"}}
    assert registry.FINDING_ID == "KAI-F1"


def test_an_unknown_check_is_refused_naming_the_stack() -> None:
    with pytest.raises(UsageError) as refused:
        registry.parse_tc("KAI-05,TC-05")
    assert str(refused.value) == (
        "unknown check(s) TC-05 for the vcluster-kai stack (known: KAI-01, KAI-02, KAI-03, "
        "KAI-04, KAI-05, KAI-06, KAI-07, KAI-08)")
    with pytest.raises(UsageError) as selected:
        registry.select(["kai-09"])
    assert str(selected.value).startswith("unknown check(s) KAI-09 for the vcluster-kai stack")


def test_gpu_quantities_are_written_as_kai_writes_them() -> None:
    """KAI-05 compares a queue's allocation with the share in KAI's notation."""
    assert [millis(v) for v in (0.33, 0.5, 1, 2.0, 1.5)] == ["330m", "500m", "1", "2", "1500m"]
