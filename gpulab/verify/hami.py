"""What gpulab knows of HAMi, for every cluster: its annotations, the card inventory they give
(per card, memory and cores in use and by which pods), and the pod sizes that prove sharing and
over-commit refusal on one card.

Pure functions over API objects (dicts), shared by kamaji-hami's `status` and `verify` and by
`verify --kubeconfig` (gpulab.cluster). HAMi v2.10.0 formats: the register annotation is a JSON
list (`pkg/device/nvidia/device.go` EncodeNodeDevices), an allocation is
`uuid,type,memMiB,cores:` per device and `;` per container (`pkg/device/devices.go`).

HAMi's own reading of them (v2.10.0), which `decode_register` and `hami_usage` follow:
- the register annotation is decoded by `encoding/json` into `[]*DeviceInfo`
  (`pkg/device/nvidia/device.go:302-345`, `pkg/device/devices.go:445-449`): a value of the wrong
  type anywhere fails the whole annotation and the node has no cards; `Health` is
  `json:"health,omitempty"` (`devices.go:138`), so a card written without `health` is unhealthy
  (the device plugin writes it with `MarshalNodeDevices`, `devices.go:422-443`,
  `pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:271`, which omits `false`);
- a pod uses cards only when HAMi assigned it a node (`hami.io/vgpu-node`) and it is not
  terminated (Failed/Succeeded): `pkg/scheduler/scheduler.go:144-153`, `pkg/util/util.go:300-305`;
  its grants are decoded strictly (`devices.go:496-556`): one malformed entry and the pod is
  skipped (`scheduler.go:160-164`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ALLOCATED_ANNOTATION",
    "CORDON_ANNOTATION",
    "DEFAULT_RESOURCES",
    "CardUsage",
    "DeviceGrant",
    "HamiResources",
    "SharingSizes",
    "card_usage",
    "decode_allocation",
    "decode_register",
    "hami_usage",
    "parse_allocation",
    "parse_register",
    "share_pod",
    "sharing_sizes",
    "usage_bar",
]

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
NODE_ANNOTATION = "hami.io/vgpu-node"
# A node annotation listing card uuids HAMi must not allocate (pkg/device/nvidia/device.go:54-59,
# parsed by cordonedDevices, device.go:698-713: comma-separated, blanks skipped).
CORDON_ANNOTATION = "hami.io/device-cordon"
MIG_MODE = "mig"  # device.go:61: such cards are allocated MIG profiles (device.go:602-619, 645-659)


@dataclass(frozen=True)
class HamiResources:
    """The resource names HAMi's scheduler and webhook count (device config `nvidia:`
    resourceCountName, resourceMemoryName, resourceCoreName, resourceMemoryPercentageName:
    pkg/device/nvidia/device.go:97-100; the chart fills them from `resourceName`, `resourceMem`,
    `resourceCores`, `resourceMemPercentage`: charts/hami/templates/scheduler/device-configmap.yaml
    :16-20, values.yaml:25-28)."""

    count: str = "nvidia.com/gpu"
    memory: str = "nvidia.com/gpumem"
    cores: str = "nvidia.com/gpucores"
    memory_percentage: str = "nvidia.com/gpumem-percentage"

    def names(self) -> tuple[str, ...]:
        return tuple(n for n in (self.count, self.memory, self.cores, self.memory_percentage)
                     if n)


DEFAULT_RESOURCES = HamiResources()  # the chart's values.yaml:25-28


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


# DeviceInfo's JSON fields (pkg/device/devices.go:127-140) and the Go type each decodes into.
_DEVICE_FIELDS: dict[str, str] = {
    "id": "string", "index": "uint", "count": "int32", "devmem": "int32", "devcore": "int32",
    "type": "string", "numa": "int", "mode": "string", "migprofiles": "array",
    "migtemplate": "array", "health": "bool", "devicevendor": "string", "custominfo": "object",
}
_INT32 = 2**31
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")


def _go_value_ok(kind: str, value: Any) -> bool:
    """Whether encoding/json decodes `value` into a field of Go type `kind` (null always does:
    it leaves the zero value)."""
    if value is None:
        return True
    if kind == "string":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("array", "object"):
        return isinstance(value, list if kind == "array" else dict)
    if isinstance(value, bool) or not isinstance(value, int):
        return False  # 1.5, "1" and 1e2 do not decode into an integer field
    if kind == "uint":
        return value >= 0
    if kind == "int32":
        return -_INT32 <= value < _INT32
    return True


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def decode_register(value: str | None) -> list[dict[str, Any]] | None:
    """The cards of a node's `hami.io/node-nvidia-register` as HAMi v2.10.0 decodes them
    (module docstring), or None when HAMi gets no cards from it (absent, not JSON, a value of the
    wrong type, or an empty list: device.go:303-315). Keys match case-insensitively, as in
    encoding/json; each card comes back with every field, zero when absent (`health` False)."""
    if value is None:
        return None
    try:  # encoding/json knows no NaN or Infinity
        data = json.loads(value, parse_constant=_no_constant)
    except ValueError:
        return None
    if not isinstance(data, list) or not data:
        return None
    cards = []
    for item in data:
        if not isinstance(item, dict):
            return None
        card: dict[str, Any] = {"id": "", "index": 0, "count": 0, "devmem": 0, "devcore": 0,
                                "type": "", "numa": 0, "mode": "", "migprofiles": [],
                                "health": False}
        for key, raw in item.items():
            field_name = str(key).lower()
            kind = _DEVICE_FIELDS.get(field_name)
            if kind is None:
                continue  # unknown fields are ignored
            if not _go_value_ok(kind, raw):
                return None
            if raw is not None and field_name in card:
                card[field_name] = raw
        cards.append(card)
    return cards


def decode_allocation(value: str | None) -> list[list[DeviceGrant]] | None:
    """A pod's `hami.io/vgpu-devices-allocated` as HAMi's DecodePodDevices reads it
    (devices.go:496-556): `;` per container, `:` per device, `uuid,type,mem,cores`; None when
    HAMi fails to decode it (an entry with a comma but under 4 fields, or a number that is not
    an int32), in which case HAMi skips the pod (scheduler.go:160-164)."""
    containers: list[list[DeviceGrant]] = []
    for container in (value or "").split(";"):
        grants: list[DeviceGrant] = []
        for device in container.split(":"):
            if "," not in device:
                continue
            parts = device.split(",")
            if len(parts) < 4:
                return None
            if not (_GO_INT.match(parts[2]) and _GO_INT.match(parts[3])):
                return None  # strconv.ParseInt(s, 10, 32)
            memory, cores = int(parts[2]), int(parts[3])
            if not (-_INT32 <= memory < _INT32 and -_INT32 <= cores < _INT32):
                return None
            grants.append(DeviceGrant(parts[0], parts[1], memory, cores))
        containers.append(grants)
    return containers


def _pod_label(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def hami_usage(pods: list[dict[str, Any]]
               ) -> dict[tuple[str, str], tuple[int, int, int, list[str]]]:
    """What HAMi counts as used per (node, card uuid): (slices, memory MiB, cores, pods), from
    the pods it assigned (`hami.io/vgpu-node`) that are not terminated (module docstring;
    getNodesUsage, scheduler.go:757-786: one slice per grant)."""
    used: dict[tuple[str, str], tuple[int, int, int, list[str]]] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in {"Succeeded", "Failed"}:
            continue
        notes = _annotations(pod)
        node_name = notes.get(NODE_ANNOTATION)
        if node_name is None:
            continue
        containers = decode_allocation(notes.get(ALLOCATED_ANNOTATION))
        for container in containers or ():
            for grant in container:
                slices, memory, cores, users = used.get((node_name, grant.device_id),
                                                        (0, 0, 0, []))
                label = _pod_label(pod)
                used[(node_name, grant.device_id)] = (
                    slices + 1, memory + grant.memory_mib, cores + grant.cores,
                    users if label in users else [*users, label])
    return used


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
    """Cards from each node's register annotation, used by pods HAMi placed on that node
    (`hami_usage`: its `hami.io/vgpu-node`, not the pod's nodeName; finished pods hold nothing).
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
    for (node_name, device_id), (_slices, memory, cores, users) in hami_usage(pods).items():
        card = cards.get((node_name, device_id))
        if card is not None:
            card.used_memory += memory
            card.used_cores += cores
            card.pods.extend(u for u in users if u not in card.pods)
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
              cores: int, card_id: str, resources: HamiResources = DEFAULT_RESOURCES,
              annotations: Mapping[str, str] | None = None, scheduler_name: str = ""
              ) -> dict[str, Any]:
    """A pod asking HAMi for one slice (`memory` MiB, `cores` %) of card `card_id`, pinned to it
    with `nvidia.com/use-gpuuuid`; it runs `image` (a pause image: nothing to pull). The limits
    use the resource names HAMi is configured with (`resources`); `annotations` are added (e.g.
    HAMi's GPU policy) and `scheduler_name`, when given, is set (else HAMi's webhook sets it)."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {**(annotations or {}), "nvidia.com/use-gpuuuid": card_id},
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
                            resources.count: "1",
                            resources.memory: str(memory),
                            resources.cores: str(cores),
                        }
                    },
                }
            ],
        },
    }
    if scheduler_name:
        pod["spec"]["schedulerName"] = scheduler_name
    return pod
