"""TC-04: every worker advertises exactly the profile's GPUs and HAMi's registered devices match."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.stacks.kamaji_hami import render
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, node_replace, tenant_replace, with_gpus

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

WORKER = b.worker("tenant-a")


def _node(profile: KamajiHamiProfile, tenant: str = "tenant-a") -> dict[str, Any]:
    return b.node(profile.tenant(tenant))


def _register(node: dict[str, Any], **changes: Any) -> dict[str, Any]:
    cards = json.loads(node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION])
    cards[0].update(changes)
    node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] = json.dumps(cards)
    return node


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    a = judge(healthy, profile, "TC-04")
    assert a.status == "pass", a.reason
    assert "gpu=10, gpumem=81920, gpucores=100, gpumem-percentage=100" in a.evidence
    assert "GPU-MOCK-0 NVIDIA-A100-SXM4-80GB 81920 MiB 100 cores" in a.evidence
    bb = judge(healthy, profile, "TC-04", "tenant-b")
    assert bb.status == "pass", bb.reason
    assert "gpu=20, gpumem=49152, gpucores=200, gpumem-percentage=200" in bb.evidence
    assert "GPU-MOCK-B1 NVIDIA-L4 24576 MiB 100 cores" in bb.evidence


def test_allocatable_mismatch_mock_plugin_not_registered(healthy: LabState,
                                                         profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    for key in ("nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"):
        node["status"]["allocatable"][key] = "0"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert f"node {WORKER} allocatable nvidia.com/gpumem=0 (want 81920)" in result.reason
    assert "HAMi's mock device plugin has not registered the cards" in result.reason
    assert "hami-mock-device-plugin-nckqd Running" in result.reason


def test_capacity_patch_missing(healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    for section in ("capacity", "allocatable"):
        for key in list(node["status"][section]):
            if key.startswith("nvidia.com/"):
                del node["status"][section][key]
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert "node capacity nvidia.com/gpu is not set" in result.reason


def test_allocatable_of_other_cards(healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    node["status"]["allocatable"]["nvidia.com/gpumem"] = "40960"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert "nvidia.com/gpumem=40960 (want 81920)" in result.reason
    assert "describes other cards than the profile" in result.reason


@pytest.mark.parametrize(("changes", "expected"), [
    ({"devmem": 40960}, "registered device GPU-MOCK-0 on {w} has memory 40960, the profile says "
                        "81920"),
    ({"devcore": 50}, "has cores 50, the profile says 100"),
    ({"type": "NVIDIA-A100-SXM4-40GB"}, "has model 'NVIDIA-A100-SXM4-40GB', the profile says "
                                        "'NVIDIA-A100-SXM4-80GB'"),
    ({"count": 4}, "has split 4, the profile says 10"),
    ({"health": False}, "registered device GPU-MOCK-0 on {w} is not healthy"),
    ({"id": "GPU-OTHER-0"}, "node {w} has no registered device GPU-MOCK-0"),
])
def test_registered_device_mismatch(healthy: LabState, profile: KamajiHamiProfile,
                                    changes: dict[str, Any], expected: str) -> None:
    node = _register(_node(profile), **changes)
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert expected.format(w=WORKER) in result.reason


def test_extra_registered_device(healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    cards = json.loads(node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION])
    cards.append({**cards[0], "id": "GPU-MOCK-9", "index": 1})
    node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] = json.dumps(cards)
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert "registers device GPU-MOCK-9, which the profile does not have" in result.reason


@pytest.mark.parametrize(("value", "expected"), [
    (None, "has no hami.io/node-nvidia-register annotation"),
    ("GPU-MOCK-0,10,81920,100,NVIDIA-A100-SXM4-80GB,0,true",
     "is not a JSON list of devices (HAMi v2.10 reads JSON only)"),
])
def test_registration_missing_or_unreadable(healthy: LabState, profile: KamajiHamiProfile,
                                            value: str | None, expected: str) -> None:
    node = _node(profile)
    if value is None:
        del node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION]
    else:
        node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] = value
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert expected in result.reason


def test_missing_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", nodes=()), profile, "TC-04")
    assert result.status == "fail"
    assert "is not a node of tenant-a (see TC-02)" in result.reason


def test_changed_profile_is_checked_against_the_new_cards(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    """The lab still has 1 x A100 80GB; a profile asking for 2 cards of 40GB must fail."""
    changed = with_gpus(profile, "tenant-a", {"model": "NVIDIA-A100-SXM4-40GB", "count": 2,
                                              "memory_mib": 40960})
    result = judge(healthy, changed, "TC-04")
    assert result.status == "fail"
    assert "nvidia.com/gpu=10 (want 20)" in result.reason


def test_tenant_without_gpus(healthy: LabState, profile: KamajiHamiProfile) -> None:
    no_gpus = with_gpus(profile, "tenant-a")
    spec = no_gpus.tenant("tenant-a")
    plain = node_replace(healthy, "tenant-a", b.node(spec))
    ok = judge(plain, no_gpus, "TC-04")
    assert ok.status == "pass", ok.reason
    assert "no cards registered" in ok.evidence
    result = judge(healthy, no_gpus, "TC-04")  # the node still advertises the A100
    assert result.status == "fail"
    assert "the profile gives this tenant no GPUs" in result.reason


def test_unobserved_nodes_is_an_error(healthy: LabState, profile: KamajiHamiProfile) -> None:
    assert judge(tenant_replace(healthy, "tenant-a", nodes=None), profile,
                 "TC-04").status == "error"


def test_evidence_shows_hamis_handshake(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(healthy, profile, "TC-04")
    assert "handshake Requesting_2026-11-20 10:12:47" in result.evidence


@pytest.mark.parametrize(("value", "expected"), [
    (None, f"node {WORKER} has no hami.io/node-handshake annotation: hami-scheduler writes it "
           "on every resync (15 s)"),
    ("Deleted_2026-11-20 10:12:47", "is 'Deleted_2026-11-20 10:12:47', not HAMi's"),
    ("Requesting_yesterday", "is 'Requesting_yesterday', not HAMi's"),
    ("", "is '', not HAMi's"),
])
def test_a_worker_hami_has_not_handshaken_with_fails(
        healthy: LabState, profile: KamajiHamiProfile, value: str | None, expected: str) -> None:
    node = _node(profile)
    annotations = node["metadata"]["annotations"]
    if value is None:
        del annotations["hami.io/node-handshake"]
    else:
        annotations["hami.io/node-handshake"] = value
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert expected in result.reason
    assert "deploy/hami-scheduler -c vgpu-scheduler-extender" in result.reason
    assert judge(node_replace(healthy, "tenant-a", node), profile, "TC-04",
                 "tenant-b").status == "pass"


def test_the_real_plugins_reported_handshake_is_accepted(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    node["metadata"]["annotations"]["hami.io/node-handshake"] = "Reported_2026-11-20 10:13:02"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "pass", result.reason


# --------------------------------------------------------------------------- what the user reads (#24)

A100 = {"model": "NVIDIA-A100-SXM4-80GB", "count": 2, "memory_mib": 81920}


def _card(i: int) -> str:
    return f"GPU-MOCK-{i} NVIDIA-A100-SXM4-80GB 81920 MiB 100 cores"


def _advertises(index: int) -> str:
    return (f"{b.worker('tenant-a', index)} advertises gpu=20, gpumem=163840, gpucores=200, "
            f"gpumem-percentage=200; registered: {_card(2 * index)}, {_card(2 * index + 1)}; "
            f"handshake Requesting_2026-11-20 10:12:47")


def test_every_worker_and_card_is_in_the_evidence(profile: KamajiHamiProfile) -> None:
    three = with_gpus(profile, "tenant-a", A100, workers=3)
    result = judge(b.healthy_state(three), three, "TC-04")
    assert result.status == "pass", result.reason
    assert result.evidence == "; ".join(_advertises(i) for i in range(3))


def test_a_missing_worker_does_not_hide_the_others(profile: KamajiHamiProfile) -> None:
    three = with_gpus(profile, "tenant-a", A100, workers=3)
    state = b.healthy_state(three)
    nodes = state.tenants["tenant-a"].nodes or ()
    second = copy.deepcopy(nodes[1])
    second["status"]["allocatable"]["nvidia.com/gpumem"] = "81920"
    state = tenant_replace(state, "tenant-a", nodes=(second, nodes[2]))
    result = judge(state, three, "TC-04")
    assert result.status == "fail"
    assert f"worker {WORKER} is not a node of tenant-a (see TC-02)" in result.reason
    assert (f"node {b.worker('tenant-a', 1)} allocatable nvidia.com/gpumem=81920 (want 163840)"
            in result.reason)
    assert result.evidence == _advertises(2)


def test_a_missing_card_does_not_hide_the_next(profile: KamajiHamiProfile) -> None:
    two = with_gpus(profile, "tenant-a", A100)
    state = b.healthy_state(two)
    node = b.node(two.tenant("tenant-a"))
    _register(node, id="GPU-OTHER-0")
    result = judge(node_replace(state, "tenant-a", node), two, "TC-04")
    assert result.status == "fail"
    assert f"node {WORKER} has no registered device GPU-MOCK-0" in result.reason
    assert "GPU-MOCK-1" not in result.reason
    assert result.evidence == ""


def test_allocatable_mismatch_lists_every_resource(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    for key in ("nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"):
        node["status"]["allocatable"][key] = "0"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.reason == (
        f"node {WORKER} allocatable nvidia.com/gpumem=0 (want 81920), nvidia.com/gpucores=0 "
        f"(want 100), nvidia.com/gpumem-percentage=0 (want 100): HAMi's mock device plugin has "
        f"not registered the cards: check its pods in kube-system [hami-mock-device-plugin-nckqd "
        f"Running] and that ConfigMap hami-scheduler-device exists (yes)")
    assert result.evidence == ""  # the worker fails: not shown as advertising
    gone = tenant_replace(node_replace(healthy, "tenant-a", node), "tenant-a",
                          hami_device_configmap=False)
    assert "that ConfigMap hami-scheduler-device exists (no)" in judge(gone, profile,
                                                                       "TC-04").reason


def test_capacity_patch_missing_says_how_to_fix_it(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    del node["status"]["capacity"]["nvidia.com/gpu"]
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.reason == (
        f"node {WORKER} allocatable nvidia.com/gpu=0 (want 10): node capacity nvidia.com/gpu is "
        f"not set: gpulab patches it so that HAMi's mock plugin starts reporting (it reports zero "
        f"until then); re-run `gpulab up`")


def test_a_capacity_of_one_card_is_set(healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    node["status"]["capacity"]["nvidia.com/gpu"] = "1"
    node["status"]["allocatable"]["nvidia.com/gpumem"] = "0"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert "HAMi's mock device plugin has not registered the cards" in result.reason
    assert "is not set" not in result.reason


def test_other_cards_say_how_to_fix_it(healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = _node(profile)
    node["status"]["allocatable"]["nvidia.com/gpumem"] = "40960"
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.reason == (
        f"node {WORKER} allocatable nvidia.com/gpumem=40960 (want 81920): the node describes "
        f"other cards than the profile: its {render.GPU_REGISTER_ANNOTATION} annotation differs; "
        f"`gpulab up` rewrites it")


def test_a_registration_failure_alone_shows_no_evidence(healthy: LabState,
                                                        profile: KamajiHamiProfile) -> None:
    node = _register(_node(profile), devcore=50)
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert result.status == "fail"
    assert result.evidence == ""


def test_tenant_without_gpus_evidence(healthy: LabState, profile: KamajiHamiProfile) -> None:
    no_gpus = with_gpus(profile, "tenant-a")
    plain = node_replace(healthy, "tenant-a", b.node(no_gpus.tenant("tenant-a")))
    assert judge(plain, no_gpus, "TC-04").evidence == (
        f"{WORKER} advertises gpu=0, gpumem=0, gpucores=0, gpumem-percentage=0; "
        f"registered: no cards registered")
    result = judge(healthy, no_gpus, "TC-04")
    assert ("(want 0): the profile gives this tenant no GPUs, yet the node advertises some"
            in result.reason)


def test_unreadable_values_are_cut_where_the_user_reads_them(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    long = "Requesting_" + "x" * 100
    node = _node(profile)
    node["metadata"]["annotations"]["hami.io/node-handshake"] = long
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert f"is {long[:80]!r}, not HAMi's" in result.reason
    assert ("hami-scheduler pods in kube-system: [hami-scheduler-" in result.reason)
    garbage = "y" * 200
    node = _node(profile)
    node["metadata"]["annotations"][render.GPU_REGISTER_ANNOTATION] = garbage
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert f"(HAMi v2.10 reads JSON only): {'y' * 120}" in result.reason
    assert "y" * 121 not in result.reason


def test_a_failure_still_shows_every_worker_that_is_right(profile: KamajiHamiProfile) -> None:
    three = with_gpus(profile, "tenant-a", A100, workers=3)
    state = b.healthy_state(three)
    nodes = state.tenants["tenant-a"].nodes or ()
    result = judge(tenant_replace(state, "tenant-a", nodes=nodes[1:]), three, "TC-04")
    assert result.status == "fail"
    assert result.evidence == f"{_advertises(1)}; {_advertises(2)}"
