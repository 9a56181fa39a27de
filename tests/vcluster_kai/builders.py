"""API objects and lab states of the vcluster-kai lab as the write-up (the vCluster + KAI write-up) shows
them, in gpulab's names.

The write-up's facts: three vClusters `team-*` in `vcluster-team-*`, host pods named
`<pod>-x-<namespace>-x-<vcluster>`, every team pod Running on the one GPU node, each team queue
showing `Allocated: nvidia.com/gpu: 330m`. KAI's reasons use the codes and message texts of the
facts doc (§1 "Unschedulable reporting"). What KAI v0.16.8 writes is followed where it was read
at the tag: a bare pod's PodGroup is `pg-<pod name>-<pod uid>`, named in the pod's
`pod-group-name` annotation, owned by the pod and labelled with the pod's labels
(pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:69-80,94-96,119-132,
pkg/podgrouper/podgroup/handler.go:93-103, pkg/podgrouper/pod_controller.go:179-206); the capacity
refusal is the fit-error histogram of pkg/scheduler/api/common_info/pod_errors.go:21,101,219-245
(both nodes lack a free GPU: the control plane has none, the worker's is shared out; the resource
check runs before the predicates, pkg/scheduler/framework/session.go:226-256), wrapped for the
PodGroup by pkg/scheduler/actions/common/allocate.go:244-248. The GPU group id is illustrative,
and this state is built here, not recorded from a running lab.

`healthy_state(profile)` passes all eight checks for every team and carries the queue-label
finding; tests derive failing states from it with `team_replace` and `run_replace`.

Run `python -m tests.vcluster_kai.builders` to rewrite tests/data/recordings/kai-*.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpulab import naming
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.checks.registry import CHECK_IDS
from gpulab.stacks.vcluster_kai.state import HostState, KaiLabState, ProbeRun, TeamState
from gpulab.verify import observe as verify_observe
from gpulab.verify.observe import listing_pod
from gpulab.verify.state import CredentialProbe, Listing
from tests import kube_wire as kube
from tests.kamaji_hami.builders import node_conditions
from tests.vcluster_kai import kai_wire as kw
from tests.vcluster_kai import vcluster_wire as vw

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile

LAB = "vcluster-kai"
NS = verify_observe.VERIFY_NAMESPACE
TS = "2026-11-20T10:15:00Z"
NODE_IP = "172.18.0.2"
GPU_NODE = "gpulab-vcluster-kai-worker"
CONTROL_PLANE = "gpulab-vcluster-kai-control-plane"
GPU_GROUP = "8d1d6a1c-5c3f-4f5e-9a52-2b6f0f9d7a10"
RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"
PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned"
# KAI's texts, from kai_wire's encoders (each cites its Go line at v0.16.8).
OVER_LIMIT = kw.over_limit("{queue}", 1, 0.33, 2)
NO_CAPACITY = kw.fit_errors({kw.NOT_ENOUGH_GPUS: 2})
NOT_FOUND = kw.not_found("{namespace}", "{name}", "{message}")


def over_limit_on_pod(queue: str) -> str:
    """KAI's words on a pod its queue's limit refuses: its PodGroup's only fit error, OverLimit
    with OVER_LIMIT's message, as JobFitErrorsToMessage writes it."""
    return kw.job_fit_errors_message([("OverLimit", [OVER_LIMIT.format(queue=queue)])])


RUN_ID = "8b1e5c0a94d2"  # the gpulab.dev/run label of the recorded verify run


def uid(where: str, name: str) -> str:
    return f"{where}-{name}".lower()


def node(name: str, *, gpus: str | None = None, labels: dict[str, str] | None = None
         ) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpus is not None:
        allocatable[kr.GPU_RESOURCE] = gpus
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": uid("node", name), "labels": dict(labels or {})},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                   "conditions": node_conditions(),
                   "nodeInfo": {"kubeletVersion": "v1.36.4"}},
    }


