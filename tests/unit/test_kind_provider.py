"""Provider kind meets what a stack needs (#23 item 1): the kind config it renders from a
stack's `ClusterNeeds`, the names kind gives the nodes, where this host reaches a port, and the
LoadBalancer range it finds on the kind network (what `plan` shows, and its note)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpulab import stacks
from gpulab.adapters.base import NetworkInfo
from gpulab.errors import HostError
from gpulab.paths import lab_dir
from gpulab.providers.base import AddressNeed, ClusterNeeds, HostTools, NodePool, PortNeed
from gpulab.providers.kind import KindProvider, cluster_facts
from gpulab.providers.kind.config import kind_config, node_names, port_url
from gpulab.providers.kind.network import POOL_FILE

IPAM = [{"Subnet": "fc00:f853:ccd:e793::/64"},
        {"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]
NEED = AddressNeed("MetalLB range", 51, 5)
NO_IPV4 = ("Docker network 'kind' has no IPv4 subnet, so MetalLB has no addresses to use "
           "(recreate it with an IPv4 subnet: docker network rm kind, then gpulab up)")
TWO_POOLS = ClusterNeeds(pools=(NodePool("gpu", 2, {"pool": "gpu"}), NodePool("cpu", 1)),
                         ports=(PortNeed("api", 31443, 41443),))


def test_kind_config_has_each_pools_workers_with_their_labels(kamaji_profile: Any) -> None:
    config = kind_config(kamaji_profile, "lab", TWO_POOLS)
    assert config["name"] == "gpulab-lab"
    control, *workers = config["nodes"]
    assert control["extraPortMappings"] == [{"containerPort": 31443, "hostPort": 41443,
                                             "listenAddress": "127.0.0.1", "protocol": "TCP"}]
    assert [w["labels"] for w in workers] == [
        {"gpulab.dev/lab": "lab", "pool": "gpu"}, {"gpulab.dev/lab": "lab", "pool": "gpu"},
        {"gpulab.dev/lab": "lab"}]
    assert {n["image"] for n in config["nodes"]} == {kamaji_profile.management.node_image}
    # kind numbers workers across the whole config, in order (its namer counts per role)
    assert node_names("lab", TWO_POOLS) == {
        "gpu": ("gpulab-lab-worker", "gpulab-lab-worker2"), "cpu": ("gpulab-lab-worker3",)}


def test_no_port_needed_no_port_published(kamaji_profile: Any) -> None:
    config = kind_config(kamaji_profile, "lab", ClusterNeeds())
    assert config["nodes"] == [{"role": "control-plane",
                                "image": kamaji_profile.management.node_image,
                                "labels": {"gpulab.dev/lab": "lab"}}]


def test_a_port_is_reached_where_kind_publishes_it() -> None:
    assert port_url(PortNeed("api", 31443, 41443)) == "https://127.0.0.1:41443"
    assert port_url(PortNeed("api", 31443, 41443, "::1")) == "https://[::1]:41443"


def test_vcluster_kai_pool_nodes_are_the_names_verify_expects() -> None:
    """`up` takes the GPU pool's nodes from the kind provider; verify's fallback names them by
    kind's rule too (render.gpu_node_names): the two agree for every pool size."""
    from gpulab.stacks.vcluster_kai import render as kr

    profile = stacks.load_profile("vcluster-kai").profile
    for nodes in (1, 3):
        sized = profile.model_copy(update={"gpu_pool": profile.gpu_pool.model_copy(
            update={"nodes": nodes})})
        facts = cluster_facts(sized, "lab", kr.cluster_needs(sized), None)
        assert list(facts.nodes(sized.gpu_pool.name)) == kr.gpu_node_names(sized, "lab")
        assert facts.management_nodes == ("gpulab-lab-control-plane",)


class _Reader:
    def __init__(self, network: NetworkInfo | None = None, error: Exception | None = None
                 ) -> None:
        self.found, self.error = network, error

    def network(self, name: str) -> NetworkInfo | None:
        if self.error is not None:
            raise self.error
        return self.found if self.found is not None and name == self.found.name else None

    def architecture(self) -> str:
        return "x86_64"  # moby's swagger.yaml SystemInfo.Architecture example (tests/upstream_docker)


