"""A real machine joined to a kamaji-hami tenant on kmock (tests/existing/kmock_kamaji.py), as
`gpulab join`'s three commands leave it, and HAMi played on the tenant's kmock server.

* the machine (`join_machine`): its Node (labelled gpu=on and for the lab, Ready, its kubelet at
  the tenant's minor) carrying what HAMi v2.10.0's **real** NVIDIA device plugin registers, not
  the mock's: per card `DeviceInfo{ID: uuid, Index, Count: deviceSplitCount, Devmem: MiB,
  Devcore: 100, Type: "NVIDIA-"+model unless it starts with NVIDIA, Mode: "hami-core", Health}`
  (pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:150-189), encoded as
  MarshalNodeDevices does (pkg/device/devices.go:422-443: encoding/json over the struct's tags,
  devices.go:127-140, `omitempty` dropping zero values), and the kubelet's allocatable
  nvidia.com/gpu = cards x deviceSplitCount (rm/devices.go:195-216; memory and cores are no node
  resources); hami-scheduler's handshake (hami_wire.handshake_requesting); its kube-system pods
  (calico-node, kube-proxy, konnectivity-agent, HAMi's scheduler and device plugin), Running.
* HAMi (`MachinePlayer`): tests/kamaji_hami/kmock_lab.py's HamiPlayer (webhook, scheduler,
  kubelet, decoding with tests/kamaji_hami/hami_wire.py, never gpulab's parsers), plus the real
  device plugin's part the mock never plays: once a pod is bound and its container allocated,
  `bind-phase: success` on the pod and HAMi's node lock released
  (plugin/util.go:392-404, updatePodAnnotationsAndReleaseLock).
"""

from __future__ import annotations

import contextlib
import copy
import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as wire
from tests.kamaji_hami.kmock_lab import (
    CONFIGMAPS,
    DAEMONSETS,
    NODES,
    PODS,
    HamiPlayer,
    _Player,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from gpulab.stacks.kamaji_hami.profile import TenantSpec
    from tests.existing.kmock_kamaji import KamajiCluster
    from tests.kamaji_hami.kmock_lab import Cluster

# DeviceInfo's fields in struct order with their JSON names (devices.go:127-140); each is
# `omitempty`: a zero value (0, "", false, empty list) is left out.
_DEVICE_INFO = ("id", "index", "count", "devmem", "devcore", "type", "numa", "mode",
                "migProfiles", "health")
SPLIT = 10  # deviceSplitCount, the chart's default (charts/hami/values.yaml: devicePlugin)
HANDSHAKE_AT = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def card(uuid: str, model: str, memory_mib: int, index: int = 0) -> dict[str, Any]:
    """One card as the real plugin builds its DeviceInfo (register.go:166-189): the NVML name
    prefixed `NVIDIA-` unless it starts with NVIDIA, all its cores (DeviceCoreScaling 1),
    deviceSplitCount slices, mode hami-core (pkg/device/nvidia/device.go:62), healthy."""
    kind = model if model.startswith("NVIDIA") else f"NVIDIA-{model}"
    return {"id": uuid, "index": index, "count": SPLIT, "devmem": memory_mib, "devcore": 100,
            "type": kind, "numa": 0, "mode": "hami-core", "health": True}


def register_annotation(cards: list[dict[str, Any]]) -> str:
    """MarshalNodeDevices: json.Marshal of the DeviceInfo list, fields in struct order, zero
    values omitted, compact (Go's encoding/json writes no spaces)."""
    out = [{k: c[k] for k in _DEVICE_INFO if c.get(k) not in (None, 0, "", False, [])}
           for c in cards]
    return json.dumps(out, separators=(",", ":"))


def machine_node(name: str, lab: str, tenant: str, kubelet: str,
                 cards: list[dict[str, Any]]) -> dict[str, Any]:
    """A joined machine's Node with `cards` registered as HAMi's real device plugin does, its
    kubelet at `kubelet`, Ready, labelled gpu=on and for the lab and tenant, with the
    scheduler's handshake (also the shape the unit tests of the checks on joined machines use)."""
    slices = str(sum(c["count"] for c in cards))
    resources = {"cpu": "32", "memory": "257000Mi", "pods": "110", "nvidia.com/gpu": slices}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{tenant}-{name}", "resourceVersion": "1",
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "gpu": "on", "gpulab.dev/lab": lab,
                                "gpulab.dev/tenant": tenant},
                     "annotations": {wire.REGISTER: register_annotation(cards),
                                     "hami.io/node-handshake":
                                         wire.handshake_requesting(HANDSHAKE_AT)}},
        "status": {"conditions": b.node_conditions(ready=True),
                   "nodeInfo": {"kubeletVersion": kubelet},
                   "capacity": dict(resources), "allocatable": dict(resources)},
    }


# The A100 80GB of the kamaji-hami tests' joined machines (a made-up uuid in NVML's form).
A100 = "GPU-5c3e9c41-8a0f-4c7e-9d2b-7f1e0a6b3c21"


def a100(uuid: str = A100, index: int = 0) -> dict[str, Any]:
    """An A100 80GB as the real plugin registers it (`card`)."""
    return card(uuid, "NVIDIA A100-SXM4-80GB", 81920, index)


