"""Tolerations for the taints a cluster's GPU nodes carry: pure, no I/O.

Managed clouds taint their GPU nodes (`nvidia.com/gpu=present:NoSchedule` and the like) so that
only pods that ask for them go there; a pod meant for a GPU node has to tolerate what it
carries. A taint whose effect is NoSchedule or NoExecute keeps a pod off the node unless one of
its tolerations matches (kubernetes pkg/scheduler/framework/plugins/tainttoleration/
taint_toleration.go:109-120; Toleration.ToleratesTaint, api core/v1/toleration.go:52-77, as
gpulab.cluster.rules.tolerates follows it). PreferNoSchedule only scores, so it is not
tolerated here.

Left out on purpose: the taints the node lifecycle controller sets for a node's conditions and
for a cordon (`node.kubernetes.io/not-ready`, `unreachable`, `unschedulable`, `*-pressure`,
`network-unavailable`: api core/v1/well_known_taints.go:19-52) and the cloud provider's
`node.cloudprovider.kubernetes.io/uninitialized`: tolerating them would place pods on nodes
that cannot run them, which is what those taints are for.

Used by the vcluster-kai stack (each vCluster's `sync.toHost.pods.enforceTolerations`, so the
pods it syncs, the lab's verify probes among them, tolerate what the GPU nodes carry) and open
to `gpulab verify --kubeconfig`'s probes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["SYSTEM_PREFIXES", "Taint", "blocking_taints", "toleration", "union",
           "vcluster_toleration"]

Taint = tuple[str, str, str]  # (key, value, effect); value "" when the taint has none

# the node lifecycle controller's and the cloud node controller's own taints (see above)
SYSTEM_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
_EFFECTS = ("NoSchedule", "NoExecute")


def blocking_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The taints of `node` that keep an untolerating pod off it (NoSchedule, NoExecute), but
    for the system's own (SYSTEM_PREFIXES), in the node's order, each once."""
    out: list[Taint] = []
    for taint in (node.get("spec") or {}).get("taints") or ():
        if not isinstance(taint, dict) or taint.get("effect") not in _EFFECTS:
            continue
        key = str(taint.get("key") or "")
        if not key or key.startswith(SYSTEM_PREFIXES):
            continue
        found = (key, str(taint.get("value") or ""), str(taint["effect"]))
        if found not in out:
            out.append(found)
    return tuple(out)


def toleration(taint: Taint) -> dict[str, str]:
    """The Pod toleration of exactly `taint`: Equal on its value, or Exists when it has none."""
    key, value, effect = taint
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def vcluster_toleration(taint: Taint) -> str:
    """`taint` as vCluster's `sync.toHost.pods.enforceTolerations` entry: `key=value:Effect`
    (operator Equal) or `key:Effect` (Exists), as vCluster v0.35.3 pkg/util/toleration/
    toleration.go:11-62 parses them (57da739f)."""
    key, value, effect = taint
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def union(groups: Iterable[Iterable[Taint]]) -> tuple[Taint, ...]:
    """Every taint of `groups`, each once, in the order first seen."""
    out: list[Taint] = []
    for group in groups:
        out += [t for t in group if t not in out]
    return tuple(out)
