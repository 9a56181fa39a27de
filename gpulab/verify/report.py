"""Verify's outputs, for every stack: the report value, table rows, JSON and JUnit XML.

Recordings on disk are gpulab.verify.recording's (format) and each stack's `record.py` (states).

Findings are known weaknesses verify demonstrates on the lab: they are shown (table row `FINDING`,
JSON `findings`, a JUnit testcase with a `skipped` element of type `finding`) but are neither a
pass nor a failure, so they never change the exit code.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gpulab.errors import ExitCode

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.verify.result import CheckResult, Status

__all__ = [
    "FINDING",
    "TABLE_HEADER",
    "Finding",
    "ObservedState",
    "VerifyReport",
    "exit_code",
    "junit_xml",
    "report_json",
    "table_rows",
    "write_junit",
]

TABLE_HEADER = ("check", "tenant", "result", "evidence or reason", "seconds")
FINDING = "FINDING"


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
    judged_against: for a replay, the profile the verdicts were judged against ("the
        recording's profile", or the `--profile` given).
    """

    lab: str
    results: tuple[CheckResult, ...]
    state: ObservedState
    seconds: float = 0.0
    replayed: bool = False
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    judged_against: str = ""

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
        "judged_against": report.judged_against or None,
        "observed_at": report.state.observed_at,
        "seconds": round(report.seconds, 3),
        "summary": report.counts(),
        "results": [r.to_dict() for r in report.results],
        "findings": [f.to_dict() for f in report.findings],
        "notes": list(report.notes),
    }


def junit_xml(report: VerifyReport, suite: str = "gpulab verify",
              properties: dict[str, str] | None = None) -> str:
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
    if properties:  # e.g. how long each step of `up` took (gpulab up's timings)
        props = ET.SubElement(testsuite, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", {"name": key, "value": value})
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


def write_junit(report: VerifyReport, path: Path,
                properties: dict[str, str] | None = None) -> Path:
    """Write `junit_xml(report, properties=...)` to `path` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(report, properties=properties), encoding="utf-8")
    return path






















