"""The adversarial corpus for vcluster-kai: the checked-in healthy recording broken one fact at a
time. Each variant must fail exactly the checks (and teams) that read that fact, with a reason
naming it; reordered lists still pass; missing evidence is `error`, never `pass`. Judged through
the recording format, as `verify --replay` would."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gpulab.stacks.vcluster_kai.record import read_recording
from gpulab.stacks.vcluster_kai.run import evaluate
from gpulab.verify.result import LOOKS_FURTHER
from tests.recordings import listed_under_another_name, member_states, read_edited

RECORDING = Path(__file__).parents[1] / "data" / "recordings" / "kai-healthy"
TEAM = "team-vision"
TEAMS = ("team-nlp", "team-vision", "team-recommender")


def _judge(edit: Any, manifest: Any = None) -> list[tuple[str, str, str, str]]:
    states = member_states(RECORDING)
    edit(states[TEAM], states["team-nlp"])  # an edit may change the other team's state too
    recording = read_edited(RECORDING, read_recording, states, manifest)
    report = evaluate(recording.state, recording.profile())
    return [(r.id, r.tenant, r.status, r.reason) for r in report.results if r.status != "pass"]


def _run(st: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in st["pods"] if r["name"] == name)


def _host(st: dict[str, Any], name: str) -> dict[str, Any]:
    host: dict[str, Any] = _run(st, name)["host"]
    return host


def _host_meta(name: str, key: str, change: dict[str, Any]) -> Any:
    """An edit of the share pod's host copy: metadata[key] updated with `change` (a value None
    removes the entry)."""
    def edit(st: dict[str, Any], _other: dict[str, Any]) -> None:
        meta = _host(st, name)["metadata"]
        target = meta if key == "" else meta.setdefault(key, {})
        for k, v in change.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v
    return edit


def _created_pod_listed_under_another_name(st: dict[str, Any], other: dict[str, Any]) -> None:
    """team-vision lists a pod only the uid of team-nlp's created virtual pod gives away: team-nlp
    no longer lists it, and the name and labels differ."""
    listed_under_another_name(st, other, _run(other, "gpu-share")["created"]["metadata"]["uid"])


def _gpu_node(st: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in st["nodes"] if n["metadata"]["name"].endswith("-worker"))


def _pending(st: dict[str, Any]) -> None:
    host = _host(st, "gpu-share")
    host["status"] = {"phase": "Pending"}
    host["spec"].pop("nodeName")


def _crash(st: dict[str, Any]) -> None:
    _host(st, "gpu-share")["status"]["containerStatuses"] = [
        {"name": "app", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]


def _only_foreign_reasons(name: str) -> Any:
    def edit(st: dict[str, Any], _other: dict[str, Any]) -> None:
        run = _run(st, name)
        run["pod_group"] = None
        run["host"]["status"].pop("conditions", None)
        for event in run["events"]:
            event["involvedObject"]["uid"] = "a-pod-of-an-earlier-run"
    return edit


def _group_of_another_pod(st: dict[str, Any], _other: dict[str, Any]) -> None:
    """gpu-share's PodGroup read is gpu-over-limit's (this run's, same queue): not the one the
    share pod's `pod-group-name` annotation names (KAI v0.16.8 pod_controller.go:179-206)."""
    _run(st, "gpu-share")["pod_group"] = copy.deepcopy(_run(st, "gpu-over-limit")["pod_group"])


def _group_of_an_earlier_run(name: str) -> Any:
    """`name`'s PodGroup read is the one KAI made for a same-named pod of an earlier verify run:
    named after that pod's uid, owned by it, with its labels (default_grouper.go:69-80,94-96,
    119-132)."""
    def edit(st: dict[str, Any], _other: dict[str, Any]) -> None:
        run = _run(st, name)
        meta = run["pod_group"]["metadata"]
        earlier = "host-of-an-earlier-run"
        meta["name"] = f"pg-{run['host']['metadata']['name']}-{earlier}"
        meta["uid"] = "pg-of-an-earlier-run"
        meta["labels"]["gpulab.dev/run"] = "0123456789ab"
        meta["ownerReferences"][0]["uid"] = earlier
    return edit


def _in_queue(name: str, queue: str) -> Any:
    """`name`'s PodGroup in `queue` (KAI accounts the pod there): KAI's reasons name that queue,
    as KAI writes them for it (unschedule_info.go:81)."""
    def quota(message: str) -> str:
        return message.replace(f"{TEAM} quota", f"{queue} quota")

    def edit(st: dict[str, Any], _other: dict[str, Any]) -> None:
        run = _run(st, name)
        run["pod_group"]["spec"]["queue"] = queue
        for cond in run["pod_group"]["status"].get("schedulingConditions", []):
            for reason in cond["reasons"]:
                reason["message"] = quota(reason["message"])
                if "details" in reason:
                    reason["details"]["queueDetails"]["name"] = queue
        for cond in run["host"]["status"].get("conditions", []):
            if "message" in cond:
                cond["message"] = quota(cond["message"])
        for event in run["events"]:
            event["message"] = quota(event["message"])
    return edit


def _refused_on_a_node(why: str) -> Any:
    """KAI's refusal of gpu-over-capacity when the worker had room on its GPU but was refused
    for `why` (a predicate runs only once a node's GPUs fit, framework/session.go:226-256), and
    the control plane, without GPUs, for its GPUs (pod_errors.go:101,219-245)."""
    message = ("no nodes with enough resources were found: " + why
               + ". \n1 node(s) didn't have enough resources: GPUs.")

    def edit(st: dict[str, Any], _other: dict[str, Any]) -> None:
        run = _run(st, "gpu-over-capacity")
        host = run["host"]["metadata"]
        run["pod_group"]["status"]["schedulingConditions"][0]["reasons"] = [{
            "reason": "PodSchedulingErrors",
            "message": f"Resources were not found for pod {host['namespace']}/{host['name']} "
                       f"due to: {message}"}]
        run["host"]["status"]["conditions"][0]["message"] = message
        for event in run["events"]:
            event["message"] = message
    return edit


def _listing_after_cleanup(st: dict[str, Any], _other: dict[str, Any]) -> None:
    """team-vision's pods listed once verify had deleted its pods: only the system's are left."""
    st["listing"]["pods"] = [p for p in st["listing"]["pods"]
                             if p["metadata"]["namespace"] != "gpulab-verify"]


ALL = set(TEAMS)
# (name, edit, {(check, team)} that must fail, a phrase the reason must hold)
BROKEN: list[tuple[str, Any, set[tuple[str, str]], str]] = [
    ("GPU node not synced",
     lambda st, _o: st.update(nodes=[n for n in st["nodes"]
                                     if not n["metadata"]["name"].endswith("-worker")]),
     {("KAI-02", TEAM)}, "but not the GPU node"),
    ("GPU node without GPUs",
     lambda st, _o: _gpu_node(st)["status"]["allocatable"].pop("nvidia.com/gpu"),
     {("KAI-02", TEAM)}, "has nvidia.com/gpu 0"),
    ("another scheduler", lambda st, _o: _host(st, "gpu-share")["spec"].update(
        schedulerName="default-scheduler"), {("KAI-04", TEAM)}, "schedulerName default-scheduler"),
    ("queue label dropped",
     lambda st, _o: _host(st, "gpu-share")["metadata"]["labels"].pop("kai.scheduler/queue"),
     {("KAI-04", TEAM)}, "no kai.scheduler/queue label"),
    ("gpu-fraction changed",
     lambda st, _o: _host(st, "gpu-share")["metadata"]["annotations"].update(
         {"gpu-fraction": "0.9"}), {("KAI-04", TEAM)}, "gpu-fraction '0.9'"),
    ("no PodGroup", lambda st, _o: _run(st, "gpu-share").update(pod_group=None),
     {("KAI-04", TEAM)}, "made no PodGroup"),
    ("share pod pending", lambda st, _o: _pending(st),
     {("KAI-05", t) for t in TEAMS}, "gpu-share is Pending"),
    ("share pod crash-looping", lambda st, _o: _crash(st),
     {("KAI-05", t) for t in TEAMS}, "CrashLoopBackOff"),
    ("over-limit reason only from another pod's events", _only_foreign_reasons("gpu-over-limit"),
     {("KAI-06", TEAM)}, "gpu-over-limit is Pending"),
    ("over-capacity reason only from another pod's events",
     _only_foreign_reasons("gpu-over-capacity"), {("KAI-07", TEAM)}, "gpu-over-capacity is Pending"),
    ("another team's pod listed",
     lambda st, other: st["listing"]["pods"].append(other["listing"]["pods"][-1]),
     {("KAI-08", TEAM), ("KAI-08", "team-nlp")}, "labelled gpulab.dev/tenant=team-nlp"),
    # The host pod read is not the copy of the pod this verify created (namespace, vCluster's
    # name/namespace/uid annotations, verify's labels).
    ("share pod read from another namespace",
     _host_meta("gpu-share", "", {"namespace": "vcluster-team-nlp"}),
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "outside vcluster-team-vision"),
    ("host pod copied from another virtual pod",
     _host_meta("gpu-share", "annotations", {"vcluster.loft.sh/name": "my-notebook"}),
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "is the copy of gpulab-verify/my-notebook"),
    ("same-named pod verify did not create",
     _host_meta("gpu-share", "labels", {"gpulab.dev/check": None}),
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "lacks verify's label gpulab.dev/check=KAI-05"),
    ("pod of an earlier verify run",
     _host_meta("gpu-share", "labels", {"gpulab.dev/run": "0123456789ab"}),
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "belongs to another verify run"),
    ("over-limit pod of an earlier verify run",
     _host_meta("gpu-over-limit", "labels", {"gpulab.dev/run": "0123456789ab"}),
     {("KAI-06", TEAM)}, "belongs to another verify run"),
    ("over-capacity pod of an earlier verify run",
     _host_meta("gpu-over-capacity", "labels", {"gpulab.dev/run": "0123456789ab"}),
     {("KAI-07", TEAM)}, "belongs to another verify run"),
    # team-nlp no longer lists its pod (only the created uid gives it away): its own listing
    # then lacks its verify pod, which KAI-08 fails for team-nlp too.
    ("a pod team-nlp's verify created, listed under another name",
     _created_pod_listed_under_another_name,
     {("KAI-08", TEAM), ("KAI-08", "team-nlp")}, "lists pod default/renamed of team-nlp"),
    ("pod re-created while verify waited",
     _host_meta("gpu-over-limit", "annotations", {"vcluster.loft.sh/uid": "someone-elses"}),
     {("KAI-06", TEAM)}, "is the copy of virtual pod uid someone-elses"),
    # The PodGroup read is not the pod's own, or not this run's (KAI names it after the pod's
    # uid, in the pod's annotation, owns it by the pod and copies the pod's labels).
    ("share pod's PodGroup not the one its annotation names", _group_of_another_pod,
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "is not the one its host pod"),
    ("over-limit PodGroup the pod's annotation does not name",
     lambda st, _o: _run(st, "gpu-over-limit")["pod_group"]["metadata"].update(
         name="pg-someone-elses-workload"), {("KAI-06", TEAM)}, "is not the one its host pod"),
    ("over-limit PodGroup of an earlier run", _group_of_an_earlier_run("gpu-over-limit"),
     {("KAI-06", TEAM)}, "belongs to another verify run"),
    ("over-capacity PodGroup owned by another pod",
     lambda st, _o: _run(st, "gpu-over-capacity")["pod_group"]["metadata"][
         "ownerReferences"][0].update(uid="an-earlier-pod"), {("KAI-07", TEAM)},
     "is owned by uid an-earlier-pod"),
    # The pod is accounted in another team's queue.
    ("share pod accounted in another team's queue", _in_queue("gpu-share", "team-nlp"),
     {("KAI-04", TEAM), ("KAI-05", TEAM)}, "is in queue team-nlp, not team-vision"),
    ("over-limit pod accounted in another team's queue", _in_queue("gpu-over-limit", "team-nlp"),
     {("KAI-06", TEAM)}, "is in queue team-nlp, not team-vision"),
    ("over-capacity pod accounted in another team's queue",
     _in_queue("gpu-over-capacity", "team-nlp"), {("KAI-07", TEAM)},
     "is in queue team-nlp, not team-vision"),
    # KAI refused the probe on the GPU node for something else than its GPU.
    ("capacity refusal for a node under disk pressure",
     _refused_on_a_node("1 node has DiskPressure condition"), {("KAI-07", TEAM)},
     "1 node has DiskPressure condition"),
    ("capacity refusal for the disk-pressure taint",
     _refused_on_a_node("1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }"),
     {("KAI-07", TEAM)}, "untolerated taint {node.kubernetes.io/disk-pressure: }"),
    ("listing taken after the cleanup", _listing_after_cleanup, {("KAI-08", TEAM)},
     "lacks its own verify pods of this run"),
    ("another vCluster accepts the credentials",
     lambda st, _o: st["credential_probes"][0].update(outcome="accepted", detail="200 OK"),
     {("KAI-08", TEAM)}, "accepted team-vision's credentials"),
]


@pytest.mark.parametrize(("name", "edit", "failing", "phrase"), BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_each_broken_fact_fails_exactly_its_checks(
        name: str, edit: Any, failing: set[tuple[str, str]], phrase: str) -> None:
    results = _judge(edit)
    assert {(check, team) for check, team, _s, _r in results} == failing, results
    assert any(phrase in reason for _c, _t, _s, reason in results), results


def _reorder(st: dict[str, Any], _other: dict[str, Any]) -> None:
    for key in ("nodes", "pods", "credential_probes"):
        st[key].reverse()
    for run in st["pods"]:
        run["events"].reverse()
    st["listing"]["pods"].reverse()


def _unrelated_pod(st: dict[str, Any], _other: dict[str, Any]) -> None:
    st["listing"]["pods"].append({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "notebook", "namespace": "default", "uid": "u-notebook",
        "labels": {"gpulab.dev/tenant": TEAM}}})
    st["nodes"].append({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "cpu-only", "uid": "u-cpu-only", "labels": {}}, "status": {}})


