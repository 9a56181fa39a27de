"""How verify's verdicts are printed, for a lab and for a cluster gpulab did not build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.cli.common import add_row, emit, err
from gpulab.terminal import literal

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.verify.report import VerifyReport

__all__ = ["cluster_recording", "print_report"]


def print_report(report: VerifyReport, next_step: str = "") -> None:
    """The verdicts as a table on stdout (a pass's evidence wrapped in it; the reason of any
    other result, a finding, and evidence naming something too long for the table's column at
    this width, whole on a line of its own under the table, so names are never cut and the
    commands in it can be copied; checks of one tenant with the same result and reason share one
    line), then the summary, notes and next step on stderr."""
    from gpulab.cli.common import out
    from gpulab.terminal import output_width, table_fits
    from gpulab.verify.report import summary_line, table_rows

    rows = [tuple(row) for row in table_rows(report)]
    width = output_width(out)
    table, below = _table(rows, set())
    if not table_fits(table, width):  # the evidence that names what cannot fit goes below
        headers = ("CHECK", "TENANT", "RESULT", "EVIDENCE OR REASON", "SECONDS")
        others = sum(max(len(str(r[i])) for r in [headers, *rows]) + 2 for i in (0, 1, 2, 4))
        room = width - others - 2
        table, below = _table(rows, {i for i, row in enumerate(rows)
                                     if any(len(w) > room for w in str(row[3]).split())})
    emit(table)
    if below:
        emit("\n".join(["", *below]))
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


def _table(rows: list[tuple[str, ...]], moved: set[int]) -> tuple[Any, list[str]]:
    """The verdicts' table and the lines under it: every result but a pass's reason, and the
    evidence of the rows in `moved`; one line per tenant, result and reason, its checks listed."""
    from rich.table import Table

    from gpulab.verify.report import FINDING

    table = Table("CHECK", "TENANT", "RESULT", "EVIDENCE OR REASON", "SECONDS", box=None)
    table.columns[0].no_wrap = True
    table.columns[2].no_wrap = True
    table.columns[3].overflow = "fold"
    table.columns[4].justify = "right"
    colors = {"PASS": "green", "FAIL": "red", "ERROR": "red", "SKIP": "yellow",
              FINDING: "magenta"}
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for index, (check, tenant, result, detail, seconds) in enumerate(rows):
        shown = detail
        if (result != "PASS" or index in moved) and detail:
            grouped.setdefault((result, tenant, detail), []).append(check)
            shown = "see below"
        add_row(table, check, tenant, literal(result, colors.get(result, "")), shown, seconds)
    below = [f"{result} {_checks(checks)} ({tenant}): {detail}"
             for (result, tenant, detail), checks in grouped.items()]
    return table, below


def cluster_recording(replay: Path | None) -> bool:
    if replay is None:
        return False
    from gpulab.cluster.record import is_cluster_recording

    return is_cluster_recording(replay)
