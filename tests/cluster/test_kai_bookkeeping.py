"""KAI's own bookkeeping (issue #35): which nodes and queues the default shard sees, and what a
queue holds, as KAI v0.16.8 (kai-scheduler/KAI-Scheduler 40da4c87) decides them.

- The default shard lists nodes and queues with `DoesNotExist` on the node-pool label
  (pkg/scheduler/conf/scheduler_conf.go:99-116, used by
  pkg/scheduler/cache/cluster_info/data_lister/kubernetes_lister.go:127-135): a node or queue
  labelled with an empty value is in no shard's view, not in the default one.
- A queue's usage is what KAI's pods in it (and its children) hold, counted by the scheduler each
  session (pkg/scheduler/plugins/proportion/proportion.go:359-401); only pods naming KAI's
  scheduler get a pod group (pkg/podgrouper/pod_controller.go:90-92), their queue from their
  label, else `default-queue` (default_grouper.go:134-147). The queue controller's
  `status.allocated` is stale while it is down.

Shapes: the KAI eligibility shape (KAI's quickstart queues, tests/cluster/builders.py) with one
fact changed; runs play KAI with tests/cluster/fake_kai.py. Against main's gpulab the
empty-label shapes put the fractions where KAI never looks (GPU-12 fails) or in a queue it
does not know, and the stale-status shape refused a queue with room.
"""

from __future__ import annotations

from typing import Any

from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.report import inspection_lines
from tests.cluster import builders as b
from tests.cluster.test_eligibility import KAI_PASS, RUN, SERVER, _run

POOL = "kai.scheduler/node-pool"  # KAI pkg/common/constants/constants.go:26


def _plan(api: b.ClusterApi) -> Any:
    return plan(inventory(read_cluster(api, "prod", SERVER)), RUN)


def test_a_node_with_an_empty_node_pool_label_is_not_the_default_shards() -> None:
    api = b.shape_kai_eligibility()
    api.objects[("Node", "", "gpu-small")]["metadata"]["labels"][POOL] = ""
    planned = _plan(api)
    assert planned.runnable and planned.node == "gpu-spare"
    found = inventory(read_cluster(api, "prod", SERVER))
    assert any('KAI node pool "" (empty: no shard selects it)' in line
               for line in inspection_lines(found))
    assert _run(api, kai=True) == KAI_PASS


def test_a_queue_with_an_empty_node_pool_label_is_not_the_default_shards() -> None:
    api = b.shape_kai_eligibility()
    api.objects[("Queue", "", "default-queue")].setdefault("metadata", {}).setdefault(
        "labels", {})[POOL] = ""
    planned = _plan(api)
    assert planned.runnable, planned.refusals
    assert planned.queue == "default-parent-queue", "its only child is in no shard's view"
    assert _run(api, kai=True) == KAI_PASS


def _limited(api: b.ClusterApi, limit: int, reported: str) -> None:
    queue = api.objects[("Queue", "", "default-queue")]
    queue["spec"]["resources"]["gpu"]["limit"] = limit
    queue["status"] = {"allocated": {"nvidia.com/gpu": reported}}


def test_a_stale_status_allocated_does_not_refuse_a_queue_with_room() -> None:
    """status.allocated says 4 (the queue controller down since a job ended); no KAI pod holds
    anything: the plan's 10 GPUs fit a limit of 10."""
    api = b.shape_kai_eligibility()
    _limited(api, 10, "4")
    planned = _plan(api)
    assert planned.runnable, planned.refusals
    assert planned.queue == "default-queue"
    assert any("its pods hold 0 GPUs, its status.allocated says 4" in n for n in planned.notes)
    assert _run(api, kai=True) == KAI_PASS


def test_kais_pods_count_even_when_status_says_nothing() -> None:
    """A KAI pod holding 2 GPUs in default-queue while status.allocated still says 0: a limit
    of 10 no longer holds the plan's 10."""
    api = b.shape_kai_eligibility()
    _limited(api, 10, "0")
    train = api.objects[("Pod", "prod", "train")]
    train["spec"]["schedulerName"] = "kai-scheduler"
    train["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    planned = _plan(api)
    assert not planned.runnable
    assert ("default-queue: its gpu limit 10 < 2 allocated (its status.allocated says 0) + 10 "
            "asked") in planned.refusals[0]


def test_other_schedulers_pods_are_in_no_queue() -> None:
    """The same pod on default-scheduler has no pod group: it holds nothing of the queue."""
    api = b.shape_kai_eligibility()
    _limited(api, 10, "0")
    planned = _plan(api)
    assert planned.runnable and not [n for n in planned.notes if "status.allocated" in n]
