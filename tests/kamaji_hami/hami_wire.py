"""HAMi v2.10.0's annotations as the fakes that play HAMi read and write them (FakeHami in
tests/kamaji_hami/fakes.py, HamiPlayer in tests/kamaji_hami/kmock_lab.py).

Written from upstream's source at the pin (Project-HAMi/HAMi v2.10.0, 4707fb02c91c), never with
gpulab's parsers: a fake that decoded with gpulab's own code would agree with any bug in it.
tests/kamaji_hami/test_hami_wire.py checks that this decoder and gpulab's agree on upstream's own
examples (tests/data/pinned/upstream/hami_v2.10.0_pkg_device_devices_test.go). The encoders at
the end write what HAMi writes on nodes, pods and events, for the builders and the fakes.
"""

from __future__ import annotations

import json
import re
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

# pkg/device/nvidia/device.go:42 (RegisterAnnos), :50 (GPUUseUUID), :167-168 (the request and
# allocation annotations of NVIDIA devices).
REGISTER = "hami.io/node-nvidia-register"
USE_UUID = "nvidia.com/use-gpuuuid"
TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
ALLOCATED = "hami.io/vgpu-devices-allocated"
# pkg/util/types.go:21, :23, :25.
ASSIGNED_NODE = "hami.io/vgpu-node"
BIND_PHASE = "hami.io/bind-phase"
BIND_ALLOCATING = "allocating"
# pkg/util/nodelock/nodelock.go:40-41; the value is `<RFC 3339 time>,<namespace>,<name>`
# (GenerateNodeLockKeyByPod, nodelock.go:306-311).
NODE_LOCK = "hami.io/mutex.lock"
# charts/hami/values.yaml:63.
SCHEDULER_NAME = "hami-scheduler"

# DeviceInfo's JSON names (pkg/device/devices.go:127-140) and the Go kind each decodes into.
_FIELDS = {"id": "string", "index": "uint", "count": "int32", "devmem": "int32",
           "devcore": "int32", "type": "string", "numa": "int", "mode": "string",
           "migprofiles": "list", "migtemplate": "list", "health": "bool",
           "devicevendor": "string", "custominfo": "dict"}
_GO_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")  # strconv.ParseInt(s, 10, 32) takes a sign


def _decodes_as(kind: str, value: Any) -> bool:
    """encoding/json: null leaves the zero value; an integer field takes no fraction or bool."""
    if value is None:
        return True
    if kind in ("string", "bool", "list", "dict"):
        return isinstance(value, {"string": str, "bool": bool, "list": list,
                                  "dict": dict}[kind])
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    if kind == "uint":
        return value >= 0
    return -(2**31) <= value < 2**31 if kind == "int32" else True


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def decode_node_devices(raw: str | None) -> list[dict[str, Any]] | None:
    """UnMarshalNodeDevices (devices.go:445-449): json.Unmarshal into []*DeviceInfo. None when
    it fails (not JSON, not a list of objects, a value of the wrong type anywhere); each card
    with every field, zero when absent (`health` is omitempty, devices.go:138: absent is false).
    Names match case-insensitively, as encoding/json matches them."""
    if raw is None:
        return None
    try:
        items = json.loads(raw, parse_constant=_no_constant)  # Go reads no NaN, Infinity
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    cards = []
    for item in items:
        if not isinstance(item, dict):
            return None
        card: dict[str, Any] = {"id": "", "index": 0, "count": 0, "devmem": 0, "devcore": 0,
                                "type": "", "numa": 0, "mode": "", "health": False}
        for key, value in item.items():
            kind = _FIELDS.get(key.lower())
            if kind is None:
                continue
            if not _decodes_as(kind, value):
                return None
            if value is not None:
                card[key.lower()] = value
        cards.append(card)
    return cards


def decode_container_devices(text: str) -> list[tuple[str, str, int, int]]:
    """DecodeContainerDevices (devices.go:496-527): `uuid,type,mem,cores` per device, `:`
    between devices; an entry without a comma is skipped; ValueError as upstream errors (under
    four fields, a number strconv.ParseInt(s, 10, 32) refuses)."""
    devices = []
    for entry in text.split(":") if text else []:
        if "," not in entry:
            continue
        fields = entry.split(",")
        if len(fields) < 4:
            raise ValueError("pod annotation format error, missing fields")
        numbers = []
        for number in fields[2:4]:
            if not _GO_DECIMAL.match(number) or not -(2**31) <= int(number) < 2**31:
                raise ValueError(f"invalid number {number!r}")
            numbers.append(int(number))
        devices.append((fields[0], fields[1], numbers[0], numbers[1]))
    return devices


