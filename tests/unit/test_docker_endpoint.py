"""The Docker endpoint is resolved as the docker CLI resolves it (docker/cli v29.7.2
cli/command/cli.go resolveContextName / resolveDockerEndpoint, cli/context/store), once, and the
same one reaches docker-py, the stdlib reader and the kind binary.

The context store is docker/cli's own e2e fixture (tests/upstream_docker.py): a config folder whose
`remote` context (ssh://someserver) the CLI wrote; other contexts are that file with another
name and host, stored where the CLI stores them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import docker
import pytest

from gpulab.adapters.docker_endpoint import (
    DEFAULT_DOCKER_HOST,
    DockerEndpoint,
    context_id,
    resolve_endpoint,
)
from gpulab.errors import ExitCode, HostError
from gpulab.providers import kind as kind_provider
from tests.upstream_docker import REMOTE_CONTEXT, add_context, docker_config, use_context


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return docker_config(tmp_path / "docker-config")


def test_the_fixture_is_where_the_cli_keeps_contexts() -> None:
    """docker/cli names the folder by the SHA-256 of the context's name (store.go contextdirOf)."""
    assert context_id(REMOTE_CONTEXT) == \
        "b71199ebd070b36beab7317920c2c2f1d777df8d05e5527d8458fda57cb17a7a"


def test_nothing_set_is_the_default_socket(config: Path) -> None:
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config)})
    assert endpoint == DockerEndpoint(host=DEFAULT_DOCKER_HOST)
    assert endpoint.unix_socket == "/var/run/docker.sock"
    assert endpoint.describe() == DEFAULT_DOCKER_HOST


def test_docker_context_names_a_stored_context(config: Path) -> None:
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": REMOTE_CONTEXT})
    assert (endpoint.host, endpoint.context, endpoint.source) == (
        "ssh://someserver", "remote", "DOCKER_CONTEXT")
    assert endpoint.unix_socket is None  # not a socket: the stdlib reader steps aside
    assert endpoint.describe() == "ssh://someserver (Docker context 'remote')"


def test_current_context_of_the_config_file(config: Path) -> None:
    add_context(config, "colima", "unix:///home/me/.colima/default/docker.sock")
    use_context(config, "colima")
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config)})
    assert endpoint.host == "unix:///home/me/.colima/default/docker.sock"
    assert endpoint.context == "colima" and endpoint.source == str(config / "config.json")


def test_precedence_docker_host_then_docker_context_then_config_then_default(
        config: Path) -> None:
    """resolveContextName (cli.go:439-457): a non-empty DOCKER_HOST wins, then a non-empty
    DOCKER_CONTEXT, then currentContext, then "default"."""
    add_context(config, "colima", "unix:///colima.sock")
    use_context(config, "colima")
    base = {"DOCKER_CONFIG": str(config)}
    both = {**base, "DOCKER_CONTEXT": REMOTE_CONTEXT, "DOCKER_HOST": "tcp://10.0.0.9:2375"}
    assert resolve_endpoint(both).host == "tcp://10.0.0.9:2375"
    assert resolve_endpoint(both).source == "DOCKER_HOST"
    assert resolve_endpoint({**both, "DOCKER_HOST": ""}).host == "ssh://someserver"
    assert resolve_endpoint({**base, "DOCKER_CONTEXT": ""}).host == "unix:///colima.sock"
    assert resolve_endpoint({**base, "DOCKER_CONTEXT": "default"}).host == DEFAULT_DOCKER_HOST
    use_context(config, "default")
    assert resolve_endpoint(base).host == DEFAULT_DOCKER_HOST


def test_docker_config_unset_means_home_dot_docker(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    docker_config(tmp_path / ".docker")
    use_context(tmp_path / ".docker", REMOTE_CONTEXT)
    assert resolve_endpoint({}).host == "ssh://someserver"


def test_a_context_that_does_not_exist_is_one_line(config: Path) -> None:
    with pytest.raises(HostError) as caught:
        resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "nope"})
    err = caught.value
    assert err.exit_code == ExitCode.HOST and "\n" not in str(err)
    assert err.message.startswith("Docker context 'nope' (DOCKER_CONTEXT) does not exist: no ")
    assert context_id("nope") in err.message and "docker context" in (err.hint or "")
    use_context(config, "gone")
    with pytest.raises(HostError, match=r"'gone' \(currentContext in .*config.json\)"):
        resolve_endpoint({"DOCKER_CONFIG": str(config)})


def test_a_broken_config_file_is_the_default_context(config: Path) -> None:
    (config / "config.json").write_text("{not json", encoding="utf-8")
    assert resolve_endpoint({"DOCKER_CONFIG": str(config)}).host == DEFAULT_DOCKER_HOST


