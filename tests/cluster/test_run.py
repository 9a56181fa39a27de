"""`verify --kubeconfig` runs: the plan's pods against a fake cluster where the test plays HAMi
(tests/cluster/fake_hami.FakeHami: webhook, kube-scheduler's filters, HAMi's nodes and card
filter in its order, node lock, kubelet), the verdicts, the cleanup (always, also after a crash
or Ctrl-C in the middle), and replay."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.cluster.execute import Timeouts, run_plan
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.record import write_snapshots
from gpulab.cluster.run import evaluate, run_verify
from gpulab.cluster.state import ClusterVerifyState
from gpulab.errors import AdapterError
from gpulab.verify.observe import Clock
from tests import kube_wire as kw
from tests.cluster import builders as b
from tests.cluster.fake_hami import FakeHami
from tests.kamaji_hami.fakes import FakeClock
from tests.vcluster_kai import kai_wire as kai

TIMEOUTS = Timeouts(running=60, refused=30, cleanup=10, interval=1)
SERVER = "https://gpu.example:6443"


def _verify(api: b.ClusterApi, clock: FakeClock, **kwargs: Any) -> Any:
    return run_verify([("prod", SERVER, api)], timeouts=TIMEOUTS,
                      clock=Clock(clock.now, clock.sleep), **kwargs)


def _verdicts(report: Any) -> dict[str, tuple[str, str]]:
    return {r.id: (r.status, r.reason or r.evidence) for r in report.results}


def _namespaces(api: b.ClusterApi) -> list[str]:
    return [name for (kind, _ns, name) in api.objects if kind == "Namespace"]


def _pods_in(api: b.ClusterApi, namespace: str) -> list[str]:
    return [name for (kind, ns, name) in api.objects if kind == "Pod" and ns == namespace]


@pytest.mark.parametrize("shape", ["one-card-per-node", "eight-cards-one-node",
                                   "kamaji-management"])
def test_a_cluster_that_shares_passes_every_check_and_is_left_clean(shape: str) -> None:
    api, clock = b.SHAPES[shape](), FakeClock()
    FakeHami(api, clock).attach()
    before = sorted(api.objects)
    report = _verify(api, clock)
    assert {check: status for check, (status, _t) in _verdicts(report).items()} == {
        **{f"GPU-0{i}": "pass" for i in range(1, 6)}, "GPU-06": "skip"}, _verdicts(report)
    assert sorted(api.objects) == before, "the namespace and every pod are gone"
    assert not [c for c in api.writes() if c[1] == "Node" or c[0] in ("annotate",
                                                                       "patch_node_status")]
    (run,) = report.state.runs
    assert run.namespace == f"gpulab-verify-{run.run_id}"
    assert [p.name for p in run.pods or ()] == ["gpu-share-1", "gpu-share-2", "gpu-share-3",
                                                "gpu-share-4", "gpu-mem-big"]
    for pod in run.pods or ():
        assert pod.created is not None
        assert pod.created["metadata"]["namespace"] == run.namespace
        assert pod.created["metadata"]["labels"]["gpulab.dev/run"] == run.run_id
    assert report.notes == ()


def test_sharing_evidence_names_the_card_and_the_amounts() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    verdicts = _verdicts(_verify(api, clock))
    assert verdicts["GPU-03"][1] == (
        "gpu-share-1..3 run together on node-3/GPU-l4-3 (NVIDIA-NVIDIA L4), each granted 6000 "
        "MiB and 30 cores: 18000/24576 MiB, 90/100 cores in use")
    assert "CardInsufficientCore" in verdicts["GPU-04"][1]
    assert "CardInsufficientMemory" in verdicts["GPU-05"][1]


def test_a_webhook_that_is_not_called_fails_admission_and_everything_after() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock, webhook_reachable=False).attach()
    verdicts = _verdicts(_verify(api, clock))
    assert verdicts["GPU-01"][0] == "pass"
    assert verdicts["GPU-02"][0] == "fail"
    assert "kept schedulerName default-scheduler" in verdicts["GPU-02"][1]
    assert all(verdicts[c][0] == "fail" for c in ("GPU-03", "GPU-04", "GPU-05"))


def test_pinning_not_honoured_fails_sharing_on_the_card() -> None:
    api, clock = b.shape_eight_cards_one_node(), FakeClock()
    FakeHami(api, clock, honour_pinning=False).attach()
    verdicts = _verdicts(_verify(api, clock))
    assert verdicts["GPU-03"][0] == "fail"
    assert "it asked for ('GPU-a100-1', 20000, 30)" in verdicts["GPU-03"][1]


def test_a_cluster_it_refuses_gets_errors_and_nothing_is_created() -> None:
    api, clock = b.shape_busy_and_small_split(), FakeClock()
    FakeHami(api, clock).attach()
    before = sorted(api.objects)
    report = _verify(api, clock)
    verdicts = _verdicts(report)
    assert verdicts["GPU-01"][0] == "pass"
    assert {verdicts[c][0] for c in ("GPU-02", "GPU-03", "GPU-04", "GPU-05")} == {"error"}
    assert "not run: no card can be used" in verdicts["GPU-02"][1]
    assert api.writes() == [] and sorted(api.objects) == before


def test_an_existing_namespace_is_never_used_nor_deleted() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-gpu"}})
    report = _verify(api, clock, namespace="team-gpu")
    assert "namespace team-gpu already exists" in _verdicts(report)["GPU-02"][1]
    assert _namespaces(api) == ["team-gpu"] and api.writes() == []


class Boom(RuntimeError):
    """A bug in the middle of the run."""


@pytest.mark.parametrize("failure", [Boom, KeyboardInterrupt])
def test_the_namespace_is_removed_when_the_run_breaks_mid_way(failure: type[BaseException]
                                                             ) -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    found = inventory(read_cluster(api, "prod", SERVER))
    planned = plan(found, "abcdefabcdef")
    sleeps = {"n": 0}

    def sleep(seconds: float) -> None:  # the third wait of the run breaks
        sleeps["n"] += 1
        if sleeps["n"] == 3:
            raise failure
        clock.sleep(seconds)

    with pytest.raises(failure):
        run_plan(api, planned, timeouts=TIMEOUTS, clock=Clock(clock.now, sleep))
    assert any(c[:2] == ("apply", "Pod") for c in api.calls), "it broke after creating pods"
    assert planned.namespace not in _namespaces(api)
    assert _pods_in(api, planned.namespace) == []


def test_keep_leaves_the_namespace_and_says_how_to_remove_it() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    report = _verify(api, clock, keep=True, namespace="gpu-check")
    assert "gpu-check" in _namespaces(api) and len(_pods_in(api, "gpu-check")) == 5
    assert report.notes == ("prod: namespace gpu-check left on purpose (--keep): kubectl "
                            "delete namespace gpu-check",)


def test_replay_of_a_recorded_run_gives_the_same_verdicts(tmp_path: Path) -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock, webhook_reachable=False).attach()
    live = _verify(api, clock)
    state = live.state
    assert isinstance(state, ClusterVerifyState)
    write_snapshots(tmp_path / "rec", state.snapshots, state.runs)
    result = CliRunner().invoke(app, ["verify", "--replay", str(tmp_path / "rec"), "-o",
                                      "json", "--junit", str(tmp_path / "v.xml")])
    assert result.exit_code == 3, result.output
    replayed = json.loads(result.stdout)["results"]
    assert replayed == [r.to_dict() for r in live.results]
    assert evaluate(state).results == live.results
    assert 'name="GPU-02 admission through HAMi' in (tmp_path / "v.xml").read_text()


def _healthy_state() -> ClusterVerifyState:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    state = _verify(api, clock).state
    assert isinstance(state, ClusterVerifyState)
    return state


def _edit_pod(state: ClusterVerifyState, name: str, edit: Any) -> ClusterVerifyState:
    import copy
    from dataclasses import replace

    (run,) = state.runs
    pods = []
    for pod in run.pods or ():
        if pod.name != name:
            pods.append(pod)
            continue
        data = {"pod": copy.deepcopy(pod.pod), "events": copy.deepcopy(list(pod.events))}
        edit(data)
        pods.append(replace(pod, pod=data["pod"], events=tuple(data["events"])))
    return replace(state, runs=(replace(run, pods=tuple(pods)),))


BROKEN: list[tuple[str, str, Any, str, str]] = [
    ("share pod of another run", "gpu-share-2",
     lambda d: d["pod"]["metadata"]["labels"].update({"gpulab.dev/run": "0" * 12}),
     "GPU-03", "not this run's"),
    ("share pod replaced", "gpu-share-3",
     lambda d: d["pod"]["metadata"].update(uid="someone-elses"), "GPU-03",
     "has uid someone-elses"),
    ("share pod crash-looping", "gpu-share-1",
     lambda d: d["pod"]["status"].update(containerStatuses=[
         {"name": "app", "ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
     "GPU-03", "gpu-share-1 is Running, but not every container is ready (app: waiting "
               "CrashLoopBackOff)"),
    ("grant of another size", "gpu-share-2",
     lambda d: d["pod"]["metadata"]["annotations"].update(
         {"hami.io/vgpu-devices-allocated": "GPU-l4-3,NVIDIA,9000,30:;"}), "GPU-03",
     "('GPU-l4-3', 9000, 30)"),
    ("fourth pod placed", "gpu-share-4",
     lambda d: d["pod"]["spec"].update(nodeName="node-3"), "GPU-04",
     "HAMi placed gpu-share-4 on node-3"),
    ("refusal only in no event of its own", "gpu-mem-big", lambda d: d.update(events=[]),
     "GPU-05", "no event of its own names CardInsufficientMemory"),
    ("first pod placed elsewhere", "gpu-share-1",
     lambda d: d["pod"]["metadata"]["annotations"].update({"hami.io/vgpu-node": "node-1"}),
     "GPU-02", "but HAMi chose node-1"),
]


@pytest.mark.parametrize(("name", "pod", "edit", "check", "words"), BROKEN,
                         ids=[row[0] for row in BROKEN])
def test_each_broken_fact_fails_its_check(name: str, pod: str, edit: Any, check: str,
                                          words: str) -> None:
    verdicts = _verdicts(evaluate(_edit_pod(_healthy_state(), pod, edit)))
    failing = {c for c, (status, _t) in verdicts.items() if status != "pass"}
    assert check in failing, verdicts
    assert words in verdicts[check][1], verdicts[check]


# --------------------------------------------------------------------------- GPU-06


def _two(shared: bool = False, accept: bool = False, refuse_listing: bool = False
         ) -> tuple[Any, dict[str, b.ClusterApi]]:
    """Two tenants' clusters (or one cluster reached twice), each with HAMi played."""
    clock = FakeClock()
    first = b.shape_one_card_per_node()
    FakeHami(first, clock).attach()
    second = first if shared else b.shape_kamaji_management()
    if not shared:
        FakeHami(second, clock).attach()
    apis = {"tenant-a": first, "tenant-b": second}
    servers = {"tenant-a": SERVER, "tenant-b": SERVER if shared else "https://b.example:6443"}

    def cross(credentials_of: str, server_of: str) -> Any:
        if accept:
            return apis[server_of]
        probe = b.ClusterApi("probe")
        probe.fail["list_objects"] = AdapterError(
            f"list Namespace at {servers[server_of]}: {kw.kube_client_says(kw.unauthorized())}")
        return probe

    if refuse_listing:  # tenant-b may list its own pods (discovery), not verify's namespace
        original = second.list_objects

        def listing(api_version: str, kind: str, namespace: str | None = None,
                    label_selector: str | None = None) -> list[dict[str, Any]]:
            if kind == "Pod" and namespace and namespace.startswith("gpulab-verify-"):
                raise AdapterError("list Pod at https://b.example:6443: 403 Forbidden")
            return original(api_version, kind, namespace, label_selector)

        second.list_objects = listing  # type: ignore[method-assign]
    report = run_verify([(name, servers[name], apis[name]) for name in apis],
                        timeouts=TIMEOUTS, clock=Clock(clock.now, clock.sleep), cross=cross)
    return report, apis


