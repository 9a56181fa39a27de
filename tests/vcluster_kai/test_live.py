"""The live path of the vcluster-kai verify (observe → evaluate) against in-memory API servers
where the test plays vCluster's syncer and KAI (tests/vcluster_kai/live_fakes.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.errors import AdapterError
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.observe import KaiGateways, Timeouts
from gpulab.stacks.vcluster_kai.record import read_recording, write_recording
from gpulab.stacks.vcluster_kai.run import evaluate, run_verify
from gpulab.verify.observe import Clock
from gpulab.verify.report import table_rows
from tests.vcluster_kai import builders as b
from tests.vcluster_kai.live_fakes import KaiLab, kai_lab, verify_namespace_left

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.verify.report import VerifyReport

TIMEOUTS = Timeouts(running=30, refused=20, grouped=10, allocated=10, cleanup=10, interval=1)
NLP, VISION, REC = "team-nlp", "team-vision", "team-recommender"


def _run(lab: KaiLab, profile: VclusterKaiProfile, **kwargs: Any) -> VerifyReport:
    kwargs.setdefault("timeouts", TIMEOUTS)
    return run_verify(profile, b.LAB, KaiGateways(lab.host, lab.team, lab.cross),
                      clock=Clock(lab.clock.now, lab.clock.sleep), **kwargs)


def _status(report: VerifyReport) -> dict[tuple[str, str], str]:
    return {(r.id, r.tenant): r.status for r in report.results}


def test_healthy_lab_passes_everything_shows_the_finding_and_cleans_up(
        kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    seen: list[tuple[str, str]] = []
    report = _run(lab, kai_profile, progress=lambda t, m: seen.append((t, m)))
    assert set(_status(report).values()) == {"pass"}, [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    assert len(report.results) == 24
    [finding] = report.findings
    assert finding.demonstrated and finding.tenant == NLP
    assert report.ok
    for team in kai_profile.member_names():
        assert verify_namespace_left(lab, team) == []
        created = [c[2] for c in lab.teams[team].calls if c[:2] == ("apply", "Pod")]
        expected = ["gpu-share", "gpu-over-limit", "gpu-over-capacity"]
        assert created == ([*expected, "queue-foreign"] if team == NLP else expected)
        st = report.state.teams[team]  # type: ignore[attr-defined]
        share = st.run("gpu-share")
        assert share.outcome == "running" and share.host["metadata"]["name"] == (
            f"gpu-share-x-gpulab-verify-x-{team}")
        assert "managedFields" not in share.created["metadata"]
        assert st.cleanup_error == ""
    queues = {q["metadata"]["name"]: q for q in report.state.host.queues}  # type: ignore[attr-defined]
    assert queues[NLP]["status"]["allocated"]["nvidia.com/gpu"] == "330m"
    assert queues["ml-org"]["status"]["allocated"]["nvidia.com/gpu"] == "990m"
    assert {t for t, _ in seen} == set(kai_profile.member_names())
    rows = table_rows(report)
    assert rows[-1][:3] == ("KAI-F1 queue label not enforced", NLP, "FINDING")


def test_a_pool_of_several_nodes_is_asked_more_than_any_node_has(
        kai_profile: VclusterKaiProfile) -> None:
    # two GPU workers of one GPU each, the teams' limits lifted: the share pods fill part of one
    # GPU, so gpu-over-capacity asks one GPU more than a node has and KAI's MaxNodePoolResources
    # pre-filter turns it away (kai_wire; maxNodeResources.go:78-81 at v0.16.8)
    data = kai_profile.model_dump(mode="json")
    data["gpu_pool"]["nodes"] = 2
    for team in data["teams"]:
        team["queue"]["resources"]["gpu"]["limit"] = -1
    profile = type(kai_profile).model_validate(data)
    lab = kai_lab(profile)
    report = _run(lab, profile)
    status = _status(report)
    assert {s for (check, _t), s in status.items() if check != "KAI-06"} == {"pass"}, [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    capacity = next(r for r in report.results if (r.id, r.tenant) == ("KAI-07", NLP))
    assert capacity.evidence.startswith(
        "gpu-over-capacity (2 x nvidia.com/gpu) stays Pending: no node of the pool has more "
        "than 1 GPU(s); KAI (PodGroup): PodSchedulingErrors: Resources were not found for pod "
        f"vcluster-{NLP}/gpu-over-capacity-x-gpulab-verify-x-{NLP} due to: Scheduling "
        "conditions were not met for pod")
    assert "Max GPU resources available in a single node in the default node-pool is topped " \
        "at 1" in capacity.evidence
    # no limit: nothing to exceed
    assert {status[("KAI-06", t)] for t in profile.member_names()} == {"skip"}


def test_replay_of_a_live_recording_gives_the_same_verdicts(kai_profile: VclusterKaiProfile,
                                                            tmp_path: Path) -> None:
    lab = kai_lab(kai_profile, enforce_limits=False)  # some failures to reproduce, too
    live = _run(lab, kai_profile)
    assert not live.ok
    write_recording(tmp_path / "rec", live.state, kai_profile)  # type: ignore[arg-type]
    recording = read_recording(tmp_path / "rec")
    assert recording.state == live.state
    replay = evaluate(recording.state, recording.profile())
    assert [r.to_dict() for r in replay.results] == [r.to_dict() for r in live.results]
    assert [f.to_dict() for f in replay.findings] == [f.to_dict() for f in live.findings]
    assert replay.replayed and not live.replayed


def test_limits_not_enforced_fail_kai_06(kai_profile: VclusterKaiProfile) -> None:
    report = _run(kai_lab(kai_profile, enforce_limits=False), kai_profile)
    status = _status(report)
    assert {status[("KAI-06", t)] for t in kai_profile.member_names()} == {"fail"}
    reason = next(r.reason for r in report.results if r.id == "KAI-06")
    assert "KAI gave another reason than OverLimit" in reason
    assert status[("KAI-07", NLP)] == "pass"


def test_host_side_queue_enforcement_closes_the_finding(kai_profile: VclusterKaiProfile) -> None:
    report = _run(kai_lab(kai_profile, queue_per_namespace=True), kai_profile)
    assert report.findings == ()
    assert any("the queue-label gap is closed" in n for n in report.notes)
    assert report.ok


def test_a_vcluster_that_is_down(kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    lab.down.add(VISION)
    report = _run(lab, kai_profile)
    status = _status(report)
    assert status[("KAI-01", VISION)] == "fail"
    assert all(status[(c, VISION)] == "fail" for c in ("KAI-02", "KAI-04", "KAI-05", "KAI-08"))
    assert status[("KAI-05", NLP)] == "fail"  # the GPU was not shared by every team
    capacity = next(r for r in report.results if r.id == "KAI-07" and r.tenant == NLP)
    assert capacity.status == "fail"
    assert "was not created because team-vision has no gpu-share" in capacity.reason
    assert status[("KAI-03", NLP)] == status[("KAI-06", NLP)] == "pass"
    assert lab.clock.slept < 200


def test_a_syncer_that_does_nothing_is_bounded(kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    lab.unsynced.add(REC)
    report = _run(lab, kai_profile, checks=["KAI-04"])
    rec = next(r for r in report.results if r.tenant == REC)
    assert rec.status == "fail" and "the vCluster did not sync gpu-share to the host" in rec.reason
    assert report.state.teams[REC].run("gpu-share").outcome == "not-synced"  # type: ignore[attr-defined]
    assert lab.clock.slept <= TIMEOUTS.running + TIMEOUTS.allocated + 5


def test_shared_credentials_fail_isolation(kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    lab.shared_ca = True
    report = _run(lab, kai_profile, checks=["KAI-08"])
    assert {r.status for r in report.results} == {"fail"}
    assert "accepted team-nlp's credentials" in report.results[0].reason
    created = [c[2] for c in lab.teams[NLP].calls if c[:2] == ("apply", "Pod")]
    assert created == ["gpu-share", "queue-foreign"]  # only what KAI-08 needs


def test_only_reads_for_checks_without_pods(kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    report = _run(lab, kai_profile, checks=["KAI-01", "KAI-02", "KAI-03"])
    assert set(_status(report).values()) == {"pass"}
    assert not any(c[0] == "apply" for api in lab.teams.values() for c in api.calls)
    assert report.findings == ()


def test_keep_leaves_the_pods(kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile)
    _run(lab, kai_profile, checks=["KAI-05"], keep=True)
    assert ("Pod", "gpulab-verify", "gpu-share") in lab.teams[NLP].objects


def test_a_lab_someone_uses_is_said_first_and_its_gpu_checks_do_not_run(
        kai_profile: VclusterKaiProfile, tmp_path: Path) -> None:
    """The docs invite users to run their own pods; verify's GPU expectations assume an idle
    GPU and empty queues, so it says what is in the way before creating anything and creates no
    GPU pod: KAI-04..07 are `error` naming the pod, the rest is judged as usual."""
    lab = kai_lab(kai_profile)
    user_pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "train-x-default-x-team-vision", "namespace": "vcluster-team-vision",
                     "uid": "user-1", "labels": {"kai.scheduler/queue": "team-vision"},
                     "annotations": {"gpu-fraction": "0.5"}},
        "spec": {"nodeName": "gpulab-vcluster-kai-worker",
                 "containers": [{"name": "train", "image": "x", "resources": {}}]},
        "status": {"phase": "Running"}}
    idle = {**user_pod, "metadata": {**user_pod["metadata"], "name": "web", "uid": "user-2",
                                     "annotations": {}}}
    lab.host.put(user_pod, idle)  # a pod without GPUs is no obstacle
    seen: list[tuple[str, str]] = []
    report = _run(lab, kai_profile, progress=lambda t, m: seen.append((t, m)))
    status = _status(report)
    for team in kai_profile.member_names():
        for check in ("KAI-04", "KAI-05", "KAI-06", "KAI-07"):
            result = next(r for r in report.results if (r.id, r.tenant) == (check, team))
            assert result.status == "error", (check, team, result.reason)
            assert "vcluster-team-vision/train-x-default-x-team-vision (0.5 GPU (gpu-fraction), " \
                   "queue team-vision, Running)" in result.reason
            assert "kubectl delete pod" in result.reason
        for check in ("KAI-01", "KAI-02", "KAI-03", "KAI-08"):
            assert status[(check, team)] == "pass", (check, team)
        created = [c[2] for c in lab.teams[team].calls if c[:2] == ("apply", "Pod")]
        assert created == (["queue-foreign"] if team == NLP else [])
        messages = [m for t, m in seen if t == team]
        in_use = next(i for i, m in enumerate(messages) if "the GPU is in use by" in m)
        assert not any("created" in m for m in messages[:in_use])
    assert not report.ok  # errors are not a pass
    users = report.state.host.gpu_users  # type: ignore[attr-defined]
    assert [u["metadata"]["name"] for u in users] == ["train-x-default-x-team-vision"]
    write_recording(tmp_path / "rec", report.state, kai_profile)  # type: ignore[arg-type]
    replay = evaluate(read_recording(tmp_path / "rec").state, kai_profile)
    assert [r.to_dict() for r in replay.results] == [r.to_dict() for r in report.results]


# --------------------------------------------------------------------------- issue #20 6b


def test_the_fake_vcluster_refuses_pods_until_the_default_service_account_exists(
        kai_profile: VclusterKaiProfile) -> None:
    """The model the next tests rest on: a pod created right after its namespace (what verify
    did before) is refused with 403 "serviceaccount \"default\" not found"; once the
    serviceaccount controller made `default`, the same pod is accepted."""
    lab = kai_lab(kai_profile, service_account_after=5)
    api = lab.teams[NLP]
    namespace, share = kr.verify_objects(kai_profile, kai_profile.teams[0])[:2]
    api.apply(namespace)
    with pytest.raises(AdapterError, match=r'403 Forbidden: .*error looking up service account '
                                           r'gpulab-verify/default: serviceaccount "default" '
                                           r"not found"):
        api.apply(share)
    lab.clock.sleep(5)
    assert api.apply(share)["metadata"]["name"] == "gpu-share"
    assert api.refused == ["gpu-share"]


def test_verify_waits_for_the_default_service_account_before_its_pods(
        kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile, service_account_after=5)
    report = _run(lab, kai_profile)
    assert set(_status(report).values()) == {"pass"}, [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    for team in kai_profile.member_names():
        api = lab.teams[team]
        assert api.refused == []  # no pod was created before `default` existed
        calls = [c[:2] for c in api.calls]
        assert calls.index(("get", "ServiceAccount")) < calls.index(("apply", "Pod"))


def test_a_default_service_account_that_never_appears_is_a_bounded_error(
        kai_profile: VclusterKaiProfile) -> None:
    lab = kai_lab(kai_profile, service_account_after=None)
    timeouts = replace(TIMEOUTS, service_account=10)
    report = _run(lab, kai_profile, timeouts=timeouts)
    status = _status(report)
    for team in kai_profile.member_names():
        for check in ("KAI-04", "KAI-05", "KAI-06", "KAI-07"):
            result = next(r for r in report.results if (r.id, r.tenant) == (check, team))
            assert result.status == "error", (check, team, result.reason)
            assert ("could not prepare namespace gpulab-verify: ServiceAccount "
                    "gpulab-verify/default did not appear within 10s") in result.reason
            assert "kube-controller-manager" in result.reason
        for check in ("KAI-01", "KAI-02", "KAI-03"):
            assert status[(check, team)] == "pass", (check, team)
        assert not [c for c in lab.teams[team].calls if c[:2] == ("apply", "Pod")]
        assert verify_namespace_left(lab, team) == []  # the namespace is still cleaned up
    assert lab.clock.slept <= 3 * (timeouts.service_account + timeouts.interval) + 1


# --------------------------------------------------------------------------- realistic hosts (#24)


def _host_pod(name: str, namespace: str, *, phase: str = "Running", node: str = b.GPU_NODE,
              annotations: dict[str, str] | None = None, limits: dict[str, str] | None = None,
              labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"u-{namespace}-{name}",
                         "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "spec": {"nodeName": node, "containers": [
                {"name": "main", "image": "x", "resources": {"limits": dict(limits or {})}}]},
            "status": {"phase": phase}}


def test_a_lived_in_host_still_passes(kai_profile: VclusterKaiProfile) -> None:
    """A host as a user leaves it: DaemonSet pods on the GPU node (device plugins, kube-proxy),
    KAI's own reservation pod holding the shared GPU, and finished jobs that held GPUs (Succeeded,
    Failed: KAI's podgroup-controller counts neither, metadata/pod.go:28-35 at v0.16.8). None of
    them is a GPU user, so verify runs every check and all pass."""
    lab = kai_lab(kai_profile)
    reservation = kai_profile.components.kai_scheduler.reservation_namespace
    # The fake-gpu-operator pods are those the pinned chart (0.0.74) renders with gpulab's values
    # (tests/rendered.py): DaemonSets device-plugin and nvidia-dcgm-exporter on the GPU node, the
    # kwok device plugin's Deployment; none asks for a GPU.
    lab.host.put(
        _host_pod("device-plugin-m2xzq", "gpu-operator",
                  labels={"app": "device-plugin", "component": "device-plugin"}),
        _host_pod("nvidia-dcgm-exporter-h5twb", "gpu-operator",
                  labels={"app": "nvidia-dcgm-exporter", "component": "status-exporter",
                          "app.kubernetes.io/name": "nvidia-container-toolkit"}),
        _host_pod("kwok-gpu-device-plugin-6f8c9d7b5-p9rdz", "gpu-operator", node=b.CONTROL_PLANE,
                  labels={"app": "kwok-gpu-device-plugin",
                          "component": "kwok-gpu-device-plugin"}),
        _host_pod("kube-proxy-b7vqd", "kube-system", labels={"k8s-app": "kube-proxy"}),
        _host_pod("kube-proxy-t9wzc", "kube-system", node=b.CONTROL_PLANE,
                  labels={"k8s-app": "kube-proxy"}),
        _host_pod("gpu-reservation-gpulab-vcluster-kai-worker-q7m2x", reservation,
                  limits={"nvidia.com/gpu": "1"}, labels={"runai-gpu-group": b.GPU_GROUP}),
        _host_pod("train-done", "ml", phase="Succeeded", limits={"nvidia.com/gpu": "1"}),
        _host_pod("train-oom", "ml", phase="Failed", annotations={"gpu-fraction": "0.5"}),
        _host_pod("eval-done", "ml", phase="Succeeded", annotations={"gpu-memory": "2000"}))
    report = _run(lab, kai_profile)
    assert set(_status(report).values()) == {"pass"}, [
        (r.id, r.tenant, r.reason) for r in report.results if r.status != "pass"]
    assert report.state.host.gpu_users == ()  # type: ignore[attr-defined]


def test_a_pod_sharing_the_gpu_by_memory_is_a_gpu_user(kai_profile: VclusterKaiProfile) -> None:
    """KAI shares a GPU by memory too: a pod annotated `gpu-memory: <MiB>` (KAI v0.16.8
    docs/gpu-sharing/README.md, pkg/common/constants/constants.go:58) holds part of the GPU, so
    verify's expectations of an idle GPU do not hold and its GPU checks are not run."""
    lab = kai_lab(kai_profile)
    lab.host.put(_host_pod("infer-x-default-x-team-vision", "vcluster-team-vision",
                           annotations={"gpu-memory": "2000"},
                           labels={"kai.scheduler/queue": "team-vision"}))
    report = _run(lab, kai_profile)
    for team in kai_profile.member_names():
        for check in ("KAI-04", "KAI-05", "KAI-06", "KAI-07"):
            result = next(r for r in report.results if (r.id, r.tenant) == (check, team))
            assert result.status == "error", (check, team, result.reason)
            assert ("vcluster-team-vision/infer-x-default-x-team-vision (2000 MiB of GPU memory "
                    "(gpu-memory), queue team-vision, Running)") in result.reason
    [user] = report.state.host.gpu_users  # type: ignore[attr-defined]
    assert user["metadata"]["annotations"] == {"gpu-memory": "2000"}  # kept for the replay


@pytest.mark.parametrize(("annotations", "limits", "said"), [
    ({"gpu-fraction": "0.5"}, {}, "0.5 GPU (gpu-fraction)"),
    ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, {},
     "0.5 GPU on each of 2 GPUs (gpu-fraction)"),
    ({"gpu-memory": "2000"}, {}, "2000 MiB of GPU memory (gpu-memory)"),
    ({}, {"nvidia.com/gpu": "2"}, "2 GPU"),
    ({}, {"nvidia.com/gpu": "0"}, ""),
    ({"gpu-fraction-num-devices": "2"}, {}, ""),  # a count of nothing asks for nothing
])
def test_what_a_gpu_user_is_said_to_hold(annotations: dict[str, str], limits: dict[str, str],
                                         said: str) -> None:
    from gpulab.stacks.vcluster_kai import objects as ko

    assert ko.gpu_request(_host_pod("p", "ml", annotations=annotations, limits=limits)) == said
