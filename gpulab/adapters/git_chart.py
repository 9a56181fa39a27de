"""A Helm chart taken from a git commit: the one reproducible pin for charts that are only
published under a moving version (Kamaji's open-source chart is `0.0.0+latest`, republished on
every push to master: clastix/kamaji `.github/workflows/helm.yaml`).

The commit id pins the content (git checks every object it fetches against its id). Checkouts are
cached per commit, shared by every lab; a fetch that fails leaves nothing in the cache.

Dependencies the chart folder does not carry (Kamaji's `kamaji-etcd` is not committed in its
`charts/`) are fetched at exactly the version the chart's `Chart.lock` pins, one by one with
`helm pull`, never with `helm dependency build`: that refuses any dependency whose repository is
not in the user's repositories.yaml (helm v4.1.4 pkg/downloader/manager.go:135 `Build` ->
`hasAllRepos`, :466-500, "no repository definition for ..."), and gpulab does not add
repositories to the user's helm. What `helm pull` does, as read in helm v4.1.4:

- `--repo URL` finds the chart in that repository's index without a repositories.yaml entry
  (pkg/action/pull.go:118-134 -> pkg/repo/v1/chartrepo.go:173-241 `FindChartInRepoURL`);
- that index is written, under a random name, to `helmpath.CachePath("repository")`, i.e. under
  HELM_CACHE_HOME and *not* HELM_REPOSITORY_CACHE (chartrepo.go:74, :111-119, removed at
  :206-209); the download then reads repositories.yaml and every cached index it lists
  (pkg/downloader/chart_downloader.go:382-404, :560-587) and the content cache (:126-146). So
  every helm path (HOME and HELM_*) points into a temporary folder: nothing of the user's helm
  is read or written (checked with strace: without HELM_CACHE_HOME, the index lands in
  ~/.cache/helm/repository even with HELM_REPOSITORY_CACHE set);
- `--version` is looked up as an exact version first, but falls back to the first version
  meeting it as a constraint, with only a warning (pkg/repo/v1/index.go:202-223; `--version
  0.15` gets 0.15.0), so the pulled chart's own Chart.yaml is checked against the lock;
- an `oci://` dependency is `<repository>/<name>`, as helm builds it (manager.go:729-731), and an
  exact version is used as the tag (pkg/registry/client.go:879-882);
- helm installs nothing while a dependency in Chart.yaml is missing from charts/, whatever its
  `condition` says (pkg/action/install.go:823-854, called at pkg/cmd/install.go:279-306), so
  every missing dependency is fetched, enabled or not.

`file://` dependencies are folders of the same commit (relative to the chart, as helm resolves
them: internal/resolver/resolver.go:242-263) and are copied into charts/.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpulab import children
from gpulab.errors import AdapterError, HostError

__all__ = ["GIT_TIMEOUT", "chart_from_git", "missing_dependencies"]

GIT_TIMEOUT = 300.0
_DONE = ".gpulab-complete"
# An exact chart version (SemVer 2, optional leading v), as opposed to a range such as >=0.15.0.
_EXACT = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def _child(argv: list[str], cwd: Path, what: str, *, env: dict[str, str] | None = None,
           hint: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return children.run(argv, cwd=str(cwd), timeout=GIT_TIMEOUT,
                            env=env or {**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        raise HostError(f"{argv[0]} not found on PATH ({what} needs it)",
                        hint=f"install {argv[0]}, then re-run") from None
    except subprocess.TimeoutExpired:
        raise AdapterError(f"{what} did not finish within {GIT_TIMEOUT:.0f}s",
                           hint=hint) from None


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (proc.stderr or proc.stdout or "").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1].removeprefix("Error: ") if lines else f"exit code {proc.returncode}"


def _run(argv: list[str], cwd: Path, what: str) -> None:
    proc = _child(argv, cwd, what)
    if proc.returncode:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise AdapterError(f"{what} failed: {' | '.join(tail)}", output=proc.stderr)


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AdapterError(f"{path} is not readable: {err}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"{path} is not a YAML mapping")
    return data


def _declared(chart: Path) -> list[dict[str, Any]]:
    """Chart.yaml's dependencies (requirements.yaml's for an apiVersion v1 chart)."""
    deps = _yaml(chart / "Chart.yaml").get("dependencies")
    if not deps and (chart / "requirements.yaml").is_file():
        deps = _yaml(chart / "requirements.yaml").get("dependencies")
    return [dep for dep in deps or [] if isinstance(dep, dict)]


def _carried(folder: Path, name: str) -> bool:
    if (folder / name).is_dir():
        return True
    packaged = re.compile(rf"^{re.escape(name)}-v?\d.*\.tgz$")  # not kamaji-etcd-… for kamaji
    return folder.is_dir() and any(packaged.match(p.name) for p in folder.iterdir())


def missing_dependencies(chart: Path) -> list[str]:
    """Dependencies in Chart.yaml that the chart's `charts/` folder does not carry."""
    missing: list[str] = []
    for dep in _declared(chart):
        name = str(dep.get("name", ""))
        if name and name not in missing and not _carried(chart / "charts", name):
            missing.append(name)
    return missing


