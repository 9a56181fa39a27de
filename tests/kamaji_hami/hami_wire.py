"""HAMi v2.10.0's annotations as the fakes that play HAMi read and write them (FakeHami in
tests/kamaji_hami/fakes.py, HamiPlayer in tests/kamaji_hami/kmock_lab.py).

Written from upstream's source at the pin (Project-HAMi/HAMi v2.10.0, 4707fb02c91c), never with
gpulab's parsers: a fake that decoded with gpulab's own code would agree with any bug in it.
tests/kamaji_hami/test_hami_wire.py checks that this decoder and gpulab's agree on upstream's own
examples (tests/data/pinned/upstream/hami_v2.10.0_device_annotations.json).
"""

from __future__ import annotations

import json
import re
from typing import Any

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
