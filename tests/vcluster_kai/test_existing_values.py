"""vcluster-kai on an existing cluster: each team's vCluster values for the three ways of
reaching it (a LoadBalancer, a NodePort on a node's address, a port-forward), word for word and
in the pinned chart's closed schema, and what the real `helm template` of the pinned chart
(vCluster v0.35.3) renders from them: the Service the cluster gets and the config the vCluster
reads (its certificate's extra SANs, the server of the kubeconfig it exports)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests.rendered import find
from tests.rendered import render as helm_template
from tests.vcluster_kai.test_render import validate_vcluster_values

LAB = "staging-gpus"
LABELS = {"gpulab.dev/lab": LAB, "app.kubernetes.io/managed-by": "gpulab"}


def _profile() -> VclusterKaiProfile:
    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    return profile


PROFILE = _profile()
TEAM = PROFILE.teams[0]  # team-nlp: API NodePort 31443, kubelet NodePort 30443


def _values(how: str, address: str | None, server: str | None) -> dict[str, Any]:
    servers = {TEAM.name: server} if server else {}
    expose = kr.ExistingExpose(how, address, LAB, servers)
    return kr.vcluster_release(PROFILE, TEAM, expose).values


# how, node address, the URL the provider gives the team's port -> controlPlane.service,
# controlPlane.proxy, exportKubeConfig (None: left out)
WAYS: dict[str, tuple[str, str | None, str | None, dict[str, Any], dict[str, Any],
                      dict[str, Any] | None]] = {
    "LoadBalancer": (
        "LoadBalancer", None, None,
        {"labels": LABELS, "spec": {"type": "LoadBalancer"}},
        {"extraSANs": ["localhost"]}, None),
    "NodePort": (
        "NodePort", "10.20.0.7", "https://10.20.0.7:31443",
        {"spec": {"type": "NodePort"}, "httpsNodePort": 31443, "kubeletNodePort": 30443,
         "labels": LABELS},
        {"extraSANs": ["10.20.0.7", "localhost"]}, {"server": "https://10.20.0.7:31443"}),
    "port-forward": (
        "port-forward", None, "https://127.0.0.1:31443",
        {"labels": LABELS, "spec": {"type": "ClusterIP"}},
        {"extraSANs": ["localhost"]}, {"server": "https://127.0.0.1:31443"}),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_each_way_of_reaching_a_vcluster_has_its_values(way: str) -> None:
    how, address, server, service, proxy, export = WAYS[way]
    values = _values(how, address, server)
    assert values["controlPlane"]["service"] == service
    assert values["controlPlane"]["proxy"] == proxy
    assert values.get("exportKubeConfig") == export
    # the write-up's settings stay whatever the way
    assert values["experimental"] == {"syncSettings": {"setOwner": False}}
    assert values["sync"]["fromHost"]["nodes"] == {"enabled": True, "selector": {"all": True}}
    validate_vcluster_values(values)


def test_a_nodeport_without_a_node_address_adds_no_empty_san() -> None:
    values = _values("NodePort", None, "https://127.0.0.1:31443")
    assert values["controlPlane"]["proxy"] == {"extraSANs": ["localhost"]}
    assert values["controlPlane"]["service"]["labels"] == LABELS


def test_a_loadbalancer_before_it_has_an_address_exports_no_server() -> None:
    """The Service's address is known only once the cluster's LoadBalancer gives it one; gpulab
    writes it into the saved kubeconfig then, so the chart exports no kubeconfig of its own."""
    assert "exportKubeConfig" not in _values("LoadBalancer", "10.20.0.7",
                                             "https://10.20.0.7:31443")


def _config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The vcluster.yaml the chart hands the vCluster (Secret vc-config-<release>)."""
    secret = find(objects, "Secret", f"vc-config-{TEAM.name}")
    raw = (secret.get("data") or {}).get("config.yaml")
    text = base64.b64decode(raw).decode() if raw is not None else \
        secret["stringData"]["config.yaml"]
    config = yaml.safe_load(text)
    assert isinstance(config, dict)
    return config


