"""cert-manager and Kamaji: their Helm releases and when each is ready.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks import common
from gpulab.stacks.common import HelmAddon, crd_established, deployment_available
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile


def _cert_manager_ready(kube: KubeGateway) -> tuple[bool, str]:
    """The webhook answers: a dry-run Issuer is admitted (pods Ready is not enough)."""
    ok, seen = deployment_available(kube, "cert-manager-webhook", "cert-manager")
    if not ok:
        return ok, seen
    issuer = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": "gpulab-webhook-probe", "namespace": "cert-manager"},
        "spec": {"selfSigned": {}},
    }
    kube.apply(issuer, dry_run=True)
    return True, "cert-manager webhook admitted a dry-run Issuer"


def _kamaji_ready(kube: KubeGateway) -> tuple[bool, str]:
    ok, seen = crd_established(kube, "tenantcontrolplanes.kamaji.clastix.io")
    if not ok:
        return ok, seen
    for dep in kube.list_objects("apps/v1", "Deployment", "kamaji-system"):
        name = dep["metadata"]["name"]
        ok, seen = deployment_available(kube, name, "kamaji-system")
        if not ok:
            return ok, seen
    return True, "Kamaji CRDs served and controller available"


def cert_manager_addon(profile: KamajiHamiProfile, *, requires: tuple[str, ...]) -> HelmAddon:
    """cert-manager's release, ready once its webhook admits objects (kind and existing)."""
    return HelmAddon(common.helm_release(profile.components.cert_manager),
                     name="management/cert-manager", title="Installing cert-manager",
                     requires=requires, ready=_cert_manager_ready,
                     ready_what="cert-manager webhook to admit objects")


def kamaji_addon(profile: KamajiHamiProfile, kind: type[HelmAddon] = HelmAddon) -> HelmAddon:
    """Kamaji's release after cert-manager, ready with its CRDs and controller."""
    return kind(render.kamaji_release(profile), name="management/kamaji",
                title="Installing Kamaji", requires=("management/cert-manager",),
                ready=_kamaji_ready, ready_what="Kamaji CRDs and controller")
