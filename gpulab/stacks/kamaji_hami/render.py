"""kamaji-hami's pure renderers: profile (+ host facts) → the exact objects gpulab creates or
patches.

Nothing here does I/O. `plan` prints these, `up` applies them and the tests validate them against
the upstream schemas in tests/data/pinned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.adapters.base import ContainerSpec, HelmRelease
from gpulab.naming import LABEL_LAB, LABEL_MANAGED, LABEL_ROLE, LABEL_TENANT
from gpulab.providers.base import AddressNeed, ClusterNeeds
from gpulab.stacks.common import VERIFY_IMAGE, helm_release
from gpulab.verify.hami import (
    CORDON_ANNOTATION,
    MIG_MODE,
    SharingSizes,
    decode_register,
    share_pod,
    sharing_sizes,
)
from gpulab.verify.observe import VERIFY_NAMESPACE

if TYPE_CHECKING:
    from gpulab.netcalc import AddressRange
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

__all__ = [
    "MACHINES",
    "CardSurvey",
    "SharingSizes",
    "VerifyCard",
    "calico_pool_env",
    "cluster_needs",
    "gpu_capacity",
    "gpu_capacity_patch",
    "gpu_register_annotation",
    "hami_mock_plugin",
    "hami_mock_rbac",
    "hami_release",
    "kamaji_release",
    "konnectivity_images",
    "kube_proxy_config",
    "kube_proxy_objects",
    "kubelet_config_patches",
    "machine_card",
    "machine_cards",
    "metallb_objects",
    "mock_device_config",
    "profile_card",
    "registered_cards",
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


def cluster_needs(profile: KamajiHamiProfile) -> ClusterNeeds:
    """What the management cluster must have: one node (the tenants' workers are containers
    beside it, not nodes of it), addresses MetalLB hands out to the tenants' control
    planes (`components.metallb`: the pool's size and its offset from the subnet's top), and
    each tenant's API reachable from this host (api_route.tenant_api_port)."""
    from gpulab.stacks.kamaji_hami.api_route import tenant_api_port

    metallb = profile.components.metallb
    return ClusterNeeds(ports=tuple(tenant_api_port(profile, t) for t in profile.tenants),
                        load_balancer=AddressNeed("MetalLB range", metallb.pool_size,
                                                  metallb.pool_offset_from_top))


def kamaji_release(profile: KamajiHamiProfile) -> HelmRelease:
    """Kamaji at the profile's image tag. The chart's `image.pullPolicy: Always`
    (charts/kamaji/values.yaml:11 at 26.8.2-edge) would pull again the image gpulab preloaded
    into the kind node, so it is IfNotPresent."""
    kamaji = profile.components.kamaji
    return helm_release(kamaji, {"image": {"tag": kamaji.image_tag,
                                           "pullPolicy": "IfNotPresent"}})


HAMI_EXTENDER_DEFAULT_ARGS = ("--debug", "-v=4")  # charts/hami/values.yaml:156-158 at v2.10.0


def hami_release(profile: KamajiHamiProfile, tenant: TenantSpec) -> HelmRelease:
    """HAMi without any device plugin of its own: the real NVIDIA plugin is off (no `gpu=on`
    label) and the chart's mock is off too, because it would mount the scheduler's device
    ConfigMap, which mock-device-plugin v1.0.1 cannot decode (see `hami_mock_plugin`)."""
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
        "mockDevicePlugin": {"enabled": False},
    }
    values["scheduler"]["patch"] = {"imageNew": dict(HAMI_CERTGEN_IMAGE)}
    return helm_release(hami, values, cluster=tenant.name)


