"""doctor's lines for a lab on a cluster you have (gpulab.doctor.cluster_findings) and for its
worker containers (diagnose_workers), pure functions of what was read: each of up's preflight
refusals, as the stacks word them, lands under its own check with a fix."""

from __future__ import annotations

from typing import Any

from gpulab.adapters.base import RuntimeInfo
from gpulab.doctor import HostSnapshot, ImageState, cluster_findings, diagnose_workers
from gpulab.profile.base import ClusterSpec, HostWorkers
from gpulab.providers.base import ClusterIdentity
from gpulab.providers.existing import ExistingFacts, FakeNode
from gpulab.stacks import for_profile, load_profile
from gpulab.stacks.kamaji_hami.existing import AddonFound, ClusterFound
from gpulab.stacks.vcluster_kai.existing import KaiFound

IDENTITY = ClusterIdentity("https://api:6443", "ctx", "(default)", "uid-1")


def _facts(**changes: Any) -> ExistingFacts:
    base: dict[str, Any] = {
        "identity": IDENTITY, "version": "v1.34.2", "default_storage_class": "standard",
        "gpu_nodes": (), "node_address": "10.0.0.5", "load_balancer": False,
        "namespaces_found": (), "queues_found": ()}
    return ExistingFacts(**{**base, **changes})


def _checks(findings: list[Any]) -> list[tuple[str, str]]:
    return [(f.check, f.status) for f in findings]


def test_each_vcluster_kai_refusal_is_a_line_of_its_own_check() -> None:
    profile: Any = load_profile("vcluster-kai").profile
    team = profile.teams[0]
    facts = _facts(version="v1.27.1", default_storage_class=None, node_address=None,
                   expose="NodePort",
                   stack=KaiFound("kai-scheduler", "v0.15.2", True),
                   namespaces_found=(f"vcluster-{team.name}",),
                   queues_found=(team.queue_name,),
                   fake_nodes=(FakeNode("cpu-1", False),),
                   denied=("create namespaces", "delete queues.scheduling.run.ai"), asked=40)
    problems = for_profile(profile).existing_problems(profile, facts)
    found = cluster_findings(facts.version, facts.denied, facts.asked,
                             facts.default_storage_class, problems, "ctx")
    assert _checks(found) == [
        ("version", "fail"), ("version", "fail"), ("access", "fail"), ("storage class", "fail"),
        ("fake gpus", "fail"), ("kai scheduler", "fail"), ("names", "fail"), ("names", "fail"),
        ("node address", "fail")]
    assert all(f.fix for f in found)
    # the access line names every denied review (up's refusal named the first, "+1 more")
    assert found[2].detail == ("2 of 40 access reviews denied: not allowed to create "
                               "namespaces; delete queues.scheduling.run.ai")
    assert not any(f.detail.startswith("not allowed to") for f in found)
    # each refusal is printed as up says it
    assert {f.detail for f in found if f.check != "access"} == {
        p for p in problems if not p.startswith("not allowed to")}


def test_each_kamaji_hami_refusal_is_a_line_of_its_own_check() -> None:
    loaded: Any = load_profile("kamaji-hami").profile
    profile = loaded.model_copy(update={"cluster": ClusterSpec(provider="existing")})
    found_there = ClusterFound(
        cert_manager=AddonFound("cert-manager", "", ""),
        kamaji=AddonFound("kamaji", "kamaji-system", "v1.0.0"),
        metallb=None, load_balancer="", tcps_found=("tenant-a",))
    facts = _facts(version="v1.37.0", default_storage_class=None,
                   namespaces_found=(profile.components.kamaji.tenant_namespace,),
                   stack=found_there, asked=12)
    problems = for_profile(profile).existing_problems(profile, facts)
    found = cluster_findings(facts.version, (), facts.asked, None, problems, "ctx")
    assert _checks(found) == [
        ("version", "fail"), ("access", "ok"), ("cert-manager", "fail"), ("kamaji", "fail"),
        ("load balancer", "fail"), ("names", "fail"), ("names", "fail")]
    assert found[1].detail == "all 12 access reviews allowed (what up creates and removes)"


def test_a_cluster_up_would_take_is_all_ok_and_an_unknown_refusal_is_still_a_fail() -> None:
    fine = cluster_findings("v1.34.2", (), 30, "standard", [], "ctx")
    assert _checks(fine) == [("version", "ok"), ("access", "ok"), ("storage class", "ok"),
                             ("cluster", "ok")]
    odd = cluster_findings("v1.34.2", (), 30, None, ["something new the stack refuses"], "ctx")
    assert _checks(odd) == [("version", "ok"), ("access", "ok"), ("cluster", "fail")]
    assert "docs/own-cluster.md" in odd[-1].fix


GOOD = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian GNU/Linux 12")
WORKERS = HostWorkers(2, ("kindest/node:v1.36.4",), 0.6)


def test_the_workers_need_docker_and_their_budget_only() -> None:
    snapshot = HostSnapshot(docker=GOOD, privileged_probe="", probe_image="kindest/node:v1.36.4",
                            node_images=(ImageState("kindest/node:v1.36.4", "present"),))
    found = diagnose_workers(snapshot, WORKERS)
    assert _checks(found) == [("docker", "ok"), ("engine", "ok"), ("privileged", "ok"),
                              ("node image", "ok"),
                              ("memory", "ok"), ("cpu", "ok")]
    small = RuntimeInfo("28.2.2", "1.50", 1, 512 * 1024**2, "Debian")
    tight = {f.check: f for f in diagnose_workers(HostSnapshot(docker=small), WORKERS)}
    assert tight["memory"].status == "fail"
    assert tight["memory"].detail == ("0.5 GiB for Docker; the lab's 2 worker containers need "
                                      "about 0.6 GiB")
    assert tight["cpu"].status == "ok"  # one CPU runs them: nothing reserves CPUs for a worker
    gone = diagnose_workers(HostSnapshot(docker_error="connection refused"), WORKERS)
    assert _checks(gone) == [("docker", "fail")] and gone[0].detail == "connection refused"


def test_only_container_workers_ask_the_host_for_anything() -> None:
    loaded: Any = load_profile("kamaji-hami").profile
    assert loaded.host_workers() is None  # kind: the workers are the kind lab's, host_needs
    machines = loaded.model_copy(update={"cluster": ClusterSpec(provider="existing")})
    assert machines.host_workers() is None
    containers = loaded.model_copy(update={"cluster": ClusterSpec(provider="existing",
                                                                  workers="containers")})
    workers = containers.host_workers()
    assert workers is not None and workers.count == sum(t.workers.count for t in loaded.tenants)
    assert workers.images == tuple(dict.fromkeys(t.workers.image for t in loaded.tenants))
    assert load_profile("vcluster-kai").profile.host_workers() is None
