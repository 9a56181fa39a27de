"""The step engine and the whole kamaji-hami `up`, driven through fakes of every adapter."""

from __future__ import annotations

import _thread
import json
import stat
import threading
from typing import Any

import pytest

from gpulab import core, stacks
from gpulab.engine.runner import Event, Outcome, run_steps
from gpulab.engine.step import StepContext
from gpulab.engine.wait import WaitTimeout, wait_until
from gpulab.paths import lab_dir
from gpulab.providers.kind import cluster_facts, kind_steps
from gpulab.stacks.common import CTR_LIST
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.render import cluster_needs
from gpulab.stacks.kamaji_hami.steps import JOIN_STATE, build_steps
from tests.fakes import FakeRuntime, FakeWorld, fake_adapters

STEP_NAMES = [
    "management/cluster", "management/images", "management/cert-manager", "management/metallb",
    "management/kamaji",
    *[f"{t}/{s}" for t in ("tenant-a", "tenant-b")
      for s in ("control-plane", "workers", "images", "join", "kube-proxy", "calico", "hami", "gpus")],
]


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self, kind: str) -> list[str]:
        return [e.step for e in self.events if e.kind == kind]


def _kind_steps(profile, adapters):
    """What `up` runs on kind: the provider's `management/cluster`, then the stack's steps."""
    return kind_steps(profile, "kamaji-hami", stacks.for_name("kamaji-hami"),
                      cluster_facts(profile, "kamaji-hami", cluster_needs(profile),
                                    adapters.runtime))


def _up(profile, world: FakeWorld, recorder: Recorder | None = None):
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    return core.up(profile, None, recorder or Recorder(), adapters=adapters,
                   sleep=lambda _s: None)


