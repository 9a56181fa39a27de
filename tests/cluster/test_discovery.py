"""What `verify --kubeconfig --inspect` says of each cluster, line by line (gpulab/cluster/
inventory.py, printed by gpulab/cluster/report.py), and the facts discovery must not get wrong:
nodes come in name order from a real API server (CPU and control-plane nodes first), ordinary
pods on GPU nodes (the device plugin's own DaemonSet pods) use no GPU, finished pods hold no
card, a read that failed is unknown and why, never none."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.cluster.inventory import inventory, why_unread
from gpulab.cluster.observe import UNANSWERED, read_cluster
from gpulab.cluster.report import inspection_data, inspection_lines
from gpulab.cluster.state import ClusterSnapshot
from gpulab.errors import AdapterError
from tests.cluster import builders as b
from tests.cluster import upstream as up

SERVER = "https://gpu.example:6443"
PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned"
HAMI_SCHEDULER = ("  HAMi scheduler:      kube-system/hami-scheduler (Deployment), 1/1 ready; HAMi "
                  "v2.10.0, --node-lock-timeout default (5m, cmd/scheduler/main.go:79)")
HAMI_WEBHOOK = ("  HAMi webhook:        hami-webhook (service kube-system/hami-scheduler); "
                "failurePolicy Ignore")
REAL_PLUGIN = ("  HAMi device plugin:  kube-system/hami-device-plugin (DaemonSet), {n}/{n} ready; "
               "real (NVIDIA driver)")
HAMI_SETTINGS = ("  HAMi settings:       --scheduler-name hami-scheduler; resources nvidia.com/gpu, "
                 "nvidia.com/gpumem, nvidia.com/gpucores (from ConfigMap "
                 "kube-system/hami-scheduler-device)")
NO_HAMI = ["  HAMi scheduler:      not found", "  HAMi webhook:        not found",
           "  HAMi device plugin:  not found"]
KAI_SCHEDULER = ("  KAI scheduler:       kai-scheduler/kai-scheduler-default (Deployment), 1/1 "
                 "ready; schedulerName kai-scheduler, default shard (nodes and queues without "
                 "kai.scheduler/node-pool)")
HANDSHAKE = "handshake Reported_2026-12-01 10:00:00"


def _a100(i: int) -> str:
    unhealthy = ", UNHEALTHY" if i == 3 else ""
    use = "40000 MiB, 50 cores by research/train-llm" if i == 0 else "0 MiB, 0 cores"
    return (f"  card:                dgx-1/GPU-a100-{i} NVIDIA-NVIDIA A100-SXM4-80GB, 81920 MiB, "
            f"100 cores, split 10{unhealthy}; in use {use}")


INSPECTED: dict[str, list[str]] = {
    "busy-and-small-split": [
        HAMI_SCHEDULER, HAMI_WEBHOOK, REAL_PLUGIN.format(n=1), "  KAI scheduler:       not found",
        HAMI_SETTINGS, "  tenancy:             none found",
        f"  GPU node:            gpu-1 (Ready, nvidia.com/gpu 12, 2 card(s) registered by HAMi, "
        f"{HANDSHAKE})",
        "  card:                gpu-1/GPU-t4-1 NVIDIA-Tesla T4, 15360 MiB, 100 cores, split 2; "
        "in use 0 MiB, 0 cores",
        "  card:                gpu-1/GPU-t4-2 NVIDIA-Tesla T4, 15360 MiB, 100 cores, split 10; "
        "in use 4000 MiB, 25 cores by prod/serve"],
    "eight-cards-one-node": [
        HAMI_SCHEDULER, HAMI_WEBHOOK, REAL_PLUGIN.format(n=1), "  KAI scheduler:       not found",
        HAMI_SETTINGS, "  tenancy:             none found",
        f"  GPU node:            dgx-1 (Ready, nvidia.com/gpu 80, 8 card(s) registered by HAMi, "
        f"{HANDSHAKE})",
        *(_a100(i) for i in range(8)), "  GPU users:           research/train-llm"],
    "hami-eligibility": [  # a-cpu-0 comes first from the API server; finished-job Failed
        HAMI_SCHEDULER, HAMI_WEBHOOK, REAL_PLUGIN.format(n=2), "  KAI scheduler:       not found",
        HAMI_SETTINGS, "  tenancy:             none found",
        f"  GPU node:            gpu-a (Ready, nvidia.com/gpu 10, 1 card(s) registered by HAMi, "
        f"{HANDSHAKE})",
        f"  GPU node:            gpu-b (Ready, nvidia.com/gpu 10, 1 card(s) registered by HAMi, "
        f"{HANDSHAKE})",
        "  card:                gpu-a/GPU-0 NVIDIA-A100, 8192 MiB, 100 cores, split 10; in use "
        "0 MiB, 0 cores",
        "  card:                gpu-b/GPU-1 NVIDIA-A100, 8192 MiB, 100 cores, split 10; in use "
        "0 MiB, 0 cores"],
    "kai-eligibility": [  # node-exporter on gpu-small asks no GPU
        *NO_HAMI, KAI_SCHEDULER,
        "  KAI GPU sharing:     on; queues: default-parent-queue, default-queue (under "
        "default-parent-queue)", "  tenancy:             none found",
        "  GPU node:            gpu-big (Ready, nvidia.com/gpu 8, 0 card(s) registered by HAMi)",
        "  GPU node:            gpu-small (Ready, nvidia.com/gpu 4, 0 card(s) registered by HAMi)",
        "  GPU node:            gpu-spare (Ready, nvidia.com/gpu 4, 0 card(s) registered by HAMi)",
        "  GPU users:           prod/train"],
    "kai-idle-node": [
        *NO_HAMI, KAI_SCHEDULER,
        "  KAI GPU sharing:     on; queues: org, prod (under org), research (under org)",
        "  tenancy:             none found",
        "  GPU node:            gpu-big (Ready, nvidia.com/gpu 8, 0 card(s) registered by HAMi)",
        "  GPU node:            gpu-small (Ready, nvidia.com/gpu 4, 0 card(s) registered by HAMi)",
        "  GPU users:           prod/train"],
    "kai-with-queues": [  # the Succeeded batch pod holds no GPU
        *NO_HAMI, KAI_SCHEDULER,
        "  KAI GPU sharing:     on; queues: org, team-a (under org), team-b (under org)",
        "  tenancy:             vCluster: 1 control plane(s) (vcluster-team-a/team-a)",
        "  GPU node:            gpu-1 (Ready, nvidia.com/gpu 8, 0 card(s) registered by HAMi)",
        "  GPU users:           vcluster-team-a/notebook-x"],
    "kamaji-management": [
        HAMI_SCHEDULER, HAMI_WEBHOOK, REAL_PLUGIN.format(n=1), "  KAI scheduler:       not found",
        HAMI_SETTINGS,
        "  tenancy:             Kamaji: 2 TenantControlPlane(s) (tenants/tenant-a, "
        "tenants/tenant-b)",
        f"  GPU node:            h100-1 (Ready, nvidia.com/gpu 8, 1 card(s) registered by HAMi, "
        f"{HANDSHAKE})",
        "  card:                h100-1/GPU-h100-0 NVIDIA-NVIDIA H100 NVL, 95830 MiB, 100 cores, "
        "split 8; in use 0 MiB, 0 cores"],
    "no-hami": [  # cpu-1 is no GPU node
        *NO_HAMI, "  KAI scheduler:       not found", "  tenancy:             none found",
        "  GPU node:            gpu-1 (Ready, nvidia.com/gpu 4, 0 card(s) registered by HAMi)",
        "  GPU users:           ml/train"],
    "one-card-per-node": [
        HAMI_SCHEDULER, HAMI_WEBHOOK,
        "  HAMi device plugin:  kube-system/hami-mock-device-plugin (DaemonSet), 3/3 ready; mock "
        "(simulated cards)", "  KAI scheduler:       not found", HAMI_SETTINGS,
        "  tenancy:             none found",
        *(f"  GPU node:            node-{i} ({'NotReady' if i == 2 else 'Ready'}, nvidia.com/gpu "
          f"10, 1 card(s) registered by HAMi, {HANDSHAKE})" for i in (1, 2, 3)),
        "  card:                node-1/GPU-l4-1 NVIDIA-NVIDIA L4, 24576 MiB, 100 cores, split 10; "
        "in use 8000 MiB, 20 cores by apps/infer",
        *(f"  card:                node-{i}/GPU-l4-{i} NVIDIA-NVIDIA L4, 24576 MiB, 100 cores, "
          "split 10; in use 0 MiB, 0 cores" for i in (2, 3)),
        "  GPU users:           apps/infer"],
}


def _found(api: b.ClusterApi, name: str = "c") -> Any:
    return inventory(read_cluster(api, name, SERVER))


def _lines(api: b.ClusterApi, name: str = "c") -> list[str]:
    lines = inspection_lines(_found(api, name))
    assert lines[0] == f"cluster {name} ({SERVER}, Kubernetes v1.31.4)"
    return lines[1:]


@pytest.mark.parametrize("shape", sorted(b.SHAPES))
def test_inspect_says_what_each_shape_has(shape: str) -> None:
    assert _lines(b.SHAPES[shape](), shape) == INSPECTED[shape]


def test_inspect_as_data_says_found_absent_or_unknown() -> None:
    data = inspection_data([_found(b.shape_kai_with_queues())])["clusters"][0]
    assert {k: data[k]["state"] for k in ("hami_scheduler", "hami_webhook",
                                          "hami_device_plugin", "kai_scheduler")} == {
        "hami_scheduler": "absent", "hami_webhook": "absent", "hami_device_plugin": "absent",
        "kai_scheduler": "found"}


# --------------------------------------------------------------------------- nodes and pods


def _daemonset_pod(daemonset: dict[str, Any], node: str, suffix: str) -> dict[str, Any]:
    """The pod the DaemonSet controller makes on `node` from the DaemonSet's template."""
    template = copy.deepcopy(daemonset["spec"]["template"])
    meta = template["metadata"]
    meta.update(name=f"{daemonset['metadata']['name']}-{suffix}",
                namespace=daemonset["metadata"]["namespace"], uid=f"uid-{suffix}")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {**template["spec"], "nodeName": node},
            "status": {"phase": "Running"}}


