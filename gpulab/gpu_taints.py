"""Tolerations for the taints GPU nodes carry for their GPU resource: pure, no I/O.

Managed clusters taint their GPU nodes so that pods without GPUs stay off them, with the
extended resource's name as the key (`nvidia.com/gpu:NoSchedule`, also with a value such as
`present`). Kubernetes' ExtendedResourceToleration admission plugin then adds, to every pod that
requests such a resource, a toleration `{key: <resource>, operator: Exists, effect: NoSchedule}`
(kubernetes plugin/pkg/admission/extendedresourcetoleration/admission.go:54-97, read at
143ac994 as the source index stores it; kubernetes/website
content/en/docs/reference/access-authn-authz/admission-controllers.md, "ExtendedResourceToleration":
"taint the node with the extended resource name as the key"). Whether an API server runs that
plugin is not visible through the API (its `--enable-admission-plugins` is not served), so a
probe that must land on a GPU node carries the same tolerations itself: with the plugin they are
merged (AddOrUpdateTolerationInPod), without it they are what lets the pod through.

Only taints keyed by a GPU resource name are tolerated here: any other taint on a GPU node
(a dedicated team, maintenance) is the cluster's choice to keep pods off, and stays a reason
the node cannot be used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["SCHEDULING_EFFECTS", "gpu_taints", "taint_text", "tolerations_for"]

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")  # what keeps a pod off (PreferNoSchedule scores)


def gpu_taints(node: Mapping[str, Any], is_gpu_resource: Callable[[str], bool]
               ) -> list[dict[str, str]]:
    """The node's NoSchedule/NoExecute taints whose key is a GPU resource name."""
    out = []
    for taint in (node.get("spec") or {}).get("taints") or ():
        if not isinstance(taint, Mapping) or taint.get("effect") not in SCHEDULING_EFFECTS:
            continue
        key = str(taint.get("key") or "")
        if key and is_gpu_resource(key):
            out.append({"key": key, "value": str(taint.get("value") or ""),
                        "effect": str(taint["effect"])})
    return out


def tolerations_for(taints: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """One toleration per (key, effect) of `taints`, as ExtendedResourceToleration writes it
    (operator Exists: any value), sorted."""
    keys = sorted({(str(t["key"]), str(t["effect"])) for t in taints})
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in keys]


def taint_text(taint: Mapping[str, str]) -> str:
    """`key=value:Effect` as kubectl writes a taint (`key:Effect` without a value)."""
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"
