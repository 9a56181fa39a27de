"""What vcluster-kai makes that the mutation run of render.py found untested: verify's pods as a
team's vCluster receives them, the queue the foreign-queue probe names, the labels a GPU worker
and the queues carry, KAI's CI RBAC, the release's settings, a node's GPU count and vCluster's
host names at the 63-character limit (against tests/vcluster_kai/vcluster_wire.py, written
from vCluster's SafeConcatName)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpulab import naming
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests.schemas import pinned_data
from tests.vcluster_kai import vcluster_wire

MANAGED = {naming.LABEL_MANAGED: "gpulab"}


def _with_teams(profile: VclusterKaiProfile, count: int) -> VclusterKaiProfile:
    data = profile.model_dump(mode="json")
    data["teams"] = data["teams"][:count]
    return VclusterKaiProfile.model_validate(data)


def test_every_verify_pod_runs_once_at_once_from_the_preloaded_image(
        kai_profile: VclusterKaiProfile) -> None:
    """A probe never restarts (its outcome is what KAI did with it), is gone at once when
    verify deletes it, and uses the image up loaded into the nodes (no registry on a laptop
    without internet); it names the check it serves and is labelled as gpulab's."""
    team = kai_profile.teams[0]
    namespace, *pods = kr.verify_objects(kai_profile, team)
    assert namespace["metadata"] == {"name": "gpulab-verify", "labels": MANAGED}
    checks = {}
    for pod in pods:
        spec = pod["spec"]
        assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"]) == ("Never", 0)
        (container,) = spec["containers"]
        assert (container["name"], container["imagePullPolicy"]) == ("app", "IfNotPresent")
        labels = pod["metadata"]["labels"]
        assert labels[naming.LABEL_MANAGED] == "gpulab"
        checks[pod["metadata"]["name"]] = (labels[kr.CHECK_LABEL], labels[kr.QUEUE_LABEL])
    assert checks == {"gpu-share": ("KAI-05", "team-nlp"),
                      "gpu-over-limit": ("KAI-06", "team-nlp"),
                      "gpu-over-capacity": ("KAI-07", "team-nlp"),
                      "queue-foreign": ("KAI-08", "team-vision")}


