"""vcluster-kai reports and recordings: the finding in table/JSON/JUnit, replay of the checked-in
recordings (through core and the CLI), and the kamaji recordings still replaying as before."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.errors import ExitCode, UsageError
from gpulab.paths import lab_dir
from gpulab.profile.load import builtin_profiles
from gpulab.stacks import RECORDING_DEFAULT_STACK
from gpulab.stacks.vcluster_kai.record import read_recording, write_recording
from gpulab.stacks.vcluster_kai.run import evaluate
from gpulab.verify.recording import MANIFEST, recording_stack
from gpulab.verify.report import exit_code, junit_xml, report_json, table_rows
from tests.cluster.builders import kubeconfig_file
from tests.cluster.test_kmock import served
from tests.vcluster_kai import builders as b
from tests.vcluster_kai.builders import RECORDINGS

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState

runner = CliRunner()


def test_the_finding_is_visible_and_never_a_pass(healthy: KaiLabState,
                                                 kai_profile: VclusterKaiProfile) -> None:
    report = evaluate(healthy, kai_profile)
    rows = table_rows(report)
    assert len(rows) == 25 and rows[-1][2] == "FINDING"
    assert "ValidatingAdmissionPolicy" in rows[-1][3]
    doc = report_json(report)
    assert doc["summary"] == {"pass": 24, "fail": 0, "error": 0, "skip": 0}
    assert doc["ok"] is True and doc["exit_code"] == 0
    [finding] = doc["findings"]
    assert finding["status"] == "finding" and finding["demonstrated"] is True
    assert finding["id"] == "KAI-F1" and finding["tenant"] == "team-nlp"
    assert all(r["status"] != "finding" for r in doc["results"])


def test_junit_shows_the_finding_as_a_typed_skip(healthy: KaiLabState,
                                                 kai_profile: VclusterKaiProfile) -> None:
    report = evaluate(healthy, kai_profile)
    root = ET.fromstring(junit_xml(report).split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "25", "0", "0", "1")
    cases = root.findall("testsuite/testcase")
    assert len(cases) == 25
    last = cases[-1]
    assert (last.get("classname"), last.get("name")) == ("team-nlp",
                                                         "KAI-F1 queue label not enforced")
    skipped = last.find("skipped")
    assert skipped is not None and skipped.get("type") == "finding"
    assert (skipped.get("message") or "").startswith("FINDING: team-nlp labelled its pod")
    assert "ValidatingAdmissionPolicy" in (skipped.text or "")
    passed = cases[0]
    assert passed.find("skipped") is None and passed.find("system-out") is not None


def test_recording_round_trip(healthy: KaiLabState, kai_profile: VclusterKaiProfile,
                              tmp_path: Path) -> None:
    manifest = write_recording(tmp_path / "rec", healthy, kai_profile)
    assert manifest.name == MANIFEST
    assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == [
        "manifest.json", "state-team-nlp.json", "state-team-recommender.json",
        "state-team-vision.json"]
    assert recording_stack(tmp_path / "rec") == "vcluster-kai"
    recording = read_recording(tmp_path / "rec")
    assert recording.state == healthy
    assert recording.profile() == kai_profile


@pytest.mark.parametrize(("older", "gpus"), [("existing", "found"), ("", "pool")])
def test_an_older_recording_says_provider_where_this_one_says_gpus(
        older: str, gpus: str, healthy: KaiLabState, kai_profile: VclusterKaiProfile,
        tmp_path: Path) -> None:
    """Recordings before LabCluster kept the host's `provider` ('' or 'existing'); read now,
    'existing' still means the GPUs were those found, and what is written says `gpus`."""
    write_recording(tmp_path / "rec", healthy, kai_profile)
    path = tmp_path / "rec" / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    assert manifest["host"].pop("gpus") == "pool" and "provider" not in manifest["host"]
    manifest["host"]["provider"] = older
    path.write_text(json.dumps(manifest), encoding="utf-8")
    host = read_recording(tmp_path / "rec").state.host
    assert host.gpus == gpus
    assert "provider" not in host.to_dict() and host.to_dict()["gpus"] == gpus


def test_a_kamaji_recording_is_not_read_as_kai() -> None:
    with pytest.raises(UsageError, match="is not a vcluster-kai recording"):
        read_recording(RECORDINGS / "writeup-healthy")
    # kamaji-hami's recordings name no stack; the registry reads them as kamaji-hami's
    assert recording_stack(RECORDINGS / "writeup-healthy") is None
    assert RECORDING_DEFAULT_STACK == "kamaji-hami"


def test_bad_kai_recordings(healthy: KaiLabState, kai_profile: VclusterKaiProfile,
                            tmp_path: Path) -> None:
    write_recording(tmp_path, healthy, kai_profile)
    (tmp_path / "state-team-vision.json").unlink()
    with pytest.raises(UsageError, match=r"state-team-vision\.json not found"):
        read_recording(tmp_path)
    data = json.loads((tmp_path / MANIFEST).read_text())
    data["stack"] = "nonsense"
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(UsageError, match="unknown stack 'nonsense'"):
        core.replay_verify(tmp_path, None)


def test_checked_in_recordings_match_the_builders(tmp_path: Path) -> None:
    """The JSON under tests/data/recordings/kai-* is what `python -m tests.vcluster_kai.builders`
    writes."""
    b.write_recordings(tmp_path)
    for name in ("kai-healthy", "kai-writeup-queues"):
        for path in sorted((tmp_path / name).iterdir()):
            stored = RECORDINGS / name / path.name
            assert json.loads(stored.read_text()) == json.loads(path.read_text()), (
                f"{stored} is stale: run `python -m tests.vcluster_kai.builders`")
    shutil.rmtree(tmp_path)


def test_replay_dispatches_on_the_manifests_stack() -> None:
    report, profile = core.replay_verify(RECORDINGS / "kai-healthy", None)
    assert profile.stack == "vcluster-kai" and report.ok and report.replayed
    assert len(report.results) == 24 and len(report.findings) == 1
    kamaji, kamaji_profile = core.replay_verify(RECORDINGS / "writeup-healthy", "TC-01")
    assert kamaji_profile.stack == "kamaji-hami"
    assert [r.id for r in kamaji.results] == ["TC-01", "TC-01"] and kamaji.ok
    writeup, _ = core.replay_verify(RECORDINGS / "kai-writeup-queues", "3")
    assert {r.status for r in writeup.results} == {"fail"}
    assert exit_code(writeup) == ExitCode.CHECKS_FAILED


def test_record_verify_writes_the_stack(healthy: KaiLabState, kai_profile: VclusterKaiProfile,
                                        tmp_path: Path) -> None:
    report = evaluate(healthy, kai_profile, replayed=False)
    core.record_verify(tmp_path / "rec", report, kai_profile)
    assert json.loads((tmp_path / "rec" / MANIFEST).read_text())["stack"] == "vcluster-kai"
    again, _ = core.replay_verify(tmp_path / "rec", None)
    assert [r.to_dict() for r in again.results] == [r.to_dict() for r in report.results]


# --------------------------------------------------------------------------- the CLI


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def test_cli_replay_of_the_healthy_kai_lab(tmp_path: Path) -> None:
    junit = tmp_path / "v.xml"
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy"),
                                 "--junit", str(junit)])
    assert result.exit_code == 0, result.stderr
    assert "24 pass, 1 finding (not a pass) (replayed against the recording's profile)" in result.stderr
    assert "KAI-F1 queue label not enforced" in result.stdout and "FINDING" in result.stdout
    assert len(ET.parse(junit).getroot().findall(".//testcase")) == 25


def test_cli_replay_of_the_write_up_queues_fails_kai_03() -> None:
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-writeup-queues"),
                                 "--json", "--tc", "KAI-03,4"])
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    verdicts = {(r["id"], r["tenant"]): r["status"] for r in data["results"]}
    assert set(verdicts.values()) == {"fail", "pass"}
    assert verdicts[("KAI-03", "team-nlp")] == "fail" and verdicts[("KAI-04", "team-nlp")] == (
        "pass")
    assert data["findings"] == []  # KAI-08 not selected


def test_cli_tc_ids_belong_to_the_recordings_stack() -> None:
    wrong = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy"),
                                "--tc", "TC-05"])
    assert wrong.exit_code == 2 and "unknown check(s) TC-05 for the vcluster-kai stack" in (
        wrong.stderr)
    right = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                "--tc", "5"])
    assert right.exit_code == 0 and ("2 pass; 1 of 8 checks (replayed against the recording's "
                                     "profile)") in right.stderr


def test_cli_knows_the_teams() -> None:
    rows = json.loads(runner.invoke(app, ["profiles", "list", "-o", "json"]).stdout)
    kai = next(r for r in rows if r["name"] == "vcluster-kai")
    assert kai["stack"] == "vcluster-kai"
    assert kai["tenants"] == ["team-nlp", "team-vision", "team-recommender"]
    no_lab = runner.invoke(app, ["kubeconfig", "team-nlp", "-p", "vcluster-kai"])
    assert no_lab.exit_code == 6 and "no lab named 'vcluster-kai'" in no_lab.stderr
    (lab_dir("vcluster-kai")).mkdir(parents=True)
    missing = runner.invoke(app, ["kubeconfig", "team-nlp", "-p", "vcluster-kai"])
    assert missing.exit_code == 4 and "no kubeconfig saved for team-nlp" in missing.stderr
    unknown = runner.invoke(app, ["kubeconfig", "tenant-a", "-p", "vcluster-kai"])
    assert unknown.exit_code == 2 and "choose from management, team-nlp" in unknown.stderr


def test_cli_kubeconfig_path_of_a_team(_isolated_home: Path) -> None:
    folder = _isolated_home / "labs" / "vcluster-kai"
    folder.mkdir(parents=True)
    (folder / "team-nlp.kubeconfig").write_text("client-key-data: SECRET\n")
    result = runner.invoke(app, ["kubeconfig", "team-nlp", "-p", "vcluster-kai"])
    assert result.exit_code == 0
    assert result.stdout.strip() == str(folder / "team-nlp.kubeconfig")
    assert "SECRET" not in result.stdout + result.stderr


def test_cli_plan_and_verify_on_a_lab_that_is_not_up() -> None:
    plan = runner.invoke(app, ["plan", "-p", "vcluster-kai"])
    assert plan.exit_code == 0 and "team-recommender/gpu-node" in plan.stdout
    verify = runner.invoke(app, ["verify", "-p", "vcluster-kai", "--name", "ghost"])
    assert verify.exit_code == 6 and "no lab named 'ghost'" in verify.stderr
    lab_dir("ghost").mkdir(parents=True)
    with served([]) as (url, _km):  # the management API answers; the teams' kubeconfigs lack
        kubeconfig_file(lab_dir("ghost") / "management.kubeconfig", url)
        verify = runner.invoke(app, ["verify", "-p", "vcluster-kai", "--name", "ghost"])
    assert verify.exit_code == 4
    assert "lab 'ghost' is not up" in verify.stderr and "team-nlp.kubeconfig" in verify.stderr
    bad_tc = runner.invoke(app, ["verify", "-p", "vcluster-kai", "--tc", "KAI-99"])
    assert bad_tc.exit_code == 2


@pytest.mark.parametrize(("change", "expected"), [
    ({"waited": "soon"}, "does not match the recording format"),
    ({"events": 5}, "does not match the recording format"),
])
def test_wrong_types_in_a_kai_state_file_are_one_usage_error(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile, tmp_path: Path,
        change: dict[str, object], expected: str) -> None:
    write_recording(tmp_path, healthy, kai_profile)
    path = tmp_path / "state-team-vision.json"
    data = json.loads(path.read_text())
    pods = data["state"]["pods"]
    assert pods, "the healthy recording has probe pods to corrupt"
    pods[0].update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=expected) as info:
        read_recording(tmp_path)
    assert "state-team-vision.json" in str(info.value)
    assert info.value.exit_code == ExitCode.USAGE


def test_a_kai_state_file_may_not_lead_outside_the_recording(
        healthy: KaiLabState, kai_profile: VclusterKaiProfile, tmp_path: Path) -> None:
    write_recording(tmp_path / "rec", healthy, kai_profile)
    path = tmp_path / "rec" / "state-team-vision.json"
    (tmp_path / "elsewhere.json").write_text(path.read_text())
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(UsageError, match="leads outside the recording"):
        read_recording(tmp_path / "rec")


def test_cli_replay_of_a_kai_recording_against_a_given_profile(tmp_path: Path) -> None:
    data = yaml.safe_load(builtin_profiles()["vcluster-kai"].read_text())
    path = tmp_path / "kai.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy"),
                                      "--profile", str(path), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["judged_against"] == f"profile {path}"
    kamaji = CliRunner().invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy"),
                                      "--profile", "kamaji-hami"])
    assert kamaji.exit_code == 2
    assert "is a vcluster-kai recording but profile" in kamaji.stderr
