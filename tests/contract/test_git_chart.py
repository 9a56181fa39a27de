"""Charts pinned to a git commit (Kamaji's is only published as a moving 0.0.0+latest): fetched
once per commit with the real git, dependencies from Chart.lock, rendered by the real helm."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from gpulab.adapters.base import HelmRelease
from gpulab.adapters.git_chart import chart_from_git, missing_dependencies
from gpulab.adapters.helm import PyHelm3Gateway, chart_reference
from gpulab.errors import AdapterError
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from tests.schemas import pinned_data

KAMAJI_CHART = "kamaji-0.0.0+latest"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def kamaji_repo(tmp_path: Path) -> tuple[str, str]:
    """A git repository holding the vendored Kamaji chart at charts/kamaji (with kamaji-etcd
    already in its charts/, as the published package has it); (file:// URL, commit)."""
    repo = tmp_path / "kamaji"
    shutil.copytree(pinned_data() / "charts" / KAMAJI_CHART, repo / "charts" / "kamaji")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "chart")
    return f"file://{repo}", _git(repo, "rev-parse", "HEAD")


def test_a_commit_is_fetched_once_and_cached(kamaji_repo, tmp_path: Path) -> None:
    url, commit = kamaji_repo
    cache = tmp_path / "cache"
    chart = chart_from_git(url, commit, "charts/kamaji", cache, "helm-not-needed")
    assert (chart / "Chart.yaml").is_file() and (chart / "charts" / "kamaji-etcd").is_dir()
    assert not (chart.parents[1] / ".git").exists()
    # a second call does not touch git (the cache is complete): it works with the source gone
    shutil.rmtree(url.removeprefix("file://"))
    assert chart_from_git(url, commit, "charts/kamaji", cache, "x") == chart


def test_unknown_commit_or_path_is_one_error_line(kamaji_repo, tmp_path: Path) -> None:
    url, commit = kamaji_repo
    with pytest.raises(AdapterError, match=r"fetching .* failed") as caught:
        chart_from_git(url, "0" * 40, "charts/kamaji", tmp_path / "c1", "helm")
    assert "\n" not in str(caught.value)
    with pytest.raises(AdapterError, match="has no chart at charts/nothing"):
        chart_from_git(url, commit, "charts/nothing", tmp_path / "c2", "helm")
    assert not list((tmp_path / "c2" / "charts").rglob("Chart.yaml"))  # nothing half-cached


def test_missing_dependencies_are_built_from_the_lock(kamaji_repo, tmp_path: Path) -> None:
    """The git tree has no charts/kamaji-etcd (it is not committed upstream): `helm dependency
    build` fetches the version Chart.lock pins."""
    url, commit = kamaji_repo
    repo = Path(url.removeprefix("file://"))
    shutil.rmtree(repo / "charts" / "kamaji" / "charts")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "as upstream: no vendored subchart")
    commit = _git(repo, "rev-parse", "HEAD")
    assert missing_dependencies(repo / "charts" / "kamaji") == ["kamaji-etcd"]
    log = tmp_path / "helm.log"
    helm = tmp_path / "helm"
    helm.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nmkdir -p \"$3/charts/kamaji-etcd\"\n")
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    chart = chart_from_git(url, commit, "charts/kamaji", tmp_path / "cache", str(helm))
    assert log.read_text().split()[:2] == ["dependency", "build"]
    assert missing_dependencies(chart) == []


@pytest.mark.helm
def test_the_pinned_kamaji_chart_renders_the_pinned_image(kamaji_repo, tmp_path: Path,
                                                          monkeypatch, helm_bin: str) -> None:
    url, commit = kamaji_repo
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    profile = load_profile("kamaji-hami").profile
    assert isinstance(profile, KamajiHamiProfile)
    release = render.kamaji_release(profile)
    # the built-in profile pins Kamaji's chart to the commit that built its image
    assert (release.repo, release.git_commit, release.git_path) == (
        "https://github.com/clastix/kamaji", "ddbabd87ed0e8d7c319414383e153c46f21733a9",
        "charts/kamaji")
    local = HelmRelease(release.name, release.namespace, release.chart, url, release.version,
                        release.values, git_commit=commit, git_path="charts/kamaji")
    ref, repo = chart_reference(local, helm_bin)
    assert isinstance(ref, Path) and repo is None
    objects = PyHelm3Gateway(None, executable=helm_bin).template(local, kube_version="1.36.4")
    controller = next(o for o in objects if o["kind"] == "Deployment"
                      and "kamaji" in o["metadata"]["name"] and "etcd" not in o["metadata"]["name"])
    images = {c["image"]: c.get("imagePullPolicy") for c in
              controller["spec"]["template"]["spec"]["containers"]}
    assert images.get("clastix/kamaji:26.8.2-edge") == "IfNotPresent", images
