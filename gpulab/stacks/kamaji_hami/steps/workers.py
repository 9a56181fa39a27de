"""A tenant's kindest/node worker containers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.errors import AdapterError, HostError
from gpulab.stacks.common import (
    NODE_READY_LOG,
    NODE_READY_TIMEOUT,
    NodeHostOptions,
    adapters_of,
    node_host_options,
    with_host_options,
)
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters import base
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class TenantWorkers:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/workers"

    @property
    def title(self) -> str:
        return f"Starting worker containers of {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/cluster",)

    def specs(self) -> list[base.ContainerSpec]:
        return [render.worker_container(self.profile, self.lab, self.tenant, i)
                for i in range(self.tenant.workers.count)]

    def describe(self) -> list[Artifact]:
        return [Artifact("container", s.name, s.to_dict()) for s in self.specs()]

    def satisfied(self, ctx: StepContext) -> bool:
        runtime = adapters_of(ctx).runtime
        for spec in self.specs():
            info = runtime.get(spec.name)
            if info is None or not info.running:
                return False
        return True

    def apply(self, ctx: StepContext) -> None:
        runtime = adapters_of(ctx).runtime
        for spec in self.specs():
            info = runtime.get(spec.name)
            if info is not None and info.running:
                continue
            if info is not None:  # stopped or half-created: kind nodes cannot be restarted
                runtime.remove(spec.name)
            if not runtime.image_present(spec.image):
                ctx.note(f"docker pull {spec.image}")
                try:
                    runtime.pull(spec.image)
                except AdapterError as err:
                    raise HostError(f"cannot pull worker image {spec.image}: {err}",
                                    hint="check the internet connection, or docker pull it "
                                         "yourself and re-run gpulab up") from None
            node = with_host_options(spec, self._host_options(ctx))
            ctx.note(f"docker run {node.name} ({node.image})")
            runtime.run_node(node)
            # As kind does before its first exec: wait for systemd (cgroup v2) or the entrypoint's
            # cgroup v1 line; a node that never gets there is removed so a re-run starts afresh.
            if not runtime.wait_for_log(node.name, NODE_READY_LOG, NODE_READY_TIMEOUT):
                runtime.remove(node.name)
                raise AdapterError(
                    f"worker {node.name} did not reach systemd's multi-user target within "
                    f"{NODE_READY_TIMEOUT:.0f}s (removed it)",
                    hint="docker logs of a kindest/node show why; see gpulab doctor (privileged "
                         "containers, cgroups), then re-run gpulab up")

    def _host_options(self, ctx: StepContext) -> NodeHostOptions:
        """kind's host-dependent options: /dev/mapper, --userns=host, /dev/fuse, proxies (with
        NO_PROXY covering the tenant's CIDRs, the kind network and the workers)."""
        import os

        from gpulab.netcalc import ipv4_subnets

        runtime = adapters_of(ctx).runtime
        network = runtime.network(self.profile.management.network)
        subnets = [str(s) for s in ipv4_subnets(network.ipam_config if network else [])]
        no_proxy = [self.tenant.pod_cidr, self.tenant.service_cidr, *subnets,
                    *(s.name for s in self.specs())]
        return node_host_options(runtime.info(), os.environ, no_proxy)
