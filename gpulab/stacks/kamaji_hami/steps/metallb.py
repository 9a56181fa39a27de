"""MetalLB and its address pool: the control planes' LoadBalancer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import (
    adapters_of,
    daemonset_ready,
    deployment_available,
    management_kube,
    manifest_objects,
)
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.netcalc import AddressRange
    from gpulab.providers.base import AddressRanges
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile


@dataclass
class MetalLB:
    """MetalLB (native L2 manifest) and an IPv4 pool: the LoadBalancer addresses the cluster's
    provider gives for `cluster_needs`' AddressNeed (kind: from its Docker network)."""

    profile: KamajiHamiProfile
    addresses: AddressRanges
    name: str = "management/metallb"
    title: str = "Installing MetalLB with the kind network's IPv4 pool"
    requires: tuple[str, ...] = ("management/images",)
    timeout: float = 240

    def describe(self) -> list[Artifact]:
        metallb = self.profile.components.metallb
        pool = self.addresses.planned()
        pending = self.addresses.pending
        pool_note = str(pool) if pool else (f"pending ({pending})" if pending else "pending")
        arts = [
            Artifact(
                "manifest",
                f"metallb-{metallb.version}",
                {"url": metallb.url, "apply": "server-side", "pool": pool_note},
            )
        ]
        for obj in render.metallb_objects(self.profile, pool):
            arts.append(Artifact("object", f"{obj['kind']}/{obj['metadata']['name']}", obj))
        return arts

    def _pool(self, ctx: StepContext) -> AddressRange:
        return self.addresses.resolve(adapters_of(ctx))

    @staticmethod
    def _running(kube: KubeGateway) -> tuple[bool, str]:
        """Both halves of MetalLB (v0.16.1 metallb-native.yaml): the `controller` Deployment
        assigns addresses, the `speaker` DaemonSet (hostNetwork) announces them over L2; a
        LoadBalancer IP is unreachable until the speaker runs."""
        ok, seen = deployment_available(kube, "controller", "metallb-system")
        if not ok:
            return ok, seen
        return daemonset_ready(kube, "speaker", "metallb-system")

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        try:
            pool = self._pool(ctx)
            ok, _ = self._running(kube)
            live = kube.get(
                "metallb.io/v1beta1", "IPAddressPool",
                self.profile.components.metallb.pool_name, "metallb-system",
            )
        except AdapterError:
            return False
        return ok and live is not None and (live.get("spec") or {}).get("addresses") == [str(pool)]

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        kube = management_kube(ctx)
        pool = self._pool(ctx)
        ctx.note(f"MetalLB pool {pool} (IPv4 subnet {pool.subnet})")
        for obj in manifest_objects(adapters.fetch(self.profile.components.metallb.url)):
            kube.apply(obj)
        wait_until(ctx, self.name, "MetalLB controller and speaker",
                   lambda: self._running(kube), timeout=self.timeout)
        objects = render.metallb_objects(self.profile, pool)

        def apply_pool() -> tuple[bool, str]:
            # The pool webhook refuses connections for a while after the pod is Ready.
            for obj in objects:
                kube.apply(obj)
            return True, f"pool {pool} accepted"

        wait_until(ctx, self.name, "MetalLB to accept the address pool", apply_pool,
                   timeout=self.timeout, interval=3)
        self.addresses.keep(pool)  # kind: the next lab on this host steps below it
