"""Find kind and helm, or install the pinned releases into gpulab's cache.

Downloads are checked against the sha256 file each project publishes next to its binary; a
mismatch deletes the download and fails.
"""

from __future__ import annotations

import hashlib
import io
import os
import platform
import shutil
import stat
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from gpulab.errors import HostError
from gpulab.paths import cache_dir

__all__ = ["HELM_VERSION", "find_tool", "install_tool", "tool_bin_dir"]

HELM_VERSION = "v3.19.2"
_TIMEOUT = 60
# Digests copied from the release notes; where a release is not listed here, the `.sha256sum`
# file published next to the download is used instead.
PINNED_SHA256 = {
    ("helm", "v3.19.2", "linux", "amd64"):
        "2114c9dea2844dce6d0ee2d792a9aae846be8cf53d5b19dc2988b5a0e8fec26e",
    ("helm", "v3.19.2", "linux", "arm64"):
        "566e9f3a5a83a81e4b03503ae37e368edd52d699619e8a9bb1fdf21561ae0e88",
    ("helm", "v3.19.2", "darwin", "amd64"):
        "7ef4416cdef4c2d78a09e1c8f07a51e945dc0343c883a46b1f628deab52690b7",
    ("helm", "v3.19.2", "darwin", "arm64"):
        "f0847f899479b66a6dd8d9fcd452e8db2562e4cf3f7de28103f9fcf2b824f1d5",
}


def tool_bin_dir() -> Path:
    return cache_dir() / "bin"


def find_tool(name: str) -> str | None:
    """gpulab's cached binary first, then PATH."""
    cached = tool_bin_dir() / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which(name)


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )


def _system() -> str:
    return platform.system().lower()


def release_urls(name: str, version: str) -> tuple[str, str]:
    """(binary or archive URL, sha256 URL) of a pinned release."""
    system, arch = _system(), _arch()
    if name == "kind":
        url = f"https://github.com/kubernetes-sigs/kind/releases/download/{version}/kind-{system}-{arch}"
        return url, f"{url}.sha256sum"
    if name == "helm":
        url = f"https://get.helm.sh/helm-{version}-{system}-{arch}.tar.gz"
        return url, f"{url}.sha256sum"
    raise HostError(f"gpulab cannot install '{name}'")


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response:
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, OSError) as err:
        raise HostError(
            f"could not download {url}: {err}",
            hint="check the internet connection, or install the tool yourself",
        ) from None


def verify_sha256(data: bytes, checksum_text: str, url: str) -> None:
    """Compare with the first hex digest in a published `*.sha256sum` file."""
    expected = checksum_text.split(maxsplit=1)[0].strip().lower() if checksum_text.strip() else ""
    actual = hashlib.sha256(data).hexdigest()
    if len(expected) != 64 or actual != expected:
        raise HostError(f"checksum mismatch for {url}: expected {expected or '?'}, got {actual}",
                        hint="the download is corrupt or tampered with; nothing was installed")


def install_tool(name: str, version: str) -> Path:
    """Download, verify and install a pinned tool into the cache; returns its path."""
    url, sum_url = release_urls(name, version)
    data = _download(url)
    pinned = PINNED_SHA256.get((name, version, _system(), _arch()))
    checksum = pinned or _download(sum_url).decode("utf-8", "replace")
    verify_sha256(data, checksum, url)
    if name == "helm":
        data = _extract_helm(data, url)
    target = tool_bin_dir() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    partial.replace(target)
    return target


def _extract_helm(archive: bytes, url: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and Path(member.name).name == "helm":
                handle = tar.extractfile(member)
                if handle is not None:
                    return handle.read()
    raise HostError(f"no helm binary inside {url}")