def decode_pod_devices(text: str | None) -> list[list[tuple[str, str, int, int]]] | None:
    """One device type of DecodePodDevices (devices.go:529-556): `;` between containers, empty
    ones kept (the index is the container's, devices.go:546-551); None when a container fails to
    decode (upstream returns the error and the pod is skipped) or the annotation is absent."""
    if text is None:
        return None
    try:
        return [decode_container_devices(part) for part in text.split(";")]
    except ValueError:
        return None


def encode_pod_devices(containers: list[list[tuple[str, str, int, int]]]) -> str:
    """EncodePodSingleDevice (devices.go:476-484) over EncodeContainerDevices (:451-459): every
    device followed by `:`, every container by `;`."""
    return "".join("".join(f"{uuid},{kind},{mem},{cores}:" for uuid, kind, mem, cores in devices)
                   + ";" for devices in containers)


def used_by_card(pods: list[dict[str, Any]], node_name: str) -> dict[str, tuple[int, int]]:
    """Memory and cores in use per card uuid on `node_name`: the grants of the pods bound there,
    decoded as HAMi's pod informer decodes them (onAddPod, pkg/scheduler/scheduler.go:137-171,
    with DecodePodDevices); a pod whose allocation fails to decode holds nothing."""
    used: dict[str, tuple[int, int]] = {}
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        for devices in decode_pod_devices(annotations.get(ALLOCATED)) or []:
            for uuid, _kind, mem, cores in devices:
                old_mem, old_cores = used.get(uuid, (0, 0))
                used[uuid] = (old_mem + mem, old_cores + cores)
    return used


# --------------------------------------------------------------------------- what HAMi writes
# Encoders of the strings HAMi v2.10.0 (4707fb02c91c) writes on nodes, pods and events, for the
# builders and fakes that stand for it. Each is written from the Go line cited beside it.

BIND_SUCCESS = "success"  # pkg/util/types.go:27 DeviceBindSuccess
BIND_TIME = "hami.io/bind-time"  # pkg/util/types.go:22 BindTimeAnnotations
ASSIGNED_TIME = "hami.io/vgpu-time"  # pkg/util/types.go:20 AssignedTimeAnnotations
HANDSHAKE = "hami.io/node-handshake"  # pkg/device/nvidia/device.go:41 HandshakeAnnos
# pkg/util/nodelock/nodelock.go:46 ErrNodeLockContention, :56 NodeLockTimeout (5 minutes).
LOCK_CONTENTION = "node lock contention"
NODE_LOCK_TIMEOUT_SECONDS = 300

# The reasons of a card that does not fit, as Fit counts them (pkg/device/nvidia/device.go:727-827)
# and GenReason prints them (pkg/device/common/common.go:25-44, the line of each beside it).
CARD_TYPE_MISMATCH = "CardTypeMismatch"  # common.go:26
CARD_UUID_MISMATCH = "CardUuidMismatch"  # common.go:27 CardUUIDMismatch
CARD_TIME_SLICING_EXHAUSTED = "CardTimeSlicingExhausted"  # common.go:28
CARD_INSUFFICIENT_MEMORY = "CardInsufficientMemory"  # common.go:30
CARD_INSUFFICIENT_CORE = "CardInsufficientCore"  # common.go:31
CARD_NOT_HEALTH = "CardNotHealth"  # common.go:32
CARD_CORDONED = "CardCordoned"  # common.go:33
EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT = "ExclusiveDeviceAllocateConflict"  # common.go:35
NUMA_NOT_FIT = "NumaNotFit"  # common.go:34
CARD_MIG_TOPOLOGY_INFEASIBLE = "CardMigTopologyInfeasible"  # common.go:37
# A node HAMi has not registered: getNodesUsage leaves it out with this text as its failed-node
# reason (pkg/scheduler/scheduler.go:846-853), which the extender hands to kube-scheduler; no
# FilteringFailed event names it (recordFilteringFailures only sees the nodes calcScore scored,
# score.go:348-353, 410-412): the pod gets "no available node" (scheduler.go:1109-1111).
NODE_UNREGISTERED = "node unregistered"

# The reasons of HAMi's events (pkg/scheduler/event.go:33-43): Warning when the filter or bind
# failed, Normal when it succeeded (event.go:56-78).
FILTERING_FAILED = "FilteringFailed"
FILTERING_SUCCEED = "FilteringSucceed"
BINDING_FAILED = "BindingFailed"
BINDING_SUCCEED = "BindingSucceed"


def go_time_datetime(when: datetime) -> str:
    """Go's `time.DateTime` layout, "2006-01-02 15:04:05"."""
    return when.strftime("%Y-%m-%d %H:%M:%S")