def _gpu06(report: Any) -> dict[str, tuple[str, str]]:
    return {r.tenant: (r.status, r.reason or r.evidence) for r in report.results
            if r.id == "GPU-06"}


def test_two_isolated_clusters_pass_isolation() -> None:
    report, apis = _two()
    verdicts = _gpu06(report)
    assert verdicts == {
        "tenant-a": ("pass", "tenant-b sees none of them; tenant-b rejects tenant-a's "
                             "credentials"),
        "tenant-b": ("pass", "tenant-a sees none of them; tenant-a rejects tenant-b's "
                             "credentials")}
    assert all(r.status == "pass" for r in report.results), _verdicts(report)
    for api in apis.values():
        assert not [n for (k, _ns, n) in api.objects if k == "Namespace"]


def test_a_cluster_that_accepts_the_other_tenants_credentials_fails() -> None:
    verdicts = _gpu06(_two(accept=True)[0])
    assert verdicts["tenant-a"][0] == "fail"
    assert "tenant-b's API server accepted tenant-a's credentials" in verdicts["tenant-a"][1]


def test_one_api_server_reached_twice_shows_the_other_tenants_pods() -> None:
    verdicts = _gpu06(_two(shared=True)[0])
    assert verdicts["tenant-a"][0] == "fail"
    assert ("tenant-b's credentials list this run's pods gpu-mem-big, gpu-share-1, gpu-share-2, "
            "gpu-share-3, gpu-share-4") in verdicts["tenant-a"][1]


