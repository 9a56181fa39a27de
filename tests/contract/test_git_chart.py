"""Charts pinned to a git commit (Kamaji's is only published as a moving 0.0.0+latest): fetched
once per commit with the real git, dependencies pulled at their Chart.lock versions by the real
helm, rendered by the real helm.

The git repositories here hold the chart as a real checkout of clastix/kamaji does: WITHOUT
charts/kamaji-etcd (it is not committed upstream, only Chart.yaml/Chart.lock name it). The
dependency comes from a chart repository served on 127.0.0.1 (built from the vendored pinned
subchart with `helm package` and `helm repo index`), and helm runs with an empty user
configuration (HOME, XDG_*, HELM_* in temporary folders) that must stay untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from gpulab.adapters.base import HelmRelease
from gpulab.adapters.git_chart import chart_from_git, missing_dependencies
from gpulab.adapters.helm import PyHelm3Gateway, chart_reference
from gpulab.errors import AdapterError
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from tests.schemas import pinned_data

if TYPE_CHECKING:
    from collections.abc import Iterator

KAMAJI_CHART = "kamaji-0.0.0+latest"
UPSTREAM_REPO = "https://clastix.github.io/charts"
ETCD = "kamaji-etcd"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path) -> str:
    if not (repo / ".git").is_dir():
        _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "chart")
    return _git(repo, "rev-parse", "HEAD")


def _kamaji_repo(root: Path, dependency_repo: str | None = None) -> tuple[str, Path]:
    """A git repository with the Kamaji chart at charts/kamaji as upstream commits it (no
    charts/ subfolder); `dependency_repo` replaces the kamaji-etcd repository URL in Chart.yaml
    and Chart.lock (which makes the lock's digest stale: gpulab must not rely on it)."""
    repo = root / "kamaji-git"
    chart = repo / "charts" / "kamaji"
    shutil.copytree(pinned_data() / "charts" / KAMAJI_CHART, chart)
    shutil.rmtree(chart / "charts")
    if dependency_repo:
        for name in ("Chart.yaml", "Chart.lock"):
            text = (chart / name).read_text(encoding="utf-8")
            assert UPSTREAM_REPO in text
            (chart / name).write_text(text.replace(UPSTREAM_REPO, dependency_repo),
                                      encoding="utf-8")
    return f"file://{repo}", repo


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, path)
    path.write_text(text.replace(old, new), encoding="utf-8")


# -- the user's (empty) helm, and helm run as the test's tool -----------------------------------

