"""What GPUs are held and who advertises them, from a snapshot: pure, no I/O.

Split from gpulab.cluster.inventory (its size): resource quantities, KAI's queue usage as its
scheduler counts it, and a second device plugin advertising HAMi's count resource.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gpulab.verify import objects as o
from gpulab.verify.hami import MIG_MODE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpulab.cluster.state import ClusterSnapshot

__all__ = ["DEFAULT_QUEUE", "OTHER_PLUGIN_IMAGE", "kai_gpus", "other_advertiser",
           "other_device_plugins", "quantity", "queue_usage"]

WHOLE_GPU = "nvidia.com/gpu"


def quantity(value: Any) -> Decimal:
    """A resource quantity as a number (`2`, `500m`, `0.5`); 0 when unreadable, not finite
    (`NaN`, `Infinity`: an annotation is not validated) or beyond an int64 (what a Kubernetes
    quantity can hold)."""
    text = str(value).strip()  # None: "None", unreadable
    try:
        number = Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text)
    except InvalidOperation:
        return Decimal(o.int_quantity(text) or 0)
    return number if number.is_finite() and number.adjusted() < 19 else Decimal(0)


DEFAULT_QUEUE = "default-queue"  # KAI pkg/podgrouper/podgrouper/plugins/constants/constants.go:19


def kai_gpus(pod: Mapping[str, Any]) -> Decimal:
    """The GPUs a pod holds for KAI: its `gpu-fraction`, else its `nvidia.com/gpu` limits."""
    fraction = o.annots(pod).get("gpu-fraction")
    if fraction is not None:
        return quantity(fraction)
    total = Decimal(0)
    for container in (pod.get("spec") or {}).get("containers") or ():
        limits = (container.get("resources") or {}).get("limits") or {}
        total += quantity(limits.get(WHOLE_GPU, 0))
    return total


def queue_usage(snapshot: ClusterSnapshot, scheduler: str, queue_label: str
                 ) -> dict[str, Decimal] | None:
    """What each queue holds as KAI's scheduler counts it: every placed, unfinished pod of
    KAI's (its schedulerName) adds its GPUs to its queue and each ancestor
    (pkg/scheduler/plugins/proportion/proportion.go:359-401), not the queue controller's
    status.allocated, which is stale while that controller is down. A pod's queue is its queue
    label, else `default-queue` (pkg/podgrouper/podgrouper/plugins/defaultgrouper/
    default_grouper.go:134-147; its top owner's label, which verify does not read, would win).
    None when Pods were not read."""
    if snapshot.pods is None or snapshot.queues is None:
        return None
    parents = {str(q.get("name", "")): str((q.get("spec") or {}).get("parentQueue") or "")
               for q in snapshot.queues}
    out: dict[str, Decimal] = {}
    for pod in snapshot.pods:
        if (o.scheduler_name(pod) != scheduler or not o.pod_node(pod)
                or o.pod_phase(pod) in ("Succeeded", "Failed")):
            continue
        name, seen = o.labels(pod).get(queue_label) or DEFAULT_QUEUE, set()
        while name in parents and name not in seen:
            seen.add(name)
            out[name] = out.get(name, Decimal(0)) + kai_gpus(pod)
            name = parents[name]
    return out


# Device plugins other than HAMi's that advertise nvidia.com/gpu: NVIDIA's own (its static
# manifest and the GPU Operator run the image nvcr.io/nvidia/k8s-device-plugin).
OTHER_PLUGIN_IMAGE = "k8s-device-plugin"


def other_device_plugins(snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """DaemonSets running NVIDIA's device plugin (not HAMi's), as `namespace/name`."""
    daemonsets = [w for w in snapshot.workloads or () if w.get("kind") == "DaemonSet"]
    return tuple(f"{d['namespace']}/{d['name']}" for d in daemonsets
                 if any(OTHER_PLUGIN_IMAGE in str(i) for i in d.get("images") or ())
                 and d["labels"].get("app.kubernetes.io/component") != "hami-device-plugin")


def other_advertiser(node: Mapping[str, Any], cards: list[dict[str, Any]] | None, count: str,
                      plugins: tuple[str, ...]) -> str:
    """Why the node's `count` resource is not what HAMi's device plugin advertises ('' when it
    is, or cannot be told). HAMi's plugin offers `split` devices per card (pkg/device-plugin/
    nvidiadevice/nvinternal/rm/devices.go:195-216; the register annotation's `count`,
    plugin/register.go:182); the kubelet keeps one plugin per resource name, the last one to
    register (kubernetes pkg/kubelet/cm/devicemanager/manager.go, `endpoints` keyed by resource
    name, PluginConnected), and its capacity is that plugin's devices. Another number means
    another plugin advertises it there: its devices are what pods get, not HAMi's slices."""
    if not cards or any(c.get("mode") == MIG_MODE for c in cards):
        return ""
    capacity = ((node.get("status") or {}).get("capacity") or {}).get(count)
    if capacity is None:
        return ""
    have, want = int(quantity(capacity)), sum(int(c["count"]) for c in cards)
    if have in (0, want):
        return ""  # 0: no plugin registered yet (HAMi's handshake rules cover it)
    named = f" ({', '.join(plugins)})" if plugins else ""
    return (f"capacity {count} {have} is not the {want} devices HAMi's device plugin offers for "
            f"its {len(cards)} card(s) (split, pkg/device-plugin/nvidiadevice/nvinternal/rm/"
            f"devices.go:195-216): another device plugin{named} advertises {count} here and the "
            f"kubelet hands out one plugin's devices per resource, so a share seen there would not "
            f"be HAMi's")
