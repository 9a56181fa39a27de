"""The kamaji-hami lab as a plan of steps.

Order (one place decides it): management cluster → cert-manager → MetalLB → Kamaji, then per
tenant, concurrently: control plane → workers → join → Calico → HAMi → mock GPUs.

This module is that order (`build_steps`, `verify_previews`) and the registry's existing-cluster
entry points; each step lives in its own module: `addons` (cert-manager, Kamaji), `metallb`,
`control_plane`, `workers`, `join`, `kube_proxy`, `calico`, `hami`, `gpus`, `images`,
`preview` (what verify creates), `existing_cluster` (the steps of a cluster gpulab did not make).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import HostError
from gpulab.stacks.common import HelmAddon, LabAdapters, LabNamespaces, Reused
from gpulab.stacks.kamaji_hami import existing
from gpulab.stacks.kamaji_hami.api_route import tenant_api_port
from gpulab.stacks.kamaji_hami.steps.addons import cert_manager_addon, kamaji_addon
from gpulab.stacks.kamaji_hami.steps.calico import Calico
from gpulab.stacks.kamaji_hami.steps.control_plane import TenantControlPlane
from gpulab.stacks.kamaji_hami.steps.existing_cluster import (
    ContainerWorkers,
    ExistingControlPlane,
    ExistingKamaji,
    ReachControlPlane,
    TenantCalico,
)
from gpulab.stacks.kamaji_hami.steps.gpus import MockGpus
from gpulab.stacks.kamaji_hami.steps.hami import Hami
from gpulab.stacks.kamaji_hami.steps.images import (
    CONTROL_PLANE_IMAGES,
    management_images,
    tenant_images,
)
from gpulab.stacks.kamaji_hami.steps.join import (
    IGNORED_PREFLIGHT,
    JOIN_STATE,
    KUBELET_CONF,
    RESET_LEFTOVERS,
    WORKER_KUBECONFIG,
    JoinWorkers,
    WorkerJoinState,
)
from gpulab.stacks.kamaji_hami.steps.kube_proxy import KubeProxy, tenant_server
from gpulab.stacks.kamaji_hami.steps.metallb import MetalLB
from gpulab.stacks.kamaji_hami.steps.preview import VerifyPreview
from gpulab.stacks.kamaji_hami.steps.workers import TenantWorkers

if TYPE_CHECKING:
    from gpulab.engine.step import Step
    from gpulab.providers.base import ClusterFacts, ExistingNeeds
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

__all__ = [
    "CONTROL_PLANE_IMAGES",
    "IGNORED_PREFLIGHT",
    "JOIN_STATE",
    "KUBELET_CONF",
    "RESET_LEFTOVERS",
    "WORKER_KUBECONFIG",
    "Calico",
    "ContainerWorkers",
    "ExistingControlPlane",
    "ExistingKamaji",
    "Hami",
    "JoinWorkers",
    "KubeProxy",
    "LabAdapters",
    "MetalLB",
    "MockGpus",
    "ReachControlPlane",
    "TenantCalico",
    "TenantControlPlane",
    "TenantWorkers",
    "VerifyPreview",
    "WorkerJoinState",
    "build_steps",
    "cert_manager_addon",
    "existing_needs",
    "existing_problems",
    "join_commands",
    "kamaji_addon",
    "management_images",
    "tenant_images",
    "tenant_server",
    "verify_previews",
    "worker_steps",
]


def verify_previews(profile: KamajiHamiProfile) -> list[Step]:
    return [VerifyPreview(tenant) for tenant in profile.tenants]


def build_steps(profile: KamajiHamiProfile, lab: str, facts: ClusterFacts) -> list[Step]:
    """Every step of `up` for this profile, in the one order that matters, on what the
    cluster's provider answered for `cluster_needs` (providers.base.ClusterFacts): on a shared
    cluster the lab's namespaces first and cert-manager, a LoadBalancer and Kamaji reused when
    found there; images loaded into the nodes this host can load them into; MetalLB on the
    addresses the lab hands out itself (`lb_range`); per tenant its control plane, then its
    workers: containers on this host joined with kubeadm, or machines that join with what
    `gpulab join` prints (the tenant then gets Calico alone)."""
    found: existing.ClusterFound | None = facts.found if facts.shared else None
    steps: list[Step] = []
    if found is not None:  # the lab's namespaces are its own objects there
        levels = tuple((n, level) for n, level, _what
                       in existing.lab_pod_security(profile, found))
        steps.append(LabNamespaces(lab, existing.lab_namespaces(profile, found),
                                   levels=levels))
    if facts.management_nodes:
        steps.append(management_images(profile, facts.management_nodes))
    first = "management/images" if facts.management_nodes else \
        "management/namespaces" if found is not None else "management/cluster"
    steps += [_cert_manager(profile, found, requires=(first,)),
              _load_balancer(profile, lab, facts, found), _kamaji(profile, found)]
    for tenant in profile.tenants:
        steps += _tenant_steps(profile, lab, tenant, facts, shared=found is not None)
    return steps


def _cert_manager(profile: KamajiHamiProfile, found: existing.ClusterFound | None, *,
                  requires: tuple[str, ...]) -> Step:
    """cert-manager found in the cluster, reused; else installed."""
    if found is not None and found.cert_manager is not None:
        cert = found.cert_manager
        return Reused("management/cert-manager", "Using the cluster's cert-manager",
                      f"cert-manager {cert.version} in {cert.namespace}",
                      {"namespace": cert.namespace, "version": cert.version})
    return cert_manager_addon(profile, requires=requires)


def _load_balancer(profile: KamajiHamiProfile, lab: str, facts: ClusterFacts,
                   found: existing.ClusterFound | None) -> Step:
    """The control planes' LoadBalancer: MetalLB on the addresses the lab hands out (`lb_range`:
    a cluster it made), MetalLB on the profile's range where it may install it on a shared
    cluster, else the cluster's own LoadBalancer, reused."""
    if found is None:
        if facts.lb_range is None:  # pragma: no cover - cluster_needs asks for the range
            raise HostError("the cluster's provider gave MetalLB no address range")
        return MetalLB(profile, facts.lb_range)
    spec = profile.cluster
    if existing.installs_metallb(profile, found) and spec is not None:
        return existing.ExistingMetalLB(profile, lab, spec.metallb_range or "")
    seen = found.load_balancer or (
        f"MetalLB in {found.metallb.namespace or '?'}" if found.metallb else
        "cluster.expose: LoadBalancer (the profile says the cluster has one)")
    return Reused("management/metallb", "Using the cluster's LoadBalancer",
                  "the cluster's LoadBalancer", {"seen": seen})