def handshake_requesting(when: datetime) -> str:
    """The scheduler's handshake mark on a node it asks to report its devices
    (pkg/device/devices.go:601, CheckHealth): `"Requesting_" + time.Now().Format(time.DateTime)`.
    The mock device plugin never answers `Reported_` (mock-device-plugin v1.0.1 writes no
    handshake), so a lab's worker keeps this mark; allocatable > 0 keeps HAMi from cleaning the
    node up once it is older than 60 s (devices.go:587-595)."""
    return "Requesting_" + go_time_datetime(when)


def unix_seconds(when: datetime) -> str:
    """`strconv.FormatInt(time.Now().Unix(), 10)`: hami.io/vgpu-time at filter time
    (pkg/scheduler/scheduler.go:1126) and hami.io/bind-time at bind time (scheduler.go:1033)."""
    return str(int(when.timestamp()))


def go_duration(seconds: int) -> str:
    """Go's time.Duration.String() for whole seconds: 5 minutes is "5m0s", 90 s "1m30s"."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def filter_succeeded(target: str, total_nodes: int, scores: list[tuple[str, float]]) -> str:
    """The FilteringSucceed event's message, genSuccessMsg (pkg/scheduler/scheduler.go:1201-1209):
    `find fit node(%s), %d nodes not fit, %d nodes fit(%s)`, the scores `node:%.2f` joined by
    `,`."""
    joined = ",".join(f"{node}:{score:.2f}" for node, score in scores)
    return (f"find fit node({target}), {total_nodes - len(scores)} nodes not fit, "
            f"{len(scores)} nodes fit({joined})")


def bind_succeeded(nodes: list[str], namespace: str, name: str) -> str:
    """The BindingSucceed event's message (pkg/scheduler/event.go:61, `%v` of a []string is
    `[a b]`)."""
    return f"Successfully binding node [{' '.join(nodes)}] to {namespace}/{name}"


def node_locked(node: str, timeout_seconds: int = NODE_LOCK_TIMEOUT_SECONDS) -> str:
    """The BindingFailed message when another pod holds the node lock
    (pkg/util/nodelock/nodelock.go:290: `node %s has been locked within %v: %w`)."""
    return f"node {node} has been locked within {go_duration(timeout_seconds)}: {LOCK_CONTENTION}"


def gen_reason(reasons: dict[str, int], cards: int) -> str:
    """A node's failure reason, GenReason (pkg/device/common/common.go:46-53): `%d/%d %s` per
    reason, sorted, joined by `, `; the extender returns it per failed node (score.go:388-394)."""
    return ", ".join(sorted(f"{count}/{cards} {reason}" for reason, count in reasons.items()))


def filter_failed(reason: str, nodes: list[str]) -> str:
    """A FilteringFailed event per reason (recordFilteringFailures, pkg/scheduler/score.go:348-353):
    `%d nodes %s(%s)`, the nodes sorted and joined by `,`."""
    return f"{len(nodes)} nodes {reason}({','.join(sorted(nodes))})"


def no_available_node(nodes: int) -> str:
    """The FilteringFailed event when no node fits (pkg/scheduler/scheduler.go:1111)."""
    return f"no available node, {nodes} nodes do not meet"


def _f32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def node_score(used: tuple[int, int, int], total: tuple[int, int, int]) -> float:
    """The score a node gets before a pod is placed on it, ComputeDefaultScore
    (pkg/scheduler/policy/node_policy.go:106-130) in float32: `Weight * (used/total slots +
    usedcores/totalcores + usedmem/totalmem)` summed over the node's cards, Weight 10
    (pkg/util/types.go:99); OverrideScore adds NVIDIA's device score, always 0
    (nvidia/device.go:641-643). `used` and `total` are (slots, cores, memory MiB)."""
    if 0 in total:
        return 0.0
    parts = [_f32(_f32(u) / _f32(t)) for u, t in zip(used, total, strict=True)]
    return _f32(10 * _f32(_f32(parts[0] + parts[1]) + parts[2]))


def node_score_of(cards: list[dict[str, Any]], pods: list[dict[str, Any]], node_name: str
                  ) -> float:
    """node_score for `node_name` before a new pod: its registered `cards` (decode_node_devices)
    against the grants of the pods bound there, one slot per grant (getNodesUsage,
    pkg/scheduler/scheduler.go:757-786)."""
    slots = cores = memory = 0
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        for devices in decode_pod_devices(annotations.get(ALLOCATED)) or []:
            for _uuid, _kind, mem, core in devices:
                slots, cores, memory = slots + 1, cores + core, memory + mem
    total = (sum(int(c["count"]) for c in cards), sum(int(c["devcore"]) for c in cards),
             sum(int(c["devmem"]) for c in cards))
    return node_score((slots, cores, memory), total)
