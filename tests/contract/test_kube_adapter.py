"""Contract tests of `KubeClient` over HTTP against kmock's `KubernetesEmulator`.

They pin what goes over the wire (verbs, paths, query, content types, bodies) and what the adapter
makes of the answers. kmock limits that shape these tests (see B6): no server-side apply on missing
objects (the adapter's documented create fallback is exercised instead), selectors ignored (the
adapter filters again client-side), namespaces not served, no server-populated metadata.
"""

from __future__ import annotations

import base64
import json
import socket
from typing import TYPE_CHECKING, Any

import kmock
import pytest
import yaml
from kmock import Response  # type: ignore[attr-defined]  # exported, not in __all__
from tenacity import stop_after_attempt, wait_none

from gpulab.adapters.kube import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    KubeApiError,
    KubeClient,
    RetryPolicy,
    label_selector_matches,
)
from gpulab.errors import AdapterError
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.steps import TenantControlPlane
from tests import kube_wire

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

    from .conftest import Emulator

TCP = "kamaji.clastix.io/v1alpha1/tenantcontrolplanes"
TCP_PATH = "/apis/kamaji.clastix.io/v1alpha1/namespaces/tenants/tenantcontrolplanes"
SSA_QUERY = "fieldManager=gpulab&force=true"
JSON = "application/json"


@pytest.fixture
def tenant(kamaji_profile: KamajiHamiProfile) -> TenantSpec:
    return kamaji_profile.tenants[0]


def _as_gateway(client: KubeClient) -> KubeGateway:
    return client  # mypy: KubeClient implements the KubeGateway protocol


def _node(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, **meta},
        "status": {"capacity": {"cpu": "8", "memory": "16Gi"}, "allocatable": {"cpu": "8"}},
    }


def _status(code: int, reason: str, message: str) -> Response:
    return Response(status=code, payload={
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "code": code, "reason": reason, "message": message,
    })


# --------------------------------------------------------------------------- TenantControlPlane


def test_tcp_create_ready_status_and_admin_kubeconfig(
    emulator: Emulator, kube: KubeClient, kamaji_profile: KamajiHamiProfile, tenant: TenantSpec
) -> None:
    tcp = render.tenant_control_plane(kamaji_profile, tenant)

    live = kube.apply(tcp)

    assert live == tcp
    assert emulator.stored(TCP, "tenants", "tenant-a") == tcp
    # kmock answers SSA on a missing object with 404: the adapter falls back to a create.
    assert emulator.calls() == [
        ("PATCH", f"{TCP_PATH}/tenant-a?{SSA_QUERY}", APPLY_PATCH),
        ("POST", f"{TCP_PATH}?fieldManager=gpulab", JSON),
    ]
    assert [r.data for r in emulator.requests()] == [tcp, tcp]

    step = TenantControlPlane(kamaji_profile, tenant)
    assert step._ready(kube) == (False, "status Unknown")

    # What Kamaji's controller would write once the control plane is up.
    emulator.km.objects[kmock.resource(TCP), "tenants", "tenant-a"].patch({"status": {
        "controlPlaneEndpoint": "172.18.255.200:6443",
        "kubernetesResources": {"version": {"status": "Ready", "version": "v1.36.4"}},
    }})
    got = kube.get("kamaji.clastix.io/v1alpha1", "TenantControlPlane", "tenant-a", "tenants")
    assert got is not None
    assert got["status"]["kubernetesResources"]["version"]["status"] == "Ready"
    assert step._ready(kube) == (True, "status Ready, endpoint 172.18.255.200:6443")

    admin_conf = b"apiVersion: v1\nkind: Config\nclusters: []\n"
    emulator.seed("v1/secrets", "tenants", "tenant-a-admin-kubeconfig", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tenant-a-admin-kubeconfig", "namespace": "tenants"},
        "data": {"admin.conf": base64.b64encode(admin_conf).decode()},
    })
    assert kube.secret_data("tenant-a-admin-kubeconfig", "tenants", "admin.conf") == admin_conf
    assert kube.secret_data("tenant-a-admin-kubeconfig", "tenants", "super-admin.conf") is None
    assert kube.secret_data("tenant-b-admin-kubeconfig", "tenants", "admin.conf") is None
    assert emulator.calls()[-3:] == [
        ("GET", "/api/v1/namespaces/tenants/secrets/tenant-a-admin-kubeconfig", ""),
        ("GET", "/api/v1/namespaces/tenants/secrets/tenant-a-admin-kubeconfig", ""),
        ("GET", "/api/v1/namespaces/tenants/secrets/tenant-b-admin-kubeconfig", ""),
    ]


