"""The only I/O of `verify --kubeconfig --inspect`: list and get, never create, patch or delete.

`read_cluster` reads what discovery needs from one API server and keeps summaries. A read the
credentials may not do (403) or that fails otherwise is recorded in `read_errors` and the rest is
still read: discovery reports what it could not see instead of guessing. The RBAC these reads
need is in docs/verify-any-cluster.md ("RBAC"). Besides the lists, it gets two objects: KAI's
Config `kai-config` and the ConfigMap HAMi's scheduler reads its device config from (the resource
names HAMi counts).

Discovery as a whole has one deadline (`DISCOVERY_TIMEOUT`, `--discovery-timeout`), besides each
request's own: a read it leaves unread, or one whose request timed out, is recorded as
"unknown, because the API server did not answer ..." (`UNANSWERED`), never as absent.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from gpulab.cluster.state import ClusterSnapshot
from gpulab.errors import GpulabError
from gpulab.verify import objects as o
from gpulab.verify.observe import clean_all, one_line

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from gpulab.adapters.base import KubeGateway
    from gpulab.cluster.state import JsonObj

__all__ = ["DISCOVERY_TIMEOUT", "READS", "UNANSWERED", "read_cluster", "summarize_pod",
           "summarize_workload"]

T = TypeVar("T")

DISCOVERY_TIMEOUT = 60.0  # seconds for all the reads of one cluster
UNANSWERED = "unknown, because the API server did not answer"


@runtime_checkable
class _Bounded(Protocol):
    """A gateway that can bound all its requests by one total deadline (KubeClient.bounded)."""

    def bounded(self, seconds: float | None) -> AbstractContextManager[None]: ...

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
    ("v1", "ConfigMap", True),  # only HAMi's device config (get, never list)
)
# HAMi's scheduler label (charts/hami/templates/scheduler/deployment.yaml:7) and the volume that
# mounts its device config, `<scheduler>-device` (deployment.yaml:219-221, device-configmap.yaml:4).
HAMI_SCHEDULER_LABEL = ("app.kubernetes.io/component", "hami-scheduler")
HAMI_DEVICE_VOLUME = "device-config"
HAMI_DEVICE_KEY = "device-config.yaml"
# What verify keeps of KAI's Config `spec.global` (pkg/apis/kai/v1/global.go:64-74).
_KAI_GLOBAL = ("schedulerName", "nodePoolLabelKey", "queueLabelKey")

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
                 for a in [*(c.get("command") or ()), *(c.get("args") or ())]],
        "configMaps": {str(v.get("name", "")): str((v.get("configMap") or {}).get("name", ""))
                       for v in template.get("volumes") or ()
                       if isinstance(v, Mapping) and isinstance(v.get("configMap"), Mapping)},
        "desired": int(desired or 0), "ready": int(ready or 0),
    }


def _webhook_config(obj: Mapping[str, Any]) -> JsonObj:
    return {"name": o.name(obj), "webhooks": [
        {"name": w.get("name", ""), "failurePolicy": w.get("failurePolicy", ""),
         "service": (w.get("clientConfig") or {}).get("service") or {},
         # which namespaces and pods it is called for (gpulab.cluster.hami_config)
         **{k: w[k] for k in ("namespaceSelector", "objectSelector")
            if isinstance(w.get(k), Mapping)}}
        for w in obj.get("webhooks") or () if isinstance(w, Mapping)]}


def _queue(obj: Mapping[str, Any]) -> JsonObj:
    """A KAI Queue: name, labels (its node pool), spec, and what KAI says it has allocated."""
    allocated = (obj.get("status") or {}).get("allocated")
    return {"name": o.name(obj), "labels": dict(o.labels(obj)), "spec": dict(obj.get("spec") or {}),
            "allocated": dict(allocated) if isinstance(allocated, Mapping) else {}}


def _kai_config(obj: Mapping[str, Any]) -> JsonObj:
    spec = obj.get("spec") or {}
    raw = spec.get("global")
    found: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return {"name": o.name(obj), "admission": dict(spec.get("admission") or {}),
            "global": {k: found[k] for k in _KAI_GLOBAL if k in found}}


def _hami_device_config_name(workloads: list[JsonObj]) -> tuple[str, str] | None:
    """(namespace, name) of the ConfigMap HAMi's scheduler reads its device config from."""
    key, value = HAMI_SCHEDULER_LABEL
    for w in workloads:
        if w["kind"] == "Deployment" and w["labels"].get(key) == value:
            mounted = (w.get("configMaps") or {}).get(HAMI_DEVICE_VOLUME)
            return str(w["namespace"]), str(mounted or f"{w['name']}-device")
    return None


