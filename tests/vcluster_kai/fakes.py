"""In-memory fakes for the vcluster-kai `up`, built on tests/fakes.py's world.

They react like the real components, instantly: kind creates the nodes of its config (labels
included); the fake-gpu-operator release makes its deployments available, creates RuntimeClass
`nvidia` and advertises the topology's GPUs on pool nodes; the KAI release brings its CRDs and,
like KAI's operator, the six operand deployments (switchable: `kai_operands`); a vCluster release
writes secret `vc-<name>` and answers with an API that lists the host's nodes (nodes sync).
With `slow_link`, helm's wait for fake-gpu-operator runs out while its pods still pull and
crash-loop.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpulab.adapters import base
from gpulab.adapters.base import ContainerInfo
from gpulab.errors import AdapterError
from gpulab.stacks.common import LabAdapters
from gpulab.stacks.vcluster_kai import render as kr
from tests.fakes import FakeHelm, FakeKind, FakeKube, FakeRuntime, FakeWorld, _cluster_of

CONTROL_PLANE_IP = "172.18.0.2"


class KaiKube(FakeKube):
    """FakeKube whose Node list, for a vCluster, is the host's (sync.fromHost.nodes)."""

    def __init__(self, world: KaiWorld, cluster: str) -> None:
        super().__init__(world, cluster)
        self.kai_world = world

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None,
                     label_selector: str | None = None) -> list[dict[str, Any]]:
        if kind == "Node" and self.cluster in self.kai_world.vclusters:
            if not self.kai_world.sync_nodes:
                return []
            return self.kai_world.kube("management").list_objects(api_version, kind)
        return super().list_objects(api_version, kind, namespace, label_selector)


@dataclass
class KaiWorld(FakeWorld):
    kai_operands: bool = True  # KAI's operator creates its deployments
    advertise_gpus: bool = True  # fake-gpu-operator's device plugin advertises the GPUs
    sync_nodes: bool = True  # vClusters list the host's nodes
    # fake-gpu-operator's images still pulling on the pool's worker when helm's --wait runs out:
    # its install fails with the pods waiting, as on a slow link (issue #20 6a)
    slow_link: bool = False

    def __post_init__(self) -> None:
        self.vclusters: dict[str, dict[str, Any]] = {}  # name -> release values
        self.helm_timeouts: dict[str, int] = {}  # release -> helm's --timeout, in seconds

    def kube(self, cluster: str) -> FakeKube:
        with self.lock:
            if cluster not in self.kubes:
                self.kubes[cluster] = KaiKube(self, cluster)
            return self.kubes[cluster]


class KaiKind(FakeKind):
    def create(self, name: str, config: dict[str, Any], *, wait_seconds: int = 120) -> None:
        super().create(name, config, wait_seconds=wait_seconds)
        host = self.world.kube("management")
        workers = 0
        for node in config["nodes"]:
            if node["role"] == "control-plane":
                node_name = f"{name}-control-plane"
            else:
                workers += 1
                node_name = f"{name}-worker{workers if workers > 1 else ''}"
            host.put({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": node_name, "labels": dict(node.get("labels") or {})},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                 "capacity": {}, "allocatable": {"cpu": "8"}}})
        self.world.containers[f"{name}-control-plane"] = ContainerInfo(
            f"{name}-control-plane", f"{name}-control-plane", config["nodes"][0]["image"],
            "running", {"io.x-k8s.kind.cluster": name, "io.x-k8s.kind.role": "control-plane"},
            {"kind": CONTROL_PLANE_IP})


def _deployment(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1}, "status": {"availableReplicas": 1}}


def _crd(name: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}}


