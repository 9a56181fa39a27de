"""How verify's verdicts are printed, for a lab and for a cluster gpulab did not build."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.cli.common import add_row, emit, err
from gpulab.terminal import literal

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.verify.report import VerifyReport

__all__ = ["cluster_recording", "print_report"]


def print_report(report: VerifyReport, next_step: str = "") -> None:
    """The verdicts as a table on stdout (a pass's evidence wrapped in it; the reason of any
    other result, and a finding, whole on a line of its own under the table, so the commands in
    it can be copied; checks of one tenant with the same result and reason share one line),
    then the summary, notes and next step on stderr."""
    from rich.table import Table

    from gpulab.verify.report import FINDING, summary_line, table_rows

    table = Table("CHECK", "TENANT", "RESULT", "EVIDENCE OR REASON", "SECONDS", box=None)
    table.columns[0].no_wrap = True
    table.columns[2].no_wrap = True
    table.columns[3].overflow = "fold"
    table.columns[4].justify = "right"
    colors = {"PASS": "green", "FAIL": "red", "ERROR": "red", "SKIP": "yellow",
              FINDING: "magenta"}
    below: dict[tuple[str, str, str], list[str]] = {}  # one line per reason, its checks listed
    for check, tenant, result, detail, seconds in table_rows(report):
        shown = detail
        if result != "PASS" and detail:
            below.setdefault((result, tenant, detail), []).append(check)
            shown = "see below"
        add_row(table, check, tenant, literal(result, colors.get(result, "")), shown, seconds)
    emit(table)
    if below:
        emit("\n".join(["", *(f"{result} {_checks(checks)} ({tenant}): {detail}"
                               for (result, tenant, detail), checks in below.items())]))
    err.print(summary_line(report), markup=False)
    for note in report.notes:
        err.print(f"warning: {note}", markup=False)
    if not report.ok and not report.replayed:
        err.print("next: " + (next_step or f"gpulab logs --name {report.lab} collects "
                              "diagnostics; --keep leaves the test pods for inspection"),
                  markup=False)


def _checks(checks: list[str]) -> str:
    """One check as the table names it; several with the same reason by their ids."""
    return checks[0] if len(checks) == 1 else ", ".join(c.split(" ", 1)[0] for c in checks)


def cluster_recording(replay: Path | None) -> bool:
    if replay is None:
        return False
    from gpulab.cluster.record import is_cluster_recording

    return is_cluster_recording(replay)