def test_up_builds_everything_in_order(kamaji_profile) -> None:
    world = FakeWorld()
    recorder = Recorder()
    result = _up(kamaji_profile, world, recorder)
    assert result.ok, [str(r.error) for r in result.failures]
    assert [r.name for r in result.results] == STEP_NAMES
    assert {r.outcome for r in result.results} == {Outcome.DONE}
    # Every dependency finished before its dependant started.
    done_at = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "done"}
    started_at = {e.step: i for i, e in enumerate(recorder.events) if e.kind == "started"}
    for step in build_steps(kamaji_profile, "kamaji-hami",
                            cluster_facts(kamaji_profile, "kamaji-hami",
                                          cluster_needs(kamaji_profile), FakeRuntime(world))):
        for dep in step.requires:
            assert done_at[dep] < started_at[step.name], (dep, step.name)
    # What was built is what the write-up describes.
    tenant_a = world.kube("tenant-a")
    node = tenant_a.objects[("v1", "Node", "", "gpulab-kamaji-hami-tenant-a-worker")]
    assert node["status"]["allocatable"]["nvidia.com/gpumem"] == "81920"
    assert node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] == \
        render.gpu_register_annotation(kamaji_profile.tenants[0], 0)
    pool = world.kube("management").objects[
        ("metallb.io/v1beta1", "IPAddressPool", "metallb-system", "kind-ip-pool")]
    assert pool["spec"]["addresses"] == ["172.18.255.200-172.18.255.250"]
    calico = tenant_a.objects[("apps/v1", "DaemonSet", "kube-system", "calico-node")]
    env = calico["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "CALICO_IPV4POOL_CIDR", "value": "10.244.0.0/16"} in env
    assert {"name": "OTHER", "value": "kept"} in env
    assert sum(1 for e in env if e["name"] == "CALICO_IPV4POOL_CIDR") == 1


def test_join_uses_named_preflight_ignores_and_a_0600_kubeconfig(kamaji_profile) -> None:
    world = FakeWorld()
    assert _up(kamaji_profile, world).ok
    join_calls = [c for c in world.faults.calls if c.startswith("docker.exec:kubeadm:join")]
    assert len(join_calls) == 2
    worker = "gpulab-kamaji-hami-tenant-b-worker"
    assert (worker, "/etc/gpulab/admin.conf", 0o600) in world.copied
    # the tenant's admin credentials do not stay on the worker after the join
    assert (worker, "/etc/gpulab/admin.conf") not in world.files
    assert (worker, "/etc/kubernetes/kubelet.conf") in world.files
    for name in ("management", "tenant-a", "tenant-b"):
        path = lab_dir("kamaji-hami") / f"{name}.kubeconfig"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_join_never_ignores_all_preflight_checks() -> None:
    from gpulab.stacks.kamaji_hami.steps import IGNORED_PREFLIGHT

    assert "all" not in {c.lower() for c in IGNORED_PREFLIGHT}
    assert IGNORED_PREFLIGHT


def test_rerun_on_a_finished_lab_does_nothing(kamaji_profile) -> None:
    world = FakeWorld()
    assert _up(kamaji_profile, world).ok
    world.faults.calls.clear()
    world.exec_log.clear()
    recorder = Recorder()
    again = _up(kamaji_profile, world, recorder)
    assert again.ok and again.all_skipped
    mutating = [c for c in world.faults.calls
                if c.split(":")[0] in {"kind.create", "helm.install", "kube.apply", "docker.run",
                                       "kube.patch_node_status", "kube.annotate", "kube.delete"}]
    assert mutating == []
    reads = (CTR_LIST, JOIN_STATE)  # the only execs a finished lab needs: observing
    assert [argv for _, argv in world.exec_log if argv not in reads] == []


@pytest.mark.parametrize("fault", [
    "kind.create",
    "helm.install:cert-manager:management",
    "fetch:metallb",
    "kube.apply:management:IPAddressPool",
    "helm.install:kamaji:management",
    "kube.apply:management:TenantControlPlane",
    "docker.run:gpulab-kamaji-hami-tenant-a-worker",
    "docker.exec:kubeadm:token",
    "docker.exec:kubeadm:join",
    "fetch:calico",
    "kube.apply:tenant-b:DaemonSet",
    "helm.install:hami:tenant-a",
    "kube.patch_node_status:tenant-b",
    "kube.annotate:tenant-a",
    "docker.exec:ctr:import",
])
def test_a_failure_anywhere_then_up_again_converges(kamaji_profile, fault: str) -> None:
    world = FakeWorld()
    if fault.startswith("fetch:"):
        # each image preload reads the manifest too and only notes a failure: fail every read
        # (metallb: one preload + one step; calico: one preload + one step per tenant)
        world.faults.fail_times[fault] = 2 if fault == "fetch:metallb" else 4
    else:
        world.faults.fail_once.add(fault)
    first = _up(kamaji_profile, world)
    if fault in {"kube.apply:management:IPAddressPool",
                 "kube.apply:management:TenantControlPlane"}:
        assert first.ok  # retried while MetalLB's / Kamaji's webhook warms up
    else:
        assert not first.ok
        failed = first.failures[0]
        assert "injected fault" in str(failed.error)
        blocked = [r for r in first.results if r.outcome is Outcome.NOT_RUN]
        assert all(r.outcome is not Outcome.DONE for r in blocked)
    second = _up(kamaji_profile, world)
    assert second.ok, [str(r.error) for r in second.failures]
    if fault != "kind.create":  # nothing existed before the first step
        assert any(r.outcome is Outcome.SKIPPED for r in second.results)
    third = _up(kamaji_profile, world)
    assert third.all_skipped


@pytest.mark.parametrize("failing", STEP_NAMES)
def test_failure_injected_at_every_step_is_resumable(kamaji_profile, failing: str) -> None:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    steps = _kind_steps(kamaji_profile, adapters)
    target = next(s for s in steps if s.name == failing)
    original = target.apply

    def broken(ctx: StepContext) -> None:
        original(ctx)  # the step did its work, then the process "died" before it finished
        from gpulab.errors import AdapterError

        raise AdapterError("simulated crash after acting")

    target.apply = broken  # type: ignore[method-assign]
    first = run_steps(steps, StepContext("kamaji-hami", adapters, sleep=lambda _s: None),
                      Recorder())
    assert [r.name for r in first.failures] == [failing]
    if failing.startswith("tenant-a/"):  # the other tenant is independent and finished
        assert all(r.outcome is Outcome.DONE for r in first.results if r.name.startswith("tenant-b"))
    second = _up(kamaji_profile, world)
    assert second.ok
    assert second.results[STEP_NAMES.index(failing)].outcome is Outcome.SKIPPED


def test_tenants_are_provisioned_concurrently(kamaji_profile) -> None:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    steps = _kind_steps(kamaji_profile, adapters)
    barrier = threading.Barrier(2, timeout=10)
    for step in steps:
        if step.name.endswith("/control-plane"):
            original = step.apply

            def meet(ctx: StepContext, _orig: Any = original) -> None:
                barrier.wait()  # both tenants must be in this step at the same time
                _orig(ctx)

            step.apply = meet  # type: ignore[method-assign]
    result = run_steps(steps, StepContext("kamaji-hami", adapters, sleep=lambda _s: None),
                       Recorder())
    assert result.ok, [str(r.error) for r in result.failures]


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_mid_step_leaves_a_resumable_lab(kamaji_profile) -> None:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    steps = _kind_steps(kamaji_profile, adapters)
    target = next(s for s in steps if s.name == "management/kamaji")
    original = target.apply
    release = threading.Event()

    def interrupted(ctx: StepContext) -> None:
        _thread.interrupt_main()  # what Ctrl-C does: KeyboardInterrupt in the main thread
        release.wait(5)
        original(ctx)

    target.apply = interrupted  # type: ignore[method-assign]
    try:
        result = run_steps(steps, StepContext("kamaji-hami", adapters, sleep=lambda _s: None),
                           Recorder())
    finally:
        release.set()
    assert result.interrupted and not result.ok
    outcomes = {r.name: r.outcome for r in result.results}
    for tenant in ("tenant-a", "tenant-b"):  # everything behind Kamaji never started
        for step in ("control-plane", "join", "calico", "hami", "gpus"):
            assert outcomes[f"{tenant}/{step}"] is Outcome.NOT_RUN
    again = _up(kamaji_profile, world)
    assert again.ok


def test_wait_until_reports_last_seen_on_timeout() -> None:
    ctx = StepContext("lab", None, sleep=lambda _s: None)
    ticks = iter(range(1000))
    with pytest.raises(WaitTimeout) as info:
        wait_until(ctx, "s", "the thing", lambda: (False, "status Provisioning"),
                   timeout=5, clock=lambda: float(next(ticks)))
    assert "timed out after 5s waiting for the thing; last seen: status Provisioning" in str(
        info.value)
    assert ctx.last_seen["s"] == "the thing: status Provisioning"


def test_failed_wait_surfaces_in_step_result(kamaji_profile) -> None:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    # HAMi never becomes ready: the hami-scheduler Deployment is missing.
    original = world.kube

    steps = _kind_steps(kamaji_profile, adapters)
    ctx = StepContext("kamaji-hami", adapters, sleep=lambda _s: None, timeout_scale=0.001)
    from tests import fakes

    fakes._RELEASE_DEPLOYMENTS["hami"], saved = [], fakes._RELEASE_DEPLOYMENTS["hami"]
    try:
        result = run_steps(steps, ctx, Recorder())
    finally:
        fakes._RELEASE_DEPLOYMENTS["hami"] = saved
    assert original is not None
    failures = {r.name: r for r in result.failures}
    assert set(failures) == {"tenant-a/hami", "tenant-b/hami"}
    assert "deployment kube-system/hami-scheduler not found" in failures["tenant-a/hami"].last_seen


def test_json_events_are_machine_readable(kamaji_profile, capsys) -> None:
    from gpulab.engine.progress import JsonReporter

    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    core.up(kamaji_profile, None, JsonReporter(), adapters=adapters, sleep=lambda _s: None)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["event"] for line in lines} >= {"started", "done"}
    assert all({"step", "event", "title", "elapsed", "ts"} <= set(line) for line in lines)


