"""KAI-01..KAI-08 and the queue finding: pure functions tested on passing and failing states."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.errors import ExitCode, UsageError
from gpulab.stacks.vcluster_kai.checks import registry
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from gpulab.stacks.vcluster_kai.run import evaluate
from gpulab.verify.report import exit_code
from gpulab.verify.result import CheckResult
from gpulab.verify.state import CredentialProbe, Listing
from tests.vcluster_kai import builders as b
from tests.vcluster_kai.builders import host_replace, run_replace, team_replace

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.state import KaiLabState

NLP, VISION, REC = "team-nlp", "team-vision", "team-recommender"


def verdict(state: KaiLabState, profile: VclusterKaiProfile, check: str, team: str = NLP
            ) -> CheckResult:
    run = next(c for c in registry.CHECKS if c.id == check).run
    return run(state, profile, team)


def _with_team_queue(profile: VclusterKaiProfile, team: int, **gpu: float) -> VclusterKaiProfile:
    data = profile.model_dump(mode="json")
    data["teams"][team]["queue"]["resources"]["gpu"].update(gpu)
    return VclusterKaiProfile.model_validate(data)


def _host(state: KaiLabState, team: str, name: str) -> dict[str, Any]:
    run = state.teams[team].run(name)
    assert run is not None and run.host is not None
    return copy.deepcopy(run.host)


def test_the_healthy_state_passes_everything(healthy: KaiLabState,
                                             kai_profile: VclusterKaiProfile) -> None:
    report = evaluate(healthy, kai_profile)
    assert len(report.results) == 8 * 3
    assert {r.status for r in report.results} == {"pass"}, [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    assert report.ok and exit_code(report) == ExitCode.OK
    [finding] = report.findings
    assert (finding.id, finding.tenant, finding.demonstrated) == ("KAI-F1", NLP, True)
    assert "KAI queued it in team-vision" in finding.evidence
    assert "ValidatingAdmissionPolicy" in finding.advice


def test_every_check_has_a_docs_entry() -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "vcluster-kai.md").read_text()
    for check in registry.CHECKS:
        assert f"### {check.id} {check.title}" in docs
    assert f"### {registry.FINDING_ID}" in docs


# --------------------------------------------------------------------------- KAI-01


def test_api_down_while_the_control_plane_runs_points_at_reachability(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    state = team_replace(healthy, NLP, api_version="", nodes=None, pods=None, listing=None,
                         api_error="get server version at https://172.18.0.2:31443: connection "
                                   "refused")
    result = verdict(state, kai_profile, "KAI-01")
    assert result.status == "fail"
    assert "cannot reach the NodePort on the kind node" in result.reason
    assert "team-nlp-0 Running" in result.evidence
    later = verdict(state, kai_profile, "KAI-02")
    assert later.status == "fail" and "(see KAI-01)" in later.reason


def test_api_down_with_the_control_plane_pending(healthy: KaiLabState,
                                                 kai_profile: VclusterKaiProfile) -> None:
    pod = copy.deepcopy(healthy.teams[NLP].control_plane_pods[0])  # type: ignore[index]
    pod["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "syncer", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    state = team_replace(healthy, NLP, api_version="", api_error="timed out",
                         control_plane_pods=(pod,))
    result = verdict(state, kai_profile, "KAI-01")
    assert result.status == "fail" and "its control plane is not running" in result.reason
    assert "team-nlp-0 Pending (syncer: waiting ContainerCreating)" in result.evidence
    gone = verdict(team_replace(state, NLP, control_plane_pods=()), kai_profile, "KAI-01")
    assert "no pod (is the Helm release installed?" in gone.evidence


def test_api_not_observed_is_an_error(healthy: KaiLabState, kai_profile: VclusterKaiProfile
                                      ) -> None:
    assert verdict(team_replace(healthy, NLP, api_version=""), kai_profile,
                   "KAI-01").status == "error"


# --------------------------------------------------------------------------- KAI-02


def test_gpu_node_not_synced(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    result = verdict(team_replace(healthy, NLP, nodes=()), kai_profile, "KAI-02")
    assert result.status == "fail"
    assert "not the GPU node gpulab-vcluster-kai-worker" in result.reason
    assert "sync.fromHost.nodes" in result.reason


def test_gpu_node_without_gpus(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    bare = [b.node(b.CONTROL_PLANE), b.node(b.GPU_NODE, gpus="0", labels={
        "run.ai/simulated-gpu-node-pool": "default"})]
    state = host_replace(team_replace(healthy, NLP, nodes=tuple(bare)), gpu_nodes=(bare[1],))
    result = verdict(state, kai_profile, "KAI-02")
    assert result.status == "fail"
    assert "fake-gpu-operator does not advertise the pool's 1 GPU(s)" in result.reason
    stale = team_replace(healthy, NLP, nodes=tuple(bare))
    assert "the pool has 1 per node" in verdict(stale, kai_profile, "KAI-02").reason
    unlabelled = [b.node(b.GPU_NODE, gpus="1")]
    missing_label = verdict(team_replace(healthy, NLP, nodes=tuple(unlabelled)), kai_profile,
                            "KAI-02")
    assert "without its pool label" in missing_label.reason


def test_node_list_refused(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    result = verdict(team_replace(healthy, NLP, nodes=None, nodes_error="403 Forbidden"),
                     kai_profile, "KAI-02")
    assert result.status == "fail" and "403 Forbidden" in result.reason


# --------------------------------------------------------------------------- KAI-03


def _queues_with(healthy: KaiLabState, name: str, edit: Any) -> KaiLabState:
    queues = []
    for original in healthy.host.queues or ():
        queue = copy.deepcopy(original)
        if queue["metadata"]["name"] == name:
            edit(queue)
        queues.append(queue)
    return host_replace(healthy, queues=tuple(queues))


def test_an_omitted_limit_fails_with_kais_meaning(healthy: KaiLabState,
                                                  kai_profile: VclusterKaiProfile) -> None:
    state = _queues_with(healthy, NLP, lambda q: q["spec"]["resources"]["gpu"].pop("limit"))
    result = verdict(state, kai_profile, "KAI-03")
    assert result.status == "fail"
    assert ("Queue team-nlp: spec.resources.gpu.limit is missing (KAI reads an omitted limit as "
            "0); the profile says 1") in result.reason
    assert verdict(state, kai_profile, "KAI-03", VISION).status == "pass"


def test_the_write_up_queues_fail_for_cpu_and_memory(kai_profile: VclusterKaiProfile) -> None:
    state = b.writeup_queues_state(kai_profile)
    result = verdict(state, kai_profile, "KAI-03")
    assert result.status == "fail"
    assert "spec.resources.cpu is missing (KAI reads an omitted limit as 0)" in result.reason


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda q: q["spec"].update(parentQueue="default-parent-queue"),
     "spec.parentQueue is 'default-parent-queue', the profile says 'ml-org'"),
    (lambda q: q["spec"]["resources"]["gpu"].update(quota=0.5),
     "spec.resources.gpu.quota is 0.5, the profile says 0.33"),
    (lambda q: q["spec"].update(priority=50), "spec.priority is 50, the profile says 100"),
])
def test_queue_spec_differences(healthy: KaiLabState, kai_profile: VclusterKaiProfile, edit: Any,
                                expected: str) -> None:
    result = verdict(_queues_with(healthy, NLP, edit), kai_profile, "KAI-03")
    assert result.status == "fail" and expected in result.reason


def test_missing_queues(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    queues = tuple(q for q in healthy.host.queues or () if q["metadata"]["name"] != "ml-org")
    result = verdict(host_replace(healthy, queues=queues), kai_profile, "KAI-03")
    assert result.status == "fail" and "Queue ml-org does not exist" in result.reason
    unread = host_replace(healthy, queues=None, queues_error="403 Forbidden")
    assert verdict(unread, kai_profile, "KAI-03").status == "error"


# --------------------------------------------------------------------------- KAI-04


def test_pod_not_synced(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    state = run_replace(healthy, NLP, "gpu-share", host=None, pod_group=None,
                        outcome="not-synced", waited=180)
    result = verdict(state, kai_profile, "KAI-04")
    assert result.status == "fail"
    assert ("the vCluster did not sync gpu-share to the host (no pod vcluster-team-nlp/"
            "gpu-share-x-gpulab-verify-x-team-nlp after 180s)") in result.reason


def test_pod_without_queue_label_lands_in_default_queue(healthy: KaiLabState,
                                                        kai_profile: VclusterKaiProfile) -> None:
    host = _host(healthy, NLP, "gpu-share")
    del host["metadata"]["labels"]["kai.scheduler/queue"]
    group = copy.deepcopy(healthy.teams[NLP].run("gpu-share").pod_group)  # type: ignore[union-attr]
    group["spec"]["queue"] = "default-queue"
    result = verdict(run_replace(healthy, NLP, "gpu-share", host=host, pod_group=group),
                     kai_profile, "KAI-04")
    assert result.status == "fail"
    assert "has no kai.scheduler/queue label: KAI puts it in default-queue" in result.reason
    assert "is in queue default-queue, not team-nlp" in result.reason


def test_pod_without_podgroup_or_with_another_scheduler(healthy: KaiLabState,
                                                        kai_profile: VclusterKaiProfile) -> None:
    result = verdict(run_replace(healthy, NLP, "gpu-share", pod_group=None), kai_profile,
                     "KAI-04")
    assert "KAI's pod-grouper made no PodGroup" in result.reason
    host = _host(healthy, NLP, "gpu-share")
    host["spec"]["schedulerName"] = "default-scheduler"
    host["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    other = verdict(run_replace(healthy, NLP, "gpu-share", host=host), kai_profile, "KAI-04")
    assert "has schedulerName default-scheduler" in other.reason
    assert "has gpu-fraction '0.5', the pod asked '0.33'" in other.reason


def test_pod_create_refused(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    state = run_replace(healthy, NLP, "gpu-share", created=None, host=None,
                        create_error="admission webhook denied", outcome="create-failed")
    result = verdict(state, kai_profile, "KAI-04")
    assert "team-nlp's vCluster API refused gpu-share: admission webhook denied" in result.reason


def test_scenario_unobserved(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    state = team_replace(healthy, NLP, pods=None, scenario_error="namespace still terminating")
    result = verdict(state, kai_profile, "KAI-04")
    assert result.status == "error" and "namespace still terminating" in result.reason


# --------------------------------------------------------------------------- KAI-05


def test_a_pending_share_pod_names_kais_reason(healthy: KaiLabState,
                                               kai_profile: VclusterKaiProfile) -> None:
    team = kai_profile.teams[0]
    over_limit = b.over_limit_run(kai_profile, team).pod_group
    assert over_limit is not None
    reasons = over_limit["status"]["schedulingConditions"][0]["reasons"]
    message = b.over_limit_on_pod(team.queue_name)
    host = b.host_pod(kai_profile, team, "gpu-share", running=False, message=message)
    state = run_replace(healthy, NLP, "gpu-share", host=host,
                        pod_group=b.pod_group(host, team.queue_name, reasons),
                        events=(b.event(host, "Unschedulable", message),), outcome="timeout")
    result = verdict(state, kai_profile, "KAI-05")
    assert result.status == "fail"
    assert result.reason.startswith("KAI keeps gpu-share Pending: OverLimit: team-nlp quota has")
    others = verdict(state, kai_profile, "KAI-05", VISION)
    assert others.status == "fail"
    assert "team-nlp's gpu-share is not Running at the same moment (Pending)" in others.reason


def test_a_bound_share_pod_that_does_not_start(healthy: KaiLabState,
                                               kai_profile: VclusterKaiProfile) -> None:
    host = _host(healthy, NLP, "gpu-share")
    host["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "app", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    result = verdict(run_replace(healthy, NLP, "gpu-share", host=host), kai_profile, "KAI-05")
    assert "bound to gpulab-vcluster-kai-worker but app: waiting ContainerCreating" in result.reason
    assert "GPU reservation pod" in result.reason


def test_queue_allocation_must_show_the_share(healthy: KaiLabState,
                                              kai_profile: VclusterKaiProfile) -> None:
    state = _queues_with(healthy, NLP, lambda q: q["status"].update(allocated={}))
    state = host_replace(state, queue_wait="the allocation did not show within 60s")
    result = verdict(state, kai_profile, "KAI-05")
    assert result.status == "fail"
    assert ("Queue team-nlp shows allocated nvidia.com/gpu none, expected 330m for the running "
            "share pod (the allocation did not show within 60s)") in result.reason
    assert verdict(state, kai_profile, "KAI-05", VISION).status == "pass"
    unread = verdict(host_replace(healthy, queues=None), kai_profile, "KAI-05")
    assert unread.status == "error" and "Running together" in unread.evidence


def test_share_pods_on_different_gpus_or_nodes(healthy: KaiLabState,
                                               kai_profile: VclusterKaiProfile) -> None:
    host = _host(healthy, VISION, "gpu-share")
    host["metadata"]["labels"]["runai-gpu-group"] = "another-gpu"
    result = verdict(run_replace(healthy, VISION, "gpu-share", host=host), kai_profile, "KAI-05")
    assert result.status == "fail" and "on different GPUs" in result.reason
    host["spec"]["nodeName"] = "gpulab-vcluster-kai-worker2"
    nodes = verdict(run_replace(healthy, VISION, "gpu-share", host=host), kai_profile, "KAI-05")
    assert "run on different nodes" in nodes.reason


# --------------------------------------------------------------------------- KAI-06


def test_over_limit_placed_means_the_limit_is_not_enforced(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    host = _host(healthy, NLP, "gpu-over-limit")
    host["spec"]["nodeName"] = b.GPU_NODE
    host["status"] = {"phase": "Running"}
    result = verdict(run_replace(healthy, NLP, "gpu-over-limit", host=host, outcome="scheduled"),
                     kai_profile, "KAI-06")
    assert result.status == "fail"
    assert "KAI placed gpu-over-limit (2 x nvidia.com/gpu) on gpulab-vcluster-kai-worker" in (
        result.reason)
    assert "the limit is not enforced" in result.reason


def test_over_limit_refused_for_another_reason(healthy: KaiLabState,
                                               kai_profile: VclusterKaiProfile) -> None:
    host = b.host_pod(kai_profile, kai_profile.teams[0], "gpu-over-limit", running=False,
                      message=b.NO_CAPACITY)
    state = run_replace(healthy, NLP, "gpu-over-limit", host=host,
                        pod_group=b.pod_group(host, NLP, [{"message": b.NO_CAPACITY}]),
                        events=(b.event(host, "Unschedulable", b.NO_CAPACITY),))
    result = verdict(state, kai_profile, "KAI-06")
    assert result.status == "fail"
    assert "KAI gave another reason than OverLimit" in result.reason
    assert "didn't have enough resources: GPUs" in result.reason


def test_over_limit_of_another_queue_is_not_the_teams_limit(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    """KAI names the queue whose limit it reached (unschedule_info.go:81): the org queue's limit
    does not show that the team queue's works."""
    group = copy.deepcopy(healthy.teams[NLP].run("gpu-over-limit").pod_group)  # type: ignore[union-attr]
    reason = group["status"]["schedulingConditions"][0]["reasons"][0]
    reason["message"] = reason["message"].replace(f"{NLP} quota", "ml-org quota")
    result = verdict(run_replace(healthy, NLP, "gpu-over-limit", pod_group=group), kai_profile,
                     "KAI-06")
    assert result.status == "fail"
    assert "is Pending for queue ml-org's limit, not queue team-nlp's GPU limit 1" in (
        result.reason)


