"""Each stack plans once, from what the cluster has (providers.base.ClusterFacts), so a provider
with facts no provider has today still gets a whole plan: kind with the host's real GPUs (as
nvkind makes), which neither kind's facts (a simulated pool) nor existing's (a shared cluster)
describe. Every step waits only for steps of the same plan."""

from __future__ import annotations

from typing import Any

from gpulab.providers.base import ClusterFacts, GpuNode
from gpulab.stacks import for_name, load_profile
from gpulab.stacks.vcluster_kai import render as kr


def _names_and_waits(steps: list[Any]) -> tuple[list[str], set[str]]:
    return [s.name for s in steps], {r for s in steps for r in s.requires}


def _real_gpus_on_a_cluster_of_its_own(profile: Any) -> ClusterFacts:
    needs = for_name(profile.stack).cluster_needs(profile)
    nodes = ("gpulab-vcluster-kai-worker", "gpulab-vcluster-kai-worker2")
    return ClusterFacts(pool_nodes={p.name: nodes for p in needs.pools},
                        urls={p.name: f"https://127.0.0.1:{p.host_port}" for p in needs.ports},
                        shared=False, gpus="found",
                        gpu_nodes=tuple(GpuNode(n, 2, "NVIDIA-L40S", "a device plugin")
                                        for n in nodes))


def test_vcluster_kai_on_a_cluster_of_its_own_with_real_gpus() -> None:
    profile = load_profile("vcluster-kai").profile
    facts = _real_gpus_on_a_cluster_of_its_own(profile)
    steps = for_name("vcluster-kai").build_steps(profile, "vcluster-kai", facts)
    names, waits = _names_and_waits(steps)
    assert waits <= {"management/cluster", *names}, waits - set(names)
    assert "management/fake-gpus" not in names  # the GPUs are real: nothing simulated
    assert "management/reservation-rbac" not in names
    assert "management/namespaces" not in names  # the cluster is the lab's own
    reused = next(s for s in steps if s.name == "management/gpu-nodes")
    assert next(a.body for a in reused.describe()) == {
        n.name: {kr.GPU_RESOURCE: 2, "product": "NVIDIA-L40S", "from": "a device plugin"}
        for n in facts.gpu_nodes}
    node = next(s for s in steps if s.name == "team-nlp/gpu-node")
    assert node.counts == dict.fromkeys(facts.nodes(profile.gpu_pool.name), 2)  # found, not
    # the profile's simulated count


def test_the_kind_facts_and_the_shared_facts_plan_what_they_did() -> None:
    """The same builder on kind's facts (a simulated pool) and a shared cluster's: the steps
    that tell them apart (tests/providers/test_plan_snapshots.py holds the whole plans)."""
    profile = load_profile("vcluster-kai").profile
    stack = for_name("vcluster-kai")
    pool = ClusterFacts(pool_nodes={profile.gpu_pool.name: ("w1",)},
                        urls={p.name: "https://127.0.0.1:1" for p in
                              stack.cluster_needs(profile).ports})
    names, waits = _names_and_waits(stack.build_steps(profile, "lab", pool))
    assert names[:4] == ["management/fake-gpus", "management/kai-scheduler",
                         "management/reservation-rbac", "management/queues"]
    assert waits <= {"management/cluster", *names}
    shared = ClusterFacts(pool_nodes={profile.gpu_pool.name: ("g1",)}, shared=True,
                          gpus="found", gpu_nodes=(GpuNode("g1", 1, "L40S", "GPU Operator"),),
                          expose="NodePort", node_address="10.0.0.5")
    names, waits = _names_and_waits(stack.build_steps(profile, "lab", shared))
    assert names[:4] == ["management/namespaces", "management/kai-scheduler",
                         "management/gpu-nodes", "management/queues"]
    assert waits <= {"management/cluster", *names}
