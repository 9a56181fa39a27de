"""`gpulab doctor` and `up`'s preflight: pure findings over observed host facts.

Observation (`observe_host`) is the only I/O; `diagnose` turns facts into ok/warn/fail findings,
each with the fix, so it is tested without a host.

Its modules: `facts` (Finding, HostSnapshot and the thresholds), `findings` (diagnose: the host's
findings), `observe` (observe_host, observe_workers, reported_pull: the I/O), `cluster` (the
findings of a lab on a cluster you have).
"""

from __future__ import annotations

from gpulab.doctor.cluster import DENIED_PREFIX, OWN_CLUSTER_DOCS, cluster_findings
from gpulab.doctor.facts import (
    GIB,
    INOTIFY_INSTANCES,
    INOTIFY_WATCHES,
    MIN_DOCKER_MAJOR,
    NODE_IMAGE_SIZE,
    Finding,
    HostSnapshot,
    ImageState,
)
from gpulab.doctor.findings import (
    KIND_NODES,
    PRIVILEGED_ADVICE,
    ROOTLESS_DOCS,
    WORKER_NODES,
    diagnose,
    diagnose_workers,
    helm_finding,
    needs,
    privileged_advice,
    state_finding,
)
from gpulab.doctor.observe import _host_routes as _host_routes
from gpulab.doctor.observe import _probe_privileged as _probe_privileged
from gpulab.doctor.observe import _state_problem as _state_problem
from gpulab.doctor.observe import helm_version, observe_host, observe_workers, reported_pull

__all__ = [
    "DENIED_PREFIX",
    "GIB",
    "INOTIFY_INSTANCES",
    "INOTIFY_WATCHES",
    "KIND_NODES",
    "MIN_DOCKER_MAJOR",
    "NODE_IMAGE_SIZE",
    "OWN_CLUSTER_DOCS",
    "PRIVILEGED_ADVICE",
    "ROOTLESS_DOCS",
    "WORKER_NODES",
    "Finding",
    "HostSnapshot",
    "ImageState",
    "cluster_findings",
    "diagnose",
    "diagnose_workers",
    "helm_finding",
    "helm_version",
    "needs",
    "observe_host",
    "observe_workers",
    "privileged_advice",
    "reported_pull",
    "state_finding",
]
