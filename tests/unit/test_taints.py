"""gpulab.taints: the tolerations a cluster's GPU nodes' taints need, one fact at a time."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.cluster.rules import untolerated_taints
from gpulab.taints import blocking_taints, toleration, union, vcluster_toleration

GKE = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _node(*taints: dict[str, Any], cordoned: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": list(taints)}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": {"name": "gpu-1"}, "spec": spec}


def test_a_noschedule_taint_with_a_value_is_tolerated_by_equal() -> None:
    assert blocking_taints(_node(GKE)) == (("nvidia.com/gpu", "present", "NoSchedule"),)
    assert toleration(("nvidia.com/gpu", "present", "NoSchedule")) == {
        "key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
        "effect": "NoSchedule"}


def test_a_taint_without_a_value_is_tolerated_by_exists() -> None:
    taint = {"key": "sku", "effect": "NoExecute"}
    assert blocking_taints(_node(taint)) == (("sku", "", "NoExecute"),)
    assert toleration(("sku", "", "NoExecute")) == {"key": "sku", "operator": "Exists",
                                                     "effect": "NoExecute"}


def test_prefer_no_schedule_only_scores_and_is_left_out() -> None:
    assert blocking_taints(_node({"key": "a", "effect": "PreferNoSchedule"})) == ()


@pytest.mark.parametrize("key", ["node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable",
                                 "node.kubernetes.io/memory-pressure",
                                 "node.cloudprovider.kubernetes.io/uninitialized"])
def test_the_systems_own_taints_are_never_tolerated(key: str) -> None:
    assert blocking_taints(_node({"key": key, "effect": "NoSchedule"})) == ()


def test_the_tolerations_let_kube_scheduler_place_the_pod() -> None:
    node = _node(GKE, {"key": "sku", "value": "gpu", "effect": "NoSchedule"})
    found = blocking_taints(node)
    assert untolerated_taints(node, []) != []
    assert untolerated_taints(node, [toleration(t) for t in found]) == []


def test_a_cordon_stays_a_cordon() -> None:
    node = _node(GKE, cordoned=True)
    assert untolerated_taints(node, [toleration(t) for t in blocking_taints(node)]) == [
        "cordoned (spec.unschedulable)"]


@pytest.mark.parametrize(("taint", "text"), [
    (("nvidia.com/gpu", "present", "NoSchedule"), "nvidia.com/gpu=present:NoSchedule"),
    (("sku", "", "NoExecute"), "sku:NoExecute"),
])
def test_vcluster_form(taint: tuple[str, str, str], text: str) -> None:
    assert vcluster_toleration(taint) == text


def test_union_keeps_each_once_in_order() -> None:
    a, b = ("a", "", "NoSchedule"), ("b", "1", "NoExecute")
    assert union([(a,), (b, a), ()]) == (a, b)
