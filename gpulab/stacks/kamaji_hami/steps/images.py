"""Image preloads: the management cluster's add-ons and each tenant's workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError
from gpulab.stacks import common
from gpulab.stacks.common import PreloadImages, adapters_of, manifest_objects
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gpulab.adapters import base
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


CONTROL_PLANE_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _images_from(ctx: StepContext, what: str, produce: Callable[[], list[dict[str, Any]]]
                 ) -> list[str]:
    """Images a chart or manifest runs; a source that cannot be read is noted and skipped."""
    from gpulab.images import images_in_objects

    try:
        return images_in_objects(produce())
    except GpulabError as err:
        ctx.note(f"cannot list the images of {what}: {err}")
        return []


def _dedupe(images: list[str]) -> list[str]:
    return list(dict.fromkeys(images))


def management_images(profile: KamajiHamiProfile, nodes: Sequence[str]) -> PreloadImages:
    """cert-manager, MetalLB, Kamaji (with etcd) and the tenants' control-plane images, into
    the management cluster's `nodes` (ClusterFacts.management_nodes)."""
    comps = profile.components
    releases = [common.helm_release(comps.cert_manager), render.kamaji_release(profile)]

    def sources(ctx: StepContext) -> list[str]:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        images: list[str] = []
        for release in releases:
            def rendered(r: base.HelmRelease = release) -> list[dict[str, Any]]:
                return helm.template(r)

            images += _images_from(ctx, f"chart {release.chart} {release.version}", rendered)
        images += _images_from(ctx, comps.metallb.url,
                               lambda: manifest_objects(adapters.fetch(comps.metallb.url)))
        for tenant in profile.tenants:
            images += [f"registry.k8s.io/{c}:{tenant.kubernetes_version}"
                       for c in CONTROL_PLANE_IMAGES]
            images.append(render.konnectivity_images(tenant)[0])
        return _dedupe(images)

    return PreloadImages(
        name="management/images",
        title="Preloading add-on images into the management node",
        requires=("management/cluster",),
        nodes=list(nodes),
        sources=sources,
        described=[f"chart {r.chart} {r.version}" for r in releases]
        + [comps.metallb.url, "registry.k8s.io/kube-{apiserver,controller-manager,scheduler} "
                              "at each tenant's version",
           f"{render.KONNECTIVITY_IMAGES}server:v0.<tenant minor>.0 (Kamaji's default)"],
    )


def tenant_images(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec) -> PreloadImages:
    """Calico, HAMi (with its kube-scheduler) and kube-proxy for a tenant's workers."""
    calico = profile.components.calico
    release = render.hami_release(profile, tenant)
    mock_image = f"{render.MOCK_PLUGIN_IMAGE}:{profile.components.hami.mock_device_plugin_tag}"

    def sources(ctx: StepContext) -> list[str]:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        images = _images_from(ctx, calico.url,
                              lambda: manifest_objects(adapters.fetch(calico.url)))
        images += _images_from(ctx, f"chart {release.chart} {release.version}",
                               lambda: helm.template(release,
                                                     kube_version=tenant.kubernetes_version))
        images.append(f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}")
        images.append(render.konnectivity_images(tenant)[1])
        images.append(mock_image)  # the mock plugin is gpulab's DaemonSet, not the chart's
        images.append(common.VERIFY_IMAGE)  # verify's pods (kindest/node ships it already)
        return _dedupe(images)

    return PreloadImages(
        name=f"{tenant.name}/images",
        title=f"Preloading images into {tenant.name}'s workers",
        requires=(f"{tenant.name}/workers",),
        nodes=[render.worker_name(lab, tenant.name, i) for i in range(tenant.workers.count)],
        sources=sources,
        described=[calico.url, f"chart {release.chart} {release.version}",
                   f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}",
                   render.konnectivity_images(tenant)[1], mock_image, common.VERIFY_IMAGE],
        cluster=tenant.name,
    )
