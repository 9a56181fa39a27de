"""API objects and lab states as the write-up (the Kamaji + HAMi write-up) shows them.

Names follow gpulab (worker `gpulab-kamaji-hami-tenant-a-worker` instead of the write-up's
`tenant-a-worker`, verify pods in namespace `gpulab-verify`); annotations, events, reasons and
numbers are the write-up's: `GPU-MOCK-0,NVIDIA,20000,30:;`, `find fit node(...), 0 nodes not fit,
1 nodes fit`, `1 nodes CardInsufficientCore(...)`, `node ... has been locked within 5m0s: node
lock contention`, allocatable 81920/100/100 and 2 x L4 for tenant-b.

`healthy_state(profile)` is a LabState where all eight checks pass for both tenants; tests derive
failing states from it with `tenant_replace`, `run_replace` and the object helpers.

Run `python -m tests.kamaji_hami.builders` to rewrite tests/data/recordings/writeup-healthy (and
its copy gpulab ships, gpulab/examples/recordings/kamaji-hami).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpulab import naming
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks.registry import CHECKS
from gpulab.stacks.kamaji_hami.profile import GpuSpec, KamajiHamiProfile
from gpulab.stacks.kamaji_hami.state import LabState, TenantState
from gpulab.verify import observe as verify_observe
from gpulab.verify.observe import listing_pod
from gpulab.verify.state import CredentialProbe, Listing, LogsProbe, PodRun
from tests import kube_wire as kw
from tests.kamaji_hami import calico_wire as cw
from tests.kamaji_hami import hami_wire as hw

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import TenantSpec
    from gpulab.verify.result import CheckResult

LAB = "kamaji-hami"
RUN_ID = "3f9c2a7d1e04"  # the gpulab.dev/run label of the recorded verify run
NS = verify_observe.VERIFY_NAMESPACE
TS = "2026-11-20T10:15:00Z"
PLACED_AT = datetime(2026, 11, 20, 10, 15, 0, tzinfo=timezone.utc)  # TS: HAMi's filter and bind
HANDSHAKE_AT = datetime(2026, 11, 20, 10, 12, 47)  # hami-scheduler's clock (time.Local, UTC)
ENDPOINTS = {"tenant-a": "172.18.255.200:6443", "tenant-b": "172.18.255.201:6443"}
RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"
PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned"
RENDERED = Path(__file__).resolve().parents[1] / "data" / "rendered"
# A worker's NotReady message while no CNI is installed: the kubelet's words around
# containerd's CRI status (kube_wire.network_not_ready, each line cited there).
NOT_READY_MESSAGE = kw.network_not_ready()
# hami_wire.node_locked with `{node}` left to fill (nodelock.go:290, NodeLockTimeout 5m).
LOCK_MESSAGE = hw.node_locked("{node}")
# The kube-scheduler's wrapping of an extender's refusal on a one-node tenant (FitError and
# the DRA and preemption PostFilter texts, kube_wire.failed_scheduling); `{reasons}` is HAMi's
# GenReason for the node (hami_wire.gen_reason).
FAILED_SCHEDULING = kw.failed_scheduling(1, {"{reasons}": 1})
# calico-node's log as its last lines read once Felix runs: its once-a-minute summaries of
# the dataplane loops (calico_wire, Calico v3.31.2); FELIX_LAST is what a logs probe keeps.
FELIX_LOG = "".join(
    cw.log_line(datetime(2026, 11, 20, 10, 14 + i, 2, 123000), "info", 57, cw.SUMMARY_FILE,
                cw.SUMMARY_LINE, cw.loop_summary(loops, 60_100, 3, longest, ["update-routes"]))
    for i, (loops, longest) in enumerate(((31, 18), (14, 12))))
FELIX_LAST = FELIX_LOG.splitlines()[-1]
# k8s.io/apimachinery v0.36.3 pkg/util/rand/rand.go:83: the alphabet of generated name suffixes
# (a DaemonSet's pods are `<daemonset>-<5 of these>`, a Deployment's
# `<deployment>-<pod-template-hash>-<5 of these>`).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def worker(tenant: str, index: int = 0) -> str:
    return render.worker_name(LAB, tenant, index)


def uid(kind: str, tenant: str, name: str) -> str:
    """Deterministic, distinct uids per tenant (as two API servers would give)."""
    return f"{tenant}-{kind}-{name}".lower()


# --------------------------------------------------------------------------- management


@functools.cache
def _builtin_profile() -> KamajiHamiProfile:
    from gpulab.stacks import load_profile

    profile = load_profile("kamaji-hami").profile
    assert isinstance(profile, KamajiHamiProfile)
    return profile


def tcp(spec: TenantSpec, state: str = "Ready", version: str | None = None) -> dict[str, Any]:
    """The TenantControlPlane gpulab applies (render.tenant_control_plane) as Kamaji reports it:
    status.controlPlaneEndpoint `<address>:<port>` and status.kubernetesResources.version
    {status, version} (api/v1alpha1/tenantcontrolplane_status.go:176,182,209,213-219 at 26.8.2-edge,
    ddbabd87; `Ready` is VersionReady)."""
    obj = render.tenant_control_plane(_builtin_profile(), spec)
    obj["metadata"]["uid"] = uid("tcp", spec.name, spec.name)
    obj["spec"]["kubernetes"]["version"] = version or spec.kubernetes_version
    obj["status"] = {
        "controlPlaneEndpoint": ENDPOINTS.get(spec.name, "172.18.255.210:6443"),
        "kubernetesResources": {"version": {"status": state,
                                            "version": version or spec.kubernetes_version}},
    }
    return obj


def running(name: str, restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "ready": True, "restartCount": restarts,
            "state": {"running": {"startedAt": TS}}}


def waiting(name: str, reason: str, restarts: int = 5) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts,
            "state": {"waiting": {"reason": reason}}}


def pod(name: str, namespace: str, node: str, containers: list[str], *, tenant: str,
        labels: dict[str, str] | None = None, phase: str = "Running",
        statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                     "uid": uid("pod", tenant, f"{namespace}-{name}")},
        "spec": {"nodeName": node, "containers": [{"name": c} for c in containers]},
        "status": {"phase": phase,
                   "containerStatuses": statuses if statuses is not None
                   else [running(c) for c in containers]},
    }


def tcp_pod(spec: TenantSpec, containers: tuple[str, ...] = (
        "kube-apiserver", "kube-scheduler", "kube-controller-manager", "konnectivity-server"),
        statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    # Kamaji's Deployment of the control plane labels its pods with the tenant's name and
    # `component: deployment` (internal/builders/controlplane/deployment.go:1105-1107), beside
    # hashes of its Secrets that no check reads.
    return pod(f"{spec.name}-6f8c9d7b5-x2k4q", "tenants", "gpulab-kamaji-hami-control-plane",
               list(containers), tenant="management",
               labels={"kamaji.clastix.io/name": spec.name,
                       "kamaji.clastix.io/component": "deployment"},
               statuses=statuses)


# --------------------------------------------------------------------------- tenant objects


# The kubelet's node conditions (kubernetes/kubernetes pkg/kubelet/nodestatus/setters.go, the
# stored copy at 00267ac822c2, not a release tag: the repository is too large to mirror): the
# pressure conditions first, Ready last ("NodeReady condition needs to be the last in the list",
# ReadyCondition); NotReady joins the runtime's errors with ",".
PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def node_conditions(*, ready: bool = True) -> list[dict[str, Any]]:
    """A worker's status.conditions as its kubelet writes them (see PRESSURE_CONDITIONS)."""
    conditions = [{"type": kind, "status": "False", "reason": reason, "message": message,
                   "lastHeartbeatTime": TS, "lastTransitionTime": TS}
                  for kind, reason, message in PRESSURE_CONDITIONS]
    ready_condition = (
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "kubelet is posting ready status"} if ready else
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
         "message": NOT_READY_MESSAGE})
    return [*conditions, {**ready_condition, "lastHeartbeatTime": TS, "lastTransitionTime": TS}]


def ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    """The node's Ready condition (the kubelet keeps it last; found by type, as readers must)."""
    condition: dict[str, Any] = next(c for c in node["status"]["conditions"]
                                     if c["type"] == "Ready")
    return condition


def node(spec: TenantSpec, index: int = 0, *, ready: bool = True,
         kubelet: str | None = None) -> dict[str, Any]:
    name = worker(spec.name, index)
    capacity = {k: str(v) for k, v in render.gpu_capacity(spec).items()} if spec.gpus else {}
    annotations = {"node.alpha.kubernetes.io/ttl": "0"}
    if spec.gpus:
        # gpulab writes the register annotation itself (steps.py, the `<tenant>/gpus` step);
        # hami-scheduler then marks the node with its handshake (hami_wire.handshake_requesting).
        annotations[render.GPU_REGISTER_ANNOTATION] = render.gpu_register_annotation(spec, index)
        annotations[hw.HANDSHAKE] = hw.handshake_requesting(HANDSHAKE_AT)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": uid("node", spec.name, name),
                     "labels": {"kubernetes.io/hostname": name}, "annotations": annotations},
        "status": {
            "conditions": node_conditions(ready=ready),
            "nodeInfo": {"kubeletVersion": kubelet or spec.kubernetes_version},
            "capacity": {"cpu": "4", "memory": "8Gi", **capacity},
            "allocatable": {"cpu": "4", "memory": "8Gi", **capacity},
        },
    }


