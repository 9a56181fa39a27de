"""Verify's outputs, for every stack: the report value, table rows, JSON and JUnit XML.

Recordings on disk are gpulab.verify.recording's (format) and each stack's `record.py` (states).

Findings are known weaknesses verify demonstrates on the lab: they are shown (table row `FINDING`,
JSON `findings`, a JUnit testcase with a `skipped` element of type `finding`) but are neither a
pass nor a failure, so they never change the exit code.

A report may judge fewer checks than its stack has (`--tc`, or a recording made with `--tc`): the
summary says how many of them (`5 of 8 checks`), and the checks a replayed recording does not
hold are rows of their own (`NOT RECORDED` in the table, `skip` with `not_recorded: true` in JSON,
a JUnit `skipped` element of type `not-recorded`), never silently missing.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gpulab.errors import ExitCode
from gpulab.terminal import neutral
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from gpulab.verify.result import Status

__all__ = [
    "FINDING",
    "NOT_RECORDED",
    "TABLE_HEADER",
    "Finding",
    "ObservedState",
    "VerifyReport",
    "exit_code",
    "junit_xml",
    "not_recorded_result",
    "report_json",
    "summary_line",
    "table_rows",
    "write_junit",
]

TABLE_HEADER = ("check", "tenant", "result", "evidence or reason", "seconds")
FINDING = "FINDING"
NOT_RECORDED = "NOT RECORDED"


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
    all_checks: every check of the stack, in order (empty: not known, e.g. `verify
        --kubeconfig`); a report judging fewer says so (`coverage`).
    not_recorded: the checks a replayed recording does not hold (it was made with `--tc`):
        each has a `skip` result per member saying so (`not_recorded_result`).
    """

    lab: str
    results: tuple[CheckResult, ...]
    state: ObservedState
    seconds: float = 0.0
    replayed: bool = False
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    judged_against: str = ""
    all_checks: tuple[str, ...] = ()
    not_recorded: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no check failed or errored (skips are fine)."""
        return all(self.results)

    def counts(self) -> dict[Status, int]:
        out: dict[Status, int] = {"pass": 0, "fail": 0, "error": 0, "skip": 0}
        for result in self.results:
            out[result.status] += 1
        return out

    def is_not_recorded(self, result: CheckResult) -> bool:
        """`result` stands for a check the replayed recording does not hold."""
        return result.status == "skip" and result.id in self.not_recorded

    def judged(self) -> tuple[str, ...]:
        """The checks this report judged, in order (not-recorded ones left out)."""
        ids = dict.fromkeys(r.id for r in self.results if r.id not in self.not_recorded)
        return tuple(ids)

    def coverage(self) -> str:
        """'5 of 8 checks' when the report judged fewer checks than its stack has; '' when it
        judged them all (or the stack's checks are not known)."""
        if not self.all_checks:
            return ""
        judged = [c for c in self.judged() if c in self.all_checks]
        if len(judged) >= len(self.all_checks):
            return ""
        return f"{len(judged)} of {len(self.all_checks)} checks"


def not_recorded_result(check: str, member: str, recorded: Sequence[str]) -> CheckResult:
    """The result of a check the replayed recording does not hold (it was made with `--tc`):
    `skip`, with a reason saying so: not a pass, and no property was judged."""
    held = ", ".join(recorded) or "no check"
    return CheckResult(
        check, member, "skip",
        reason=f"not recorded: the recording holds {held} only (it was made with --tc), so "
               f"{check} was not judged; record again without --tc (gpulab verify --record DIR)")


def summary_line(report: VerifyReport) -> str:
    """The one line under the table: counts, findings, how many of the stack's checks were
    judged, and for a replay the profile it was judged against, e.g. '10 pass, 6 not recorded;
    5 of 8 checks (TC-06, TC-07, TC-08 not in the recording) (replayed against the recording's
    profile)'."""
    counts = report.counts()
    unrecorded = sum(1 for r in report.results if report.is_not_recorded(r))
    counts["skip"] -= unrecorded
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    if unrecorded:
        parts.append(f"{unrecorded} not recorded")
    text = ", ".join(parts) or "no result"
    if report.findings:
        count = len(report.findings)
        text += f", {count} finding{'s' if count > 1 else ''} (not a pass)"
    if coverage := report.coverage():
        text += f"; {coverage}"
        if report.not_recorded:
            text += f" ({', '.join(report.not_recorded)} not in the recording)"
    if report.replayed:
        text += f" (replayed against {report.judged_against})"
    return text


def exit_code(report: VerifyReport) -> ExitCode:
    """0 (OK) when every check passed or was skipped; 3 (CHECKS_FAILED) when any failed or
    errored (an error means the property could not be established, which is not a pass).
    Findings do not count either way."""
    return ExitCode.OK if report.ok else ExitCode.CHECKS_FAILED


def table_rows(report: VerifyReport) -> list[tuple[str, str, str, str, str]]:
    """Rows under TABLE_HEADER: ('TC-05 sharing', 'tenant-a', 'PASS', evidence|reason, '1.2'),
    then one `FINDING` row per finding."""
    rows = [
        (f"{r.id} {r.title}".strip(), r.tenant,
         NOT_RECORDED if report.is_not_recorded(r) else r.status.upper(), r.detail,
         f"{r.seconds:.1f}")
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
        "checks": {"judged": len(report.judged()), "of": len(report.all_checks) or None,
                   "not_recorded": list(report.not_recorded)},
        "results": [{**r.to_dict(), "not_recorded": True} if report.is_not_recorded(r)
                    else r.to_dict() for r in report.results],
        "findings": [f.to_dict() for f in report.findings],
        "notes": list(report.notes),
    }


# Besides the controls `neutral` escapes, what XML 1.0 does not allow (its Char production):
# surrogates and U+FFFE, U+FFFF.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """Cluster or lab text as JUnit can hold it: control characters as escapes (`\\x1b`, as
    on the terminal), since XML 1.0 forbids most of C0 and a CI log would show the rest raw."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", neutral(text))


def junit_xml(report: VerifyReport, suite: str = "gpulab verify",
              properties: dict[str, str] | None = None) -> str:
    """JUnit XML: one testsuite, one testcase per check and tenant (classname = tenant,
    name = 'TC-05 sharing'); failure/error/skipped carry the reason as message and the evidence
    as text; passes carry the evidence in system-out. A finding is a testcase with
    `<skipped type="finding" message="FINDING: …">` (JUnit's only outcome that is neither a pass
    nor a failure; `type` tells it from a skipped check) and the advice as text. A replay is
    never passed off as a run: its suites are named `… (replayed)` and carry the properties
    `gpulab.replayed=true` and `gpulab.judged_against`."""
    if report.replayed:
        suite = f"{suite} (replayed)"
        properties = {"gpulab.replayed": "true",
                      "gpulab.judged_against": report.judged_against or "the recording's "
                                                                      "profile",
                      **(properties or {})}
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
    properties = dict(properties or {})
    if coverage := report.coverage():
        properties["gpulab.checks"] = coverage
    if report.not_recorded:
        properties["gpulab.not_recorded"] = ",".join(report.not_recorded)
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
        if report.is_not_recorded(result):
            element.set("type", "not-recorded")
        elif result.status != "skip":
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
    for node in root.iter():  # names, messages and evidence come from clusters and labs
        node.attrib = {key: _xml(value) for key, value in node.attrib.items()}
        if node.text:
            node.text = _xml(node.text)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: VerifyReport, path: Path,
                properties: dict[str, str] | None = None) -> Path:
    """Write `junit_xml(report, properties=...)` to `path` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(report, properties=properties), encoding="utf-8")
    return path






