@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helm_bin: str) -> Path:
    """An empty helm configuration for the user: HOME, XDG_* and HELM_* in temp folders."""
    home = tmp_path / "user"
    dirs = {"HOME": home, "XDG_CONFIG_HOME": home / ".config",
            "XDG_CACHE_HOME": home / ".cache", "XDG_DATA_HOME": home / ".local" / "share"}
    for var, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(var, str(path))
    helm_paths = {
        "HELM_CONFIG_HOME": home / ".config" / "helm",
        "HELM_CACHE_HOME": home / ".cache" / "helm",
        "HELM_DATA_HOME": home / ".local" / "share" / "helm",
        "HELM_REPOSITORY_CONFIG": home / ".config" / "helm" / "repositories.yaml",
        "HELM_REPOSITORY_CACHE": home / ".cache" / "helm" / "repository",
        "HELM_CONTENT_CACHE": home / ".cache" / "helm" / "content",
        "HELM_REGISTRY_CONFIG": home / ".config" / "helm" / "registry" / "config.json",
    }
    for var in [v for v in os.environ if v.startswith("HELM_")]:
        monkeypatch.delenv(var)
    for var, path in helm_paths.items():
        monkeypatch.setenv(var, str(path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return home


def _snapshot(home: Path) -> dict[str, bytes | None]:
    """Every path under `home`, with the content of files: nothing may appear or change."""
    return {str(p.relative_to(home)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(home.rglob("*"))}


def _helm(helm: str, *args: str) -> str:
    proc = subprocess.run([helm, *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _render(helm: str, chart: Path, *sets: str) -> list[dict[str, Any]]:
    argv = ["template", "kamaji", str(chart), "--namespace", "kamaji-system"]
    for value in sets:
        argv += ["--set", value]
    return [d for d in yaml.safe_load_all(_helm(helm, *argv)) if isinstance(d, dict)]


def _etcd(objects: list[dict[str, Any]]) -> dict[str, Any]:
    sts = [o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == ETCD]
    assert len(sts) == 1, [(o["kind"], o["metadata"]["name"]) for o in objects]
    return sts[0]


# -- a chart repository on 127.0.0.1 -------------------------------------------------------------

class _Served:
    def __init__(self, root: Path, url: str, requests: list[str]) -> None:
        self.root, self.url, self.requests = root, url, requests


@contextlib.contextmanager
def _serve(root: Path, handler: Any = None,
           tls: ssl.SSLContext | None = None) -> Iterator[_Served]:
    requests: list[str] = []

    class Logged(handler or SimpleHTTPRequestHandler):  # type: ignore[misc]
        def log_message(self, *_: Any) -> None:
            requests.append(f"{self.command} {self.path}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Logged, directory=str(root)))
    if tls:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="chart-repo", daemon=True)
    thread.start()
    scheme = "https" if tls else "http"
    try:
        yield _Served(root, f"{scheme}://127.0.0.1:{server.server_address[1]}", requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _package_etcd(helm: str, dest: Path, version: str | None = None,
                  app_version: str | None = None) -> Path:
    """The vendored pinned kamaji-etcd 0.15.0 packaged, or a fake copy at another version."""
    source = pinned_data() / "charts" / KAMAJI_CHART / "charts" / ETCD
    if version:
        fake = dest.parent / f"src-{version}" / ETCD
        shutil.copytree(source, fake)
        _edit(fake / "Chart.yaml", "version: 0.15.0", f"version: {version}")
        _edit(fake / "Chart.yaml", "appVersion: 3.5.17", f"appVersion: {app_version}")
        source = fake
    _helm(helm, "package", str(source), "--destination", str(dest))
    return dest / f"{ETCD}-{version or '0.15.0'}.tgz"


@pytest.fixture
def chart_repo(tmp_path: Path, helm_bin: str, user_home: Path) -> Iterator[_Served]:
    """kamaji-etcd 0.15.0 (the vendored pinned chart) and a fake newer 0.17.0 (appVersion 9.9.9),
    served as a helm chart repository on 127.0.0.1."""
    root = tmp_path / "chart-repo"
    root.mkdir()
    _package_etcd(helm_bin, root)
    _package_etcd(helm_bin, root, "0.17.0", "9.9.9")
    with _serve(root) as served:
        _helm(helm_bin, "repo", "index", str(root), "--url", served.url)
        assert {"0.15.0", "0.17.0"} <= {
            v["version"] for v in yaml.safe_load((root / "index.yaml").read_text())["entries"][ETCD]}
        yield served


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- helm's own behaviour, which gpulab's fetch relies on -----------------------------------------

@pytest.mark.helm
def test_helm_itself_cannot_use_a_real_checkout(tmp_path: Path, user_home: Path,
                                                helm_bin: str) -> None:
    """Why gpulab pulls the dependency itself: a checkout lacks charts/kamaji-etcd, helm renders
    nothing while it is missing even when its condition disables it, and `helm dependency build`
    refuses a repository the user has not added (helm v4.1.4 pkg/downloader/manager.go:135)."""
    _, repo = _kamaji_repo(tmp_path)
    chart = repo / "charts" / "kamaji"
    assert missing_dependencies(chart) == [ETCD]
    for sets in ([], ["kamaji-etcd.deploy=false"]):
        proc = subprocess.run([helm_bin, "template", "k", str(chart), *[a for s in sets
                               for a in ("--set", s)]], capture_output=True, text=True, check=False)
        assert proc.returncode != 0
        assert "missing in charts/ directory: kamaji-etcd" in proc.stderr
    proc = subprocess.run([helm_bin, "dependency", "build", str(chart)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode != 0
    assert f"no repository definition for {UPSTREAM_REPO}" in proc.stderr


# -- chart_from_git -----------------------------------------------------------------------------

@pytest.mark.helm
def test_a_checkout_gets_its_dependency_at_the_lock_version(
        tmp_path: Path, chart_repo: _Served, user_home: Path, helm_bin: str) -> None:
    """The index offers 0.17.0 too; Chart.yaml asks for >=0.15.0; Chart.lock pins 0.15.0: gpulab
    fetches 0.15.0, with the user's helm left as it was (no repositories.yaml created)."""
    url, repo = _kamaji_repo(tmp_path, chart_repo.url)
    commit = _commit(repo)
    cache = tmp_path / "cache"
    before = _snapshot(user_home)
    chart = chart_from_git(url, commit, "charts/kamaji", cache, helm_bin)
    assert _snapshot(user_home) == before
    assert not (user_home / ".config" / "helm" / "repositories.yaml").exists()
    assert sorted(p.name for p in (chart / "charts").iterdir()) == [f"{ETCD}-0.15.0.tgz"]
    assert f"GET /{ETCD}-0.15.0.tgz" in chart_repo.requests
    assert f"GET /{ETCD}-0.17.0.tgz" not in chart_repo.requests
    assert missing_dependencies(chart) == []
    assert not (chart.parents[1] / ".git").exists()

    sts = _etcd(_render(helm_bin, chart))
    assert sts["metadata"]["labels"]["helm.sh/chart"] == f"{ETCD}-0.15.0"
    images = [c["image"] for c in sts["spec"]["template"]["spec"]["containers"]]
    assert images == ["quay.io/coreos/etcd:v3.5.17"], images  # not the fake 0.17.0's v9.9.9

    # a second call touches neither git nor the chart repository (the cache is complete)
    shutil.rmtree(repo)
    served = len(chart_repo.requests)
    assert chart_from_git(url, commit, "charts/kamaji", cache, "helm-not-needed") == chart
    assert len(chart_repo.requests) == served


@pytest.mark.helm
def test_the_users_helm_repositories_are_neither_read_nor_written(
        tmp_path: Path, chart_repo: _Served, user_home: Path, helm_bin: str) -> None:
    """A plain `helm pull --repo` reads the user's repositories.yaml and fails on any repository
    whose index is not cached (pkg/downloader/chart_downloader.go:382-404, :569-572): gpulab's
    helm must not see it."""
    config = user_home / ".config" / "helm" / "repositories.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("apiVersion: ''\ngenerated: '0001-01-01T00:00:00Z'\nrepositories:\n"
                      "- name: stale\n  url: http://127.0.0.1:9/charts\n", encoding="utf-8")
    dest = tmp_path / "plain"
    dest.mkdir()
    plain = subprocess.run([helm_bin, "pull", ETCD, "--repo", chart_repo.url, "--version",
                            "0.15.0", "--destination", str(dest)], capture_output=True, text=True,
                           check=False)
    assert plain.returncode != 0 and "no cached repo found" in plain.stderr, plain.stderr

    url, repo = _kamaji_repo(tmp_path, chart_repo.url)
    before = _snapshot(user_home)
    chart = chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "cache", helm_bin)
    assert (chart / "charts" / f"{ETCD}-0.15.0.tgz").is_file()
    assert _snapshot(user_home) == before


@pytest.mark.helm
def test_an_unreachable_or_incomplete_repository_is_one_error_line(
        tmp_path: Path, chart_repo: _Served, user_home: Path, helm_bin: str) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    url, repo = _kamaji_repo(tmp_path / "a", down)
    cache = tmp_path / "cache"
    with pytest.raises(AdapterError) as caught:
        chart_from_git(url, _commit(repo), "charts/kamaji", cache, helm_bin)
    line = str(caught.value)
    assert "\n" not in line
    for part in (ETCD, "0.15.0", down, "cannot be reached", f"this host must reach {down}"):
        assert part in line, line
    # nothing half-cached: only the (empty) per-repository folder is left
    assert [list(d.iterdir()) for d in (cache / "charts").iterdir()] == [[]]

    # the repository is up but does not serve the pinned version
    url, repo = _kamaji_repo(tmp_path / "b", chart_repo.url)
    _edit(repo / "charts" / "kamaji" / "Chart.lock", "version: 0.15.0", "version: 0.16.0")
    with pytest.raises(AdapterError) as caught:
        chart_from_git(url, _commit(repo), "charts/kamaji", cache, helm_bin)
    line = str(caught.value)
    assert "\n" not in line and ETCD in line and "0.16.0" in line and chart_repo.url in line
    assert "not found" in line, line


@pytest.mark.helm
def test_a_pulled_chart_that_is_not_the_pinned_version_is_refused(
        tmp_path: Path, chart_repo: _Served, user_home: Path, helm_bin: str) -> None:
    """helm falls back to "the closest available version" with only a warning
    (pkg/repo/v1/index.go:202-223), and an index entry may point at another package: the pulled
    chart's own Chart.yaml decides. Here the index says 0.16.0 but serves the 0.17.0 package."""
    index = yaml.safe_load((chart_repo.root / "index.yaml").read_text())
    liar = dict(next(v for v in index["entries"][ETCD] if v["version"] == "0.17.0"))
    liar["version"] = "0.16.0"
    index["entries"][ETCD].append(liar)
    (chart_repo.root / "index.yaml").write_text(yaml.safe_dump(index))
    url, repo = _kamaji_repo(tmp_path, chart_repo.url)
    _edit(repo / "charts" / "kamaji" / "Chart.lock", "version: 0.15.0", "version: 0.16.0")
    cache = tmp_path / "cache"
    with pytest.raises(AdapterError, match=r"got kamaji-etcd 0\.17\.0 instead of the pinned "
                                           r"kamaji-etcd 0\.16\.0") as caught:
        chart_from_git(url, _commit(repo), "charts/kamaji", cache, helm_bin)
    assert "\n" not in str(caught.value)
    assert not any((cache / "charts").rglob("*.tgz"))


def test_without_a_lock_only_an_exact_version_is_taken(tmp_path: Path) -> None:
    url, repo = _kamaji_repo(tmp_path, "http://127.0.0.1:9")
    (repo / "charts" / "kamaji" / "Chart.lock").unlink()
    with pytest.raises(AdapterError) as caught:
        chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "c1", "helm-not-called")
    line = str(caught.value)
    assert "\n" not in line
    assert "dependency kamaji-etcd is not pinned (no Chart.lock" in line
    assert "'>=0.15.0'" in line


@pytest.mark.helm
def test_without_a_lock_an_exact_chart_yaml_version_is_pulled(
        tmp_path: Path, chart_repo: _Served, user_home: Path, helm_bin: str) -> None:
    url, repo = _kamaji_repo(tmp_path, chart_repo.url)
    chart = repo / "charts" / "kamaji"
    (chart / "Chart.lock").unlink()
    _edit(chart / "Chart.yaml", "version: '>=0.15.0'", "version: 0.15.0")
    fetched = chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "cache", helm_bin)
    assert (fetched / "charts" / f"{ETCD}-0.15.0.tgz").is_file()


def test_a_file_dependency_is_taken_from_the_same_commit(tmp_path: Path) -> None:
    """`file://` is relative to the chart (helm's internal/resolver/resolver.go:242-263); the
    commit pins it, so it is copied without helm; a path outside the checkout is refused."""
    url, repo = _kamaji_repo(tmp_path)
    chart = repo / "charts" / "kamaji"
    shutil.copytree(pinned_data() / "charts" / KAMAJI_CHART / "charts" / ETCD,
                    repo / "charts" / ETCD)
    for name in ("Chart.yaml", "Chart.lock"):
        _edit(chart / name, UPSTREAM_REPO, "file://../kamaji-etcd")
    fetched = chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "c1",
                             "helm-not-called")
    assert (fetched / "charts" / ETCD / "Chart.yaml").is_file()
    assert missing_dependencies(fetched) == []

    for name in ("Chart.yaml", "Chart.lock"):
        _edit(chart / name, "file://../kamaji-etcd", "file://../../../elsewhere")
    with pytest.raises(AdapterError, match="outside the repository"):
        chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "c2", "helm-not-called")


def test_unknown_commit_or_path_is_one_error_line(tmp_path: Path) -> None:
    url, repo = _kamaji_repo(tmp_path)
    commit = _commit(repo)
    with pytest.raises(AdapterError, match=r"fetching .* failed") as caught:
        chart_from_git(url, "0" * 40, "charts/kamaji", tmp_path / "c1", "helm")
    assert "\n" not in str(caught.value)
    with pytest.raises(AdapterError, match="has no chart at charts/nothing"):
        chart_from_git(url, commit, "charts/nothing", tmp_path / "c2", "helm")
    assert not list((tmp_path / "c2" / "charts").rglob("Chart.yaml"))  # nothing half-cached


# -- an OCI dependency, from a minimal registry on 127.0.0.1 (TLS, trusted via SSL_CERT_FILE) -----

def _registry_handler(chart: bytes, version: str) -> type[BaseHTTPRequestHandler]:
    """Serves `charts/kamaji-etcd:<version>` the way `helm pull oci://` reads it (a manifest by
    tag, then its config and chart layer blobs)."""
    def digest(data: bytes) -> str:
        return f"sha256:{hashlib.sha256(data).hexdigest()}"

    config = json.dumps({"apiVersion": "v2", "name": ETCD, "version": version}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json",
                   "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                    "digest": digest(chart), "size": len(chart)}],
    }).encode()
    base = f"/v2/charts/{ETCD}"
    paths = {f"{base}/manifests/{version}": manifest, f"{base}/manifests/{digest(manifest)}":
             manifest, f"{base}/blobs/{digest(config)}": config,
             f"{base}/blobs/{digest(chart)}": chart}

    class Registry(BaseHTTPRequestHandler):
        def __init__(self, *args: Any, directory: str = "", **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

        def _answer(self, body: bool) -> None:
            data = paths.get(self.path)
            self.send_response(200 if data is not None else 404)
            kind = "application/vnd.oci.image.manifest.v1+json" if "/manifests/" in self.path \
                else "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data or b"")))
            if data is not None:
                self.send_header("Docker-Content-Digest", digest(data))
            self.end_headers()
            if body and data:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

    return Registry


@pytest.mark.helm
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_an_oci_dependency_is_pulled_by_name_and_version(
        tmp_path: Path, user_home: Path, helm_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    certs = tmp_path / "tls"
    certs.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(certs / "key.pem"), "-out", str(certs / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(certs / "cert.pem"))  # kept for gpulab's helm
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs / "cert.pem", certs / "key.pem")
    package = _package_etcd(helm_bin, tmp_path / "pkg").read_bytes()
    with _serve(tmp_path, _registry_handler(package, "0.15.0"), tls) as registry:
        oci = f"oci://{registry.url.removeprefix('https://')}/charts"
        url, repo = _kamaji_repo(tmp_path, oci)
        before = _snapshot(user_home)
        chart = chart_from_git(url, _commit(repo), "charts/kamaji", tmp_path / "cache", helm_bin)
        assert _snapshot(user_home) == before
    assert f"GET /v2/charts/{ETCD}/manifests/0.15.0" in registry.requests
    assert (chart / "charts" / f"{ETCD}-0.15.0.tgz").read_bytes() == package
    _etcd(_render(helm_bin, chart))


# -- the built-in profile's pin -------------------------------------------------------------------

@pytest.mark.helm
def test_the_pinned_kamaji_chart_renders_the_pinned_image(
        tmp_path: Path, chart_repo: _Served, user_home: Path, monkeypatch: pytest.MonkeyPatch,
        helm_bin: str) -> None:
    url, repo = _kamaji_repo(tmp_path, chart_repo.url)
    commit = _commit(repo)
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
    ref, repo_url = chart_reference(local, helm_bin)
    assert isinstance(ref, Path) and repo_url is None
    objects = PyHelm3Gateway(None, executable=helm_bin).template(local, kube_version="1.36.4")
    controller = next(o for o in objects if o["kind"] == "Deployment"
                      and "kamaji" in o["metadata"]["name"] and "etcd" not in o["metadata"]["name"])
    images = {c["image"]: c.get("imagePullPolicy") for c in
              controller["spec"]["template"]["spec"]["containers"]}
    assert images.get("clastix/kamaji:26.8.2-edge") == "IfNotPresent", images
    _etcd(objects)