def _unrelated_event(st: dict[str, Any], _other: dict[str, Any]) -> None:
    run = _run(st, "gpu-share")
    event = copy.deepcopy(run["events"][0])
    event["involvedObject"]["uid"] = "an-earlier-run"
    event.update(reason="Unschedulable", type="Warning",
                 message="team-vision quota has reached the allowable limit of GPUs")
    run["events"].append(event)


def _lived_in(st: dict[str, Any], _other: dict[str, Any]) -> None:
    """A team's vCluster after use, listed as the API lists (nodes by name, pods by namespace
    and name): a CPU node that sorts before the GPU node, and in `default` a Job pod that ran on
    a GPU share and completed and one that failed (KAI's podgroup-controller counts neither,
    metadata/pod.go:28-35 at v0.16.8)."""
    st["nodes"].append({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "cpu-0", "uid": "u-cpu-0", "labels": {}}, "status": {}})
    st["nodes"].sort(key=lambda n: n["metadata"]["name"])
    for name, phase in (("train-b7kq2", "Succeeded"), ("train-x5wzd", "Failed")):
        st["listing"]["pods"].append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "default", "uid": f"u-{name}",
            "labels": {"job-name": "train", "kai.scheduler/queue": TEAM},
            "annotations": {"gpu-fraction": "0.33"}},
            "spec": {"nodeName": "gpulab-vcluster-kai-worker", "schedulerName": "kai-scheduler"},
            "status": {"phase": phase}})
    st["listing"]["pods"].sort(key=lambda p: (p["metadata"].get("namespace", ""),
                                              p["metadata"]["name"]))


