"""Each tenant's API from the host: gpulab's NodePort Service, published by kind on 127.0.0.1,
covered by the certificate, named by the saved kubeconfig; the workers keep Kamaji's address."""

from __future__ import annotations

import stat
from typing import Any

import pytest
import yaml

from gpulab import core
from gpulab.errors import ProfileError
from gpulab.paths import lab_dir
from gpulab.providers.kind import cluster_facts
from gpulab.providers.kind.config import kind_config
from gpulab.stacks import parse_profile
from gpulab.stacks.kamaji_hami import api_route, render
from gpulab.stacks.kamaji_hami.steps import build_steps
from tests.fakes import FakeRuntime, FakeWorld, fake_adapters
from tests.schemas import validate_object

KAMAJI_ADDRESS = "172.18.255.200"  # where tests.fakes' Kamaji admin.conf points


@pytest.fixture
def kamaji_profile_text() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "profiles" / "kamaji-hami.yaml").read_text()


def test_each_tenant_is_published_on_loopback_at_its_own_port(kamaji_profile: Any) -> None:
    needs = render.cluster_needs(kamaji_profile)
    assert [(p.name, p.node_port, p.host_port, p.address) for p in needs.ports] == [
        ("tenant-a", 30061, 30061, "127.0.0.1"), ("tenant-b", 30062, 30062, "127.0.0.1")]
    control = kind_config(kamaji_profile, "lab", needs)["nodes"][0]
    assert control["extraPortMappings"] == [
        {"containerPort": 30061, "hostPort": 30061, "listenAddress": "127.0.0.1",
         "protocol": "TCP"},
        {"containerPort": 30062, "hostPort": 30062, "listenAddress": "127.0.0.1",
         "protocol": "TCP"}]
    facts = cluster_facts(kamaji_profile, "lab", needs, None)
    assert facts.urls == {"tenant-a": "https://127.0.0.1:30061",
                          "tenant-b": "https://127.0.0.1:30062"}


def test_the_service_reaches_kamajis_pods_at_a_fixed_node_port(kamaji_profile: Any) -> None:
    tenant = kamaji_profile.tenants[1]
    service = api_route.tenant_api_service(kamaji_profile, tenant)
    validate_object(service)  # core v1 Service, strict, Kubernetes 1.36
    assert service["metadata"] == {"name": "tenant-b-host-api", "namespace": "tenants",
                                   "labels": {"tenant.clastix.io": "tenant-b",
                                              "app.kubernetes.io/managed-by": "gpulab"}}
    assert service["spec"]["type"] == "NodePort"
    # Kamaji's own Service selects the control plane's pods by this label (see api_route)
    assert service["spec"]["selector"] == {"kamaji.clastix.io/name": "tenant-b"}
    assert service["spec"]["ports"] == [{"name": "kube-apiserver", "protocol": "TCP",
                                         "port": 6443, "targetPort": 6443, "nodePort": 30062}]


def test_the_tenant_control_plane_stays_a_load_balancer_without_extra_sans(
        kamaji_profile: Any) -> None:
    for tenant in kamaji_profile.tenants:
        tcp = render.tenant_control_plane(kamaji_profile, tenant, "127.0.0.1")
        validate_object(tcp)
        assert tcp["spec"]["controlPlane"]["service"] == {"serviceType": "LoadBalancer"}
        assert "certSANs" not in tcp["spec"]["networkProfile"]
        sans = api_route.api_server_sans(kamaji_profile, tenant, KAMAJI_ADDRESS, [])
        assert "127.0.0.1" in sans and KAMAJI_ADDRESS in sans


def test_a_host_name_kamaji_does_not_add_goes_to_cert_sans(kamaji_profile: Any) -> None:
    tenant = kamaji_profile.tenants[0]
    tcp = render.tenant_control_plane(kamaji_profile, tenant, "lab.example.test")
    validate_object(tcp)
    assert tcp["spec"]["networkProfile"]["certSANs"] == ["lab.example.test"]
    extra = tcp["spec"]["networkProfile"]["certSANs"]
    assert "lab.example.test" in api_route.api_server_sans(kamaji_profile, tenant,
                                                           KAMAJI_ADDRESS, extra)
    assert api_route.cert_sans("localhost") == []


