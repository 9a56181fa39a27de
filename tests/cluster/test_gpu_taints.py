"""GPU nodes tainted for their GPU resource (issue #32 item 4, issue #35 "admission that changes
pods"): verify's probes tolerate those taints as ExtendedResourceToleration would, carrying the
tolerations themselves because whether the API server runs that plugin cannot be read; any other
taint still keeps verify off the node, named in the plan.

Shapes: the HAMi and KAI eligibility shapes (tests/cluster/builders.py) with every GPU node
tainted as upstream documents it (tests/cluster/upstream.py GPU_RESOURCE_TAINT*). The runs play
HAMi and KAI with their fakes, whose kube-scheduler filters honour the pods' tolerations. Before
the fix each plan refused ("taint nvidia.com/gpu:NoSchedule not tolerated").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from gpulab.taints import gpu_taints, taint_text, tolerations_for
from tests.cluster import builders as b
from tests.cluster import upstream as up
from tests.cluster.test_eligibility import HAMI_PASS, KAI_PASS, RUN, SERVER, _run

if TYPE_CHECKING:
    from pathlib import Path

GPU_NODES = {"hami": ("gpu-a", "gpu-b"), "kai": ("gpu-big", "gpu-small", "gpu-spare")}
WANT = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _tainted(scheduler: str, taint: dict[str, str]) -> b.ClusterApi:
    api = b.shape_hami_eligibility() if scheduler == "hami" else b.shape_kai_eligibility()
    for name in GPU_NODES[scheduler]:
        api.objects[("Node", "", name)].setdefault("spec", {})["taints"] = [dict(taint)]
    return api


def _plan(api: b.ClusterApi) -> Any:
    from gpulab.cluster.inventory import inventory
    from gpulab.cluster.observe import read_cluster
    from gpulab.cluster.plan import plan

    return plan(inventory(read_cluster(api, "prod", SERVER)), RUN)


@pytest.mark.parametrize("taint", [up.GPU_RESOURCE_TAINT, up.GPU_RESOURCE_TAINT_PRESENT],
                         ids=["key-only", "with-value"])
@pytest.mark.parametrize("scheduler", ["hami", "kai"])
def test_gpu_resource_taints_are_tolerated(scheduler: str, taint: dict[str, str]) -> None:
    api = _tainted(scheduler, taint)
    planned = _plan(api)
    assert planned.runnable, planned.refusals
    _namespace, *pods = planned.objects()
    assert all(p["spec"]["tolerations"] == WANT for p in pods)
    (note,) = [n for n in planned.notes if "tainted for their GPU resource" in n]
    assert taint_text(taint) in note and "ExtendedResourceToleration" in note
    assert "unknown" in note
    assert _run(api, kai=scheduler == "kai") == (HAMI_PASS if scheduler == "hami" else KAI_PASS)


@pytest.mark.parametrize("scheduler", ["hami", "kai"])
def test_other_taints_still_keep_verify_off(scheduler: str) -> None:
    api = _tainted(scheduler, up.TAINT_KEY1)
    planned = _plan(api)
    assert not planned.runnable
    assert "taint key1=value1:NoSchedule not tolerated" in planned.refusals[0]


def test_untainted_clusters_get_no_tolerations() -> None:
    planned = _plan(b.shape_hami_eligibility())
    assert all("tolerations" not in p["spec"] for p in planned.objects()[1:])
    assert not [n for n in planned.notes if "tainted" in n]


def test_tolerated_over_http(tmp_path: Path) -> None:
    """The same, read over HTTP (kmock) by the CLI's `--dry-run -o json`."""
    from tests.cluster.test_kmock import dry_run_plan

    planned = dry_run_plan(_tainted("hami", up.GPU_RESOURCE_TAINT_PRESENT), tmp_path)
    assert all(p["spec"]["tolerations"] == WANT for p in planned["objects"][1:])


def test_the_helpers() -> None:
    node = {"spec": {"taints": [dict(up.GPU_RESOURCE_TAINT_PRESENT), dict(up.TAINT_KEY1),
                                {"key": "nvidia.com/gpu", "effect": "PreferNoSchedule"},
                                {"key": "nvidia.com/gpu", "effect": "NoExecute"}]}}
    found = gpu_taints(node, lambda key: key == "nvidia.com/gpu")
    assert [taint_text(t) for t in found] == ["nvidia.com/gpu=present:NoSchedule",
                                              "nvidia.com/gpu:NoExecute"]
    assert tolerations_for(found) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert gpu_taints({"spec": {"taints": "not a list"}}, lambda key: True) == []
