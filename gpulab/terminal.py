"""Text that fits where it goes, and is printed as it is.

On a terminal, tables wrap to its width; in pipes and CI logs to `$COLUMNS`, else to
`READABLE_WIDTH`, without trailing padding. Text that comes from a profile, a cluster, a tool or
the user (names, messages, paths) is never read as Rich markup (`[red]`) or emoji codes
(`:100:`), and its control characters (ESC, BEL, CR, ...) are shown as escapes (`\\x1b`), so a
name can neither restyle nor rewrite the terminal. Commands and URLs are printed on lines of
their own (never cut inside a table cell), so they can be copied.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.table import Table

__all__ = ["READABLE_WIDTH", "SafeConsole", "literal", "neutral", "output_width", "records",
           "table_fits"]

READABLE_WIDTH = 120  # pipes and CI logs without $COLUMNS
# C0 controls but tab and newline, DEL, C1 controls; the bidi overrides that reorder text; and
# lone surrogates (a JSON `\ud800` from an API server), which no terminal encoding can write.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def neutral(text: str) -> str:
    """`text` with its control characters shown as escapes: ESC → `\\x1b`, BEL → `\\x07`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def literal(text: str, style: str = "") -> Text:
    """User or cluster text as Rich shows it: no markup, no emoji, control characters escaped."""
    return Text(neutral(text), style=style)


class SafeConsole(Console):
    """A Console whose strings never carry control characters to the terminal and never turn
    emoji codes into emoji. Markup stays as each call asks (`markup=False` for messages; table
    cells built by gpulab escape what they did not write)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"highlight": False, "soft_wrap": True, "emoji": False, **kwargs})

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(neutral(text), **kwargs)


def output_width(console: Console, environ: Mapping[str, str] | None = None) -> int:
    """The terminal's width; elsewhere `$COLUMNS` when it is a number, else READABLE_WIDTH."""
    if console.is_terminal:
        return console.size.width
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else READABLE_WIDTH


def _plain(cell: Any) -> str:
    """A cell's text as the table shows it ('' for what is not text)."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return ""


def _cells(table: Table) -> list[list[str]]:
    """The table's rows, each cell's plain text."""
    columns = [[_plain(cell) for cell in column.cells] for column in table.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def table_fits(table: Table, width: int) -> bool:
    """True when the table printed `width` columns wide cuts no word of a header or cell (Rich
    folds a word longer than its column, and a no_wrap column ends in '…')."""
    import io

    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False,
                      emoji=False, markup=False)
    with console.capture() as captured:
        console.print(table)
    lines = captured.get().splitlines()
    words = {word for row in [[_plain(c.header) for c in table.columns], *_cells(table)]
             for cell in row for word in cell.split()}
    return all(any(word in line for line in lines) for word in words)


def records(table: Table, width: int) -> list[str]:
    """The table as one block per row, for a terminal too narrow for it: the first cell, then
    `HEADER: value` per other cell, wrapped between words; a word longer than the width is
    printed whole on a line of its own (never cut)."""
    import textwrap

    headers = [_plain(c.header) for c in table.columns]
    lines = [_plain(table.title)] if table.title else []

    def wrapped(text: str, indent: str, more: str) -> list[str]:
        out: list[str] = []
        for index, part in enumerate(text.splitlines() or [""]):
            out += textwrap.wrap(part, max(width, 20), initial_indent=indent if index == 0
                                 else more, subsequent_indent=more, break_long_words=False,
                                 break_on_hyphens=False) or [indent.rstrip()]
        return out

    for row in _cells(table):
        first, *rest = row
        lines += wrapped(first, "", "  ")
        for header, value in zip(headers[1:], rest, strict=True):
            if value.strip():
                lines += wrapped(value, f"  {header}: " if header else "  ", "    ")
    return lines