def test_a_refused_listing_is_isolation() -> None:
    verdicts = _gpu06(_two(refuse_listing=True)[0])
    assert verdicts["tenant-a"] == ("pass", "tenant-b sees none of them (refused: list Pod at "
                                            "https://b.example:6443: 403 Forbidden); tenant-b "
                                            "rejects tenant-a's credentials")


# --------------------------------------------------------------------------- KAI


def _kai_run(**kai: Any) -> Any:
    from tests.cluster.fake_kai import FakeKai

    api, clock = b.shape_kai_idle_node(), FakeClock()
    FakeKai(api, **kai).attach()
    before = sorted(api.objects)
    report = _verify(api, clock)
    assert sorted(api.objects) == before, "the namespace and every pod are gone"
    return report


def test_a_kai_cluster_that_shares_passes() -> None:
    report = _kai_run()
    verdicts = _verdicts(report)
    assert {c: s for c, (s, _t) in verdicts.items()} == {
        "GPU-11": "pass", "GPU-12": "pass", "GPU-13": "pass", "GPU-06": "skip"}, verdicts
    assert verdicts["GPU-12"][1] == ("gpu-frac-1 and gpu-frac-2 (0.5 each) run together on "
                                     "gpu-small, one GPU (runai-gpu-group=gpu-small-gpu0), "
                                     "queue research")
    # KAI's MaxNodePoolResources pre-filter: 9 GPUs, gpu-big's 8 the most a node has
    ns = report.state.runs[0].namespace
    said = kai.pre_predicate_failed(ns, "gpu-over-capacity", kai.MAX_NODE_POOL_RESOURCES,
                                    kai.max_node_resources(ns, "gpu-over-capacity", 9, 8))
    assert verdicts["GPU-13"][1] == (f"gpu-over-capacity (9 x nvidia.com/gpu) stays Pending; "
                                     f"KAI (pod condition): {' '.join(said.split())}")


