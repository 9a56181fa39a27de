"""The whole vcluster-kai `up` through fakes: order, readiness that means it, kubeconfigs 0600,
re-runs that do nothing, and a failure anywhere that the next `up` repairs."""

from __future__ import annotations

import stat
import threading

import pytest
import yaml

from gpulab import core, stacks
from gpulab.engine.runner import Event, Outcome, RunResult, run_steps
from gpulab.engine.step import StepContext
from gpulab.errors import AdapterError
from gpulab.paths import lab_dir
from gpulab.providers import ClusterChoice, for_choice
from gpulab.providers.kind import cluster_facts, kind_steps
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests.vcluster_kai.fakes import KaiWorld, kai_adapters

LAB = "vcluster-kai"
TEAMS = ("team-nlp", "team-vision", "team-recommender")
STEP_NAMES = [
    "management/cluster", "management/fake-gpus", "management/kai-scheduler",
    "management/reservation-rbac", "management/queues",
    *[f"{t}/{s}" for t in TEAMS for s in ("vcluster", "gpu-node")],
]


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)


def _up(profile: VclusterKaiProfile, world: KaiWorld, recorder: Recorder | None = None
        ) -> RunResult:
    adapters = kai_adapters(world, lab_dir(LAB))
    return core.up(profile, None, recorder or Recorder(), adapters=adapters,
                   sleep=lambda _s: None)


def _steps(profile: VclusterKaiProfile, world: KaiWorld) -> tuple[list, object]:
    adapters = kai_adapters(world, lab_dir(LAB))
    return kind_steps(profile, LAB, stacks.for_name("vcluster-kai"),
                      cluster_facts(profile, LAB, kr.cluster_needs(profile),
                                    adapters.runtime)), adapters


def test_up_builds_the_lab_in_kais_order(kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld()
    recorder = Recorder()
    result = _up(kai_profile, world, recorder)
    assert result.ok, [str(r.error) for r in result.failures]
    assert [r.name for r in result.results] == STEP_NAMES
    done = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "done"}
    started = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "started"}
    steps, _ = _steps(kai_profile, world)
    for step in steps:
        for dep in step.requires:
            assert done[dep] < started[step.name], (dep, step.name)
    assert done["management/fake-gpus"] < started["management/kai-scheduler"]  # KAI's CI order
    host = world.kube("management")
    names = [k[3] for k in host.objects if k[1] == "Queue"]
    assert names == ["ml-org", *TEAMS]
    for queue in kr.queue_objects(kai_profile):
        live = host.objects[(kr.QUEUE_API, "Queue", "", queue["metadata"]["name"])]
        assert live["spec"] == queue["spec"]
    assert ("rbac.authorization.k8s.io/v1", "RoleBinding", "kai-resource-reservation",
            "fake-status-updater") in host.objects
    releases = world.kube("management").releases
    assert set(releases) == {"gpu-operator", "kai-scheduler", *TEAMS}


