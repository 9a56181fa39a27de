"""The example recordings gpulab ships (`gpulab verify --replay example:NAME`, README's first
page): package data, identical to the tests' recordings they are copied from, one per built-in
profile, and the README's documented commands work through the CLI and print the verdict table.
They are built from the write-ups' outputs, not recorded on a lab, and the CLI says so."""

from __future__ import annotations

import filecmp
import re
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

import gpulab
from gpulab.cli import app
from gpulab.profile.load import builtin_profiles
from gpulab.verify.examples import (
    EXAMPLE_PREFIX,
    PROVENANCE,
    example_recording,
    example_recordings,
    examples_dir,
    is_example,
)
from tests.recordings import EXAMPLES, EXAMPLES_DIR, RECORDINGS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
runner = CliRunner()

# What each example's replay must show: every check of its stack, per member, and the summary.
CHECKS = {
    "kamaji-hami": [f"TC-0{n}" for n in range(1, 9)],
    "vcluster-kai": [f"KAI-0{n}" for n in range(1, 9)],
}
MEMBERS = {
    "kamaji-hami": ["tenant-a", "tenant-b"],
    "vcluster-kai": ["team-nlp", "team-vision", "team-recommender"],
}
SUMMARY = {"kamaji-hami": "16 pass", "vcluster-kai": "24 pass, 1 finding"}


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_one_example_per_builtin_profile_inside_the_package() -> None:
    assert examples_dir() == Path(gpulab.__file__).resolve().parent / "examples" / "recordings"
    assert examples_dir() == EXAMPLES_DIR
    assert list(example_recordings()) == list(builtin_profiles()) == sorted(EXAMPLES)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "examples/recordings/*/*.json" in (
        package_data["tool"]["setuptools"]["package-data"]["gpulab"])


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_packaged_example_is_the_tests_recording(name: str) -> None:
    """Byte for byte: `python -m tests.kamaji_hami.builders` (or vcluster_kai's) rewrites both."""
    packaged, tested = EXAMPLES_DIR / name, RECORDINGS / EXAMPLES[name]
    assert _files(packaged) == _files(tested)
    _, mismatch, errors = filecmp.cmpfiles(packaged, tested, _files(tested), shallow=False)
    assert (mismatch, errors) == ([], []), (
        f"gpulab/examples/recordings/{name} differs from tests/data/recordings/{EXAMPLES[name]}: "
        f"run python -m tests.{name.replace('-', '_')}.builders")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_replaying_an_example_prints_the_table_and_says_what_it_is(name: str) -> None:
    result = runner.invoke(app, ["verify", "--replay", f"{EXAMPLE_PREFIX}{name}"],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "TENANT", "RESULT", "EVIDENCE", "OR", "REASON",
                                "SECONDS"]
    rows = {(line.split()[0], member) for line in lines for member in MEMBERS[name]
            if f" {member} " in line and " PASS " in line}
    assert rows == {(check, member) for check in CHECKS[name] for member in MEMBERS[name]}
    assert SUMMARY[name] in result.stderr
    assert "replayed against the recording's profile" in result.stderr
    assert PROVENANCE in result.stderr, "an example must never read as a real lab's run"
    assert "not recorded on a running lab" in PROVENANCE


def test_a_recording_that_is_not_an_example_gets_no_note() -> None:
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                 "--tc", "TC-01"])
    assert result.exit_code == 0, result.stderr
    assert PROVENANCE not in result.stderr
    assert is_example(example_recording("kamaji-hami"))
    assert not is_example(RECORDINGS / "writeup-healthy")


def test_an_unknown_example_is_a_usage_error_naming_the_examples() -> None:
    result = runner.invoke(app, ["verify", "--replay", "example:kamaji"])
    assert result.exit_code == 2
    assert "no example recording 'kamaji'" in result.stderr
    assert "example:kamaji-hami, example:vcluster-kai" in result.stderr


def test_an_install_without_the_examples_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.verify import examples

    monkeypatch.setattr(examples, "examples_dir", lambda: tmp_path / "gone")
    result = runner.invoke(app, ["verify", "--replay", "example:kamaji-hami"])
    assert result.exit_code == 2
    assert "this gpulab install lacks its package data" in result.stderr


def _documented_replays() -> list[str]:
    """Every `gpulab verify replay example:NAME ...` command line in the README."""
    text = README.read_text(encoding="utf-8")
    return sorted(set(re.findall(r"gpulab verify replay example:[\w-]+[^\n`#]*", text)))


def test_the_readme_documents_both_examples_on_its_first_page() -> None:
    commands = _documented_replays()
    assert {c.split()[3] for c in commands} >= {f"example:{n}" for n in EXAMPLES}
    first_page = "\n".join(README.read_text(encoding="utf-8").splitlines()[:60])
    assert "gpulab verify replay example:kamaji-hami" in first_page
    assert "not recorded on a running lab" in first_page or "not a real run" in first_page


@pytest.mark.parametrize("command", _documented_replays())
def test_the_readme_replay_commands_work(command: str) -> None:
    argv = command.split()[1:]
    name = argv[2].removeprefix(EXAMPLE_PREFIX)
    result = runner.invoke(app, argv, env={"COLUMNS": "160"})
    assert result.exit_code == 0, (command, result.stderr)
    assert result.stdout.startswith(" CHECK ") and "RESULT" in result.stdout.splitlines()[0]
    assert any(check in result.stdout for check in CHECKS[name]), command