def _events_of(report: Any, pod: str) -> list[tuple[str, str, str, str]]:
    """(type, reason, source component, message) of each event a run read about `pod`, as
    its recording (--inspect) keeps them."""
    run = next(p for p in report.state.runs[0].pods if p.name == pod)
    return [(e["type"], e["reason"], e["source"]["component"], e["message"])
            for e in run.events]


@pytest.mark.parametrize("scheduler", ["kai-scheduler", "team-scheduler"])
def test_kai_tells_its_pods_as_its_scheduler(scheduler: str) -> None:
    """KAI's events on a pod come from its `--scheduler-name` (kai_wire.DEFAULT_SCHEDULER_NAME):
    Scheduled for a placed fraction, Unschedulable with the MaxNodePoolResources refusal for the
    pod no node can hold."""
    from tests.cluster.fake_kai import FakeKai

    api, clock = b.shape_kai_idle_node(), FakeClock()
    if scheduler != "kai-scheduler":
        del api.objects[("Deployment", "kai-scheduler", "kai-scheduler-default")]
        api.put(b.kai_scheduler(name=scheduler))
        api.objects[("Config", "", "kai-config")]["spec"]["global"] = {
            "schedulerName": scheduler}
    FakeKai(api).attach()
    report = _verify(api, clock)
    ns = report.state.runs[0].namespace
    assert _events_of(report, "gpu-frac-1") == [
        ("Normal", "Scheduled", scheduler, kai.scheduled(ns, "gpu-frac-1", "gpu-small"))]
    assert _events_of(report, "gpu-over-capacity") == [
        ("Warning", "Unschedulable", scheduler, kai.pre_predicate_failed(
            ns, "gpu-over-capacity", kai.MAX_NODE_POOL_RESOURCES,
            kai.max_node_resources(ns, "gpu-over-capacity", 9, 8)))]
    assert _verdicts(report)["GPU-13"][0] == "pass"


