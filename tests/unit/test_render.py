"""What gpulab renders, checked against the write-up and the upstream schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gpulab import naming, stacks
from gpulab.engine.plan import plan_documents, plan_json, plan_yaml
from gpulab.errors import HostError
from gpulab.netcalc import metallb_range
from gpulab.providers.kind import cluster_facts, kind_steps
from gpulab.stacks import common
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import GpuSpec
from tests.schemas import validate_object

# Verbatim from the Kamaji + HAMi write-up (step 3), with ${t} = tenant-a and TENANT_VERSION = v1.36.4.
WRITE_UP_TCP = yaml.safe_load("""
apiVersion: kamaji.clastix.io/v1alpha1
kind: TenantControlPlane
metadata:
 name: tenant-a
 namespace: tenants
 labels:
   tenant.clastix.io: tenant-a
spec:
 controlPlane:
   deployment:
     replicas: 1
   service:
     serviceType: LoadBalancer
 kubernetes:
   version: "v1.36.4"
   kubelet:
     configurationJSONPatches:
       - op: add
         path: /cgroupDriver
         value: systemd
 networkProfile:
   port: 6443
   podCidr: 10.244.0.0/16
 addons:
   coreDNS: {}
   kubeProxy: {}
   konnectivity:
     server:
       port: 8132
     agent:
       mode: DaemonSet
