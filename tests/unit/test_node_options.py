"""Worker containers get what kind gives its nodes on the same host (kind v0.33,
pkg/cluster/internal/providers/docker/provision.go commonArgs, util.go, common/proxy.go)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.adapters.base import ContainerSpec, RuntimeInfo
from gpulab.adapters.docker_runtime import node_host_config_args
from gpulab.stacks.common import (
    mounts_dev_mapper,
    node_host_options,
    proxy_env,
    with_host_options,
)


def _info(**kwargs) -> RuntimeInfo:
    return RuntimeInfo("29.1.0", "1.52", 8, 1 << 34, "Debian", **kwargs)


@pytest.mark.parametrize(("info", "mounted"), [
    (_info(storage_driver="overlay2", driver_status=(("Backing Filesystem", "extfs"),)), False),
    (_info(storage_driver="overlay2", driver_status=(("Backing Filesystem", "xfs"),)), True),
    (_info(storage_driver="btrfs"), True),
    (_info(storage_driver="zfs"), True),
    (_info(storage_driver="devicemapper"), True),
    # Docker 29's containerd store names no backing filesystem (kind does not mount either)
    (_info(storage_driver="overlayfs", driver_status=(("driver-type",
                                                       "io.containerd.snapshotter.v1"),)), False),
    (_info(storage_driver="btrfs", security_options=("name=rootless",)), False),
])
def test_dev_mapper_is_mounted_where_kind_mounts_it(info: RuntimeInfo, mounted: bool) -> None:
    assert mounts_dev_mapper(info) is mounted


def test_userns_remap_and_rootless() -> None:
    remapped = node_host_options(_info(security_options=("name=seccomp,profile=builtin",
                                                         "name=userns")), {}, [])
    assert remapped.userns_host and not remapped.fuse_device
    rootless = node_host_options(_info(security_options=("name=rootless",)), {}, [])
    assert rootless.fuse_device and not rootless.userns_host and not rootless.mount_dev_mapper
    plain = node_host_options(_info(), {}, [])
    assert plain == type(plain)()


def test_no_proxy_configured_means_no_variables(tmp_path: Path) -> None:
    assert proxy_env({"DOCKER_CONFIG": str(tmp_path)}, ["10.244.0.0/16"]) == {}


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "https_proxy"])
def test_proxy_variables_pass_in_both_cases_with_the_labs_no_proxy(name: str,
                                                                   tmp_path: Path) -> None:
    env = proxy_env({name: "http://proxy:3128", "NO_PROXY": "corp.example",
                     "DOCKER_CONFIG": str(tmp_path)},
                    ["10.244.0.0/16", "10.96.0.0/16", "172.18.0.0/16", "gpulab-lab-t-worker"])
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://proxy:3128"
    assert "HTTP_PROXY" not in env
    skip = env["NO_PROXY"].split(",")
    assert env["no_proxy"] == env["NO_PROXY"]
    assert skip[0] == "corp.example"  # the user's own entries first
    for entry in ("10.244.0.0/16", "10.96.0.0/16", "172.18.0.0/16", "gpulab-lab-t-worker",
                  ".svc", ".svc.cluster", ".svc.cluster.local"):
        assert entry in skip


def test_the_docker_clients_proxy_config_is_the_fallback(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"proxies": {"default": {
        "httpProxy": "http://p:1", "noProxy": "internal"}}}))
    env = proxy_env({"DOCKER_CONFIG": str(tmp_path)}, ["10.244.0.0/16"])
    assert env["HTTP_PROXY"] == "http://p:1"
    assert env["NO_PROXY"].split(",")[:2] == ["internal", "10.244.0.0/16"]


def test_host_options_reach_docker_create() -> None:
    spec = ContainerSpec(name="w", image="kindest/node:v1", network="kind", labels={})
    options = node_host_options(_info(storage_driver="btrfs", security_options=("name=userns",)),
                                {"HTTP_PROXY": "http://p:1",
                                 "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER": "native"}, ["w"])
    node = with_host_options(spec, options)
    args = node_host_config_args(node)
    assert args["binds"]["/dev/mapper"] == {"bind": "/dev/mapper", "mode": "rw"}
    assert args["binds"]["/lib/modules"]["mode"] == "ro"
    assert args["userns_mode"] == "host"
    assert "devices" not in args
    assert node.env["KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"] == "native"
    assert node.env["http_proxy"] == "http://p:1"
    shown = node.to_dict()
    assert "http://p:1" not in json.dumps(shown)  # plan shows variable names, not values
    fuse = with_host_options(spec, node_host_options(_info(security_options=("name=rootless",)),
                                                     {}, []))
    assert node_host_config_args(fuse)["devices"] == ["/dev/fuse:/dev/fuse:rwm"]
