"""kamaji-hami's pure renderers: profile (+ host facts) → the exact objects gpulab creates or
patches.

Nothing here does I/O. `plan` prints these, `up` applies them and the tests validate them against
the upstream schemas in ../shared/data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.adapters.base import ContainerSpec, HelmRelease
from gpulab.naming import LABEL_LAB, LABEL_MANAGED, LABEL_ROLE, LABEL_TENANT, kind_cluster_name
from gpulab.stacks.common import VERIFY_IMAGE, helm_release
from gpulab.verify.observe import VERIFY_NAMESPACE

if TYPE_CHECKING:
    from gpulab.netcalc import AddressRange
    from gpulab.stacks.kamaji_hami.profile import GpuSpec, KamajiHamiProfile, TenantSpec

__all__ = [
    "SharingSizes",
    "calico_pool_env",
    "gpu_capacity",
    "gpu_capacity_patch",
    "gpu_register_annotation",
    "hami_mock_rbac",
    "hami_release",
    "kamaji_release",
    "kind_cluster_config",
    "metallb_objects",
    "sharing_sizes",
    "tenant_control_plane",
    "verify_objects",
    "worker_container",
    "worker_name",
]

GPU_REGISTER_ANNOTATION = "hami.io/node-nvidia-register"




def worker_name(lab: str, tenant: str, index: int) -> str:
    """Worker container name = its hostname = the tenant's Node name."""
    return f"gpulab-{lab}-{tenant}-worker{index if index else ''}"


def kind_cluster_config(profile: KamajiHamiProfile, lab: str) -> dict[str, Any]:
    """kind's cluster config: one control-plane node at the pinned image."""
    return {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": kind_cluster_name(lab),
        "nodes": [
            {
                "role": "control-plane",
                "image": profile.management.node_image,
                "labels": {LABEL_LAB: lab},
            }
        ],
    }








def kamaji_release(profile: KamajiHamiProfile) -> HelmRelease:
    kamaji = profile.components.kamaji
    return helm_release(kamaji, {"image": {"tag": kamaji.image_tag}})


HAMI_EXTENDER_DEFAULT_ARGS = ("--debug", "-v=4")  # charts/hami/values.yaml:156-158 at v2.10.0


def hami_release(profile: KamajiHamiProfile, tenant: TenantSpec) -> HelmRelease:
    """HAMi with the mock device plugin; the real NVIDIA plugin is off (no `gpu=on` label)."""
    hami = profile.components.hami
    values: dict[str, Any] = {
        "scheduler": {
            "kubeScheduler": {
                "image": {
                    "registry": hami.kube_scheduler_registry,
                    "repository": "kube-scheduler",
                    "tag": tenant.kubernetes_version,
                }
            },
            # The extender's lock timeout is its --node-lock-timeout flag (HAMi v2.10.0
            # cmd/scheduler/main.go:79, default 5m), which start() copies over the
            # HAMI_NODELOCK_EXPIRE env that `nodeLockExpire` sets (main.go:114): only the flag
            # counts. extraArgs is appended to the extender's command
            # (templates/scheduler/deployment.yaml:136-138) and a list replaces the chart's
            # default [--debug, -v=4] (values.yaml:156-158), so those are kept.
            "extender": {"extraArgs": [*HAMI_EXTENDER_DEFAULT_ARGS,
                                       f"--node-lock-timeout={hami.node_lock_timeout}"]},
            "nodeLockExpire": hami.node_lock_timeout,
        },
        "devicePlugin": {"enabled": False},
        "mockDevicePlugin": {"enabled": True, "image": {"tag": hami.mock_device_plugin_tag}},
    }
    return helm_release(hami, values, cluster=tenant.name)


MOCK_PLUGIN_ACCOUNT = "hami-mock-device-plugin"