# --------------------------------------------------------------------------- system pods
# Each kube-system pod is made from the workload that makes it in the lab, read where that
# workload is written down: calico-node from the pinned Calico manifest, hami-scheduler from the
# pinned HAMi chart as rendered, konnectivity-agent from Kamaji's agent.go (pinned), kube-proxy
# and the mock device plugin from gpulab's own render (gpulab creates them).


def _first(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d.get("kind") == kind and d["metadata"]["name"] == name)


@functools.cache
def _calico_node() -> dict[str, Any]:
    text = (PINNED / "manifests" / "calico-v3.31.2.yaml").read_text(encoding="utf-8")
    return _first([d for d in yaml.safe_load_all(text) if d], "DaemonSet", "calico-node")


@functools.cache
def _hami_scheduler() -> dict[str, Any]:
    text = (RENDERED / "hami-2.10.0_default_install.yaml").read_text(encoding="utf-8")
    return _first([d for d in yaml.safe_load_all(text) if d], "Deployment", "hami-scheduler")


def _konnectivity_agent() -> dict[str, Any]:
    """Kamaji's agent DaemonSet as far as a pod shows it: named AgentName
    (internal/builders/controlplane/konnectivity_server.go:22), its pods labelled
    `k8s-app: konnectivity-agent` (internal/resources/konnectivity/agent.go:202-205, :219), one
    container named AgentName (agent.go:252)."""
    name = "konnectivity-agent"
    return {"kind": "DaemonSet", "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"template": {"metadata": {"labels": {"k8s-app": name}},
                                  "spec": {"containers": [{"name": name}]}}}}


def _kube_proxy(spec: TenantSpec) -> dict[str, Any]:
    objects = render.kube_proxy_objects(spec, f"https://{ENDPOINTS.get(spec.name, '?')}")
    return _first(objects, "DaemonSet", render.KUBE_PROXY)


@functools.cache
def _mock_plugin() -> dict[str, Any]:
    profile = _builtin_profile()
    release = render.hami_release(profile, profile.tenants[0])
    return _first(render.hami_mock_plugin(profile, release, "nvidia: {}\n"), "DaemonSet",
                  render.MOCK_PLUGIN)


def generated_suffix(seed: str, index: int = 0) -> str:
    """Five characters of the alphabet Kubernetes draws generated names from (NAME_ALPHABET),
    fixed per seed and index so that recordings stay stable."""
    base = [NAME_ALPHABET.index(c) if c in NAME_ALPHABET else ord(c) for c in seed]
    out = [NAME_ALPHABET[(sum(base[i::5]) * 7 + i + index * 11) % len(NAME_ALPHABET)]
           for i in range(5)]
    return "".join(out)


def workload_pod(workload: dict[str, Any], name: str, node_name: str, *, tenant: str,
                 phase: str = "Running") -> dict[str, Any]:
    """A pod of `workload` (a DaemonSet or Deployment object) as the API returns it: the
    template's labels and containers, owned by the workload (a ReplicaSet for a Deployment),
    on `node_name`."""
    template = workload["spec"]["template"]
    namespace = workload["metadata"].get("namespace") or "kube-system"
    containers = [c["name"] for c in template["spec"]["containers"]]
    obj = pod(name, namespace, node_name, containers, tenant=tenant,
              labels=dict(template["metadata"].get("labels") or {}), phase=phase)
    owner_kind = "DaemonSet" if workload["kind"] == "DaemonSet" else "ReplicaSet"
    owner = (workload["metadata"]["name"] if owner_kind == "DaemonSet"
             else name.rsplit("-", 1)[0])
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": owner_kind, "name": owner, "controller": True,
        "blockOwnerDeletion": True, "uid": uid(owner_kind.lower(), tenant, owner)}]
    return obj