@pytest.mark.parametrize(("queue", "gpus", "said"), [
    # prod holds 4 of its limit 4 (train on gpu-big): one more is over it
    ("prod", 1, kai.job_fit_errors_message([(kai.OVER_LIMIT, [kai.over_limit("prod", 4, 4, 1)])])),
    ("nowhere", 1, kai.job_fit_errors_message([(kai.QUEUE_DOES_NOT_EXIST, [
        kai.queue_does_not_exist("nowhere")])])),
    # 5 GPUs fit gpu-big's 8 in size (no pre-filter), but train holds 4 of them and gpu-small
    # has 4: both nodes short
    ("research", 5, kai.fit_errors({kai.NOT_ENOUGH_GPUS: 2})),
])
def test_kai_refuses_a_pod_in_its_own_words(queue: str, gpus: int, said: str) -> None:
    """What `kubectl describe pod` shows of a pod KAI turns away: its condition and event."""
    from gpulab.verify.kai import kai_pod
    from tests.cluster.fake_kai import FakeKai

    api = b.shape_kai_idle_node()
    FakeKai(api).attach()
    api.apply(kai_pod("probe", "ml", {}, "busybox", queue=queue, gpus=gpus))
    pod = api.get("v1", "Pod", "probe", "ml")
    assert pod is not None and not pod["spec"].get("nodeName")
    assert pod["status"]["conditions"] == [{"type": "PodScheduled", "status": "False",
                                            "reason": "Unschedulable", "message": said}]
    assert [(e["reason"], e["source"]["component"], e["message"])
            for e in api.events("ml", "probe")] == [("Unschedulable", "kai-scheduler", said)]


def test_kai_spreading_the_fractions_fails_sharing() -> None:
    verdicts = _verdicts(_kai_run(spread=True))
    assert verdicts["GPU-12"][0] == "fail"
    assert verdicts["GPU-12"][1] == (
        "the half-GPU pods are on different GPUs (runai-gpu-group: gpu-frac-1 -> gpu-small-gpu0, "
        "gpu-frac-2 -> gpu-small-gpu1): KAI spread them (placementStrategy gpu: spread?)")


