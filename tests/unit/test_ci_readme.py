"""CI as users will run it (issue #31 item 6): the README's GitHub Actions job installs gpulab from
its repository, runs up, verify --junit, keeps the JUnit file and the `gpulab logs` bundle and
always runs down, and every `gpulab` line in it is a command line gpulab takes; a replayed
verify is marked as replayed in its JUnit file."""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from gpulab.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def _ci_job() -> dict[str, Any]:
    """The one yaml block of the README's `## In CI (GitHub Actions)` section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## In CI (GitHub Actions)\n")
    section = text[start:text.index("\n## ", start + 1)]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, blocks
    workflow = yaml.safe_load(blocks[0])
    (job,) = workflow["jobs"].values()
    assert isinstance(job, dict)
    return job


def _run_lines(step: dict[str, Any]) -> list[str]:
    return [line.strip() for line in str(step.get("run", "")).splitlines() if line.strip()]


def _gpulab_lines(job: dict[str, Any]) -> list[tuple[int, str]]:
    return [(index, line) for index, step in enumerate(job["steps"])
            for line in _run_lines(step) if line.startswith("gpulab ")]


def _always(step: dict[str, Any]) -> bool:
    return "always()" in str(step.get("if", ""))


def test_the_job_installs_from_the_repository_and_runs_the_lab_in_order() -> None:
    job = _ci_job()
    steps = job["steps"]
    installs = [line for step in steps for line in _run_lines(step) if "pip install" in line]
    assert len(installs) == 1
    install = shlex.split(installs[0])
    target = install[install.index("install") + 1]
    from_git = target.startswith("git+") and "@" in target
    from_checkout = target == "." and any(str(s.get("uses", "")).startswith(
        "actions/checkout@") for s in steps)
    assert from_git or from_checkout, target  # gpulab is on no package index
    if "${GPULAB_REPO}" in target:
        assert str(job["env"]["GPULAB_REPO"]).startswith("https://github.com/")
    commands = {shlex.split(line)[1]: index for index, line in _gpulab_lines(job)}
    assert list(commands) == ["doctor", "up", "verify", "logs", "down"]
    assert commands["up"] < commands["verify"] < commands["logs"] < commands["down"]
    verify = next(line for _i, line in _gpulab_lines(job) if line.startswith("gpulab verify"))
    assert "--junit" in shlex.split(verify)
    for name in ("logs", "down"):  # run whatever failed before them
        assert _always(steps[commands[name]]), name
    for name in ("doctor", "up", "verify"):
        assert not _always(steps[commands[name]]), name


def test_the_job_uploads_the_junit_file_and_the_logs_bundle_always() -> None:
    job = _ci_job()
    steps = job["steps"]
    uploads = [i for i, s in enumerate(steps)
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 1
    upload = steps[uploads[0]]
    assert _always(upload)
    paths = str(upload["with"]["path"]).split()
    lines = {shlex.split(line)[1]: shlex.split(line) for _i, line in _gpulab_lines(job)}
    verify, logs = lines["verify"], lines["logs"]
    junit = verify[verify.index("--junit") + 1]
    folder = next(word for word in logs[2:] if not word.startswith("-"))
    bundle = f"{folder}.tar.gz" if "--tar" in logs else folder
    assert junit in paths and bundle in paths, paths
    down = next(i for i, line in _gpulab_lines(job) if line.startswith("gpulab down"))
    assert uploads[0] < down  # the lab's files are kept before the lab is removed


def _command(words: list[str]) -> tuple[Any, list[str]]:
    """The (click) command a `gpulab ...` line names, groups followed, and the rest of it."""
    command: Any = typer.main.get_command(app)
    rest = words[1:]
    while hasattr(command, "get_command") and rest and not rest[0].startswith("-"):
        ctx = command.make_context("gpulab", [], resilient_parsing=True)
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def test_every_gpulab_line_of_the_job_is_a_command_line_gpulab_takes() -> None:
    job = _ci_job()
    for _index, line in _gpulab_lines(job):
        words = shlex.split(line)
        command, rest = _command(words)
        assert not hasattr(command, "get_command") or command.name == "verify", line
        known = {opt for param in command.params for opt in (*param.opts,
                                                              *param.secondary_opts)}
        for word in rest:
            if word.startswith("-"):
                assert word.split("=", 1)[0] in known, (line, word)
        # and click parses it (arguments, values, choices) without running it
        ctx = command.make_context(words[0], list(rest), resilient_parsing=False)
        assert ctx.command is command


def test_a_line_with_an_option_gpulab_lacks_is_caught() -> None:
    """The check above can fail: an option verify does not take is not known to it."""
    command, rest = _command(shlex.split("gpulab verify --junit-xml report.xml"))
    known = {opt for param in command.params for opt in param.opts}
    assert rest[0] not in known
    with pytest.raises(Exception, match="No such option: --junit-xml"):
        command.make_context("gpulab", list(rest))


# --------------------------------------------------------------------------- replayed JUnit


def _suite(path: Path) -> tuple[ET.Element, ET.Element, dict[str, str]]:
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    props = {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}
    return root, suite, props


@pytest.mark.parametrize("example", ["example:kamaji-hami", "example:vcluster-kai"])
def test_a_replayed_verify_is_marked_replayed_in_its_junit_file(tmp_path: Path,
                                                                example: str) -> None:
    junit = tmp_path / "report.xml"
    result = runner.invoke(app, ["verify", "replay", example, "--junit", str(junit)])
    assert result.exit_code == 0, result.stderr
    root, suite, props = _suite(junit)
    assert root.get("name") == "gpulab verify (replayed)"
    assert suite.get("name", "").startswith("gpulab verify (replayed): ")
    assert props["gpulab.replayed"] == "true"
    assert props["gpulab.judged_against"] == "the recording's profile"
    assert props["gpulab.recording"].endswith(example.split(":", 1)[1])
    assert "not recorded on a running lab" in props["gpulab.example"]


def test_a_live_report_is_not_marked_replayed(tmp_path: Path) -> None:
    """The same verdicts from a live run (replayed=False) carry no replay mark."""
    from dataclasses import replace

    from gpulab import core
    from gpulab.verify.examples import example_recording
    from gpulab.verify.report import write_junit

    report, _profile = core.replay_verify(example_recording("example:kamaji-hami"), None, None)
    assert report.replayed
    live = write_junit(replace(report, replayed=False), tmp_path / "live.xml")
    root, suite, props = _suite(live)
    assert root.get("name") == "gpulab verify"
    assert "replayed" not in suite.get("name", "")
    assert "gpulab.replayed" not in props
