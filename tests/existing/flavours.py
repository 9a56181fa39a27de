"""Clusters as they come (#32): one shape per class of cluster the existing provider's
preflight must plan right or refuse in one line, each stood up by kmock (ExistingCluster's
`nodes`, `objects`, `storage_classes`, `forbidden`).

Every object is copied or derived from an upstream example, its source beside it:

- nodes: tests/existing/kmock_cluster.node(), the multi-node shape's (GPU feature discovery's
  example labels, k8s-device-plugin v0.20.0 docs/gpu-feature-discovery/README.md:134-147, with
  their own count), changed as each shape says;
- the NVIDIA device plugin's DaemonSet and pods: kmock_cluster.device_plugin() (v0.20.0
  deployments/static/nvidia-device-plugin.yml), on managed clouds the plugin without the GPU
  Operator, hence no RuntimeClass;
- RuntimeClasses: the GPU Operator's (v26.7.0 assets/pre-requisites, kmock_cluster.
  gpu_operator_runtime_classes) and k3s's packaged manifests/runtimes.yaml (k3s-io/k3s
  c77d0b85, tests/data/pinned/upstream/k3s_c77d0b85_manifests_runtimes.yaml);
- StorageClasses: k3s's local-path (k3s-io/k3s manifests/local-storage.yaml @ 0362e38d, the
  StorageClass document), and the same marked default only with the beta annotation
  (kubernetes pkg/volume/util/storageclass.go:29-37,73-85 takes it for the default);
- MIG nodes: GFD's MIG label tables (README.md:228-266: `nvidia.com/mig.strategy`, single's
  overridden product and count, 8 GPUs of 7 MIG devices = 56) and the device plugin's mixed
  resources of an A100 40GB (k8s-device-plugin v0.20.0 README.md:262-264,492-500:
  `nvidia.com/mig-1g.5gb`, ...); KAI's MIG label node-role.kubernetes.io/mig-enabled
  (pkg/scheduler/conf/global_config.go:29 at v0.16.8);
- the GPU taint GKE sets on GPU nodes, `nvidia.com/gpu=present:NoSchedule` (GKE docs "Run GPUs
  in Standard node pools", read as documentation only: not confirmed in source);
- a cordon (`spec.unschedulable: true`, what `kubectl cordon` sets) and a NotReady node
  (`status.conditions` Ready=False), as KAI reads them (scheduler_util/scheduler_utils.go:
  12-45 at v0.16.8).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.existing.kmock_cluster import (
    DAEMONSETS,
    MULTI_NODE,
    NO_GPU,
    PODS,
    RUNTIMECLASSES,
    SERVICES,
    UPSTREAM,
    device_plugin,
    gpu_operator_runtime_classes,
    node,
)

K3S_RUNTIMES = UPSTREAM / "k3s_c77d0b85_manifests_runtimes.yaml"
# k3s-io/k3s manifests/local-storage.yaml @ 0362e38d: its StorageClass document
K3S_LOCAL_PATH = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                  "metadata": {"name": "local-path", "annotations": {
                      "defaultVolumeType": "local",
                      "storageclass.kubernetes.io/is-default-class": "true"}},
                  "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer",
                  "reclaimPolicy": "Delete"}
GKE_GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_NODES = ("gpu-1", "gpu-2", "gpu-3")


@dataclass(frozen=True)
class Shape:
    """A cluster: its nodes and further objects; `refused`, the start of the one line the
    preflight refuses it with (None: it is planned)."""

    name: str
    why: str
    nodes: list[dict[str, Any]]
    objects: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    storage_classes: list[dict[str, Any]] = field(default_factory=lambda: [K3S_LOCAL_PATH])
    forbidden: tuple[str, ...] = ()
    refused: str | None = None
    kai: bool = False

    def cluster_kwargs(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "objects": self.objects,
                "storage_classes": self.storage_classes, "forbidden": self.forbidden,
                "kai": self.kai}


def multi_node() -> list[dict[str, Any]]:
    return [node(*row) for row in MULTI_NODE]


def device_plugin_objects(nodes: list[dict[str, Any]]) -> list[tuple[Any, dict[str, Any]]]:
    """The device plugin's DaemonSet and one pod per node advertising nvidia.com/gpu."""
    gpus = [n["metadata"]["name"] for n in nodes
            if int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) > 0]
    daemonset, pods = device_plugin(gpus)
    return [(DAEMONSETS, daemonset), *((PODS, p) for p in pods)]