def test_over_capacity_without_a_gpu_shortage(healthy: KaiLabState,
                                              kai_profile: VclusterKaiProfile) -> None:
    group = copy.deepcopy(healthy.teams[NLP].run("gpu-over-capacity").pod_group)  # type: ignore[union-attr]
    group["status"]["schedulingConditions"][0]["reasons"] = [
        {"reason": "PodSchedulingErrors", "message": "Unable to schedule pod"}]
    result = verdict(run_replace(healthy, NLP, "gpu-over-capacity", pod_group=group),
                     kai_profile, "KAI-07")
    assert result.status == "fail"
    assert "names no GPU shortage: PodSchedulingErrors: Unable to schedule pod" in result.reason


def test_over_limit_from_the_event_when_the_podgroup_has_no_code(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    group = copy.deepcopy(healthy.teams[NLP].run("gpu-over-limit").pod_group)  # type: ignore[union-attr]
    group["status"] = {"phase": "Pending"}
    result = verdict(run_replace(healthy, NLP, "gpu-over-limit", pod_group=group), kai_profile,
                     "KAI-06")
    assert result.status == "pass"
    assert "(pod condition; PodGroup" in result.evidence
    assert "carried no code" in result.evidence


def test_over_limit_without_any_reason(healthy: KaiLabState, kai_profile: VclusterKaiProfile
                                       ) -> None:
    host = _host(healthy, NLP, "gpu-over-limit")
    host["status"] = {"phase": "Pending"}
    state = run_replace(healthy, NLP, "gpu-over-limit", host=host, pod_group=None, events=(),
                        outcome="timeout", waited=90, last_seen="Pending; no PodGroup")
    result = verdict(state, kai_profile, "KAI-06")
    assert result.status == "fail" and "pod-grouper made no PodGroup" in result.reason


def test_over_limit_skipped_without_a_limit(healthy: KaiLabState,
                                            kai_profile: VclusterKaiProfile) -> None:
    profile = _with_team_queue(kai_profile, 0, limit=-1)
    result = verdict(healthy, profile, "KAI-06")
    assert result.status == "skip" and "has no GPU limit (-1)" in result.reason


# --------------------------------------------------------------------------- KAI-07


def test_over_capacity_not_created_when_shares_do_not_run(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    why = "because team-vision's gpu-share did not run (timeout): the GPU does not hold every " \
          "team's share"
    state = run_replace(healthy, NLP, "gpu-over-capacity", created=None, host=None,
                        pod_group=None, events=(), outcome="not-created", last_seen=why)
    result = verdict(state, kai_profile, "KAI-07")
    assert result.status == "fail" and result.reason == f"gpu-over-capacity was not created {why}"


def test_over_capacity_placed_is_over_commit(healthy: KaiLabState,
                                             kai_profile: VclusterKaiProfile) -> None:
    host = _host(healthy, NLP, "gpu-over-capacity")
    host["spec"]["nodeName"] = b.GPU_NODE
    result = verdict(run_replace(healthy, NLP, "gpu-over-capacity", host=host), kai_profile,
                     "KAI-07")
    assert result.status == "fail"
    assert "while the share pods held 0.99 of the pool's 1 GPU(s): the GPU is over-committed" in (
        result.reason)


def test_over_capacity_refused_for_the_queue(healthy: KaiLabState,
                                             kai_profile: VclusterKaiProfile) -> None:
    team = kai_profile.teams[0]
    limit = b.over_limit_run(kai_profile, team)
    own = healthy.teams[NLP].run("gpu-over-capacity")
    assert own is not None and own.host is not None and limit.pod_group is not None
    reasons = limit.pod_group["status"]["schedulingConditions"][0]["reasons"]
    state = run_replace(healthy, NLP, "gpu-over-capacity",
                        pod_group=b.pod_group(own.host, team.queue_name, reasons),
                        events=(b.event(own.host, "Unschedulable", reasons[0]["message"]),))
    result = verdict(state, kai_profile, "KAI-07")
    assert result.status == "fail"
    assert result.reason.startswith("KAI refused gpu-over-capacity for its queue, not for the "
                                    "GPU's capacity: OverLimit")


def test_over_capacity_skipped_when_the_limit_cannot_hold_it(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    profile = _with_team_queue(kai_profile, 0, limit=0.5)
    result = verdict(healthy, profile, "KAI-07")
    assert result.status == "skip" and "cannot hold the share pod and a capacity probe" in (
        result.reason)


# --------------------------------------------------------------------------- KAI-08, finding


def test_another_teams_pod_in_the_listing(healthy: KaiLabState,
                                          kai_profile: VclusterKaiProfile) -> None:
    leaked = healthy.teams[VISION].listing.pods[-1]  # type: ignore[union-attr]
    listing = Listing(pods=(*healthy.teams[NLP].listing.pods, leaked))  # type: ignore[union-attr]
    result = verdict(team_replace(healthy, NLP, listing=listing), kai_profile, "KAI-08")
    assert result.status == "fail"
    assert "lists pod gpulab-verify/gpu-over-capacity labelled gpulab.dev/tenant=team-vision" in (
        result.reason)
    by_uid = copy.deepcopy(leaked)
    del by_uid["metadata"]["labels"]["gpulab.dev/tenant"]
    listing = Listing(pods=(*healthy.teams[NLP].listing.pods, by_uid))  # type: ignore[union-attr]
    result = verdict(team_replace(healthy, NLP, listing=listing), kai_profile, "KAI-08")
    assert "of team-vision (same uid)" in result.reason


@pytest.mark.parametrize(("outcome", "status", "expected"), [
    ("accepted", "fail", "team-vision's vCluster accepted team-nlp's credentials"),
    ("forbidden", "fail", "authenticated team-nlp's credentials and only RBAC refused them"),
    ("error", "error", "could not present team-nlp's credentials to team-vision's vCluster"),
])
def test_credential_probes(healthy: KaiLabState, kai_profile: VclusterKaiProfile, outcome: str,
                           status: str, expected: str) -> None:
    probes = tuple(replace(p, outcome=outcome) if p.server_of == VISION else p  # type: ignore[arg-type]
                   for p in healthy.teams[NLP].credential_probes or ())
    result = verdict(team_replace(healthy, NLP, credential_probes=probes), kai_profile, "KAI-08")
    assert result.status == status and expected in result.reason


def test_isolation_unobserved_or_refused(healthy: KaiLabState,
                                         kai_profile: VclusterKaiProfile) -> None:
    assert verdict(team_replace(healthy, NLP, listing=None), kai_profile,
                   "KAI-08").status == "error"
    refused = verdict(team_replace(healthy, NLP, listing=Listing(error="401 Unauthorized")),
                      kai_profile, "KAI-08")
    assert refused.status == "fail" and "refused to list pods" in refused.reason
    no_probes = verdict(team_replace(healthy, NLP, credential_probes=None), kai_profile, "KAI-08")
    assert no_probes.status == "error" and "were not presented" in no_probes.reason
    probe = CredentialProbe(NLP, VISION, "rejected", "x")
    assert probe.outcome == "rejected"


def test_the_finding_becomes_a_note_when_the_host_enforces_queues(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    group = copy.deepcopy(healthy.teams[NLP].run("queue-foreign").pod_group)  # type: ignore[union-attr]
    group["spec"]["queue"] = NLP
    report = evaluate(run_replace(healthy, NLP, "queue-foreign", pod_group=group), kai_profile)
    assert report.findings == ()
    assert any("the queue-label gap is closed on this lab" in n for n in report.notes)


def test_the_finding_is_shown_as_not_demonstrated_when_the_probe_failed(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    state = run_replace(healthy, NLP, "queue-foreign", host=None, pod_group=None,
                        outcome="not-synced", last_seen="not on the host yet")
    [finding] = evaluate(state, kai_profile).findings
    assert not finding.demonstrated
    assert "verify could not show it here (not on the host yet)" in finding.evidence
    assert finding.detail.startswith("(not demonstrated) ")


def test_the_finding_rests_on_the_probes_own_podgroup(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    """A PodGroup of an earlier run in the target queue does not demonstrate the gap."""
    group = copy.deepcopy(healthy.teams[NLP].run("queue-foreign").pod_group)  # type: ignore[union-attr]
    group["metadata"]["labels"]["gpulab.dev/run"] = "0123456789ab"
    [finding] = evaluate(run_replace(healthy, NLP, "queue-foreign", pod_group=group),
                         kai_profile).findings
    assert not finding.demonstrated
    assert "belongs to another verify run" in finding.evidence


def test_the_finding_needs_kai_08(healthy: KaiLabState, kai_profile: VclusterKaiProfile) -> None:
    assert evaluate(healthy, kai_profile, ["KAI-05"]).findings == ()


# --------------------------------------------------------------------------- evaluate


def test_unobserved_checks_and_crashes_are_errors(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile,
        monkeypatch: pytest.MonkeyPatch) -> None:
    partial = replace(healthy, checks=("KAI-01",))
    report = evaluate(partial, kai_profile, ["KAI-01", "KAI-02"])
    assert [r.status for r in report.results] == ["pass"] * 3 + ["error"] * 3
    assert "KAI-02 was not observed in this run or recording (observed: KAI-01)" in (
        report.results[3].reason)

    def boom(*_args: object) -> CheckResult:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(registry, "CHECKS", tuple(
        replace(c, run=boom) if c.id == "KAI-02" else c for c in registry.CHECKS))
    crashed = evaluate(healthy, kai_profile, ["KAI-02"])
    assert {r.status for r in crashed.results} == {"error"}
    assert "internal error in KAI-02: ZeroDivisionError: oops" in crashed.results[0].reason


def test_internal_error_and_unknown_team(healthy: KaiLabState,
                                         kai_profile: VclusterKaiProfile) -> None:
    state = team_replace(healthy, NLP, internal_error="observing: KeyError: 'x'")
    assert verdict(state, kai_profile, "KAI-01").reason == (
        "verify failed while observing team-nlp: observing: KeyError: 'x'")
    teams = {k: v for k, v in healthy.teams.items() if k != REC}
    assert verdict(replace(healthy, teams=teams), kai_profile, "KAI-01", REC).status == "error"


def test_parse_tc_and_selection() -> None:
    assert registry.parse_tc("5, kai-06") == ("KAI-05", "KAI-06")
    assert registry.parse_tc(None) is None
    with pytest.raises(UsageError, match="unknown check"):
        registry.parse_tc("TC-05")
    assert registry.pods_needed(registry.select(["KAI-07"])) == {"gpu-share",
                                                                 "gpu-over-capacity"}
    assert registry.pods_needed(registry.select(["KAI-01", "KAI-03"])) == frozenset()


def test_cleanup_problems_become_notes(healthy: KaiLabState,
                                       kai_profile: VclusterKaiProfile) -> None:
    report = evaluate(team_replace(healthy, VISION, cleanup_error="could not delete"),
                      kai_profile)
    assert report.ok and "team-vision: could not delete" in report.notes
