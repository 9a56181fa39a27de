"""Reports (table, JSON, JUnit), exit codes, and recordings on disk."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gpulab.errors import ExitCode, UsageError
from gpulab.stacks.kamaji_hami.checks.registry import CHECK_IDS
from gpulab.stacks.kamaji_hami.record import read_recording, write_recording
from gpulab.stacks.kamaji_hami.run import evaluate
from gpulab.verify.recording import MANIFEST
from gpulab.verify.report import (
    TABLE_HEADER,
    exit_code,
    junit_xml,
    report_json,
    table_rows,
    write_junit,
)
from gpulab.verify.result import CheckResult
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import RECORDINGS, tenant_replace, with_gpus

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.report import VerifyReport


def _mixed(healthy: LabState, profile: KamajiHamiProfile) -> VerifyReport:
    """tenant-a: TC-01 fails (TCP NotReady), TC-08 errors (probe not made); tenant-b without
    GPUs in the profile: TC-03, TC-05..07 skip and TC-04 fails (its node still has the L4s)."""
    state = tenant_replace(healthy, "tenant-a", tcp=b.tcp(profile.tenant("tenant-a"),
                                                          state="NotReady"),
                           credential_probes=None)
    return evaluate(state, with_gpus(profile, "tenant-b"))


def test_exit_codes(healthy: LabState, profile: KamajiHamiProfile) -> None:
    ok = evaluate(healthy, profile)
    assert ok.ok and exit_code(ok) == ExitCode.OK == 0
    mixed = _mixed(healthy, profile)
    assert not mixed.ok and exit_code(mixed) == ExitCode.CHECKS_FAILED == 3
    only_error = evaluate(tenant_replace(healthy, "tenant-a", credential_probes=None), profile)
    assert exit_code(only_error) == ExitCode.CHECKS_FAILED
    only_skips = evaluate(healthy, with_gpus(profile, "tenant-b"), ["TC-05"])
    assert {r.status for r in only_skips.results} == {"pass", "skip"}
    assert exit_code(only_skips) == ExitCode.OK


def test_table_rows(healthy: LabState, profile: KamajiHamiProfile) -> None:
    rows = table_rows(_mixed(healthy, profile))
    assert len(TABLE_HEADER) == 5
    assert rows[0][:3] == ("TC-01 control planes", "tenant-a", "FAIL")
    assert "is NotReady, not Ready" in rows[0][3]
    assert rows[0][4] == "0.4"
    assert rows[1][:3] == ("TC-01 control planes", "tenant-b", "PASS")
    assert rows[1][3].startswith("TenantControlPlane tenants/tenant-b Ready")
    assert [r[0].split()[0] for r in rows] == [c for c in CHECK_IDS for _ in (1, 2)]


def test_json_report(healthy: LabState, profile: KamajiHamiProfile) -> None:
    doc = report_json(_mixed(healthy, profile))
    json.dumps(doc)  # serialisable
    assert doc["ok"] is False and doc["exit_code"] == 3 and doc["replayed"] is True
    assert doc["summary"] == {"pass": 9, "fail": 2, "error": 1, "skip": 4}
    first = doc["results"][0]
    assert set(first) == {"id", "title", "tenant", "status", "evidence", "reason", "seconds"}
    assert (first["id"], first["tenant"], first["status"]) == ("TC-01", "tenant-a", "fail")


def test_junit_parses_with_the_right_counts(healthy: LabState, profile: KamajiHamiProfile,
                                            tmp_path: Path) -> None:
    report = _mixed(healthy, profile)
    path = write_junit(report, tmp_path / "out" / "verify.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"),
            root.get("skipped")) == ("16", "2", "1", "4")
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 16
    assert {(c.get("classname"), c.get("name")) for c in cases} == {
        (t, f"{r.id} {r.title}") for r in report.results for t in [r.tenant]}
    failure = cases[0].find("failure")
    assert cases[0].get("classname") == "tenant-a" and cases[0].get("name") == (
        "TC-01 control planes")
    assert failure is not None
    assert "is NotReady, not Ready" in (failure.get("message") or "")
    assert "TenantControlPlane tenants/tenant-a NotReady" in (failure.text or "")
    assert len(suite.findall("testcase/failure")) == 2
    assert len(suite.findall("testcase/error")) == 1
    assert len(suite.findall("testcase/skipped")) == 4
    passed = cases[1]
    assert passed.find("system-out") is not None
    assert passed.get("time") == "0.400"


def test_junit_escapes_text(healthy: LabState, profile: KamajiHamiProfile) -> None:
    report = evaluate(healthy, profile, ["TC-01"])
    odd = replace(report.results[0], status="fail", reason='a <b> & "c"', evidence="x < y")
    xml = junit_xml(replace(report, results=(odd,)))
    case = ET.fromstring(xml.split("\n", 1)[1]).find("testsuite/testcase/failure")
    assert case is not None and case.get("message") == 'a <b> & "c"' and case.text == "x < y"


def test_recording_round_trip(healthy: LabState, profile: KamajiHamiProfile,
                              tmp_path: Path) -> None:
    manifest = write_recording(tmp_path / "rec", healthy, profile)
    assert manifest.name == MANIFEST
    assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == [
        "manifest.json", "state-tenant-a.json", "state-tenant-b.json"]
    recording = read_recording(tmp_path / "rec")
    assert recording.state == healthy
    assert recording.profile() == profile
    assert recording.gpulab_version
    assert [r.to_dict() for r in evaluate(recording.state, profile).results] == [
        r.to_dict() for r in evaluate(healthy, profile).results]


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: (d / MANIFEST).unlink(), "manifest.json not found"),
    (lambda d: (d / MANIFEST).write_text("{"), "is not readable JSON"),
    (lambda d: _patch(d / MANIFEST, version=99), "is recording version 99"),
    (lambda d: _patch(d / MANIFEST, format="something-else"), "is not a gpulab verify recording"),
    (lambda d: (d / "state-tenant-b.json").unlink(), "state-tenant-b.json not found"),
    (lambda d: _patch(d / MANIFEST, tenants={"tenant-a": "../x.json"}),
     "must be a plain file name"),
    (lambda d: _patch(d / MANIFEST, tenants={"tenant-a": 7}),
     "tenants.tenant-a: Input should be a valid string, got 7"),
    (lambda d: _patch(d / MANIFEST, tenants={"tenant-a": "state-tenant-b.json"}),
     "holds tenant 'tenant-b', but the manifest lists it for 'tenant-a'"),
    (lambda d: _patch(d / MANIFEST, stack="vcluster-kai"), "is not a kamaji-hami recording"),
    (lambda d: _patch(d / MANIFEST, seconds="12"), "seconds: Input should be a valid number"),
    (lambda d: _patch_state(d / "state-tenant-a.json", credential_probes=[
        {"credentials_of": "tenant-a", "server_of": "tenant-b", "outcome": "fine"}]),
     "credential_probes.0.outcome: Input should be 'rejected', 'accepted', 'forbidden' or "
     "'error'"),
    (lambda d: _patch_state(d / "state-tenant-a.json", hami_device_configmap="yes"),
     "hami_device_configmap: Input should be a valid boolean"),
    (lambda d: _escape_by_symlink(d / "state-tenant-a.json"), "leads outside the recording"),
    (lambda d: _replace_by_directory(d / "state-tenant-a.json"), "is not a regular file"),
    (lambda d: _patch_state(d / "state-tenant-a.json", nodes=5),
     "does not match the recording format"),
    (lambda d: _patch(d / MANIFEST, checks=5), "does not match the recording format"),
])
def test_bad_recordings_are_usage_errors(healthy: LabState, profile: KamajiHamiProfile,
                                         tmp_path: Path, edit: Callable[[Path], object],
                                         expected: str) -> None:
    write_recording(tmp_path, healthy, profile)
    edit(tmp_path)
    with pytest.raises(UsageError) as info:
        read_recording(tmp_path)
    assert expected in str(info.value)
    assert info.value.exit_code == ExitCode.USAGE


def _patch(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _patch_state(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data["state"].update(changes)
    path.write_text(json.dumps(data))


def _escape_by_symlink(path: Path) -> None:
    outside = path.parent.parent / "outside.json"
    outside.write_text(path.read_text())
    path.unlink()
    path.symlink_to(outside)


def _replace_by_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def test_unknown_keys_are_ignored_and_missing_ones_defaulted(
        healthy: LabState, profile: KamajiHamiProfile, tmp_path: Path) -> None:
    write_recording(tmp_path, healthy, profile)
    path = tmp_path / "state-tenant-a.json"
    data = json.loads(path.read_text())
    data["state"]["added_in_a_later_minor"] = {"x": 1}
    del data["state"]["cleanup_error"]
    path.write_text(json.dumps(data))
    assert read_recording(tmp_path).state.tenants["tenant-a"] == healthy.tenants["tenant-a"]


def test_replay_restricted_to_unrecorded_check_is_an_error(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    partial = replace(healthy, checks=("TC-07",))
    report = evaluate(partial, profile, ["TC-05", "TC-07"])
    assert [(r.id, r.status) for r in report.results] == [
        ("TC-05", "error"), ("TC-05", "error"), ("TC-07", "pass"), ("TC-07", "pass")]
    assert "TC-05 was not observed in this run or recording (observed: TC-07)" in (
        report.results[0].reason)
    # Judged by default, the checks the recording does not hold are shown as not recorded.
    default = evaluate(partial, profile)
    assert [(r.id, r.status) for r in default.results if r.status != "skip"] == [
        ("TC-07", "pass"), ("TC-07", "pass")]
    assert default.not_recorded == tuple(c for c in CHECK_IDS if c != "TC-07")


def test_a_crashing_check_is_an_error_result(healthy: LabState, profile: KamajiHamiProfile,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.stacks.kamaji_hami.checks import registry

    def boom(*_args: object) -> CheckResult:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(registry, "CHECKS", tuple(
        replace(c, run=boom) if c.id == "TC-02" else c for c in registry.CHECKS))
    report = evaluate(healthy, profile, ["TC-02"])
    assert {r.status for r in report.results} == {"error"}
    assert "internal error in TC-02: ZeroDivisionError: oops" in report.results[0].reason


def test_cleanup_problems_become_notes(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-b", cleanup_error="could not delete everything")
    report = evaluate(state, profile)
    assert report.ok
    assert report.notes == ("tenant-b: could not delete everything",)


# --------------------------------------------------------------------------- checked-in data


def test_checked_in_healthy_recording_replays_all_pass() -> None:
    recording = read_recording(RECORDINGS / "writeup-healthy")
    report = evaluate(recording.state, recording.profile())
    assert report.ok and len(report.results) == 16
    assert {r.status for r in report.results} == {"pass"}


def test_checked_in_bypassed_recording_names_konnectivity() -> None:
    recording = read_recording(RECORDINGS / "writeup-webhook-bypassed")
    report = evaluate(recording.state, recording.profile())
    failed = {(r.id, r.tenant) for r in report.results if r.status == "fail"}
    assert failed == {("TC-03", "tenant-b"), ("TC-05", "tenant-b"), ("TC-06", "tenant-b"),
                      ("TC-07", "tenant-b")}
    tc03 = next(r for r in report.results if r.id == "TC-03" and r.tenant == "tenant-b")
    assert "could not reach it through Konnectivity (failurePolicy Ignore hides this)" in (
        tc03.reason)
    assert exit_code(report) == 3


def test_checked_in_recordings_match_the_builders(tmp_path: Path) -> None:
    """The JSON under tests/data/recordings is what `python -m tests.kamaji_hami.builders` writes."""
    b.write_writeup_recordings(tmp_path)
    for name in ("writeup-healthy", "writeup-webhook-bypassed"):
        for path in sorted((tmp_path / name).iterdir()):
            stored = RECORDINGS / name / path.name
            assert json.loads(stored.read_text()) == json.loads(path.read_text()), (
                f"{stored} is stale: run `python -m tests.kamaji_hami.builders`")
    shutil.rmtree(tmp_path)