def test_the_device_plugins_own_pods_are_no_gpu_users() -> None:
    """HAMi's mock device plugin DaemonSet as upstream ships it (k8s-mock-plugin.yaml) and the
    chart's own plugin: their pods run on every GPU node and ask no GPU."""
    mock = yaml.safe_load((PINNED / "hami_mock_k8s-mock-plugin.yaml").read_text())
    api = b.shape_hami_eligibility()
    chart = api.objects[("DaemonSet", "kube-system", "hami-device-plugin")]
    api.put(mock, *(_daemonset_pod(ds, n, f"{i}{n[-1]}") for i, ds in enumerate((mock, chart))
                    for n in ("gpu-a", "gpu-b")))
    found = _found(api)
    assert found.gpu_users == ()
    assert [n.users for n in found.gpu_nodes] == [(), ()]
    assert all(c.idle for c in found.cards)
    # two device plugins: the mock one (its image) is the one named
    assert found.hami_device_plugin.where == (
        "kube-system/hami-mock-device-plugin-daemonset (DaemonSet)")
    assert found.hami_device_plugin.detail == "mock (simulated cards)"


def test_control_plane_and_cpu_nodes_listed_first_hide_no_gpu_node() -> None:
    """A real API server lists nodes by name: kind's `*-control-plane` and `cpu-*` come before
    `gpu-*`; none of them is a GPU node, and every GPU node after them is found."""
    api = b.shape_no_hami()
    control_plane = b.raw_node("kind-control-plane", labels=up.CONTROL_PLANE_LABEL,
                               taints=[up.CONTROL_PLANE_TAINT])
    api.put(control_plane, b.raw_node("cpu-0"), b.node("gpu-2", gpus=2))
    found = _found(api)
    assert [n.name for n in found.gpu_nodes] == ["gpu-1", "gpu-2"]
    assert [n.gpus for n in found.gpu_nodes] == ["4", "2"]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_is_no_gpu_user(phase: str) -> None:
    api = b.shape_no_hami()
    api.put(b.pod("done", "ml", "gpu-1", limits={"nvidia.com/gpu": "1"}, phase=phase))
    assert _found(api).gpu_users == ("ml/train",)