def daemon_pod_name(daemonset: str, index: int) -> str:
    return f"{daemonset}-{generated_suffix(daemonset, index)}"


HAMI_SCHEDULER_POD = "hami-scheduler-7d9f6c8b9-4qj2w"  # <deployment>-<pod-template-hash>-<5>


def system_pods(spec: TenantSpec, index: int = 0) -> list[dict[str, Any]]:
    """The kube-system pods on worker `index`: one pod of each DaemonSet (calico-node,
    kube-proxy, konnectivity-agent, the mock device plugin) and, on the first worker,
    hami-scheduler."""
    host = worker(spec.name, index)
    t = spec.name
    pods = [workload_pod(ds, daemon_pod_name(ds["metadata"]["name"], index), host, tenant=t)
            for ds in (_calico_node(), _kube_proxy(spec), _konnectivity_agent(),
                       _mock_plugin())]
    if index == 0:
        pods.append(workload_pod(_hami_scheduler(), HAMI_SCHEDULER_POD, host, tenant=t))
    return pods


def calico(ready: int = 1, desired: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "calico-node", "namespace": "kube-system"},
            "status": {"desiredNumberScheduled": desired, "numberReady": ready}}


def event(obj_name: str, reason: str, message: str, *, kind: str = "Warning",
          component: str = "hami-scheduler", count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{obj_name}.{reason.lower()}", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": obj_name, "namespace": NS},
        "reason": reason, "message": message, "type": kind, "count": count,
        "source": {"component": component}, "lastTimestamp": TS,
    }


# --------------------------------------------------------------------------- verify pods


def events_of_uid(run: PodRun, uid: str) -> PodRun:
    """`run` with every event naming the pod of this uid (an earlier run's, or its own)."""
    return replace(run, events=tuple(
        {**e, "involvedObject": {**e["involvedObject"], "uid": uid}} for e in run.events))


def verify_pod(spec: TenantSpec, name: str, *, scheduler: str | None = "hami-scheduler"
               ) -> dict[str, Any]:
    """A verify pod as the tenant API returns it on create (webhook applied)."""
    base = next(p for p in render.verify_objects(spec)[1:] if p["metadata"]["name"] == name)
    obj = copy.deepcopy(base)
    obj["metadata"]["labels"].update({naming.LABEL_LAB: LAB, naming.LABEL_TENANT: spec.name,
                                      naming.LABEL_RUN: RUN_ID})
    obj["metadata"]["uid"] = uid("pod", spec.name, f"{NS}-{name}")
    if scheduler:
        obj["spec"]["schedulerName"] = scheduler
    obj["status"] = {"phase": "Pending"}
    return obj


def _node_devices(spec: TenantSpec) -> tuple[int, int, int]:
    """(slots, cores, memory MiB) of every card on a worker, as HAMi totals them."""
    return (sum(g.split * g.count for g in spec.gpus), sum(g.cores * g.count for g in spec.gpus),
            sum(g.memory_mib * g.count for g in spec.gpus))


def _earlier_shares(name: str) -> int:
    """How many share pods verify placed before `name` (gpu-share-1 first)."""
    return int(name.rsplit("-", 1)[1]) - 1 if name.startswith("gpu-share-") else 0


def _filtered(spec: TenantSpec, name: str, host: str) -> dict[str, Any]:
    """FilteringSucceed for `name` on `host`, scored with the grants of the share pods placed
    before it (hami_wire.filter_succeeded, hami_wire.node_score)."""
    sizes = render.sharing_sizes(spec.gpus[0], spec.device_ids(0)[0])
    earlier = _earlier_shares(name)
    score = hw.node_score((earlier, earlier * sizes.share_cores, earlier * sizes.share_memory),
                          _node_devices(spec))
    return event(name, "FilteringSucceed", hw.filter_succeeded(host, 1, [(host, score)]),
                 kind="Normal")