def test_client_env_points_the_docker_cli_at_the_same_engine(config: Path) -> None:
    """kind runs the docker CLI: DOCKER_HOST set, DOCKER_CONTEXT cleared (None = unset), and for a
    context the TLS variables are the context's, not whatever the shell had."""
    add_context(config, "colima", "unix:///colima.sock")
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "colima"})
    assert endpoint.client_env() == {"DOCKER_HOST": "unix:///colima.sock", "DOCKER_CONTEXT": None,
                                     "DOCKER_TLS_VERIFY": None, "DOCKER_TLS": None,
                                     "DOCKER_CERT_PATH": None}
    shell = {"DOCKER_CONTEXT": "colima", "DOCKER_TLS_VERIFY": "1", "PATH": "/bin"}
    assert endpoint.docker_py_env(shell) == {"DOCKER_HOST": "unix:///colima.sock", "PATH": "/bin"}
    # DOCKER_HOST (the default context): the user's TLS variables are theirs to keep
    plain = resolve_endpoint({"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1",
                              "DOCKER_CERT_PATH": "/certs"})
    assert plain.client_env() == {"DOCKER_HOST": "tcp://h:2376", "DOCKER_CONTEXT": None}
    assert (plain.tls, plain.tls_verify, plain.cert_path) == (True, True, "/certs")


def _tls_files(config: Path, name: str, files: tuple[str, ...]) -> Path:
    folder = config / "contexts" / "tls" / context_id(name) / "docker"
    folder.mkdir(parents=True)
    for file in files:
        (folder / file).write_text(f"{file} (content is not read before connecting)")
        (folder / file).chmod(stat.S_IRUSR | stat.S_IWUSR)
    return folder


def test_tls_context_is_handed_on_as_the_cert_path_triple(config: Path) -> None:
    """The context's TLS folder holds ca.pem, cert.pem, key.pem (tlsstore.go, tlsdata.go): it
    becomes DOCKER_CERT_PATH with DOCKER_TLS_VERIFY, which docker-py reads the same way."""
    add_context(config, "secure", "tcp://engine.example:2376")
    folder = _tls_files(config, "secure", ("ca.pem", "cert.pem", "key.pem"))
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "secure"})
    env = endpoint.client_env()
    assert env["DOCKER_CERT_PATH"] == str(folder) and env["DOCKER_TLS_VERIFY"] == "1"
    assert env["DOCKER_TLS"] is None
    kwargs = docker.utils.kwargs_from_env(environment=endpoint.docker_py_env({}))
    assert kwargs["base_url"] == "tcp://engine.example:2376"
    assert kwargs["tls"].verify is True
    assert kwargs["tls"].cert == (str(folder / "cert.pem"), str(folder / "key.pem"))
    assert kwargs["tls"].ca_cert == str(folder / "ca.pem")


def test_tls_context_that_skips_verification(config: Path) -> None:
    add_context(config, "lax", "tcp://engine.example:2376", skip_tls_verify=True)
    _tls_files(config, "lax", ("ca.pem", "cert.pem", "key.pem"))
    env = resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "lax"}).client_env()
    assert env["DOCKER_TLS"] == "1" and env["DOCKER_TLS_VERIFY"] is None


@pytest.mark.parametrize("files", [("ca.pem",), ("cert.pem", "key.pem"), ()])
def test_other_tls_shapes_are_refused_in_one_line(config: Path, files: tuple[str, ...]) -> None:
    add_context(config, "partial", "tcp://engine.example:2376", skip_tls_verify=not files)
    if files:
        _tls_files(config, "partial", files)
    with pytest.raises(HostError) as caught:
        resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "partial"})
    assert "uses TLS that gpulab cannot hand on" in caught.value.message
    assert "DOCKER_CERT_PATH" in (caught.value.hint or "") and "\n" not in str(caught.value)


def test_tls_files_of_a_socket_context_are_ignored(config: Path) -> None:
    """The CLI does not use TLS for sockets or ssh (load.go ClientOpts, isSocket)."""
    add_context(config, "sock", "unix:///x.sock")
    _tls_files(config, "sock", ("ca.pem",))
    endpoint = resolve_endpoint({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "sock"})
    assert endpoint.tls is False


def test_kind_gets_docker_host_and_no_docker_context(config: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind subprocess sees DOCKER_HOST of the resolved endpoint and no DOCKER_CONTEXT."""
    from gpulab import core

    add_context(config, "colima", "unix:///colima.sock")
    use_context(config, "colima")
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.setenv("DOCKER_CONTEXT", "colima")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    seen = tmp_path / "env"
    kind = tmp_path / "bin" / "kind"
    kind.parent.mkdir()
    kind.write_text(f"#!/bin/sh\nenv > {seen}\necho 'kind v0.33.0 go1.24 linux/amd64'\n")
    kind.chmod(0o755)
    monkeypatch.setenv("PATH", f"{kind.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("gpulab.tools.find_tool", lambda name: str(kind) if name == "kind" else None)
    cli = kind_provider.kind_cli(core.docker_endpoint())
    assert cli is not None and cli.version() == "v0.33.0"
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert env["DOCKER_HOST"] == "unix:///colima.sock"
    assert "DOCKER_CONTEXT" not in env