@pytest.mark.parametrize(("pod", "user"), [
    (b.pod("asks", "ml", "gpu-1", limits={"cpu": "2", "memory": "1Gi"}), False),
    (b.pod("asks", "ml", "gpu-1", limits={"cpu": "2", "nvidia.com/gpumem": "4000"}), True),
    (b.pod("asks", "ml", "gpu-1", annotations={"gpu-fraction": "0"}), False),
    (b.pod("asks", "ml", "gpu-1", annotations={"gpu-memory": "2000"}), True),
    (b.pod("asks", "ml", "gpu-1", limits={up.MIG_RESOURCE: "1"}), True),
])
def test_what_makes_a_pod_a_gpu_user(pod: dict[str, Any], user: bool) -> None:
    api = b.shape_no_hami()
    api.put(pod)
    found = _found(api)
    assert ("ml/asks" in found.gpu_users) is user
    assert ("ml/asks" in found.gpu_nodes[0].users) is user


def test_a_gpu_asked_in_requests_only_is_a_gpu_user() -> None:
    pod = b.pod("asks", "ml", "gpu-1")
    pod["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "1"}}
    api = b.shape_no_hami()
    api.put(pod)
    assert _found(api).gpu_users == ("ml/asks", "ml/train")


# --------------------------------------------------------------------------- HAMi's parts


def _hami_api(**values: Any) -> b.ClusterApi:
    return b.cluster(*b.hami("real", **values), b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0))


def _scheduler(api: b.ClusterApi) -> dict[str, Any]:
    return api.objects[("Deployment", "kube-system", "hami-scheduler")]


@pytest.mark.parametrize(("image", "tag"), [
    ("docker.io/projecthami/hami:v2.10.0", "v2.10.0"),
    ("localhost:5000/projecthami/hami", "latest"),
    ("localhost:5000/projecthami/hami:v2.9.0", "v2.9.0"),
    ("hami:v2.10.0", "v2.10.0"),
    (f"projecthami/hami:v2.10.0@sha256:{'a' * 64}", "v2.10.0"),
    (f"localhost:5000/projecthami/hami@sha256:{'b' * 64}", f"sha256:{'b' * 64}"),
])
def test_hamis_version_is_its_images_tag(image: str, tag: str) -> None:
    api = _hami_api()
    _scheduler(api)["spec"]["template"]["spec"]["containers"][1]["image"] = image
    assert _found(api).hami_scheduler.detail.startswith(f"HAMi {tag}, --node-lock-timeout")


def test_the_scheduler_without_a_hami_image_has_no_version() -> None:
    api = _hami_api()
    for container in _scheduler(api)["spec"]["template"]["spec"]["containers"]:
        container["image"] = "registry.example/scheduler:v1"
    assert _found(api).hami_scheduler.detail == (
        "--node-lock-timeout default (5m, cmd/scheduler/main.go:79)")


def test_the_node_lock_timeout_the_scheduler_runs_with_is_shown() -> None:
    api = _hami_api()
    _scheduler(api)["spec"]["template"]["spec"]["containers"][1]["command"].append(
        "--node-lock-timeout=5s")
    assert _found(api).hami_scheduler.detail == "HAMi v2.10.0, --node-lock-timeout=5s"


def test_a_webhook_without_a_failure_policy_fails_closed() -> None:
    """admissionregistration/v1 defaults failurePolicy to Fail."""
    api = _hami_api()
    webhook = api.objects[("MutatingWebhookConfiguration", "", "hami-webhook")]
    for hook in webhook["webhooks"]:
        hook.pop("failurePolicy", None)
    assert _found(api).hami_webhook.detail == "failurePolicy Fail"


def test_another_webhook_is_not_hamis() -> None:
    api = _hami_api()
    webhook = api.objects[("MutatingWebhookConfiguration", "", "hami-webhook")]
    webhook["webhooks"][0]["name"] = "other.example.com"
    found = _found(api)
    assert (found.hami_webhook.state, found.hami_webhook.where) == ("absent", "")