# The certificate jobs' image. HAMi's chart defaults to docker.io/liangjw/kube-webhook-certgen:
# v1.1.1 (charts/hami/values.yaml `scheduler.patch.imageNew` at v2.10.0, used from Kubernetes
# 1.22 on: templates/scheduler/job-patch/job-createSecret.yaml:40-42), a personal re-push with no
# build files to say which platforms it holds. The upstream image of that version is multi-arch
# (linux/amd64, arm, arm64, s390x: kubernetes/ingress-nginx controller-v1.1.1
# images/kube-webhook-certgen/Makefile:31), pinned by the digest ingress-nginx itself ships
# (deploy/static/provider/cloud/deploy.yaml:610, k8s.gcr.io, which redirects to registry.k8s.io);
# it takes every flag the chart passes (rootfs/cmd/create.go:39-43, patch.go:112-116). The tag
# field carries the digest: the chart prints `registry/repository:tag` (templates/_commons.tpl:18).
HAMI_CERTGEN_IMAGE = {
    "registry": "registry.k8s.io",
    "repository": "ingress-nginx/kube-webhook-certgen",
    "tag": "v1.1.1@sha256:64d8c73dca984af206adf9d6d7e46aa550362b1d7a01f3a0a91b20cc67868660",
}


MOCK_PLUGIN = "hami-mock-device-plugin"
MOCK_PLUGIN_ACCOUNT = MOCK_PLUGIN
MOCK_DEVICE_CONFIG = "hami-mock-device-config"
SCHEDULER_DEVICE_CONFIG = "hami-scheduler-device"  # the chart's ConfigMap (<scheduler>-device)
MOCK_PLUGIN_IMAGE = "docker.io/projecthami/mock-device-plugin"  # values.yaml mockDevicePlugin
# The sections of the device config mock-device-plugin v1.0.1 acts on: InitDevicesWithConfig
# (internal/pkg/config/config.go:73-108) initialises Ascend from `vnpus`, Hygon from `hygon` and
# NVIDIA from `nvidia`; every other device is commented out there. `vnpus` is left out on purpose:
# HAMi's chart renders it as a mapping since v2.9.0 (templates/scheduler/device-configmap.yaml at
# v2.10.0: `vnpus: {hamiVnpuCore, configs: [...]}`) while the mock declares
# `VNPUs []ascend.VNPUConfig yaml:"vnpus"` (config.go:51) and decodes with gopkg.in/yaml.v2, whose
# type error reaches klog.Fatalf (config.go:117-120): the plugin would exit at start and no mock
# GPU would ever be advertised. Fixed upstream after v1.0.1 (mock-device-plugin PR #18). Without
# `vnpus` the mock initialises no Ascend device, which a lab of NVIDIA cards does not need.
MOCK_READS = ("nvidia", "hygon")


def mock_device_config(scheduler_device_config: str) -> str:
    """The device config the mock reads: the `nvidia` and `hygon` sections of HAMi's own
    `hami-scheduler-device` ConfigMap (`device-config.yaml`), copied unchanged so that the mock and
    the scheduler agree on every resource name and factor, and nothing the mock cannot decode."""
    loaded = yaml.safe_load(scheduler_device_config)
    if not isinstance(loaded, dict) or not isinstance(loaded.get("nvidia"), dict):
        raise ValueError("HAMi's device config has no `nvidia` section")
    return yaml.safe_dump({key: loaded[key] for key in MOCK_READS if key in loaded},
                          sort_keys=False)


def hami_mock_rbac(release: HelmRelease) -> list[dict[str, Any]]:
    """The mock device plugin's ServiceAccount and node RBAC, as mock-device-plugin's
    k8s-mock-rbac.yaml (v1.0.1) has them."""
    labels = {LABEL_MANAGED: "gpulab"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, "namespace": release.namespace,
                      "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["nodes"],
                    "verbs": ["get", "update", "list", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": MOCK_PLUGIN_ACCOUNT, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": MOCK_PLUGIN_ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": MOCK_PLUGIN_ACCOUNT,
                       "namespace": release.namespace}]},
    ]


