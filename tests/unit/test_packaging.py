"""What an install needs: the built-in profiles are package data found through importlib.resources
(not files under sys.prefix, which `pip install --user` misses); an install without them is an
error, never a silent empty list; every third-party module gpulab imports is declared in
pyproject.toml and every declared dependency is used. (tests/install builds the wheel and
installs it for real.)"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
from pathlib import Path

import pytest
import tomllib  # the tests need Python 3.11 anyway (kmock does)
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.profile.load import PROFILES_ENV, builtin_profiles, profiles_dir

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
BUILTINS = ["kamaji-hami", "vcluster-kai"]
# Test requirements used as programs or plugins, not imported: tests/install runs
# `python -m pipx`; nox's tests session runs pytest with pytest-xdist (`-n auto`).
RUN_NOT_IMPORTED = {"pipx", "pytest-xdist"}

runner = CliRunner()


def _dist(requirement: str) -> str:
    """The normalized distribution name of a PEP 508 requirement (PEP 503 normalization)."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert found, requirement
    return _normalize(found.group(1))


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(node: ast.AST, found: set[str]) -> None:
    """Top-level names of absolute imports, skipping `if TYPE_CHECKING:` bodies (mypy's only)."""
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            _runtime_imports(child, found)
        return
    if isinstance(node, ast.Import):
        found.update(alias.name.split(".")[0] for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        found.add(node.module.split(".")[0])
    for child in ast.iter_child_nodes(node):
        _runtime_imports(child, found)


def _third_party(*folders: str) -> dict[str, set[str]]:
    """Distribution (normalized) → the third-party modules of `folders` it provides.

    packages_distributions() maps an import name to the distributions installed here; a module
    that is not installed (tomli on Python 3.11+) is looked up under its own name."""
    own = {"gpulab", "tests", "benchmarks", "noxfile", "__future__"}
    providers = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            modules: set[str] = set()
            _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), modules)
            for module in modules - own - set(sys.stdlib_module_names):
                for dist in providers.get(module, [module]):
                    found.setdefault(_normalize(dist), set()).add(module)
    return found


def _declared(*groups: str) -> set[str]:
    project = PYPROJECT["project"]
    requirements = list(project["dependencies"])
    for group in groups:
        requirements += project["optional-dependencies"][group]
    return {_dist(r) for r in requirements}


# --------------------------------------------------------------------------- the profiles


def test_the_builtin_profiles_are_package_data() -> None:
    """The top-level profiles/ folder is the package gpulab.profiles (package-dir), its YAML
    files package data: in a checkout the loader reads them there."""
    assert profiles_dir().resolve() == ROOT / "profiles"
    assert list(builtin_profiles()) == BUILTINS
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"gpulab.profiles": "profiles"}
    assert setuptools["package-data"]["gpulab.profiles"] == ["*.yaml"]
    assert "data-files" not in setuptools, "data-files land under sys.prefix: --user misses them"


def test_every_package_is_listed() -> None:
    """The package-dir mapping needs an explicit package list: a folder of gpulab/ named like a
    package (the examples' data folders too: setuptools warns of those left out) that is not in
    it would be missing from the wheel, which the tests, run from the tree, would not notice."""
    folders = {".".join(path.relative_to(ROOT).parts)
               for path in [ROOT / "gpulab", *(ROOT / "gpulab").rglob("*")]
               if path.is_dir() and path.name != "__pycache__"
               and all(part.isidentifier() for part in path.relative_to(ROOT).parts)}
    assert sorted(PYPROJECT["tool"]["setuptools"]["packages"]) == sorted(
        folders | {"gpulab.profiles"})