def test_the_resource_names_come_from_the_device_config() -> None:
    found = _found(b.cluster(
        *b.hami("real", resources={"resourceName": "example.com/vgpu",
                                   "resourceMem": "example.com/vmem",
                                   "resourceCores": "example.com/vcores"}),
        b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0, count_resource="example.com/vgpu"),
        b.pod("asks", "ml", "gpu-a", limits={"example.com/vmem": "1000"})))
    lines = inspection_lines(found)
    assert ("  HAMi settings:       --scheduler-name hami-scheduler; resources example.com/vgpu, "
            "example.com/vmem, example.com/vcores (from ConfigMap "
            "kube-system/hami-scheduler-device)") in lines
    assert (found.gpu_nodes[0].resource, found.gpu_nodes[0].gpus) == ("example.com/vgpu", "10")
    assert found.gpu_users == ("ml/asks",), "asking HAMi's memory resource is asking a GPU"


def test_a_device_config_that_is_not_yaml_falls_back_to_the_charts_names() -> None:
    api = _hami_api()
    api.objects[("ConfigMap", "kube-system", "hami-scheduler-device")]["data"][
        "device-config.yaml"] = "nvidia: [unclosed"
    found = _found(api)
    assert found.hami_resources_from == (
        "the chart's defaults (ConfigMap kube-system/hami-scheduler-device is not YAML)")
    assert found.hami_resources.count == "nvidia.com/gpu"


def test_without_the_device_config_the_charts_names_are_assumed_and_said() -> None:
    api = _hami_api()
    api.objects.pop(("ConfigMap", "kube-system", "hami-scheduler-device"))
    assert _found(api).hami_resources_from == "the chart's defaults (no device ConfigMap found)"


def test_an_unreadable_device_config_is_unknown_and_why() -> None:
    api = _hami_api()
    api.fail["get:ConfigMap"] = AdapterError(
        "get ConfigMap at https://x: 403 Forbidden")
    found = _found(api)
    assert found.hami_resources_from == (
        "the chart's defaults (the device config is unknown: ConfigMap could not be read (403 "
        'Forbidden: grant get on configmaps, docs/verify-any-cluster.md "RBAC"))')
    assert found.unknown["HAMi device config"] == (
        'unknown: ConfigMap could not be read (403 Forbidden: grant get on configmaps, '
        'docs/verify-any-cluster.md "RBAC")')


def test_unread_deployments_make_hamis_scheduler_and_settings_unknown() -> None:
    api = _hami_api()
    api.fail["list_objects:Deployment"] = AdapterError(
        "list Deployment at https://x: 500 Internal Server Error")
    found = _found(api)
    why = "unknown: Deployment could not be read (500 Internal Server Error)"
    assert found.hami_scheduler.unknown == why
    assert found.hami_resources_from == f"the chart's defaults (the device config is {why})"
    assert found.unknown["KAI scheduler"] == why


def test_no_hami_scheduler_means_no_device_config_to_read() -> None:
    found = _found(b.shape_no_hami())
    assert found.hami_resources_from == (
        "the chart's defaults (no hami-scheduler Deployment mounts a device ConfigMap)")


def test_a_node_hami_does_not_select_is_said() -> None:
    api = _hami_api(node_label_selector={"gpu": "on", "zone": "a"})
    assert _found(api).gpu_nodes[0].hami_unseen == (
        "not selected by hami-scheduler's --node-label-selector=gpu=on,zone=a: HAMi never "
        "registers its cards")


def test_a_register_annotation_hami_cannot_decode_is_said() -> None:
    api = b.cluster(*b.hami("real"), b.raw_node("gpu-a", gpus=1, annotations={
        "hami.io/node-nvidia-register": "not json"}))
    node = _found(api).gpu_nodes[0]
    assert node.cards == 0
    assert node.hami_unseen == ("HAMi cannot decode its hami.io/node-nvidia-register "
                                "(pkg/device/nvidia/device.go:302-315): no cards")


def test_a_gpu_node_hami_never_registered_has_no_cards_and_no_complaint() -> None:
    api = b.cluster(*b.hami("real"), b.node("gpu-plain", gpus=2))
    node = _found(api).gpu_nodes[0]
    assert (node.name, node.gpus, node.cards, node.hami_unseen) == ("gpu-plain", "2", 0, "")


def _requesting(gpus: int, observed_at: str) -> Any:
    """A node whose handshake is HAMi's scheduler's `Requesting_2025-06-13 09:07:40`
    (scheduler_test.go:1144), seen at `observed_at`."""
    api = b.cluster(*b.hami("real"), b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0,
                                                handshake=up.HANDSHAKE_REQUESTING_OLD, gpus=gpus))
    snapshot = replace(read_cluster(api, "c", SERVER), observed_at=observed_at)
    return inventory(snapshot).gpu_nodes[0].hami_unseen


DROPPED = ("handshake 'Requesting_2025-06-13 09:07:40' is over 60 s old and allocatable "
           "nvidia.com/gpu is 0: HAMi dropped its cards (pkg/device/devices.go:576-596)")


@pytest.mark.parametrize(("gpus", "observed_at", "why"), [
    (0, "2025-06-13T09:08:41+00:00", DROPPED),
    (0, "2025-06-13T09:08:20+00:00", ""),  # 40 s: not yet
    (0, "2025-06-13T09:08:41", DROPPED),  # no zone: UTC
    (0, "2025-06-13T11:08:20+02:00", ""),  # the same 40 s, seen from UTC+2
    (0, "2025-06-13T09:08:41-02:00", DROPPED),
    (0, "", DROPPED),  # no time recorded: now
    (10, "2025-06-13T09:08:41+00:00", ""),  # the device plugin still advertises the cards
])
def test_hami_drops_the_cards_of_a_node_whose_handshake_went_stale(gpus: int, observed_at: str,
                                                                   why: str) -> None:
    assert _requesting(gpus, observed_at) == why