def test_each_team_kubeconfig_is_saved_0600_and_points_at_the_hosts_loopback(
        kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld()
    assert _up(kai_profile, world).ok
    for team in kai_profile.teams:
        path = lab_dir(LAB) / f"{team.name}.kubeconfig"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        config = yaml.safe_load(path.read_text())
        assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{team.host_port}"
        values = world.vclusters[team.name]
        assert values["controlPlane"]["proxy"]["extraSANs"] == ["127.0.0.1", "localhost"]
    assert stat.S_IMODE((lab_dir(LAB) / "management.kubeconfig").stat().st_mode) == 0o600


def test_rerun_on_a_finished_lab_does_nothing(kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld()
    assert _up(kai_profile, world).ok
    world.faults.calls.clear()
    again = _up(kai_profile, world)
    assert again.ok and again.all_skipped
    mutating = [c for c in world.faults.calls
                if c.split(":")[0] in {"kind.create", "helm.install", "kube.apply"}]
    assert mutating == []


def test_kai_is_not_ready_until_its_operator_made_the_scheduler(
        kai_profile: VclusterKaiProfile) -> None:
    """helm's wait is over once kai-operator runs; gpulab waits for the operands."""
    world = KaiWorld(kai_operands=False)
    steps, adapters = _steps(kai_profile, world)
    ctx = StepContext(LAB, adapters, sleep=lambda _s: None, timeout_scale=0.001)
    result = run_steps(steps, ctx, Recorder())
    failures = {r.name: r for r in result.failures}
    assert set(failures) == {"management/kai-scheduler"}
    assert "deployment kai-scheduler/admission not found" in failures[
        "management/kai-scheduler"].last_seen
    blocked = {r.name for r in result.results if r.outcome is Outcome.NOT_RUN}
    assert blocked == {"management/reservation-rbac", "management/queues"}
    assert all(r.outcome in (Outcome.DONE, Outcome.SKIPPED)  # the teams do not wait for KAI
               for r in result.results if r.name.startswith("team-"))


def test_fake_gpus_must_be_advertised(kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld(advertise_gpus=False)
    steps, adapters = _steps(kai_profile, world)
    ctx = StepContext(LAB, adapters, sleep=lambda _s: None, timeout_scale=0.001)
    result = run_steps(steps, ctx, Recorder())
    failed = {r.name: r for r in result.failures}
    assert "management/fake-gpus" in failed
    assert ("gpulab-vcluster-kai-worker advertises nvidia.com/gpu 0, the pool has 1"
            in failed["management/fake-gpus"].last_seen)


def test_vclusters_wait_until_the_gpu_node_is_advertised(kai_profile: VclusterKaiProfile
                                                          ) -> None:
    """Issue #20 6a: every pod of the lab lands on the pool's worker, so a vCluster installed
    next to fake-gpu-operator pulls its images while fake-gpu-operator's still are. The
    vClusters start once fake-gpu-operator advertises the GPUs (and still next to KAI)."""
    world = KaiWorld()
    recorder = Recorder()
    steps, _ = _steps(kai_profile, world)
    for team in TEAMS:
        step = next(s for s in steps if s.name == f"{team}/vcluster")
        assert "management/fake-gpus" in step.requires
    assert _up(kai_profile, world, recorder).ok
    done = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "done"}
    started = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "started"}
    assert all(done["management/fake-gpus"] < started[f"{t}/vcluster"] for t in TEAMS)
    installs = [c.split(":")[1] for c in world.faults.calls if c.startswith("helm.install:")]
    assert installs[0] == "gpu-operator" and set(installs[1:]) == {"kai-scheduler", *TEAMS}
    assert world.helm_timeouts["gpu-operator"] >= 900  # pulls + the device plugin's back-off


def test_a_slow_link_stops_at_fake_gpus_with_what_waits_and_up_resumes(
        kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld(slow_link=True)
    first = _up(kai_profile, world)
    failed = {r.name: r for r in first.failures}
    assert set(failed) == {"management/fake-gpus"}
    message = str(failed["management/fake-gpus"].error)
    assert "fake-gpu-operator does not advertise the GPUs yet (" in message
    assert "helm and gpulab wait up to 900s each" in message
    assert "pod status-updater-7c9f8d-x2k4q ContainerCreating" in message
    assert "pod device-plugin-5hq2m CrashLoopBackOff" in message
    assert ("ConfigMap topology-gpulab-vcluster-kai-worker not written by the status-updater "
            "yet (the device plugin exits until it exists)") in message
    assert "context deadline exceeded" in message  # helm's own words are kept
    assert "run `gpulab up` again, it resumes at this step" in message
    blocked = {r.name for r in first.results if r.outcome is Outcome.NOT_RUN}
    assert blocked == set(STEP_NAMES) - {"management/cluster", "management/fake-gpus"}
    assert not any(c.startswith("helm.install:team-") for c in world.faults.calls)
    world.slow_link = False  # the images arrived
    second = _up(kai_profile, world)
    assert second.ok, [str(r.error) for r in second.failures]
    assert second.results[0].outcome is Outcome.SKIPPED  # the cluster is kept
    assert _up(kai_profile, world).all_skipped


def test_a_fake_gpus_failure_with_nothing_on_its_way_keeps_its_own_error(
        kai_profile: VclusterKaiProfile) -> None:
    """No fake-gpu-operator pod exists (e.g. the chart could not be pulled): no slow-link story."""
    world = KaiWorld()
    world.faults.fail_once.add("helm.install:gpu-operator:management")
    first = _up(kai_profile, world)
    [failed] = first.failures
    assert str(failed.error) == ("step 'management/fake-gpus' failed: injected fault: "
                                 "helm.install:gpu-operator:management")


def test_a_vcluster_that_does_not_sync_nodes_fails_its_gpu_node_step(
        kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld(sync_nodes=False)
    steps, adapters = _steps(kai_profile, world)
    ctx = StepContext(LAB, adapters, sleep=lambda _s: None, timeout_scale=0.001)
    result = run_steps(steps, ctx, Recorder())
    assert {r.name for r in result.failures} == {f"{t}/gpu-node" for t in TEAMS}
    assert "gpulab-vcluster-kai-worker not among 0 node(s) listed" in result.failures[0].last_seen


@pytest.mark.parametrize("fault", [
    "kind.create",
    "helm.install:gpu-operator:management",
    "helm.install:kai-scheduler:management",
    "kube.apply:management:ClusterRole",
    "kube.apply:management:Queue",
    "helm.install:team-vision:management",
    "kube.get:management:Deployment",
])
def test_a_failure_anywhere_then_up_again_converges(kai_profile: VclusterKaiProfile,
                                                    fault: str) -> None:
    world = KaiWorld()
    world.faults.fail_once.add(fault)
    first = _up(kai_profile, world)
    if fault in {"kube.apply:management:Queue", "kube.get:management:Deployment"}:
        assert first.ok  # retried while the webhook warms up / polled again
    else:
        assert not first.ok
        assert "injected fault" in str(first.failures[0].error)
    second = _up(kai_profile, world)
    assert second.ok, [str(r.error) for r in second.failures]
    assert _up(kai_profile, world).all_skipped


@pytest.mark.parametrize("failing", STEP_NAMES)
def test_failure_injected_at_every_step_is_resumable(kai_profile: VclusterKaiProfile,
                                                     failing: str) -> None:
    world = KaiWorld()
    steps, adapters = _steps(kai_profile, world)
    target = next(s for s in steps if s.name == failing)
    original = target.apply

    def broken(ctx: StepContext) -> None:
        original(ctx)
        raise AdapterError("simulated crash after acting")

    target.apply = broken  # type: ignore[method-assign]
    first = run_steps(steps, StepContext(LAB, adapters, sleep=lambda _s: None), Recorder())
    outcome = first.results[STEP_NAMES.index(failing)].outcome
    if failing.endswith("/gpu-node"):  # nothing to act on: the vCluster already lists the node
        assert outcome is Outcome.SKIPPED and first.ok
    else:
        assert [r.name for r in first.failures] == [failing]
    second = _up(kai_profile, world)
    assert second.ok
    assert second.results[STEP_NAMES.index(failing)].outcome is Outcome.SKIPPED


def test_teams_are_provisioned_concurrently(kai_profile: VclusterKaiProfile) -> None:
    world = KaiWorld()
    steps, adapters = _steps(kai_profile, world)
    barrier = threading.Barrier(3, timeout=10)
    for step in steps:
        if step.name.endswith("/vcluster"):
            original = step.apply

            def meet(ctx: StepContext, _orig=original) -> None:
                barrier.wait()
                _orig(ctx)

            step.apply = meet  # type: ignore[method-assign]
    result = run_steps(steps, StepContext(LAB, adapters, sleep=lambda _s: None), Recorder())
    assert result.ok, [str(r.error) for r in result.failures]


def test_status_shows_queues_and_teams(kai_profile: VclusterKaiProfile) -> None:
    from tests.fakes import FakeRuntime, _cluster_of

    world = KaiWorld()
    assert _up(kai_profile, world).ok
    host = world.kube("management")
    queue = host.objects[(kr.QUEUE_API, "Queue", "", "team-nlp")]
    queue["status"] = {"allocated": {"nvidia.com/gpu": "330m"},
                       "requested": {"nvidia.com/gpu": "330m"}}
    host.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "team-nlp-0", "namespace": "vcluster-team-nlp",
        "labels": {"app": "vcluster", "release": "team-nlp"}}, "status": {"phase": "Running"}})
    info = core.status(LAB, for_choice(ClusterChoice("kind"), runtime=FakeRuntime(world)),
                       kai_profile,
                       kube=lambda path: world.kube(_cluster_of(path)))
    assert info["stack"] == "vcluster-kai" and info["exists"]
    row = next(q for q in info["queues"] if q["name"] == "team-nlp")
    assert row == {"name": "team-nlp", "parent": "ml-org", "gpu_quota": 0.33, "gpu_limit": 1,
                   "allocated": "330m", "requested": "330m"}
    assert info["gpu_nodes"] == [{"name": "gpulab-vcluster-kai-worker", "model": "NVIDIA-L40S",
                                  "gpus": "1"}]
    nlp = info["tenants"]["team-nlp"]
    assert nlp["control_plane"] == [{"name": "team-nlp-0", "phase": "Running"}]
    assert nlp["version"] == "v1.36.4" and "gpulab-vcluster-kai-worker" in nlp["nodes"]

    from rich.console import Console

    from gpulab.stacks.vcluster_kai.status import status_tables as _kai_status

    console = Console(width=200, record=True)
    for table in _kai_status(info):
        console.print(table)
    text = console.export_text()
    assert any(line.split()[:5] == ["team-nlp", "ml-org", "0.33", "1", "330m"]
               for line in text.splitlines())
    assert "team-nlp: vCluster in vcluster-team-nlp [team-nlp-0 Running], API v1.36.4" in text


def test_down_removes_the_lab(kai_profile: VclusterKaiProfile) -> None:
    from tests.fakes import FakeRuntime
    from tests.vcluster_kai.fakes import KaiKind

    world = KaiWorld()
    assert _up(kai_profile, world).ok
    result = core.remove_lab(LAB, for_choice(ClusterChoice("kind"), runtime=FakeRuntime(world),
                                       kind=KaiKind(world)))
    assert "kind cluster gpulab-vcluster-kai" in result.removed
    assert any(item.startswith("lab files") for item in result.removed)
    assert result.leftovers == [] and not lab_dir(LAB).exists()