def test_images_are_pulled_once_and_loaded_only_where_missing(kamaji_profile) -> None:
    world = FakeWorld(images={"nothing-cached-yet"})
    assert _up(kamaji_profile, world).ok
    pulls = [c for c in world.faults.calls if c.startswith("docker.pull:")]
    assert len(pulls) == len(set(pulls))  # each image pulled once, shared by both tenants
    assert "docker.pull:example.com/hami:2.10.0" in pulls
    assert "docker.pull:registry.k8s.io/kube-proxy:v1.36.4" in pulls
    worker = "gpulab-kamaji-hami-tenant-a-worker"
    assert "quay.io/calico/node:v3.31.2" in world.node_images[worker]
    assert "registry.k8s.io/kube-apiserver:v1.36.4" in world.node_images[
        "gpulab-kamaji-hami-control-plane"]
    # A second lab on the same host pulls nothing new.
    world.faults.calls.clear()
    adapters = fake_adapters(world, lab_dir("second"))
    assert core.up(kamaji_profile, "second", Recorder(), adapters=adapters,
                   sleep=lambda _s: None).ok
    assert [c for c in world.faults.calls if c.startswith("docker.pull:")] == []
    assert "quay.io/calico/node:v3.31.2" in world.node_images["gpulab-second-tenant-b-worker"]