def _port_profile(text: str, a: str, b: str) -> str:
    marker = "      kubelet_cgroup_driver: systemd\n"
    first = text.index(marker) + len(marker)
    second = text.index(marker, first) + len(marker)
    return text[:first] + a + text[first:second] + b + text[second:]


@pytest.mark.parametrize(("a", "b", "message"), [
    ("      api_node_port: 30070\n", "      api_node_port: 30070\n",
     "tenants[1].control_plane.api_node_port: NodePort 30070 is already used by tenants[0]"),
    ("      api_host_port: 16443\n", "      api_host_port: 16443\n",
     "tenants[1].control_plane.api_host_port: host port 16443 is already used by tenants[0]"),
    ("      api_node_port: 30062\n", "",
     "tenants[1].control_plane.api_node_port: NodePort 30062 is already used by tenants[0]"),
    ("      api_node_port: 8443\n", "", "must be a NodePort in 30000-32767"),
    ("      api_host_port: 80\n", "", "api_host_port"),
])
def test_ports_are_refused_one_fact_at_a_time(kamaji_profile_text: str, a: str, b: str,
                                              message: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(_port_profile(kamaji_profile_text, a, b))
    assert any(message in problem for problem in err.value.problems), err.value.problems


def test_given_ports_are_the_ones_published(kamaji_profile_text: str) -> None:
    profile: Any = parse_profile(_port_profile(
        kamaji_profile_text, "      api_node_port: 30070\n      api_host_port: 16443\n", ""))
    assert [(p.node_port, p.host_port) for p in render.cluster_needs(profile).ports] == [
        (30070, 16443), (30062, 30062)]
    assert [p.text for p in profile.host_ports()] == ["127.0.0.1:16443", "127.0.0.1:30062"]


def test_up_saves_the_host_kubeconfig_at_loopback_and_keeps_kamajis_for_workers(
        kamaji_profile: Any) -> None:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    result = core.up(kamaji_profile, None, lambda _e: None, adapters=adapters,
                     sleep=lambda _s: None)
    assert result.ok, [str(r.error) for r in result.failures]
    folder = lab_dir("kamaji-hami")
    for port, tenant in ((30061, "tenant-a"), (30062, "tenant-b")):
        host = folder / f"{tenant}.kubeconfig"
        nodes = folder / "nodes" / f"{tenant}.kubeconfig"
        assert stat.S_IMODE(host.stat().st_mode) == 0o600 == stat.S_IMODE(nodes.stat().st_mode)
        assert [c["cluster"]["server"] for c in yaml.safe_load(host.read_text())["clusters"]] \
            == [f"https://127.0.0.1:{port}"]
        assert [c["cluster"]["server"] for c in yaml.safe_load(nodes.read_text())["clusters"]] \
            == [f"https://{KAMAJI_ADDRESS}:6443"]
        service = world.kube("management").objects[
            ("v1", "Service", "tenants", f"{tenant}-host-api")]
        assert service["spec"]["ports"][0]["nodePort"] == port
        # kube-proxy in the workers talks to Kamaji's address, not the host's loopback
        proxy = world.kube(tenant).objects[("v1", "ConfigMap", "kube-system", "kube-proxy")]
        assert f"server: https://{KAMAJI_ADDRESS}:6443" in proxy["data"]["kubeconfig.conf"]


def test_without_a_published_url_the_kubeconfig_is_kamajis(kamaji_profile: Any) -> None:
    """A provider that answers no URL for the port (an existing cluster): no Service, and the
    host's kubeconfig is Kamaji's as is."""
    from dataclasses import replace

    facts = replace(cluster_facts(kamaji_profile, "lab", render.cluster_needs(kamaji_profile),
                                  FakeRuntime(FakeWorld())), urls={})
    step = next(s for s in build_steps(kamaji_profile, "lab", facts)
                if s.name == "tenant-a/control-plane")
    kinds = [a.name for a in step.describe()]
    assert "Service/tenant-a-host-api" not in kinds
    saved = next(a for a in step.describe() if a.name == "tenant-a.kubeconfig")
    assert saved.body["server"] == "as Kamaji wrote it"
