"""The command line as a user meets it: help, plan without Docker, one-line errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.profile.load import builtin_profiles

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan must work on a machine without Docker: make every connection attempt fail."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("up", "down", "status", "plan", "doctor", "kubeconfig", "profiles"):
        assert command in result.stdout


def test_python_dash_m_works() -> None:
    done = subprocess.run([sys.executable, "-m", "gpulab", "--version"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("gpulab ")


def test_profiles_list() -> None:
    result = runner.invoke(app, ["profiles", "list", "-o", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows if "error" not in r] == list(builtin_profiles())
    kamaji = next(r for r in rows if r["name"] == "kamaji-hami")
    assert kamaji["tenants"] == ["tenant-a", "tenant-b"]


def test_plan_yaml_without_docker_shows_pending_pool() -> None:
    result = runner.invoke(app, ["plan", "-o", "yaml"])
    assert result.exit_code == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    pool = next(d for d in docs if d["kind"] == "IPAddressPool")
    assert pool["spec"]["addresses"][0].startswith("<pending")
    assert sum(d["kind"] == "TenantControlPlane" for d in docs) == 2


def test_plan_text_and_json() -> None:
    text = runner.invoke(app, ["plan"])
    assert text.exit_code == 0
    assert "management/cluster" in text.stdout and "tenant-b/gpus" in text.stdout
    assert "Docker not reachable" in text.stderr
    data = json.loads(runner.invoke(app, ["plan", "-o", "json", "--name", "lab2"]).stdout)
    workers = [a for s in data for a in s["artifacts"] if a["kind"] == "container"]
    assert {w["name"] for w in workers} == {"gpulab-lab2-tenant-a-worker",
                                            "gpulab-lab2-tenant-b-worker"}


def test_broken_profile_is_one_line_per_problem_and_exit_2(tmp_path) -> None:
    text = builtin_profiles()["kamaji-hami"].read_text().replace("memory_mib: 24576",
                                                                  "memory_mib: 0")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["plan", "--profile", str(path)])
    assert result.exit_code == 2
    assert ("Traceback" not in result.stderr and result.exception is None) or isinstance(
        result.exception, SystemExit)
    assert "1 problem in profile, nothing was created" in result.stderr
    assert f"{path}:" in result.stderr and "tenants[1].gpus[0].memory_mib: must be > 0" in \
        result.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (["plan", "--profile", "nope"], "unknown profile 'nope'"),
    (["plan", "--name", "Bad_Name"], "--name: 'Bad_Name' is not a DNS-1123 label"),
    (["kubeconfig", "tenant-z"], "unknown tenant 'tenant-z'"),
    (["kubeconfig", "tenant-a"], "no kubeconfig saved for tenant-a"),
])
def test_user_errors_are_one_line_exit_2(argv, message) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_flag_is_a_usage_error() -> None:
    result = runner.invoke(app, ["plan", "--frobnicate"])
    assert result.exit_code == 2


def test_kubeconfig_prints_path_never_contents(_isolated_home) -> None:
    folder = _isolated_home / "labs" / "kamaji-hami"
    folder.mkdir(parents=True)
    (folder / "tenant-a.kubeconfig").write_text("client-key-data: SECRET\n")
    result = runner.invoke(app, ["kubeconfig", "tenant-a", "--export"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"export KUBECONFIG={folder / 'tenant-a.kubeconfig'}"
    assert "SECRET" not in result.stdout + result.stderr


def test_status_and_down_without_docker_are_host_errors() -> None:
    for argv in (["status"], ["down"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 4, (argv, result.stdout, result.stderr)
        assert result.stderr.startswith("error:")
