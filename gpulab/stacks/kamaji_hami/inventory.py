"""GPU inventory from HAMi's annotations: per card, memory and cores in use and by which pods.

Pure functions over API objects (dicts), shared by `status` and `verify`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALLOCATED_ANNOTATION",
    "CardUsage",
    "DeviceGrant",
    "card_usage",
    "parse_allocation",
    "parse_register",
    "usage_bar",
]

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
NODE_ANNOTATION = "hami.io/vgpu-node"


@dataclass(frozen=True)
class DeviceGrant:
    """One device slice HAMi gave a container: `uuid,type,memMiB,cores`."""

    device_id: str
    vendor: str
    memory_mib: int
    cores: int


def parse_allocation(value: str | None) -> list[list[DeviceGrant]]:
    """`GPU-0,NVIDIA,20000,30:;` → one list per container, one grant per device.

    Malformed entries are skipped: a verify check reports what is missing, not a parser crash.
    """
    containers: list[list[DeviceGrant]] = []
    for container in (value or "").split(";"):
        grants: list[DeviceGrant] = []
        for device in container.split(":"):
            parts = device.split(",")
            if len(parts) < 4 or not parts[0]:
                continue
            try:
                grants.append(DeviceGrant(parts[0], parts[1], int(parts[2]), int(parts[3])))
            except ValueError:
                continue
        if grants:
            containers.append(grants)
    return containers


def parse_register(value: str | None) -> list[dict[str, Any]]:
    """The node's registered devices (HAMi v2.10 JSON); [] when absent or not JSON."""
    try:
        data = json.loads(value or "[]")
    except json.JSONDecodeError:
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


@dataclass
class CardUsage:
    """One card on one node, with what the running and pending-bound pods use of it."""

    node: str
    device_id: str
    model: str
    memory_mib: int
    cores: int
    slots: int
    used_memory: int = 0
    used_cores: int = 0
    pods: list[str] = field(default_factory=list)


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def card_usage(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[CardUsage]:
    """Cards from each node's register annotation, used by pods HAMi placed on that node.

    Finished pods (Succeeded/Failed) no longer hold their slice and are not counted.
    """
    cards: dict[tuple[str, str], CardUsage] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        for device in parse_register(_annotations(node).get(REGISTER_ANNOTATION)):
            cards[(name, str(device.get("id")))] = CardUsage(
                node=name,
                device_id=str(device.get("id")),
                model=str(device.get("type", "")),
                memory_mib=int(device.get("devmem", 0)),
                cores=int(device.get("devcore", 0)),
                slots=int(device.get("count", 0)),
            )
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in {"Succeeded", "Failed"}:
            continue
        notes = _annotations(pod)
        node_name = notes.get(NODE_ANNOTATION) or (pod.get("spec") or {}).get("nodeName", "")
        label = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
        for container in parse_allocation(notes.get(ALLOCATED_ANNOTATION)):
            for grant in container:
                card = cards.get((node_name, grant.device_id))
                if card is None:
                    continue
                card.used_memory += grant.memory_mib
                card.used_cores += grant.cores
                if label not in card.pods:
                    card.pods.append(label)
    return sorted(cards.values(), key=lambda c: (c.node, c.device_id))


def usage_bar(used: int, total: int, width: int = 20) -> str:
    """`[########------------]` with the share of `total` that is used (clamped)."""
    if total <= 0:
        return "[" + "?" * width + "]"
    filled = min(width, round(width * used / total))
    return "[" + "#" * filled + "-" * (width - filled) + "]"