def _extra_queue(manifest: dict[str, Any]) -> None:
    queue = copy.deepcopy(_queue(manifest, TEAM))
    queue["metadata"].update(name="research", uid="u-research")
    manifest["host"]["queues"].append(queue)


@pytest.mark.parametrize(("edit", "manifest"), [
    (_reorder, None), (_unrelated_pod, None), (_unrelated_event, None),
    (lambda _st, _o: None, _extra_queue), (_lived_in, None),
], ids=["reordered lists", "unrelated pod and node", "event of an earlier pod",
        "another queue on the host", "lived-in team, lists in the API's order"])
def test_healthy_variants_still_pass(edit: Any, manifest: Any) -> None:
    assert _judge(edit, manifest) == []


MISSING = [
    ("api_version", {"KAI-01"}),
    ("nodes", {"KAI-02"}),
    ("pods", {"KAI-04", "KAI-05", "KAI-06", "KAI-07"}),
    ("listing", {"KAI-08"}),
    ("credential_probes", {"KAI-08"}),
]


@pytest.mark.parametrize(("key", "erroring"), MISSING, ids=[m[0] for m in MISSING])
def test_missing_evidence_is_an_error_never_a_pass(key: str, erroring: set[str]) -> None:
    results = _judge(lambda st, _o: st.pop(key))
    mine = {(check, status) for check, team, status, _r in results if team == TEAM}
    assert mine == {(check, "error") for check in erroring}, results
    assert all("in this run or recording" in r for _c, t, _s, r in results if t == TEAM), results


