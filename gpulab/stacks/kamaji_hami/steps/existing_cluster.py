"""kamaji-hami in a cluster gpulab did not make: what it reads and refuses is
`gpulab.stacks.kamaji_hami.existing`'s; the steps are here, with the kind lab's they reuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.errors import AdapterError, HostError
from gpulab.stacks.common import HelmAddon, adapters_of
from gpulab.stacks.kamaji_hami import existing
from gpulab.stacks.kamaji_hami.steps.calico import Calico
from gpulab.stacks.kamaji_hami.steps.control_plane import TenantControlPlane
from gpulab.stacks.kamaji_hami.steps.kube_proxy import tenant_server
from gpulab.stacks.kamaji_hami.steps.workers import TenantWorkers

if TYPE_CHECKING:
    from gpulab.adapters import base
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class ExistingControlPlane(TenantControlPlane):
    """A tenant's control plane on an existing cluster (existing.existing_control_plane): its
    namespace is the lab's (management/namespaces), and `down` waits for it to be gone before
    anything older goes (`removal_wait`, read by providers.existing.owned_entries)."""

    lab: str = ""
    containers: bool = False  # cluster.workers: containers (kindest/node workers here)
    removal_wait: float = existing.TCP_GONE_SECONDS

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/kamaji", "management/metallb", "management/namespaces")

    def describe(self) -> list[Artifact]:
        tcp = existing.existing_control_plane(self.profile, self.tenant, self.lab,
                                              containers=self.containers)
        return [
            Artifact("object", f"TenantControlPlane/{self.tenant.name}", tcp),
            Artifact("file", f"{self.tenant.name}.kubeconfig",
                     {"from": f"secret {self.namespace}/{self.tenant.name}-admin-kubeconfig "
                              "key admin.conf", "mode": "0600"}),
            Artifact("file", f"nodes/{self.tenant.name}.kubeconfig",
                     {"from": f"secret {self.namespace}/{self.tenant.name}-admin-kubeconfig "
                              "key admin.conf", "mode": "0600"}),
        ]


@dataclass
class TenantCalico(Calico):
    """Calico in the tenant, applied without waiting: its pods start on each worker that joins
    (`gpulab join`). It goes with the tenant: Kamaji removes the tenant's data when its
    TenantControlPlane is deleted."""

    @property
    def title(self) -> str:
        return f"Applying Calico in {self.tenant.name} (it runs once workers join)"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/control-plane",)

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            return self._tenant(ctx).get("apps/v1", "DaemonSet", "calico-node",
                                         "kube-system") is not None
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        for obj in self.objects(adapters_of(ctx).fetch(self.profile.components.calico.url)):
            kube.apply(obj)


@dataclass
class ReachControlPlane:
    """`cluster.workers: containers`: this host reaches the tenant's control plane at the
    address its kubeconfig names, and Konnectivity's port beside it; the kindest/node workers
    reach what the host reaches (Docker's bridge NATs them out). Checks only."""

    profile: KamajiHamiProfile
    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/reach"

    @property
    def title(self) -> str:
        return f"Checking this host reaches {self.tenant.name}'s control plane"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/control-plane",)

    def describe(self) -> list[Artifact]:
        return [Artifact("check", f"{self.tenant.name} API and Konnectivity", {
            "from": "this host", "ports": [self.tenant.control_plane.port,
                                           self.tenant.control_plane.konnectivity_port]})]

    def _unreached(self, ctx: StepContext) -> list[str]:
        from urllib.parse import urlsplit

        server = tenant_server(adapters_of(ctx).tenant_kubeconfig(self.tenant.name))
        host = urlsplit(server).hostname or ""
        port = urlsplit(server).port or self.tenant.control_plane.port
        return [f"{host}:{p}" for p in (port, self.tenant.control_plane.konnectivity_port)
                if not existing.reaches(host, p)]

    def satisfied(self, ctx: StepContext) -> bool:
        return False  # asked each time: cheap, and what changes is the network

    def apply(self, ctx: StepContext) -> None:
        missing = self._unreached(ctx)
        if missing:
            raise HostError(f"this host does not reach {self.tenant.name}'s control plane at "
                            f"{', '.join(missing)}: its kindest/node workers could not join",
                            hint="use cluster.workers: machines and gpulab join, or open the "
                                 "route from this host to the LoadBalancer's addresses")
        ctx.note(f"{self.tenant.name}'s control plane answers from this host")


@dataclass
class ContainerWorkers(TenantWorkers):
    """The kind lab's worker containers, on Docker's default bridge (an existing cluster has
    no kind network here), each recorded in lab.json (its `container` artifact) so `down`
    removes it first."""

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/reach",)

    def specs(self) -> list[base.ContainerSpec]:
        from dataclasses import replace

        return [replace(s, network="bridge") for s in super().specs()]


@dataclass
class ExistingKamaji(HelmAddon):
    """Kamaji's release on an existing cluster, with the DataStore it brings described after
    it (existing.kamaji_datastore): `down` deletes that first, while Kamaji still runs."""

    def describe(self) -> list[Artifact]:
        store = existing.kamaji_datastore(self.release)
        return [*super().describe(), *([store] if store else [])]
