"""kube-proxy in a tenant, and the tenant API server its kubeconfig names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of, daemonset_ready
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.steps.control_plane import node_kubeconfig

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class KubeProxy:
    """kube-proxy in the tenant with kind's settings (render.kube_proxy_objects), in place of
    Kamaji's addon, which cannot take them and would revert an edit."""

    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 240

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/kube-proxy"

    @property
    def title(self) -> str:
        return f"Running kube-proxy in {self.tenant.name} (kind's settings)"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/join", f"{self.tenant.name}/images")

    def describe(self) -> list[Artifact]:
        server = f"<{self.tenant.name}'s API server, from nodes/{self.tenant.name}.kubeconfig>"
        return [Artifact(obj["kind"], obj["metadata"]["name"], obj, cluster=self.tenant.name)
                for obj in render.kube_proxy_objects(self.tenant, server)]

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        ok, seen = daemonset_ready(kube, render.KUBE_PROXY, "kube-system")
        if not ok:
            return ok, seen
        config = kube.get("v1", "ConfigMap", render.KUBE_PROXY, "kube-system") or {}
        text = (config.get("data") or {}).get("config.conf", "")
        settings = yaml.safe_load(text) if text else {}
        if ((settings or {}).get("conntrack") or {}).get("maxPerCore") != 0:
            return False, "kube-proxy's ConfigMap is not gpulab's (conntrack.maxPerCore != 0)"
        return True, seen

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            return self._ready(self._tenant(ctx))[0]
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        kube = self._tenant(ctx)
        server = tenant_server(node_kubeconfig(adapters, self.tenant.name))
        rootless = adapters.runtime.info().rootless
        for obj in render.kube_proxy_objects(self.tenant, server, rootless=rootless):
            kube.apply(obj)
        wait_until(ctx, self.name, "kube-proxy running on every worker",
                   lambda: self._ready(kube), timeout=self.timeout, interval=3)


def tenant_server(kubeconfig: Path) -> str:
    """The API server URL in a tenant's admin kubeconfig (its current context's cluster)."""
    try:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AdapterError(f"cannot read {kubeconfig}: {err}") from None
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    cluster = (contexts.get(config.get("current-context")) or {}).get("cluster")
    for entry in config.get("clusters") or []:
        if entry.get("name") == cluster or cluster is None:
            server = (entry.get("cluster") or {}).get("server")
            if server:
                return str(server)
    raise AdapterError(f"{kubeconfig} names no API server")
