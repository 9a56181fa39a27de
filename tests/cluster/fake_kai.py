"""KAI Scheduler played on a fake cluster (tests/cluster/builders.ClusterApi), for the runs of
`verify --kubeconfig` on KAI clusters: whenever pods are read it places pods named for
`kai-scheduler` as KAI v0.16.8 answers (docs/dev/upstream-facts/stack-vcluster-kai.md §1): a queue that
does not exist or whose limit is reached refuses with its reason code; a request no node can
hold gets `PodScheduled=False` and a Warning `Unschedulable` event with KAI's capacity message;
fractions bin-pack onto one GPU of the node (`runai-gpu-group`), or spread over GPUs
(`spread=True`, KAI's `placementStrategy.gpu: spread`); placed pods run on the next read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.cluster.builders import ClusterApi

CAPACITY = "0/{n} nodes are available: {n} node(s) didn't have enough resources: GPUs"


@dataclass
class FakeKai:
    api: ClusterApi
    spread: bool = False
    place_anyway: bool = False  # a broken scheduler that over-commits
    groups: dict[str, list[Decimal]] = field(default_factory=dict)  # node -> fill per GPU

    def attach(self) -> FakeKai:
        self.api.tick = self.tick
        return self

    def _objects(self, kind: str) -> list[dict[str, Any]]:
        return [o for (k, _ns, _n), o in self.api.objects.items() if k == kind]

    def _refuse(self, pod: dict[str, Any], message: str) -> None:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": message}]
        self.api.add_event(pod, "Unschedulable", message)

    def tick(self) -> None:
        with self.api.lock:
            for pod in self._objects("Pod"):
                if pod["spec"].get("schedulerName") != "kai-scheduler":
                    continue
                if pod["spec"].get("nodeName"):
                    if pod["status"].get("phase") == "Pending":
                        pod["status"] = {"phase": "Running", "containerStatuses": [
                            {"name": "app", "ready": True, "restartCount": 0,
                             "state": {"running": {}}}]}
                    continue
                if not pod["status"].get("conditions"):
                    self._schedule(pod)

    def _schedule(self, pod: dict[str, Any]) -> None:
        queues = {q["metadata"]["name"]: q for q in self._objects("Queue")}
        queue = (pod["metadata"].get("labels") or {}).get("kai.scheduler/queue", "default-queue")
        if queue not in queues:
            self._refuse(pod, f"QueueDoesNotExist: queue {queue} does not exist")
            return
        limit = ((queues[queue].get("spec") or {}).get("resources") or {}).get("gpu", {}).get(
            "limit", -1)
        fraction = (pod["metadata"].get("annotations") or {}).get("gpu-fraction")
        limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
        want = Decimal(fraction) if fraction else Decimal(str(limits.get("nvidia.com/gpu", 0)))
        if limit != -1 and want > Decimal(str(limit)):
            self._refuse(pod, f"OverLimit: {queue} quota has reached the allowable limit of GPUs")
            return
        nodes = {n["metadata"]["name"]: int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
                 for n in self._objects("Node")}
        wanted = (pod["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname")
        for name, gpus in sorted(nodes.items()):
            if wanted and name != wanted:
                continue
            fill = self.groups.setdefault(name, [Decimal(0)] * gpus)
            if fraction:
                free = [i for i, used in enumerate(fill) if used + want <= 1]
                if not free:
                    continue
                index = (min(free, key=lambda i: fill[i]) if self.spread
                         else max(free, key=lambda i: fill[i]))
                fill[index] += want
                pod["metadata"].setdefault("labels", {})["runai-gpu-group"] = f"{name}-gpu{index}"
            elif want > sum(1 for used in fill if used == 0) and not self.place_anyway:
                continue
            pod["spec"]["nodeName"] = name
            return
        self._refuse(pod, CAPACITY.format(n=len(nodes)))
