"""kai_wire's resource lists read back as the amounts KAI put in them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from kubernetes.utils import parse_quantity

from gpulab.verify import kai
from tests.vcluster_kai import kai_wire as kw


@pytest.mark.parametrize(("value", "milli", "text"), [
    (0, False, "0"), (2, False, "2"), (2000, False, "2k"), (1_500_000_000, False, "1500M"),
    (-1, False, "-1"), (-1, True, "-1m"), (330, True, "330m"), (2000, True, "2")])
def test_quantities_are_canonical_and_read_back(value: int, milli: bool, text: str) -> None:
    assert kw.si_quantity(value, milli=milli) == text
    assert parse_quantity(text) == Decimal(value) / (1000 if milli else 1)


def test_a_resource_list_counts_gpus_as_kai_does() -> None:
    # a fraction in milli-GPUs, whole devices from one up (2.33 is two), unlimited (-1) none
    assert kw.resource_list((0.33, 1500, 2_000_000)) == {
        "cpu": "1500m", "memory": "2M", "nvidia.com/gpu": "330m"}
    assert kw.resource_list((2.33, 0, 0))["nvidia.com/gpu"] == "2"
    assert kw.resource_list((-1, -1, -1)) == {"cpu": "-1m", "memory": "-1", "nvidia.com/gpu": "0"}


def test_a_preemptible_job_asks_nothing_non_preemptible() -> None:
    details = kw.quota_details("q", requested=(1, 0, 0), deserved=(0, 0, 0), allocated=(0, 0, 0),
                               allocated_non_preemptible=(0, 0, 0), limits=(1, -1, -1),
                               pod_group_requested=(2, 0, 0), preemptible=True)
    assert details["podGroupRequestedNonPreemptibleResources"] == {
        "cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}
    assert list(details) == [  # the Go struct's field order, which encoding/json keeps
        "name", "queueRequestedResources", "queueDeservedResources",
        "queueAllocatedNonPreemptibleResources", "podGroupRequestedResources",
        "podGroupRequestedNonPreemptibleResources", "queueAllocatedResources",
        "queueResourceLimits"]


_PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned" / "upstream"


def _upstream(name: str) -> str:
    return (_PINNED / f"kai_v0.16.8_pkg_scheduler_{name}").read_text(encoding="utf-8")


@pytest.mark.parametrize(("gpus", "max_gpus", "expected"), [
    (2, 1, "The pod n1/name1 requires GPU: 2, CPU: 0 (cores), memory: 0 (GB), pods: 1. Max GPU "
           "resources available in a single node in the default node-pool is topped at 1"),
    (0.5, 0, "The pod n1/name1 requires GPU: 0.5, CPU: 0 (cores), memory: 0 (GB), pods: 1. No "
             "node in the default node-pool has GPU resources")])
def test_the_max_node_refusal_is_upstreams(gpus: float, max_gpus: float, expected: str) -> None:
    """The MaxNodePoolResources texts of upstream's own test (SOURCES.md)."""
    assert f'"{expected}"' in _upstream("k8s_internal_predicates_maxNodeResources_test.go")
    assert kw.max_node_resources("n1", "name1", gpus, max_gpus) == expected


@pytest.mark.parametrize(("gpus", "max_gpus"), [(2, 1), (0.5, 0), (9, 8)])
def test_gpulab_reads_the_max_node_refusal_as_beyond_any_node(gpus: float,
                                                              max_gpus: float) -> None:
    """gpulab.verify.kai.beyond_any_node on upstream's texts, as the pod's condition carries
    them (pre_predicate_failed, newlines and all) and the PodGroup wraps them (not_found); not
    on KAI's other refusals: a node short of GPUs, a queue's limit, a missing queue."""
    said = kw.pre_predicate_failed("n1", "name1", kw.MAX_NODE_POOL_RESOURCES,
                                   kw.max_node_resources("n1", "name1", gpus, max_gpus))
    assert kai.beyond_any_node(said)
    assert kai.beyond_any_node(kw.not_found("n1", "name1", said))
    assert not kai.beyond_any_node(kw.fit_errors({kw.NOT_ENOUGH_GPUS: 2}))
    assert not kai.beyond_any_node(kw.over_limit("team-nlp", 1, 0.33, 2))
    assert not kai.beyond_any_node(kw.queue_does_not_exist("team-x"))
    assert kai.node_reasons(said) == ([], [])  # no per-node histogram: no node was tried


def test_a_pre_filter_refusal_reads_as_upstreams_lines() -> None:
    """evaluateTaskOnPrePredicate's error, split at its newlines as upstream's test splits it
    (the last, empty, dropped), when the status's only reason is its error."""
    said = kw.pre_predicate_failed("ns1", "p1", "PodFitsHostPorts",
                                   "failed pre-predicate PodFitsHostPorts")
    lines = said.split("\n")
    assert lines[-1] == ""
    assert lines[:-1] == ["Scheduling conditions were not met for pod ns1/p1:",
                          "PodFitsHostPorts: failed pre-predicate PodFitsHostPorts."]
    upstream = _upstream("plugins_predicates_predicates_test.go")
    assert all(f'"{line}"' in upstream for line in lines[:-1])


def test_node_conditions_are_kais_reasons() -> None:
    """CheckNodeConditionPredicate: cordoned first, then each condition in the node's order."""
    node = {"spec": {"unschedulable": True}, "status": {"conditions": [
        {"type": "MemoryPressure", "status": "True"}, {"type": "Ready", "status": "Unknown"},
        {"type": "DiskPressure", "status": "False"}, {"type": "PIDPressure", "status": "Unknown"},
        {"type": "NetworkUnavailable", "status": "False"}]}}
    assert kw.node_condition_reasons(node) == [
        "node is unschedulable", "node has MemoryPressure condition",
        "node has NotReady condition", "node has PIDPressure condition"]
    assert kw.node_condition_reasons({"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}) == []


def test_a_missing_queue_is_said_as_the_jobs_only_error() -> None:
    assert kw.job_fit_errors_message([(kw.QUEUE_DOES_NOT_EXIST, [
        kw.queue_does_not_exist("team-x")])]) == (
        "QueueDoesNotExist: Queue 'team-x' does not exist.")
