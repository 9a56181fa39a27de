"""What gpulab knows of KAI Scheduler's answers, for every cluster: why a workload is not placed.

KAI v0.16.8 (docs/dev/upstream-facts/stack-vcluster-kai.md §1):
- PodGroup `status.schedulingConditions[]` (type `UnschedulableOnNodePool`) carry `reasons[]` with a
  `reason` code (`OverLimit`, `NonPreemptibleOverQuota`, `QueueDoesNotExist`, …) and a `message`;
  older fields `reason`/`message` on the condition itself are deprecated but still read;
- the pod gets condition `PodScheduled=False/Unschedulable` and a Warning event `Unschedulable`.
- when no node fits, the message is a histogram of per-node reasons, "no nodes with enough
  resources were found: 1 node has DiskPressure condition. \n1 node(s) didn't have enough
  resources: GPUs." (pkg/scheduler/api/common_info/pod_errors.go:21,219-245), the PodGroup's
  "Resources were not found for pod NS/NAME due to: <that>" (actions/common/allocate.go:244-248).
  A node is refused for its GPUs ("node(s) didn't have enough resources: GPUs" or "GPU memory",
  pod_errors.go:101,107) before any predicate runs (framework/session.go:226-256); a node with
  room on its GPU is refused by the predicates instead: a node condition ("node has
  DiskPressure condition", scheduler_util/scheduler_utils.go:12-40, checked first,
  plugins/predicates/predicates.go:343), then Kubernetes' own filters such as taints
  (k8s_internal/predicates/predicates.go:85-93). `node_reasons` tells them apart.

Pure functions over API objects, shared by the vcluster-kai checks and `verify --kubeconfig`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gpulab.verify import objects as o

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "BEYOND_ANY_NODE",
    "FRACTION_ANNOTATION",
    "FRACTION_DEVICES_ANNOTATION",
    "GPU_GROUP_LABEL",
    "GPU_MEMORY_ANNOTATION",
    "GPU_SHORTAGE",
    "KAI_SCHEDULER",
    "QUEUE_LABEL",
    "QUEUE_REASONS",
    "SHARE_ANNOTATIONS",
    "KaiReason",
    "beyond_any_node",
    "kai_pod",
    "kai_reasons",
    "node_reasons",
    "queue_reasons",
    "reasons_text",
]

# Reasons KAI gives when a queue (not the nodes) is what stops a workload.
QUEUE_REASONS = ("OverLimit", "NonPreemptibleOverQuota", "QueueDoesNotExist")


class KaiReason:
    """Why KAI does not place a workload: a reason code (may be empty) and KAI's message."""

    def __init__(self, code: str, message: str, source: str) -> None:
        self.code = code
        self.message = " ".join(message.split())
        self.source = source

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KaiReason) and (self.code, self.message) == (
            other.code, other.message)

    def __hash__(self) -> int:
        return hash((self.code, self.message))

    def __repr__(self) -> str:
        return f"KaiReason({self.code!r}, {self.message!r}, {self.source!r})"

    @property
    def is_queue(self) -> bool:
        return self.code in QUEUE_REASONS or any(
            code in self.message for code in QUEUE_REASONS)

    @property
    def said(self) -> set[str]:
        """The words a copy of this reason can come in: KAI writes a job's refusal on the pod
        as "<code>: <message>." (the code alone without a message: JobFitErrorsToMessage,
        pkg/scheduler/api/common_info/job_errors.go:65-74 at v0.16.8), in the PodGroup's
        reasons[] code and message apart (job_errors.go:119-125, 211-217)."""
        return {self.text().removesuffix("."), self.message.removesuffix(".")} - {""}

    def text(self) -> str:
        if self.code and self.message:
            return f"{self.code}: {self.message}"
        return self.code or self.message or "no reason given"


def queue_reasons(pod_group: Mapping[str, Any] | None) -> list[KaiReason]:
    """The PodGroup's scheduling conditions, newest reasons last."""
    out: list[KaiReason] = []
    status = (pod_group or {}).get("status") or {}
    for cond in status.get("schedulingConditions") or []:
        if not isinstance(cond, dict):
            continue
        found = False
        for reason in cond.get("reasons") or []:
            if isinstance(reason, dict) and (reason.get("reason") or reason.get("message")):
                out.append(KaiReason(str(reason.get("reason") or ""),
                                     str(reason.get("message") or ""), "PodGroup"))
                found = True
        if not found and (cond.get("reason") or cond.get("message")):
            out.append(KaiReason(str(cond.get("reason") or ""), str(cond.get("message") or ""),
                                 "PodGroup"))
    return out


