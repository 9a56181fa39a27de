"""A replayed verify is marked as replayed in its JUnit file (issue #31 item 6)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpulab.cli import app

runner = CliRunner()


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