# --------------------------------------------------------------------------- KAI


def _kai_config(**settings: str) -> dict[str, Any]:
    return {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
            "spec": {"admission": {"gpuSharing": True}, "global": dict(settings)}}


def test_kais_settings_come_from_its_config() -> None:
    """Config `spec.global` (pkg/apis/kai/v1/global.go:64-74): another scheduler name
    (resources_test.go:49), the queue and node-pool label keys."""
    api = b.cluster(b.kai_scheduler(name=up.OTHER_SCHEDULER),
                    _kai_config(schedulerName=up.OTHER_SCHEDULER, queueLabelKey="team/queue",
                                nodePoolLabelKey="team/pool"),
                    b.raw_node("gpu-a", gpus=4, labels={"team/pool": "fast"}))
    found = _found(api)
    assert (found.kai_scheduler_name, found.kai_queue_label, found.kai_node_pool_label) == (
        up.OTHER_SCHEDULER, "team/queue", "team/pool")
    assert found.kai_scheduler.where == (
        f"kai-scheduler/{up.OTHER_SCHEDULER}-default (Deployment)")
    assert found.kai_scheduler.detail == (
        f"schedulerName {up.OTHER_SCHEDULER}, default shard (nodes and queues without team/pool)")
    assert found.gpu_nodes[0].pool == "fast"


def test_other_shards_are_named_and_not_the_default() -> None:
    api = b.cluster(b.kai_scheduler(), b.kai_scheduler(shard="fast", partition=up.PARTITION),
                    _kai_config())
    found = _found(api)
    assert found.kai_scheduler.where == "kai-scheduler/kai-scheduler-default (Deployment)"
    assert found.kai_scheduler.detail == (
        "schedulerName kai-scheduler, default shard (nodes and queues without "
        "kai.scheduler/node-pool), other shards: kai-scheduler/kai-scheduler-fast")


def test_a_deployment_named_like_a_shard_of_another_scheduler_is_not_one() -> None:
    api = b.cluster(b.kai_scheduler(name=up.OTHER_SCHEDULER), _kai_config())
    found = _found(api)
    assert found.kai_scheduler.state == "absent"
    assert found.kai_operator  # its Config is there


def test_a_default_shard_without_a_command_line_is_found_by_its_name() -> None:
    shard = b.kai_scheduler()
    for container in shard["spec"]["template"]["spec"]["containers"]:
        container["args"] = []
    other = b.kai_scheduler(shard="fast")
    for container in other["spec"]["template"]["spec"]["containers"]:
        container["args"] = []
    found = _found(b.cluster(shard, other, _kai_config()))
    assert found.kai_scheduler.where == "kai-scheduler/kai-scheduler-default (Deployment)"
    assert found.kai_scheduler.detail.endswith("other shards: kai-scheduler/kai-scheduler-fast")


def test_full_hierarchy_fairness_is_read_from_the_default_shard() -> None:
    api = b.cluster(b.kai_scheduler(shard_args=up.NO_FULL_HIERARCHY), _kai_config())
    assert _found(api).kai_full_hierarchy is False
    assert _found(b.cluster(b.kai_scheduler(), _kai_config())).kai_full_hierarchy is True


def test_kais_operator_without_a_config_is_kai_with_sharing_off() -> None:
    api = b.shape_kai_with_queues()
    api.objects.pop(("Config", "", "kai-config"))
    api.objects.pop(("Queue", "", "org"))
    api.objects.pop(("Queue", "", "team-a"))
    api.objects.pop(("Queue", "", "team-b"))
    api.objects.pop(("Deployment", "kai-scheduler", "kai-scheduler-default"))
    found = _found(api)
    assert found.kai_operator and found.has_kai
    assert "  KAI GPU sharing:     off (no Config kai-config); queues: none" in (
        inspection_lines(found))


def test_an_unreadable_config_leaves_sharing_and_kais_scheduler_unknown() -> None:
    api = b.cluster(b.raw_node("gpu-a", gpus=4))
    api.fail["get:Config"] = AdapterError("get Config at https://x: 403 Forbidden")
    found = _found(api)
    config = ('unknown: Config could not be read (403 Forbidden: grant get on '
              'configs.kai.scheduler, docs/verify-any-cluster.md "RBAC")')
    assert found.kai_gpu_sharing == "unknown"
    assert found.unknown["KAI GPU sharing"] == config
    assert found.kai_scheduler.unknown == f"{config}, and it names KAI's scheduler"


def test_what_a_queue_has_allocated_is_read_as_a_quantity() -> None:
    """Queue status.allocated is a ResourceList: `nvidia.com/gpu: 330m` for fractions (what
    the queue controller reports; the plan counts KAI's pods, test_kai_bookkeeping.py)."""
    api = b.shape_kai_idle_node()
    allocated = {"org": "1500m", "prod": "4", "research": "NaN"}
    for name, value in allocated.items():
        api.objects[("Queue", "", name)]["status"] = {"allocated": {"nvidia.com/gpu": value}}
    queues = inspection_data([_found(api)])["clusters"][0]["queues"]
    assert [(q["name"], q["reported"], q["gpu_limit"]) for q in queues] == [
        ("org", 1.5, -1.0), ("prod", 4.0, 4.0), ("research", 0.0, -1.0)]


