"""What some tests need from the host (a Docker engine with the test image, helm), and the one
line that says how to get it.

The tests use what the host already has and never install, start or build anything themselves.
`.ci/setup-host.sh` provides the rest, and nox runs it only when asked: `GPULAB_HOST_SETUP=1
python3 -m nox` as root on Linux (`.ci/run` sets it). Without it a test that needs something
missing skips with HINT, except in CI (CI=true), where it fails: there nothing may silently skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterable

REPO = Path(__file__).resolve().parents[1]
CI_BIN = REPO / ".cache" / "ci-bin"  # where .ci/setup-host.sh unpacks helm, helm3 and kubectl
TEST_IMAGE = "gpulab-test/busybox:1"  # built by .ci/setup-host.sh from busybox-static

ENABLE = "GPULAB_HOST_SETUP"
HINT = (f"{ENABLE}=1 python3 -m nox, as root on Linux, provides it (apt-installs docker.io and "
        f"busybox-static, starts dockerd, builds {TEST_IMAGE} in its engine, unpacks helm and "
        f"kubectl into .cache/ci-bin)")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(what: str) -> NoReturn:
    """Skip locally with one line saying how to get `what`; fail in CI, which must provide it."""
    message = f"{what}: {HINT}"
    if in_ci():
        pytest.fail(f"{message} (CI=true, so this fails instead of skipping)", pytrace=False)
    pytest.skip(message)


def _executable(candidates: Iterable[str | Path | None]) -> str | None:
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def find_helm() -> str | None:
    """helm from .cache/ci-bin, else the one on PATH."""
    return _executable([CI_BIN / "helm", shutil.which("helm")])


def find_helm3() -> str | None:
    """A helm 3 binary: $GPULAB_TEST_HELM3, .cache/ci-bin/helm3, else `helm3` on PATH."""
    return _executable([os.environ.get("GPULAB_TEST_HELM3"), CI_BIN / "helm3",
                        shutil.which("helm3")])


def find_kubectl() -> str | None:
    """kubectl from .cache/ci-bin, else the one on PATH."""
    return _executable([CI_BIN / "kubectl", shutil.which("kubectl")])


def require_kubectl() -> str:
    """The kubectl binary; missing skips locally but FAILS in CI (CI=true), like helm."""
    path = find_kubectl()
    if path is None:
        unavailable("needs a kubectl binary")
    return path


def require_helm() -> str:
    """The helm binary; missing skips locally but FAILS in CI (CI=true), where setup provides it."""
    path = find_helm()
    if path is None:
        unavailable("needs a helm binary")
    return path


def helm_on_path(monkeypatch: pytest.MonkeyPatch) -> str:
    """require_helm(), with its folder first on PATH for the test (what gpulab will find)."""
    path = require_helm()
    monkeypatch.setenv("PATH", f"{Path(path).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return path
