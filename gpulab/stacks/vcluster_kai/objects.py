"""Reading KAI Scheduler and vCluster facts out of plain API objects (pure helpers for the checks).

KAI v0.16.8 (../shared/docs/stack-vcluster-kai.md §1):
- PodGroup `status.schedulingConditions[]` (type `UnschedulableOnNodePool`) carry `reasons[]` with a
  `reason` code (`OverLimit`, `NonPreemptibleOverQuota`, `QueueDoesNotExist`, …) and a `message`;
  older fields `reason`/`message` on the condition itself are deprecated but still read;
- the pod gets condition `PodScheduled=False/Unschedulable` and a Warning event `Unschedulable`;
- Queue `status.allocated` / `requested` are ResourceLists: `nvidia.com/gpu: 330m` for fractions.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gpulab.stacks.vcluster_kai import render as kr
from gpulab.verify import objects as o

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from gpulab.verify.state import JsonObj

__all__ = [
    "QUEUE_REASONS",
    "KaiReason",
    "allocated",
    "describe_users",
    "find_queue",
    "gpu_request",
    "kai_reasons",
    "quantity",
    "queue_reasons",
    "reasons_text",
]

# Reasons KAI gives when a queue (not the nodes) is what stops a workload.
QUEUE_REASONS = ("OverLimit", "NonPreemptibleOverQuota", "QueueDoesNotExist")
_QUANTITY = re.compile(r"^([+-]?\d+(?:\.\d+)?|[+-]?\.\d+)([a-zA-Z]*)$")
_SUFFIX = {"": Decimal(1), "m": Decimal("0.001"), "k": Decimal(1000), "M": Decimal(10) ** 6,
           "G": Decimal(10) ** 9, "Ki": Decimal(1024), "Mi": Decimal(1024) ** 2,
           "Gi": Decimal(1024) ** 3}


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity ('330m', '1', 2, '0.5') as a Decimal; None if absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIX:
        return None
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
    except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
        return None


def find_queue(queues: Iterable[JsonObj], name: str) -> JsonObj | None:
    for queue in queues:
        if o.name(queue) == name:
            return queue
    return None


def allocated(queue: Mapping[str, Any] | None, resource: str, key: str = "allocated"
              ) -> Decimal | None:
    """`status.<key>[resource]` of a Queue (0 when the queue reports the list without it)."""
    status = (queue or {}).get("status") or {}
    values = status.get(key)
    if not isinstance(values, dict):
        return None
    return quantity(values.get(resource, 0))


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


def gpu_request(pod: Mapping[str, Any]) -> str:
    """What a pod asks of the GPUs: its `nvidia.com/gpu` request/limit, or KAI's `gpu-fraction`
    annotation; '' when neither."""
    fraction = o.annots(pod).get(kr.FRACTION_ANNOTATION)
    if fraction:
        return f"{fraction} GPU (gpu-fraction)"
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amount = (resources.get("limits") or {}).get(kr.GPU_RESOURCE) or (
            resources.get("requests") or {}).get(kr.GPU_RESOURCE)
        total += o.int_quantity(amount) or 0
    return f"{total} GPU" if total else ""


def describe_users(users: Sequence[Mapping[str, Any]], limit: int = 4) -> str:
    """'ns/pod (0.5 GPU (gpu-fraction), queue q, Running)' for the first few GPU users."""
    parts = []
    for pod in list(users)[:limit]:
        meta = o.metadata(pod)
        queue = o.labels(pod).get(kr.QUEUE_LABEL, "")
        parts.append(f"{meta.get('namespace', '')}/{meta.get('name', '')} "
                     f"({gpu_request(pod)}{f', queue {queue}' if queue else ''}, "
                     f"{o.pod_phase(pod)})")
    more = len(users) - limit
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")