def test_a_queue_without_allocation_or_limit_reads_none_and_zero() -> None:
    api = b.shape_kai_with_queues()
    api.objects[("Queue", "", "team-a")]["spec"]["resources"] = {"gpu": "4"}  # not an object
    queues = {q.name: q for q in _found(api).queues}
    assert (queues["team-a"].gpu_limit, queues["team-a"].allocated) == (None, 0.0)
    assert queues["org"].gpu_limit is None


@pytest.mark.parametrize(("fraction", "user"), [
    ("0.5", True), ("500m", True), ("1k", True), ("9e18", True),
    ("0", False), ("0m", False), ("", False), ("NaN", False), ("Infinity", False),
    ("1e19", False), ("half", False),
])
def test_a_kai_share_annotation_counts_only_as_a_positive_finite_quantity(fraction: str,
                                                                          user: bool) -> None:
    api = b.shape_no_hami()
    api.put(b.pod("share", "ml", "gpu-1", annotations={"gpu-fraction": fraction}))
    assert ("ml/share" in _found(api).gpu_users) is user


# --------------------------------------------------------------------------- unknown, and why


def test_each_failed_read_is_unknown_with_its_own_reason() -> None:
    api = b.shape_kai_with_queues()
    api.fail["list_objects:StatefulSet"] = AdapterError(
        "list StatefulSet at https://x: 500 Internal Server Error (etcd)")
    api.fail["list_objects:Deployment"] = AdapterError("list Deployment at https://x: 403 "
                                                       "Forbidden")
    found = _found(api)
    assert found.unknown["vCluster"] == (
        "unknown: StatefulSet could not be read (500 Internal Server Error (etcd)); unknown: "
        'Deployment could not be read (403 Forbidden: grant list on deployments.apps, '
        'docs/verify-any-cluster.md "RBAC")')


@pytest.mark.parametrize(("kind", "error", "said"), [
    ("Lease", "list Lease at https://x: 403 Forbidden",
     'unknown: Lease could not be read (403 Forbidden: grant read access to Lease, '
     'docs/verify-any-cluster.md "RBAC")'),
    ("Pod", "list Pod at https://x: 500 Internal Server Error",
     "unknown: Pod could not be read (500 Internal Server Error)"),
    ("Pod", "list Pod at https://x: 4030 bytes lost", "unknown: Pod could not be read (list Pod "
     "at https://x: 4030 bytes lost)"),
    ("Pod", "list Pod: connection refused", "unknown: Pod could not be read (list Pod: "
     "connection refused)"),
    ("Pod", f"{UNANSWERED}: list Pod at https://x: read timed out (5s)",
     "unknown, because the API server did not answer"),
    ("Pod", f"{UNANSWERED} within 20s (discovery's total deadline, --discovery-timeout)",
     "unknown, because the API server did not answer within 20s"),
])
def test_why_a_read_is_unknown(kind: str, error: str, said: str) -> None:
    assert why_unread(kind, error) == said


@pytest.mark.parametrize(("error", "said"), [
    ("get /version at https://x: 403 Forbidden", "could not be read"),
    ("get /version at https://x: 503 Service Unavailable", "could not be read"),
    ("get /version at https://x: connection refused", "did not answer"),
])
def test_an_api_server_that_answers_with_an_error_is_not_silent(error: str, said: str) -> None:
    found = inventory(ClusterSnapshot(name="c", server=SERVER, error=error))
    assert inspection_lines(found) == [f"cluster c ({SERVER}): {said}: {error}"]


def test_what_keeps_verifys_pods_off_a_node_is_said_on_the_node() -> None:
    """verify's pods get the API server's two NoExecute tolerations only: a not-ready node's
    NoExecute taint is tolerated, its NoSchedule one is not, nor is a cordon; PreferNoSchedule
    never refuses."""
    api = b.shape_no_hami()
    api.put(b.raw_node("gpu-2", gpus=2, unschedulable=True, taints=[
        dict(up.TAINT_PREFER), {"key": up.NOT_READY_TAINT_KEY, "effect": "NoExecute"},
        {"key": up.NOT_READY_TAINT_KEY, "effect": "NoSchedule"},
        dict(up.TAINT_KEY1), {**up.TAINT_KEY1, "effect": "NoExecute"}]))
    node = next(n for n in _found(api).gpu_nodes if n.name == "gpu-2")
    assert node.blockers == ("cordoned (spec.unschedulable)",
                             f"taint {up.NOT_READY_TAINT_KEY}:NoSchedule not tolerated",
                             "taint key1=value1:NoSchedule not tolerated",
                             "taint key1=value1:NoExecute not tolerated")
    assert node.kai_unready == ("node is unschedulable",)


def test_a_webhook_called_by_url_says_so() -> None:
    api = _hami_api()
    hook = api.objects[("MutatingWebhookConfiguration", "", "hami-webhook")]["webhooks"][0]
    hook["clientConfig"] = {"url": "https://hami.example:443/webhook"}
    found = _found(api)
    assert found.hami_webhook.where == "hami-webhook (a URL, not a Service)"
    assert inspection_data([found])["clusters"][0]["hami_webhook"]["ready"] == ""