def test_an_image_the_host_cannot_pull_is_left_to_the_node(kamaji_profile) -> None:
    world = FakeWorld(images={"nothing-cached-yet"})
    world.faults.fail_once.add("docker.pull:quay.io/calico/node:v3.31.2")
    recorder = Recorder()
    assert _up(kamaji_profile, world, recorder).ok
    notes = [e.message for e in recorder.events if e.kind == "note"]
    assert any(m.startswith("left for the node to pull:") and "calico/node" in m for m in notes)


def test_two_labs_on_one_host_get_disjoint_metallb_pools(kamaji_profile) -> None:
    world = FakeWorld()
    assert _up(kamaji_profile, world).ok
    # The second lab has its own clusters; what the two share is the host's kind network.
    second = FakeWorld()
    adapters = fake_adapters(second, lab_dir("second"))
    assert core.up(kamaji_profile, "second", Recorder(), adapters=adapters,
                   sleep=lambda _s: None).ok
    first_pool = (lab_dir("kamaji-hami") / "metallb-pool").read_text().strip()
    second_pool = (lab_dir("second") / "metallb-pool").read_text().strip()
    assert first_pool == "172.18.255.200-172.18.255.250"
    assert second_pool == "172.18.255.149-172.18.255.199"
    live = second.kube("management").objects[
        ("metallb.io/v1beta1", "IPAddressPool", "metallb-system", "kind-ip-pool")]
    assert live["spec"]["addresses"] == [second_pool]
    # re-running the first lab keeps its recorded pool
    assert _up(kamaji_profile, world).all_skipped


def test_tenant_control_plane_is_retried_while_kamajis_webhook_warms_up(kamaji_profile) -> None:
    world = FakeWorld()
    world.faults.fail_times["kube.apply:management:TenantControlPlane"] = 2
    result = _up(kamaji_profile, world)
    assert result.ok, [str(r.error) for r in result.failures]
    applies = [c for c in world.faults.calls if c == "kube.apply:management:TenantControlPlane"]
    assert len(applies) == 4  # two refused, then one accepted per tenant


def test_calico_step_waits_for_the_konnectivity_tunnel(kamaji_profile) -> None:
    world = FakeWorld()
    world.faults.fail_times["kube.pod_logs:tenant-a"] = 3  # the tunnel comes up a bit later
    recorder = Recorder()
    assert _up(kamaji_profile, world, recorder).ok
    assert world.faults.calls.count("kube.pod_logs:tenant-a") >= 4


def test_an_image_nobody_can_pull_does_not_keep_a_finished_lab_busy(kamaji_profile) -> None:
    world = FakeWorld(images={"nothing-cached-yet"})
    world.faults.fail_times["docker.pull:quay.io/calico/node:v3.31.2"] = 99  # never available
    assert _up(kamaji_profile, world).ok
    world.faults.calls.clear()
    again = _up(kamaji_profile, world)
    assert again.all_skipped
    assert not [c for c in world.faults.calls if c.startswith("docker.pull:")]


# --------------------------------------------------------------------------- join convergence


