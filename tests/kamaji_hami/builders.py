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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab import naming
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks.registry import CHECKS
from gpulab.stacks.kamaji_hami.profile import GpuSpec
from gpulab.stacks.kamaji_hami.state import LabState, TenantState
from gpulab.verify import observe as verify_observe
from gpulab.verify.observe import listing_pod
from gpulab.verify.state import CredentialProbe, Listing, LogsProbe, PodRun

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec
    from gpulab.verify.result import CheckResult

LAB = "kamaji-hami"
RUN_ID = "3f9c2a7d1e04"  # the gpulab.dev/run label of the recorded verify run
NS = verify_observe.VERIFY_NAMESPACE
TS = "2026-11-20T10:15:00Z"
ENDPOINTS = {"tenant-a": "172.18.255.200:6443", "tenant-b": "172.18.255.201:6443"}
RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"
NOT_READY_MESSAGE = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)
LOCK_MESSAGE = "node {node} has been locked within 5m0s: node lock contention"


def worker(tenant: str, index: int = 0) -> str:
    return render.worker_name(LAB, tenant, index)


def uid(kind: str, tenant: str, name: str) -> str:
    """Deterministic, distinct uids per tenant (as two API servers would give)."""
    return f"{tenant}-{kind}-{name}".lower()


# --------------------------------------------------------------------------- management


def tcp(spec: TenantSpec, state: str = "Ready", version: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kamaji.clastix.io/v1alpha1",
        "kind": "TenantControlPlane",
        "metadata": {"name": spec.name, "namespace": "tenants",
                     "labels": {"tenant.clastix.io": spec.name},
                     "uid": uid("tcp", spec.name, spec.name)},
        "spec": {"kubernetes": {"version": version or spec.kubernetes_version},
                 "controlPlane": {"deployment": {"replicas": 1},
                                  "service": {"serviceType": "LoadBalancer"}}},
        "status": {
            "controlPlaneEndpoint": ENDPOINTS.get(spec.name, "172.18.255.210:6443"),
            "kubernetesResources": {"version": {"status": state,
                                                "version": version or spec.kubernetes_version}},
        },
    }


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
    return pod(f"{spec.name}-6f8c9d7b5-x2k4q", "tenants", "gpulab-kamaji-hami-control-plane",
               list(containers), tenant="management",
               labels={"kamaji.clastix.io/name": spec.name,
                       "kamaji.clastix.io/component": "deployment"},
               statuses=statuses)


# --------------------------------------------------------------------------- tenant objects


def node(spec: TenantSpec, index: int = 0, *, ready: bool = True,
         kubelet: str | None = None) -> dict[str, Any]:
    name = worker(spec.name, index)
    capacity = {k: str(v) for k, v in render.gpu_capacity(spec).items()} if spec.gpus else {}
    cond = ({"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status"} if ready else
            {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
             "message": NOT_READY_MESSAGE})
    annotations = {"node.alpha.kubernetes.io/ttl": "0"}
    if spec.gpus:
        annotations[render.GPU_REGISTER_ANNOTATION] = render.gpu_register_annotation(spec, index)
        annotations["hami.io/node-handshake"] = "Requesting_2026-11-20 10:12:47"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": uid("node", spec.name, name),
                     "labels": {"kubernetes.io/hostname": name}, "annotations": annotations},
        "status": {
            "conditions": [cond],
            "nodeInfo": {"kubeletVersion": kubelet or spec.kubernetes_version},
            "capacity": {"cpu": "4", "memory": "8Gi", **capacity},
            "allocatable": {"cpu": "4", "memory": "8Gi", **capacity},
        },
    }


def system_pods(spec: TenantSpec, index: int = 0) -> list[dict[str, Any]]:
    host = worker(spec.name, index)
    t = spec.name
    return [
        pod(f"calico-node-{index}x7kq", "kube-system", host, ["calico-node"], tenant=t,
            labels={"k8s-app": "calico-node"}),
        pod(f"kube-proxy-{index}m2xz", "kube-system", host, ["kube-proxy"], tenant=t,
            labels={"k8s-app": "kube-proxy"}),
        pod(f"konnectivity-agent-{index}h5tw", "kube-system", host, ["konnectivity-agent"],
            tenant=t, labels={"k8s-app": "konnectivity-agent"}),
        pod("hami-scheduler-7d9f6c8b9-4qj2w", "kube-system", host,
            ["kube-scheduler", "vgpu-scheduler-extender"], tenant=t,
            labels={"app.kubernetes.io/component": "hami-scheduler"}),
        pod(f"hami-mock-device-plugin-{index}p9rd", "kube-system", host, ["hami-mock-dp-cntr"],
            tenant=t, labels={"app.kubernetes.io/component": "hami-mock-device-plugin"}),
    ]


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


