"""Tenant workers behave like kind's nodes: the kubelet config Kamaji hands to joining nodes
(after applying gpulab's JSON patches the way Kamaji does) and kube-proxy's configuration.

Kamaji 26.8.2-edge builds the kubelet config from kubeadm's defaults, sets `cgroupDriver` to the
TCP's `cgroupfs` field (empty when unset, so the key is dropped: internal/kubeadm/
uploadconfig.go:83), then applies `configurationJSONPatches` with evanphx/json-patch v5
(uploadconfig.go:98). These tests apply the rendered patches to such a document with a real
RFC 6902 implementation and check what a joining kubelet would read.
"""

from __future__ import annotations

import jsonpatch
import pytest
import yaml

from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from tests.schemas import validate_object

# kubeadm's defaulted KubeletConfiguration as Kamaji uploads it (abridged; no cgroupDriver).
KAMAJI_KUBELET_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "failSwapOn": True,
    "imageGCHighThresholdPercent": 85,
    "imageGCLowThresholdPercent": 80,
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%",
                     "imagefs.available": "15%", "nodefs.inodesFree": "5%"},
    "memorySwap": {},
    "staticPodPath": "/etc/kubernetes/manifests",
}


def _kubelet_config(profile: KamajiHamiProfile, base: dict | None = None) -> dict:
    tcp = render.tenant_control_plane(profile, profile.tenants[0])
    patches = tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]
    return jsonpatch.apply_patch(base or KAMAJI_KUBELET_CONFIG, patches)


def test_kubelet_of_a_tenant_worker_tolerates_swap_like_kinds(profile: KamajiHamiProfile) -> None:
    config = _kubelet_config(profile)
    assert config["failSwapOn"] is False  # kind: failSwapOn: false (laptops have swap)
    assert config["cgroupDriver"] == "systemd"
    assert config["cgroupRoot"] == "/kubelet"


def test_a_full_host_disk_neither_evicts_nor_collects_the_lab_images(
        profile: KamajiHamiProfile) -> None:
    config = _kubelet_config(profile)
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["evictionHard"] == {"nodefs.available": "0%", "nodefs.inodesFree": "0%",
                                      "imagefs.available": "0%"}


def test_the_patches_apply_whether_or_not_kamaji_set_the_keys(profile: KamajiHamiProfile) -> None:
    """`add` works on a missing key and on a present one; `replace` (the upstream sample's op
    at 26.8.2-edge) fails on the missing cgroupDriver, which is why every op is `add`."""
    minimal = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    assert _kubelet_config(profile, minimal)["failSwapOn"] is False
    with_driver = {**KAMAJI_KUBELET_CONFIG, "cgroupDriver": "cgroupfs"}
    assert _kubelet_config(profile, with_driver)["cgroupDriver"] == "systemd"
    tcp = render.tenant_control_plane(profile, profile.tenants[0])
    assert {p["op"] for p in tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]} == {
        "add"}
    with pytest.raises(jsonpatch.JsonPatchConflict):
        jsonpatch.apply_patch(KAMAJI_KUBELET_CONFIG,
                              [{"op": "replace", "path": "/cgroupDriver", "value": "systemd"}])


def test_no_kamaji_kube_proxy_addon(profile: KamajiHamiProfile) -> None:
    for tenant in profile.tenants:
        addons = render.tenant_control_plane(profile, tenant)["spec"]["addons"]
        assert "kubeProxy" not in addons and "coreDNS" in addons and "konnectivity" in addons


@pytest.mark.parametrize("rootless", [False, True])
def test_kube_proxy_runs_with_kinds_settings(profile: KamajiHamiProfile, rootless: bool) -> None:
    tenant = profile.tenants[0]
    objects = render.kube_proxy_objects(tenant, "https://172.18.255.200:6443", rootless=rootless)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "kube-proxy"), ("ClusterRoleBinding", "kubeadm:node-proxier"),
        ("Role", "kube-proxy"), ("RoleBinding", "kube-proxy"), ("ConfigMap", "kube-proxy"),
        ("DaemonSet", "kube-proxy")]
    for obj in objects:
        validate_object(obj)
        assert "kamaji.clastix.io/project" not in obj["metadata"].get("labels", {})
    data = objects[4]["data"]
    config = yaml.safe_load(data["config.conf"])
    assert config["kind"] == "KubeProxyConfiguration"
    assert config["conntrack"]["maxPerCore"] == 0  # kind issue 2240: never raise nf_conntrack_max
    assert config["iptables"]["minSyncPeriod"] == "1s"
    assert config["clusterCIDR"] == tenant.pod_cidr
    assert ("tcpEstablishedTimeout" in config["conntrack"]) is rootless
    kubeconfig = yaml.safe_load(data["kubeconfig.conf"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://172.18.255.200:6443"
    pod = objects[5]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}"
    assert pod["hostNetwork"] is True and pod["serviceAccountName"] == "kube-proxy"
    assert objects[3]["subjects"][0]["name"] == "system:bootstrappers:kubeadm:default-node-token"
