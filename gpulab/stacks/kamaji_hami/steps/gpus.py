"""Mock GPUs: each worker advertises the cards the profile gives it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class MockGpus:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 180

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/gpus"

    @property
    def title(self) -> str:
        return f"Describing mock GPUs on {self.tenant.name}'s workers"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/hami",)

    def nodes(self) -> list[tuple[str, int]]:
        return [(render.worker_name(self.lab, self.tenant.name, i), i)
                for i in range(self.tenant.workers.count)]

    def describe(self) -> list[Artifact]:
        return [
            Artifact("node-patch", node, {
                "annotations": {
                    render.GPU_REGISTER_ANNOTATION: render.gpu_register_annotation(self.tenant, i)
                },
                "statusPatch": render.gpu_capacity_patch(self.tenant),
                "expectAllocatable": {k: str(v) for k, v in
                                      render.gpu_capacity(self.tenant).items()},
            }, cluster=self.tenant.name)
            for node, i in self.nodes()
        ]

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _advertised(self, kube: KubeGateway) -> tuple[bool, str]:
        want = {k: str(v) for k, v in render.gpu_capacity(self.tenant).items()}
        for node, _ in self.nodes():
            live = kube.get("v1", "Node", node)
            if live is None:
                return False, f"node {node} not found"
            alloc = (live.get("status") or {}).get("allocatable") or {}
            got = {k: str(alloc.get(k, "0")) for k in want}
            if got != want:
                return False, f"{node} allocatable {json.dumps(got, sort_keys=True)}"
        return True, "allocatable matches the profile on every worker"

    def satisfied(self, ctx: StepContext) -> bool:
        if not self.tenant.gpus:
            return True
        try:
            kube = self._tenant(ctx)
            for node, i in self.nodes():
                live = kube.get("v1", "Node", node) or {}
                annotations = (live.get("metadata") or {}).get("annotations") or {}
                wanted = render.gpu_register_annotation(self.tenant, i)
                if annotations.get(render.GPU_REGISTER_ANNOTATION) != wanted:
                    return False
            ok, _ = self._advertised(kube)
        except AdapterError:
            return False
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        for node, i in self.nodes():
            # Capacity first: the mock plugin reports zero until nvidia.com/gpu capacity > 0.
            kube.patch_node_status(node, render.gpu_capacity_patch(self.tenant))
            kube.annotate("v1", "Node", node, {
                render.GPU_REGISTER_ANNOTATION: render.gpu_register_annotation(self.tenant, i)
            })
        wait_until(ctx, self.name, "mock GPUs advertised", lambda: self._advertised(kube),
                   timeout=self.timeout, interval=5)