def _fake_gpu_pods(kube: FakeKube, release: base.HelmRelease, *, ready: bool) -> None:
    """fake-gpu-operator's status-updater and device-plugin pods: still pulling and
    crash-looping (its topology ConfigMap not written yet), or running with the ConfigMap."""
    namespace = release.namespace
    pods = {"status-updater-7c9f8d-x2k4q": "ContainerCreating",
            "device-plugin-5hq2m": "CrashLoopBackOff"}
    for name, waiting in pods.items():
        state: dict[str, Any] = {"running": {}} if ready else {"waiting": {"reason": waiting}}
        kube.put({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": namespace},
                  "status": {"phase": "Running" if ready else "Pending", "containerStatuses": [
                      {"name": name.split("-")[0], "ready": ready, "state": state}]}})
    if ready:
        key = release.values["topology"]["nodePoolLabelKey"]
        for node in kube.list_objects("v1", "Node"):
            if key in (node["metadata"].get("labels") or {}):
                kube.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                    "name": f"topology-{node['metadata']['name']}", "namespace": namespace}})


class KaiHelm(FakeHelm):
    world: KaiWorld

    def install(self, release: base.HelmRelease, *, timeout_seconds: int = 600) -> None:
        self.world.helm_timeouts[release.name] = timeout_seconds
        kube = self.world.kube(self.cluster)
        fake_gpus = release.chart.endswith("/fake-gpu-operator")
        if fake_gpus and self.world.slow_link:
            self.world.faults.hit(f"helm.install:{release.name}:{self.cluster}")
            _fake_gpu_pods(kube, release, ready=False)
            raise AdapterError(  # helm marks the release failed: `installed` stays False
                f"helm upgrade --install {release.name} ({release.chart} {release.version}) in "
                f"namespace {release.namespace} failed: Error: UPGRADE FAILED: context deadline "
                f"exceeded")
        super().install(release, timeout_seconds=timeout_seconds)
        if fake_gpus:
            _fake_gpu_pods(kube, release, ready=True)
            for name in ("status-updater", "topology-server"):
                kube.put(_deployment(name, release.namespace))
            kube.put({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                      "metadata": {"name": "nvidia"}, "handler": "runc"})
            if self.world.advertise_gpus:
                key = release.values["topology"]["nodePoolLabelKey"]
                for pool, spec in release.values["topology"]["nodePools"].items():
                    for node in kube.list_objects("v1", "Node"):
                        if (node["metadata"].get("labels") or {}).get(key) == pool:
                            live = kube.objects[FakeKube.key(node)]
                            live["status"]["allocatable"][kr.GPU_RESOURCE] = str(
                                spec["gpuCount"])
        elif release.chart.endswith("/kai-scheduler"):
            kube.put(_crd("queues.scheduling.run.ai"))
            kube.put(_crd("podgroups.scheduling.run.ai"))
            kube.put(_deployment("kai-operator", release.namespace))
            if self.world.kai_operands:
                for name in kr.KAI_DEPLOYMENTS:
                    kube.put(_deployment(name, release.namespace))
            reservation = release.values["global"]["resourceReservation"]["namespace"]
            kube.put({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": reservation}})
        elif release.chart == "vcluster":
            server = release.values["exportKubeConfig"]["server"]
            config = {"apiVersion": "v1", "kind": "Config",
                      "clusters": [{"name": "vcluster", "cluster": {"server": server}}],
                      "users": [{"name": "admin", "user": {"client-key-data": "SECRET"}}],
                      "contexts": [{"name": "vc", "context": {"cluster": "vcluster",
                                                              "user": "admin"}}],
                      "current-context": "vc"}
            kube.secrets[(release.namespace, f"vc-{release.name}")] = {
                "config": yaml.safe_dump(config).encode()}
            self.world.vclusters[release.name] = copy.deepcopy(release.values)
            self.world.kube(release.name)


def kai_adapters(world: KaiWorld, lab_dir: Path) -> LabAdapters:
    lab_dir.mkdir(parents=True, exist_ok=True)
    return LabAdapters(
        runtime=FakeRuntime(world),
        kind=KaiKind(world),
        kube=lambda path: world.kube(_cluster_of(path)),
        helm=lambda path: KaiHelm(world, path),
        fetch=lambda url: "",
        lab_dir=lab_dir,
    )