@pytest.mark.helm
@pytest.mark.parametrize(("way", "kind", "ports"), [
    ("LoadBalancer", "LoadBalancer", [("https", 0)]),
    ("NodePort", "NodePort", [("https", 31443), ("kubelet", 30443)]),
    ("port-forward", "ClusterIP", [("https", 0), ("kubelet", 0)]),
])
def test_the_pinned_chart_renders_the_way_into_the_service_and_the_vclusters_config(
        way: str, kind: str, ports: list[tuple[str, int]]) -> None:
    how, address, server, _, proxy, export = WAYS[way]
    values = _values(how, address, server)
    objects = helm_template("vcluster", TEAM.name, TEAM.namespace, values)
    service = find(objects, "Service", TEAM.name)
    assert service["spec"]["type"] == kind
    # the template writes nodePort on every port (templates/service.yaml:29); 0 is "none"
    assert [(p["name"], p.get("nodePort")) for p in service["spec"]["ports"]] == ports
    assert {k: service["metadata"]["labels"].get(k) for k in LABELS} == LABELS
    exposed = [o["metadata"]["name"] for o in objects if o["kind"] == "Service"
               and o["spec"].get("type") in ("NodePort", "LoadBalancer")]
    assert exposed == ([] if kind == "ClusterIP" else [TEAM.name])
    config = _config(objects)
    assert config["controlPlane"]["proxy"]["extraSANs"] == proxy["extraSANs"]
    # without ours the chart's default server "" (values.yaml exportKubeConfig.server)
    assert config["exportKubeConfig"]["server"] == (export["server"] if export else "")
    assert config["experimental"]["syncSettings"]["setOwner"] is False


@pytest.mark.slow
@pytest.mark.parametrize("way", list(WAYS))
def test_gpu_node_taints_reach_the_vclusters_config_as_enforced_tolerations(way: str) -> None:
    """The tolerations the GPU nodes' taints need (gpulab.taints) are in the chart's closed
    schema and in the config the vCluster reads, which adds them to every pod it syncs to the
    host (vCluster v0.35.3 pkg/controllers/resources/pods/translate/translator.go:446-451,
    parsed by pkg/util/toleration/toleration.go:11-62)."""
    how, address, server, *_ = WAYS[way]
    expose = kr.ExistingExpose(how, address, LAB, {TEAM.name: server} if server else {},
                               ("nvidia.com/gpu=present:NoSchedule", "sku:NoSchedule"))
    values = kr.vcluster_release(PROFILE, TEAM, expose).values
    validate_vcluster_values(values)
    config = _config(helm_template("vcluster", TEAM.name, TEAM.namespace, values))
    assert config["sync"]["toHost"]["pods"]["enforceTolerations"] == [
        "nvidia.com/gpu=present:NoSchedule", "sku:NoSchedule"]
    assert config["sync"]["fromHost"]["nodes"]["enabled"] is True


def test_verify_probes_as_synced_tolerate_the_gpu_nodes_taints() -> None:
    """The lab's verify pods (render.verify_objects), as the vCluster copies them to the host
    with the enforced tolerations (tests/vcluster_kai/vcluster_wire.enforce_tolerations), pass
    kube-scheduler's taint rule on a GPU node tainted as GKE taints them; without them they do
    not, and a cordon is still a cordon."""
    from gpulab.cluster.rules import DEFAULT_TOLERATIONS, untolerated_taints
    from gpulab.taints import blocking_taints, vcluster_toleration
    from tests.existing.flavours import SHAPES
    from tests.vcluster_kai.vcluster_wire import enforce_tolerations

    node = next(n for n in SHAPES["gpu-taint"].nodes if n["metadata"]["name"] == "gpu-1")
    enforce = [vcluster_toleration(t) for t in blocking_taints(node)]
    expose = kr.ExistingExpose("NodePort", "10.20.0.7", LAB, {}, tuple(enforce))
    values = kr.vcluster_release(PROFILE, TEAM, expose).values
    enforced = values["sync"]["toHost"]["pods"]["enforceTolerations"]
    pods = [o for o in kr.verify_objects(PROFILE, TEAM) if o["kind"] == "Pod"]
    assert pods
    for pod in pods:
        bare = untolerated_taints(node, pod["spec"].get("tolerations") or DEFAULT_TOLERATIONS)
        assert bare == ["taint nvidia.com/gpu=present:NoSchedule not tolerated"]
        host = enforce_tolerations(pod["spec"], enforced)
        assert untolerated_taints(node, [*host["tolerations"], *DEFAULT_TOLERATIONS]) == []
        cordoned = {**node, "spec": {**node["spec"], "unschedulable": True}}
        assert untolerated_taints(cordoned, [*host["tolerations"], *DEFAULT_TOLERATIONS]) == [
            "cordoned (spec.unschedulable)"]


@pytest.mark.parametrize(("text", "want"), [
    # vCluster v0.35.3 pkg/util/toleration/toleration_test.go:20-75, its own cases (the bad-label case, :76-85, is label validation, left out)
    ("*", {"operator": "Exists"}),
    ("key", {"key": "key"}),
    ("key=value", {"key": "key", "value": "value"}),
    ("key=value:NoSchedule", {"key": "key", "value": "value", "effect": "NoSchedule",
                              "operator": "Equal"}),
    ("key:NoSchedule", {"key": "key", "effect": "NoSchedule", "operator": "Exists"}),
])
def test_the_toleration_parser_answers_vclusters_own_cases(text: str,
                                                           want: dict[str, str]) -> None:
    from tests.vcluster_kai.vcluster_wire import parse_toleration

    assert parse_toleration(text) == want
