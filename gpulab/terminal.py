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

__all__ = ["READABLE_WIDTH", "SafeConsole", "literal", "neutral", "output_width"]

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
