"""Exit codes as docs/troubleshooting.md documents them: its code table is `ExitCode`, and every
cell of its table of situations by commands is run through the CLI (CliRunner), so the doc and the
code cannot drift apart.

Docker is a fake (tests/fakes.py) except in "Docker cannot be reached", where the real client
meets a socket that does not exist; lab APIs are real HTTP: a kmock API server when the API must
answer, a closed port when it must not.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.errors import ExitCode
from gpulab.paths import lab_dir
from gpulab.stacks import load_profile
from tests.cluster.builders import kubeconfig_file
from tests.fakes import FakeRuntime, FakeWorld

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DOC = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
LAB = "exits"
runner = CliRunner()


def _tables(section: str) -> list[list[list[str]]]:
    """The markdown tables under the `## {section}` heading (up to the next `## `)."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end != -1 else len(text)]
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*body.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r"-+", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def documented_codes() -> dict[int, str]:
    table = next(t for t in _tables("Exit codes") if t[0] == ["code", "meaning"])
    return {int(row[0]): row[1] for row in table[1:]}


def documented_cells() -> list[tuple[str, str, int]]:
    """(situation, command, code) for every cell that is not `n/a`."""
    table = next(t for t in _tables("Exit codes") if t[0][0] == "situation")
    commands = table[0][1:]
    return [(row[0], command, int(cell)) for row in table[1:]
            for command, cell in zip(commands, row[1:], strict=True) if cell != "n/a"]


def test_the_documented_codes_are_the_codes() -> None:
    assert documented_codes().keys() == {int(c) for c in ExitCode}
    cells = documented_cells()
    assert {code for _s, _c, code in cells} <= documented_codes().keys()
    assert {s for s, _c, _code in cells} == set(SITUATIONS)  # every row has a setup here


# --------------------------------------------------------------------------- situations


@dataclass
class Env:
    tmp_path: Path
    monkeypatch: pytest.MonkeyPatch
    world: FakeWorld

    def record(self, profile: str = "kamaji-hami") -> Path:
        """A lab folder as `up` leaves it: the record of the profile it was built from."""
        core.record_profile(LAB, load_profile(profile))
        return lab_dir(LAB)

    def kubeconfigs(self, server: str) -> None:
        for member in ("management", "tenant-a", "tenant-b"):
            kubeconfig_file(lab_dir(LAB) / f"{member}.kubeconfig", server)


@contextlib.contextmanager
def _unknown_flag(_env: Env) -> Iterator[list[str]]:
    yield ["--frobnicate"]


@contextlib.contextmanager
def _other_profile(env: Env) -> Iterator[list[str]]:
    env.record("vcluster-kai")
    yield ["-p", "kamaji-hami"]


@contextlib.contextmanager
def _no_lab(_env: Env) -> Iterator[list[str]]:
    yield []


@contextlib.contextmanager
def _not_up(env: Env) -> Iterator[list[str]]:
    (env.record() / "timings.json").write_text("[]")  # `up` failed before any kubeconfig
    yield []


@contextlib.contextmanager
def _api_silent(env: Env) -> Iterator[list[str]]:
    env.record()
    env.kubeconfigs("https://127.0.0.1:1")  # nothing listens there
    yield []


@contextlib.contextmanager
def _no_docker(env: Env) -> Iterator[list[str]]:
    env.record()
    env.monkeypatch.setattr(core, "connect_runtime", _REAL["connect_runtime"])
    if "docker_endpoint" in _REAL:
        env.monkeypatch.setattr(core, "docker_endpoint", _REAL["docker_endpoint"])
    yield []


@contextlib.contextmanager
def _served_lab(env: Env) -> Iterator[None]:
    from tests.cluster.test_kmock import served

    env.record()
    with served([]) as (url, _km):
        env.kubeconfigs(url)
        yield


@contextlib.contextmanager
def _locked(env: Env) -> Iterator[list[str]]:
    from tests.lock_holder import held_by_another_process

    with _served_lab(env), held_by_another_process(LAB, lab_dir(LAB), f"up --name {LAB}"):
        yield []


@contextlib.contextmanager
def _check_fails(env: Env) -> Iterator[list[str]]:
    from gpulab.stacks.kamaji_hami import run
    from gpulab.verify.report import VerifyReport
    from gpulab.verify.result import CheckResult

    def failing(_profile: Any, lab: str, _folder: Path, **_kwargs: Any) -> VerifyReport:
        return VerifyReport(lab=lab, state=None, results=(  # type: ignore[arg-type]
            CheckResult("TC-05", "tenant-a", "fail", reason="two pods share no card"),))

    env.monkeypatch.setattr(run, "run_checks", failing)
    with _served_lab(env):
        yield []


SITUATIONS: dict[str, Any] = {
    "a flag the command does not take": _unknown_flag,
    "`-p` is not the profile the lab was built from": _other_profile,
    "no lab of that name": _no_lab,
    "the lab is not up: no kubeconfig saved yet": _not_up,
    "the lab's management API does not answer": _api_silent,
    "Docker cannot be reached": _no_docker,
    "another command holds the lab's lock": _locked,
    "a check fails": _check_fails,
}

COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "up": lambda _tmp: ["up", "--name", LAB, "--skip-preflight"],
    "down": lambda _tmp: ["down", "--name", LAB],
    "status": lambda _tmp: ["status", "--name", LAB],
    "verify": lambda _tmp: ["verify", "--name", LAB],
    "kubeconfig": lambda _tmp: ["kubeconfig", "tenant-a", "--name", LAB],
    "logs": lambda tmp: ["logs", str(tmp / "bundle"), "--name", LAB],
}

_REAL: dict[str, Any] = {"connect_runtime": core.connect_runtime}
if hasattr(core, "docker_endpoint"):
    _REAL["docker_endpoint"] = core.docker_endpoint


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    """A fake Docker engine (empty: no lab in it), no kind or helm, and a Docker socket that
    does not exist for anything that would reach past the fake."""
    import gpulab.tools

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    world = FakeWorld()
    monkeypatch.setattr(core, "connect_runtime", lambda *_a, **_k: FakeRuntime(world))
    monkeypatch.setattr(core, "docker_endpoint", lambda: None, raising=False)
    monkeypatch.setattr("gpulab.providers.kind.kind_cli", lambda *_a, **_k: None)
    monkeypatch.setattr(gpulab.tools, "find_tool", lambda _name: None)
    return Env(tmp_path, monkeypatch, world)


@pytest.mark.parametrize(("situation", "command", "code"), documented_cells(),
                         ids=[f"{c}: {s}" for s, c, _code in documented_cells()])
def test_each_command_exits_as_documented(env: Env, situation: str, command: str,
                                          code: int) -> None:
    with SITUATIONS[situation](env) as extra:
        argv = [*COMMANDS[command](env.tmp_path), *extra]
        result = runner.invoke(app, argv)
    assert result.exit_code == code, (argv, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    if code in (2, 4, 5, 6) and situation != "a flag the command does not take":
        assert len(errors) == 1, result.stderr  # one line: what, where, what to do
    if command == "logs" and code != 0:
        assert not (env.tmp_path / "bundle").exists()  # no bundle of nothing
