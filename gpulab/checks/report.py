"""Verify's outputs: the report value, table rows, JSON, JUnit XML, and recordings on disk.

Recording format (docs/recording-format.md): a directory with `manifest.json` (format, version,
lab, checks, the profile used, tenant → file) and one `state-<tenant>.json` per tenant holding
that tenant's `TenantState`. A manifest without `stack` is a kamaji-hami recording; other stacks
write `stack` and read their own state files (gpulab.checks.kai.record).

Findings are known weaknesses verify demonstrates on the lab: they are shown (table row `FINDING`,
JSON `findings`, a JUnit testcase with a `skipped` element of type `finding`) but are neither a
pass nor a failure, so they never change the exit code.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gpulab import __version__
from gpulab.checks.state import LabState, TenantState
from gpulab.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gpulab.checks.result import CheckResult, Status
    from gpulab.profile.model import KamajiHamiProfile

__all__ = [
    "FINDING",
    "MANIFEST",
    "RECORDING_FORMAT",
    "RECORDING_VERSION",
    "TABLE_HEADER",
    "Finding",
    "ObservedState",
    "Recording",
    "VerifyReport",
    "exit_code",
    "junit_xml",
    "load_document",
    "read_recording",
    "recording_stack",
    "report_json",
    "table_rows",
    "write_json",
    "write_junit",
    "write_recording",
]

RECORDING_FORMAT = "gpulab-verify-recording"
RECORDING_VERSION = 1
MANIFEST = "manifest.json"
TABLE_HEADER = ("check", "tenant", "result", "evidence or reason", "seconds")
FINDING = "FINDING"
DEFAULT_STACK = "kamaji-hami"  # recordings whose manifest names no stack


class ObservedState(Protocol):
    """What every stack's observed state offers the reports (LabState, KaiLabState, …)."""

    @property
    def lab(self) -> str: ...

    @property
    def observed_at(self) -> str: ...