def placed(spec: TenantSpec, name: str, *, card: str | None = None, memory: int | None = None,
           cores: int | None = None, host: str | None = None) -> PodRun:
    """A share pod HAMi placed and that runs (write-up's gpu-share-1)."""
    sizes = render.sharing_sizes(spec.gpus[0], spec.device_ids(0)[0])
    host = host or worker(spec.name)
    card = card or sizes.card_id
    created = verify_pod(spec, name)
    live = copy.deepcopy(created)
    live["metadata"]["annotations"].update({
        "hami.io/vgpu-node": host,
        "hami.io/vgpu-time": "1763633700",
        "hami.io/vgpu-devices-allocated":
            f"{card},NVIDIA,{memory or sizes.share_memory},{cores or sizes.share_cores}:;",
        "hami.io/vgpu-devices-to-allocate":
            f"{card},NVIDIA,{memory or sizes.share_memory},{cores or sizes.share_cores}:;",
        "hami.io/bind-phase": "success",
    })
    live["spec"]["nodeName"] = host
    live["status"] = {"phase": "Running", "containerStatuses": [running("app")]}
    events = (
        event(name, "FilteringSucceed",
              f"find fit node({host}), 0 nodes not fit, 1 nodes fit({host}:0)", kind="Normal"),
        event(name, "BindingSucceed", f"Successfully binding node [{host}] to {NS}/{name}",
              kind="Normal"),
    )
    return PodRun(name, "TC-05", created=created, pod=live, events=events, outcome="running",
                  waited=4.0, last_seen=f"Running, schedulerName hami-scheduler, node {host}")


def refused(spec: TenantSpec, name: str, reason: str) -> PodRun:
    """gpu-share-4 / gpu-mem-big: Pending with the write-up's events."""
    host = worker(spec.name)
    created = verify_pod(spec, name)
    live = copy.deepcopy(created)
    cards = sum(g.count for g in spec.gpus)
    events = (
        event(name, "FailedScheduling",
              f"0/1 nodes are available: 1 1/{cards} {reason}. no new claims to deallocate, "
              f"preemption: 0/1 nodes are available: 1 No preemption victims found for incoming "
              f"pod.", count=1),
        event(name, "FilteringFailed", f"1 nodes {reason}({host})", count=2),
        event(name, "FilteringFailed", "no available node, 1 nodes do not meet", count=2),
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
    live["metadata"]["annotations"].update({
        "hami.io/vgpu-node": host,
        "hami.io/vgpu-devices-to-allocate":
            f"{sizes.card_id},NVIDIA,{sizes.share_memory},{sizes.share_cores}:;",
    })
    events = (
        event(name, "FilteringSucceed",
              f"find fit node({host}), 0 nodes not fit, 1 nodes fit({host}:0)", kind="Normal"),
        event(name, "BindingFailed", LOCK_MESSAGE.format(node=host), count=6),
    )
    return PodRun(name, "TC-05", created=created, pod=live, events=events, outcome="timeout",
                  waited=120.0, last_seen=f"Pending, schedulerName hami-scheduler, node -; "
                                          f"BindingFailed: {LOCK_MESSAGE.format(node=host)}")


def gpu_runs(spec: TenantSpec) -> tuple[PodRun, ...]:
    return (
        placed(spec, "gpu-share-1"),
        placed(spec, "gpu-share-2"),
        placed(spec, "gpu-share-3"),
        refused(spec, "gpu-share-4", "CardInsufficientCore"),
        refused(spec, "gpu-mem-big", "CardInsufficientMemory"),
    )


# --------------------------------------------------------------------------- states


def tenant_state(profile: KamajiHamiProfile, spec: TenantSpec) -> TenantState:
    nodes = tuple(node(spec, i) for i in range(spec.workers.count))
    system = tuple(p for i in range(spec.workers.count) for p in system_pods(spec, i))
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
            LogsProbe(worker(spec.name, i), "kube-system", f"calico-node-{i}x7kq", ok=True,
                      excerpt="felix/health.go 196: Overall health status changed: live=true "
                              "ready=true")
            for i in range(spec.workers.count)
        ),
        gpu_pods=runs,
        listing=Listing(nodes=nodes, pods=tuple(listing_pod(p) for p in system + live_pods)),
        credential_probes=tuple(
            CredentialProbe(spec.name, other, "rejected",
                            f"list Namespace list at https://{ENDPOINTS.get(other, '?')}: "
                            f"401 Unauthorized")
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
    from gpulab.stacks import load_profile
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.record import write_recording

    profile = load_profile("kamaji-hami").profile
    assert isinstance(profile, KamajiHamiProfile)
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
