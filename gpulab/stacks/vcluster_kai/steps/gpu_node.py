"""A team's vCluster lists the pool's GPU nodes with their GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.steps.fake_gpus import FAKE_GPUS_STEP

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile


@dataclass
class TeamGpuNode:
    """The team's vCluster lists the pool's GPU nodes with their GPUs (host nodes synced in)."""

    profile: VclusterKaiProfile
    lab: str
    team: TeamSpec
    timeout: float = 180
    # the lab's GPU nodes, each with the GPUs it advertises on the host (kind: the pool's nodes
    # with gpu_pool.count each; existing: nodes differ, one with 8 GPUs is listed with 8, not
    # with the least count of them all)
    counts: dict[str, int] | None = None
    after: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.team.name}/gpu-node"

    def _counts(self) -> dict[str, int]:
        return dict(self.counts or {})

    @property
    def title(self) -> str:
        return f"Waiting for {self.team.name} to see the GPU node"

    @property
    def requires(self) -> tuple[str, ...]:
        return self.after if self.after is not None else (f"{self.team.name}/vcluster",
                                                          FAKE_GPUS_STEP)

    def describe(self) -> list[Artifact]:
        counts = self._counts()
        if len(set(counts.values())) <= 1:  # one count for all (the kind pool)
            return [Artifact("wait", f"GPU nodes in {self.team.name}", {
                "nodes": list(counts),
                "allocatable": {kr.GPU_RESOURCE: str(next(iter(counts.values()), 0))},
            }, cluster=self.team.name)]
        return [Artifact("wait", f"GPU nodes in {self.team.name}", {
            "nodes": list(counts),
            "allocatable": {n: {kr.GPU_RESOURCE: str(c)} for n, c in counts.items()},
        }, cluster=self.team.name)]

    def _seen(self, kube: KubeGateway) -> tuple[bool, str]:
        nodes = {n["metadata"]["name"]: n for n in kube.list_objects("v1", "Node")}
        counts = self._counts()
        for wanted, count in counts.items():
            node = nodes.get(wanted)
            if node is None:
                return False, f"{wanted} not among {len(nodes)} node(s) listed"
            alloc = ((node.get("status") or {}).get("allocatable") or {}).get(kr.GPU_RESOURCE)
            if str(alloc) != str(count):
                return False, (f"{wanted} listed with {kr.GPU_RESOURCE} {alloc or 0}, the host "
                               f"advertises {count}")
        if len(set(counts.values())) <= 1:
            return True, (f"GPU node(s) listed with {next(iter(counts.values()), 0)} GPU(s) "
                          "each")
        return True, "GPU nodes listed with their GPUs (" + ", ".join(
            f"{n}: {c}" for n, c in counts.items()) + ")"

    def _kube(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.team.name))

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, seen = self._seen(self._kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, seen)
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._kube(ctx)
        wait_until(ctx, self.name, "the vCluster to list the GPU node",
                   lambda: self._seen(kube), timeout=self.timeout, interval=3)
