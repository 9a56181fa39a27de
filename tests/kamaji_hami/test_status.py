"""`status` from labels and, when the APIs answer, control planes, nodes and GPU use."""

from __future__ import annotations

from rich.console import Console

from gpulab import core
from gpulab.errors import AdapterError
from gpulab.paths import lab_dir
from gpulab.providers import ClusterChoice, for_choice
from gpulab.stacks.kamaji_hami.status import _tenant_status
from tests.fakes import FakeRuntime, FakeWorld, _cluster_of, fake_adapters


def _lab(profile) -> FakeWorld:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    assert core.up(profile, None, lambda _e: None, adapters=adapters, sleep=lambda _s: None).ok
    tenant_a = world.kube("tenant-a")
    node = tenant_a.objects[("v1", "Node", "", "gpulab-kamaji-hami-tenant-a-worker")]
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.36.4"}
    for i in (1, 2, 3):
        tenant_a.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"gpu-share-{i}", "namespace": "default", "annotations": {
                "hami.io/vgpu-node": "gpulab-kamaji-hami-tenant-a-worker",
                "hami.io/vgpu-devices-allocated": "GPU-MOCK-0,NVIDIA,20000,30:;"}},
            "status": {"phase": "Running"}})
    return world


def _kube(world: FakeWorld):
    return lambda path: world.kube(_cluster_of(path))


def _on_kind(world: FakeWorld):
    """The kind provider on the fake Docker engine (what gpulab status connects to)."""
    return for_choice(ClusterChoice("kind"), runtime=FakeRuntime(world))


def test_status_shows_control_planes_nodes_and_card_use(kamaji_profile) -> None:
    world = _lab(kamaji_profile)
    info = core.status("kamaji-hami", _on_kind(world), kamaji_profile, kube=_kube(world))
    a = info["tenants"]["tenant-a"]
    assert a["control_plane"] == {"status": "Ready", "version": "v1.36.4",
                                  "endpoint": "172.18.255.200:6443"}
    assert a["nodes"] == [{"name": "gpulab-kamaji-hami-tenant-a-worker", "ready": True,
                           "version": "v1.36.4"}]
    [card] = a["gpus"]
    assert card["memory_mib"] == {"used": 60000, "total": 81920}
    assert card["cores"] == {"used": 90, "total": 100}
    assert card["pods"] == ["default/gpu-share-1", "default/gpu-share-2", "default/gpu-share-3"]
    b = info["tenants"]["tenant-b"]
    assert [c["device"] for c in b["gpus"]] == ["GPU-MOCK-B0", "GPU-MOCK-B1"]
    assert all(c["memory_mib"]["used"] == 0 for c in b["gpus"])


def test_status_renders_bars(kamaji_profile) -> None:
    world = _lab(kamaji_profile)
    info = core.status("kamaji-hami", _on_kind(world), kamaji_profile, kube=_kube(world))
    console = Console(width=200, record=True)
    console.print(_tenant_status("tenant-a", info["tenants"]["tenant-a"]))
    text = console.export_text()
    assert "control plane Ready v1.36.4 at 172.18.255.200:6443" in text
    assert "60000/81920 MiB" in text and "90/100" in text
    assert "mem [#########---]" in text  # 60000/81920 of 12 columns
    assert "cores [#########-]" in text
    assert "default/gpu-share-1" in text


def test_unreachable_tenant_api_is_reported_not_fatal(kamaji_profile) -> None:
    world = _lab(kamaji_profile)

    def kube(path):
        if _cluster_of(path) == "tenant-b":
            class Down:
                def list_objects(self, *a, **k):
                    raise AdapterError("list Node at https://172.18.255.201:6443: connection failed")
            return Down()
        return world.kube(_cluster_of(path))

    info = core.status("kamaji-hami", _on_kind(world), kamaji_profile, kube=kube)
    assert "connection failed" in info["tenants"]["tenant-b"]["api_error"]
    assert info["tenants"]["tenant-a"]["gpus"]