def k3s_runtime_classes() -> list[tuple[Any, dict[str, Any]]]:
    return [(RUNTIMECLASSES, d) for d in yaml.safe_load_all(K3S_RUNTIMES.read_text()) if d]


def _edit(nodes: list[dict[str, Any]], names: tuple[str, ...], change: Any
          ) -> list[dict[str, Any]]:
    out = copy.deepcopy(nodes)
    for one in out:
        if one["metadata"]["name"] in names:
            change(one)
    return out


def _cordon(one: dict[str, Any]) -> None:
    one["spec"]["unschedulable"] = True
    one["spec"].setdefault("taints", []).append(
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})


def _not_ready(one: dict[str, Any]) -> None:
    one["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                    "reason": "KubeletNotReady"}]
    one["spec"].setdefault("taints", []).append(
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})


def _taint(one: dict[str, Any]) -> None:
    one["spec"].setdefault("taints", []).append(dict(GKE_GPU_TAINT))


def _taint_no_execute(one: dict[str, Any]) -> None:
    one["spec"].setdefault("taints", []).append({**GKE_GPU_TAINT, "effect": "NoExecute"})


def _mig_mixed(one: dict[str, Any]) -> None:
    """An A100 40GB node in mixed strategy: one GPU left whole, MIG devices of the others."""
    labels = one["metadata"]["labels"]
    labels["nvidia.com/mig.strategy"] = "mixed"
    labels["nvidia.com/gpu.product"] = "A100-SXM4-40GB"
    for part in ("capacity", "allocatable"):
        one["status"][part].update({"nvidia.com/gpu": "1", "nvidia.com/mig-1g.5gb": "7",
                                    "nvidia.com/mig-3g.20gb": "2"})


def _mig_single(one: dict[str, Any]) -> None:
    """GFD's single-strategy example: 8 A100s of 7 MIG devices each, as nvidia.com/gpu 56."""
    labels = one["metadata"]["labels"]
    labels.update({"nvidia.com/mig.strategy": "single",
                   "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
                   "nvidia.com/gpu.count": "56", "nvidia.com/gpu.memory": "5120"})
    for part in ("capacity", "allocatable"):
        one["status"][part]["nvidia.com/gpu"] = "56"


def _mig_label(one: dict[str, Any]) -> None:
    _mig_single(one)
    one["metadata"]["labels"]["node-role.kubernetes.io/mig-enabled"] = "true"


def _plugin(nodes: list[dict[str, Any]], *more: tuple[Any, dict[str, Any]],
            **kwargs: Any) -> dict[str, Any]:
    return {"nodes": nodes, "objects": [*device_plugin_objects(nodes), *more], **kwargs}


