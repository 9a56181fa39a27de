"""A tenant's hosted control plane (Kamaji TenantControlPlane) and its kubeconfigs: the one
this host uses (its server where the provider publishes the API, `api_route`) and the one the
tenant's worker containers use (Kamaji's admin.conf as is: the LoadBalancer address on the kind
network).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.paths import write_secret
from gpulab.stacks.common import adapters_of, management_kube
from gpulab.stacks.kamaji_hami import api_route, render

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway, LabAdapters
    from gpulab.engine.step import StepContext
    from gpulab.providers.base import PortNeed
    from gpulab.reach import Dial
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


def node_kubeconfig(adapters: LabAdapters, tenant: str) -> Path:
    """The tenant's admin kubeconfig as Kamaji wrote it, for the worker containers: its server
    is the control plane's address on the cluster's network (not `<tenant>.kubeconfig`, whose
    server is where this host reaches it)."""
    return adapters.lab_dir / "nodes" / f"{tenant}.kubeconfig"


@dataclass
class TenantControlPlane:
    """`api`: the tenant's API port need and `url` where this host reaches it (the provider's
    answer); both None: the host uses Kamaji's address as the workers do."""

    profile: KamajiHamiProfile
    tenant: TenantSpec
    timeout: float = 600
    api: PortNeed | None = None
    url: str | None = None
    node: str = ""  # the management node that publishes `api` (route_fix names it)

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/control-plane"

    @property
    def title(self) -> str:
        return f"Creating control plane of {self.tenant.name} (Kamaji)"

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/kamaji", "management/metallb")

    @property
    def namespace(self) -> str:
        return self.profile.components.kamaji.tenant_namespace

    def describe(self) -> list[Artifact]:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        published = self.api is not None and self.url is not None
        tcp = render.tenant_control_plane(self.profile, self.tenant,
                                          self.api.address if published and self.api else None)
        source = (f"secret {self.namespace}/{self.tenant.name}-admin-kubeconfig key "
                  "admin.conf")
        service = [Artifact("object", f"Service/{api_route.service_name(self.tenant)}",
                            api_route.tenant_api_service(self.profile, self.tenant))
                   ] if published else []
        return [
            Artifact("object", f"Namespace/{self.namespace}", ns),
            *service,  # before the TCP: its NodePort is taken before any LoadBalancer's
            Artifact("object", f"TenantControlPlane/{self.tenant.name}", tcp),
            Artifact("file", f"{self.tenant.name}.kubeconfig",
                     {"from": source, "mode": "0600",
                      "server": self.url if published else "as Kamaji wrote it"}),
            Artifact("file", f"nodes/{self.tenant.name}.kubeconfig",
                     {"from": source, "mode": "0600",
                      "server": "as Kamaji wrote it (for the worker containers)"}),
        ]

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        tcp = kube.get("kamaji.clastix.io/v1alpha1", "TenantControlPlane",
                       self.tenant.name, self.namespace)
        if tcp is None:
            return False, "TenantControlPlane not found"
        status = tcp.get("status") or {}
        version = ((status.get("kubernetesResources") or {}).get("version") or {})
        state = version.get("status", "Unknown")
        endpoint = status.get("controlPlaneEndpoint", "")
        return state == "Ready", f"status {state}" + (f", endpoint {endpoint}" if endpoint else "")

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        ok, seen = self._ready(kube)
        ctx.observe(self.name, seen)
        if not ok:
            return False
        self._save_kubeconfig(ctx, kube)
        return True

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        objects = [art.body for art in self.describe() if art.kind == "object"]

        def submit() -> tuple[bool, str]:
            # Kamaji's validating webhook may refuse connections for a moment after its pod is
            # Ready (its certificate comes from cert-manager): retried like MetalLB's pool.
            for obj in objects:
                kube.apply(obj)
            return True, "TenantControlPlane accepted"

        wait_until(ctx, self.name, "Kamaji to accept the TenantControlPlane", submit,
                   timeout=120, interval=3)
        wait_until(ctx, self.name, f"TenantControlPlane {self.tenant.name} Ready",
                   lambda: self._ready(kube), timeout=self.timeout, interval=5)
        self._save_kubeconfig(ctx, kube)

    def _prove(self, ctx: StepContext, dial: Dial, url: str, port: int) -> None:
        """This host reaches the tenant's published API within seconds (gpulab.reach), before
        any step talks to it, or one line names the engine and the fix."""
        from gpulab.docker_engines import route_text
        from gpulab.reach import engine_of, prove, route_fix

        engine = engine_of(adapters_of(ctx).runtime)
        prove(dial, url, f"{self.tenant.name}'s API server", engine,
              route_fix(engine, self.node, port) + "; a lab made before gpulab published its "
              "tenants' ports has none: gpulab down, then gpulab up")
        ctx.note(f"this host reaches {self.tenant.name}'s API at {url}"
                 + (f" ({engine.label}: {route_text(engine)})" if engine else ""))

    def _save_kubeconfig(self, ctx: StepContext, kube: KubeGateway) -> None:
        secret = f"{self.tenant.name}-admin-kubeconfig"
        data = kube.secret_data(secret, self.namespace, "admin.conf")
        if not data:
            raise AdapterError(f"secret {self.namespace}/{secret} has no admin.conf yet")
        adapters = adapters_of(ctx)
        write_secret(node_kubeconfig(adapters, self.tenant.name), data)
        published = self.api is not None and self.url is not None
        if published and self.url and self.api and adapters.dial is not None:
            self._prove(ctx, adapters.dial, self.url, self.api.host_port)
        host = api_route.host_kubeconfig(data, self.url) if self.url and published else data
        path = write_secret(adapters.tenant_kubeconfig(self.tenant.name), host)
        ctx.note(f"kubeconfig saved to {path} (mode 0600)"
                 + (f"; its server is {self.url}, published on this host" if published else ""))
