"""fake-gpu-operator: the pool's fake GPUs, and when they are advertised.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab.errors import AdapterError, GpulabError
from gpulab.stacks.common import HelmAddon, deployment_available, management_kube
from gpulab.stacks.vcluster_kai import render as kr

if TYPE_CHECKING:
    from gpulab.adapters import base
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile


FAKE_GPUS_STEP = "management/fake-gpus"


# fake-gpu-operator v0.0.74 on a slow link (issue #20 6a). Its chart pulls every image with
# `pullPolicy: Always` (deploy/fake-gpu-operator/values.yaml:12,27,42,57), all on the pool's
# worker(s); its device plugin (DaemonSet on `nvidia.com/gpu.deploy.device-plugin=true` nodes,
# templates/device-plugin/daemonset.yml:16-17) exits at start while ConfigMap
# `topology-<node>` is missing (cmd/device-plugin/main.go:36-40; the name:
# internal/common/topology/kubernetes.go:144-146 with TOPOLOGY_CM_NAME=topology,
# templates/device-plugin/_helpers.tpl:38-41), and only the status-updater writes that ConfigMap,
# when it sees a pool node (internal/status-updater/controllers/node/controller.go:52-75,167-170;
# handlers/node/handler.go:35-41; handlers/node/topology_cm.go:11-41). So the device plugin
# crash-loops until the status-updater's image is pulled and it runs, and the kubelet then
# restarts it only after its back-off: helm's --wait (the DaemonSet is one of its resources) can
# run out on a lab that is merely slow. The timeout is long, the vClusters wait for this step
# (their images would otherwise queue on the same worker), and a timeout says what each pod waits
# for and that `gpulab up` resumes here.
FAKE_GPUS_TIMEOUT = 900.0
TOPOLOGY_CONFIGMAP = "topology"  # TOPOLOGY_CM_NAME in the chart; per node: topology-<node>


def _pod_waits(pod: dict[str, Any]) -> str:
    """Why a pod is not ready yet ('' when it is): its containers' waiting reasons, else its
    phase (`ContainerCreating`, `ErrImagePull`, `ImagePullBackOff`, `CrashLoopBackOff`, …)."""
    status = pod.get("status") or {}
    containers = [*(status.get("initContainerStatuses") or []),
                  *(status.get("containerStatuses") or [])]
    reasons: list[str] = []
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting is not None:
            reasons.append(str(waiting.get("reason") or "waiting"))
        elif not container.get("ready") and "running" not in (container.get("state") or {}):
            reasons.append("not running")
    if not containers and status.get("phase") != "Running":
        reasons.append(str(status.get("phase") or "Pending"))
    return ", ".join(dict.fromkeys(reasons))


def _fake_gpu_pods(kube: KubeGateway, *, namespace: str, nodes: list[str]) -> str:
    """What fake-gpu-operator's pods wait for, and each pool node's missing topology ConfigMap;
    '' when nothing waits, or when it has no pod at all (nothing is on its way)."""
    pods = kube.list_objects("v1", "Pod", namespace)
    waits = [f"pod {pod['metadata']['name']} {why}" for pod in pods if (why := _pod_waits(pod))]
    for node in nodes if pods else []:
        name = f"{TOPOLOGY_CONFIGMAP}-{node}"
        if kube.get("v1", "ConfigMap", name, namespace) is None:
            waits.append(f"ConfigMap {name} not written by the status-updater yet (the device "
                         f"plugin exits until it exists)")
    return "; ".join(waits)


def _fake_gpus_ready(
    kube: KubeGateway, *, namespace: str, nodes: list[str], count: int
) -> tuple[bool, str]:
    """fake-gpu-operator's deployments available, RuntimeClass `nvidia` present (KAI injects it
    into fraction pods) and every pool node advertising its GPUs as allocatable; when not, what
    its pods wait for."""
    ok, seen = _fake_gpus_advertised(kube, namespace=namespace, nodes=nodes, count=count)
    if not ok:
        waits = _fake_gpu_pods(kube, namespace=namespace, nodes=nodes)
        return False, f"{seen} ({waits})" if waits else seen
    return ok, seen


def _fake_gpus_advertised(
    kube: KubeGateway, *, namespace: str, nodes: list[str], count: int
) -> tuple[bool, str]:
    for dep in kube.list_objects("apps/v1", "Deployment", namespace):
        ok, seen = deployment_available(kube, dep["metadata"]["name"], namespace)
        if not ok:
            return ok, seen
    if kube.get("node.k8s.io/v1", "RuntimeClass", "nvidia") is None:
        return False, "RuntimeClass nvidia not created yet"
    for node in nodes:
        live = kube.get("v1", "Node", node)
        if live is None:
            return False, f"node {node} not found"
        have = str(((live.get("status") or {}).get("allocatable") or {}).get(kr.GPU_RESOURCE, "0"))
        if have != str(count):
            return False, f"{node} advertises {kr.GPU_RESOURCE} {have}, the pool has {count}"
    return True, f"{len(nodes)} node(s) advertise {count} x {kr.GPU_RESOURCE}"


@dataclass
class FakeGpus(HelmAddon):
    """fake-gpu-operator until every pool node advertises its GPUs (see FAKE_GPUS_TIMEOUT): a
    wait that runs out is reported with what the pods wait for, as resumable."""

    nodes: tuple[str, ...] = ()
    timeout: float = FAKE_GPUS_TIMEOUT

    def apply(self, ctx: StepContext) -> None:
        try:
            super().apply(ctx)
        except GpulabError as err:
            try:
                waits = _fake_gpu_pods(management_kube(ctx), namespace=self.release.namespace,
                                       nodes=list(self.nodes))
            except GpulabError:
                waits = ""
            if not waits:  # nothing is on its way: not a slow link, the error as it is
                raise
            seconds = self.timeout * ctx.timeout_scale
            raise AdapterError(
                f"fake-gpu-operator does not advertise the GPUs yet ({waits}): {err}",
                hint=f"helm and gpulab wait up to {seconds:.0f}s each; on a slow link its images "
                     f"may still be pulling: run `gpulab up` again, it resumes at this step "
                     f"(the vClusters and KAI wait for it)",
            ) from err


def _fake_gpus(profile: VclusterKaiProfile, release: base.HelmRelease, nodes: list[str],
               where: str, whose: str, *, requires: tuple[str, ...]) -> FakeGpus:
    """fake-gpu-operator's `release`, ready once `nodes` advertise the pool's GPUs."""
    return FakeGpus(
        release,
        name=FAKE_GPUS_STEP,
        title=f"Installing fake-gpu-operator ({profile.gpu_pool.model} x"
              f"{profile.gpu_pool.count} {where})",
        requires=requires,
        ready=partial(_fake_gpus_ready, namespace=profile.components.fake_gpu_operator.namespace,
                      nodes=nodes, count=profile.gpu_pool.count),
        ready_what=f"fake GPUs advertised on {whose}",
        nodes=tuple(nodes),
    )
