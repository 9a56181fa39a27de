"""Calico in a tenant: its manifest, nodes Ready and the tunnel between workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of, daemonset_ready, manifest_objects, node_ready
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class Calico:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 420

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/calico"

    @property
    def title(self) -> str:
        return f"Installing Calico in {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/kube-proxy", f"{self.tenant.name}/images")

    def describe(self) -> list[Artifact]:
        calico = self.profile.components.calico
        return [Artifact("manifest", f"calico-{calico.version}", {
            "url": calico.url,
            "apply": "server-side",
            "set_env": {"daemonset/calico-node": render.calico_pool_env(self.tenant)},
        }, cluster=self.tenant.name)]

    def objects(self, text: str) -> list[dict[str, Any]]:
        """The upstream manifest with calico-node's IPv4 pool set to the tenant's pod CIDR."""
        objects = manifest_objects(text)
        env = render.calico_pool_env(self.tenant)
        for obj in objects:
            if obj.get("kind") == "DaemonSet" and obj["metadata"]["name"] == "calico-node":
                for container in obj["spec"]["template"]["spec"]["containers"]:
                    if container.get("name") == "calico-node":
                        entries = [e for e in container.get("env", []) if e.get("name") not in env]
                        entries += [{"name": k, "value": v} for k, v in env.items()]
                        container["env"] = entries
        return objects

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _nodes_ready(self, kube: KubeGateway) -> tuple[bool, str]:
        nodes = kube.list_objects("v1", "Node")
        not_ready = [n["metadata"]["name"] for n in nodes if not node_ready(n)]
        ok, seen = daemonset_ready(kube, "calico-node", "kube-system")
        if not ok:
            return ok, seen
        if not nodes or not_ready:
            return False, f"not Ready: {', '.join(not_ready)}" if not_ready else "no nodes yet"
        return self._tunnel(kube, [n["metadata"]["name"] for n in nodes])

    @staticmethod
    def _tunnel(kube: KubeGateway, nodes: list[str]) -> tuple[bool, str]:
        """Konnectivity works: the tenant API reads a pod's logs on every worker (a kubelet call
        the hosted API server can only make through the tunnel)."""
        pods = kube.list_objects("v1", "Pod", "kube-system")
        for node in nodes:
            on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node
                       and p["metadata"]["name"].startswith("calico-node")]
            if not on_node:
                return False, f"no calico-node pod on {node} yet"
            pod = on_node[0]["metadata"]["name"]
            try:
                kube.pod_logs(pod, "kube-system", tail_lines=1)
            except AdapterError as err:
                return False, f"logs of kube-system/{pod} on {node} not readable: {err}"
        return True, f"{len(nodes)} node(s) Ready; logs readable through Konnectivity"

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, _ = self._nodes_ready(self._tenant(ctx))
        except AdapterError:
            return False
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        text = adapters_of(ctx).fetch(self.profile.components.calico.url)
        for obj in self.objects(text):
            kube.apply(obj)
        wait_until(ctx, self.name, "calico-node ready, nodes Ready and the tunnel up",
                   lambda: self._nodes_ready(kube), timeout=self.timeout, interval=5)