def test_kai_placing_more_gpus_than_a_node_has_fails_capacity() -> None:
    verdicts = _verdicts(_kai_run(place_anyway=True))
    assert verdicts["GPU-13"][0] == "fail"
    assert "KAI placed gpu-over-capacity (9 x nvidia.com/gpu)" in verdicts["GPU-13"][1]


def test_a_queue_reason_is_not_a_capacity_answer() -> None:
    from tests.cluster.fake_kai import FakeKai

    api, clock = b.shape_kai_idle_node(), FakeClock()
    FakeKai(api).attach()
    state = _verify(api, clock).state

    def queue_instead(data: dict[str, Any]) -> None:
        message = kai.job_fit_errors_message([(kai.OVER_LIMIT, [kai.over_limit(
            "research", 8, 1, 9)])])
        data["pod"]["status"]["conditions"][0]["message"] = message
        for event in data["events"]:
            event["message"] = message

    verdicts = _verdicts(evaluate(_edit_pod(state, "gpu-over-capacity", queue_instead)))
    assert verdicts["GPU-13"][0] == "fail"
    assert "KAI refused gpu-over-capacity for its queue (research), not for capacity" in (
        verdicts["GPU-13"][1])


# Every shape run end to end: what each check says there.
P, F, E, S = "pass", "fail", "error", "skip"
EVERY_SHAPE = {
    "eight-cards-one-node": {"GPU-01": P, "GPU-02": P, "GPU-03": P, "GPU-04": P, "GPU-05": P,
                             "GPU-06": S},
    "one-card-per-node": {"GPU-01": P, "GPU-02": P, "GPU-03": P, "GPU-04": P, "GPU-05": P,
                          "GPU-06": S},
    "kamaji-management": {"GPU-01": P, "GPU-02": P, "GPU-03": P, "GPU-04": P, "GPU-05": P,
                          "GPU-06": S},
    "busy-and-small-split": {"GPU-01": P, "GPU-02": E, "GPU-03": E, "GPU-04": E, "GPU-05": E,
                             "GPU-06": S},
    "no-hami": {"GPU-01": F, "GPU-02": E, "GPU-03": E, "GPU-04": E, "GPU-05": E, "GPU-06": S},
    "kai-with-queues": {"GPU-11": P, "GPU-12": E, "GPU-13": E, "GPU-06": S},
    "kai-idle-node": {"GPU-11": P, "GPU-12": P, "GPU-13": P, "GPU-06": S},
    "hami-eligibility": {"GPU-01": P, "GPU-02": P, "GPU-03": P, "GPU-04": P, "GPU-05": P,
                         "GPU-06": S},
    "kai-eligibility": {"GPU-11": P, "GPU-12": P, "GPU-13": P, "GPU-06": S},
}


@pytest.mark.parametrize("shape", sorted(b.SHAPES))
def test_every_shape_end_to_end_and_replayed(shape: str, tmp_path: Path) -> None:
    from tests.cluster.fake_kai import FakeKai

    api, clock = b.SHAPES[shape](), FakeClock()
    (FakeKai(api).attach() if shape.startswith("kai") else FakeHami(api, clock).attach())
    before = sorted(api.objects)
    live = _verify(api, clock)
    assert {c: s for c, (s, _t) in _verdicts(live).items()} == EVERY_SHAPE[shape], (
        _verdicts(live))
    assert sorted(api.objects) == before
    state = live.state
    write_snapshots(tmp_path / "rec", state.snapshots, state.runs)
    from gpulab import core

    assert core.replay_clusters(tmp_path / "rec").results == live.results


def test_the_plan_is_explained_before_anything_is_created() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    seen: list[tuple[str, list[tuple[str, ...]]]] = []
    _verify(api, clock, explain=lambda p: seen.append((p.card.device_id, api.writes())))
    assert seen == [("GPU-l4-3", [])], "explained once, before the first write"
    assert api.writes(), "then it ran"


