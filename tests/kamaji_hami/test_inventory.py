"""GPU inventory from the write-up's real annotations."""

from __future__ import annotations

from gpulab.stacks.kamaji_hami import render
from gpulab.verify.hami import (
    card_usage,
    parse_allocation,
    parse_register,
    usage_bar,
)


def _node(profile, tenant_index: int, name: str) -> dict:
    tenant = profile.tenants[tenant_index]
    return {"metadata": {"name": name, "annotations": {
        render.GPU_REGISTER_ANNOTATION: render.gpu_register_annotation(tenant, 0)}}}


def _pod(name: str, allocated: str, node: str = "tenant-a-worker", phase: str = "Running") -> dict:
    return {"metadata": {"name": name, "namespace": "default", "annotations": {
        "hami.io/vgpu-devices-allocated": allocated, "hami.io/vgpu-node": node}},
        "status": {"phase": phase}}


def test_parse_allocation_from_the_write_up() -> None:
    # Verbatim from the write-up: hami.io/vgpu-devices-allocated: GPU-MOCK-0,NVIDIA,20000,30:;
    [[grant]] = parse_allocation("GPU-MOCK-0,NVIDIA,20000,30:;")
    assert (grant.device_id, grant.vendor, grant.memory_mib, grant.cores) == (
        "GPU-MOCK-0", "NVIDIA", 20000, 30)


def test_parse_allocation_several_containers_and_devices() -> None:
    parsed = parse_allocation("A,NVIDIA,1,2:B,NVIDIA,3,4:;C,NVIDIA,5,6:;")
    assert [[g.device_id for g in c] for c in parsed] == [["A", "B"], ["C"]]


def test_parse_allocation_tolerates_junk() -> None:
    assert parse_allocation(None) == []
    assert parse_allocation("garbage;X,NVIDIA,lots,1:;") == []


def test_parse_register_tolerates_junk() -> None:
    assert parse_register("not json") == []
    assert parse_register('{"id": 1}') == []


def test_three_pods_share_the_a100(kamaji_profile) -> None:
    node = _node(kamaji_profile, 0, "tenant-a-worker")
    pods = [_pod(f"gpu-share-{i}", "GPU-MOCK-0,NVIDIA,20000,30:;") for i in (1, 2, 3)]
    pods.append(_pod("done", "GPU-MOCK-0,NVIDIA,20000,30:;", phase="Succeeded"))
    [card] = card_usage([node], pods)
    assert (card.device_id, card.model, card.memory_mib, card.cores, card.slots) == (
        "GPU-MOCK-0", "NVIDIA-A100-SXM4-80GB", 81920, 100, 10)
    assert (card.used_memory, card.used_cores) == (60000, 90)
    assert card.pods == ["default/gpu-share-1", "default/gpu-share-2", "default/gpu-share-3"]


def test_pods_on_other_nodes_do_not_count(kamaji_profile) -> None:
    node = _node(kamaji_profile, 1, "tenant-b-worker")
    pods = [_pod("x", "GPU-MOCK-B1,NVIDIA,6000,30:;", node="elsewhere"),
            _pod("y", "GPU-MOCK-B1,NVIDIA,6000,30:;", node="tenant-b-worker")]
    cards = card_usage([node], pods)
    assert [(c.device_id, c.used_memory) for c in cards] == [("GPU-MOCK-B0", 0),
                                                             ("GPU-MOCK-B1", 6000)]


def test_usage_bar() -> None:
    assert usage_bar(60000, 81920, 10) == "[#######---]"
    assert usage_bar(0, 100, 4) == "[----]"
    assert usage_bar(500, 100, 4) == "[####]"
    assert usage_bar(1, 0, 3) == "[???]"
