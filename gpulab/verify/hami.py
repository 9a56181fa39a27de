"""What gpulab knows of HAMi, for every cluster: its annotations, the card inventory they give
(per card, memory and cores in use and by which pods), and the pod sizes that prove sharing and
over-commit refusal on one card.

Pure functions over API objects (dicts), shared by kamaji-hami's `status` and `verify` and by
`verify --kubeconfig` (gpulab.cluster). HAMi v2.10.0 formats: the register annotation is a JSON
list (`pkg/device/nvidia/device.go` EncodeNodeDevices), an allocation is
`uuid,type,memMiB,cores:` per device and `;` per container (`pkg/device/devices.go`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "ALLOCATED_ANNOTATION",
    "CardUsage",
    "DeviceGrant",
    "SharingSizes",
    "card_usage",
    "parse_allocation",
    "parse_register",
    "share_pod",
    "sharing_sizes",
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


class CardShape(Protocol):
    """What sizing needs of a card (a profile's GpuSpec, or a card found in a cluster)."""

    @property
    def memory_mib(self) -> int: ...

    @property
    def cores(self) -> int: ...

    @property
    def split(self) -> int: ...


@dataclass(frozen=True)
class SharingSizes:
    """Pod sizes verify uses on one card, derived from the card (documented in docs/checks.md).

    share: three pods that must fit together on one card (TC-05);
    a fourth share pod must not fit by cores (TC-06); `big_memory` exceeds the card (TC-07).
    """

    card_id: str
    share_memory: int
    share_cores: int
    big_memory: int
    big_cores: int

    @property
    def applicable(self) -> bool:
        return self.share_cores > 0 and self.share_memory > 0


def sharing_sizes(gpu: CardShape, card_id: str) -> SharingSizes:
    """Rule (docs/checks.md): three share pods must fit on one card and a fourth must not.

    Each share pod asks for a quarter of the card's memory (rounded down to 1000 MiB when that is
    possible) and 30% of its cores, or a third when 30% would let a fourth fit; the big pod asks for
    the card's memory rounded up to the next 10000 MiB and at least one of the cores left free.
    Cards where no core size works (1, 2, 4, 5 or 8 cores) or with fewer than four slots get
    no sizes.
    """
    quarter = gpu.memory_mib // 4
    share_memory = (quarter // 1000) * 1000 or quarter
    cores = gpu.cores
    share_cores = (cores * 3) // 10
    if 4 * share_cores <= cores:
        share_cores = cores // 3
    fits_three_not_four = 3 * share_cores <= cores < 4 * share_cores
    if not fits_three_not_four or gpu.split < 4:
        share_cores = 0
    big_memory = (gpu.memory_mib // 10000 + 1) * 10000
    big_cores = max(1, cores - 3 * share_cores)
    return SharingSizes(card_id, share_memory, share_cores, big_memory, big_cores)


def share_pod(name: str, namespace: str, labels: dict[str, str], image: str, *, memory: int,
              cores: int, card_id: str) -> dict[str, Any]:
    """A pod asking HAMi for one slice (`memory` MiB, `cores` %) of card `card_id`, pinned to it
    with `nvidia.com/use-gpuuuid`; it runs `image` (a pause image: nothing to pull)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {"nvidia.com/use-gpuuuid": card_id},
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "limits": {
                            "nvidia.com/gpu": "1",
                            "nvidia.com/gpumem": str(memory),
                            "nvidia.com/gpucores": str(cores),
                        }
                    },
                }
            ],
        },
    }
