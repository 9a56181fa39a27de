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

Two policies, one per use. A lab on a cluster the user brings (`blocking_taints`) tolerates
every such taint its GPU nodes carry: the user chose those nodes for the lab. `gpulab verify
--kubeconfig` (`gpu_taints`, `tolerations_for`) tolerates only the taints keyed by a GPU
resource name, as Kubernetes' ExtendedResourceToleration admission plugin would add them
(kubernetes plugin/pkg/admission/extendedresourcetoleration/admission.go:54-97, read at
143ac994 as the source index stores it): whether an API server runs that plugin is not visible
through the API, so its probes carry those tolerations themselves; any other taint on a GPU
node (a dedicated team, maintenance) is the cluster's choice and stays a reason the node cannot
be used.

Used by the vcluster-kai stack (each vCluster's `sync.toHost.pods.enforceTolerations`, so the
pods it syncs, the lab's verify probes among them, tolerate what the GPU nodes carry) and open
to `gpulab verify --kubeconfig`'s probes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["SCHEDULING_EFFECTS", "SYSTEM_PREFIXES", "Taint", "blocking_taints", "gpu_taints",
           "taint_text", "toleration", "tolerations_for", "union", "vcluster_toleration"]

Taint = tuple[str, str, str]  # (key, value, effect); value "" when the taint has none

# the node lifecycle controller's and the cloud node controller's own taints (see above)
SYSTEM_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")  # what keeps a pod off (PreferNoSchedule scores)


def _scheduling_taints(node: Mapping[str, Any]) -> Iterator[Taint]:
    """The node's keyed taints that keep an untolerating pod off it (NoSchedule, NoExecute), in
    the node's order."""
    for taint in (node.get("spec") or {}).get("taints") or ():
        if not isinstance(taint, Mapping) or taint.get("effect") not in SCHEDULING_EFFECTS:
            continue
        key = str(taint.get("key") or "")
        if key:
            yield key, str(taint.get("value") or ""), str(taint["effect"])


def blocking_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The taints of `node` that keep an untolerating pod off it (NoSchedule, NoExecute), but
    for the system's own (SYSTEM_PREFIXES), in the node's order, each once."""
    out: list[Taint] = []
    for found in _scheduling_taints(node):
        if not found[0].startswith(SYSTEM_PREFIXES) and found not in out:
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
    return _written(*taint)


def union(groups: Iterable[Iterable[Taint]]) -> tuple[Taint, ...]:
    """Every taint of `groups`, each once, in the order first seen."""
    out: list[Taint] = []
    for group in groups:
        out += [t for t in group if t not in out]
    return tuple(out)


def gpu_taints(node: Mapping[str, Any], is_gpu_resource: Callable[[str], bool]
               ) -> list[dict[str, str]]:
    """The node's NoSchedule/NoExecute taints whose key is a GPU resource name."""
    return [{"key": key, "value": value, "effect": effect}
            for key, value, effect in _scheduling_taints(node) if is_gpu_resource(key)]


def tolerations_for(taints: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """One toleration per (key, effect) of `taints`, as ExtendedResourceToleration writes it
    (operator Exists: any value), sorted."""
    keys = sorted({(str(t["key"]), str(t["effect"])) for t in taints})
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in keys]


def taint_text(taint: Mapping[str, Any]) -> str:
    """`key=value:Effect` as kubectl writes a taint (`key:Effect` without a value)."""
    return _written(str(taint.get("key")), str(taint.get("value") or ""),
                    str(taint.get("effect")))


def _written(key: str, value: str, effect: str) -> str:
    """A taint as kubectl writes it, which is also vCluster's toleration form."""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"
