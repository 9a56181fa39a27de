"""A Helm chart taken from a git commit: the one reproducible pin for charts that are only
published under a moving version (Kamaji's open-source chart is `0.0.0+latest`, republished on
every push to master: clastix/kamaji `.github/workflows/helm.yaml`).

The commit id pins the content (git checks every object it fetches against its id). Dependencies
come from the chart's own `Chart.lock` (`helm dependency build`, exact versions), unless the
chart folder already carries them. Checkouts are cached per commit, shared by every lab.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from gpulab import children
from gpulab.errors import AdapterError, HostError

__all__ = ["GIT_TIMEOUT", "chart_from_git", "missing_dependencies"]

GIT_TIMEOUT = 300.0
_DONE = ".gpulab-complete"


def _run(argv: list[str], cwd: Path, what: str, timeout: float = GIT_TIMEOUT) -> None:
    try:
        proc = children.run(argv, cwd=str(cwd), timeout=timeout,
                            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        raise HostError(f"{argv[0]} not found on PATH ({what} needs it)",
                        hint=f"install {argv[0]}, then re-run") from None
    except subprocess.TimeoutExpired:
        raise AdapterError(f"{what} did not finish within {timeout:.0f}s") from None
    if proc.returncode:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise AdapterError(f"{what} failed: {' | '.join(tail)}", output=proc.stderr)


def missing_dependencies(chart: Path) -> list[str]:
    """Dependencies in Chart.yaml that the chart's `charts/` folder does not carry."""
    try:
        meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AdapterError(f"{chart}/Chart.yaml is not readable: {err}") from None
    missing = []
    for dep in meta.get("dependencies") or []:
        name = str(dep.get("name", ""))
        folder = chart / "charts"
        present = (folder / name).is_dir() or any(folder.glob(f"{name}-*.tgz"))
        if not present:
            missing.append(name)
    return missing


def chart_from_git(repo: str, commit: str, path: str, cache: Path, helm: str) -> Path:
    """The chart folder `path` of `repo` at `commit`, fetched once into `cache`."""
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
        if missing_dependencies(fetched):
            _run([helm, "dependency", "build", str(fetched)], work,
                 f"helm dependency build of {path} at {commit[:12]}")
        shutil.rmtree(work / ".git", ignore_errors=True)
        (work / _DONE).write_text(f"{repo} {commit}\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return chart