def placed(spec: TenantSpec, name: str, *, card: str | None = None, memory: int | None = None,
           cores: int | None = None, host: str | None = None) -> PodRun:
    """A share pod HAMi placed and that runs (write-up's gpu-share-1): the annotations of
    HAMi's filter (scheduler.go:1124-1130, nvidia/device.go:505-518 PatchAnnotations) and bind
    (scheduler.go:1031-1034), then gpulab's `bind-phase: success` in the device plugin's place
    (observe.py, _complete_bind)."""
    sizes = render.sharing_sizes(spec.gpus[0], spec.device_ids(0)[0])
    host = host or worker(spec.name)
    card = card or sizes.card_id
    created = verify_pod(spec, name)
    live = copy.deepcopy(created)
    grant = hw.encode_pod_devices(
        [[(card, "NVIDIA", memory or sizes.share_memory, cores or sizes.share_cores)]])
    live["metadata"]["annotations"].update({
        hw.ASSIGNED_NODE: host,
        hw.ASSIGNED_TIME: hw.unix_seconds(PLACED_AT),
        hw.ALLOCATED: grant,
        hw.TO_ALLOCATE: grant,
        hw.BIND_TIME: hw.unix_seconds(PLACED_AT),
        hw.BIND_PHASE: hw.BIND_SUCCESS,
    })
    live["spec"]["nodeName"] = host
    live["status"] = {"phase": "Running", "containerStatuses": [running("app")]}
    events = (
        _filtered(spec, name, host),
        event(name, "BindingSucceed", hw.bind_succeeded([host], NS, name), kind="Normal"),
    )
    return PodRun(name, "TC-05", created=created, pod=live, events=events, outcome="running",
                  waited=4.0, last_seen=f"Running, schedulerName hami-scheduler, node {host}")


def refused(spec: TenantSpec, name: str, reason: str) -> PodRun:
    """gpu-share-4 / gpu-mem-big: Pending, with the events HAMi writes when its filter finds no
    card. The pod is pinned to the first card (nvidia.com/use-gpuuuid), so every other card of
    the worker fails with CardUuidMismatch (nvidia/device.go:755-758, before any size check)."""
    host = worker(spec.name)
    created = verify_pod(spec, name)
    live = copy.deepcopy(created)
    cards = sum(g.count for g in spec.gpus)
    reasons = {reason: 1, **({hw.CARD_UUID_MISMATCH: cards - 1} if cards > 1 else {})}
    events = (
        event(name, "FailedScheduling",
              FAILED_SCHEDULING.format(reasons=hw.gen_reason(reasons, cards)), count=1),
        *(event(name, "FilteringFailed", hw.filter_failed(r, [host]), count=2)
          for r in sorted(reasons)),
        event(name, "FilteringFailed", hw.no_available_node(1), count=2),
    )
    check = "TC-06" if name == "gpu-share-4" else "TC-07"
    return PodRun(name, check, created=created, pod=live, events=events, outcome="refused",
                  waited=15.0, last_seen="Pending, schedulerName hami-scheduler, node -")


def lock_contended(spec: TenantSpec, name: str) -> PodRun:
    """Gotcha 2: HAMi filtered the pod but cannot bind it, the node lock is held."""
    host = worker(spec.name)
    created = verify_pod(spec, name)
    live = copy.deepcopy(created)
    sizes = render.sharing_sizes(spec.gpus[0], spec.device_ids(0)[0])
    grant = hw.encode_pod_devices(
        [[(sizes.card_id, "NVIDIA", sizes.share_memory, sizes.share_cores)]])
    live["metadata"]["annotations"].update({
        hw.ASSIGNED_NODE: host,
        hw.ASSIGNED_TIME: hw.unix_seconds(PLACED_AT),
        hw.ALLOCATED: grant,
        hw.TO_ALLOCATE: grant,
    })
    events = (
        _filtered(spec, name, host),
        event(name, "BindingFailed", hw.node_locked(host), count=6),
    )
    return PodRun(name, "TC-05", created=created, pod=live, events=events, outcome="timeout",
                  waited=120.0, last_seen=f"Pending, schedulerName hami-scheduler, node -; "
                                          f"BindingFailed: {hw.node_locked(host)}")


