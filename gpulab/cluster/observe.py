"""The only I/O of `verify --kubeconfig --inspect`: list and get, never create, patch or delete.

`read_cluster` reads what discovery needs from one API server and keeps summaries. A read the
credentials may not do (403) or that fails otherwise is recorded in `read_errors` and the rest is
still read: discovery reports what it could not see instead of guessing. The RBAC these reads
need is in docs/verify-any-cluster.md ("RBAC").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from gpulab.cluster.state import ClusterSnapshot
from gpulab.errors import GpulabError
from gpulab.verify import objects as o
from gpulab.verify.observe import clean_all, one_line

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.cluster.state import JsonObj

__all__ = ["READS", "read_cluster", "summarize_pod", "summarize_workload"]

T = TypeVar("T")

# What discovery lists, as (api version, kind, namespaced): the RBAC docs list the same.
READS: tuple[tuple[str, str, bool], ...] = (
    ("v1", "Node", False),
    ("v1", "Pod", True),
    ("apps/v1", "Deployment", True),
    ("apps/v1", "DaemonSet", True),
    ("apps/v1", "StatefulSet", True),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False),
    ("scheduling.run.ai/v2", "Queue", False),
    ("kai.scheduler/v1", "Config", False),
    ("kamaji.clastix.io/v1alpha1", "TenantControlPlane", True),
)

# Pod annotations discovery keeps: HAMi's, the device pin, and KAI's sharing request.
_KEPT_ANNOTATIONS = ("hami.io/", "nvidia.com/", "gpu-fraction", "gpu-memory", "pod-group-name")


def summarize_pod(pod: Mapping[str, Any]) -> JsonObj:
    """Identity, labels, GPU annotations, node, scheduler, containers' images and resources,
    phase and readiness: what discovery and sizing read of a pod."""
    meta = o.metadata(pod)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    annotations = {k: v for k, v in o.annots(pod).items() if k.startswith(_KEPT_ANNOTATIONS)}
    return {
        "metadata": {"name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
                     "uid": meta.get("uid", ""), "labels": dict(meta.get("labels") or {}),
                     "annotations": annotations},
        "spec": {"nodeName": spec.get("nodeName", ""),
                 "schedulerName": spec.get("schedulerName", ""),
                 "containers": [{"name": c.get("name", ""), "image": c.get("image", ""),
                                 "resources": c.get("resources") or {}}
                                for c in spec.get("containers") or () if isinstance(c, Mapping)]},
        "status": {"phase": status.get("phase", ""),
                   "containerStatuses": [{"name": c.get("name", ""), "ready": bool(c.get("ready"))}
                                         for c in status.get("containerStatuses") or ()
                                         if isinstance(c, Mapping)]},
    }


def summarize_workload(obj: Mapping[str, Any]) -> JsonObj:
    """A Deployment, DaemonSet or StatefulSet: identity, labels, images, desired and ready."""
    meta = o.metadata(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    kind = str(obj.get("kind") or "")
    template = (spec.get("template") or {}).get("spec") or {}
    if kind == "DaemonSet":
        desired, ready = status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
    else:
        desired, ready = spec.get("replicas", 1), status.get("readyReplicas", 0)
    return {
        "kind": kind, "name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
        "labels": dict(meta.get("labels") or {}),
        "images": [str(c.get("image", "")) for c in template.get("containers") or ()
                   if isinstance(c, Mapping)],
        "args": [str(a) for c in template.get("containers") or () if isinstance(c, Mapping)
                 for a in (c.get("args") or c.get("command") or ())],
        "desired": int(desired or 0), "ready": int(ready or 0),
    }


def _webhook_config(obj: Mapping[str, Any]) -> JsonObj:
    return {"name": o.name(obj), "webhooks": [
        {"name": w.get("name", ""), "failurePolicy": w.get("failurePolicy", ""),
         "service": (w.get("clientConfig") or {}).get("service") or {}}
        for w in obj.get("webhooks") or () if isinstance(w, Mapping)]}


def read_cluster(kube: KubeGateway, name: str, server: str = "") -> ClusterSnapshot:
    """Everything discovery reads from one cluster; failures are values (`read_errors`)."""
    errors: dict[str, str] = {}
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")

    def read(what: str, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except GpulabError as err:  # its message: the adapters' hints are about gpulab's labs
            errors[what] = one_line(err.message)
            return None

    version = read("version", kube.server_version)
    if version is None:
        return ClusterSnapshot(name=name, server=server, error=errors["version"],
                               read_errors=errors, observed_at=started)

    def listed(api_version: str, kind: str) -> list[JsonObj] | None:
        return read(kind, lambda: kube.list_objects(api_version, kind))

    nodes = listed("v1", "Node")
    pods = listed("v1", "Pod")
    workloads: list[JsonObj] | None = []
    for kind in ("Deployment", "DaemonSet", "StatefulSet"):
        found = listed("apps/v1", kind)
        workloads = None if found is None or workloads is None else workloads + found
    webhooks = listed("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
    queues = listed("scheduling.run.ai/v2", "Queue")
    kai_config = read("Config", lambda: kube.get("kai.scheduler/v1", "Config", "kai-config"))
    tcps = listed("kamaji.clastix.io/v1alpha1", "TenantControlPlane")
    return ClusterSnapshot(
        name=name,
        server=server,
        version=version,
        nodes=None if nodes is None else clean_all(nodes),
        pods=None if pods is None else tuple(summarize_pod(p) for p in pods),
        workloads=None if workloads is None else tuple(summarize_workload(w) for w in workloads),
        webhooks=None if webhooks is None else tuple(_webhook_config(w) for w in webhooks),
        queues=None if queues is None else tuple(
            {"name": o.name(q), "spec": dict(q.get("spec") or {})} for q in queues),
        kai_config=None if kai_config is None else {
            "name": o.name(kai_config),
            "admission": dict(((kai_config.get("spec") or {}).get("admission")) or {})},
        tenant_control_planes=None if tcps is None else tuple(
            {"name": o.name(t), "namespace": o.metadata(t).get("namespace", "")} for t in tcps),
        read_errors=errors,
        observed_at=started,
    )
