"""kamaji-hami on an existing cluster with `cluster.workers: containers`: the tenants' workers are
kindest/node containers on this Docker host, joined to control planes in the existing cluster.
The steps run through the engine on tests/fakes.py's world (the fake Docker host, kubeadm, the
tenants' APIs and Helm the kind lab's tests use); the facts are what the preflight would have
read (no cert-manager, no Kamaji, a LoadBalancer)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import lab_record
from gpulab.engine.runner import run_steps
from gpulab.engine.step import StepContext
from gpulab.paths import lab_dir
from gpulab.providers.base import ClusterFacts, ClusterIdentity
from gpulab.providers.existing import ExistingFacts, Owning
from gpulab.providers.existing.teardown import remove_owned as teardown
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami.existing import ClusterFound
from gpulab.stacks.kamaji_hami.steps import build_steps
from tests.fakes import FakeHelm, FakeRuntime, FakeWorld, fake_adapters

LAB = "kamaji-hami"


@pytest.fixture(autouse=True)
def _home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))


def _profile(workers: str = "containers") -> Any:
    from gpulab.profile.base import ClusterSpec

    profile = load_profile("kamaji-hami").profile
    return profile.model_copy(update={"cluster": ClusterSpec(provider="existing",
                                                            workers=workers)})


def _facts(workers: str = "containers") -> ClusterFacts:
    """What provider existing answers the stack on this cluster (cluster_facts), its workers
    as the profile says."""
    from gpulab.providers.existing import cluster_facts
    from gpulab.stacks.kamaji_hami import render

    identity = ClusterIdentity("https://mgmt:6443", "mgmt", "(default)", "uid-1")
    found = ClusterFound(cert_manager=None, kamaji=None, metallb=None,
                         load_balancer="Service default/ingress has LoadBalancer address "
                                       "192.0.2.10", tcps_found=())
    read = ExistingFacts(identity=identity, version="v1.34.2",
                         default_storage_class="standard", gpu_nodes=(), node_address=None,
                         load_balancer=True, namespaces_found=(), queues_found=(),
                         expose="LoadBalancer", stack=found)
    return cluster_facts(render.cluster_needs(_profile()), read,
                         "join" if workers == "machines" else workers)


def _up(world: FakeWorld, profile: Any) -> Any:
    steps = [Owning(s) for s in build_steps(profile, LAB, _facts(profile.cluster.workers))]
    adapters = fake_adapters(world, lab_dir(LAB))
    (lab_dir(LAB) / "management.kubeconfig").write_text("fake")
    return run_steps(steps, StepContext(LAB, adapters, sleep=lambda _s: None), lambda _e: None)


def test_workers_as_containers_join_the_control_planes_and_down_removes_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reached: list[tuple[str, int]] = []
    monkeypatch.setattr("gpulab.stacks.kamaji_hami.existing.reaches",
                        lambda host, port, timeout=3.0: reached.append((host, port)) or True)
    world, profile = FakeWorld(), _profile()
    result = _up(world, profile)
    assert result.ok, [str(f.error) for f in result.failures]
    workers = sorted(world.containers)
    assert workers == ["gpulab-kamaji-hami-tenant-a-worker", "gpulab-kamaji-hami-tenant-b-worker"]
    assert {s.network for s in world.runs} == {"bridge"}  # no kind network on this host
    # the tenant's images were pulled once on this host and loaded into its worker, as in the
    # kind lab (PreloadImages), so a worker does not pull each one through its own network
    loaded = world.node_images["gpulab-kamaji-hami-tenant-a-worker"]
    assert {i for i in loaded if "kube-proxy" in i or "mock-device-plugin" in i} == {
        f"registry.k8s.io/kube-proxy:{profile.tenants[0].kubernetes_version}",
        f"docker.io/projecthami/mock-device-plugin:"
        f"{profile.components.hami.mock_device_plugin_tag}"}
    assert {name for name, _argv in world.imports} == set(workers)
    # each worker joined its tenant and advertises the mock GPUs, as in the kind lab
    node = world.kube("tenant-a").get("v1", "Node", "gpulab-kamaji-hami-tenant-a-worker")
    assert node is not None and node["status"]["allocatable"]["nvidia.com/gpu"] == "10"
    # the control plane keeps the kind lab's settings for kindest/node workers
    tcp = world.kube("management").get("kamaji.clastix.io/v1alpha1", "TenantControlPlane",
                                       "tenant-a", "tenants")
    assert tcp is not None and "kubeProxy" not in tcp["spec"]["addons"]
    assert len(tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]) == 5
    # the API's and Konnectivity's ports at each tenant's address, asked from this host
    assert sorted(reached) == [("172.18.255.200", 6443), ("172.18.255.200", 6443),
                               ("172.18.255.200", 8132), ("172.18.255.200", 8132)]
    record = lab_record.read(LAB)
    assert record is not None
    owned = [(o["type"], o.get("kind"), o["name"]) for o in record.owned]
    # the containers go first on down: recorded after their tenant's control plane
    assert owned.index(("object", "TenantControlPlane", "tenant-a")) \
        < owned.index(("container", None, "gpulab-kamaji-hami-tenant-a-worker"))

    gone = teardown(record.owned, world.kube("management"),
                    FakeHelm(world, lab_dir(LAB) / "management.kubeconfig"),
                    runtime=FakeRuntime(world), sleep=lambda _s: None)
    assert "container gpulab-kamaji-hami-tenant-a-worker" in gone.removed
    assert gone.removed.index("container gpulab-kamaji-hami-tenant-a-worker") \
        < gone.removed.index("TenantControlPlane tenants/tenant-a")
    assert world.containers == {} and gone.leftovers == []


def test_a_control_plane_this_host_does_not_reach_starts_no_container(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpulab.stacks.kamaji_hami.existing.reaches",
                        lambda host, port, timeout=3.0: port != 8132)
    world = FakeWorld()
    result = _up(world, _profile())
    assert not result.ok
    errors = {f.name: str(f.error) for f in result.failures}
    assert set(errors) == {"tenant-a/reach", "tenant-b/reach"}
    assert ("this host does not reach tenant-a's control plane at 172.18.255.200:8132: its "
            "kindest/node workers could not join") in errors["tenant-a/reach"]
    assert world.containers == {}


def test_machines_workers_have_no_container_steps() -> None:
    names = [s.name for s in build_steps(_profile("machines"), LAB, _facts("machines"))]
    assert not any(n.endswith(("/workers", "/join", "/reach")) for n in names)
    with pytest.raises(ValueError, match="workers: only with provider: existing"):
        from gpulab.profile.base import ClusterSpec

        ClusterSpec(provider="kind", workers="containers")