def gpu_runs(spec: TenantSpec) -> tuple[PodRun, ...]:
    return (
        placed(spec, "gpu-share-1"),
        placed(spec, "gpu-share-2"),
        placed(spec, "gpu-share-3"),
        refused(spec, "gpu-share-4", hw.CARD_INSUFFICIENT_CORE),
        refused(spec, "gpu-mem-big", hw.CARD_INSUFFICIENT_MEMORY),
    )


# --------------------------------------------------------------------------- states


def _namespaced_name(obj: dict[str, Any]) -> tuple[str, str]:
    """The API server's order of a list across namespaces (by namespace, then name)."""
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])


def finished_jobs(spec: TenantSpec) -> list[dict[str, Any]]:
    """What a tenant's users leave on a GPU worker: a Job pod that ran on the card and completed,
    and one that failed, both still carrying HAMi's grant (HAMi counts neither:
    pkg/scheduler/scheduler.go:144-153, pkg/util/util.go:300-305 at v2.10.0). None on a tenant
    without GPUs."""
    if not spec.gpus:
        return []
    sizes = render.sharing_sizes(spec.gpus[0], spec.device_ids(0)[0])
    host = worker(spec.name)
    grant = hw.encode_pod_devices(
        [[(sizes.card_id, "NVIDIA", sizes.share_memory, sizes.share_cores)]])
    jobs = []
    for name, phase, code in (("train-b7kq2", "Succeeded", 0), ("train-x5wzd", "Failed", 1)):
        job = pod(name, "default", host, ["train"], tenant=spec.name, phase=phase,
                  labels={"batch.kubernetes.io/job-name": "train", "job-name": "train"},
                  statuses=[{"name": "train", "ready": False, "restartCount": 0,
                             "state": {"terminated": {
                                 "exitCode": code,
                                 "reason": "Completed" if code == 0 else "Error"}}}])
        job["metadata"]["annotations"] = {
            hw.ASSIGNED_NODE: host, hw.ASSIGNED_TIME: hw.unix_seconds(PLACED_AT),
            hw.ALLOCATED: grant, hw.TO_ALLOCATE: grant, hw.BIND_TIME: hw.unix_seconds(PLACED_AT),
            hw.BIND_PHASE: hw.BIND_SUCCESS}
        jobs.append(job)
    return jobs


def rejected_probe(endpoint: str) -> str:
    """TC-08's probe detail when a tenant's API server refuses another tenant's credentials: its
    401 Status (kube_wire.unauthorized) in gpulab's client's words (kube_wire.kube_client_says)."""
    return f"list Namespace list at https://{endpoint}: {kw.kube_client_says(kw.unauthorized())}"


def tenant_state(profile: KamajiHamiProfile, spec: TenantSpec) -> TenantState:
    nodes = tuple(node(spec, i) for i in range(spec.workers.count))
    system = tuple(sorted((p for i in range(spec.workers.count) for p in system_pods(spec, i)),
                          key=_namespaced_name))  # as the API lists them
    runs = gpu_runs(spec) if spec.gpus else ()
    others = [t.name for t in profile.tenants if t.name != spec.name]
    live_pods = tuple(r.pod for r in runs if r.pod)
    return TenantState(
        tenant=spec.name,
        tcp=tcp(spec),
        tcp_pods=(tcp_pod(spec),),
        api_version=spec.kubernetes_version,
        nodes=nodes,
        system_pods=system,
        calico=calico(spec.workers.count, spec.workers.count),
        hami_device_configmap=True,
        logs_probes=tuple(
            LogsProbe(worker(spec.name, i), "kube-system", daemon_pod_name("calico-node", i),
                      ok=True,
                      excerpt=FELIX_LAST)
            for i in range(spec.workers.count)
        ),
        gpu_pods=runs,
        listing=Listing(nodes=nodes, pods=tuple(
            listing_pod(p) for p in sorted([*system, *live_pods, *finished_jobs(spec)],
                                           key=_namespaced_name))),
        credential_probes=tuple(
            CredentialProbe(spec.name, other, "rejected", rejected_probe(ENDPOINTS.get(other, "?")))
            for other in others
        ),
        timings={"TC-01": 0.4, "TC-02": 0.9, "TC-03": 4.2, "TC-05": 8.1, "TC-06": 15.0,
                 "TC-07": 15.0, "TC-08": 0.6},
    )