def hami_mock_rbac(release: HelmRelease) -> list[dict[str, Any]]:
    """The mock device plugin's ServiceAccount and node RBAC (mock-device-plugin's
    k8s-mock-rbac.yaml). The chart's mock DaemonSet runs as this account but the chart may not
    create it; the objects carry Helm's ownership metadata so Helm adopts them if it does."""
    owned = {
        "labels": {"app.kubernetes.io/managed-by": "Helm"},
        "annotations": {"meta.helm.sh/release-name": release.name,
                        "meta.helm.sh/release-namespace": release.namespace},
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, "namespace": release.namespace, **owned}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, **owned},
         "rules": [{"apiGroups": [""], "resources": ["nodes"],
                    "verbs": ["get", "update", "list", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, **owned},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": MOCK_PLUGIN_ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": MOCK_PLUGIN_ACCOUNT,
                       "namespace": release.namespace}]},
    ]


def metallb_objects(profile: KamajiHamiProfile, pool: AddressRange | None) -> list[dict[str, Any]]:
    """The IPAddressPool (IPv4 only) and the L2Advertisement that announces it."""
    metallb = profile.components.metallb
    addresses = [str(pool)] if pool else ["<pending: derived from the kind network at up>"]
    return [
        {
            "apiVersion": "metallb.io/v1beta1",
            "kind": "IPAddressPool",
            "metadata": {"name": metallb.pool_name, "namespace": "metallb-system"},
            "spec": {"addresses": addresses},
        },
        {
            "apiVersion": "metallb.io/v1beta1",
            "kind": "L2Advertisement",
            "metadata": {"name": metallb.pool_name, "namespace": "metallb-system"},
            "spec": {"ipAddressPools": [metallb.pool_name]},
        },
    ]


def tenant_control_plane(profile: KamajiHamiProfile, tenant: TenantSpec) -> dict[str, Any]:
    """The TenantControlPlane of the write-up, parameterised by the profile."""
    cp = tenant.control_plane
    return {
        "apiVersion": "kamaji.clastix.io/v1alpha1",
        "kind": "TenantControlPlane",
        "metadata": {
            "name": tenant.name,
            "namespace": profile.components.kamaji.tenant_namespace,
            "labels": {"tenant.clastix.io": tenant.name, LABEL_MANAGED: "gpulab"},
        },
        "spec": {
            "controlPlane": {
                "deployment": {"replicas": cp.replicas},
                "service": {"serviceType": cp.service_type},
            },
            "kubernetes": {
                "version": tenant.kubernetes_version,
                "kubelet": {
                    "configurationJSONPatches": [
                        {"op": "add", "path": "/cgroupDriver", "value": cp.kubelet_cgroup_driver}
                    ]
                },
            },
            "networkProfile": {
                "port": cp.port,
                "podCidr": tenant.pod_cidr,
                "serviceCidr": tenant.service_cidr,
            },
            "addons": {
                "coreDNS": {},
                "kubeProxy": {},
                "konnectivity": {
                    "server": {"port": cp.konnectivity_port},
                    "agent": {"mode": cp.konnectivity_agent_mode},
                },
            },
        },
    }


def gpu_register_annotation(tenant: TenantSpec, worker_index: int) -> str:
    """`hami.io/node-nvidia-register` in HAMi v2.10's JSON format (one entry per card)."""
    ids = iter(tenant.device_ids(worker_index))
    devices: list[dict[str, Any]] = []
    index = 0
    for gpu in tenant.gpus:
        for _ in range(gpu.count):
            devices.append(
                {
                    "id": next(ids),
                    "index": index,
                    "count": gpu.split,
                    "devmem": gpu.memory_mib,
                    "devcore": gpu.cores,
                    "type": gpu.model,
                    "health": True,
                    "numa": 0,
                    "mode": "hami-core",
                }
            )
            index += 1
    return json.dumps(devices, separators=(",", ":"))


def gpu_capacity(tenant: TenantSpec) -> dict[str, int]:
    """What each worker must advertise once HAMi's mock plugin has registered the cards."""
    return {
        "nvidia.com/gpu": sum(g.split * g.count for g in tenant.gpus),
        "nvidia.com/gpumem": sum(g.memory_mib * g.count for g in tenant.gpus),
        "nvidia.com/gpucores": sum(g.cores * g.count for g in tenant.gpus),
        "nvidia.com/gpumem-percentage": 100 * sum(g.count for g in tenant.gpus),
    }


def gpu_capacity_patch(tenant: TenantSpec) -> list[dict[str, Any]]:
    """JSON patch for the node's status subresource: `nvidia.com/gpu` = split * cards."""
    return [
        {
            "op": "add",
            "path": "/status/capacity/nvidia.com~1gpu",
            "value": str(gpu_capacity(tenant)["nvidia.com/gpu"]),
        }
    ]