def test_a_whole_gpu_capacity_probe_is_in_the_teams_own_queue(
        kai_profile: VclusterKaiProfile) -> None:
    """On a pool of 4-GPU nodes a team without a GPU limit probes capacity with whole GPUs (one
    more than a node has on several nodes), in its own queue like its other pods."""
    data = kai_profile.model_dump(mode="json")
    data["gpu_pool"].update(count=4, nodes=2)
    data["teams"][0]["queue"]["resources"]["gpu"]["limit"] = -1
    profile = VclusterKaiProfile.model_validate(data)
    pods = {p["metadata"]["name"]: p for p in kr.verify_objects(profile, profile.teams[0])[1:]}
    probe = pods["gpu-over-capacity"]
    assert probe["metadata"]["labels"][kr.QUEUE_LABEL] == "team-nlp"
    assert probe["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "5"}}
    assert "gpu-over-limit" not in pods  # no limit to go over


def test_the_foreign_queue_is_the_next_teams_or_kais_default(
        kai_profile: VclusterKaiProfile) -> None:
    two = _with_teams(kai_profile, 2)
    foreign = kr.verify_objects(two, two.teams[0])[-1]
    assert foreign["metadata"]["name"] == "queue-foreign"
    assert foreign["metadata"]["labels"][kr.QUEUE_LABEL] == two.teams[1].queue_name
    one = _with_teams(kai_profile, 1)
    alone = kr.verify_objects(one, one.teams[0])[-1]
    assert alone["metadata"]["labels"][kr.QUEUE_LABEL] == "default-queue"


def test_the_gpu_worker_carries_kais_ci_labels_and_the_write_ups_selector(
        kai_profile: VclusterKaiProfile) -> None:
    """KAI's hack/e2e-kind-config.yaml labels (pool, device plugin) with upstream's values, and
    what GPU feature discovery puts on a real node: the write-up's nodeSelector
    `nvidia.com/gpu.present: "true"` and the pool's product, count and memory."""
    labels = kr.gpu_node_labels(kai_profile)
    theirs = yaml.safe_load((pinned_data() / "kai_v0.16.8_hack_e2e-kind-config.yaml").read_text())
    upstream = theirs["nodes"][1]["labels"]
    for key in ("run.ai/simulated-gpu-node-pool", "nvidia.com/gpu.deploy.device-plugin"):
        assert labels[key] == upstream[key], key
    pool = kai_profile.gpu_pool
    assert labels == {"run.ai/simulated-gpu-node-pool": "default",
                      "nvidia.com/gpu.deploy.device-plugin": "true",
                      "nvidia.com/gpu.present": "true",
                      "nvidia.com/gpu.product": pool.model,
                      "nvidia.com/gpu.count": str(pool.count),
                      "nvidia.com/gpu.memory": str(pool.memory_mib)}


def test_queues_carry_the_lab_label_only_on_an_existing_cluster(
        kai_profile: VclusterKaiProfile) -> None:
    for queue in kr.queue_objects(kai_profile):
        assert queue["metadata"]["labels"] == MANAGED
    for queue in kr.queue_objects(kai_profile, "staging-gpus"):
        assert queue["metadata"]["labels"] == {**MANAGED, naming.LABEL_LAB: "staging-gpus"}


def test_the_reservation_rbac_is_what_kais_ci_creates(kai_profile: VclusterKaiProfile) -> None:
    """hack/setup-e2e-cluster.sh at v0.16.8: `kubectl create clusterrole pods-patcher
    --verb=patch --resource=pods` and `kubectl create rolebinding fake-status-updater
    --clusterrole=pods-patcher --serviceaccount=gpu-operator:status-updater -n
    kai-resource-reservation` (kubectl writes roleRef as the ClusterRole of rbac's group)."""
    role, binding = kr.reservation_rbac(kai_profile)
    assert role["metadata"] == {"name": "pods-patcher", "labels": MANAGED}
    assert binding["metadata"] == {"name": "fake-status-updater",
                                   "namespace": "kai-resource-reservation", "labels": MANAGED}
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": "pods-patcher"}


def test_a_teams_vcluster_syncs_priority_classes_and_installs_into_the_management_cluster(
        kai_profile: VclusterKaiProfile) -> None:
    """Without priorityClasses synced from the host the syncer clears priorityClassName on the
    host pods (docs/dev/upstream-facts, vcluster §3)."""
    release = kr.vcluster_release(kai_profile, kai_profile.teams[0])
    assert release.values["sync"]["fromHost"]["priorityClasses"] == {"enabled": True}
    assert release.kubeconfig_of == "management"


@pytest.mark.parametrize(("allocatable", "gpus"), [
    ({"nvidia.com/gpu": "8"}, 8), ({"nvidia.com/gpu": 2}, 2), ({}, 0), (None, 0),
    ({"nvidia.com/gpu": "lots"}, 0),
])
def test_a_nodes_gpus_are_its_allocatable_or_zero(allocatable: dict[str, Any] | None,
                                                  gpus: int) -> None:
    node: dict[str, Any] = {"metadata": {"name": "gpu-1"}}
    if allocatable is not None:
        node["status"] = {"allocatable": allocatable}
    assert kr.node_gpus(node) == gpus
    assert kr.node_gpus(None) == 0


@pytest.mark.parametrize("length", [62, 63, 64, 69])
@pytest.mark.parametrize("dot_at_52", [False, True])
def test_host_pod_names_agree_with_vclusters_safe_concat_name(length: int,
                                                               dot_at_52: bool) -> None:
    """gpulab names a virtual pod's host pod as vCluster does, at and around 63 characters,
    including a cut that leaves a '.' before the '-' vCluster drops."""
    namespace, vcluster = "ns", "vc"  # the pod's name holds the cut (its 52nd character)
    fixed = len(f"-x-{namespace}-x-{vcluster}")
    name = "p" * (length - fixed)
    if dot_at_52:
        name = name[:51] + "." + name[52:]
    got = kr.host_pod_name(name, namespace, vcluster)
    assert len(f"{name}-x-{namespace}-x-{vcluster}") == length
    assert got == vcluster_wire.safe_concat_name(name, "x", namespace, "x", vcluster)
    assert len(got) <= 63
    if dot_at_52 and length > 63:
        assert ".-" not in got and got[51] == "-"
