"""`down` on an existing cluster: what lab.json's ledger says gpulab created, newest first
(`remove_owned`), then a check that it is gone; never the cluster, never what was there
before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import AdapterError
from gpulab.providers.base import (
    Teardown,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.adapters.base import KubeGateway


LABEL_TRIES = 3  # a node changed by someone else between read and patch: read it again


def _unlabel(kube: KubeGateway, node: str, labels: dict[str, str], result: Teardown) -> None:
    """Remove from `node` the labels gpulab set, each only while it still has the value gpulab
    set (the patch names the resourceVersion read, so a change in between is not undone)."""
    for attempt in range(LABEL_TRIES):
        live = kube.get("v1", "Node", node)
        if live is None:
            result.kept.append(f"labels of node {node}: the node is gone")
            return
        meta = live.get("metadata") or {}
        have = meta.get("labels") or {}
        ours = {k: v for k, v in labels.items() if have.get(k) == v}
        if attempt == 0:
            for key in sorted(set(labels) - set(ours)):
                now = f"now {have[key]!r}" if key in have else "removed by someone else"
                result.kept.append(f"label {key} of node {node}: {now}, not gpulab's "
                                   f"{labels[key]!r}")
        if not ours:
            return
        try:
            kube.label("v1", "Node", node, dict.fromkeys(ours),
                       resource_version=str(meta.get("resourceVersion") or "") or None)
        except AdapterError as err:
            if getattr(err, "status", None) == 409 and attempt < LABEL_TRIES - 1:
                continue
            raise
        result.removed += [f"label {k}={v} of node {node}" for k, v in sorted(ours.items())]
        return


def _label_runs(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """Consecutive `node-label` entries grouped by node (one patch per node)."""
    runs: list[tuple[str, dict[str, str]]] = []
    for entry in entries:
        node = str(entry["node"])
        if not runs or runs[-1][0] != node:
            runs.append((node, {}))
        runs[-1][1][str(entry["key"])] = str(entry["value"])
    return runs


def remove_owned(owned: tuple[dict[str, Any], ...], kube: KubeGateway, helm: Any, *,
             sleep: Callable[[float], None] | None = None, runtime: Any = None) -> Teardown:
    """Remove what lab.json says gpulab created, newest first; then check it is gone. An entry
    with `wait` (seconds) is waited for until it is gone before anything older goes: its
    finalizers need a controller the lab installed earlier (a TenantControlPlane's, Kamaji's).
    `container` entries (worker containers on this host) go through `runtime`."""
    result = Teardown()
    labels: list[dict[str, Any]] = []
    for entry in reversed(owned):
        if entry.get("type") == "node-label":
            labels.append(entry)
            continue
        for node, keys in _label_runs(labels):
            _unlabel(kube, node, keys, result)
        labels = []
        if entry.get("type") == "container":
            if runtime is not None and runtime.remove(entry["name"]):
                result.removed.append(f"container {entry['name']}")
        elif entry.get("type") == "helm-release":
            helm.uninstall(entry["name"], entry["namespace"])
            result.removed.append(f"helm release {entry['namespace']}/{entry['name']}")
        elif entry.get("type") == "object" and kube.delete(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            where = f"{entry['namespace']}/" if entry.get("namespace") else ""
            if entry.get("wait"):
                _wait_gone(kube, entry, float(entry["wait"]), sleep)
            result.removed.append(f"{entry['kind']} {where}{entry['name']}")
    for node, keys in _label_runs(labels):
        _unlabel(kube, node, keys, result)
    for entry in owned:
        if entry.get("type") == "node-label":
            live = kube.get("v1", "Node", str(entry["node"])) or {}
            if ((live.get("metadata") or {}).get("labels") or {}).get(entry["key"]) \
                    == entry["value"]:
                result.leftovers.append(f"label {entry['key']} of node {entry['node']}")
            continue
        if entry.get("type") == "object" and entry["kind"] != "Namespace" and kube.get(
                entry["apiVersion"], entry["kind"], entry["name"], entry.get("namespace")):
            result.leftovers.append(f"{entry['kind']} {entry['name']}")
    for entry in owned:
        if entry.get("type") == "container" and (runtime is None
                                                 or runtime.get(entry["name"]) is not None):
            result.leftovers.append(f"container {entry['name']}")
    return result


def _wait_gone(kube: KubeGateway, entry: dict[str, Any], seconds: float,
               sleep: Callable[[float], None] | None) -> None:
    """Until the object is gone; AdapterError (down stops, lab.json kept) when it is not."""
    import time

    pause = sleep or time.sleep
    deadline = time.monotonic() + seconds
    where = f"{entry['namespace']}/" if entry.get("namespace") else ""
    while kube.get(entry["apiVersion"], entry["kind"], entry["name"],
                   entry.get("namespace")) is not None:
        if time.monotonic() >= deadline:
            raise AdapterError(f"{entry['kind']} {where}{entry['name']} is still there "
                               f"{seconds:.0f}s after it was deleted (its finalizers have not "
                               "finished); nothing older was removed",
                               hint="look at its status and the controller's logs, then re-run "
                                    "gpulab down (lab.json is kept)")
        pause(2)


