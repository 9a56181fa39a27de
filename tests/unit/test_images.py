"""Image references normalise the way Docker and containerd name them."""

from __future__ import annotations

import re

import pytest

from gpulab.adapters.base import oci_platform
from gpulab.images import images_in_objects, normalize, parse_ctr_listing, present_in
from gpulab.stacks.common import ctr_import, snapshotter_of
from tests.upstream import containerd_full_config, kind_snapshotter_cases

DIGEST = "sha256:" + "0" * 64


@pytest.mark.parametrize(("given", "expected"), [
    ("busybox", "docker.io/library/busybox:latest"),
    ("busybox:1.37", "docker.io/library/busybox:1.37"),
    ("projecthami/mock-device-plugin:1.0.1", "docker.io/projecthami/mock-device-plugin:1.0.1"),
    ("registry.k8s.io/kube-scheduler:v1.36.4", "registry.k8s.io/kube-scheduler:v1.36.4"),
    ("localhost:5000/x", "localhost:5000/x:latest"),
    (f"kindest/node:v1.36.4@{DIGEST}", f"docker.io/kindest/node:v1.36.4@{DIGEST}"),
    (f"quay.io/jetstack/cert-manager-controller@{DIGEST}",
     f"quay.io/jetstack/cert-manager-controller@{DIGEST}"),
])
def test_normalize(given: str, expected: str) -> None:
    assert normalize(given) == expected


def test_images_in_objects_walks_pod_templates() -> None:
    objects = [
        {"kind": "DaemonSet", "spec": {"template": {"spec": {
            "initContainers": [{"name": "i", "image": "calico/cni:v3.31.2"}],
            "containers": [{"name": "c", "image": "calico/node:v3.31.2"}]}}}},
        {"kind": "Job", "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "calico/node:v3.31.2"}]}}}},
        {"kind": "ConfigMap", "data": {"image": "not-a-container"}},
    ]
    assert images_in_objects(objects) == ["calico/node:v3.31.2", "calico/cni:v3.31.2"]


def test_presence_by_digest_or_tag() -> None:
    listing = parse_ctr_listing(
        f"docker.io/kindest/node@{DIGEST}\nregistry.k8s.io/pause:3.10.1\nsha256:abc\n")
    assert present_in(f"kindest/node:v1.36.4@{DIGEST}", listing)
    assert present_in("registry.k8s.io/pause:3.10.1", listing)
    assert not present_in("registry.k8s.io/pause:3.10", listing)
    assert not present_in(f"kindest/node:v1.36.4@sha256:{'1' * 64}", listing)


# --------------------------------------------------------------------------- node import


@pytest.mark.parametrize(("dump", "expected"), kind_snapshotter_cases())
def test_the_snapshotter_is_read_as_kind_reads_it(dump: str, expected: str) -> None:
    """kind's own TestParseSnapshotter cases (util_test.go at fed26882), config versions 2-4."""
    assert snapshotter_of(dump) == expected


@pytest.mark.parametrize("snapshotter", ["overlayfs", "native", "fuse-overlayfs", "btrfs"])
def test_the_snapshotter_is_read_from_containerd_2s_own_output(snapshotter: str) -> None:
    """containerd 2.x prints literal keys (`[plugins.'io.containerd.cri.v1.images']`); the text is
    containerd v2.3.4's (the containerd kindest/node ships), one fact changed per case."""
    dump = containerd_full_config()
    assert "    snapshotter = 'overlayfs'\n" in dump
    dump = dump.replace("    snapshotter = 'overlayfs'\n", f"    snapshotter = '{snapshotter}'\n", 1)
    assert snapshotter_of(dump) == snapshotter


@pytest.mark.parametrize(("dump", "reason"), [
    ("version = 3\n", "names no snapshotter"),
    ("", "unknown containerd config version None"),
    ("version = 1\n[plugins.cri]\n  snapshotter = 'native'\n", "unknown containerd config version 1"),
    ("version = 3\n[plugins.'io.containerd.cri.v1.images'\n", "not TOML"),
    ("version = 2\n[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'native'\n",
     "names no snapshotter at plugins.io.containerd.grpc.v1.cri.containerd.snapshotter"),
])
def test_an_unreadable_snapshotter_is_not_guessed(dump: str, reason: str) -> None:
    """Unknown is not overlayfs: kind fails there, gpulab says why (the preload then has the node
    pull, tests/unit/test_preload.py)."""
    with pytest.raises(ValueError, match=re.escape(reason)):
        snapshotter_of(dump)


def test_import_is_for_the_nodes_platform_only() -> None:
    argv = ctr_import("linux/arm64", "native")
    assert "--all-platforms" not in argv  # kind issues 3795/4224 on Docker 29
    assert argv[:4] == ["ctr", "--namespace=k8s.io", "images", "import"]
    assert "--platform=linux/arm64" in argv and "--snapshotter=native" in argv
    assert "--digests" in argv and argv[-1] == "-"


@pytest.mark.parametrize(("arch", "platform"), [
    ("x86_64", "linux/amd64"), ("aarch64", "linux/arm64"), ("armv7l", "linux/arm/v7"),
    ("", "linux/amd64"),
])
def test_engine_architecture_to_platform(arch: str, platform: str) -> None:
    assert oci_platform(arch) == platform


def test_verify_pods_run_the_sandbox_image_kind_nodes_ship(kamaji_profile) -> None:
    """kindest/node's containerd `sandbox_image` is registry.k8s.io/pause:3.10 (kind
    images/base/files/etc/containerd/config.toml:37); a verify pod with another tag would need a
    pull the lab may not be able to make."""
    from gpulab.stacks.common import KIND_SANDBOX_IMAGE, VERIFY_IMAGE
    from gpulab.stacks.kamaji_hami import render

    assert VERIFY_IMAGE == KIND_SANDBOX_IMAGE == "registry.k8s.io/pause:3.10"
    for tenant in kamaji_profile.tenants:
        pods = [o for o in render.verify_objects(tenant) if o["kind"] == "Pod"]
        assert pods
        assert {c["image"] for p in pods for c in p["spec"]["containers"]} == {VERIFY_IMAGE}