def host_nodes(profile: VclusterKaiProfile) -> list[dict[str, Any]]:
    """The kind nodes in the API server's order (by name): the control plane, then the GPU
    pool's workers (GPU_NODE, then kind's <cluster>-worker2, ...)."""
    labels = {naming.LABEL_LAB: LAB, **kr.gpu_node_labels(profile)}
    return [node(CONTROL_PLANE, labels={naming.LABEL_LAB: LAB}),
            *(node(name, gpus=str(profile.gpu_pool.count), labels=labels)
              for name in kr.gpu_node_names(profile, LAB))]


def control_plane_pod(team: TeamSpec) -> dict[str, Any]:
    """Pod 0 of the vCluster's StatefulSet: labelled `app: vcluster`, `release: <name>`, its
    container `syncer` (chart/templates/statefulset.yaml:52-54, :132 at v0.35.3)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{team.name}-0", "namespace": team.namespace,
                     "uid": uid("host", f"{team.name}-0"),
                     "labels": {"app": "vcluster", "release": team.name}},
        "spec": {"nodeName": GPU_NODE, "containers": [{"name": "syncer"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "syncer", "ready": True, "restartCount": 0, "state": {"running": {}}}]},
    }


def verify_pod(profile: VclusterKaiProfile, team: TeamSpec, name: str) -> dict[str, Any]:
    pod = next(p for p in kr.verify_objects(profile, team) if p["metadata"]["name"] == name)
    out = copy.deepcopy(pod)
    out["metadata"]["labels"].update({naming.LABEL_LAB: LAB, naming.LABEL_RUN: RUN_ID})
    return out


def virtual_pod(profile: VclusterKaiProfile, team: TeamSpec, name: str, phase: str = "Pending"
                ) -> dict[str, Any]:
    """A verify pod as the vCluster's API returns it on create: a uid, and the namespace's
    `default` ServiceAccount filled in by the API server's ServiceAccount admission."""
    pod = verify_pod(profile, team, name)
    pod["metadata"]["uid"] = uid(f"vc-{team.name}", name)
    pod["spec"].setdefault("serviceAccountName", "default")
    pod["status"] = {"phase": phase}
    return pod