# A read that failed: the error is recorded in place of the evidence; (name, fields, verdicts).
READ_FAILED: list[tuple[str, dict[str, Any], dict[str, str], str]] = [
    ("vCluster API down",  # what a live run records: the error, nothing read through the API
     {"api_version": "", "api_error": "connection refused", "nodes": None, "pods": None,
      "listing": None, "credential_probes": None},
     {f"KAI-0{i}": "fail" for i in (1, 2, 4, 5, 6, 7, 8)}, "connection refused"),
    ("vCluster API down, its control-plane pods unreadable",
     {"control_plane_pods": None, "host_error": "403 Forbidden", "api_version": "",
      "api_error": "connection refused", "nodes": None, "pods": None, "listing": None,
      "credential_probes": None},
     {f"KAI-0{i}": "fail" for i in (1, 2, 4, 5, 6, 7, 8)}, "connection refused"),
    ("node list refused", {"nodes": None, "nodes_error": "403 Forbidden"}, {"KAI-02": "fail"},
     "403 Forbidden"),
    ("verify namespace not prepared",
     {"pods": None, "scenario_error": "could not prepare namespace gpulab-verify: 403"},
     {"KAI-04": "error", "KAI-05": "error", "KAI-06": "error", "KAI-07": "error"},
     "could not prepare namespace gpulab-verify"),
]