def _kamaji(profile: KamajiHamiProfile, found: existing.ClusterFound | None) -> Step:
    """Kamaji found in the cluster, reused; else installed (on a shared cluster its chart's
    objects recorded for `down`: ExistingKamaji)."""
    if found is not None and found.kamaji is not None:
        kamaji = found.kamaji
        return Reused("management/kamaji", "Using the cluster's Kamaji",
                      f"Kamaji {kamaji.version} in {kamaji.namespace}",
                      {"namespace": kamaji.namespace, "version": kamaji.version})
    return kamaji_addon(profile, ExistingKamaji if found is not None else HelmAddon)


def _tenant_steps(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec,
                  facts: ClusterFacts, *, shared: bool) -> list[Step]:
    """A tenant's control plane and workers, as `facts.workers` says they come."""
    containers = facts.workers == "containers"
    if not shared:
        api = tenant_api_port(profile, tenant)
        node = facts.management_nodes[0] if facts.management_nodes else ""
        return [TenantControlPlane(profile, tenant, api=api, url=facts.urls.get(api.name),
                                   node=node),
                *worker_steps(profile, lab, tenant, TenantWorkers(profile, lab, tenant),
                              tenant_images(profile, lab, tenant))]
    steps: list[Step] = [ExistingControlPlane(profile, tenant, lab=lab, containers=containers)]
    if not containers:  # machines join with what `gpulab join` prints
        return [*steps, TenantCalico(profile, lab, tenant)]
    return [*steps, ReachControlPlane(profile, tenant),  # the kind lab's steps, on this host
            *worker_steps(profile, lab, tenant, ContainerWorkers(profile, lab, tenant),
                          tenant_images(profile, lab, tenant))]


def worker_steps(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec, workers: Step,
                 *before_join: Step) -> list[Step]:
    """A tenant's kindest/node workers, from their containers (`workers`) to mock GPUs: the
    kind lab's order, which `cluster.workers: containers` on an existing cluster reuses."""
    return [workers, *before_join, JoinWorkers(profile, lab, tenant),
            KubeProxy(profile, lab, tenant), Calico(profile, lab, tenant), Hami(profile, tenant),
            MockGpus(profile, lab, tenant)]


def existing_needs(profile: KamajiHamiProfile, lab: str, owned_before: Any
                   ) -> ExistingNeeds:
    """What the plan creates on an existing cluster, for the provider's preflight."""
    return existing.existing_needs(profile, lab, owned_before)


def existing_problems(profile: KamajiHamiProfile, facts: Any) -> list[str]:
    """Why the lab cannot go into this cluster, one line each ([]: it can)."""
    return existing.existing_problems(profile, facts)


def join_commands(profile: KamajiHamiProfile, lab: str, member: str, *, node: str | None,
                  ttl_seconds: int, kube: Any) -> str:
    """`gpulab join`: what makes a real machine a worker of a tenant (existing.join_commands)."""
    return existing.join_commands(profile, lab, member, node=node, ttl_seconds=ttl_seconds,
                                  kube=kube)
