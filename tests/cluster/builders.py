"""Clusters shaped unlike gpulab's labs, as API objects in a fake API server.

Each `shape_*` returns a `ClusterApi` holding what such a cluster would show: HAMi's Deployment,
webhook and device plugin as its chart v2.10.0 names them, nodes with HAMi's register annotation,
pods holding slices (`hami.io/vgpu-devices-allocated`), KAI's Deployments, Queues and Config,
vCluster and Kamaji control planes. `read_cluster` reads them as it would a real API server.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from tests.kamaji_hami.fakes import FakeApi

CLUSTER_SCOPED = {"Node", "Namespace", "MutatingWebhookConfiguration", "Queue", "Config"}
RENDERED_HAMI = (Path(__file__).resolve().parents[1] / "data" / "rendered"
                 / "hami-2.10.0_default_install.yaml")
PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned"
TS = "2026-12-01 10:00:00"


class ClusterApi(FakeApi):
    """FakeApi that knows which kinds are cluster-scoped, and records every call."""

    @staticmethod
    def key(obj: Any) -> tuple[str, str, str]:
        meta = obj["metadata"]
        scoped = obj["kind"] in CLUSTER_SCOPED
        return obj["kind"], "" if scoped else (meta.get("namespace") or "default"), meta["name"]

    def writes(self) -> list[tuple[str, ...]]:
        return [c for c in self.calls if c[0] not in ("get", "list_objects", "server_version")]


def card(device_id: str, model: str, memory: int, *, cores: int = 100, split: int = 10,
         healthy: bool = True) -> dict[str, Any]:
    return {"id": device_id, "index": 0, "count": split, "devmem": memory, "devcore": cores,
            "type": model, "numa": 0, "mode": "hami-core", "health": healthy}


def node(name: str, cards: list[dict[str, Any]] | None = None, *, ready: bool = True,
         gpus: int | None = None) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    allocatable: dict[str, str] = {"cpu": "32", "memory": "256Gi"}
    if cards is not None:
        annotations = {"hami.io/node-nvidia-register": json.dumps(cards),
                       "hami.io/node-handshake": f"Reported_{TS}"}
        allocatable["nvidia.com/gpu"] = str(sum(c["count"] for c in cards))
        allocatable["nvidia.com/gpumem"] = str(sum(c["devmem"] for c in cards))
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "annotations": annotations,
                         "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name: str, namespace: str, node_name: str = "", *, grant: str = "",
        limits: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        phase: str = "Running", labels: dict[str, str] | None = None) -> dict[str, Any]:
    notes = dict(annotations or {})
    if grant:
        notes.update({"hami.io/vgpu-node": node_name, "hami.io/vgpu-devices-allocated": grant,
                      "hami.io/bind-phase": "success"})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                         "labels": dict(labels or {}), "annotations": notes},
            "spec": {"nodeName": node_name, "schedulerName": "hami-scheduler" if grant else
                     "default-scheduler",
                     "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01",
                                     "resources": {"limits": dict(limits or {})}}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "main", "ready": True}]}}


def workload(kind: str, name: str, namespace: str, labels: dict[str, str], images: list[str],
             *, ready: int = 1, desired: int = 1, args: list[str] | None = None
             ) -> dict[str, Any]:
    status = ({"desiredNumberScheduled": desired, "numberReady": ready} if kind == "DaemonSet"
              else {"readyReplicas": ready, "replicas": desired})
    spec: dict[str, Any] = {"template": {"spec": {"containers": [
        {"name": f"c{i}", "image": image, "args": list(args or [])}
        for i, image in enumerate(images)]}}}
    if kind != "DaemonSet":
        spec["replicas"] = desired
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": spec, "status": status}


def hami_chart(*, scheduler_name: str | None = None,
               node_label_selector: dict[str, str] | None = None,
               resources: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """HAMi's chart v2.10.0 objects by kind (Deployment, DaemonSet, MutatingWebhookConfiguration,
    ConfigMap), as `helm template` renders them (RENDERED_HAMI) with these values, edited the
    way the templates write them: `schedulerName` into `--scheduler-name=` and
    `--leader-elect-resource-name=` (templates/scheduler/deployment.yaml:110, 117),
    `scheduler.nodeLabelSelector` into `--node-label-selector=k=v,...` after the leader-election
    flags (:125-132), `resourceName`/`resourceMem`/`resourceMemPercentage`/`resourceCores` into
    the device config (templates/scheduler/device-configmap.yaml:17-20). test_eligibility
    renders the same values with helm and compares."""
    docs = {d["kind"]: d for d in yaml.safe_load_all(RENDERED_HAMI.read_text())}
    deploy = docs["Deployment"]
    extender = deploy["spec"]["template"]["spec"]["containers"][1]
    command = extender["command"]
    if scheduler_name is not None:
        command[:] = [f"--scheduler-name={scheduler_name}" if a.startswith("--scheduler-name=")
                      else f"--leader-elect-resource-name={scheduler_name}"
                      if a.startswith("--leader-elect-resource-name=") else a for a in command]
    if node_label_selector:
        at = next(i for i, a in enumerate(command)
                  if a.startswith("--leader-elect-resource-namespace=")) + 1
        command.insert(at, "--node-label-selector=" + ",".join(
            f"{k}={v}" for k, v in sorted(node_label_selector.items())))
    if resources:
        config = docs["ConfigMap"]["data"]["device-config.yaml"]
        keys = {"resourceName": "resourceCountName", "resourceMem": "resourceMemoryName",
                "resourceMemPercentage": "resourceMemoryPercentageName",
                "resourceCores": "resourceCoreName"}
        lines = config.split("\n")
        end = next(i for i, line in enumerate(lines) if i and line and not line[0].isspace())
        for value_key, value in resources.items():  # the `nvidia:` section only
            prefix = f"  {keys[value_key]}: "
            lines[:end] = [prefix + value if line.startswith(prefix) else line
                           for line in lines[:end]]
        docs["ConfigMap"]["data"]["device-config.yaml"] = "\n".join(lines)
    return docs


def _with_status(obj: dict[str, Any], ready: int, desired: int) -> dict[str, Any]:
    if obj["kind"] == "DaemonSet":
        obj["status"] = {"desiredNumberScheduled": desired, "numberReady": ready}
    else:
        obj["spec"]["replicas"] = desired
        obj["status"] = {"readyReplicas": ready, "replicas": desired}
    return obj


def hami(device_plugin: str = "real", *, webhook: bool = True, nodes: int = 1,
         scheduler_ready: int = 1, **values: Any) -> list[dict[str, Any]]:
    """HAMi v2.10.0 as its chart installs it in kube-system (hami_chart, with `values`), its
    scheduler with `scheduler_ready` of 1 pod ready; the device plugin: the chart's (`real`), the
    mock plugin's own DaemonSet (`mock`), or none."""
    docs = hami_chart(**values)
    objs = [_with_status(docs["Deployment"], scheduler_ready, 1), docs["ConfigMap"]]
    if device_plugin == "real":
        objs.append(_with_status(docs["DaemonSet"], nodes, nodes))
    elif device_plugin == "mock":
        objs.append(workload("DaemonSet", "hami-mock-device-plugin", "kube-system",
                             {"app": "mock-device-plugin"},
                             ["projecthami/mock-device-plugin:v1.0.1"], ready=nodes,
                             desired=nodes))
    if webhook:
        objs.append(docs["MutatingWebhookConfiguration"])
    return objs