def _served(call: Callable[[], list[JsonObj]]) -> list[JsonObj]:
    """A list, or none when the API server does not serve the kind (404: its API group is not
    there, i.e. not installed; the gateway already answers so when discovery says 404)."""
    try:
        return call()
    except GpulabError as err:
        if getattr(err, "status", None) == 404:
            return []
        raise


def read_cluster(kube: KubeGateway, name: str, server: str = "", *,
                 deadline: float | None = DISCOVERY_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic) -> ClusterSnapshot:
    """Everything discovery reads from one cluster within `deadline` seconds (None: no total
    bound; each request keeps its own); failures are values (`read_errors`)."""
    bound = kube.bounded(deadline) if isinstance(kube, _Bounded) else contextlib.nullcontext()
    with bound:  # the request in flight at the deadline ends there too
        return _read_cluster(kube, name, server, deadline, clock)


def _read_cluster(kube: KubeGateway, name: str, server: str, deadline: float | None,
                  clock: Callable[[], float]) -> ClusterSnapshot:
    errors: dict[str, str] = {}
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    until = None if deadline is None else clock() + deadline
    late = ("" if deadline is None else
            f"{UNANSWERED} within {deadline:g}s (discovery's total deadline, --discovery-timeout)")

    def read(what: str, call: Callable[[], T]) -> T | None:
        if until is not None and clock() >= until:
            errors[what] = late  # not asked: there is no time left
            return None
        try:
            return call()
        except GpulabError as err:  # its message: the adapters' hints are about gpulab's labs
            if until is not None and clock() >= until:
                errors[what] = late
            elif getattr(err, "reason", "") == "Timeout" and what != "version":  # its own
                errors[what] = f"{UNANSWERED}: {one_line(err.message)}"
            else:
                errors[what] = one_line(err.message)
            return None

    version = read("version", kube.server_version)
    if version is None:
        return ClusterSnapshot(name=name, server=server, error=errors["version"],
                               read_errors=errors, observed_at=started)

    def listed(api_version: str, kind: str) -> list[JsonObj] | None:
        return read(kind, lambda: _served(lambda: kube.list_objects(api_version, kind)))

    nodes = listed("v1", "Node")
    pods = listed("v1", "Pod")
    workloads: list[JsonObj] = []
    unread = 0  # each kind read is kept; one not read is in `errors` (the inventory asks there)
    for kind in ("Deployment", "DaemonSet", "StatefulSet"):
        found = listed("apps/v1", kind)
        unread += found is None
        workloads += found or []
    summaries = None if unread == 3 else [summarize_workload(w) for w in workloads]
    device_config: JsonObj | None = None
    where = _hami_device_config_name(summaries or [])
    if where is not None:
        namespace, config_name = where
        config = read("ConfigMap", lambda: kube.get("v1", "ConfigMap", config_name, namespace))
        if config is not None:
            device_config = {"name": config_name, "namespace": namespace,
                             HAMI_DEVICE_KEY: str((config.get("data") or {}).get(
                                 HAMI_DEVICE_KEY, ""))}
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
        workloads=None if summaries is None else tuple(summaries),
        webhooks=None if webhooks is None else tuple(_webhook_config(w) for w in webhooks),
        queues=None if queues is None else tuple(_queue(q) for q in queues),
        kai_config=None if kai_config is None else _kai_config(kai_config),
        hami_device_config=device_config,
        tenant_control_planes=None if tcps is None else tuple(
            {"name": o.name(t), "namespace": o.metadata(t).get("namespace", "")} for t in tcps),
        read_errors=errors,
        observed_at=started,
    )
