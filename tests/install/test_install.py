"""The wheel as users install it (issue #21): into a clean venv, into the `--user` scheme, with
pipx. Each install then runs `gpulab profiles list`, `profiles show`, `plan` and `verify --replay
example:NAME` (the examples shipped as package data) from where it was
installed, and the built-in profiles must be found there (they once were data files under
sys.prefix, which `pip install --user` does not use: `plan` exited 2, `profiles list` printed
nothing).

The wheel is built from a copy of pyproject.toml, README.md, gpulab/ and profiles/ (the working
tree gets no build/ folder), offline with this environment's setuptools when [build-system] accepts it, else
with the backend pip fetches. The venv and --user installs are offline: the wheel goes in with
--no-deps and the new environment reads its dependencies from this one's site-packages through a
.pth file (a venv made with --system-site-packages would see the base interpreter's, not this
venv's).
pipx installs the dependencies from PyPI, like a user's pipx does: it runs where PyPI answers,
is skipped elsewhere, and fails in CI (CI=true), which has PyPI.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import tomllib

pytestmark = [
    pytest.mark.install,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout (bin/)"),
]

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = ["kamaji-hami", "vcluster-kai"]
BUILTIN_DIR = ROOT / "profiles"  # the package gpulab.profiles (pyproject's package-dir)
SOURCES = ("pyproject.toml", "README.md", "gpulab", "profiles")  # what a build reads


def _run(argv: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False,
                          env=env, cwd=cwd, timeout=timeout)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


def _clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """This process's environment without what would point gpulab back at the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in {
        "GPULAB_PROFILES_DIR", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "VIRTUAL_ENV",
        "PYTHONUSERBASE", "PIP_USER", "PIP_REQUIRE_VIRTUALENV"}}
    env.update(GPULAB_HOME=str(tmp / "gpulab-home"), DOCKER_HOST="unix:///nonexistent/docker.sock",
               PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _isolation() -> list[str]:
    """Offline (`--no-build-isolation`) when this environment's setuptools is one
    [build-system] accepts; else pip fetches the build backend (a venv made by Python 3.11 has
    setuptools 65, which refuses pyproject's SPDX `license`)."""
    requires = " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                        ["build-system"]["requires"])
    lowest = re.search(r"setuptools>=(\d+)", requires)
    assert lowest, requires
    try:
        ours = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return []
    return ["--no-build-isolation"] if int(ours.split(".")[0]) >= int(lowest[1]) else []


def _copy_sources(source: Path) -> Path:
    """A copy of what a build reads (SOURCES), without bytecode."""
    source.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    return source


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _copy_sources(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", *_isolation(), "--wheel-dir", dist,
              source], env=_clean_env(dist)))
    (built,) = dist.glob("gpulab-*.whl")
    return built


def _share_our_dependencies(python: Path) -> None:
    """Let the environment of `python` import this one's packages (after its own)."""
    site = Path(_ok(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]))
                .strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "zz-gpulab-test-deps.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")


def _venv(where: Path, *, system_site_packages: bool = False) -> Path:
    flags = ["--system-site-packages"] if system_site_packages else []
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", *flags, where]))
    return where / "bin" / "python"


def _pip_into(python: Path, *args: str | Path, env: dict[str, str], offline: bool = True) -> None:
    """This environment's pip installing into another interpreter's environment (`--python`)."""
    _ok(_run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
              *(["--no-index"] if offline else []), *args], env=env))


def _assert_gpulab_works(gpulab: Path, installed_under: Path, env: dict[str, str],
                         cwd: Path, *, replay: bool = True) -> None:
    """The built-in profiles come from the install, not the source tree, and plan works (and,
    with `replay`, the shipped examples replay)."""
    listed = _run([gpulab, "profiles", "list", "-o", "json"], env=env, cwd=cwd)
    rows = json.loads(_ok(listed))
    assert [row["name"] for row in rows] == BUILTINS
    for row in rows:
        assert "error" not in row, row
        assert Path(row["path"]).resolve().is_relative_to(installed_under.resolve()), row["path"]
        assert not Path(row["path"]).resolve().is_relative_to(ROOT), row["path"]
    text = _ok(_run([gpulab, "profiles", "list"], env=env, cwd=cwd))
    assert all(name in text for name in BUILTINS)
    shown = _ok(_run([gpulab, "profiles", "show", "kamaji-hami"], env=env, cwd=cwd))
    assert shown == (BUILTIN_DIR / "kamaji-hami.yaml").read_text(encoding="utf-8")
    plan = _run([gpulab, "plan", "-p", "vcluster-kai", "-o", "json"], env=env, cwd=cwd)
    assert plan.returncode == 0, plan.stderr[-2000:]
    for name in BUILTINS if replay else []:  # the README's first command: the shipped examples
        replay = _run([gpulab, "verify", "--replay", f"example:{name}"], env=env, cwd=cwd)
        assert " PASS " in _ok(replay), replay.stdout
        shown = replay.stderr.partition("not recorded on a running lab (")[2].partition(")")[0]
        assert Path(shown).resolve().is_relative_to(installed_under.resolve()), replay.stderr