def hami_mock_plugin(profile: KamajiHamiProfile, release: HelmRelease,
                     device_config: str) -> list[dict[str, Any]]:
    """The mock device plugin's own ConfigMap (`mock_device_config`) and its DaemonSet: the
    chart's mock DaemonSet (templates/device-plugin/daemonsetmock.yaml at v2.10.0, rendered with
    the chart's defaults) with one change, the ConfigMap it mounts as /device-config.yaml."""
    labels = {"app.kubernetes.io/component": MOCK_PLUGIN, "app.kubernetes.io/instance": "hami",
              "app.kubernetes.io/name": "hami"}
    owned = {LABEL_MANAGED: "gpulab"}
    tag = profile.components.hami.mock_device_plugin_tag
    config_map = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": MOCK_DEVICE_CONFIG, "namespace": release.namespace,
                     "labels": owned},
        "data": {"device-config.yaml": device_config},
    }
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": MOCK_PLUGIN, "namespace": release.namespace, "labels": owned},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"annotations": {"scheduler.alpha.kubernetes.io/critical-pod": ""},
                             "labels": dict(labels)},
                "spec": {
                    "serviceAccountName": MOCK_PLUGIN_ACCOUNT,
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "containers": [{
                        "image": f"{MOCK_PLUGIN_IMAGE}:{tag}",
                        "imagePullPolicy": "IfNotPresent",
                        "name": "hami-mock-dp-cntr",
                        "env": [{"name": "NODE_NAME", "valueFrom": {
                            "fieldRef": {"fieldPath": "spec.nodeName"}}}],
                        "command": ["./k8s-device-plugin", "-v=5",
                                    "--device-config-file=/device-config.yaml"],
                        "volumeMounts": [
                            {"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"},
                            {"name": "sys", "mountPath": "/sys"},
                            {"name": "device-config", "mountPath": "/device-config.yaml",
                             "subPath": "device-config.yaml"},
                        ],
                    }],
                    "volumes": [
                        {"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
                        {"name": "sys", "hostPath": {"path": "/sys"}},
                        {"name": "device-config", "configMap": {"name": MOCK_DEVICE_CONFIG}},
                    ],
                },
            },
        },
    }
    return [config_map, daemonset]


# Kamaji (26.8.2-edge) runs Konnectivity from the CRD's default images
# (api/v1alpha1/tenantcontrolplane_types.go:401,421: registry.k8s.io/kas-network-proxy/proxy-
# {server,agent}) at a tag it derives from the tenant's Kubernetes minor when `version` is unset,
# as gpulab leaves it: `v0.<minor>.0` (internal/builders/controlplane/konnectivity_server.go:48,59
# for the server, a container of the control-plane pod in the management cluster;
# internal/resources/konnectivity/agent.go:45-50,251 for the agent in the tenant).
KONNECTIVITY_IMAGES = "registry.k8s.io/kas-network-proxy/proxy-"


def konnectivity_images(tenant: TenantSpec) -> tuple[str, str]:
    """(server, agent) images Kamaji runs for this tenant's Konnectivity."""
    minor = int(tenant.kubernetes_version.lstrip("v").split(".")[1])
    tag = f"v0.{minor}.0"
    return f"{KONNECTIVITY_IMAGES}server:{tag}", f"{KONNECTIVITY_IMAGES}agent:{tag}"


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


def tenant_control_plane(profile: KamajiHamiProfile, tenant: TenantSpec,
                         host: str | None = None) -> dict[str, Any]:
    """The TenantControlPlane of the write-up, parameterised by the profile; `host`: the name
    this host reaches its API by, which the certificate must cover (api_route.cert_sans)."""
    from gpulab.stacks.kamaji_hami.api_route import cert_sans

    cp = tenant.control_plane
    sans = cert_sans(host) if host else []
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
                "kubelet": {"configurationJSONPatches": kubelet_config_patches(tenant)},
            },
            "networkProfile": {
                "port": cp.port,
                "podCidr": tenant.pod_cidr,
                "serviceCidr": tenant.service_cidr,
                **({"certSANs": sans} if sans else {}),
            },
            # No `kubeProxy` addon: Kamaji's takes no kube-proxy settings and rewrites its
            # ConfigMap on every reconcile (internal/resources/addons/kube_proxy.go:285-297 at
            # 26.8.2-edge), so gpulab runs kube-proxy itself with kind's settings
            # (`kube_proxy_objects`, the tenant's `kube-proxy` step).
            "addons": {
                "coreDNS": {},
                "konnectivity": {
                    "server": {"port": cp.konnectivity_port},
                    "agent": {"mode": cp.konnectivity_agent_mode},
                },
            },
        },
    }


