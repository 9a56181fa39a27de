"""Image references normalise the way Docker and containerd name them."""

from __future__ import annotations

import pytest

from gpulab.images import images_in_objects, normalize, parse_ctr_listing, present_in

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
