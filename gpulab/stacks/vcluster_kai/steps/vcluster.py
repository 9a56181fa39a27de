"""A team's vCluster, reachable from the host, its kubeconfig saved 0600.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.paths import write_secret
from gpulab.stacks.common import adapters_of, management_kube
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.steps.fake_gpus import FAKE_GPUS_STEP

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters import base
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile


@dataclass
class TeamVCluster:
    """A team's vCluster (Helm) reachable from the host; its kubeconfig saved 0600."""

    profile: VclusterKaiProfile
    lab: str
    team: TeamSpec
    facts: Any
    timeout: float = 600
    existing: kr.ExistingExpose | None = None  # provider existing: how the vCluster is reached
    after: tuple[str, ...] | None = None  # provider existing: what it waits for instead

    @property
    def name(self) -> str:
        return f"{self.team.name}/vcluster"

    @property
    def title(self) -> str:
        return f"Creating the vCluster of {self.team.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        """After the GPU node is advertised: the pool's one worker runs the vCluster too, so its
        images would otherwise be pulled while fake-gpu-operator's still are (FAKE_GPUS_TIMEOUT);
        a vCluster does not need KAI, and is installed concurrently with it."""
        return self.after if self.after is not None else ("management/cluster", FAKE_GPUS_STEP)

    @property
    def secret(self) -> str:
        return f"vc-{self.team.name}"

    def release(self) -> base.HelmRelease:
        if self.existing is None:  # the URL the cluster's provider gives the team's port
            return kr.vcluster_release(self.profile, self.team,
                                       server=self.facts.url_for(kr.team_port(self.team)))
        return kr.vcluster_release(self.profile, self.team, self.existing)

    def _shown_server(self) -> str:
        if self.existing is None:
            return str(self.facts.url_for(kr.team_port(self.team)))
        return self.existing.server(self.team) or (
            f"https://<the LoadBalancer address of Service {self.team.namespace}/"
            f"{self.team.name}>:443")

    def describe(self) -> list[Artifact]:
        return [
            Artifact("helm-release", self.team.name, self.release().to_dict()),
            Artifact("file", f"{self.team.name}.kubeconfig", {
                "from": f"secret {self.team.namespace}/{self.secret} key config",
                "server": self._shown_server(),
                "mode": "0600",
            }),
        ]

    def _balancer(self, kube: KubeGateway) -> tuple[bool, str]:
        """The team's Service has a LoadBalancer address (provider existing, LoadBalancer)."""
        svc = kube.get("v1", "Service", self.team.name, self.team.namespace) or {}
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        address = next((str(i.get("ip") or i.get("hostname")) for i in ingress
                        if i.get("ip") or i.get("hostname")), "")
        return bool(address), address or f"service {self.team.namespace}/{self.team.name} " \
                                         "has no LoadBalancer address yet"

    def _with_server(self, data: bytes, kube: KubeGateway) -> bytes:
        """The exported kubeconfig, its server set to the LoadBalancer's address."""
        if self.existing is None or self.existing.how != "LoadBalancer":
            return data
        import yaml

        ok, address = self._balancer(kube)
        if not ok:
            raise AdapterError(address)
        host = f"[{address}]" if ":" in address else address
        config = yaml.safe_load(data)
        for cluster in config.get("clusters") or []:
            cluster["cluster"]["server"] = f"https://{host}:443"
        return yaml.safe_dump(config, sort_keys=False).encode()

    def _kubeconfig(self, ctx: StepContext) -> Path:
        return adapters_of(ctx).tenant_kubeconfig(self.team.name)

    def _save_kubeconfig(self, ctx: StepContext, kube: KubeGateway) -> Path:
        data = kube.secret_data(self.secret, self.team.namespace, "config")
        if not data:
            raise AdapterError(f"secret {self.team.namespace}/{self.secret} has no config yet")
        return write_secret(self._kubeconfig(ctx), self._with_server(data, kube))

    def _secret_ready(self, kube: KubeGateway) -> tuple[bool, str]:
        data = kube.secret_data(self.secret, self.team.namespace, "config")
        return bool(data), (f"secret {self.team.namespace}/{self.secret} written" if data
                            else f"secret {self.team.namespace}/{self.secret} not written yet")

    def satisfied(self, ctx: StepContext) -> bool:
        adapters = adapters_of(ctx)
        release = self.release()
        try:
            if not adapters.helm(adapters.management_kubeconfig()).installed(release):
                return False
            path = self._save_kubeconfig(ctx, management_kube(ctx))
            version = adapters.kube(path).server_version()
        except AdapterError:
            return False
        ctx.observe(self.name, f"vCluster API answers {version}")
        return True

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        release = self.release()
        ctx.note(f"helm upgrade --install {release.name} {release.chart} --repo {release.repo} "
                 f"--version {release.version} -n {release.namespace}")
        ctx.waiting(f"helm to install {release.name} and its pods to be ready", self.timeout)
        adapters.helm(adapters.management_kubeconfig()).install(
            release, timeout_seconds=int(self.timeout))
        kube = management_kube(ctx)
        wait_until(ctx, self.name, f"secret {self.secret} with the vCluster's kubeconfig",
                   lambda: self._secret_ready(kube), timeout=self.timeout, interval=3)
        if self.existing is not None and self.existing.how == "LoadBalancer":
            wait_until(ctx, self.name, "the vCluster Service's LoadBalancer address",
                       lambda: self._balancer(kube), timeout=self.timeout, interval=3)
        path = self._save_kubeconfig(ctx, kube)
        ctx.note(f"kubeconfig saved to {path} (mode 0600)")
        team = adapters.kube(path)
        server = self._shown_server() if self.existing is not None else \
            release.values["exportKubeConfig"]["server"]
        wait_until(ctx, self.name, f"the vCluster API at {server}",
                   lambda: (True, f"answers {team.server_version()}"),
                   timeout=self.timeout, interval=3)