def kubelet_config_patches(tenant: TenantSpec) -> list[dict[str, Any]]:
    """JSON patches Kamaji applies to the kubelet config it uploads for joining nodes
    (`spec.kubernetes.kubelet.configurationJSONPatches`, applied in
    internal/resources/kubeadm_phases.go:154-169 and internal/kubeadm/uploadconfig.go:75-109 at
    26.8.2-edge): the settings kind gives its own nodes (pkg/cluster/internal/kubeadm/config.go,
    KubeletConfiguration, v0.33): the systemd cgroup driver, swap tolerated (laptops have swap;
    kubeadm's Swap preflight check only warns), and image GC / eviction off, because the kubelet
    sees the host's disk and must not evict pods or collect the lab's preloaded images when it
    fills up. Every op is `add`: Kamaji leaves `cgroupDriver` out when the TCP does not set it,
    and `replace` of a missing key fails (json-patch v5), while `add` sets present keys too."""
    return [
        {"op": "add", "path": "/cgroupDriver", "value": tenant.control_plane.kubelet_cgroup_driver},
        {"op": "add", "path": "/cgroupRoot", "value": "/kubelet"},
        {"op": "add", "path": "/failSwapOn", "value": False},
        {"op": "add", "path": "/imageGCHighThresholdPercent", "value": 100},
        {"op": "add", "path": "/evictionHard", "value": {
            "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"}},
    ]


KUBE_PROXY = "kube-proxy"
NODE_BOOTSTRAPPERS = "system:bootstrappers:kubeadm:default-node-token"


def kube_proxy_config(tenant: TenantSpec, *, rootless: bool = False) -> dict[str, Any]:
    """kube-proxy's configuration as kind writes it for its nodes (config.go v0.33,
    KubeProxyConfiguration): `conntrack.maxPerCore: 0` so kube-proxy does not try to raise the
    host's nf_conntrack_max from inside a container (which fails on many-core hosts and makes it
    exit, kind issue 2240), `iptables.minSyncPeriod: 1s`; on rootless Docker the conntrack
    timeouts it cannot set are left alone (0s), as kind does."""
    conntrack: dict[str, Any] = {"maxPerCore": 0}
    if rootless:
        conntrack |= {"tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "bindAddress": "0.0.0.0",
        "clientConnection": {"kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf"},
        "clusterCIDR": tenant.pod_cidr,
        "mode": "iptables",
        "iptables": {"minSyncPeriod": "1s"},
        "conntrack": conntrack,
    }