def test_reapply_is_one_server_side_apply(
    emulator: Emulator, kube: KubeClient, kamaji_profile: KamajiHamiProfile, tenant: TenantSpec
) -> None:
    tcp = render.tenant_control_plane(kamaji_profile, tenant)
    kube.apply(tcp)
    before = len(emulator.requests())

    again = kube.apply(tcp)

    assert again == tcp
    assert emulator.stored(TCP, "tenants", "tenant-a") == tcp
    assert emulator.calls()[before:] == [("PATCH", f"{TCP_PATH}/tenant-a?{SSA_QUERY}", APPLY_PATCH)]
    assert emulator.requests()[-1].data == tcp  # the full intent, every time


def test_apply_dry_run_is_sent_on_every_request(emulator: Emulator, kube: KubeClient) -> None:
    issuer = {
        "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
        "metadata": {"name": "gpulab-webhook-probe", "namespace": "cert-manager"},
        "spec": {"selfSigned": {}},
    }
    emulator.km.resources["cert-manager.io/v1/issuers"] = kmock.ResourceInfo(
        kind="Issuer", namespaced=True, verbs={"create", "get", "patch"})

    kube.apply(issuer, dry_run=True)

    path = "/apis/cert-manager.io/v1/namespaces/cert-manager/issuers"
    assert emulator.calls() == [
        ("PATCH", f"{path}/gpulab-webhook-probe?{SSA_QUERY}&dryRun=All", APPLY_PATCH),
        ("POST", f"{path}?fieldManager=gpulab&dryRun=All", JSON),
    ]


def test_apply_415_falls_back_to_create_then_merge_patch(
    emulator: Emulator, kube: KubeClient
) -> None:
    """A server without server-side apply: create; on 409 (exists) merge-patch the object."""
    emulator.seed("v1/configmaps", "kube-system", "cfg", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "kube-system"}, "data": {"a": "1"},
    })
    emulator.km["patch", kmock.headers({"Content-Type": APPLY_PATCH})] << 415
    wanted = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cfg", "namespace": "kube-system"}, "data": {"a": "2"}}

    kube.apply(wanted)

    path = "/api/v1/namespaces/kube-system/configmaps"
    assert emulator.calls() == [
        ("PATCH", f"{path}/cfg?{SSA_QUERY}", APPLY_PATCH),
        ("POST", f"{path}?fieldManager=gpulab", JSON),
        ("PATCH", f"{path}/cfg?fieldManager=gpulab", MERGE_PATCH),
    ]
    assert emulator.stored("v1/configmaps", "kube-system", "cfg")["data"] == {"a": "2"}


