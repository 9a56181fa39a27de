"""What gpulab knows of KAI Scheduler's answers, for every cluster: why a workload is not placed.

KAI v0.16.8 (docs/dev/upstream-facts/stack-vcluster-kai.md §1):
- PodGroup `status.schedulingConditions[]` (type `UnschedulableOnNodePool`) carry `reasons[]` with a
  `reason` code (`OverLimit`, `NonPreemptibleOverQuota`, `QueueDoesNotExist`, …) and a `message`;
  older fields `reason`/`message` on the condition itself are deprecated but still read;
- the pod gets condition `PodScheduled=False/Unschedulable` and a Warning event `Unschedulable`.

Pure functions over API objects, shared by the vcluster-kai checks and `verify --kubeconfig`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.verify import objects as o

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "FRACTION_ANNOTATION",
    "GPU_GROUP_LABEL",
    "KAI_SCHEDULER",
    "QUEUE_LABEL",
    "QUEUE_REASONS",
    "KaiReason",
    "kai_pod",
    "kai_reasons",
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

    def text(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


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
    pod's PodScheduled=False condition and Warning `Unschedulable` events, without duplicates."""
    out = queue_reasons(pod_group)
    cond = o.condition(host_pod, "PodScheduled")
    if cond is not None and cond.get("status") == "False" and cond.get("message"):
        out.append(KaiReason("", str(cond.get("message")), "pod condition"))
    for event in events:
        if event.get("type") == "Normal" or event.get("reason") not in (
                "Unschedulable", "FailedScheduling"):
            continue
        out.append(KaiReason("", o.event_message(event), f"event {event.get('reason')}"))
    seen: set[KaiReason] = set()
    unique = []
    for reason in out:
        if reason not in seen:
            seen.add(reason)
            unique.append(reason)
    return unique


def reasons_text(reasons: Sequence[KaiReason], limit: int = 2) -> str:
    shown = [r.text() for r in reasons[:limit]]
    more = len(reasons) - limit
    return "; ".join(shown) + (f" (+{more} more)" if more > 0 else "")


QUEUE_LABEL = "kai.scheduler/queue"  # KAI's podgrouper.queueLabelKey
FRACTION_ANNOTATION = "gpu-fraction"
KAI_SCHEDULER = "kai-scheduler"
GPU_GROUP_LABEL = "runai-gpu-group"  # KAI's label on fraction pods sharing one device


def kai_pod(name: str, namespace: str, labels: dict[str, str], image: str, *, queue: str,
            fraction: str = "", gpus: int = 0, node: str = "") -> dict[str, Any]:
    """A pod for KAI: in `queue`, asking a `fraction` of one GPU (KAI's `gpu-fraction`) or
    `gpus` whole GPUs, on `node` when given (kubernetes.io/hostname)."""
    container: dict[str, Any] = {"name": "app", "image": image, "imagePullPolicy": "IfNotPresent"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"schedulerName": KAI_SCHEDULER, "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": 0, "containers": [container]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "labels": {**labels, QUEUE_LABEL: queue}}
    if fraction:
        metadata["annotations"] = {FRACTION_ANNOTATION: fraction}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