def verify_namespace_labels(profile: VclusterKaiProfile, team: TeamSpec) -> dict[str, str]:
    """The labels of verify's namespace in the vCluster: gpulab's, plus the one the API server
    puts on every namespace (k8s.io/api v0.36.3 core/v1/well_known_labels.go:73)."""
    namespace = next(o for o in kr.verify_objects(profile, team) if o["kind"] == "Namespace")
    return {**(namespace["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": NS}


def host_pod(profile: VclusterKaiProfile, team: TeamSpec, name: str, *, running: bool,
             message: str = "") -> dict[str, Any]:
    """The host copy vCluster's syncer makes of the virtual pod (vcluster_wire), then KAI's
    pod-grouper's annotation (module docstring) and, once bound, the binder's marks."""
    virtual = virtual_pod(profile, team, name)
    pod = copy.deepcopy(virtual)
    host_name = kr.host_pod_name(name, NS, team.name)
    pod["metadata"] = vw.host_pod_metadata(virtual, host_name=host_name,
                                           host_namespace=team.namespace, vcluster=team.name,
                                           namespace_labels=verify_namespace_labels(profile, team))
    meta = pod["metadata"]
    meta["uid"] = uid("host", host_name)
    meta["annotations"][kr.POD_GROUP_ANNOTATION] = f"pg-{host_name}-{uid('host', host_name)}"
    # The host pod runs as the vCluster's workload ServiceAccount (pods/translate/translator.go:221;
    # `vc-workload-<name>`, pkg/config/validation.go:192).
    pod["spec"]["serviceAccountName"] = f"vc-workload-{team.name}"
    if running:
        meta["labels"][kw.GPU_GROUP] = GPU_GROUP
        if kr.FRACTION_ANNOTATION in meta["annotations"]:
            meta["annotations"][kw.RECEIVED_TYPE] = "Fraction"
        pod["spec"]["nodeName"] = GPU_NODE
        pod["spec"]["runtimeClassName"] = "nvidia"
        pod["status"] = {"phase": "Running",
                         "conditions": [{"type": "PodScheduled", "status": "True"}],
                         "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0,
                                                "state": {"running": {}}}]}
    else:
        pod["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message}]} if message else {"phase": "Pending"}
    return pod


def pod_group(pod: dict[str, Any], queue: str, reasons: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    """KAI's PodGroup of a bare pod (the module docstring cites where KAI does this): named as
    the pod's annotation says, owned by the pod, with the pod's labels and annotations plus the
    top-owner metadata (default_grouper.go:98-132), priority class `train`
    (default_grouper.go:66, constants.TrainPriorityClass), minMember 1 (handler.go:93-113); its
    status as KAI's controllers write it: resourcesStatus (kai_wire.pod_group_resources) and,
    refused, the Unschedulable condition (kai_wire.unschedulable_condition). KAI writes no
    status.phase. Left out: spec.preemptibility, which comes from a defaults ConfigMap not read
    here."""
    meta = pod["metadata"]
    status: dict[str, Any] = {}
    fraction = meta.get("annotations", {}).get(kr.FRACTION_ANNOTATION)
    whole = sum(int(((c.get("resources") or {}).get("limits") or {}).get(kr.GPU_RESOURCE, 0))
                for c in pod["spec"]["containers"])
    resources = kw.pod_group_resources(Decimal(fraction) if fraction else None, whole,
                                       allocated=pod["status"].get("phase") == "Running")
    if resources:
        status["resourcesStatus"] = resources
    if reasons:
        message = kw.job_fit_errors_message([(r.get("reason", ""), [r.get("message", "")])
                                             for r in reasons])
        status["schedulingConditions"] = [kw.unschedulable_condition(message, reasons, TS)]
    # The pod's annotations when the pod-grouper read it: before its own pod-group-name and
    # the binder's marks.
    later = (kr.POD_GROUP_ANNOTATION, kw.RECEIVED_TYPE)
    annotations = {kw.TOP_OWNER_METADATA: kw.top_owner_metadata(meta["name"], meta["uid"]),
                   **{k: v for k, v in (meta.get("annotations") or {}).items()
                      if k not in later}}
    return {
        "apiVersion": kr.PODGROUP_API, "kind": "PodGroup",
        "metadata": {"name": meta["annotations"][kr.POD_GROUP_ANNOTATION],
                     "namespace": meta["namespace"], "uid": uid("pg", meta["name"]),
                     "labels": dict(meta.get("labels") or {}), "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                          "name": meta["name"], "uid": meta["uid"]}]},
        "spec": {"minMember": 1, "queue": queue, "priorityClassName": "train"},
        "status": status,
    }


def event(obj: dict[str, Any], reason: str, message: str, kind: str = "Warning"
          ) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{reason.lower()}", "namespace": meta["namespace"]},
        "involvedObject": {"kind": obj["kind"], "name": meta["name"],
                           "namespace": meta["namespace"], "uid": meta["uid"]},
        "reason": reason, "message": message, "type": kind, "count": 1,
        "source": {"component": "kai-scheduler"}, "lastTimestamp": TS,
    }


def share_run(profile: VclusterKaiProfile, team: TeamSpec) -> ProbeRun:
    host = host_pod(profile, team, "gpu-share", running=True)
    group = pod_group(host, team.queue_name)
    return ProbeRun(
        "gpu-share", "KAI-05", created=virtual_pod(profile, team, "gpu-share"),
        host_name=host["metadata"]["name"], host=host, pod_group=group,
        events=(event(host, "Scheduled", kw.scheduled(team.namespace, host["metadata"]["name"],
                                                      GPU_NODE), "Normal"),),
        outcome="running", waited=34.2, last_seen=f"Running, schedulerName kai-scheduler, node "
                                                  f"{GPU_NODE}; PodGroup {group['metadata']['name']}")


def over_limit_details(team: TeamSpec) -> dict[str, Any]:
    """KAI's queueDetails for the over-limit probe as OVER_LIMIT tells it: the team's queue
    (the profile's quotas and limits, in KAI's units: GPUs, millicores, megabytes) holding the share
    pod's 0.33 GPU and asked for the probe's 2 GPUs more; the probe pods ask no CPU or memory, and with
    KAI's default priority class `train` (50, below 100) the jobs are preemptible
    (pkg/common/podgroup/preemptible.go:10-26)."""
    res = team.queue.resources
    shared, asked = 0.33, 2.0

    def mib(amount: float) -> float:  # proportion.go:49, 339-340: KAI's "mebibytes" is
        return max(-1.0, amount * 1000 * 1000)  # 1000 * 1000; -1 (unlimited) kept

    return kw.quota_details(
        team.queue_name, requested=(shared + asked, 0, 0),
        deserved=(res.gpu.quota, res.cpu.quota, mib(res.memory.quota)),
        allocated=(shared, 0, 0), allocated_non_preemptible=(0, 0, 0),
        limits=(res.gpu.limit, res.cpu.limit, mib(res.memory.limit)),
        pod_group_requested=(asked, 0, 0), preemptible=True)


def over_limit_run(profile: VclusterKaiProfile, team: TeamSpec) -> ProbeRun:
    message = OVER_LIMIT.format(queue=team.queue_name)
    # On the pod's event and condition KAI puts the job's message, "OverLimit: <text>.", as no
    # node was tried (kai_wire.job_fit_errors_message; default_status_updater.go:357-374).
    said = over_limit_on_pod(team.queue_name)
    host = host_pod(profile, team, "gpu-over-limit", running=False, message=said)
    group = pod_group(host, team.queue_name, [{
        "reason": "OverLimit", "message": message,
        "details": {"queueDetails": over_limit_details(team)}}])
    return ProbeRun("gpu-over-limit", "KAI-06", created=virtual_pod(profile, team,
                                                                    "gpu-over-limit"),
                    host_name=host["metadata"]["name"], host=host, pod_group=group,
                    events=(event(host, "Unschedulable", said),), outcome="pending",
                    waited=6.1, last_seen=f"Pending; KAI: OverLimit: {message}")


def over_capacity_run(profile: VclusterKaiProfile, team: TeamSpec) -> ProbeRun:
    host = host_pod(profile, team, "gpu-over-capacity", running=False, message=NO_CAPACITY)
    group = pod_group(host, team.queue_name, [{
        "reason": "PodSchedulingErrors",
        "message": NOT_FOUND.format(namespace=team.namespace, name=host["metadata"]["name"],
                                    message=NO_CAPACITY)}])
    return ProbeRun("gpu-over-capacity", "KAI-07",
                    created=virtual_pod(profile, team, "gpu-over-capacity"),
                    host_name=host["metadata"]["name"], host=host, pod_group=group,
                    events=(event(host, "Unschedulable", NO_CAPACITY),), outcome="pending",
                    waited=5.4, last_seen=f"Pending; KAI: {NO_CAPACITY}")


def foreign_run(profile: VclusterKaiProfile, team: TeamSpec) -> ProbeRun:
    pod = verify_pod(profile, team, "queue-foreign")
    target = pod["metadata"]["labels"][kr.QUEUE_LABEL]
    host = host_pod(profile, team, "queue-foreign", running=False)
    group = pod_group(host, target)
    return ProbeRun("queue-foreign", "KAI-08", created=virtual_pod(profile, team,
                                                                   "queue-foreign"),
                    host_name=host["metadata"]["name"], host=host, pod_group=group,
                    outcome="grouped", waited=2.0, last_seen=f"PodGroup in queue {target}")


def coredns(team: TeamSpec) -> dict[str, Any]:
    """A pod of the vCluster's CoreDNS Deployment `coredns` in its kube-system: labelled
    `k8s-app: vcluster-kube-dns`, container `coredns` (vCluster v0.35.3 pkg/coredns/template.go:
    168-171, 198-199, 233-234)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "coredns-6f8b9d4c7-x2k9q", "namespace": "kube-system",
                         "uid": uid(f"vc-{team.name}", "coredns"),
                         "labels": {"k8s-app": "vcluster-kube-dns"}},
            "spec": {"nodeName": GPU_NODE, "containers": [{"name": "coredns"}]},
            "status": {"phase": "Running"}}


def rejected_probe(node_port: int) -> str:
    """KAI-08's probe detail when a team's vCluster refuses another team's credentials: the 401
    Status of its API server (vCluster v0.35.3 pkg/server/server.go:385 uses the API server's
    Unauthorized handler: kube_wire.unauthorized) in gpulab's client's words."""
    return (f"list Namespace at https://{NODE_IP}:{node_port}: "
            f"{kube.kube_client_says(kube.unauthorized())}")


def team_state(profile: VclusterKaiProfile, team: TeamSpec) -> TeamState:
    runs = [share_run(profile, team)]
    names = {p["metadata"]["name"] for p in kr.verify_objects(profile, team)}
    if "gpu-over-limit" in names:
        runs.append(over_limit_run(profile, team))
    if "gpu-over-capacity" in names:
        runs.append(over_capacity_run(profile, team))
    if "queue-foreign" in names:
        runs.append(foreign_run(profile, team))
    listed = [coredns(team), *(r.created for r in runs if r.created)]
    probes = tuple(
        CredentialProbe(team.name, other.name, "rejected", rejected_probe(other.api_node_port))
        for other in profile.teams if other.name != team.name)
    return TeamState(
        team=team.name,
        control_plane_pods=(control_plane_pod(team),),
        api_server=f"https://{NODE_IP}:{team.api_node_port}",
        api_version="v1.36.0",
        nodes=tuple(host_nodes(profile)),
        pods=tuple(runs),
        listing=Listing(pods=tuple(listing_pod(p) for p in listed)),
        credential_probes=probes,
        timings={"KAI-01": 0.2, "KAI-02": 0.1, "KAI-04": 34.2, "KAI-05": 34.2, "KAI-06": 6.1,
                 "KAI-07": 5.4, "KAI-08": 2.6},
    )


def queue(name: str, spec: dict[str, Any], status: dict[str, Any] | None = None,
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid("queue", name)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": kr.QUEUE_API, "kind": "Queue", "metadata": meta, "spec": spec,
            "status": dict(status or {})}


@functools.cache
def _default_queue_values() -> dict[str, Any]:
    values = yaml.safe_load((PINNED / "charts" / "kai-scheduler-v0.16.8" / "values.yaml")
                            .read_text(encoding="utf-8"))
    default_queue: dict[str, Any] = values["defaultQueue"]
    return default_queue


def default_queues() -> list[dict[str, Any]]:
    """The two queues KAI's chart creates on install (templates/default-queue.yaml at v0.16.8,
    with the pinned chart's values.yaml `defaultQueue`, which gpulab leaves alone): a parent and
    a child with cpu, gpu and memory resources, `helm.sh/resource-policy: keep`."""
    values = _default_queue_values()
    keep = {"helm.sh/resource-policy": "keep"}

    def resources(which: str) -> dict[str, Any]:
        return {kind: dict(values[which][kind]) for kind in ("cpu", "gpu", "memory")}

    return [queue(values["parentName"], {"resources": resources("parentResources")},
                  annotations=keep),
            queue(values["childName"], {"parentQueue": values["parentName"],
                                        "resources": resources("childResources")},
                  annotations=keep)]


def _team_groups(profile: VclusterKaiProfile, team: TeamSpec) -> list[dict[str, Any]]:
    """The resourcesStatus of the PodGroups in `team`'s queue when the queues are read (every
    GPU pod of verify exists: the share pod runs, the others wait)."""
    groups = []
    for run in team_state(profile, team).pods or ():
        group = run.pod_group or {}
        if (group.get("spec") or {}).get("queue") == team.queue_name:
            groups.append((group.get("status") or {}).get("resourcesStatus") or {})
    return groups


def host_queues(profile: VclusterKaiProfile) -> list[dict[str, Any]]:
    """Every Queue as the API lists them (by name), statuses as KAI's queue-controller sums
    them (kai_wire.queue_status): the teams' from their PodGroups, the org's from the teams, the
    default parent's from the default queue."""
    parent, child = default_queues()
    parent["status"] = kw.queue_status([child], [], [child["metadata"]["name"]])
    teams = [queue(t.queue_name, kr.queue_spec(profile, t),
                   kw.queue_status([], _team_groups(profile, t), [])) for t in profile.teams]
    org = queue(profile.org_queue.name, kr.queue_spec(profile, None),
                kw.queue_status(teams, [], [t.queue_name for t in profile.teams]))
    return sorted([parent, child, org, *teams], key=lambda q: str(q["metadata"]["name"]))


def healthy_state(profile: VclusterKaiProfile) -> KaiLabState:
    return KaiLabState(
        lab=LAB,
        # gpu_users: observed, and nobody else held or asked for a GPU (observe.py _gpu_users).
        host=HostState(gpu_nodes=(host_nodes(profile)[1],), gpu_users=(),
                       queues=tuple(host_queues(profile)),
                       queue_wait="read 4s after every share pod ran"),
        teams={t.name: team_state(profile, t) for t in profile.teams},
        checks=CHECK_IDS,
        observed_at="2026-11-20T10:14:12+00:00",
        seconds=148.7,
        run_id=RUN_ID,
    )


# --------------------------------------------------------------------------- derived states


def team_replace(state: KaiLabState, team: str, **changes: Any) -> KaiLabState:
    teams = dict(state.teams)
    teams[team] = replace(teams[team], **changes)
    return replace(state, teams=teams)


def run_replace(state: KaiLabState, team: str, name: str, **changes: Any) -> KaiLabState:
    st = state.teams[team]
    runs = tuple(replace(r, **changes) if r.name == name else r for r in st.pods or ())
    return team_replace(state, team, pods=runs)


def host_replace(state: KaiLabState, **changes: Any) -> KaiLabState:
    return replace(state, host=replace(state.host, **changes))


def writeup_queues_state(profile: VclusterKaiProfile) -> KaiLabState:
    """The queues exactly as the write-up's create-queues.yaml makes them: gpu only, so cpu and
    memory have no limit (KAI reads it as 0)."""
    queues = []
    for original in host_queues(profile):
        q = copy.deepcopy(original)
        name = q["metadata"]["name"]
        if name == profile.org_queue.name or name in {t.queue_name for t in profile.teams}:
            q["spec"]["resources"] = {"gpu": q["spec"]["resources"]["gpu"]}
        queues.append(q)
    return host_replace(healthy_state(profile), queues=tuple(queues))


def write_recordings(root: Path = RECORDINGS) -> list[Path]:
    from gpulab.stacks import load_profile
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.record import write_recording

    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    return [write_recording(root / "kai-healthy", healthy_state(profile), profile),
            write_recording(root / "kai-writeup-queues", writeup_queues_state(profile), profile)]


if __name__ == "__main__":  # pragma: no cover
    from tests.recordings import sync_examples

    for path in [*write_recordings(), *sync_examples(("vcluster-kai",))]:
        print(path)