def test_apply_404_twice_reports_the_apply(emulator: Emulator, kube: KubeClient) -> None:
    """SSA 404 and create 404 (a real server: namespace missing) → the apply's error is raised."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cfg", "namespace": "missing"}}
    path = "/api/v1/namespaces/missing/configmaps"
    emulator.km[f"post {path}"] << _status(404, "NotFound", 'namespaces "missing" not found')

    with pytest.raises(KubeApiError) as info:
        kube.apply(obj)

    # kmock's own 404 for the PATCH of a missing object, not the create's.
    assert str(info.value).startswith(
        f"apply ConfigMap missing/cfg at {emulator.url}: 404 Object Not Found: "
    )
    assert [m for m, _, _ in emulator.calls()] == ["PATCH", "POST"]


def test_apply_namespace_and_cluster_scoped_objects(
    emulator: Emulator, kube: KubeClient
) -> None:
    # kmock cannot serve namespaces (path-parsing bug): answer the request with a canned object.
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenants"}}
    emulator.km["patch /api/v1/namespaces/tenants"] << namespace
    assert kube.apply(namespace) == namespace

    node = _node("n1")
    kube.apply({**node, "metadata": {**node["metadata"], "namespace": "ignored"}})

    assert emulator.calls() == [
        ("PATCH", f"/api/v1/namespaces/tenants?{SSA_QUERY}", APPLY_PATCH),
        ("PATCH", f"/api/v1/nodes/n1?{SSA_QUERY}", APPLY_PATCH),
        ("POST", "/api/v1/nodes?fieldManager=gpulab", JSON),
    ]
    assert emulator.stored("v1/nodes", None, "n1") == node  # namespace dropped: cluster-scoped
    assert emulator.requests()[-1].data == node


def test_apply_metallb_objects(
    emulator: Emulator, kube: KubeClient, kamaji_profile: KamajiHamiProfile
) -> None:
    from gpulab.netcalc import metallb_range

    pool = metallb_range(
        [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}, {"Subnet": "fc00:f853::/64"}],
        size=51, offset_from_top=5, network="kind",
    )
    for obj in render.metallb_objects(kamaji_profile, pool):
        kube.apply(obj)
        kube.apply(obj)

    stored = emulator.stored("metallb.io/v1beta1/ipaddresspools", "metallb-system", "kind-ip-pool")
    assert stored["spec"] == {"addresses": [str(pool)]}
    assert emulator.exists("metallb.io/v1beta1/l2advertisements", "metallb-system", "kind-ip-pool")
    posts = [p for m, p, _ in emulator.calls() if m == "POST"]
    assert posts == [
        "/apis/metallb.io/v1beta1/namespaces/metallb-system/ipaddresspools?fieldManager=gpulab",
        "/apis/metallb.io/v1beta1/namespaces/metallb-system/l2advertisements?fieldManager=gpulab",
    ]


def test_unknown_kind_is_discovered_once(emulator: Emulator, kube: KubeClient) -> None:
    ippool = {"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
              "metadata": {"name": "default-ipv4-ippool"}, "spec": {"cidr": "10.244.0.0/16"}}

    kube.apply(ippool)
    kube.apply(ippool)

    base = "/apis/crd.projectcalico.org/v1"
    assert [(m, p) for m, p, _ in emulator.calls()] == [
        ("GET", base),
        ("PATCH", f"{base}/ippools/default-ipv4-ippool?{SSA_QUERY}"),
        ("POST", f"{base}/ippools?fieldManager=gpulab"),
        ("PATCH", f"{base}/ippools/default-ipv4-ippool?{SSA_QUERY}"),
    ]
    assert emulator.stored("crd.projectcalico.org/v1/ippools", None, "default-ipv4-ippool") == ippool


def test_kinds_the_server_does_not_serve(emulator: Emulator, kube: KubeClient) -> None:
    assert kube.get("example.com/v1", "Widget", "w", "default") is None
    assert kube.list_objects("example.com/v1", "Widget") == []
    assert kube.delete("example.com/v1", "Widget", "w", "default") is False
    with pytest.raises(AdapterError, match=r"kind Widget is not served in example.com/v1"):
        kube.apply({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert {p for _, p, _ in emulator.calls()} == {"/apis/example.com/v1"}


def test_apply_needs_identity(kube: KubeClient) -> None:
    with pytest.raises(AdapterError, match=r"without apiVersion, kind and metadata\.name"):
        kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})


# --------------------------------------------------------------------------- nodes and pods


def test_node_status_patch_lands_as_nvidia_gpu_capacity(
    emulator: Emulator, kube: KubeClient, tenant: TenantSpec
) -> None:
    emulator.seed("v1/nodes", None, "gpulab-lab-tenant-a-worker", _node("gpulab-lab-tenant-a-worker"))
    patch = render.gpu_capacity_patch(tenant)
    assert patch == [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "10"}]

    kube.patch_node_status("gpulab-lab-tenant-a-worker", patch)

    stored = emulator.stored("v1/nodes", None, "gpulab-lab-tenant-a-worker")
    assert stored["status"]["capacity"] == {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "10"}
    assert emulator.calls() == [
        ("PATCH", "/api/v1/nodes/gpulab-lab-tenant-a-worker/status", JSON_PATCH),
    ]
    request = emulator.requests()[0]
    assert request.data == patch
    assert b'"/status/capacity/nvidia.com~1gpu"' in request.body


@pytest.mark.parametrize("path", ["/status/capacity/nvidia.com~2gpu", "status/capacity", "/a~"])
def test_node_status_patch_refuses_bad_pointers(
    emulator: Emulator, kube: KubeClient, path: str
) -> None:
    with pytest.raises(AdapterError, match="JSON patch path"):
        kube.patch_node_status("n1", [{"op": "add", "path": path, "value": "1"}])
    assert emulator.requests() == []


def test_annotations_add_and_remove_hami_locks(
    emulator: Emulator, kube: KubeClient, tenant: TenantSpec
) -> None:
    node = "gpulab-lab-tenant-a-worker"
    emulator.seed("v1/nodes", None, node, _node(node, annotations={
        "hami.io/mutex.lock": "2026-01-01T00:00:00Z,kube-system,hami-scheduler",
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
    }))
    register = render.gpu_register_annotation(tenant, 0)

    kube.annotate("v1", "Node", node, {"hami.io/node-nvidia-register": register})
    kube.annotate("v1", "Node", node, {"hami.io/mutex.lock": None})

    annotations = emulator.stored("v1/nodes", None, node)["metadata"]["annotations"]
    assert annotations == {
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "hami.io/node-nvidia-register": register,
    }
    assert json.loads(annotations["hami.io/node-nvidia-register"])[0]["count"] == 10

    emulator.seed("v1/pods", "gpulab-verify", "gpu-share-1", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "gpu-share-1", "namespace": "gpulab-verify", "annotations": {
            "hami.io/bind-phase": "allocating", "nvidia.com/use-gpuuuid": "GPU-MOCK-0"}},
    })
    kube.annotate("v1", "Pod", "gpu-share-1", {"hami.io/bind-phase": None},
                  namespace="gpulab-verify")

    pod = emulator.stored("v1/pods", "gpulab-verify", "gpu-share-1")
    assert pod["metadata"]["annotations"] == {"nvidia.com/use-gpuuuid": "GPU-MOCK-0"}
    assert emulator.calls() == [
        ("PATCH", f"/api/v1/nodes/{node}", MERGE_PATCH),
        ("PATCH", f"/api/v1/nodes/{node}", MERGE_PATCH),
        ("PATCH", "/api/v1/namespaces/gpulab-verify/pods/gpu-share-1", MERGE_PATCH),
    ]
    assert [r.data for r in emulator.requests()] == [
        {"metadata": {"annotations": {"hami.io/node-nvidia-register": register}}},
        {"metadata": {"annotations": {"hami.io/mutex.lock": None}}},
        {"metadata": {"annotations": {"hami.io/bind-phase": None}}},
    ]


def test_labels_set_and_removed_at_the_version_read(emulator: Emulator,
                                                     kube: KubeClient) -> None:
    # fake GPUs on a named node (provider existing): the pool's labels are merged in, and down
    # removes them (null) naming the resourceVersion it read, so a change since is a 409
    emulator.seed("v1/nodes", None, "cpu-2", _node("cpu-2", labels={"kubernetes.io/os": "linux"}))

    kube.label("v1", "Node", "cpu-2", {"run.ai/simulated-gpu-node-pool": "default"})
    kube.label("v1", "Node", "cpu-2", {"run.ai/simulated-gpu-node-pool": None},
               resource_version="7")

    assert emulator.calls() == [("PATCH", "/api/v1/nodes/cpu-2", MERGE_PATCH)] * 2
    assert [r.data for r in emulator.requests()] == [
        {"metadata": {"labels": {"run.ai/simulated-gpu-node-pool": "default"}}},
        {"metadata": {"labels": {"run.ai/simulated-gpu-node-pool": None},
                      "resourceVersion": "7"}},
    ]


def test_get_list_delete(emulator: Emulator, kube: KubeClient) -> None:
    emulator.seed("v1/nodes", None, "w1", _node("w1", labels={"gpulab.dev/role": "worker"}))
    emulator.seed("v1/nodes", None, "cp", _node("cp", labels={"gpulab.dev/role": "control"}))
    # kmock keeps objects as posted; real list items lack kind/apiVersion: the adapter fills them.
    emulator.seed("v1/nodes", None, "bare", {"metadata": {"name": "bare"}})

    assert kube.get("v1", "Node", "nope") is None
    assert kube.get("apps/v1", "Deployment", "hami-scheduler", "kube-system") is None
    got = kube.get("v1", "Node", "w1")
    assert got is not None
    assert got["metadata"]["name"] == "w1"

    names = [n["metadata"]["name"] for n in kube.list_objects("v1", "Node")]
    assert sorted(names) == ["bare", "cp", "w1"]
    bare = next(n for n in kube.list_objects("v1", "Node") if n["metadata"]["name"] == "bare")
    assert (bare["apiVersion"], bare["kind"]) == ("v1", "Node")
    workers = kube.list_objects("v1", "Node", label_selector="gpulab.dev/role=worker")
    assert [n["metadata"]["name"] for n in workers] == ["w1"]

    assert kube.delete("v1", "Node", "w1") is True
    assert not emulator.exists("v1/nodes", None, "w1")
    assert kube.delete("v1", "Node", "w1") is False

    assert emulator.calls() == [
        ("GET", "/api/v1/nodes/nope", ""),
        ("GET", "/apis/apps/v1/namespaces/kube-system/deployments/hami-scheduler", ""),
        ("GET", "/api/v1/nodes/w1", ""),
        ("GET", "/api/v1/nodes", ""),
        ("GET", "/api/v1/nodes", ""),
        ("GET", "/api/v1/nodes?labelSelector=gpulab.dev/role=worker", ""),
        ("DELETE", "/api/v1/nodes/w1?propagationPolicy=Background", ""),
        ("DELETE", "/api/v1/nodes/w1?propagationPolicy=Background", ""),
    ]


def test_list_in_namespace_and_cluster_wide(emulator: Emulator, kube: KubeClient) -> None:
    for ns in ("kamaji-system", "other"):
        emulator.seed("apps/v1/deployments", ns, "kamaji", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kamaji", "namespace": ns}})

    assert len(kube.list_objects("apps/v1", "Deployment", "kamaji-system")) == 1
    assert len(kube.list_objects("apps/v1", "Deployment")) == 2
    assert [p for _, p, _ in emulator.calls()] == [
        "/apis/apps/v1/namespaces/kamaji-system/deployments",
        "/apis/apps/v1/deployments",
    ]


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a!=b", {"a": "b"}, False),
    ("a", {"a": ""}, True),
    ("!a", {"a": "x"}, False),
    ("a in (x, y),b", {"a": "y", "b": "1"}, True),
    ("a notin (x,y)", {"a": "x"}, False),
    ("a notin (x,y)", {}, True),
    ("tier=gpu, !legacy", {"tier": "gpu"}, True),
])
def test_label_selector_semantics(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert label_selector_matches(selector, labels) is expected


def test_events_filtered_client_side_and_sorted(emulator: Emulator, kube: KubeClient) -> None:
    def event(name: str, about: str, when: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": "gpulab-verify"},
                "involvedObject": {"kind": "Pod", "name": about},
                "reason": "FailedScheduling", "lastTimestamp": when}

    emulator.seed("v1/events", "gpulab-verify", "e2", event("e2", "gpu-share-4", "2026-01-01T00:00:02Z"))
    emulator.seed("v1/events", "gpulab-verify", "e1", event("e1", "gpu-share-4", "2026-01-01T00:00:01Z"))
    emulator.seed("v1/events", "gpulab-verify", "e3", event("e3", "gpu-share-1", "2026-01-01T00:00:00Z"))

    about = kube.events("gpulab-verify", "gpu-share-4")
    assert [e["metadata"]["name"] for e in about] == ["e1", "e2"]
    assert [e["metadata"]["name"] for e in kube.events("gpulab-verify")] == ["e3", "e1", "e2"]
    assert [p for _, p, _ in emulator.calls()] == [
        "/api/v1/namespaces/gpulab-verify/events?fieldSelector=involvedObject.name=gpu-share-4",
        "/api/v1/namespaces/gpulab-verify/events",
    ]


def test_pod_logs(emulator: Emulator, kube: KubeClient) -> None:
    path = "/api/v1/namespaces/kube-system/pods/hami-scheduler-0/log"
    emulator.km[f"get {path}"] << b"I0101 starting\nE0101 node lock held\n"

    assert kube.pod_logs("hami-scheduler-0", "kube-system", tail_lines=2) == (
        "I0101 starting\nE0101 node lock held\n"
    )
    assert emulator.calls() == [("GET", f"{path}?tailLines=2", "")]
    assert emulator.requests()[0].headers["Accept"] == "*/*"


def test_server_version(emulator: Emulator, kube: KubeClient) -> None:
    assert kube.server_version() == "v1.26.4+k3s1"  # kmock's canned /version
    emulator.km["get /version"] << 404
    with pytest.raises(AdapterError, match=r"^get server version at http://127\.0\.0\.1:\d+: 404"):
        kube.server_version()


# --------------------------------------------------------------------------- errors and retries


def test_error_line_names_verb_object_server_status_and_reason(
    emulator: Emulator, kube: KubeClient
) -> None:
    emulator.km["get /api/v1/namespaces/kube-system/configmaps/boom"] << _status(
        500, "InternalError", "etcdserver: leader changed\n(retry later)")

    with pytest.raises(KubeApiError) as info:
        kube.get("v1", "ConfigMap", "boom", "kube-system")

    err = info.value
    assert str(err) == (
        f"get ConfigMap kube-system/boom at {emulator.url}: 500 InternalError: "
        "etcdserver: leader changed (retry later)"
    )
    assert (err.status, err.reason) == (500, "InternalError")
    assert "leader changed" in err.output
    assert "\n" not in str(err)


def test_connection_error_is_one_line() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = KubeClient(host=f"http://127.0.0.1:{port}", retry=RetryPolicy.disabled(),
                        request_timeout=2)

    with pytest.raises(KubeApiError) as info:
        client.get("v1", "Node", "n1")

    message = str(info.value)
    assert message.startswith(f"get Node n1 at http://127.0.0.1:{port}: connection failed (")
    assert "\n" not in message
    assert info.value.status == 0


def test_tls_failure_is_a_connection_error(emulator: Emulator) -> None:
    https = emulator.url.replace("http://", "https://")  # kmock speaks plain HTTP
    client = KubeClient(host=https, retry=RetryPolicy.disabled(), request_timeout=2)

    with pytest.raises(KubeApiError) as info:
        client.server_version()

    assert str(info.value).startswith(f"get server version at {https}: connection failed (")
    assert "\n" not in str(info.value)
    assert info.value.status == 0


def _flaky(times: int, response: Response) -> Any:
    """A kmock reaction that answers `response` `times` times, then lets the emulator answer."""
    left = [times]

    def react() -> Any:
        if left[0] > 0:
            left[0] -= 1
            return response
        return NotImplemented

    return react


def test_transient_errors_are_retried_bounded(emulator: Emulator) -> None:
    emulator.seed("v1/nodes", None, "n1", _node("n1"))
    emulator.km["get /api/v1/nodes/n1"] << _flaky(2, _status(503, "ServiceUnavailable", "busy"))
    slept: list[float] = []
    policy = RetryPolicy(stop=stop_after_attempt(3), wait=wait_none(), sleep=slept.append)

    got = emulator.client(retry=policy).get("v1", "Node", "n1")

    assert got is not None
    assert len(emulator.requests()) == 3
    assert slept == [0, 0]

    emulator.km["get /api/v1/nodes/n2"] << _status(429, "TooManyRequests", "slow down")
    with pytest.raises(KubeApiError, match="429 TooManyRequests"):
        emulator.client(retry=policy).get("v1", "Node", "n2")
    assert len(emulator.requests()) == 6  # stopped after 3 attempts


def test_non_transient_errors_are_not_retried(emulator: Emulator) -> None:
    policy = RetryPolicy(stop=stop_after_attempt(5), wait=wait_none(), sleep=lambda _: None)
    client = emulator.client(retry=policy)
    emulator.km["get /api/v1/nodes/bad"] << Response(
        status=403, payload=kube_wire.forbidden("ci", "get", "nodes", name="bad"))

    with pytest.raises(KubeApiError, match="403 Forbidden"):
        client.get("v1", "Node", "bad")
    # 409 on create means "exists": not transient (the apply fallback then merge-patches).
    emulator.km["post /api/v1/nodes"] << _status(409, "AlreadyExists", "exists")
    emulator.km["patch", kmock.headers({"Content-Type": APPLY_PATCH})] << 415
    emulator.seed("v1/nodes", None, "n1", _node("n1"))
    client.apply(_node("n1"))

    assert [m for m, _, _ in emulator.calls()] == ["GET", "PATCH", "POST", "PATCH"]


def test_an_api_servers_refusals_read_as_the_fakes_say(emulator: Emulator) -> None:
    """The line the client raises for the API server's 401 and 403 Status bodies (kube_wire, from
    apiserver v0.36.3) ends as kube_wire.kube_client_says, which the fakes of the client use."""
    client = emulator.client(retry=RetryPolicy.disabled())
    for name, status in (("nobody", kube_wire.unauthorized()),
                         ("other", kube_wire.forbidden("ci", "get", "nodes", name="other"))):
        emulator.km[f"get /api/v1/nodes/{name}"] << Response(status=status["code"],
                                                             payload=status)
        with pytest.raises(KubeApiError) as caught:
            client.get("v1", "Node", name)
        assert caught.value.message == (
            f"get Node {name} at {client.server}: {kube_wire.kube_client_says(status)}")
        assert caught.value.status == status["code"]


# --------------------------------------------------------------------------- kubeconfig


def test_kubeconfig_file_is_used_without_global_state(emulator: Emulator, tmp_path: Path) -> None:
    from kubernetes import client as k8s_client

    kubeconfig = tmp_path / "tenant-a.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "kmock",
        "clusters": [{"name": "kmock", "cluster": {"server": emulator.url}}],
        "users": [{"name": "admin", "user": {"token": "s3cret"}}],
        "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "admin"}}],
    }))
    default_host = k8s_client.Configuration.get_default_copy().host
    emulator.seed("v1/nodes", None, "n1", _node("n1"))

    with KubeClient(kubeconfig, retry=RetryPolicy.disabled()) as client:
        assert client.server == emulator.url
        assert client.get("v1", "Node", "n1") is not None

    assert emulator.requests()[0].headers["Authorization"] == "Bearer s3cret"
    assert k8s_client.Configuration.get_default_copy().host == default_host


def test_unusable_kubeconfig_is_an_adapter_error(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"cannot load .*missing\.kubeconfig"):
        KubeClient(tmp_path / "missing.kubeconfig")
