"""Provider existing answers a stack's ClusterNeeds as kind does (providers.base.ClusterFacts):
the GPU pool's nodes are the cluster's GPU nodes, then those named for fake GPUs; each port's
URL follows how the vClusters are exposed (port-forward on this host, NodePort on the node's
address, none yet behind a LoadBalancer); no LoadBalancer range is handed out."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.providers.base import ClusterFacts, ClusterIdentity
from gpulab.providers.existing import ExistingFacts, FakeNode, GpuNode, cluster_facts
from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.steps import build_steps

IDENTITY = ClusterIdentity("https://api:6443", "ctx", "(default)", "uid-1")


def _facts(**changes: Any) -> ExistingFacts:
    base: dict[str, Any] = {
        "identity": IDENTITY, "version": "v1.34.2", "default_storage_class": "standard",
        "gpu_nodes": (GpuNode("gpu-2", 4, "", "a device plugin"),
                      GpuNode("gpu-1", 8, "", "a device plugin")),
        "node_address": "10.0.0.5", "load_balancer": False,
        "namespaces_found": (), "queues_found": ()}
    return ExistingFacts(**{**base, **changes})


@pytest.mark.parametrize(("expose", "address", "url"), [
    ("port-forward", None, "https://127.0.0.1:{host}"),
    ("NodePort", "10.0.0.5", "https://10.0.0.5:{node}"),
    ("NodePort", "fd00::5", "https://[fd00::5]:{node}"),
])
def test_each_teams_url_follows_how_the_vclusters_are_exposed(expose: str, address: str | None,
                                                             url: str) -> None:
    profile: Any = load_profile("vcluster-kai").profile
    facts = cluster_facts(kr.cluster_needs(profile),
                          _facts(expose=expose, node_address=address))
    assert facts.shared and facts.gpus == "found" and facts.lb_range is None
    for team in profile.teams:
        wanted = url.format(host=team.host_port, node=team.api_node_port)
        assert facts.url_for(kr.team_port(team)) == wanted
        kubeconfig = build_steps(
            profile, "lab", _answered(_facts(expose=expose, node_address=address)))
        shown = [a.body["server"] for s in kubeconfig if s.name == f"{team.name}/vcluster"
                 for a in s.describe() if a.kind == "file"]
        assert shown == [wanted]  # what plan shows as the team's kubeconfig server


def _answered(found: ExistingFacts) -> ClusterFacts:
    """The vcluster-kai profile's ClusterFacts on `found`, as the provider's ground gives it."""
    profile: Any = load_profile("vcluster-kai").profile
    return cluster_facts(kr.cluster_needs(profile), found)


def test_behind_a_load_balancer_no_url_is_known_before_up() -> None:
    profile: Any = load_profile("vcluster-kai").profile
    facts = cluster_facts(kr.cluster_needs(profile), _facts(expose="LoadBalancer"))
    assert facts.urls == {}
    steps = build_steps(profile, "lab", _answered(_facts(expose="LoadBalancer")))
    team = profile.teams[0]
    shown = [a.body["server"] for s in steps if s.name == f"{team.name}/vcluster"
             for a in s.describe() if a.kind == "file"]
    assert shown == [f"https://<the LoadBalancer address of Service {team.namespace}/"
                     f"{team.name}>:443"]


def test_the_gpu_pool_is_the_gpu_nodes_then_the_fake_ones() -> None:
    profile: Any = load_profile("vcluster-kai").profile
    found = _facts(expose="NodePort", fake_nodes=(FakeNode("cpu-1", True),
                                                  FakeNode("gpu-1", True)))
    facts = cluster_facts(kr.cluster_needs(profile), found)
    assert facts.nodes(profile.gpu_pool.name) == ("gpu-2", "cpu-1", "gpu-1")
    steps = build_steps(profile, "lab", _answered(found))
    gpu_node = next(s for s in steps if s.name.endswith("/gpu-node"))
    # a node named for fake GPUs gets the profile's count, even one that advertised GPUs
    assert gpu_node.counts == {"gpu-2": 4, "cpu-1": profile.gpu_pool.count,
                               "gpu-1": profile.gpu_pool.count}


def test_no_pool_asked_none_answered() -> None:
    """kamaji-hami asks for no pool (its facts name no node) and a port per tenant, which an
    existing cluster answers as it answers any port need (kamaji-hami's steps there use the
    LoadBalancer address instead: existing_problems refuses NodePort and port-forward)."""
    from gpulab.stacks.kamaji_hami import render as kh

    profile: Any = load_profile("kamaji-hami").profile
    facts = cluster_facts(kh.cluster_needs(profile), _facts(gpu_nodes=(), expose="NodePort"))
    assert facts.pool_nodes == {} and facts.lb_range is None
    assert facts.urls == {"tenant-a": "https://10.0.0.5:30061",
                          "tenant-b": "https://10.0.0.5:30062"}


# --------------------------------------------------------------------------- facts, one at a time


def _node(labels: dict[str, str] | None = None, **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-1", "labels": labels or {}},
            "status": {"allocatable": {"nvidia.com/gpu": "1", **allocatable}}}


@pytest.mark.parametrize(("annotations", "default"), [
    ({"storageclass.kubernetes.io/is-default-class": "true"}, True),
    ({"storageclass.beta.kubernetes.io/is-default-class": "true"}, True),
    ({"storageclass.kubernetes.io/is-default-class": "false",
      "storageclass.beta.kubernetes.io/is-default-class": "true"}, True),  # either is enough
    ({"storageclass.kubernetes.io/is-default-class": "True"}, False),  # "true" exactly
    ({}, False),
])
def test_default_class_by_either_annotation(annotations: dict[str, str], default: bool) -> None:
    from gpulab.providers.existing.facts import is_default_class

    assert is_default_class({"metadata": {"annotations": annotations}}) is default


@pytest.mark.parametrize(("labels", "allocatable", "mig"), [
    ({}, {}, False),
    ({}, {"nvidia.com/mig-1g.5gb": "7"}, True),
    ({}, {"nvidia.com/mig-1g.5gb": "0"}, False),  # none allocatable
    ({"node-role.kubernetes.io/mig-enabled": "true"}, {}, True),
    ({"node-role.kubernetes.io/mig-enabled": "false"}, {"nvidia.com/mig-1g.5gb": "7"}, False),
    ({"node-role.kubernetes.io/mig-enabled": "yes"}, {"nvidia.com/mig-1g.5gb": "7"}, False),
])
def test_mig_as_kai_tells_it(labels: dict[str, str], allocatable: dict[str, str],
                             mig: bool) -> None:
    """KAI v0.16.8 node_info.go:662-676: the label, when set, decides (ParseBool: "yes" is
    an error, so not MIG); else any nvidia.com/mig-* allocatable above 0."""
    from gpulab.providers.existing.facts import _gpu_nodes

    [found] = _gpu_nodes([_node(labels, **allocatable)])
    assert found.mig_enabled is mig


@pytest.mark.parametrize(("strategy", "kept"), [("single", "single"), ("mixed", "mixed"),
                                                ("none", ""), ("", "")])
def test_only_kais_two_strategies_are_kept(strategy: str, kept: str) -> None:
    from gpulab.providers.existing.facts import _gpu_nodes

    [found] = _gpu_nodes([_node({"nvidia.com/mig.strategy": strategy})])
    assert found.mig_strategy == kept


def test_node_ports_of_others_only() -> None:
    from gpulab.providers.existing.facts import _node_ports

    services = [
        {"metadata": {"name": "grafana", "namespace": "monitoring"},
         "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 31443},
                                                {"port": 81}]}},
        {"metadata": {"name": "team-nlp", "namespace": "team-nlp"},
         "spec": {"type": "NodePort", "ports": [{"port": 443, "nodePort": 31444}]}},
        {"metadata": {"name": "lb", "namespace": "default"},
         "spec": {"type": "LoadBalancer", "ports": [{"port": 443, "nodePort": 30443}]}},
    ]
    assert _node_ports(services, {"team-nlp"}) == ((31443, "monitoring/grafana"),
                                                   (30443, "default/lb"))


def test_unreadable_runtime_classes_are_unknown_with_why() -> None:
    from gpulab.errors import AdapterError
    from gpulab.providers.existing.facts import _runtime_classes

    class Refusing:
        def list_objects(self, *_a: Any) -> list[dict[str, Any]]:
            raise AdapterError("list runtimeclasses: 403 Forbidden")

    class Answering:
        def list_objects(self, *_a: Any) -> list[dict[str, Any]]:
            return [{"metadata": {"name": "nvidia"}, "handler": "nvidia"}]

    assert _runtime_classes(Refusing()) == (
        None, "listing RuntimeClasses (node.k8s.io/v1) failed: list runtimeclasses: 403 "
              "Forbidden")
    assert _runtime_classes(Answering()) == ((("nvidia", "nvidia"),), "")
