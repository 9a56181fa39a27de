"""Tool installation verifies checksums before anything lands in the cache."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile

import pytest

from gpulab import tools
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
