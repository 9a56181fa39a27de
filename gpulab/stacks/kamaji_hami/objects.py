"""Reading HAMi facts out of plain API objects (pure helpers for kamaji-hami's checks).

The generic Kubernetes readers of `gpulab.verify.objects` are re-exported, so a check reads
every fact through one module (`o.name`, `o.allocations`, ...).

HAMi v2.10 formats (docs/dev/upstream-facts/stack-kamaji-hami.md §2-3):
- `hami.io/vgpu-devices-allocated`: `UUID,NVIDIA,<memMiB>,<cores>:` per device, `;` per container
  (parsed by gpulab.inventory, shared with `status`);
- `hami.io/vgpu-node`: the node HAMi's filter chose;
- `hami.io/mutex.lock` (node): `<RFC3339>,<namespace>,<pod>`;
- events `FilteringSucceed`/`FilteringFailed`/`BindingSucceed`/`BindingFailed` from hami-scheduler,
  failure reasons such as `CardInsufficientCore` inside their messages.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gpulab import nesting
from gpulab.verify.hami import DeviceGrant, parse_allocation
from gpulab.verify.objects import (
    annots,
    condition,
    container_problems,
    event_message,
    event_source,
    events_about,
    events_with,
    int_quantity,
    labels,
    metadata,
    missing_containers,
    name,
    node_ready,
    pod_node,
    pod_phase,
    pod_serving,
    pod_summary,
    scheduler_name,
    short_events,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gpulab.verify.state import JsonObj

__all__ = [
    "ALLOCATED",
    "BIND_PHASE",
    "HAMI_SCHEDULER",
    "LOCK_CONTENTION",
    "NODE_LOCK",
    "VGPU_NODE",
    "allocations",
    "annots",
    "condition",
    "container_problems",
    "event_message",
    "event_source",
    "events_about",
    "events_with",
    "hami_reasons",
    "int_quantity",
    "labels",
    "lock_contention",
    "metadata",
    "missing_containers",
    "name",
    "node_ready",
    "pod_node",
    "pod_phase",
    "pod_serving",
    "pod_summary",
    "registered_devices",
    "scheduler_name",
    "short_events",
]

HAMI_SCHEDULER = "hami-scheduler"
VGPU_NODE = "hami.io/vgpu-node"
ALLOCATED = "hami.io/vgpu-devices-allocated"
BIND_PHASE = "hami.io/bind-phase"
NODE_LOCK = "hami.io/mutex.lock"
LOCK_CONTENTION = "node lock contention"

# HAMi's per-node failure reasons (H pkg/device/common/common.go) plus its two plain phrases.
_HAMI_REASON = re.compile(
    r"\b(Card[A-Z][A-Za-z]+|Node(?:InsufficientDevice|UnfitPod)|AllocatedCardsInsufficientRequest"
    r"|ExclusiveDeviceAllocateConflict|NumaNotFit|ResourceQuotaNotFit|ModeNotFit)\b"
    r"|(node unregistered)|(node lock contention)"
)


# --------------------------------------------------------------------------- HAMi allocation


def allocations(pod: Mapping[str, Any] | None) -> list[list[DeviceGrant]] | None:
    """Per container, the devices HAMi allocated (inventory.parse_allocation); None when the pod
    has no `hami.io/vgpu-devices-allocated` annotation, i.e. HAMi did not place it."""
    raw = annots(pod).get(ALLOCATED)
    return None if raw is None else parse_allocation(str(raw))


def registered_devices(raw: str | None) -> list[JsonObj] | None:
    """`hami.io/node-nvidia-register` decoded (HAMi v2.10 reads JSON only); None if unreadable.

    Unlike inventory.parse_register (which gives [] for both), TC-04 must tell "no devices" from
    "not JSON", so this reader keeps them apart.
    """
    if raw is None:
        return None
    try:
        data = nesting.json_loads(raw)
    except ValueError:
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return None
    return data


def hami_reasons(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """HAMi refusal reasons named in warning events, in first-seen order, without duplicates."""
    found: list[str] = []
    for event in events:
        if event.get("type") == "Normal":
            continue
        for match in _HAMI_REASON.finditer(event_message(event)):
            reason = next(g for g in match.groups() if g)
            if reason not in found:
                found.append(reason)
    return found


def lock_contention(events: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The latest `BindingFailed ... node lock contention` event, if any."""
    hits = events_with(events, "BindingFailed", LOCK_CONTENTION)
    return hits[-1] if hits else None