def shapes() -> list[Shape]:
    """One shape per class (and per flavour where it differs)."""
    nodes = multi_node()
    beta = copy.deepcopy(K3S_LOCAL_PATH)
    del beta["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"]
    beta["metadata"]["annotations"]["storageclass.beta.kubernetes.io/is-default-class"] = "true"
    other_name = [(RUNTIMECLASSES, {**rc, "metadata": {**rc["metadata"], "name": "nvidia-cr"}})
                  for rc in gpu_operator_runtime_classes() if rc["handler"] == "nvidia"]
    taken = {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "grafana", "namespace": "monitoring"},
             "spec": {"type": "NodePort", "ports": [{"port": 443, "nodePort": 31443}]}}
    gpu_operator = [(RUNTIMECLASSES, rc) for rc in gpu_operator_runtime_classes()]
    return [
        Shape("device-plugin-no-runtime-class", "the device plugin alone (EKS, GKE, AKS "
              "without the GPU Operator): no RuntimeClass; KAI installed without one",
              **_plugin(nodes)),
        Shape("runtime-class-other-name", "a RuntimeClass with handler nvidia under another "
              "name: KAI sets that one", **_plugin(nodes, *other_name)),
        Shape("k3s", "k3s: its packaged RuntimeClass nvidia and local-path default class",
              **_plugin(nodes, *k3s_runtime_classes())),
        Shape("beta-default-class", "the default StorageClass marked only with the beta "
              "annotation", **_plugin(nodes, *k3s_runtime_classes()), storage_classes=[beta]),
        Shape("mig-mixed", "every GPU node in MIG strategy mixed: KAI refuses fraction pods",
              **_plugin(_edit(nodes, GPU_NODES, _mig_mixed), *gpu_operator),
              refused="no GPU node takes GPU-fraction pods"),
        Shape("mig-single", "MIG strategy single without KAI's MIG label: whole GPUs to KAI",
              **_plugin(_edit(nodes, GPU_NODES, _mig_single), *gpu_operator)),
        Shape("mig-single-labelled", "MIG strategy single with node-role.kubernetes.io/"
              "mig-enabled=true: KAI puts only whole-GPU pods there",
              **_plugin(_edit(nodes, GPU_NODES, _mig_label), *gpu_operator),
              refused="no GPU node takes GPU-fraction pods"),
        Shape("all-cordoned", "every GPU node cordoned",
              **_plugin(_edit(nodes, GPU_NODES, _cordon), *gpu_operator),
              refused="no GPU node takes GPU-fraction pods"),
        Shape("all-not-ready", "every GPU node NotReady",
              **_plugin(_edit(nodes, GPU_NODES, _not_ready), *gpu_operator),
              refused="no GPU node takes GPU-fraction pods"),
        Shape("one-not-ready", "one GPU node of three NotReady: KAI uses the others",
              **_plugin(_edit(nodes, ("gpu-2",), _not_ready), *gpu_operator)),
        Shape("gpu-taint", "GPU nodes tainted nvidia.com/gpu=present:NoSchedule (GKE)",
              **_plugin(_edit(nodes, GPU_NODES, _taint), *gpu_operator)),
        Shape("gpu-taint-no-execute", "GPU nodes tainted NoExecute: KAI's reservation pods, "
              "put there by name without tolerations, would be evicted",
              **_plugin(_edit(nodes, GPU_NODES, _taint_no_execute), *gpu_operator),
              refused="no GPU node takes GPU-fraction pods (gpu-1, gpu-2, gpu-3: taint "
                      "nvidia.com/gpu=present:NoExecute evicts"),
        Shape("node-port-taken", "NodePort 31443 held by a Service of another namespace",
              **_plugin(nodes, *gpu_operator, (SERVICES, taken)),
              refused="NodePort 31443 (the API of team team-nlp's vCluster) is held by "
                      "Service monitoring/grafana"),
        Shape("no-gpu", "no node advertises nvidia.com/gpu",
              nodes=[node(*row) for row in NO_GPU],
              refused="no node advertises nvidia.com/gpu"),
        Shape("runtime-classes-forbidden", "RuntimeClasses cannot be read (403)",
              **_plugin(nodes), forbidden=(r"/apis/node\.k8s\.io/v1/runtimeclasses$",),
              refused="whether RuntimeClass nvidia exists is unknown, because"),
        Shape("kai-without-its-runtime-class", "KAI installed, its RuntimeClass nvidia absent",
              **_plugin(nodes), kai=True,
              refused="KAI Scheduler in kai-scheduler sets RuntimeClass nvidia"),
    ]


SHAPES = {s.name: s for s in shapes()}
