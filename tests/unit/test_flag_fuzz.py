"""Flag combinations as a hurried user types them (property-based, fixed seed, bounded): every
command line ends in a documented exit code with no traceback, and creates nothing when it is
refused. Docker is unreachable here, so commands that need it stop at that, cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.errors import ExitCode

runner = CliRunner()
COMMANDS = ["up", "down", "plan", "status", "verify", "logs", "doctor", "kubeconfig", "labs",
            "ls", "version", "profiles"]
VALUES = st.one_of(st.sampled_from(["", " ", "-", "--", "kamaji-hami", "vcluster-kai",
                                    "tenant-a", "x" * 300, "../..", "/dev/null", "/", "TC-05",
                                    "KAI-99", "json", "yaml", "xml", "5,6", "a b", "é"]),
                   st.text(max_size=12))
FLAGS = st.sampled_from(["-p", "--profile", "-n", "--name", "-o", "--output", "--tc", "--json",
                         "-v", "--keep", "--tar", "--merge", "--export", "-h", "--skip-preflight",
                         "--record", "--replay", "--junit", "list", "show"])
CODES = {0, *(int(c) for c in ExitCode)}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.slow
@seed(20261203)
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS),
       args=st.lists(st.one_of(FLAGS, VALUES), max_size=5))
def test_any_command_line_ends_cleanly(command: str, args: list[str]) -> None:
    import os

    places = [Path.cwd(), Path(os.environ["GPULAB_HOME"])]
    before = {p for place in places for p in place.rglob("*")}
    result = runner.invoke(app, [command, *args])
    if result.exit_code != 0:  # refused or failed: nothing was left behind
        after = {p for place in places for p in place.rglob("*")}
        assert after <= before, (command, args, sorted(map(str, after - before)))
    assert result.exit_code in CODES, (command, args, result.stderr)
    assert "Traceback" not in (result.stderr or ""), (command, args, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        command, args, repr(result.exception))