def test_several_workloads_of_one_part_are_each_named() -> None:
    api = b.shape_hami_eligibility()
    second = copy.deepcopy(api.objects[("DaemonSet", "kube-system", "hami-device-plugin")])
    second["metadata"]["name"] = "hami-device-plugin-l4"
    api.put(second, b.workload("StatefulSet", "team-b", "vcluster-team-b", {"app": "vcluster"},
                               ["ghcr.io/loft-sh/vcluster-pro:0.35.3"]),
            b.workload("StatefulSet", "team-a", "vcluster-team-a", {"app": "vcluster"},
                       ["ghcr.io/loft-sh/vcluster-pro:0.35.3"]))
    found = _found(api)
    assert found.hami_device_plugin.where == ("kube-system/hami-device-plugin (DaemonSet), "
                                              "kube-system/hami-device-plugin-l4 (DaemonSet)")
    assert found.tenancy == ("vCluster: 2 control plane(s) (vcluster-team-a/team-a, "
                             "vcluster-team-b/team-b)",)
    kai = _found(b.cluster(b.kai_scheduler(), b.kai_scheduler(shard="a", partition="pa"),
                           b.kai_scheduler(shard="b", partition="pb"), _kai_config()))
    assert kai.kai_scheduler.detail.endswith(
        "other shards: kai-scheduler/kai-scheduler-a, kai-scheduler/kai-scheduler-b")


def test_the_node_label_selector_is_shown_with_hamis_settings() -> None:
    lines = inspection_lines(_found(_hami_api(node_label_selector={"gpu": "on", "zone": "a"})))
    assert f"{HAMI_SETTINGS}; --node-label-selector gpu=on,zone=a" in lines


def test_another_kai_installs_shards_are_not_this_ones() -> None:
    """A second KAI whose Config names `kai-scheduler-two` makes `kai-scheduler-two-default`
    (`<schedulerName>-<shard>`), which starts like a shard of `kai-scheduler` but runs with
    --scheduler-name=kai-scheduler-two."""
    api = b.cluster(b.kai_scheduler(), b.kai_scheduler(name="kai-scheduler-two"), _kai_config())
    found = _found(api)
    assert found.kai_scheduler.where == "kai-scheduler/kai-scheduler-default (Deployment)"
    assert "other shards" not in found.kai_scheduler.detail


def test_a_shard_named_default_with_a_partition_is_not_the_default_shard() -> None:
    api = b.cluster(b.kai_scheduler(partition=up.PARTITION), _kai_config())
    found = _found(api)
    assert found.kai_scheduler.state == "absent"


def test_unreadable_reads_are_unknown_facts_not_none() -> None:
    api = b.shape_one_card_per_node()
    for kind in ("Queue", "TenantControlPlane", "Node", "Pod"):
        api.fail[f"list_objects:{kind}"] = AdapterError(f"list {kind} at https://x: 403 Forbidden")
    found = _found(api)
    grant = {"Queue": "list on queues.scheduling.run.ai",
             "TenantControlPlane": "list on tenantcontrolplanes.kamaji.clastix.io",
             "Node": "list on nodes", "Pod": "list on pods"}
    for fact, kind in (("queues", "Queue"), ("Kamaji", "TenantControlPlane"),
                       ("GPU nodes", "Node"), ("GPU users", "Pod")):
        assert found.unknown[fact] == (f"unknown: {kind} could not be read (403 Forbidden: grant "
                                       f'{grant[kind]}, docs/verify-any-cluster.md "RBAC")')
    assert (found.gpu_nodes, found.cards, found.gpu_users) == (None, None, None)
    assert (f"  GPU nodes:           {found.unknown['GPU nodes']}") in inspection_lines(found)


def test_unread_pods_leave_what_is_in_use_unknown() -> None:
    api = b.shape_one_card_per_node()
    api.fail["list_objects:Pod"] = AdapterError("list Pod at https://x: 403 Forbidden")
    found = _found(api)
    assert [(c.used_memory, c.used_cores, c.users) for c in found.cards] == [(None, None, None)] * 3
    assert [n.users for n in found.gpu_nodes] == [None] * 3


def test_a_control_plane_found_is_not_unknown_though_another_read_failed() -> None:
    api = b.shape_kai_with_queues()
    api.fail["list_objects:Deployment"] = AdapterError("list Deployment at https://x: 403 "
                                                       "Forbidden")
    found = _found(api)
    assert found.tenancy == ("vCluster: 1 control plane(s) (vcluster-team-a/team-a)",)
    assert "vCluster" not in found.unknown


@pytest.mark.parametrize(("node", "resource", "gpus"), [
    (b.raw_node("gpu-one", gpus=1), "nvidia.com/gpu", "1"),
    (b.raw_node("gpu-hami", count_resource="example.com/vgpu", gpus=10), "example.com/vgpu",
     "10"),
    (b.raw_node("gpu-late", annotations={"hami.io/node-nvidia-register":
                                         up.REGISTER_A100_GPU0}), "example.com/vgpu", "0"),
    (b.raw_node("gpu-odd", annotations={"hami.io/node-nvidia-register": "not json"}),
     "nvidia.com/gpu", "0"),
])
def test_every_gpu_node_is_found_with_what_it_advertises(node: dict[str, Any], resource: str,
                                                         gpus: str) -> None:
    """A single GPU; HAMi's own count name; HAMi's register annotation before its device
    plugin advertises anything; an annotation HAMi cannot decode: each is a GPU node."""
    api = b.cluster(*b.hami("real", resources={"resourceName": "example.com/vgpu"}),
                    b.raw_node("cpu-0"), node)
    found = _found(api)
    assert [(n.name, n.resource, n.gpus) for n in found.gpu_nodes] == [
        (node["metadata"]["name"], resource, gpus)]


