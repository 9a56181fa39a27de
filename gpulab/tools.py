"""Find kind and helm, or install the pinned releases into gpulab's cache.

gpulab looks for each tool in `$GPULAB_KIND` / `$GPULAB_HELM` (a path to a binary already on
this host: offline and corporate hosts), then in its cache (`tool_bin_dir()`), then on PATH.
Downloads are checked against the sha256 pinned here, else the file each project publishes next
to its binary; a mismatch deletes the download and fails. A download that fails names the
version, the URL, the checksum and where gpulab looks, and how to give it a binary instead
(`adopt_tool`: its version is checked, then it is copied into the cache).
"""

from __future__ import annotations

import hashlib
import io
import os
import platform
import re
import shutil
import stat
import subprocess
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.errors import HostError
from gpulab.paths import cache_dir

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile

__all__ = [
    "HELM_MAJORS",
    "HELM_VERSION",
    "TOOL_ENV",
    "adopt_tool",
    "check_version",
    "find_tool",
    "install_tool",
    "tool_bin_dir",
    "tool_version",
    "tool_versions",
    "where_gpulab_looks",
]

HELM_VERSION = "v3.19.2"
# The helm major versions whose post-renderer gpulab knows (gpulab.adapters.helm: an executable
# for helm 3, a plugin for helm 4); a newer major is refused, not guessed at.
HELM_MAJORS = (3, 4)
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


TOOL_ENV = {"kind": "GPULAB_KIND", "helm": "GPULAB_HELM"}
_VERSION_ARGS = {"kind": (["version"], r"kind (v\d+\.\d+\.\d+)"),
                 "helm": (["version", "--template", "{{.Version}}"], r"(v\d+\.\d+\.\d+)")}


def tool_versions(profile: LabProfile) -> dict[str, str]:
    """The version of each tool gpulab installs, for `profile` (kind's is the profile's)."""
    return {"kind": profile.management.kind_version, "helm": HELM_VERSION}


def tool_bin_dir() -> Path:
    return cache_dir() / "bin"


def where_gpulab_looks(name: str) -> str:
    return f"${TOOL_ENV.get(name, name.upper())}, then {tool_bin_dir() / name}, then {name} on PATH"


def _given(name: str) -> Path | None:
    """The binary `$GPULAB_KIND` / `$GPULAB_HELM` names; HostError when it is not one."""
    variable = TOOL_ENV.get(name)
    value = os.environ.get(variable, "").strip() if variable else ""
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise HostError(f"{variable}={value}: no executable file there",
                        hint=f"point {variable} at a {name} binary, or unset it")
    return path


def find_tool(name: str) -> str | None:
    """`$GPULAB_KIND` / `$GPULAB_HELM` when set, else gpulab's cached binary, else PATH."""
    given = _given(name)
    if given is not None:
        return str(given)
    cached = tool_bin_dir() / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which(name)


def tool_version(name: str, binary: str | Path) -> str | None:
    """What `kind version` / `helm version` says (v1.2.3), or None when it does not run."""
    argv, pattern = _VERSION_ARGS[name]
    try:
        done = subprocess.run([str(binary), *argv], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(pattern, done.stdout + done.stderr)
    return match.group(1) if match else None


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def check_version(name: str, binary: str | Path, wanted: str, given_as: str) -> str:
    """The binary's version when it is the one gpulab needs (kind: the profile's pin exactly;
    helm: the pin or newer of a major in HELM_MAJORS, as doctor checks it), else one HostError
    line."""
    found = tool_version(name, binary)
    if found is None:
        raise HostError(f"{given_as} does not answer `{name} {' '.join(_VERSION_ARGS[name][0])}`"
                        f" with a version: not a {name} binary gpulab can use",
                        hint=f"give a {name} {wanted} binary")
    if name == "helm":
        ok = _numbers(found) >= _numbers(wanted) and _numbers(found)[0] in HELM_MAJORS
        need = f"helm {wanted} or newer, of major version {' or '.join(map(str, HELM_MAJORS))}"
    else:
        ok = _numbers(found) == _numbers(wanted)
        need = f"{name} {wanted}"
    if not ok:
        raise HostError(f"{given_as} is {name} {found}; gpulab needs {need}",
                        hint=f"give a {need} binary")
    return found


def adopt_tool(name: str, source: Path, version: str) -> Path:
    """A binary already on this host (copied from a machine with internet access) installed
    into gpulab's cache, after checking it is the version gpulab needs; returns its path."""
    source = source.expanduser()
    if not source.is_file() or not os.access(source, os.X_OK):
        raise HostError(f"--{name} {source}: no executable file there",
                        hint=f"give the path of a {name} {version} binary")
    check_version(name, source, version, f"--{name} {source}")
    target = tool_bin_dir() / name
    if source.resolve() == target.resolve():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copyfile(source, partial)
    partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    partial.replace(target)
    return target


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
            f"{url}: {getattr(err, 'reason', None) or err}",
            hint="check the internet connection (or the proxy: HTTPS_PROXY)",
        ) from None


def verify_sha256(data: bytes, checksum_text: str, url: str) -> None:
    """Compare with the first hex digest in a published `*.sha256sum` file."""
    expected = checksum_text.split(maxsplit=1)[0].strip().lower() if checksum_text.strip() else ""
    actual = hashlib.sha256(data).hexdigest()
    if len(expected) != 64 or actual != expected:
        raise HostError(f"checksum mismatch for {url}: expected {expected or '?'}, got {actual}",
                        hint="the download is corrupt or tampered with; nothing was installed")


def _offline(name: str, version: str, url: str, sum_url: str, pinned: str | None,
             error: HostError) -> HostError:
    """A download that failed, with what a host without internet access needs to know: the
    version, the URL, the checksum, where gpulab looks, and how to give it the binary."""
    variable = TOOL_ENV.get(name, name.upper())
    checksum = (f"sha256 {pinned} (pinned by gpulab)" if pinned else
                f"sha256 as published at {sum_url}")
    what = "the helm binary inside that archive" if name == "helm" else "that file"
    return HostError("\n".join([
        f"could not download {name} {version}: {error.message}",
        f"  version:  {name} {version}",
        f"  url:      {url}",
        f"  checksum: {checksum}",
        f"  looks in: {where_gpulab_looks(name)}",
        "  proxy:    gpulab downloads through HTTPS_PROXY (and NO_PROXY) when they are set",
        f"  offline:  download {url} elsewhere, check its checksum, then give gpulab "
        f"{what}: gpulab doctor --install-tools --{name} /path/to/{name}   (or export "
        f"{variable}=/path/to/{name})",
    ]))


def install_tool(name: str, version: str) -> Path:
    """Download, verify and install a pinned tool into the cache; returns its path."""
    url, sum_url = release_urls(name, version)
    pinned = PINNED_SHA256.get((name, version, _system(), _arch()))
    try:
        data = _download(url)
        checksum = pinned or _download(sum_url).decode("utf-8", "replace")
    except HostError as error:
        raise _offline(name, version, url, sum_url, pinned, error) from None
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