def test_profiles_show_prints_the_file_as_it_is(tmp_path: Path) -> None:
    """`gpulab profiles show NAME > mine.yaml` copies the file byte for byte (line numbers the docs
    cite stay right), and the copy loads as a profile file."""
    for name in BUILTINS:
        shown = runner.invoke(app, ["profiles", "show", name])
        assert shown.exit_code == 0, shown.stderr
        assert shown.stdout == builtin_profiles()[name].read_text(encoding="utf-8")
    mine = tmp_path / "mine.yaml"
    mine.write_text(runner.invoke(app, ["profiles", "show", "kamaji-hami"]).stdout)
    assert runner.invoke(app, ["profiles", "show", str(mine)]).stdout == mine.read_text()


@pytest.mark.parametrize("output", [[], ["-o", "json"]])
def test_no_builtin_profiles_is_an_error_not_an_empty_list(
        output: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILES_ENV, str(tmp_path))
    listed = runner.invoke(app, ["profiles", "list", *output])
    assert listed.exit_code == 4
    assert listed.stdout == ""
    assert f"no built-in profiles: ${PROFILES_ENV} is {tmp_path}" in listed.stderr


def test_a_profile_name_without_builtins_says_the_install_lacks_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `pip install --user .` used to give: plan and up refused 'kamaji-hami' as unknown."""
    from gpulab.profile import load

    monkeypatch.delenv(PROFILES_ENV, raising=False)
    monkeypatch.setattr(load, "profiles_dir", lambda: tmp_path / "gone")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    for argv in (["plan"], ["profiles", "list"], ["up", "-p", "vcluster-kai"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 4, argv
        assert "this gpulab install lacks its package data" in result.stderr
        assert "--force-reinstall" in result.stderr
    own = tmp_path / "mine.yaml"  # a file path still works without built-ins
    own.write_text((ROOT / "profiles" / "kamaji-hami.yaml").read_text())
    assert runner.invoke(app, ["plan", "-p", str(own), "-o", "json"]).exit_code == 0


def test_profiles_list_json_names_each_file() -> None:
    rows = json.loads(runner.invoke(app, ["profiles", "list", "-o", "json"]).stdout)
    assert [(r["name"], Path(r["path"]).parent) for r in rows] == [
        (name, profiles_dir()) for name in BUILTINS]


# --------------------------------------------------------------------------- the dependencies


@pytest.mark.slow
def test_every_third_party_import_is_declared() -> None:
    """An import of a package that only arrives with another (urllib3 with kubernetes, requests
    with docker) breaks the day that package stops pulling it in: gpulab declares them all."""
    used = _third_party("gpulab")
    missing = {dist: sorted(modules) for dist, modules in used.items()
               if dist not in _declared()}
    assert missing == {}, "imported by gpulab/ but not in [project] dependencies"


def test_every_runtime_dependency_is_imported() -> None:
    unused = _declared() - set(_third_party("gpulab"))
    assert unused == set(), "declared in [project] dependencies but never imported by gpulab/"


@pytest.mark.slow
def test_the_test_dependencies_are_declared_and_used() -> None:
    used = _third_party("tests", "benchmarks")
    assert set(used) - _declared("test") == set(), "imported by the tests, not declared"
    test_only = {_dist(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"]}
    assert test_only - set(used) - RUN_NOT_IMPORTED == set(), "in [test] but never used"


def test_every_runtime_dependency_has_a_lower_bound_nox_lowest_can_pin() -> None:
    """`nox -s lowest` turns each `>=X` into `==X` and runs the unit tests there."""
    unbounded = [r for r in PYPROJECT["project"]["dependencies"] if ">=" not in r]
    assert unbounded == []


def test_the_checker_sees_each_import() -> None:
    """The import walk itself: kube.py's urllib3 and docker_runtime.py's requests are found, and a
    TYPE_CHECKING-only import (pydantic_core) is not a runtime dependency."""
    used = _third_party("gpulab")
    assert used["urllib3"] == {"urllib3"} and used["requests"] == {"requests"}
    assert used["pyyaml"] == {"yaml"}
    assert "pydantic-core" not in used
    found: set[str] = set()
    _runtime_imports(ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\nimport c.d\n"),
                     found)
    assert found == {"b", "c"}
