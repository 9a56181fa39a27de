"""doctor's host checks against the real engine (issue #20 items 3, 6d, 7): the privileged probe's
create call carries the node's options, a Docker context is followed to the engine, and a port
published by another lab's container is named."""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from gpulab.adapters.docker_endpoint import resolve_endpoint
from gpulab.adapters.docker_runtime import DockerRuntime, connect
from gpulab.doctor import HostSnapshot, diagnose, observe_host
from gpulab.errors import HostError
from tests.docker.conftest import SESSION_ID, SESSION_LABEL, TEST_IMAGE, Cleanup, unique
from tests.upstream_docker import add_context, docker_config, use_context


class RemappedEngine:
    """The real engine's API, except that `docker info` says the daemon remaps user namespaces
    (moby daemon/info.go:212-214 adds `name=userns` then). Before each start it records the
    HostConfig the engine stored for the container."""

    def __init__(self, api: docker.APIClient) -> None:
        self._api = api
        self.host_configs: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = self._api.info()
        info["SecurityOptions"] = [*(info.get("SecurityOptions") or []), "name=userns"]
        return info

    def start(self, container: str, *args: Any, **kwargs: Any) -> Any:
        self.host_configs.append(self._api.inspect_container(container)["HostConfig"])
        return self._api.start(container, *args, **kwargs)


def test_the_probe_on_a_userns_remap_daemon_is_created_with_userns_host(
        client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The engine keeps what the probe asked for: the host's user namespace, privileged, a
    private cgroup namespace, kind's security options (moby accepts --userns=host on any
    daemon; on a remapped one it is what lets --privileged through)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    engine = RemappedEngine(client.api)
    snapshot = observe_host(DockerRuntime(engine), probe_images=(TEST_IMAGE,))
    assert snapshot.probe_image == TEST_IMAGE
    (stored,) = engine.host_configs
    assert stored["UsernsMode"] == "host"
    assert stored["Privileged"] is True
    assert stored["CgroupnsMode"] == "private"
    # the engine adds `label=disable` to a privileged container's options itself
    assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(stored["SecurityOpt"])
    assert client.containers.list(all=True, filters={"label": "gpulab.dev/probe"}) == []


# --------------------------------------------------------------------------- contexts


@pytest.fixture
def engine_socket() -> str:
    """The real engine's socket path (as the environment names it)."""
    path = resolve_endpoint().unix_socket
    if path is None:
        pytest.skip("the test engine is not on a unix socket")
    return path


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path (a unix socket path has at most 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="gl-", dir="/tmp") as folder:
        yield Path(folder)


def test_a_context_is_followed_to_its_engine(engine_socket: str, short_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`docker context use` to a context whose socket is a symlink to the real engine's: the
    docker-py adapter, the stdlib reader and kind's environment all get that socket."""
    from gpulab import core
    from gpulab.adapters.docker_probe import UnixSocketReader

    link = short_dir / "engine.sock"
    link.symlink_to(engine_socket)
    config = docker_config(short_dir / "config")
    add_context(config, "gpulab-test", f"unix://{link}")
    use_context(config, "gpulab-test")
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    endpoint = core.docker_endpoint()
    runtime = connect(timeout=5, endpoint=endpoint)
    try:
        assert runtime.host == f"unix://{link} (Docker context 'gpulab-test')"
        assert runtime.info().version
        assert runtime.endpoint.client_env()["DOCKER_HOST"] == f"unix://{link}"
    finally:
        runtime.close()
    reader = core.read_docker(timeout=5, endpoint=endpoint)
    assert isinstance(reader, UnixSocketReader) and reader.path == str(link)
    reader.containers({})


def test_a_context_at_a_bogus_socket_says_so_and_docker_host_wins(
        engine_socket: str, short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = docker_config(short_dir / "config")
    add_context(config, "gone", f"unix://{short_dir}/nothing.sock")
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.setenv("DOCKER_CONTEXT", "gone")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    with pytest.raises(HostError) as caught:
        connect(timeout=3)
    assert caught.value.message == (f"no Docker engine at unix://{short_dir}/nothing.sock "
                                    "(Docker context 'gone') (socket not found)")
    assert "docker context use" in (caught.value.hint or "")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine_socket}")  # the CLI's order: it wins
    runtime = connect(timeout=5)
    try:
        assert runtime.host == f"unix://{engine_socket}"
    finally:
        runtime.close()


# --------------------------------------------------------------------------- host ports


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def kai_profile() -> Any:
    from gpulab.stacks import load_profile

    return load_profile("vcluster-kai").profile


def test_a_port_another_labs_container_publishes_names_that_lab(
        runtime: DockerRuntime, client: docker.DockerClient, cleanup: Cleanup,
        kai_profile: Any) -> None:
    """A running container labelled for another lab publishes 127.0.0.1:<port> (as kind
    publishes a team's port); doctor reads Docker's port bindings and names that lab. The same
    container, seen from its own lab (a re-run of `up`), is fine."""
    port = _free_port()
    other = unique("lab")
    name = unique("cp")
    cleanup.containers.append(name)
    try:
        client.containers.run(TEST_IMAGE, ["sleep", "120"], name=name, detach=True,
                              ports={"80/tcp": ("127.0.0.1", port)},
                              labels={SESSION_LABEL: SESSION_ID, "gpulab.dev/lab": other})
    except docker.errors.APIError as err:
        pytest.skip(f"this engine cannot publish a port: {err.explanation}")
    teams = list(kai_profile.teams)
    teams[0] = teams[0].model_copy(update={"api_host_port": port})
    profile = kai_profile.model_copy(update={"teams": teams})
    seen = observe_host(runtime, host_ports=profile.host_ports())
    mine = next(c for c in seen.containers if c.name == name)
    assert any(p.port == port and p.address == "127.0.0.1" for p in mine.ports)
    assert runtime.get(name) is not None and runtime.get(name).ports == mine.ports  # type: ignore[union-attr]
    snapshot = HostSnapshot(docker=seen.docker, containers=seen.containers,
                            busy_ports=seen.busy_ports)
    found = {f.check: f for f in diagnose(snapshot, profile, "mine")}["ports"]
    assert found.status == "fail"
    assert f"127.0.0.1:{port} (team team-nlp's vCluster API (teams[0].api_host_port)) is " \
           f"published by lab '{other}' (container {name})" in found.detail
    again = {f.check: f for f in diagnose(snapshot, profile, other)}["ports"]
    assert again.status == "ok" and f"127.0.0.1:{port} published by this lab already" in \
        again.detail
    with contextlib.suppress(docker.errors.NotFound):
        client.api.remove_container(name, force=True)