def _ground(reader: Any, profile: Any) -> Any:
    def read(**_kwargs: Any) -> Any:
        if isinstance(reader, Exception):
            raise reader
        return reader

    tools = HostTools(endpoint=lambda: None, docker=lambda **_k: None, reader=read,
                      helm=lambda *_a: None, kind=lambda _e: None)
    return KindProvider(tools).ground(profile, "lab", stacks.for_profile(profile), probe=True)


def test_the_range_comes_from_the_kind_network(kamaji_profile: Any) -> None:
    ground = _ground(_Reader(NetworkInfo("n1", "kind", IPAM)), kamaji_profile)
    # nothing pending; the route to the tenants' published APIs (the reader gives no engine),
    # then the image whose platforms are unconfirmed (docs/images.md)
    assert ground.note.splitlines() == [
        "route: tenant-a https://127.0.0.1:30061, tenant-b https://127.0.0.1:30062, ports "
        "published on 127.0.0.1 (engine not known)",
        "image platform: registry.k8s.io/coredns/coredns: unknown (gpulab doctor says why; "
        "docs/images.md)"]
    assert str(ground.facts.lb_range.planned()) == "172.18.255.200-172.18.255.250"


@pytest.mark.parametrize(("reader", "note", "pending"), [
    (_Reader(), "MetalLB range pending: network 'kind' does not exist yet",
     "network 'kind' does not exist yet"),
    (_Reader(error=HostError("Docker refused")), "MetalLB range pending: Docker refused",
     "Docker refused"),
    (HostError("no socket"), "Docker not reachable (no socket); host-dependent values are "
                             "shown as pending", "Docker not reachable"),
    (_Reader(NetworkInfo("n1", "kind", [{"Subnet": "fc00::/64"}])),
     f"MetalLB range pending: {NO_IPV4}", NO_IPV4),
])
def test_what_docker_cannot_tell_is_pending_and_plan_says_why(
        kamaji_profile: Any, reader: Any, note: str, pending: str) -> None:
    ground = _ground(reader, kamaji_profile)
    assert ground.note.splitlines()[0] == note  # then the image platform lines, if Docker answered
    assert ground.facts.lb_range.planned() is None
    assert ground.facts.lb_range.pending == pending


def test_a_lab_keeps_its_range_and_the_next_lab_steps_below_it(kamaji_profile: Any) -> None:
    facts = cluster_facts(kamaji_profile, "lab", stacks.for_profile(kamaji_profile)
                          .cluster_needs(kamaji_profile),
                          _Reader(NetworkInfo("n1", "kind", IPAM)))
    first = facts.lb_range.planned()
    facts.lb_range.keep(first)
    assert (lab_dir("lab") / POOL_FILE).read_text() == "172.18.255.200-172.18.255.250\n"
    other = cluster_facts(kamaji_profile, "other", ClusterNeeds(load_balancer=NEED),
                          _Reader(NetworkInfo("n1", "kind", IPAM))).lb_range.planned()
    assert str(other) == "172.18.255.149-172.18.255.199"
    (lab_dir("lab") / POOL_FILE).write_text("172.18.254.1-172.18.254.9\n")
    assert str(facts.lb_range.planned()) == "172.18.254.1-172.18.254.9"  # what it recorded


def test_a_range_not_seen_at_plan_is_looked_up_when_up_needs_it(kamaji_profile: Any,
                                                                 tmp_path: Path) -> None:
    facts = cluster_facts(kamaji_profile, "lab", ClusterNeeds(load_balancer=NEED), None)
    assert facts.lb_range is not None and facts.lb_range.planned() is None

    class Adapters:
        runtime = _Reader(NetworkInfo("n1", "kind", IPAM))

    assert str(facts.lb_range.resolve(Adapters())) == "172.18.255.200-172.18.255.250"
    Adapters.runtime = _Reader()
    with pytest.raises(HostError, match="Docker network 'kind' not found after the cluster"):
        facts.lb_range.resolve(Adapters())