def test_a_plain_gpu_node_in_a_cluster_where_hami_counts_another_name_is_found() -> None:
    api = b.cluster(*b.hami("real", resources={"resourceName": "example.com/vgpu"}),
                    b.node("gpu-nvidia", gpus=2))
    assert [(n.name, n.resource, n.gpus) for n in _found(api).gpu_nodes] == [
        ("gpu-nvidia", "nvidia.com/gpu", "2")]


def test_absent_node_labels_and_annotations_are_empty_in_the_json() -> None:
    api = b.shape_kai_idle_node()
    node = api.objects[("Node", "", "gpu-small")]
    node["metadata"]["labels"] = {}
    data = inspection_data([_found(api)])["clusters"][0]
    small = next(n for n in data["gpu_nodes"] if n["name"] == "gpu-small")
    assert (small["hostname"], small["handshake"], small["pool"]) == ("", "", "")


def test_asking_any_resource_hamis_device_config_names_is_asking_a_gpu() -> None:
    """The chart's device config names a memory-percentage resource too
    (nvidia.com/gpumem-percentage): a pod asking only that is a GPU user."""
    api = b.cluster(*b.hami("real"), b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0),
                    b.pod("pct", "ml", "gpu-a", limits={"nvidia.com/gpumem-percentage": "50"}))
    found = _found(api)
    assert found.hami_resources.memory_percentage == "nvidia.com/gpumem-percentage"
    assert found.gpu_users == ("ml/pct",)


def test_why_kai_counts_a_node_not_ready_is_said() -> None:
    """KAI v0.16.8 scheduler_utils.go:12-45: Ready must be True, the pressure and network
    conditions False."""
    conditions: list[Any] = ["not a condition", {"type": "Ready", "status": "Unknown"},
                             {"type": "MemoryPressure", "status": "False"},
                             {"type": "DiskPressure", "status": "True"},
                             {"type": "PIDPressure", "status": "Unknown"},
                             {"type": "NetworkUnavailable", "status": "True"},
                             {"type": "Other", "status": "True"}]
    api = b.cluster(b.kai_scheduler(), _kai_config(),
                    b.raw_node("gpu-a", gpus=4, conditions=conditions))
    assert _found(api).gpu_nodes[0].kai_unready == (
        "node has NotReady condition", "node has DiskPressure condition",
        "node has PIDPressure condition", "node has NetworkUnavailable condition")


@pytest.mark.parametrize(("handshake", "dropped"), [
    ("Requesting_2025-06-13 09:07:40", True),
    ("Requesting_2025-6-13 9:07:40", False),  # not Go's time.DateTime: HAMi cannot parse it
    ("Requesting_2025-13-45 09:07:40", False),  # no such date
    ("Requesting 2025-06-13 09:07:40", False),
    ("Reported_2025-06-13 09:07:40", False),
])
def test_only_a_stale_request_hami_can_parse_drops_the_cards(handshake: str,
                                                             dropped: bool) -> None:
    api = b.cluster(*b.hami("real"), b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0,
                                                handshake=handshake, gpus=0))
    snapshot = replace(read_cluster(api, "c", SERVER), observed_at="2025-06-13T09:08:40+00:00")
    assert bool(inventory(snapshot).gpu_nodes[0].hami_unseen) is dropped


def test_one_card_still_advertised_keeps_them() -> None:
    assert _requesting(1, "2025-06-13T09:08:41+00:00") == ""


def test_the_last_scheduler_name_flag_wins_in_either_form() -> None:
    api = _hami_api()
    command = _scheduler(api)["spec"]["template"]["spec"]["containers"][1]["command"]
    command += ["--scheduler-name", "hami-two", "--scheduler-name"]  # the last has no value
    assert _found(api).hami_scheduler_name == "hami-two"
    command.pop()
    assert _found(api).hami_scheduler_name == "hami-two"


def test_a_node_label_selector_with_spaces_and_no_value_is_read_as_hami_reads_it() -> None:
    api = _hami_api()
    command = _scheduler(api)["spec"]["template"]["spec"]["containers"][1]["command"]
    command.append("--node-label-selector=gpu = on, zone=a,junk")
    api.objects[("Node", "", "gpu-a")]["metadata"]["labels"].update(gpu="on", zone="a")
    found = _found(api)
    assert found.hami_node_selector == {"gpu": "on", "zone": "a"}
    assert found.gpu_nodes[0].hami_unseen == ""


def test_a_mig_resource_counts_only_with_devices_advertised() -> None:
    api = b.shape_no_hami()
    api.put(b.raw_node("gpu-mig", gpus=4, allocatable={
        up.MIG_RESOURCE: "0", "nvidia.com/mig-1g.5gb": "lots", "nvidia.com/mig-2g.10gb": "1"}))
    node = next(n for n in _found(api).gpu_nodes if n.name == "gpu-mig")
    assert node.mig == ("nvidia.com/mig-2g.10gb=1",)


def test_a_resource_the_device_config_leaves_out_counts_nothing() -> None:
    """An absent key is empty to HAMi's yaml.v2 reader (pkg/scheduler/config/config.go:484-496):
    a pod asking only the memory-percentage resource then asks HAMi for no GPU."""
    api = b.cluster(*b.hami("real"), b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0),
                    b.pod("pct", "ml", "gpu-a", limits={"nvidia.com/gpumem-percentage": "50"}))
    config = api.objects[("ConfigMap", "kube-system", "hami-scheduler-device")]["data"]
    config["device-config.yaml"] = config["device-config.yaml"].replace(
        "  resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n", "", 1)
    found = _found(api)
    assert found.hami_resources.memory_percentage == ""
    assert found.gpu_users == ()