@pytest.mark.parametrize(("name", "fields", "verdicts", "phrase"), READ_FAILED,
                         ids=[r[0] for r in READ_FAILED])
def test_a_failed_read_is_reported_with_its_error(name: str, fields: dict[str, Any],
                                                  verdicts: dict[str, str], phrase: str) -> None:
    results = [r for r in _judge(lambda st, _o: st.update(fields)) if r[1] == TEAM]
    assert {check: status for check, _t, status, _r in results} == verdicts, results
    assert all(phrase in reason for _c, _t, _s, reason in results), results


def _second_gpu_node(manifest: dict[str, Any]) -> None:
    node = copy.deepcopy(manifest["host"]["gpu_nodes"][0])
    node["metadata"].update(name="gpulab-vcluster-kai-worker2", uid="u-worker2")
    manifest["host"]["gpu_nodes"].append(node)


def _queue(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    return next(q for q in manifest["host"]["queues"] if q["metadata"]["name"] == name)


# The host's observation lives in the manifest: (name, manifest edit, failing, phrase).
BROKEN_HOST: list[tuple[str, Any, set[tuple[str, str]], str]] = [
    ("team queue deleted",
     lambda m: m["host"]["queues"].remove(_queue(m, TEAM)),
     {("KAI-03", TEAM), ("KAI-05", TEAM)}, "Queue team-vision does not exist"),
    ("team queue moved under another parent",
     lambda m: _queue(m, TEAM)["spec"].update(parentQueue="default-queue"),
     {("KAI-03", TEAM)}, "parentQueue"),
    ("team queue GPU limit raised",
     lambda m: _queue(m, TEAM)["spec"]["resources"]["gpu"].update(limit=4),
     {("KAI-03", TEAM)}, "limit"),
    ("host pool has a GPU node the vCluster does not list", _second_gpu_node,
     {("KAI-02", t) for t in TEAMS}, "but not the GPU node gpulab-vcluster-kai-worker2"),
    ("org queue under another parent",
     lambda m: _queue(m, "ml-org")["spec"].update(parentQueue="default-parent-queue"),
     {("KAI-03", t) for t in TEAMS}, "Queue ml-org: spec.parentQueue is 'default-parent-queue'"),
    ("host lost the GPU, the vClusters' node copies stale",
     lambda m: [n["status"][key].update({"nvidia.com/gpu": "0"})
                for n in m["host"]["gpu_nodes"] for key in ("allocatable", "capacity")],
     {("KAI-02", t) for t in TEAMS}, "its copy is stale"),
    ("org queue quota changed",
     lambda m: _queue(m, "ml-org")["spec"]["resources"]["gpu"].update(quota=2),
     {("KAI-03", t) for t in TEAMS}, "Queue ml-org"),
]


@pytest.mark.parametrize(("name", "edit", "failing", "phrase"), BROKEN_HOST,
                         ids=[b[0] for b in BROKEN_HOST])
def test_each_broken_host_fact_fails_exactly_its_checks(
        name: str, edit: Any, failing: set[tuple[str, str]], phrase: str) -> None:
    results = _judge(lambda _st, _o: None, edit)
    assert {(check, team) for check, team, _s, _r in results} == failing, results
    assert all(phrase in reason for _c, _t, _s, reason in results), results


# (name, manifest edit, checks that are `error` for every team, phrase)
HOST_MISSING: list[tuple[str, Any, str, str]] = [
    # KAI-05 reads the queues' allocation too.
    ("queues not observed", lambda m: m["host"].update(queues=None), "KAI-03 KAI-05",
     "not observed"),
    ("queues unreadable", lambda m: m["host"].update(queues=None, queues_error="403 Forbidden"),
     "KAI-03 KAI-05", "403 Forbidden"),
    ("GPU in use before verify",
     lambda m: m["host"].update(gpu_users=[{"metadata": {"name": "train", "namespace": "ml"}}]),
     "KAI-04 KAI-05 KAI-06 KAI-07", "the GPU was in use"),
    ("GPU users unreadable",
     lambda m: m["host"].update(gpu_users=None, gpu_users_error="timeout"),
     "KAI-04 KAI-05 KAI-06 KAI-07", "could not tell whether the GPU was idle"),
    # The vClusters' node copies are only as good as the host's nodes they are synced from.
    ("host GPU nodes not observed", lambda m: m["host"].update(gpu_nodes=None), "KAI-02",
     "the host's GPU nodes were not observed"),
    ("host GPU nodes unreadable",
     lambda m: m["host"].update(gpu_nodes=None, nodes_error="403 Forbidden"), "KAI-02",
     "the host's GPU nodes could not be read: 403 Forbidden"),
]


@pytest.mark.parametrize(("name", "edit", "erroring", "phrase"), HOST_MISSING,
                         ids=[h[0] for h in HOST_MISSING])
def test_missing_host_evidence_is_an_error_never_a_pass(name: str, edit: Any, erroring: str,
                                                        phrase: str) -> None:
    results = _judge(lambda _st, _o: None, edit)
    assert {(check, team, status) for check, team, status, _r in results} == {
        (check, team, "error") for check in erroring.split() for team in TEAMS}, results
    assert all(phrase in reason for _c, _t, _s, reason in results), results


def test_the_corpus_covers_every_check() -> None:
    covered = {check for _n, _e, failing, _p in BROKEN + BROKEN_HOST for check, _t in failing}
    covered |= {check for _n, _f, verdicts, _p in READ_FAILED for check in verdicts}
    assert covered == {f"KAI-0{i}" for i in range(1, 9)}


@pytest.mark.parametrize(("name", "edit", "manifest"),
                         [(b[0], b[1], None) for b in BROKEN]
                         + [(b[0], lambda _st, _o: None, b[1]) for b in BROKEN_HOST],
                         ids=[b[0] for b in BROKEN + BROKEN_HOST])
def test_every_failure_says_where_to_look_further(name: str, edit: Any, manifest: Any) -> None:
    for check, _team, status, reason in _judge(edit, manifest):
        if status == "fail":
            assert LOOKS_FURTHER.search(reason), f"{name}: {check} gives no command: {reason}"


def test_the_next_step_names_the_teams_host_namespace() -> None:
    row = next(b for b in BROKEN if b[0] == "queue label dropped")
    (reason,) = [r for c, t, _s, r in _judge(row[1]) if (c, t) == ("KAI-04", TEAM)]
    assert reason.endswith(
        '; to look further: gpulab verify --name vcluster-kai --tc KAI-04 --keep, then kubectl '
        '--kubeconfig "$(gpulab kubeconfig management --name vcluster-kai)" -n '
        'vcluster-team-vision get pods,podgroups.scheduling.run.ai -o yaml')