def test_a_join_that_failed_halfway_is_reset_then_converges(kamaji_profile) -> None:
    world = FakeWorld()
    worker = "gpulab-kamaji-hami-tenant-a-worker"
    world.join_fails_midway.add(worker)
    first = _up(kamaji_profile, world)
    assert not first.ok
    assert [r.name for r in first.failures] == ["tenant-a/join"]
    # the half-done join left kubeadm's files; the admin kubeconfig did not stay behind
    assert (worker, "/etc/kubernetes/bootstrap-kubelet.conf") in world.files
    assert (worker, "/etc/gpulab/admin.conf") not in world.files
    world.exec_log.clear()
    second = _up(kamaji_profile, world)
    assert second.ok, [str(r.error) for r in second.failures]
    argvs = [argv for name, argv in world.exec_log if name == worker]
    reset = argvs.index(["kubeadm", "reset", "-f"])
    join = next(i for i, a in enumerate(argvs) if a[:2] == ["kubeadm", "join"])
    assert reset < join  # reset before the next try, not after
    assert (worker, "/etc/kubernetes/kubelet.conf") in world.files


def test_a_recreated_worker_is_not_taken_as_joined(kamaji_profile) -> None:
    """The container was removed and created again (docker rm, a host reboot with --rm...)
    while its Node object stayed: a new machine id, no kubelet.conf. The stale Node is deleted
    (kubeadm refuses to join a name whose Node is Ready) and the worker joins again."""
    world = FakeWorld()
    assert _up(kamaji_profile, world).ok
    worker = "gpulab-kamaji-hami-tenant-b-worker"
    tenant = world.kube("tenant-b")
    node = tenant.objects[("v1", "Node", "", worker)]
    node["status"]["conditions"][0]["status"] = "True"  # Ready, as it was before
    old_machine = node["status"]["nodeInfo"]["machineID"]
    del world.containers[worker]
    world.faults.calls.clear()
    second = _up(kamaji_profile, world)
    assert second.ok, [str(r.error) for r in second.failures]
    assert "kube.delete:tenant-b:Node" in world.faults.calls  # the stale Node went first
    rejoined = tenant.objects[("v1", "Node", "", worker)]
    assert rejoined["status"]["nodeInfo"]["machineID"] == world.machine_ids[worker] != old_machine
    assert (worker, "/etc/kubernetes/kubelet.conf") in world.files


def test_a_stale_node_alone_would_make_the_join_fail(kamaji_profile) -> None:
    """The fact the deletion rests on (kubeadm join: a Ready Node of that name exists)."""
    world = FakeWorld()
    assert _up(kamaji_profile, world).ok
    worker = "gpulab-kamaji-hami-tenant-b-worker"
    node = world.kube("tenant-b").objects[("v1", "Node", "", worker)]
    node["status"]["conditions"][0]["status"] = "True"
    del world.containers[worker]
    runtime = fake_adapters(world, lab_dir("kamaji-hami")).runtime
    runtime.run_node(next(s for s in world.runs if s.name == worker))
    result = runtime.exec(worker, ["kubeadm", "join", "172.18.255.200:6443"])
    assert not result.ok and "already exists in the cluster" in result.stderr


def test_a_worker_whose_systemd_never_starts_is_removed_and_recreated(kamaji_profile) -> None:
    world = FakeWorld()
    worker = "gpulab-kamaji-hami-tenant-a-worker"
    world.never_ready.add(worker)
    first = _up(kamaji_profile, world)
    assert [r.name for r in first.failures] == ["tenant-a/workers"]
    assert "did not reach systemd's multi-user target" in str(first.failures[0].error)
    assert worker not in world.containers  # a re-run starts it afresh
    world.never_ready.clear()
    assert _up(kamaji_profile, world).ok
    assert f"docker.logs:{worker}" in world.faults.calls


def test_metallb_waits_for_the_speaker_too(kamaji_profile) -> None:
    """An address is only reachable once the speaker DaemonSet announces it (L2)."""
    world = FakeWorld()
    world.speaker_never_ready = True
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    steps = _kind_steps(kamaji_profile, adapters)
    ctx = StepContext("kamaji-hami", adapters, sleep=lambda _s: None, timeout_scale=0.001)
    result = run_steps(steps, ctx, Recorder())
    failed = {r.name: r for r in result.failures}
    assert "management/metallb" in failed
    assert "daemonset metallb-system/speaker" in str(failed["management/metallb"].error)