@dataclass(frozen=True)
class Finding:
    """A known weakness of the stack as built, shown on the lab by verify: never a pass (the
    property is missing), never a failure (the lab is as the stack's upstream design makes it).

    demonstrated: verify reproduced it on this lab; False when verify could not show it (the
    weakness is known from the facts but was not reproduced; `evidence` says why).
    advice: what closes the gap.
    """

    id: str
    title: str
    tenant: str
    evidence: str
    advice: str = ""
    demonstrated: bool = True
    seconds: float = 0.0

    @property
    def detail(self) -> str:
        shown = "" if self.demonstrated else "(not demonstrated) "
        return f"{shown}{self.evidence}" + (f". {self.advice}" if self.advice else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "tenant": self.tenant,
            "status": "finding",
            "demonstrated": self.demonstrated,
            "evidence": self.evidence,
            "advice": self.advice,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of one `verify` (live or replayed).

    results: one per check and tenant, checks in TC order, tenants in profile order.
    state: what the verdicts rest on (write it with its stack's `write_recording`).
    seconds: wall time (observation for a live run; 0 for a replay).
    notes: things to tell the user that are not verdicts (cleanup problems).
    findings: known weaknesses shown on the lab (see Finding); they do not change `ok`.
    """

    lab: str
    results: tuple[CheckResult, ...]
    state: ObservedState
    seconds: float = 0.0
    replayed: bool = False
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no check failed or errored (skips are fine)."""
        return all(self.results)

    def counts(self) -> dict[Status, int]:
        out: dict[Status, int] = {"pass": 0, "fail": 0, "error": 0, "skip": 0}
        for result in self.results:
            out[result.status] += 1
        return out


def exit_code(report: VerifyReport) -> ExitCode:
    """0 (OK) when every check passed or was skipped; 3 (CHECKS_FAILED) when any failed or
    errored (an error means the property could not be established, which is not a pass).
    Findings do not count either way."""
    return ExitCode.OK if report.ok else ExitCode.CHECKS_FAILED


def table_rows(report: VerifyReport) -> list[tuple[str, str, str, str, str]]:
    """Rows under TABLE_HEADER: ('TC-05 sharing', 'tenant-a', 'PASS', evidence|reason, '1.2'),
    then one `FINDING` row per finding."""
    rows = [
        (f"{r.id} {r.title}".strip(), r.tenant, r.status.upper(), r.detail, f"{r.seconds:.1f}")
        for r in report.results
    ]
    rows += [(f"{f.id} {f.title}".strip(), f.tenant, FINDING, f.detail, f"{f.seconds:.1f}")
             for f in report.findings]
    return rows


def report_json(report: VerifyReport) -> dict[str, Any]:
    """The `--json` document (stable keys; results in table order)."""
    return {
        "lab": report.lab,
        "ok": report.ok,
        "exit_code": int(exit_code(report)),
        "replayed": report.replayed,
        "observed_at": report.state.observed_at,
        "seconds": round(report.seconds, 3),
        "summary": report.counts(),
        "results": [r.to_dict() for r in report.results],
        "findings": [f.to_dict() for f in report.findings],
        "notes": list(report.notes),
    }


def junit_xml(report: VerifyReport, suite: str = "gpulab verify") -> str:
    """JUnit XML: one testsuite, one testcase per check and tenant (classname = tenant,
    name = 'TC-05 sharing'); failure/error/skipped carry the reason as message and the evidence
    as text; passes carry the evidence in system-out. A finding is a testcase with
    `<skipped type="finding" message="FINDING: …">` (JUnit's only outcome that is neither a pass
    nor a failure; `type` tells it from a skipped check) and the advice as text."""
    counts = report.counts()
    tests = str(len(report.results) + len(report.findings))
    skipped = str(counts["skip"] + len(report.findings))
    root = ET.Element("testsuites", {
        "name": suite,
        "tests": tests,
        "failures": str(counts["fail"]),
        "errors": str(counts["error"]),
        "skipped": skipped,
        "time": f"{report.seconds:.3f}",
    })
    testsuite = ET.SubElement(root, "testsuite", {
        "name": f"{suite}: {report.lab}",
        "tests": tests,
        "failures": str(counts["fail"]),
        "errors": str(counts["error"]),
        "skipped": skipped,
        "time": f"{sum(r.seconds for r in report.results):.3f}",
        "timestamp": report.state.observed_at,
    })
    for result in report.results:
        case = ET.SubElement(testsuite, "testcase", {
            "classname": result.tenant,
            "name": f"{result.id} {result.title}".strip(),
            "time": f"{result.seconds:.3f}",
        })
        if result.status == "pass":
            ET.SubElement(case, "system-out").text = result.evidence
            continue
        tag = {"fail": "failure", "error": "error", "skip": "skipped"}[result.status]
        element = ET.SubElement(case, tag, {"message": result.reason})
        if result.status != "skip":
            element.set("type", result.status)
            element.text = result.evidence or result.reason
    for finding in report.findings:
        case = ET.SubElement(testsuite, "testcase", {
            "classname": finding.tenant,
            "name": f"{finding.id} {finding.title}".strip(),
            "time": f"{finding.seconds:.3f}",
        })
        shown = "" if finding.demonstrated else " (not demonstrated)"
        element = ET.SubElement(case, "skipped", {
            "type": "finding", "message": f"{FINDING}{shown}: {finding.evidence}"})
        element.text = finding.advice
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: VerifyReport, path: Path) -> Path:
    """Write `junit_xml(report)` to `path` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(report), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- recordings


@dataclass(frozen=True)
class Recording:
    """A recording read back: the observed state and the profile it was made with (as JSON)."""

    state: LabState
    profile_data: dict[str, Any]
    gpulab_version: str = ""

    def profile(self) -> KamajiHamiProfile:
        """The recorded profile, validated again (UsageError if this gpulab cannot read it)."""
        from pydantic import ValidationError

        from gpulab.profile.model import KamajiHamiProfile

        try:
            return KamajiHamiProfile.model_validate(self.profile_data)
        except ValidationError as err:
            raise UsageError(
                f"the recording's profile is not valid for this gpulab: "
                f"{err.error_count()} problem(s), first: {err.errors()[0]['msg']}",
                hint="pass --profile to evaluate the recording against another profile",
            ) from None


def _tenant_file(tenant: str) -> str:
    return f"state-{tenant}.json"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_recording(directory: Path, state: LabState, profile: KamajiHamiProfile) -> Path:
    """Save `state` (and the profile) so `read_recording` + `evaluate` reproduce the verdicts.

    Tenant files are written first and the manifest last, so a directory without a manifest is
    an incomplete recording. Returns the manifest's path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, tenant in state.tenants.items():
        files[name] = _tenant_file(name)
        _write_json(directory / files[name], {
            "format": f"{RECORDING_FORMAT}/tenant",
            "version": RECORDING_VERSION,
            "tenant": name,
            "state": tenant.to_dict(),
        })
    manifest = {
        "format": RECORDING_FORMAT,
        "version": RECORDING_VERSION,
        "gpulab_version": __version__,
        "lab": state.lab,
        "observed_at": state.observed_at,
        "seconds": state.seconds,
        "checks": list(state.checks),
        "tenants": files,
        "profile": profile.model_dump(mode="json"),
    }
    path = directory / MANIFEST
    _write_json(path, manifest)
    return path


def write_json(path: Path, data: Any) -> None:
    """Write a recording file atomically (temporary name, then rename)."""
    _write_json(path, data)


def load_document(path: Path, fmt: str) -> dict[str, Any]:
    """A recording file of format `fmt` at this RECORDING_VERSION (UsageError otherwise)."""
    return _require_version(path, _load(path), fmt)


def recording_stack(directory: Path) -> str:
    """The stack a recording was made by (its manifest's `stack`; kamaji-hami when absent)."""
    manifest = load_document(directory / MANIFEST, RECORDING_FORMAT)
    stack = manifest.get("stack") or DEFAULT_STACK
    if not isinstance(stack, str):
        raise UsageError(f"{directory / MANIFEST}: 'stack' must be a string")
    return stack


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} not found",
                         hint="--replay takes a directory written by --record") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"{path} is not readable JSON: {err}") from None


