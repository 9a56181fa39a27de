"""HAMi in a tenant, with its mock device plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of, deployment_available
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters import base
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


@dataclass
class Hami:
    profile: KamajiHamiProfile
    tenant: TenantSpec
    timeout: float = 420

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/hami"

    @property
    def title(self) -> str:
        return f"Installing HAMi with the mock device plugin in {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/calico",)

    @property
    def release(self) -> base.HelmRelease:
        return render.hami_release(self.profile, self.tenant)

    def describe(self) -> list[Artifact]:
        rbac = [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.hami_mock_rbac(self.release)]
        copied = (f"<the {', '.join(render.MOCK_READS)} sections of ConfigMap "
                  f"{self.release.namespace}/{render.SCHEDULER_DEVICE_CONFIG}, copied after the "
                  f"chart installs>")
        mock = [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.hami_mock_plugin(self.profile, self.release, copied)]
        return [*rbac, Artifact("helm-release", self.release.name, self.release.to_dict(),
                                cluster=self.tenant.name), *mock]

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        ok, seen = deployment_available(kube, "hami-scheduler", self.release.namespace)
        if not ok:
            return ok, seen
        if kube.get("v1", "ConfigMap", render.SCHEDULER_DEVICE_CONFIG,
                    self.release.namespace) is None:
            return False, f"ConfigMap {render.SCHEDULER_DEVICE_CONFIG} not created yet"
        return True, "hami-scheduler available"

    def _mock_present(self, kube: KubeGateway) -> bool:
        namespace = self.release.namespace
        return (kube.get("v1", "ConfigMap", render.MOCK_DEVICE_CONFIG, namespace) is not None
                and kube.get("apps/v1", "DaemonSet", render.MOCK_PLUGIN, namespace) is not None)

    def satisfied(self, ctx: StepContext) -> bool:
        adapters = adapters_of(ctx)
        path = adapters.tenant_kubeconfig(self.tenant.name)
        try:
            if not adapters.helm(path).installed(self.release):
                return False
            kube = adapters.kube(path)
            ok, _ = self._ready(kube)
            return ok and self._mock_present(kube)
        except AdapterError:
            return False

    def _mock_objects(self, kube: KubeGateway) -> list[dict[str, Any]]:
        """The mock's objects, its config copied from the scheduler's (mock_device_config)."""
        source = kube.get("v1", "ConfigMap", render.SCHEDULER_DEVICE_CONFIG,
                          self.release.namespace) or {}
        text = str((source.get("data") or {}).get("device-config.yaml") or "")
        try:
            config = render.mock_device_config(text)
        except (ValueError, yaml.YAMLError) as err:
            raise AdapterError(
                f"{self.tenant.name}: ConfigMap {self.release.namespace}/"
                f"{render.SCHEDULER_DEVICE_CONFIG} cannot feed the mock device plugin ({err})",
                hint=f"look at it: kubectl --kubeconfig <tenant kubeconfig> -n "
                     f"{self.release.namespace} get configmap "
                     f"{render.SCHEDULER_DEVICE_CONFIG} -o yaml") from None
        return render.hami_mock_plugin(self.profile, self.release, config)

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        path = adapters.tenant_kubeconfig(self.tenant.name)
        kube = adapters.kube(path)
        for obj in render.hami_mock_rbac(self.release):
            kube.apply(obj)
        ctx.waiting(f"helm to install {self.release.name} in {self.tenant.name} and its pods "
                    "to be ready", self.timeout)
        adapters.helm(path).install(self.release, timeout_seconds=int(self.timeout))
        wait_until(ctx, self.name, "hami-scheduler ready", lambda: self._ready(kube),
                   timeout=self.timeout, interval=5)
        for obj in self._mock_objects(kube):
            kube.apply(obj)
