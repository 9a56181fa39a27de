"""The stdlib socket reader `plan` uses, against the real engine: it must see what docker-py's
adapter sees (network IPAM, containers by label), and refuse clearly when nothing answers."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from gpulab import core
from gpulab.adapters.base import ContainerSpec
from gpulab.adapters.docker_probe import UnixSocketReader, open_reader, unix_socket_path
from gpulab.adapters.docker_runtime import DockerRuntime
from gpulab.errors import HostError
from tests.docker.conftest import DualStackNetwork, unique

SpecFactory = Callable[..., ContainerSpec]


def _reader() -> UnixSocketReader:
    reader = open_reader(timeout=5)
    if reader is None:
        pytest.skip(f"DOCKER_HOST={os.environ.get('DOCKER_HOST')} is not a unix socket")
    return reader


def test_network_matches_the_docker_py_adapter(
    runtime: DockerRuntime, dual_stack_network: DualStackNetwork
) -> None:
    reader = _reader()
    seen = reader.network(dual_stack_network.name)
    assert seen == runtime.network(dual_stack_network.name)
    assert seen is not None
    assert {ipaddress.ip_network(e["Subnet"]) for e in seen.ipam_config} == {
        dual_stack_network.ipv4, dual_stack_network.ipv6}
    assert reader.network(unique("net")) is None
    assert reader.network(seen.id[:12]) is None  # an id prefix is not the network


def test_containers_by_label_match_the_docker_py_adapter(
    runtime: DockerRuntime, dual_stack_network: DualStackNetwork, node_spec: SpecFactory
) -> None:
    reader = _reader()
    tenant = unique("tenant")
    node = runtime.run_node(node_spec(dual_stack_network.name,
                                      labels={"gpulab.dev/tenant": tenant}))
    wanted = {"gpulab.dev/tenant": tenant}
    seen = reader.containers(wanted)
    assert [c.name for c in seen] == [node.name]
    assert seen == runtime.containers(wanted)
    assert seen[0].networks[dual_stack_network.name]
    assert reader.containers({"gpulab.dev/tenant": unique("nobody")}) == []


def test_architecture_matches_the_docker_py_adapter(runtime: DockerRuntime) -> None:
    """`plan` reads the engine's Architecture over the socket as doctor reads it with docker-py
    (GET /info: the engine host's `uname -m`, e.g. x86_64 or aarch64)."""
    seen = _reader().architecture()
    assert seen == runtime.info().architecture == runtime.architecture()
    assert seen  # this engine reports one


def test_core_reads_docker_without_docker_py_on_a_unix_socket() -> None:
    _reader()
    assert isinstance(core.read_docker(timeout=5), UnixSocketReader)


def test_no_engine_on_the_socket_is_one_host_error(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="no Docker engine at unix://"):
        UnixSocketReader(str(tmp_path / "absent.sock")).ping()
    silent = tmp_path / "refusing.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(silent))  # bound but not listening: connection refused
    try:
        with pytest.raises(HostError, match="no Docker engine"):
            UnixSocketReader(str(silent)).ping()
    finally:
        server.close()


@pytest.mark.parametrize(("host", "path"), [
    (None, "/var/run/docker.sock"),
    ("", "/var/run/docker.sock"),
    ("unix:///run/user/1000/docker.sock", "/run/user/1000/docker.sock"),
    ("unix://", None),
    ("tcp://127.0.0.1:2375", None),
    ("ssh://me@host", None),
    ("npipe:////./pipe/docker_engine", None),
])
def test_which_docker_hosts_the_reader_serves(host: str | None, path: str | None) -> None:
    assert unix_socket_path(host) == path


def test_other_docker_hosts_fall_back_to_docker_py(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    assert open_reader() is None


def test_engine_facts_match_the_docker_py_adapter(runtime: DockerRuntime) -> None:
    """plan's route note reads the same engine facts doctor does (one parser, two clients)."""
    import sys

    from gpulab.docker_engines import classify

    seen = _reader().engine()
    assert seen == runtime.info()
    assert seen.components and seen.name  # this engine answers both
    if sys.platform.startswith("linux") and not seen.rootless:
        assert classify(seen, local=True, host_os=sys.platform).kind in ("linux", "docker-desktop",
                                                                         "colima", "orbstack")
