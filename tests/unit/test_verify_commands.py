"""`gpulab verify` as subcommands (#34 item 6): one per check, whose --help says what it proves,
what it reads and how it fails (derived from the docs: tests.check_help), `verify replay DIR`
and `verify cluster`; the old flags still work, with one deprecation line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpulab import stacks
from gpulab.cli import app
from gpulab.cli.verify import CHECKS, check_help
from tests import check_help as derive

runner = CliRunner()
ALL_IDS = [check for name in stacks.STACKS for check in stacks.for_name(name).check_ids()]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def test_the_help_texts_are_what_the_docs_say_now() -> None:
    """verify_checks.json is derived from the checks' docs; a docs edit rewrites it."""
    shipped = derive.TARGET.read_text(encoding="utf-8")
    assert shipped == derive.generated(), "run python -m tests.check_help"


def test_every_check_of_every_stack_has_a_subcommand_that_says_what_it_proves() -> None:
    assert [c["id"] for c in CHECKS] == ALL_IDS
    for check in CHECKS:
        assert check["proves"].startswith("Proves") and len(check["proves"]) > 40, check["id"]
        assert check["reads"].startswith("Reads the observed fields "), check["id"]
        assert check["fails"].startswith("Fails") and len(check["fails"]) > 20, check["id"]
        shown = runner.invoke(app, ["verify", check["id"].lower(), "--help"])
        assert shown.exit_code == 0, shown.stderr
        flat = " ".join(shown.stdout.split())
        for part in ("proves", "reads", "fails"):
            assert " ".join(check[part].split()[:6]) in flat, (check["id"], part)
        assert check_help(check).startswith(f"{check['id']} {check['title']}")


def test_a_check_is_reachable_as_a_subcommand_in_either_case() -> None:
    """`verify tc-05` and `verify TC-05` both run TC-05 on the lab (no lab here: exit 6)."""
    for spelled in ("tc-05", "TC-05"):
        result = runner.invoke(app, ["verify", spelled, "--name", "nolab"])
        assert result.exit_code == 6, result.stderr
        assert "no lab named 'nolab'" in result.stderr


def test_a_check_of_another_stack_is_one_usage_line() -> None:
    result = runner.invoke(app, ["verify", "kai-07", "-p", "kamaji-hami"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown check(s) KAI-07")


def test_options_before_the_subcommand_are_refused() -> None:
    result = runner.invoke(app, ["verify", "--keep", "tc-05"])
    assert result.exit_code == 2
    assert "give --keep after the subcommand: gpulab verify tc-05 --keep" in result.stderr


def test_verify_alone_still_runs_them_all() -> None:
    result = runner.invoke(app, ["verify", "--name", "nolab"])
    assert result.exit_code == 6 and "deprecated" not in result.stderr


def test_replay_is_a_subcommand_and_the_old_flag_says_it_is_deprecated() -> None:
    new = runner.invoke(app, ["verify", "replay", "example:kamaji-hami", "-o", "json"])
    old = runner.invoke(app, ["verify", "--replay", "example:kamaji-hami", "-o", "json"])
    assert new.exit_code == old.exit_code == 0, (new.stderr, old.stderr)
    assert new.stdout == old.stdout
    warning = ("warning: verify --replay is deprecated; use gpulab verify replay DIR\n")
    assert old.stderr == warning + new.stderr


def test_cluster_is_a_subcommand_and_the_old_flags_say_they_are_deprecated() -> None:
    new = runner.invoke(app, ["verify", "cluster", "--inspect"])
    old = runner.invoke(app, ["verify", "--inspect"])
    assert new.exit_code == old.exit_code == 2, (new.stderr, old.stderr)
    assert old.stderr == ("warning: verify --inspect is deprecated; use gpulab verify cluster\n"
                          + new.stderr)
    assert "no kubeconfig" in new.stderr


def test_completion_lists_the_subcommands() -> None:
    done = runner.invoke(app, [], prog_name="gpulab",
                         env={"_GPULAB_COMPLETE": "complete_bash",
                              "COMP_WORDS": "gpulab verify ", "COMP_CWORD": "2"})
    offered = done.stdout.split()
    assert [c["id"].lower() for c in CHECKS] + ["replay", "cluster"] == [
        word for word in offered if not word.startswith("-")], done.stdout
    kai = runner.invoke(app, [], prog_name="gpulab",
                        env={"_GPULAB_COMPLETE": "complete_bash",
                             "COMP_WORDS": "gpulab verify kai-0", "COMP_CWORD": "2"})
    assert kai.stdout.split() == [f"kai-0{n}" for n in range(1, 9)]
