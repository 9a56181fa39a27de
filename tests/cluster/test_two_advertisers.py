"""Two advertisers of nvidia.com/gpu (issue #35): HAMi's device plugin beside NVIDIA's on one
node. HAMi's offers `split` devices per card (HAMi v2.10.0 pkg/device-plugin/nvidiadevice/
nvinternal/rm/devices.go:195-216), NVIDIA's one per GPU; the kubelet keeps one plugin per
resource name, the last to register (kubernetes pkg/kubelet/cm/devicemanager/manager.go,
PluginConnected), so the node's capacity is one plugin's. When it is not HAMi's number, pods get
the other plugin's devices and a share verify saw there would not be HAMi's.

Shape: the HAMi eligibility shape (HAMi's upstream register annotations, one A100 per node) with
NVIDIA's static DaemonSet (tests/cluster/upstream.py, verbatim) and gpu-a's capacity and
allocatable `nvidia.com/gpu: 1`, as NVIDIA's plugin registers one A100. The fake HAMi runs
kube-scheduler's NodeResourcesFit on that allocatable. Against main's gpulab the plan took gpu-a
(the trap) and the run failed GPU-03.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from tests.cluster import builders as b
from tests.cluster import upstream as up
from tests.cluster.test_eligibility import HAMI_PASS, RUN, SERVER, _run


def _shape(*, nvidia_won: bool = True) -> b.ClusterApi:
    api = b.shape_hami_eligibility()
    daemonset = yaml.safe_load(up.NVIDIA_DEVICE_PLUGIN_DAEMONSET)
    daemonset["status"] = {"desiredNumberScheduled": 2, "numberReady": 2}
    api.put(daemonset)
    if nvidia_won:
        node = api.objects[("Node", "", "gpu-a")]
        for key in ("capacity", "allocatable"):
            node["status"][key]["nvidia.com/gpu"] = "1"
    return api


def _plan(api: b.ClusterApi) -> Any:
    return plan(inventory(read_cluster(api, "prod", SERVER)), RUN)


def test_a_node_where_another_plugin_advertises_the_gpus_is_not_used() -> None:
    api = _shape()
    planned = _plan(api)
    assert planned.runnable and planned.card.node == "gpu-b"
    assert _run(api) == HAMI_PASS


def test_the_reason_names_the_numbers_and_the_other_plugin() -> None:
    api = _shape()
    api.objects.pop(("Node", "", "gpu-b"))
    planned = _plan(api)
    assert not planned.runnable
    assert ("gpu-a/GPU-0 (NVIDIA-A100, 8192 MiB): capacity nvidia.com/gpu 1 is "
            "not the 10 devices HAMi's device plugin offers for its 1 card(s)") in (
        planned.refusals[0])
    assert "another device plugin (kube-system/nvidia-device-plugin-daemonset)" in (
        planned.refusals[0])


def test_both_plugins_beside_each_other_are_noted_even_when_hamis_registered_last() -> None:
    planned = _plan(_shape(nvidia_won=False))
    assert planned.runnable and planned.card.node == "gpu-a"
    assert any("NVIDIA's device plugin (kube-system/nvidia-device-plugin-daemonset) runs beside "
               "HAMi's" in n for n in planned.notes)
