"""`gpulab logs` collects from every source and survives the ones that fail."""

from __future__ import annotations

import json
import tarfile

from gpulab import core
from gpulab.diagnostics import collect, tarball
from gpulab.engine.runner import Event
from gpulab.errors import AdapterError
from gpulab.paths import lab_dir
from tests.fakes import FakeHelm, FakeWorld, _cluster_of, fake_adapters


def _built_lab(profile) -> FakeWorld:
    world = FakeWorld()
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    events: list[Event] = []
    assert core.up(profile, None, events.append, adapters=adapters, sleep=lambda _s: None).ok
    world.kube("tenant-a").put({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "hami-scheduler-abc", "namespace": "kube-system"},
        "spec": {"containers": [{"name": "kube-scheduler"}, {"name": "vgpu-scheduler-extender"}]},
        "status": {"phase": "Running"}})
    return world


def test_bundle_has_every_source(kamaji_profile, tmp_path) -> None:
    world = _built_lab(kamaji_profile)
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    bundle = collect("kamaji-hami", tmp_path / "b", runtime=adapters.runtime,
                     kube=adapters.kube, helm=adapters.helm, lab_files=lab_dir("kamaji-hami"))
    files = set(bundle.files)
    assert "docker/containers.json" in files
    for tenant in ("tenant-a", "tenant-b"):
        assert f"clusters/{tenant}/pods.json" in files
        assert f"clusters/{tenant}/events.json" in files
        assert f"clusters/{tenant}/nodes.yaml" in files
        assert f"clusters/{tenant}/helm-releases.json" in files
    assert "clusters/management/helm-releases.json" in files
    assert "clusters/tenant-a/logs/kube-system_hami-scheduler-abc_vgpu-scheduler-extender.log" \
        in files
    states = json.loads((tmp_path / "b/docker/containers.json").read_text())
    assert {s["name"] for s in states} >= {"gpulab-kamaji-hami-tenant-a-worker",
                                          "gpulab-kamaji-hami-control-plane"}
    # node journals were asked for; the fake answers 127 for journalctl, recorded as text
    assert "nodes/gpulab-kamaji-hami-tenant-a-worker/kubelet.log" in files
    # kubeconfig contents never land in the bundle
    for path in (tmp_path / "b").rglob("*"):
        if path.is_file():
            assert "# kubeconfig of" not in path.read_text()


def test_a_failing_collector_does_not_stop_the_others(kamaji_profile, tmp_path) -> None:
    world = _built_lab(kamaji_profile)
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))

    def broken_kube(path):
        if _cluster_of(path) == "tenant-b":
            raise AdapterError("tenant-b API unreachable")
        return world.kube(_cluster_of(path))

    bundle = collect("kamaji-hami", tmp_path / "b", runtime=adapters.runtime, kube=broken_kube,
                     helm=lambda p: FakeHelm(world, p), lab_files=lab_dir("kamaji-hami"))
    assert bundle.errors == ["clusters/tenant-b: tenant-b API unreachable"]
    assert "clusters/tenant-a/pods.json" in bundle.files
    assert (tmp_path / "b/errors.txt").read_text().startswith("clusters/tenant-b")


def test_tarball(tmp_path) -> None:
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "a.txt").write_text("x")
    with tarfile.open(tarball(folder)) as tar:
        assert tar.getnames() == ["bundle", "bundle/a.txt"]


def test_kai_and_fake_gpu_pods_get_their_logs(kamaji_profile, tmp_path) -> None:
    world = _built_lab(kamaji_profile)
    world.kube("management").put({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "binder-7d9f", "namespace": "kai-scheduler"},
        "spec": {"containers": [{"name": "binder"}]}, "status": {"phase": "Running"}})
    world.kube("management").put({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "coredns-1", "namespace": "kube-system"},
        "spec": {"containers": [{"name": "coredns"}]}, "status": {"phase": "Running"}})
    adapters = fake_adapters(world, lab_dir("kamaji-hami"))
    bundle = collect("kamaji-hami", tmp_path / "b", runtime=adapters.runtime,
                     kube=adapters.kube, helm=adapters.helm, lab_files=lab_dir("kamaji-hami"))
    assert "clusters/management/logs/kai-scheduler_binder-7d9f_binder.log" in bundle.files
    assert not any("coredns" in f for f in bundle.files)