def kai_scheduler(*, name: str = "kai-scheduler", shard: str = "default", partition: str = "",
                  ready: int = 1, shard_args: dict[str, str] | None = None,
                  namespace: str = "kai-scheduler") -> dict[str, Any]:
    """The scheduler Deployment KAI's operator makes for a SchedulingShard:
    `<schedulerName>-<shard>` (pkg/operator/operands/scheduler/resources_for_shard.go:374-376),
    selected by `app` (:63-75), with buildArgsList's flags (:336-344, the shard's own args after
    them :355-360; the defaults of GlobalConfig global.go:119-122 and binder.go:267), as
    resources_test.go:63-69, 94-101 expect them."""
    deployment = f"{name}-{shard}"
    args = ["--scheduler-conf=/etc/config/config.yaml", f"--scheduler-name={name}",
            f"--namespace={namespace}", "--nodepool-label-key=kai.scheduler/node-pool",
            f"--partition-label-value={partition}",
            "--resource-reservation-app-label=kai-resource-reservation",
            "--queue-label-key=kai.scheduler/queue",
            *(f"--{k}={v}" for k, v in (shard_args or {}).items())]
    obj = workload("Deployment", deployment, namespace, {"app": deployment},
                   ["ghcr.io/kai-scheduler/kai-scheduler/scheduler:v0.16.8"], ready=ready,
                   args=args)
    obj["spec"]["selector"] = {"matchLabels": {"app": deployment}}
    return obj


def cluster(*objs: dict[str, Any], version: str = "v1.31.4") -> ClusterApi:
    api = ClusterApi("cluster", version)
    api.put(*(copy.deepcopy(o) for o in objs))
    return api


A100 = "NVIDIA-NVIDIA A100-SXM4-80GB"
L4 = "NVIDIA-NVIDIA L4"


