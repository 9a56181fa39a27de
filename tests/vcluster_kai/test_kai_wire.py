"""kai_wire's resource lists read back as the amounts KAI put in them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from kubernetes.utils import parse_quantity

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