def kube_proxy_objects(tenant: TenantSpec, server: str, *, rootless: bool = False
                       ) -> list[dict[str, Any]]:
    """The six objects kubeadm's kube-proxy addon creates (cmd/kubeadm/app/phases/addons/proxy:
    ServiceAccount, ClusterRoleBinding to system:node-proxier, Role/RoleBinding letting joining
    nodes read the ConfigMap, the ConfigMap, the DaemonSet), with kind's configuration. `server`
    is the tenant API's URL (its admin kubeconfig's). Labelled managed-by gpulab and never with
    Kamaji's `kamaji.clastix.io/project` label, which its addon clean-up deletes by."""
    labels = {LABEL_MANAGED: "gpulab"}
    meta = {"namespace": "kube-system", "labels": labels}
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": {
            "certificate-authority": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
            "server": server}}],
        "contexts": [{"name": "default", "context": {"cluster": "default",
                                                     "namespace": "default", "user": "default"}}],
        "current-context": "default",
        "users": [{"name": "default", "user": {
            "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}],
    }
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": KUBE_PROXY, **meta}},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding",
         "metadata": {"name": "kubeadm:node-proxier", "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "system:node-proxier"},
         "subjects": [{"kind": "ServiceAccount", "name": KUBE_PROXY,
                       "namespace": "kube-system"}]},
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": KUBE_PROXY, **meta},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                    "resourceNames": [KUBE_PROXY]}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": KUBE_PROXY, **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": KUBE_PROXY},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                       "name": NODE_BOOTSTRAPPERS}]},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": KUBE_PROXY, "namespace": "kube-system",
                      "labels": {**labels, "app": KUBE_PROXY}},
         "data": {"kubeconfig.conf": yaml.safe_dump(kubeconfig, sort_keys=False),
                  "config.conf": yaml.safe_dump(kube_proxy_config(tenant, rootless=rootless),
                                                sort_keys=False)}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": KUBE_PROXY, "namespace": "kube-system",
                      "labels": {**labels, "k8s-app": KUBE_PROXY}},
         "spec": {
             "selector": {"matchLabels": {"k8s-app": KUBE_PROXY}},
             "updateStrategy": {"type": "RollingUpdate"},
             "template": {
                 "metadata": {"labels": {"k8s-app": KUBE_PROXY}},
                 "spec": {
                     "priorityClassName": "system-node-critical",
                     "containers": [{
                         "name": KUBE_PROXY,
                         "image": f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}",
                         "imagePullPolicy": "IfNotPresent",
                         "command": ["/usr/local/bin/kube-proxy",
                                     "--config=/var/lib/kube-proxy/config.conf",
                                     "--hostname-override=$(NODE_NAME)"],
                         "securityContext": {"privileged": True},
                         "volumeMounts": [
                             {"mountPath": "/var/lib/kube-proxy", "name": KUBE_PROXY},
                             {"mountPath": "/run/xtables.lock", "name": "xtables-lock",
                              "readOnly": False},
                             {"mountPath": "/lib/modules", "name": "lib-modules",
                              "readOnly": True}],
                         "env": [{"name": "NODE_NAME", "valueFrom": {
                             "fieldRef": {"fieldPath": "spec.nodeName"}}}],
                     }],
                     "hostNetwork": True,
                     "serviceAccountName": KUBE_PROXY,
                     "volumes": [
                         {"name": KUBE_PROXY, "configMap": {"name": KUBE_PROXY}},
                         {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock",
                                                               "type": "FileOrCreate"}},
                         {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}],
                     "tolerations": [{"operator": "Exists"}],
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                 },
             },
         }},
    ]


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


def _verify_pod(
    name: str, memory: int, cores: int, card_id: str, check: str
) -> dict[str, Any]:
    return share_pod(name, VERIFY_NAMESPACE, {LABEL_MANAGED: "gpulab", "gpulab.dev/check": check},
                     VERIFY_IMAGE, memory=memory, cores=cores, card_id=card_id)


# A tenant whose workers are machines that joined it (`gpulab join`, an existing cluster's
# `cluster.workers: machines`): verify judges the GPUs they register, not the profile's mock ones.
MACHINES = "machines"


@dataclass(frozen=True)
class VerifyCard:
    """The card verify pins its GPU pods to and sizes them from (render.sharing_sizes): the
    profile's first mock card, or on joined machines the first card their device plugin
    registered (`node`: the node that registered it; '' for the profile's)."""

    device_id: str
    model: str
    memory_mib: int
    cores: int
    split: int
    node: str = ""


def profile_card(tenant: TenantSpec) -> VerifyCard | None:
    """The profile's first mock card of the tenant's first worker (None: no GPUs)."""
    if not tenant.gpus:
        return None
    gpu = tenant.gpus[0]
    return VerifyCard(tenant.device_ids(0)[0], gpu.model, gpu.memory_mib, gpu.cores, gpu.split)