def test_cli_run_prints_the_plan_judges_records_and_writes_junit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.usecases import anycluster

    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    config = b.kubeconfig_file(tmp_path / "prod.kubeconfig")
    seen: dict[str, Any] = {}

    @contextlib.contextmanager
    def clients(members: Any, **kwargs: Any) -> Any:
        seen.update(kwargs, contexts=[m.context for m in members])
        yield [("prod", SERVER, api)]

    monkeypatch.setattr(anycluster, "_cluster_clients", clients)
    monkeypatch.setattr("gpulab.cluster.run.Clock", lambda: Clock(clock.now, clock.sleep))
    monkeypatch.setattr("gpulab.cluster.execute.Timeouts", lambda: TIMEOUTS)
    result = CliRunner().invoke(app, ["verify", "--kubeconfig", str(config), "--junit",
                                      str(tmp_path / "v.xml"), "--record", str(tmp_path / "rec"),
                                      "--request-timeout", "1m30s"])
    assert seen == {"request_timeout": 90.0, "contexts": ["ctx-a"]}, "the file's current context"
    assert result.exit_code == 0, result.output
    assert "cluster prod: card node-3/GPU-l4-3" in result.stderr, "the plan comes first"
    assert "GPU-03" in result.stdout
    assert "5 pass, 1 skip" in result.stderr
    assert 'tests="6"' in (tmp_path / "v.xml").read_text()
    replay = CliRunner().invoke(app, ["verify", "--replay", str(tmp_path / "rec")])
    assert replay.exit_code == 0
    assert ("5 pass, 1 skip (replayed against what the clusters showed when recorded)"
            in replay.stderr)


def test_no_pod_is_created_before_the_namespaces_default_service_account() -> None:
    """The API server refuses a pod that names no account until the namespace's `default`
    ServiceAccount exists (kube-controller-manager creates it): verify waits for it, bounded, and
    when it never comes creates no pod, says why and still removes the namespace."""
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    api.default_service_account = False
    before = sorted(api.objects)
    report = _verify(api, clock)
    verdicts = _verdicts(report)
    for check in ("GPU-02", "GPU-03", "GPU-04", "GPU-05"):
        assert verdicts[check][0] == "error", verdicts[check]
        assert "default did not appear within 60s" in verdicts[check][1], verdicts[check]
    assert not [c for c in api.calls if c[:2] == ("apply", "Pod")]
    assert sorted(api.objects) == before


def test_a_replayed_card_on_a_node_named_nothing_never_passes_admission() -> None:
    """A replay is read as written: a card whose node is named "" and a gpu-share-1 HAMi never
    placed (no hami.io/vgpu-node, no nodeName) compare equal as "" — GPU-02 must not pass on
    that. Renames the node of a passing run's snapshot and strips the placement."""
    from dataclasses import replace

    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    report = _verify(api, clock)
    assert _verdicts(report)["GPU-02"][0] == "pass"
    state = report.state
    (snapshot,) = state.snapshots
    nodes = tuple(json.loads(json.dumps(n)) for n in snapshot.nodes or ())
    for node in nodes:
        node["metadata"]["name"] = ""
    (run,) = state.runs
    pods = []
    for pod in run.pods or ():
        if pod.name != "gpu-share-1" or pod.pod is None:
            pods.append(pod)
            continue
        seen = json.loads(json.dumps(pod.pod))
        seen["metadata"].get("annotations", {}).pop("hami.io/vgpu-node", None)
        seen["spec"].pop("nodeName", None)
        pods.append(replace(pod, pod=seen))
    broken = replace(state, snapshots=(replace(snapshot, nodes=nodes),),
                     runs=(replace(run, pods=tuple(pods)),))
    verdict, reason = _verdicts(evaluate(broken))["GPU-02"]
    assert verdict == "fail", reason
    assert "no node" in reason