@dataclass(frozen=True)
class _Pin:
    name: str
    repository: str
    version: str | None  # None: a file:// folder of this commit without a lock entry


def _same_repo(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _same_version(a: str, b: str) -> bool:
    return a.removeprefix("v") == b.removeprefix("v")


def _pins(chart: Path, names: list[str], where: str) -> list[_Pin]:
    """The exact version of each dependency in `names`: Chart.lock's, else an exact version in
    Chart.yaml; one error naming the first that is not pinned."""
    lock_file = next((chart / f for f in ("Chart.lock", "requirements.lock")
                      if (chart / f).is_file()), None)
    locked = (_yaml(lock_file).get("dependencies") or []) if lock_file else []
    declared = _declared(chart)
    pins: list[_Pin] = []
    for name in names:
        dep = next(d for d in declared if str(d.get("name", "")) == name)
        repository = str(dep.get("repository") or "")
        wanted = str(dep.get("version") or "")
        entry = next((e for e in locked if isinstance(e, dict) and str(e.get("name")) == name
                      and _same_repo(str(e.get("repository") or ""), repository)), None)
        if not repository:
            raise AdapterError(f"{where}: dependency {name} has no repository and is not in the "
                               "chart's charts/ folder",
                               hint="pick a commit whose chart carries it")
        if not repository.startswith(("http://", "https://", "oci://", "file://")):
            raise AdapterError(f"{where}: dependency {name} names its repository as "
                               f"'{repository}', not a URL",
                               hint="gpulab fetches dependencies only from http(s)://, oci:// "
                                    "or file:// repositories")
        if entry is not None and entry.get("version"):
            pins.append(_Pin(name, repository, str(entry["version"])))
        elif _EXACT.match(wanted):
            pins.append(_Pin(name, repository, wanted))
        elif repository.startswith("file://"):
            pins.append(_Pin(name, repository, None))  # the commit pins its content
        else:
            source = f"{lock_file.name} has no entry for it" if lock_file else "no Chart.lock"
            raise AdapterError(f"{where}: dependency {name} is not pinned ({source}, and "
                               f"Chart.yaml asks for '{wanted}', not an exact version)",
                               hint="pin the chart to a commit whose chart has a Chart.lock "
                                    "(chart.commit in the profile)")
    return pins


def _helm_env(home: Path) -> dict[str, str]:
    """The environment for helm with every helm path (and HOME) inside `home`: proxies and CA
    settings are kept, the user's repositories, caches, registry logins and kubeconfig are not."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HELM_") and k not in ("KUBECONFIG", "DOCKER_CONFIG")}
    env.update({
        "HOME": str(home),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_REPOSITORY_CONFIG": str(home / "config" / "repositories.yaml"),
        "HELM_REPOSITORY_CACHE": str(home / "cache" / "repository"),
        "HELM_CONTENT_CACHE": str(home / "cache" / "content"),
        "HELM_REGISTRY_CONFIG": str(home / "config" / "registry" / "config.json"),
    })
    return env


def _packaged_meta(archive: Path) -> dict[str, Any]:
    """The Chart.yaml at the top of a chart archive (`<chart>/Chart.yaml`)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                parts = member.name.strip("/").split("/")
                if member.isfile() and len(parts) == 2 and parts[1] == "Chart.yaml":
                    raw = tar.extractfile(member)
                    if raw is not None:
                        data = yaml.safe_load(io.TextIOWrapper(raw, encoding="utf-8")) or {}
                        return data if isinstance(data, dict) else {}
    except (OSError, tarfile.TarError, yaml.YAMLError):
        pass
    return {}


def _pull(pin: _Pin, version: str, charts: Path, home: Path, where: str, helm: str) -> None:
    dest = home / "pulled" / pin.name
    dest.mkdir(parents=True)
    if pin.repository.startswith("oci://"):
        argv = [helm, "pull", f"{pin.repository.rstrip('/')}/{pin.name}"]
    else:
        argv = [helm, "pull", pin.name, "--repo", pin.repository]
    argv += ["--version", version, "--destination", str(dest)]
    what = f"{where}: fetching dependency {pin.name} {version} from {pin.repository}"
    hint = (f"this host must reach {pin.repository} through its network, proxy and firewall, "
            f"and that repository must serve {pin.name} {version}; then re-run")
    proc = _child(argv, home, what, env=_helm_env(home), hint=hint)
    if proc.returncode:
        raise AdapterError(f"{what} failed: {_last_line(proc)}", hint=hint)
    archives = list(dest.glob("*.tgz"))
    meta = _packaged_meta(archives[0]) if len(archives) == 1 else {}
    got = (str(meta.get("name", "")), str(meta.get("version", "")))
    if got[0] != pin.name or not _same_version(got[1], version):
        raise AdapterError(f"{what}: got {' '.join(got).strip() or 'no chart'} instead of the "
                           f"pinned {pin.name} {version}",
                           hint=f"{pin.repository} must serve {pin.name} {version} as pinned; "
                                "gpulab takes no other version")
    shutil.move(archives[0], charts / f"{pin.name}-{version}.tgz")


def _copy_local(pin: _Pin, chart: Path, checkout: Path, charts: Path, where: str) -> None:
    relative = pin.repository.removeprefix("file://")
    source = (chart / relative).resolve()
    if Path(relative).is_absolute() or not source.is_relative_to(checkout.resolve()):
        raise AdapterError(f"{where}: dependency {pin.name} is {pin.repository}, outside the "
                           "repository", hint="only folders of the same commit can be used")
    if not (source / "Chart.yaml").is_file():
        raise AdapterError(f"{where}: dependency {pin.name} is {pin.repository}, which holds no "
                           "chart at this commit", hint="pick a commit where it does")
    version = str(_yaml(source / "Chart.yaml").get("version", ""))
    if pin.version is not None and not _same_version(version, pin.version):
        raise AdapterError(f"{where}: dependency {pin.name} at {pin.repository} is {version}, "
                           f"not the pinned {pin.version}",
                           hint="the chart's Chart.lock is out of date at this commit")
    shutil.copytree(source, charts / pin.name)


def _fetch_dependencies(chart: Path, checkout: Path, where: str, helm: str) -> None:
    """Put every dependency the chart folder lacks into its charts/, at its pinned version."""
    missing = missing_dependencies(chart)
    if not missing:
        return
    pins = _pins(chart, missing, where)  # all pinned before anything is fetched
    charts = chart / "charts"
    charts.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpulab-helm-") as tmp:
        for pin in pins:
            if pin.repository.startswith("file://"):
                _copy_local(pin, chart, checkout, charts, where)
            else:
                assert pin.version is not None  # _pins pins every remote dependency
                _pull(pin, pin.version, charts, Path(tmp), where, helm)


def chart_from_git(repo: str, commit: str, path: str, cache: Path, helm: str) -> Path:
    """The chart folder `path` of `repo` at `commit`, fetched once into `cache`, with the
    dependencies its Chart.lock pins in its charts/ (`helm` fetches them)."""
    key = hashlib.sha256(repo.encode()).hexdigest()[:16]
    target = cache / "charts" / key / commit
    chart = target / path
    if (target / _DONE).is_file():
        return chart
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=target.parent))
    try:
        what = f"fetching {repo} at {commit[:12]}"
        _run(["git", "init", "-q"], work, what)
        _run(["git", "fetch", "-q", "--depth", "1", repo, commit], work, what)
        _run(["git", "checkout", "-q", "--detach", commit], work, what)
        fetched = work / path
        if not (fetched / "Chart.yaml").is_file():
            raise AdapterError(f"{repo} at {commit[:12]} has no chart at {path}")
        _fetch_dependencies(fetched, work, f"chart {path} of {repo} at {commit[:12]}", helm)
        shutil.rmtree(work / ".git", ignore_errors=True)
        (work / _DONE).write_text(f"{repo} {commit}\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return chart