def _require_version(path: Path, data: Any, fmt: str) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise UsageError(f"{path} is not a gpulab verify recording (format {fmt!r} expected)")
    version = data.get("version")
    if version != RECORDING_VERSION:
        raise UsageError(
            f"{path} is recording version {version}; this gpulab reads version "
            f"{RECORDING_VERSION}",
            hint="replay it with the gpulab version that recorded it",
        )
    return data


def read_recording(directory: Path) -> Recording:
    """Read a directory written by `write_recording` (UsageError when it is not one)."""
    manifest_path = directory / MANIFEST
    manifest = _require_version(manifest_path, _load(manifest_path), RECORDING_FORMAT)
    tenants: dict[str, TenantState] = {}
    files = manifest.get("tenants")
    if not isinstance(files, dict):
        raise UsageError(f"{manifest_path} has no 'tenants' mapping")
    for name, file_name in files.items():
        if Path(str(file_name)).name != file_name:
            raise UsageError(f"{manifest_path}: tenant file {file_name!r} must be a plain name")
        path = directory / str(file_name)
        data = _require_version(path, _load(path), f"{RECORDING_FORMAT}/tenant")
        state = data.get("state")
        if not isinstance(state, dict):
            raise UsageError(f"{path} has no 'state' object")
        tenants[str(name)] = TenantState.from_dict(state)
    profile = manifest.get("profile")
    return Recording(
        state=LabState(
            lab=str(manifest.get("lab") or ""),
            tenants=tenants,
            checks=tuple(str(c) for c in manifest.get("checks") or ()),
            observed_at=str(manifest.get("observed_at") or ""),
            seconds=float(manifest.get("seconds") or 0.0),
        ),
        profile_data=profile if isinstance(profile, dict) else {},
        gpulab_version=str(manifest.get("gpulab_version") or ""),
    )
