"""A recording made with `--tc` replays only what it holds: the checks it does not hold are shown
as not recorded (table, JSON, JUnit, summary: "5 of 8 checks"), never left out, so a partial
replay never reads as a full pass. Both stacks, through the real recording writer and reader."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami import record as kamaji_record
from gpulab.stacks.kamaji_hami.run import evaluate as kamaji_evaluate
from gpulab.stacks.vcluster_kai import record as kai_record
from gpulab.stacks.vcluster_kai.run import evaluate as kai_evaluate
from gpulab.verify.report import (
    NOT_RECORDED,
    exit_code,
    junit_xml,
    report_json,
    summary_line,
    table_rows,
)
from tests.kamaji_hami import builders as kb
from tests.vcluster_kai import builders as vb

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.verify.report import VerifyReport

runner = CliRunner()
RECORDED = ("TC-01", "TC-02", "TC-03", "TC-04", "TC-05")
KAI_RECORDED = ("KAI-01", "KAI-02", "KAI-03", "KAI-04", "KAI-05")


def _kamaji_partial(tmp_path: Path) -> Path:
    profile = load_profile("kamaji-hami").profile
    state = replace(kb.healthy_state(profile), checks=RECORDED)
    return kamaji_record.write_recording(tmp_path / "rec", state, profile).parent


def _kamaji_replay(tmp_path: Path) -> VerifyReport:
    recording = kamaji_record.read_recording(_kamaji_partial(tmp_path))
    return kamaji_evaluate(recording.state, recording.profile())


def _kai_replay(tmp_path: Path) -> VerifyReport:
    profile = load_profile("vcluster-kai").profile
    state = replace(vb.healthy_state(profile), checks=KAI_RECORDED)
    directory = kai_record.write_recording(tmp_path / "rec", state, profile).parent
    recording = kai_record.read_recording(directory)
    return kai_evaluate(recording.state, recording.profile())


def test_a_partial_recording_shows_every_check_it_does_not_hold(tmp_path: Path) -> None:
    report = _kamaji_replay(tmp_path)
    assert report.not_recorded == ("TC-06", "TC-07", "TC-08")
    assert [(r.id, r.status) for r in report.results] == [
        (check, "pass" if check in RECORDED else "skip")
        for check in ("TC-01", "TC-02", "TC-03", "TC-04", "TC-05", "TC-06", "TC-07", "TC-08")
        for _tenant in ("tenant-a", "tenant-b")]
    skipped = [r for r in report.results if r.status == "skip"]
    assert all(r.reason.startswith("not recorded: the recording holds TC-01, TC-02, TC-03, "
                                   "TC-04, TC-05 only (it was made with --tc)") for r in skipped)
    assert exit_code(report) == 0  # what was judged passed; nothing else is claimed


def test_table_json_junit_and_summary_say_what_was_not_recorded(tmp_path: Path) -> None:
    report = _kamaji_replay(tmp_path)
    rows = table_rows(report)
    assert {row[2] for row in rows if row[0].startswith(("TC-06", "TC-07", "TC-08"))} == {
        NOT_RECORDED}
    assert "not recorded" in rows[-1][3]
    assert summary_line(report).startswith(
        "10 pass, 6 not recorded; 5 of 8 checks (TC-06, TC-07, TC-08 not in the recording) "
        "(replayed against")
    doc = report_json(report)
    assert doc["checks"] == {"judged": 5, "of": 8, "not_recorded": ["TC-06", "TC-07", "TC-08"]}
    unrecorded = [r for r in doc["results"] if r.get("not_recorded")]
    assert {r["id"] for r in unrecorded} == {"TC-06", "TC-07", "TC-08"}
    assert {r["status"] for r in unrecorded} == {"skip"}
    root = ET.fromstring(junit_xml(report))
    kinds = [s.get("type") for s in root.iter("skipped")]
    assert kinds == ["not-recorded"] * 6
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["gpulab.checks"] == "5 of 8 checks"
    assert props["gpulab.not_recorded"] == "TC-06,TC-07,TC-08"


def test_a_full_recording_and_an_explicit_tc(tmp_path: Path) -> None:
    profile = load_profile("kamaji-hami").profile
    full = kamaji_evaluate(kb.healthy_state(profile), profile)
    assert full.not_recorded == () and full.coverage() == ""
    assert summary_line(full).startswith("16 pass (replayed")
    assert report_json(full)["checks"] == {"judged": 8, "of": 8, "not_recorded": []}
    chosen = kamaji_evaluate(kb.healthy_state(profile), profile, ["TC-02"])
    assert [r.id for r in chosen.results] == ["TC-02", "TC-02"]
    assert summary_line(chosen).startswith("2 pass; 1 of 8 checks (replayed")


def test_the_kai_stack_too(tmp_path: Path) -> None:
    report = _kai_replay(tmp_path)
    assert report.not_recorded == ("KAI-06", "KAI-07", "KAI-08")
    assert report.findings == ()  # the finding needs KAI-08, which was not recorded
    assert summary_line(report).startswith(
        "15 pass, 9 not recorded; 5 of 8 checks (KAI-06, KAI-07, KAI-08 not in the recording)")


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def test_the_cli_replay_of_a_partial_recording(tmp_path: Path) -> None:
    directory = _kamaji_partial(tmp_path)
    junit = tmp_path / "v.xml"
    result = runner.invoke(app, ["verify", "--replay", str(directory), "--junit", str(junit)])
    assert result.exit_code == 0, result.stderr
    assert ("10 pass, 6 not recorded; 5 of 8 checks (TC-06, TC-07, TC-08 not in the recording) "
            "(replayed against the recording's profile)") in result.stderr
    assert NOT_RECORDED in result.stdout
    assert len(ET.parse(junit).getroot().findall(".//skipped[@type='not-recorded']")) == 6
    data = json.loads(runner.invoke(app, ["verify", "--replay", str(directory), "--json"]).stdout)
    assert data["checks"]["not_recorded"] == ["TC-06", "TC-07", "TC-08"]