def joined(name: str = "gpu-7", *, tenant: str = "tenant-a", kubelet: str = "v1.36.4",
           cards: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`machine_node` for the unit tests' lab (builders.LAB): a machine joined to `tenant`,
    registering `cards` (default: one A100)."""
    return machine_node(name, b.LAB, tenant, kubelet, cards if cards is not None else [a100()])


def registering(name: str, register: str, *, slices: str | None = None,
                cordon: str | None = None) -> dict[str, Any]:
    """`joined` with `register` (upstream's text) as its HAMi registration, advertising
    `slices` of nvidia.com/gpu (default: as `joined` does) and with `cordon` as HAMi's
    hami.io/device-cordon."""
    node = joined(name)
    node["metadata"]["annotations"][wire.REGISTER] = register
    if slices is not None:
        node["status"]["allocatable"]["nvidia.com/gpu"] = slices
    if cordon is not None:
        node["metadata"]["annotations"]["hami.io/device-cordon"] = cordon
    return node


def _hami_device_plugin() -> dict[str, Any]:
    """HAMi's NVIDIA device plugin DaemonSet as the pinned chart renders it by default."""
    import yaml

    text = (b.RENDERED / "hami-2.10.0_default_install.yaml").read_text(encoding="utf-8")
    docs = [d for d in yaml.safe_load_all(text) if d]
    return next(d for d in docs if d.get("kind") == "DaemonSet"
                and d["metadata"]["name"] == "hami-device-plugin")


def join_machine(cluster: KamajiCluster, spec: TenantSpec, lab: str, *, node: str = "gpu-7",
                 kubelet: str | None = None, cards: list[dict[str, Any]] | None = None,
                 pod_index: int = 0) -> None:
    """What `gpulab join`'s commands leave in the tenant once the machine ran them
    (`pod_index`: which pod of each kube-system DaemonSet runs there, for a second machine)."""
    kubelet = kubelet or spec.kubernetes_version
    cards = cards if cards is not None else [a100()]
    tenant = cluster.vclusters[spec.name]

    def put() -> None:
        tenant.put(NODES, machine_node(node, lab, spec.name, kubelet, cards))
        t = spec.name
        daemonsets = (b._calico_node(), b._kube_proxy(spec), b._konnectivity_agent(),
                      _hami_device_plugin())
        for ds in daemonsets:
            tenant.put(PODS, b.workload_pod(ds, b.daemon_pod_name(ds["metadata"]["name"],
                                                                  pod_index), node, tenant=t))
        tenant.put(PODS, b.workload_pod(b._hami_scheduler(), b.HAMI_SCHEDULER_POD, node,
                                        tenant=t))
        tenant.put(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "hami-scheduler-device",
                                             "namespace": "kube-system"},
                                "data": {"device-config.yaml": "nvidia: {}"}})
        # the DaemonSet controller: calico-node (applied by `up`) runs on the machine
        for key, obj in tenant.live(DAEMONSETS, "kube-system"):
            if key[2] == "calico-node":
                obj.patch({"status": {"desiredNumberScheduled": 1, "numberReady": 1,
                                      "numberAvailable": 1, "updatedNumberScheduled": 1,
                                      "currentNumberScheduled": 1}})

    tenant.call(put)


class MachinePlayer(HamiPlayer):
    """HAMi with the real device plugin: a bound pod's allocation completes (bind-phase
    success) and the node lock it holds is released, as plugin/util.go:392-404 does."""

    def step(self) -> None:
        for _, obj in self.cluster.live(PODS):
            notes = (obj.raw.get("metadata") or {}).get("annotations") or {}
            node_name = (obj.raw.get("spec") or {}).get("nodeName")
            if notes.get(wire.BIND_PHASE) != wire.BIND_ALLOCATING or not node_name:
                continue
            obj.patch({"metadata": {"annotations": {wire.BIND_PHASE: "success"}}})
            meta = obj.raw["metadata"]
            for _key, node in self.cluster.live(NODES):
                lock = ((node.raw.get("metadata") or {}).get("annotations") or {}).get(
                    wire.NODE_LOCK, "")
                if node.raw["metadata"]["name"] == node_name and lock.endswith(
                        f",{meta.get('namespace')},{meta['name']}"):
                    node.patch({"metadata": {"annotations": {wire.NODE_LOCK: None}}})
        super().step()


@contextlib.contextmanager
def hami_on(cluster: KamajiCluster, specs: list[TenantSpec]) -> Iterator[list[MachinePlayer]]:
    """HAMi (with the real plugin's part) on each tenant's kmock server while the block runs."""
    players = []
    for spec in specs:
        tenant: Cluster = cluster.vclusters[spec.name]
        players.append(MachinePlayer(tenant, copy.deepcopy(spec), lock_expire=None).attach())
    driver = _Player(list(players), 0.01)
    driver.start()
    try:
        yield players
    finally:
        driver.halt.set()
        driver.join(10)
        for player in players:
            player.cluster.webhooks.remove(player.webhook)
        assert not driver.errors, driver.errors
