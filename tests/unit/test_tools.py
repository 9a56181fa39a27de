"""Tool installation verifies checksums before anything lands in the cache."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import tarfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpulab import tools
from gpulab.cli import app
from gpulab.errors import HostError


def _helm_archive(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("linux-amd64/helm")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def test_kind_install_checks_the_published_sha256(monkeypatch) -> None:
    binary = b"#!/bin/sh\necho kind v0.33.0\n"
    served = {}
    url, sum_url = tools.release_urls("kind", "v0.33.0")
    served[url] = binary
    served[sum_url] = f"{hashlib.sha256(binary).hexdigest()}  kind-linux-amd64\n".encode()
    monkeypatch.setattr(tools, "_download", served.__getitem__)
    path = tools.install_tool("kind", "v0.33.0")
    assert path.read_bytes() == binary and os.access(path, os.X_OK)
    assert tools.find_tool("kind") == str(path)


def test_checksum_mismatch_installs_nothing(monkeypatch) -> None:
    url, sum_url = tools.release_urls("kind", "v0.33.0")
    served = {url: b"tampered", sum_url: b"0" * 64 + b"  kind\n"}
    monkeypatch.setattr(tools, "_download", served.__getitem__)
    with pytest.raises(HostError, match="checksum mismatch"):
        tools.install_tool("kind", "v0.33.0")
    assert not (tools.tool_bin_dir() / "kind").exists()


def test_pinned_helm_digest_is_used_not_the_sidecar(monkeypatch) -> None:
    monkeypatch.setattr(tools, "_system", lambda: "linux")
    monkeypatch.setattr(tools, "_arch", lambda: "amd64")
    archive = _helm_archive(b"helm")
    url, sum_url = tools.release_urls("helm", tools.HELM_VERSION)
    # The sidecar "agrees" with a tampered archive, but the pinned digest does not.
    served = {url: archive, sum_url: hashlib.sha256(archive).hexdigest().encode()}
    monkeypatch.setattr(tools, "_download", served.__getitem__)
    with pytest.raises(HostError, match="checksum mismatch"):
        tools.install_tool("helm", tools.HELM_VERSION)


def test_helm_is_extracted_from_its_archive(monkeypatch) -> None:
    monkeypatch.setattr(tools, "_system", lambda: "linux")
    monkeypatch.setattr(tools, "_arch", lambda: "riscv64")  # no pinned digest: sidecar is used
    archive = _helm_archive(b"#!/bin/sh\necho v3\n")
    url, sum_url = tools.release_urls("helm", "v3.19.2")
    served = {url: archive, sum_url: hashlib.sha256(archive).hexdigest().encode()}
    monkeypatch.setattr(tools, "_download", served.__getitem__)
    assert tools.install_tool("helm", "v3.19.2").read_bytes() == b"#!/bin/sh\necho v3\n"


def test_unknown_tool() -> None:
    with pytest.raises(HostError):
        tools.release_urls("kubectl", "v1")


# --------------------------------------------------------------------------- offline hosts

CI_HELM = Path(__file__).resolve().parents[2] / ".cache" / "ci-bin" / "helm"
runner = CliRunner()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No kind or helm anywhere gpulab looks, no Docker, and doctor's host checks skipped."""

    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("GPULAB_KIND", raising=False)
    monkeypatch.delenv("GPULAB_HELM", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setattr("gpulab.providers.kind.preflight", lambda *_a, **_k: [])


def _fake(path: Path, says: str) -> Path:
    """A binary that answers `version` as kind (or helm) would."""
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(0o755)
    return path


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_error(404)

    def log_message(self, *_args: object) -> None:
        return None


def test_a_failed_download_names_version_url_checksum_and_where_gpulab_looks(
        offline: None, monkeypatch: pytest.MonkeyPatch) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/kind-linux-amd64"
    monkeypatch.setattr(tools, "release_urls", lambda _n, _v: (base, f"{base}.sha256sum"))
    try:
        result = runner.invoke(app, ["doctor", "--install-tools", "--no-pull"])
    finally:
        server.shutdown()
    assert result.exit_code == 4, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: could not download kind v0.33.0: {base}: Not Found"
    assert "  version:  kind v0.33.0" in lines
    assert f"  url:      {base}" in lines
    assert f"  checksum: sha256 as published at {base}.sha256sum" in lines
    kind = tools.tool_bin_dir() / "kind"
    assert f"  looks in: $GPULAB_KIND, then {kind}, then kind on PATH" in lines
    assert any(line.startswith("  offline:  ") and "gpulab doctor --install-tools --kind "
               "/path/to/kind" in line and "export GPULAB_KIND=/path/to/kind" in line
               for line in lines)
    assert not kind.exists() and "Traceback" not in result.output


def test_a_helm_download_without_network_gives_the_pinned_digest(
        offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tools, "_system", lambda: "linux")
    monkeypatch.setattr(tools, "_arch", lambda: "amd64")
    monkeypatch.setenv("GPULAB_KIND", str(_fake(tmp_path / "kind",
                                                "kind v0.33.0 go1.25.1 linux/amd64")))

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    result = runner.invoke(app, ["doctor", "--install-tools", "--no-pull"])
    assert result.exit_code == 4, result.output
    url, _ = tools.release_urls("helm", tools.HELM_VERSION)
    digest = tools.PINNED_SHA256[("helm", tools.HELM_VERSION, "linux", "amd64")]
    assert f"using kind at {tmp_path / 'kind'} (GPULAB_KIND)" in result.stderr
    assert f"could not download helm {tools.HELM_VERSION}: {url}: " in result.stderr
    assert "Temporary failure in name resolution" in result.stderr
    assert f"  checksum: sha256 {digest} (pinned by gpulab)" in result.stderr
    assert "the helm binary inside that archive" in result.stderr


def test_a_given_binary_of_another_version_is_refused_with_one_line(
        offline: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _fake(tmp_path / "kind", "kind v0.20.0 go1.20.4 linux/amd64")
    result = runner.invoke(app, ["doctor", "--kind", str(old), "--no-pull"])
    assert result.exit_code == 4, result.output
    assert result.stderr.splitlines() == [
        f"error: --kind {old} is kind v0.20.0; gpulab needs kind v0.33.0 (give a kind v0.33.0 "
        f"binary)"]
    assert not (tools.tool_bin_dir() / "kind").exists()
    monkeypatch.setenv("GPULAB_KIND", str(old))
    env = runner.invoke(app, ["doctor", "--install-tools", "--no-pull"])
    assert env.exit_code == 4
    assert env.stderr.splitlines() == [
        f"error: GPULAB_KIND={old} is kind v0.20.0; gpulab needs kind v0.33.0 (give a kind "
        f"v0.33.0 binary)"]
    monkeypatch.setenv("GPULAB_KIND", str(tmp_path / "nothing-here"))
    missing = runner.invoke(app, ["doctor", "--install-tools", "--no-pull"])
    assert missing.exit_code == 4
    assert missing.stderr.splitlines() == [
        f"error: GPULAB_KIND={tmp_path / 'nothing-here'}: no executable file there (point "
        f"GPULAB_KIND at a kind binary, or unset it)"]


def test_a_given_binary_of_the_pinned_version_is_installed_into_the_cache(
        offline: None, tmp_path: Path) -> None:
    kind = _fake(tmp_path / "kind", "kind v0.33.0 go1.25.1 linux/amd64")
    argv = ["doctor", "--kind", str(kind), "--no-pull"]
    if CI_HELM.is_file():  # the real helm (v3.19.2 or newer) from .ci/setup-host.sh
        argv += ["--helm", str(CI_HELM)]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    cached = tools.tool_bin_dir() / "kind"
    assert f"installed kind v0.33.0 at {cached} (from {kind})" in result.stderr
    assert cached.read_bytes() == kind.read_bytes() and os.access(cached, os.X_OK)
    assert tools.find_tool("kind") == str(cached)
    if CI_HELM.is_file():
        assert tools.find_tool("helm") == str(tools.tool_bin_dir() / "helm")
        assert tools.tool_version("helm", tools.tool_bin_dir() / "helm") is not None


def test_a_helm_of_a_major_gpulab_does_not_know_is_refused_with_one_line(tmp_path: Path) -> None:
    """gpulab runs its post-renderer one way on helm 3 and another on helm 4 (adapters/helm.py);
    a helm 5 is refused, not guessed at, even though it is 'newer' than the pin."""
    five = _fake(tmp_path / "helm5", "v5.0.0")
    with pytest.raises(HostError) as info:
        tools.check_version("helm", five, tools.HELM_VERSION, f"GPULAB_HELM={five}")
    assert info.value.message == (f"GPULAB_HELM={five} is helm v5.0.0; gpulab needs helm "
                                  f"{tools.HELM_VERSION} or newer, of major version 3 or 4")
    for ok in ("v3.19.2", "v3.20.1", "v4.1.4"):
        assert tools.check_version("helm", _fake(tmp_path / ok, ok), tools.HELM_VERSION,
                                   "helm") == ok