def shape_eight_cards_one_node() -> ClusterApi:
    """One big node, 8 A100 80GB, real device plugin; card 0 busy, card 3 unhealthy."""
    cards = [card(f"GPU-a100-{i}", A100, 81920, healthy=i != 3) for i in range(8)]
    return cluster(*hami("real"), node("dgx-1", cards),
                   pod("train-llm", "research", "dgx-1", grant="GPU-a100-0,NVIDIA,40000,50:;",
                       limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": "40000"}))


def shape_one_card_per_node() -> ClusterApi:
    """Three nodes with one L4 each, mock device plugin; node-2 NotReady, node-1's card busy."""
    return cluster(*hami("mock", nodes=3),
                   node("node-1", [card("GPU-l4-1", L4, 24576)]),
                   node("node-2", [card("GPU-l4-2", L4, 24576)], ready=False),
                   node("node-3", [card("GPU-l4-3", L4, 24576)]),
                   pod("infer", "apps", "node-1", grant="GPU-l4-1,NVIDIA,8000,20:;",
                       limits={"nvidia.com/gpu": "1"}))


def shape_no_hami() -> ClusterApi:
    """NVIDIA's own device plugin only: whole GPUs, nothing HAMi registered."""
    return cluster(workload("DaemonSet", "nvidia-device-plugin-daemonset", "kube-system",
                            {"name": "nvidia-device-plugin-ds"},
                            ["nvcr.io/nvidia/k8s-device-plugin:v0.17.0"]),
                   node("gpu-1", gpus=4), node("cpu-1"),
                   pod("train", "ml", "gpu-1", limits={"nvidia.com/gpu": "2"}))


def shape_kai_with_queues() -> ClusterApi:
    """KAI v0.16.8 with GPU sharing on, two team queues, fractional workloads, vClusters."""
    queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue"}
    return cluster(
        workload("Deployment", "kai-operator", "kai-scheduler", {"app": "kai-operator"},
                 ["ghcr.io/kai-scheduler/kai-scheduler/operator:v0.16.8"]),
        kai_scheduler(),
        workload("StatefulSet", "team-a", "vcluster-team-a", {"app": "vcluster"},
                 ["ghcr.io/loft-sh/vcluster-pro:0.35.3"]),
        {**queue, "metadata": {"name": "org"}, "spec": {"resources": {}}},
        {**queue, "metadata": {"name": "team-a"}, "spec": {"parentQueue": "org"}},
        {**queue, "metadata": {"name": "team-b"}, "spec": {"parentQueue": "org"}},
        {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
         "spec": {"admission": {"gpuSharing": True}}},
        node("gpu-1", gpus=8),
        pod("notebook-x", "vcluster-team-a", "gpu-1", annotations={"gpu-fraction": "0.5"},
            labels={"kai.scheduler/queue": "team-a"}),
        pod("batch", "team-b", "gpu-1", limits={"nvidia.com/gpu": "2"}, phase="Succeeded"))


def shape_kai_idle_node() -> ClusterApi:
    """KAI with GPU sharing on, a research queue without limit, a busy 8-GPU node and an idle
    4-GPU node."""
    queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue"}
    unlimited = {"gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}}
    return cluster(
        kai_scheduler(),
        {**queue, "metadata": {"name": "org"}, "spec": {"resources": unlimited}},
        {**queue, "metadata": {"name": "prod"},
         "spec": {"parentQueue": "org", "resources": {"gpu": {"quota": 4, "limit": 4}}}},
        {**queue, "metadata": {"name": "research"},
         "spec": {"parentQueue": "org", "resources": unlimited}},
        {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
         "spec": {"admission": {"gpuSharing": True}}},
        node("gpu-big", gpus=8), node("gpu-small", gpus=4),
        _kai_scheduled(pod("train", "prod", "gpu-big", limits={"nvidia.com/gpu": "4"},
                           labels={"kai.scheduler/queue": "prod"})))


def _kai_scheduled(obj: dict[str, Any]) -> dict[str, Any]:
    """A pod KAI placed: it names KAI's scheduler, so it has a pod group and counts in its
    queue (KAI pkg/podgrouper/pod_controller.go:90-92)."""
    obj["spec"]["schedulerName"] = "kai-scheduler"
    return obj


def shape_busy_and_small_split() -> ClusterApi:
    """HAMi with two cards, none usable: one split 2, one busy."""
    return cluster(*hami("real"),
                   node("gpu-1", [card("GPU-t4-1", "NVIDIA-Tesla T4", 15360, split=2),
                                  card("GPU-t4-2", "NVIDIA-Tesla T4", 15360)]),
                   pod("serve", "prod", "gpu-1", grant="GPU-t4-2,NVIDIA,4000,25:;"))


def shape_kamaji_management() -> ClusterApi:
    """A Kamaji management cluster with two tenants and HAMi on its own GPU node (H100)."""
    tcp = {"apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane"}
    return cluster(*hami("real"),
                   {**tcp, "metadata": {"name": "tenant-a", "namespace": "tenants"}},
                   {**tcp, "metadata": {"name": "tenant-b", "namespace": "tenants"}},
                   node("h100-1", [card("GPU-h100-0", "NVIDIA-NVIDIA H100 NVL", 95830,
                                        split=8)]))


SHAPES = {
    "eight-cards-one-node": shape_eight_cards_one_node,
    "one-card-per-node": shape_one_card_per_node,
    "no-hami": shape_no_hami,
    "kai-with-queues": shape_kai_with_queues,
    "kai-idle-node": shape_kai_idle_node,
    "busy-and-small-split": shape_busy_and_small_split,
    "kamaji-management": shape_kamaji_management,
}


def kubeconfig_file(path: Path, server: str = "https://127.0.0.1:1") -> Path:
    """A kubeconfig for `server` with contexts ctx-a (current) and ctx-b and a token user."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx-a",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}}
                     for n in ("ctx-a", "ctx-b")]}))
    return path


# --------------------------------------------------------------------------- who may land where
# Shapes where one upstream rule decides (tests/cluster/test_eligibility.py): a trap, the card or
# node the plan would prefer (smallest, first by name) that a rule makes unusable, next to one
# that works. Upstream output on them is copied from upstream (tests/cluster/upstream.py).


def raw_node(name: str, *, register: str | None = None, handshake: str | None = None,
             gpus: int | None = None, count_resource: str = "nvidia.com/gpu",
             labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             taints: list[dict[str, str]] | None = None, unschedulable: bool = False,
             conditions: list[dict[str, str]] | None = None,
             allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node carrying upstream annotations as given (`register`: HAMi's register annotation
    verbatim); its allocatable count resource is what HAMi's device plugin advertises (the
    cards' `count` summed) unless `gpus` says otherwise."""
    notes = dict(annotations or {})
    alloc: dict[str, str] = {"cpu": "32", "memory": "256Gi"}
    if register is not None:
        notes["hami.io/node-nvidia-register"] = register
        notes["hami.io/node-handshake"] = handshake or "Reported_2026-12-01 10:00:00"
        alloc[count_resource] = str(sum(int(c.get("count", 0)) for c in json.loads(register)))
    elif handshake is not None:
        notes["hami.io/node-handshake"] = handshake
    if gpus is not None:
        alloc[count_resource] = str(gpus)
    alloc.update(allocatable or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "annotations": notes,
                         "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": conditions or [{"type": "Ready", "status": "True"}]}}


def shape_hami_eligibility() -> ClusterApi:
    """HAMi with a CPU node listed first and two GPU nodes of one A100 each (upstream register
    annotations): gpu-a's GPU-0 is the card the plan prefers (same size, first by name), gpu-b's
    GPU-1 the one left. A Failed pod still holds a grant on GPU-1: HAMi does not count it."""
    from tests.cluster import upstream as up

    # pkg/device-plugin/nvidiadevice/nvinternal/plugin/alloc_refactor_test.go:484's grant,
    # `GPU-aaa,NVIDIA,3000,50:;`, on the card it is on
    grant = "GPU-aaa,NVIDIA,3000,50:;".replace("GPU-aaa", "GPU-1")
    return cluster(*hami("real", nodes=2),
                   raw_node("a-cpu-0"),
                   raw_node("gpu-a", register=up.REGISTER_A100_GPU0),
                   raw_node("gpu-b", register=up.REGISTER_A100_GPU1),
                   pod("finished-job", "research", "gpu-b", grant=grant, phase="Failed",
                       limits={"nvidia.com/gpu": "1"}))


def shape_kai_eligibility() -> ClusterApi:
    """KAI with GPU sharing on and the quickstart's queues (docs/quickstart/default-queues.yaml:
    default-parent-queue > default-queue, limits -1), a CPU node listed first, a busy 8-GPU node
    and two idle 4-GPU nodes: gpu-small (the node the plan prefers) and gpu-spare. On gpu-small
    runs an ordinary pod (no GPU asked): it uses no GPU."""
    queues = list(yaml.safe_load_all(
        (PINNED / "kai_v0.16.8_docs_quickstart_default-queues.yaml").read_text()))
    return cluster(
        kai_scheduler(),
        *queues,
        {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
         "spec": {"admission": {"gpuSharing": True}}},
        raw_node("a-cpu-0"), raw_node("gpu-big", gpus=8), raw_node("gpu-small", gpus=4),
        raw_node("gpu-spare", gpus=4),
        pod("train", "prod", "gpu-big", limits={"nvidia.com/gpu": "8"},
            labels={"kai.scheduler/queue": "default-queue"}),
        pod("node-exporter", "monitoring", "gpu-small"))


SHAPES["hami-eligibility"] = shape_hami_eligibility
SHAPES["kai-eligibility"] = shape_kai_eligibility
