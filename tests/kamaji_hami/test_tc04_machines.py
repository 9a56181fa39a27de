"""TC-04 on machines that joined a tenant (kamaji-hami on an existing cluster, `gpulab join`):
each GPU node registers healthy cards HAMi decodes, advertises their slices as nvidia.com/gpu
and carries hami-scheduler's handshake; every verdict held word for word.

The machines are tests/existing/kamaji_machines.py's (what HAMi v2.10.0's real device plugin
registers, cited there); the unhealthy and MIG registrations are upstream's own test data
(tests/cluster/upstream.py, file:line beside each)."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from tests.cluster import upstream
from tests.existing.kamaji_machines import A100, a100, joined, registering
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.verify.result import CheckResult

A100_2 = "GPU-9e1f3a5b-7c2d-4e6f-8a0b-1c3d5e7f9a2b"
REGISTER = "hami.io/node-nvidia-register"
HANDSHAKE = "hami.io/node-handshake"
SHAKE = "handshake Requesting_2026-12-01 09:00:00"
GPU7 = (f"gpu-7 registers 1 card(s) with HAMi: {A100} NVIDIA A100-SXM4-80GB 81920 MiB 100 cores "
        f"split 10; nvidia.com/gpu=10; {SHAKE}")
LOOK = ("hami-scheduler pods in kube-system: [hami-scheduler-7d9f6c8b9-4qj2w Running]; "
        "kubectl -n kube-system logs deploy/hami-scheduler -c vgpu-scheduler-extender | grep "
        "{node} in tenant-a")


def _cpu(name: str) -> dict[str, Any]:
    """A machine without GPUs: not labelled gpu=on, nothing registered with HAMi."""
    node = joined(name)
    del node["metadata"]["labels"]["gpu"]
    del node["metadata"]["annotations"][REGISTER]
    return node


def _tc04(profile: KamajiHamiProfile, *nodes: dict[str, Any], **changes: Any) -> CheckResult:
    state = b.tenant_replace(b.healthy_state(profile), "tenant-a", workers="machines",
                             nodes=nodes, **changes)
    return judge(state, profile, "TC-04")


def _verdict(result: CheckResult) -> tuple[str, str, str]:
    return result.status, result.reason, result.evidence


def test_a_gpu_machine_and_a_cpu_machine_pass_in_either_order(
        kamaji_profile: KamajiHamiProfile) -> None:
    cpu_first = _tc04(kamaji_profile, _cpu("cpu-1"), joined())
    assert _verdict(cpu_first) == (
        "pass", "", f"cpu-1: no GPU (not labelled gpu=on, no card registered); {GPU7}")
    gpu_first = _tc04(kamaji_profile, joined(), _cpu("worker-cpu"))
    assert _verdict(gpu_first) == (
        "pass", "", f"{GPU7}; worker-cpu: no GPU (not labelled gpu=on, no card registered)")


def test_two_cards_advertise_their_slices_together(kamaji_profile: KamajiHamiProfile) -> None:
    cards = [a100(), a100(A100_2, index=1)]
    result = _tc04(kamaji_profile, joined(cards=cards))
    assert _verdict(result) == (
        "pass", "",
        f"gpu-7 registers 2 card(s) with HAMi: {A100} NVIDIA A100-SXM4-80GB 81920 MiB 100 cores "
        f"split 10, {A100_2} NVIDIA A100-SXM4-80GB 81920 MiB 100 cores split 10; "
        f"nvidia.com/gpu=20; {SHAKE}")


def test_a_card_in_mig_mode_shows_its_profiles(kamaji_profile: KamajiHamiProfile) -> None:
    result = _tc04(kamaji_profile, registering("gpu-7", upstream.REGISTER_MIG_GPU0, slices="7"))
    assert _verdict(result) == (
        "pass", "",
        "gpu-7 registers 1 card(s) with HAMi: GPU-0 NVIDIA-A100-SXM4-40GB 40960 MiB 100 cores "
        f"split 7 MIG (1g.5gb); nvidia.com/gpu=7; {SHAKE}")
    two = json.loads(upstream.REGISTER_MIG_GPU0)
    two[0]["migProfiles"].append({**two[0]["migProfiles"][0], "name": "7g.40gb"})
    result = _tc04(kamaji_profile, registering("gpu-7", json.dumps(two), slices="7"))
    assert "split 7 MIG (1g.5gb, 7g.40gb); nvidia.com/gpu=7" in result.evidence
    bare = json.loads(upstream.REGISTER_MIG_GPU0)
    del bare[0]["migProfiles"]
    result = _tc04(kamaji_profile, registering("gpu-7", json.dumps(bare), slices="7"))
    assert "split 7 MIG (no profile); nvidia.com/gpu=7" in result.evidence


def test_a_labelled_machine_without_registered_cards_names_the_device_plugins_pods(
        kamaji_profile: KamajiHamiProfile) -> None:
    node = joined()
    del node["metadata"]["annotations"][REGISTER]
    system = b.healthy_state(kamaji_profile).tenants["tenant-a"].system_pods or ()
    plugin = copy.deepcopy(next(p for p in system
                                if p["metadata"]["name"].startswith("hami-mock-device-plugin")))
    plugin["metadata"]["name"] = "hami-device-plugin-x7k2p"
    plugin["status"]["phase"] = "Pending"
    result = _tc04(kamaji_profile, node, system_pods=(*system, plugin))
    assert _verdict(result) == (
        "fail",
        "node gpu-7 is labelled gpu=on but registers no card with HAMi (no "
        "hami.io/node-nvidia-register): HAMi's NVIDIA device plugin has not run on it; "
        "`gpulab join tenant-a` prints the command that installs HAMi; its pods in kube-system: "
        "[hami-device-plugin-x7k2p Pending]", "")


def test_an_annotation_hami_cannot_decode_is_quoted_up_to_120_characters(
        kamaji_profile: KamajiHamiProfile) -> None:
    raw = "[" + "x" * 130
    node = registering("gpu-7", raw, slices="10")
    assert _verdict(_tc04(kamaji_profile, node)) == (
        "fail", "node gpu-7 annotation hami.io/node-nvidia-register is not a list of devices "
        f"HAMi v2.10 decodes: {raw[:120]}", "")
    empty = registering("gpu-7", "[]", slices="10")  # HAMi gets no cards from an empty list
    assert _tc04(kamaji_profile, empty).reason.endswith("HAMi v2.10 decodes: []")


def test_an_unhealthy_card_a_stale_kubelet_count_and_no_handshake_are_each_named(
        kamaji_profile: KamajiHamiProfile) -> None:
    node = registering("gpu-8", upstream.REGISTER_A100_GPU0_UNHEALTHY, slices="8")
    del node["metadata"]["annotations"][HANDSHAKE]
    result = _tc04(kamaji_profile, node)
    assert _verdict(result) == (
        "fail",
        "registered device GPU-0 on gpu-8 is not healthy; node gpu-8 allocatable "
        "nvidia.com/gpu=8, but HAMi registered 1 card(s) of 10 slice(s) in all: the device "
        "plugin's registration with the kubelet is stale or failed (kubectl -n kube-system logs "
        "of its pod on gpu-8); node gpu-8 has no hami.io/node-handshake annotation: "
        "hami-scheduler writes it on every resync (15 s), so it has not processed the node or "
        f"just dropped it as unhealthy; {LOOK.format(node='gpu-8')}", "")


def test_a_node_advertising_no_gpu_resource_counts_zero(
        kamaji_profile: KamajiHamiProfile) -> None:
    node = joined()
    del node["status"]["allocatable"]["nvidia.com/gpu"]
    assert _tc04(kamaji_profile, node).reason == (
        "node gpu-7 allocatable nvidia.com/gpu=0, but HAMi registered 1 card(s) of 10 slice(s) "
        "in all: the device plugin's registration with the kubelet is stale or failed "
        "(kubectl -n kube-system logs of its pod on gpu-7)")
    del node["status"]
    assert "allocatable nvidia.com/gpu=0, but" in _tc04(kamaji_profile, node).reason


def test_problems_of_every_machine_are_told_and_only_sound_machines_are_evidence(
        kamaji_profile: KamajiHamiProfile) -> None:
    eight = registering("gpu-8", upstream.REGISTER_A100_GPU0_UNHEALTHY, slices="10")
    nine = registering("gpu-9", upstream.REGISTER_A100_GPU1, slices="4")
    result = _tc04(kamaji_profile, joined(), eight, nine)
    assert _verdict(result) == (
        "fail",
        "registered device GPU-0 on gpu-8 is not healthy; node gpu-9 allocatable "
        "nvidia.com/gpu=4, but HAMi registered 1 card(s) of 10 slice(s) in all: the device "
        "plugin's registration with the kubelet is stale or failed (kubectl -n kube-system logs "
        "of its pod on gpu-9)", GPU7)


def test_a_tenant_of_cpu_machines_only_is_no_gpu_worker(
        kamaji_profile: KamajiHamiProfile) -> None:
    result = _tc04(kamaji_profile, _cpu("cpu-1"), _cpu("cpu-2"))
    assert _verdict(result) == (
        "fail",
        "no node of tenant-a is a GPU worker (cpu-1, cpu-2 neither labelled gpu=on nor "
        "registering a card with HAMi): label the GPU machine and install HAMi as "
        "`gpulab join tenant-a` prints (its steps 2 and 3)",
        "cpu-1: no GPU (not labelled gpu=on, no card registered); cpu-2: no GPU (not labelled "
        "gpu=on, no card registered)")


def test_a_machine_is_checked_for_the_handshake_whatever_the_profile_says_of_gpus(
        kamaji_profile: KamajiHamiProfile) -> None:
    """On joined machines the cards are whatever the machine has: a tenant the profile gives
    no mock GPUs still has its GPU machine's handshake checked."""
    tenants = [t.model_copy(update={"gpus": []}) if t.name == "tenant-a" else t
               for t in kamaji_profile.tenants]
    profile = kamaji_profile.model_copy(update={"tenants": tenants})
    assert not profile.tenant("tenant-a").gpus
    node = joined()
    node["metadata"]["annotations"][HANDSHAKE] = "Requested_yesterday"
    state = b.tenant_replace(b.healthy_state(kamaji_profile), "tenant-a", workers="machines",
                             nodes=(node,))
    result = judge(state, profile, "TC-04")
    assert _verdict(result) == (
        "fail",
        "node gpu-7 annotation hami.io/node-handshake is 'Requested_yesterday', not HAMi's "
        "'Requesting_<time>' or 'Reported_<time>': something else wrote it; "
        f"{LOOK.format(node='gpu-7')}", "")