def test_the_wheel_carries_the_profiles_and_examples_inside_the_package(wheel: Path) -> None:
    """The top-level profiles/ folder lands in the package, as gpulab/profiles/."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for name in BUILTINS:
            member = f"gpulab/profiles/{name}.yaml"
            assert archive.read(member) == (BUILTIN_DIR / f"{name}.yaml").read_bytes()
            examples = ROOT / "gpulab" / "examples" / "recordings" / name
            for path in examples.iterdir():  # `verify --replay example:NAME`
                member = str(path.relative_to(ROOT))
                assert archive.read(member) == path.read_bytes()
    assert [n for n in names if ".data/" in n] == [], "nothing may land outside the package"
    assert [n for n in names if not n.startswith(("gpulab/", "gpulab-0"))] == []
    assert "gpulab/py.typed" in names
    assert "gpulab/profiles/__init__.py" in names


def test_a_clean_venv(wheel: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    python = _venv(tmp_path / "venv")
    _pip_into(python, wheel, env=env)
    _share_our_dependencies(python)
    _assert_gpulab_works(tmp_path / "venv" / "bin" / "gpulab", tmp_path / "venv", env, tmp_path)


def test_the_user_scheme(wheel: Path, tmp_path: Path) -> None:
    """`pip install --user`: the package and its script under PYTHONUSERBASE, nothing in any
    prefix's share/ (a venv with system site packages lets pip use the user scheme)."""
    userbase = tmp_path / "userbase"
    env = _clean_env(tmp_path, PYTHONUSERBASE=str(userbase))
    python = _venv(tmp_path / "venv", system_site_packages=True)
    _pip_into(python, "--user", wheel, env=env)
    _share_our_dependencies(python)
    assert list(userbase.rglob("site-packages/gpulab/profiles/kamaji-hami.yaml"))
    assert not list((tmp_path / "venv").rglob("gpulab")), "installed in the venv, not --user"
    assert not list(tmp_path.rglob("share/gpulab"))
    _assert_gpulab_works(userbase / "bin" / "gpulab", userbase, env, tmp_path)


def _pypi_answers(env: dict[str, str], tmp: Path) -> bool:
    return _run([sys.executable, "-m", "pip", "download", "--no-deps", "--dest", tmp / "probe",
                 "pipx"], env=env, timeout=120).returncode == 0


def test_pipx(wheel: Path, tmp_path: Path) -> None:
    """`pipx install gpulab-….whl`, with pipx itself installed from PyPI into a throwaway venv and
    PIPX_HOME/PIPX_BIN_DIR in temporary folders (the user's pipx is not touched)."""
    env = _clean_env(tmp_path, PIPX_HOME=str(tmp_path / "pipx-home"),
                     PIPX_BIN_DIR=str(tmp_path / "pipx-bin"), PIPX_MAN_DIR=str(tmp_path / "man"))
    if not _pypi_answers(env, tmp_path):
        message = "PyPI does not answer: pipx installs gpulab's dependencies from it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    tool = _venv(tmp_path / "pipx-venv")
    _ok(_run([sys.executable, "-m", "pip", "--python", tool, "install", "pipx"], env=env))
    _ok(_run([tool, "-m", "pipx", "install", wheel], env=env, timeout=900))
    _assert_gpulab_works(tmp_path / "pipx-bin" / "gpulab", tmp_path / "pipx-home", env, tmp_path)


@pytest.mark.parametrize("mode", ["lenient", "strict", "compat"])
def test_an_editable_install(mode: str, tmp_path: Path) -> None:
    """`pip install -e` of a copy of the tree, in each of setuptools' editable modes (PEP 660):
    `lenient` (the default, an import finder mapping the packages to the tree), `strict` (a
    tree of links under build/) and `compat` (a .pth naming the tree). `gpulab profiles list`
    lists both built-in profiles, loaded without error, and they are the tree's own files (an
    edit shows at once), not the checkout's."""
    tree = _copy_sources(tmp_path / "tree")
    env = _clean_env(tmp_path)
    python = _venv(tmp_path / "venv")
    _share_our_dependencies(python)  # first: a build without isolation imports our setuptools
    isolation = _isolation()
    settings = [] if mode == "lenient" else ["--config-settings", f"editable_mode={mode}"]
    _pip_into(python, *isolation, *settings, "--editable", tree, env=env, offline=bool(isolation))
    # strict links each file of the tree on its own, and replay refuses an example's state file
    # whose link leads out of the recording folder (gpulab/verify/recording.py): not checked here.
    _assert_gpulab_works(tmp_path / "venv" / "bin" / "gpulab", tree, env, tmp_path,
                         replay=mode != "strict")
    rows = json.loads(_ok(_run([tmp_path / "venv" / "bin" / "gpulab", "profiles", "list", "-o",
                                "json"], env=env, cwd=tmp_path)))
    in_tree = tree / BUILTIN_DIR.relative_to(ROOT)
    assert [Path(row["path"]).samefile(in_tree / f"{row['name']}.yaml") for row in rows] == [
        True, True], rows
