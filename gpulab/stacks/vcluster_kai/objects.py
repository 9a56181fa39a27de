"""Reading KAI Scheduler and vCluster facts out of plain API objects (pure helpers for the checks).

KAI's reasons (PodGroup conditions, the pod's condition and events) are read by
gpulab.verify.kai, shared with `verify --kubeconfig`; re-exported here.
- Queue `status.allocated` / `requested` are ResourceLists: `nvidia.com/gpu: 330m` for fractions.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gpulab.stacks.vcluster_kai import render as kr
from gpulab.verify import objects as o
from gpulab.verify.kai import (
    FRACTION_DEVICES_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    QUEUE_REASONS,
    KaiReason,
    kai_reasons,
    queue_reasons,
    reasons_text,
)

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


def gpu_request(pod: Mapping[str, Any]) -> str:
    """What a pod asks of the GPUs: its `nvidia.com/gpu` request/limit, or a share by KAI's
    `gpu-fraction` (times `gpu-fraction-num-devices`) or `gpu-memory` (MiB) annotation; '' when
    none."""
    annotations = o.annots(pod)
    fraction = annotations.get(kr.FRACTION_ANNOTATION)
    devices = annotations.get(FRACTION_DEVICES_ANNOTATION)
    each = f" on each of {devices} GPUs" if devices else ""
    if fraction:
        return f"{fraction} GPU{each} (gpu-fraction)"
    memory = annotations.get(GPU_MEMORY_ANNOTATION)
    if memory:
        return f"{memory} MiB of GPU memory{each} (gpu-memory)"
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