def registered_cards(node: dict[str, Any]) -> list[VerifyCard] | None:
    """The cards a node's HAMi device plugin registered, as HAMi decodes them
    (gpulab.verify.hami.decode_register); None when HAMi gets none from the node."""
    meta = node.get("metadata") or {}
    cards = decode_register((meta.get("annotations") or {}).get(GPU_REGISTER_ANNOTATION))
    if cards is None:
        return None
    return [VerifyCard(str(c["id"]), str(c["type"]), int(c["devmem"]), int(c["devcore"]),
                       int(c["count"]), str(meta.get("name") or "")) for c in cards
            if c["health"] is True and c["mode"] != MIG_MODE]


@dataclass(frozen=True)
class CardSurvey:
    """Every card the nodes of a tenant register with HAMi (as HAMi decodes them), nodes in
    name order, sorted by what verify can do with it: `usable` (healthy, not MIG, not
    cordoned: its GPU pods can be sized from one), and, as 'node card-id' texts, the healthy
    cards in MIG mode (with their MIG profiles' names), the cordoned ones and the unhealthy
    ones."""

    usable: tuple[VerifyCard, ...] = ()
    mig: tuple[str, ...] = ()
    cordoned: tuple[str, ...] = ()
    unhealthy: tuple[str, ...] = ()


def machine_cards(nodes: tuple[dict[str, Any], ...] | list[dict[str, Any]] | None
                  ) -> CardSurvey:
    """What HAMi registered on joined machines (CardSurvey). A card in MIG mode is registered
    with `mode: "mig"` and its MIG profiles (HAMi v2.10.0 pkg/device-plugin/nvidiadevice/
    nvinternal/plugin/register.go:104,175-202: the whole node's plugin runs in that mode, a
    card gets all 100 cores and, as `count`, its largest profile's instance count); HAMi then
    grants a pod a whole MIG instance (pkg/device/nvidia/device.go:601-644,645-659). A card
    the plugin found no MIG profile for is not registered at all (register.go:192-195)."""
    usable: list[VerifyCard] = []
    mig: list[str] = []
    cordoned_cards: list[str] = []
    unhealthy: list[str] = []
    for node in sorted(nodes or (), key=lambda n: str((n.get("metadata") or {}).get("name"))):
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        notes = meta.get("annotations") or {}
        cordoned = {u.strip() for u in str(notes.get(CORDON_ANNOTATION) or "").split(",")}
        for c in decode_register(notes.get(GPU_REGISTER_ANNOTATION)) or ():
            where = f"{name} {c['id']}"
            if c["health"] is not True:
                unhealthy.append(where)
            elif c["mode"] == MIG_MODE:
                profiles = [str(p.get("name")) for p in c["migprofiles"] if isinstance(p, dict)]
                mig.append(f"{where} (MIG profiles {', '.join(profiles) or 'none'})")
            elif str(c["id"]) in cordoned:
                cordoned_cards.append(where)
            else:
                usable.append(VerifyCard(str(c["id"]), str(c["type"]), int(c["devmem"]),
                                         int(c["devcore"]), int(c["count"]), name))
    return CardSurvey(tuple(usable), tuple(mig), tuple(cordoned_cards), tuple(unhealthy))


def machine_card(nodes: tuple[dict[str, Any], ...] | list[dict[str, Any]] | None
                 ) -> VerifyCard | None:
    """The card verify uses on joined machines: the first healthy card that is not in MIG mode
    nor cordoned (`hami.io/device-cordon`), of the nodes in name order (None: no such card)."""
    usable = machine_cards(nodes).usable
    return usable[0] if usable else None


def verify_objects(tenant: TenantSpec, card: VerifyCard | None = None
                   ) -> list[dict[str, Any]]:
    """The namespace and GPU pods `verify` creates in a tenant (TC-03, TC-05..TC-07), sized for
    `card` (default: the profile's first mock card)."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": VERIFY_NAMESPACE, "labels": {LABEL_MANAGED: "gpulab"}},
    }
    card = card or profile_card(tenant)
    if card is None:
        return [namespace]
    sizes = sharing_sizes(card, card.device_id)
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