def healthy_state(profile: KamajiHamiProfile) -> LabState:
    return LabState(
        lab=LAB,
        tenants={t.name: tenant_state(profile, t) for t in profile.tenants},
        checks=("TC-01", "TC-02", "TC-03", "TC-04", "TC-05", "TC-06", "TC-07", "TC-08"),
        observed_at="2026-11-20T10:14:12+00:00",
        seconds=61.3,
        run_id=RUN_ID,
    )


def tenant_replace(state: LabState, tenant: str, **changes: Any) -> LabState:
    tenants = dict(state.tenants)
    tenants[tenant] = replace(tenants[tenant], **changes)
    return replace(state, tenants=tenants)


def run_replace(state: LabState, tenant: str, run: PodRun) -> LabState:
    st = state.tenants[tenant]
    runs = tuple(run if r.name == run.name else r for r in st.gpu_pods or ())
    return tenant_replace(state, tenant, gpu_pods=runs)


def node_replace(state: LabState, tenant: str, new: dict[str, Any]) -> LabState:
    st = state.tenants[tenant]
    nodes = tuple(new if n["metadata"]["name"] == new["metadata"]["name"] else n
                  for n in st.nodes or ())
    return tenant_replace(state, tenant, nodes=nodes)


def judge(state: LabState, profile: KamajiHamiProfile, check: str,
          tenant: str = "tenant-a") -> CheckResult:
    """Run one check the way `evaluate` does."""
    fn = next(c.run for c in CHECKS if c.id == check)
    return fn(state, profile, tenant)


def with_gpus(profile: KamajiHamiProfile, tenant: str, *gpus: dict[str, Any],
              workers: int | None = None) -> KamajiHamiProfile:
    """The profile with `tenant`'s GPUs (and worker count) replaced."""
    tenants = []
    for spec in profile.tenants:
        if spec.name != tenant:
            tenants.append(spec)
            continue
        update: dict[str, Any] = {"gpus": [GpuSpec(**g) for g in gpus]}
        if workers is not None:
            update["workers"] = spec.workers.model_copy(update={"count": workers})
        tenants.append(spec.model_copy(update=update))
    return profile.model_copy(update={"tenants": tenants})


def only_tenant(profile: KamajiHamiProfile, tenant: str) -> KamajiHamiProfile:
    return profile.model_copy(
        update={"tenants": [t for t in profile.tenants if t.name == tenant]})


def write_writeup_recordings(root: Path = RECORDINGS) -> list[Path]:
    """Write the checked-in recordings (healthy, and the webhook bypassed in tenant-b)."""
    from gpulab.stacks.kamaji_hami.record import write_recording

    profile = _builtin_profile()
    healthy = healthy_state(profile)
    written = [write_recording(root / "writeup-healthy", healthy, profile)]
    spec_b = profile.tenant("tenant-b")
    bypassed: list[PodRun] = []
    for run in healthy.tenants["tenant-b"].gpu_pods or ():
        created = verify_pod(spec_b, run.name, scheduler=None)  # the webhook was not called
        if run.name == "gpu-share-1":
            bypassed.append(replace(run, created=created, pod=created, events=(),
                                    outcome="timeout", waited=120.0, notes=(),
                                    last_seen="Pending, schedulerName default-scheduler, node -"))
        elif run.check in ("TC-05", "TC-06"):
            bypassed.append(PodRun(run.name, run.check, outcome="not-created",
                                   last_seen="not created because gpu-share-1 did not run "
                                             "(timeout)"))
        else:
            bypassed.append(replace(run, created=created, pod=created, events=(),
                                    outcome="timeout", waited=60.0))
    st_b = healthy.tenants["tenant-b"]
    listing = replace(st_b.listing or Listing(), pods=tuple(
        listing_pod(p) for p in [*system_pods(spec_b), *(r.pod for r in bypassed if r.pod)]))
    state = tenant_replace(healthy, "tenant-b", gpu_pods=tuple(bypassed), listing=listing)
    written.append(write_recording(root / "writeup-webhook-bypassed", state, profile))
    return written


if __name__ == "__main__":
    from tests.recordings import sync_examples

    for path in [*write_writeup_recordings(), *sync_examples(("kamaji-hami",))]:
        print(path)