""")
# Verbatim from the write-up's step 5 (tenant-a).
WRITE_UP_TENANT_A_ANNOTATION = (
    '[{"id":"GPU-MOCK-0","count":10,"devmem":81920,"devcore":100,'
    '"type":"NVIDIA-A100-SXM4-80GB","health":true,"numa":0,"mode":"hami-core"}]'
)
KIND_IPAM = [  # `docker network inspect kind` on a default (dual-stack) kind network
    {"Subnet": "fc00:f853:ccd:e793::/64"},
    {"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"},
]


def _leaves(obj: Any, path: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(_leaves(value, f"{path}.{key}" if path else key))
        return out
    return {path: obj}


def test_tenant_control_plane_matches_the_write_up_field_by_field(kamaji_profile) -> None:
    ours = render.tenant_control_plane(kamaji_profile, kamaji_profile.tenants[0])
    theirs, mine = _leaves(WRITE_UP_TCP), _leaves(ours)
    patches = "spec.kubernetes.kubelet.configurationJSONPatches"
    kube_proxy = "spec.addons.kubeProxy"
    for path, value in theirs.items():
        if path in (patches, kube_proxy):
            continue  # the two deliberate differences, below
        assert mine.get(path) == value, path
    # Additions: Kamaji's own default service CIDR made explicit, and a managed-by label.
    assert set(mine) - set(theirs) == {
        "spec.networkProfile.serviceCidr",
        "metadata.labels.app.kubernetes.io/managed-by",
    }
    assert mine["spec.networkProfile.serviceCidr"] == "10.96.0.0/16"
    # 1. the write-up's cgroupDriver patch first, then kind's node settings (swap, GC, eviction)
    assert mine[patches][0] == theirs[patches][0]
    assert {p["path"] for p in mine[patches]} == {
        "/cgroupDriver", "/cgroupRoot", "/failSwapOn", "/imageGCHighThresholdPercent",
        "/evictionHard"}
    # 2. no Kamaji kube-proxy addon: gpulab runs its own with kind's settings
    assert kube_proxy in theirs and kube_proxy not in mine


def test_tenant_a_annotation_matches_the_write_up(kamaji_profile) -> None:
    ours = json.loads(render.gpu_register_annotation(kamaji_profile.tenants[0], 0))
    theirs = json.loads(WRITE_UP_TENANT_A_ANNOTATION)
    assert [{k: v for k, v in d.items() if k != "index"} for d in ours] == theirs
    assert [d["index"] for d in ours] == [0]  # HAMi v2.10's DeviceInfo also carries the index


def test_tenant_b_annotation_matches_the_write_up(kamaji_profile) -> None:
    tenant_b = kamaji_profile.tenants[1]
    cards = json.loads(render.gpu_register_annotation(tenant_b, 0))
    assert [(c["id"], c["devmem"], c["devcore"], c["count"], c["index"]) for c in cards] == [
        ("GPU-MOCK-B0", 24576, 100, 10, 0),
        ("GPU-MOCK-B1", 24576, 100, 10, 1),
    ]
    assert render.gpu_capacity_patch(tenant_b) == [
        {"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "20"}
    ]
    assert render.gpu_capacity(tenant_b) == {
        "nvidia.com/gpu": 20,
        "nvidia.com/gpumem": 49152,
        "nvidia.com/gpucores": 200,
        "nvidia.com/gpumem-percentage": 200,
    }


def test_tenant_a_capacity_matches_the_write_up(kamaji_profile) -> None:
    assert render.gpu_capacity(kamaji_profile.tenants[0]) == {
        "nvidia.com/gpu": 10,
        "nvidia.com/gpumem": 81920,
        "nvidia.com/gpucores": 100,
        "nvidia.com/gpumem-percentage": 100,
    }


@pytest.mark.parametrize(("ipam", "expected"), [
    (KIND_IPAM, "172.18.255.200-172.18.255.250"),
    (list(reversed(KIND_IPAM)), "172.18.255.200-172.18.255.250"),
    ([{"Subnet": "172.19.0.0/24", "Gateway": "172.19.0.1"}], "172.19.0.200-172.19.0.250"),
    ([{"Subnet": "10.77.16.0/20"}, {"Subnet": "fd00::/64"}], "10.77.31.200-10.77.31.250"),
])
def test_metallb_range(ipam, expected) -> None:
    pool = metallb_range(ipam)
    assert str(pool) == expected
    assert pool.size == 51


def test_metallb_range_never_glues_ipv6_to_ipv4() -> None:
    pool = metallb_range(KIND_IPAM)
    assert ":" not in str(pool)


@pytest.mark.parametrize("ipam", [[], None, [{"Subnet": "fc00:f853:ccd:e793::/64"}],
                                  [{"Subnet": "not-a-subnet"}]])
def test_metallb_range_without_ipv4(ipam) -> None:
    with pytest.raises(HostError, match="has no IPv4 subnet"):
        metallb_range(ipam)


def test_metallb_range_subnet_too_small() -> None:
    with pytest.raises(HostError, match="too small for a 51-address MetalLB pool"):
        metallb_range([{"Subnet": "172.20.0.0/26"}])


def test_sharing_sizes_follow_the_write_up_and_the_rule() -> None:
    a100 = render.sharing_sizes(GpuSpec(model="NVIDIA-A100", memory_mib=81920), "GPU-MOCK-0")
    assert (a100.share_memory, a100.share_cores, a100.big_memory, a100.big_cores) == (
        20000, 30, 90000, 10)
    l4 = render.sharing_sizes(GpuSpec(model="NVIDIA-L4", memory_mib=24576), "GPU-MOCK-B0")
    assert (l4.share_memory, l4.share_cores, l4.big_memory, l4.big_cores) == (6000, 30, 30000, 10)
    for cores in range(1, 101):
        for memory in (1, 3, 999, 4000, 24576, 81920, 196608):
            s = render.sharing_sizes(GpuSpec(model="NVIDIA-X", memory_mib=memory, cores=cores), "id")
            if not s.applicable:
                continue
            assert 3 * s.share_cores <= cores < 4 * s.share_cores  # three fit, a fourth does not
            assert 4 * s.share_memory <= memory  # the fourth is refused for cores, not memory
            assert s.big_memory > memory
            assert s.big_cores >= 1


def test_sharing_needs_four_slots() -> None:
    assert not render.sharing_sizes(GpuSpec(model="NVIDIA-X", memory_mib=80000, split=3), "id").applicable


def _all_steps(profile, pool=True):
    facts = cluster_facts(profile, "kamaji-hami", render.cluster_needs(profile), None,
                          lb_range=metallb_range(KIND_IPAM) if pool else None)
    return kind_steps(profile, "kamaji-hami", stacks.for_name("kamaji-hami"), facts)


def test_plan_is_deterministic(kamaji_profile) -> None:
    assert plan_yaml(_all_steps(kamaji_profile)) == plan_yaml(_all_steps(kamaji_profile))
    assert plan_json(_all_steps(kamaji_profile)) == plan_json(_all_steps(kamaji_profile))


def test_plan_order_management_then_tenants(kamaji_profile) -> None:
    names = [step["step"] for step in json.loads(plan_json(_all_steps(kamaji_profile)))]
    assert names[:5] == ["management/cluster", "management/images", "management/cert-manager",
                         "management/metallb", "management/kamaji"]
    assert names[5:13] == [f"tenant-a/{s}" for s in ("control-plane", "workers", "images",
                                                     "join", "kube-proxy", "calico", "hami", "gpus")]
    assert len(names) == 21


def test_plan_documents_hold_every_object_and_validate(kamaji_profile) -> None:
    docs = [doc for _, doc in plan_documents(_all_steps(kamaji_profile))]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("TenantControlPlane") == 2
    assert kinds.count("IPAddressPool") == 1
    assert kinds.count("L2Advertisement") == 1
    assert kinds.count("HelmRelease") == 4  # cert-manager, kamaji, hami per tenant
    assert kinds.count("NodePatch") == 2
    assert kinds.count("WorkerContainer") == 2
    pool = next(d for d in docs if d["kind"] == "IPAddressPool")
    assert pool["spec"]["addresses"] == ["172.18.255.200-172.18.255.250"]
    for doc in docs:
        if doc["apiVersion"] in {"gpulab.dev/v1alpha1", "kind.x-k8s.io/v1alpha4"}:
            continue
        validate_object(doc)


def test_plan_shows_pending_pool_without_docker(kamaji_profile) -> None:
    docs = [doc for _, doc in plan_documents(_all_steps(kamaji_profile, pool=False))]
    pool = next(d for d in docs if d["kind"] == "IPAddressPool")
    assert pool["spec"]["addresses"][0].startswith("<pending")


def test_node_patches_produce_valid_nodes(kamaji_profile) -> None:
    import jsonpatch  # type: ignore[import-untyped]

    for comment, doc in plan_documents(_all_steps(kamaji_profile)):
        if doc["kind"] != "NodePatch":
            continue
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": doc["metadata"]["name"]},
                "status": {"capacity": {"cpu": "2"}}}
        patched = jsonpatch.apply_patch(node, doc["spec"]["statusPatch"])
        patched["metadata"]["annotations"] = doc["spec"]["annotations"]
        validate_object(patched)
        assert "nvidia.com/gpu" in patched["status"]["capacity"], comment


def test_verify_objects_validate(kamaji_profile) -> None:
    for tenant in kamaji_profile.tenants:
        objs = render.verify_objects(tenant)
        assert [o["kind"] for o in objs] == ["Namespace"] + ["Pod"] * 5
        for obj in objs:
            validate_object(obj)
    a_pods = render.verify_objects(kamaji_profile.tenants[0])[1:]
    limits = [p["spec"]["containers"][0]["resources"]["limits"] for p in a_pods]
    assert limits[0] == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000",
                         "nvidia.com/gpucores": "30"}
    assert limits[4]["nvidia.com/gpumem"] == "90000"


def test_worker_container_has_kind_node_flags(kamaji_profile) -> None:
    spec = render.worker_container(kamaji_profile, "lab1", kamaji_profile.tenants[0], 0)
    d = spec.to_dict()
    assert d["name"] == d["hostname"] == "gpulab-lab1-tenant-a-worker"
    assert d["privileged"] is True
    assert d["security_opt"] == ["seccomp=unconfined", "apparmor=unconfined"]
    assert d["tmpfs"] == ["/tmp", "/run"]
    assert "/var (anonymous)" in d["volumes"] and "/lib/modules:/lib/modules:ro" in d["volumes"]
    assert d["labels"][naming.LABEL_LAB] == "lab1"
    assert d["labels"][naming.LABEL_TENANT] == "tenant-a"
    assert d["network"] == "kind"


def test_hami_values_use_mock_plugin_and_resolvable_scheduler(kamaji_profile) -> None:
    release = render.hami_release(kamaji_profile, kamaji_profile.tenants[0])
    values = release.values
    assert values["devicePlugin"]["enabled"] is False
    # the chart's mock would mount the scheduler's device config, which the mock cannot decode:
    # gpulab runs its own (render.hami_mock_plugin; tests/contract/test_pins.py tests the pair)
    assert values["mockDevicePlugin"] == {"enabled": False}
    assert values["scheduler"]["kubeScheduler"]["image"] == {
        "registry": "registry.k8s.io", "repository": "kube-scheduler", "tag": "v1.36.4"}
    # the lock's life is the extender flag (tests/contract/test_rendered_charts.py renders it)
    assert values["scheduler"]["extender"]["extraArgs"] == ["--debug", "-v=4",
                                                            "--node-lock-timeout=5s"]
    assert release.kubeconfig_of == "tenant-a"


def test_profile_values_win_over_gpulab_defaults() -> None:
    merged = common.deep_merge({"a": {"b": 1, "c": [1]}, "d": 1}, {"a": {"c": [2]}, "e": None})
    assert merged == {"a": {"b": 1, "c": [2]}, "d": 1, "e": None}


def test_metallb_range_steps_below_other_labs_pools() -> None:
    import ipaddress

    taken = [(ipaddress.IPv4Address("172.18.255.200"), ipaddress.IPv4Address("172.18.255.250")),
             (ipaddress.IPv4Address("172.18.255.149"), ipaddress.IPv4Address("172.18.255.199"))]
    assert str(metallb_range(KIND_IPAM, avoid=taken)) == "172.18.255.98-172.18.255.148"
    assert str(metallb_range(KIND_IPAM, avoid=taken[1:])) == "172.18.255.200-172.18.255.250"
    small = [{"Subnet": "172.19.0.0/24"}]
    with pytest.raises(HostError, match="too small"):
        metallb_range(small, avoid=[(ipaddress.IPv4Address("172.19.0.129"),
                                     ipaddress.IPv4Address("172.19.0.250"))])


def test_mock_plugin_rbac_matches_upstream(kamaji_profile) -> None:
    """mock-device-plugin v1.0.1's k8s-mock-rbac.yaml, object for object (gpulab's labels
    aside): the chart's mock is off, so its RBAC is gpulab's to create."""
    from tests.schemas import pinned_data

    release = render.hami_release(kamaji_profile, kamaji_profile.tenants[0])
    ours = render.hami_mock_rbac(release)
    upstream = list(yaml.safe_load_all((pinned_data() / "hami_mock_k8s-mock-rbac.yaml").read_text()))
    def strip(obj):
        meta = {k: v for k, v in obj["metadata"].items() if k not in {"labels", "annotations"}}
        return {**obj, "metadata": meta}
    def canon(objs):
        return sorted(json.dumps(o, sort_keys=True) for o in objs)
    assert canon(map(strip, ours)) == canon(upstream)
    for obj in ours:
        validate_object(obj)
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpulab"