def calico_pool_env(tenant: TenantSpec) -> dict[str, str]:
    """The calico-node env that sets the IPv4 pool to the tenant's pod CIDR."""
    return {"CALICO_IPV4POOL_CIDR": tenant.pod_cidr}




def worker_container(
    profile: KamajiHamiProfile, lab: str, tenant: TenantSpec, index: int
) -> ContainerSpec:
    """A tenant worker: a kindest/node container on the kind network, labelled for teardown."""
    return ContainerSpec(
        name=worker_name(lab, tenant.name, index),
        image=tenant.workers.image,
        network=profile.management.network,
        labels={
            LABEL_LAB: lab,
            LABEL_TENANT: tenant.name,
            LABEL_ROLE: "worker",
            "io.x-k8s.kind.role": "worker",
        },
    )


@dataclass(frozen=True)
class SharingSizes:
    """Pod sizes verify uses on one card, derived from the card (documented in docs/checks.md).

    share: three pods that must fit together on one card (TC-05);
    a fourth share pod must not fit by cores (TC-06); `big_memory` exceeds the card (TC-07).
    """

    card_id: str
    share_memory: int
    share_cores: int
    big_memory: int
    big_cores: int

    @property
    def applicable(self) -> bool:
        return self.share_cores > 0 and self.share_memory > 0


def sharing_sizes(gpu: GpuSpec, card_id: str) -> SharingSizes:
    """Rule (docs/checks.md): three share pods must fit on one card and a fourth must not.

    Each share pod asks for a quarter of the card's memory (rounded down to 1000 MiB when that is
    possible) and 30% of its cores, or a third when 30% would let a fourth fit; the big pod asks for
    the card's memory rounded up to the next 10000 MiB and at least one of the cores left free.
    Cards where no core size works (1, 2, 4, 5 or 8 cores) or with fewer than four slots get
    no sizes.
    """
    quarter = gpu.memory_mib // 4
    share_memory = (quarter // 1000) * 1000 or quarter
    cores = gpu.cores
    share_cores = (cores * 3) // 10
    if 4 * share_cores <= cores:
        share_cores = cores // 3
    fits_three_not_four = 3 * share_cores <= cores < 4 * share_cores
    if not fits_three_not_four or gpu.split < 4:
        share_cores = 0
    big_memory = (gpu.memory_mib // 10000 + 1) * 10000
    big_cores = max(1, cores - 3 * share_cores)
    return SharingSizes(card_id, share_memory, share_cores, big_memory, big_cores)


def _verify_pod(
    name: str, memory: int, cores: int, card_id: str, check: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": VERIFY_NAMESPACE,
            "labels": {LABEL_MANAGED: "gpulab", "gpulab.dev/check": check},
            "annotations": {"nvidia.com/use-gpuuuid": card_id},
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": VERIFY_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "limits": {
                            "nvidia.com/gpu": "1",
                            "nvidia.com/gpumem": str(memory),
                            "nvidia.com/gpucores": str(cores),
                        }
                    },
                }
            ],
        },
    }


def verify_objects(tenant: TenantSpec) -> list[dict[str, Any]]:
    """The namespace and GPU pods `verify` creates in a tenant (TC-03, TC-05..TC-07)."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": VERIFY_NAMESPACE, "labels": {LABEL_MANAGED: "gpulab"}},
    }
    if not tenant.gpus:
        return [namespace]
    sizes = sharing_sizes(tenant.gpus[0], tenant.device_ids(0)[0])
    if not sizes.applicable:
        return [namespace]
    pods = [
        _verify_pod(f"gpu-share-{i}", sizes.share_memory, sizes.share_cores, sizes.card_id, "TC-05")
        for i in (1, 2, 3)
    ]
    pods.append(
        _verify_pod("gpu-share-4", sizes.share_memory, sizes.share_cores, sizes.card_id, "TC-06")
    )
    pods.append(
        _verify_pod("gpu-mem-big", sizes.big_memory, sizes.big_cores, sizes.card_id, "TC-07")
    )
    return [namespace, *pods]