def kai_reasons(host_pod: Mapping[str, Any] | None, pod_group: Mapping[str, Any] | None,
                events: Sequence[Mapping[str, Any]]) -> list[KaiReason]:
    """Every reason KAI gave: the PodGroup's conditions first (they carry the codes), then the
    pod's PodScheduled=False condition and Warning `Unschedulable` events, each message once."""
    out = queue_reasons(pod_group)
    cond = o.condition(host_pod, "PodScheduled")
    if cond is not None and cond.get("status") == "False" and cond.get("message"):
        out.append(KaiReason("", str(cond.get("message")), "pod condition"))
    for event in events:
        if event.get("type") == "Normal" or event.get("reason") not in (
                "Unschedulable", "FailedScheduling"):
            continue
        out.append(KaiReason("", o.event_message(event), f"event {event.get('reason')}"))
    # The same words once, whoever told them (KaiReason.said): the PodGroup's copy, which
    # carries the code, comes first.
    unique: list[KaiReason] = []
    for reason in out:
        if not any(kept.said & reason.said for kept in unique):
            unique.append(reason)
    return unique


# KAI's words for a node whose GPUs cannot hold the request (pod_errors.go:89,101,107; the
# topology variant, job_errors.go:172).
GPU_SHORTAGE = ("didn't have enough resources: GPU", "didn't have enough of mig profile")
# One entry of KAI's per-node histogram: "<count> node(s) <why>", entries joined by ". " (by
# ", " in kube-scheduler's "0/2 nodes are available: …", read the same way).
_NODE_REASON = re.compile(
    r"\b(\d+) (node(?:-group)?(?:\(s\))? .*?)(?=[.,] \d+ node|\.?\s*$)")


def node_reasons(message: str) -> tuple[list[str], list[str]]:
    """(GPU shortages, other reasons) among the per-node reasons of a KAI refusal, each
    '<count> <reason>'. A message without a per-node histogram is a GPU shortage when it names
    one, and otherwise names no node: ([], [])."""
    text = " ".join(message.split())
    entries = [f"{m.group(1)} {m.group(2)}" for m in _NODE_REASON.finditer(text)]
    if not entries:
        entries = [text] if any(words in text for words in GPU_SHORTAGE) else []
    gpu = [e for e in entries if any(words in e for words in GPU_SHORTAGE)]
    return gpu, [e for e in entries if e not in gpu]


# KAI's MaxNodePoolResources pre-filter turns away a pod asking more GPUs than any node of the
# shard has allocatable before any node is tried (KAI v0.16.8 pkg/scheduler/k8s_internal/
# predicates/maxNodeResources.go:78-81, its words :114-136): "The pod NS/NAME requires GPU: 9,
# ... Max GPU resources available in a single node in the default node-pool is topped at 8",
# or "... No node in the default node-pool has GPU resources" when no node has any.
BEYOND_ANY_NODE = ("Max GPU resources available in a single node", "node-pool has GPU resources")


def beyond_any_node(message: str) -> bool:
    """KAI refused the pod because no node of the pool has as many GPUs as it asks."""
    text = " ".join(message.split())
    return any(words in text for words in BEYOND_ANY_NODE)


def reasons_text(reasons: Sequence[KaiReason], limit: int = 2) -> str:
    shown = [r.text() for r in reasons[:limit]]
    more = len(reasons) - limit
    return "; ".join(shown) + (f" (+{more} more)" if more > 0 else "")


QUEUE_LABEL = "kai.scheduler/queue"  # KAI's podgrouper.queueLabelKey
FRACTION_ANNOTATION = "gpu-fraction"
# KAI's other ways to ask for part of a GPU (KAI v0.16.8 pkg/common/constants/constants.go:58,60;
# docs/gpu-sharing/README.md: `gpu-memory` in MiB): a fraction of that many devices, or memory.
FRACTION_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
GPU_MEMORY_ANNOTATION = "gpu-memory"
SHARE_ANNOTATIONS = (FRACTION_ANNOTATION, FRACTION_DEVICES_ANNOTATION, GPU_MEMORY_ANNOTATION)
KAI_SCHEDULER = "kai-scheduler"
GPU_GROUP_LABEL = "runai-gpu-group"  # KAI's label on fraction pods sharing one device


def kai_pod(name: str, namespace: str, labels: dict[str, str], image: str, *, queue: str,
            fraction: str = "", gpus: int = 0, node: str = "",
            scheduler_name: str = KAI_SCHEDULER, queue_label: str = QUEUE_LABEL
            ) -> dict[str, Any]:
    """A pod for KAI: in `queue` (labelled with KAI's `queueLabelKey`), asking a `fraction` of
    one GPU (KAI's `gpu-fraction`) or `gpus` whole GPUs, on the node whose
    `kubernetes.io/hostname` label is `node` when given; `scheduler_name` is the one KAI's Config
    names (`spec.global.schedulerName`)."""
    container: dict[str, Any] = {"name": "app", "image": image, "imagePullPolicy": "IfNotPresent"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"schedulerName": scheduler_name, "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": 0, "containers": [container]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "labels": {**labels, queue_label: queue}}
    if fraction:
        metadata["annotations"] = {FRACTION_ANNOTATION: fraction}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
