"""What every command shares: the consoles, `-o`, errors as one line, and how output is printed.

Data goes to stdout, progress and messages to stderr (kind's rule). Every user error is one line
with a stable exit code (gpulab.errors.ExitCode); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpulab.errors import ExitCode, GpulabError, PreflightError, ProfileError
from gpulab.terminal import SafeConsole, literal, output_width, records, table_fits

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = ["HELP_OPTIONS", "REPORT_A_BUG", "JsonOpt", "Output", "OutputOpt", "VerboseOpt",
           "add_row", "chosen_output", "data", "emit", "err", "guard", "out", "parse_output"]

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

# Markup and emoji are never read from user or cluster text, control characters are escaped
# (gpulab.terminal); tables wrap to the terminal, else $COLUMNS or a readable width (emit).
out = SafeConsole()
err = SafeConsole(stderr=True)


class Output(str, Enum):
    text = "text"
    yaml = "yaml"
    json = "json"


def parse_output(value: str) -> Output:
    """`-o` as kubectl takes it; a wrong value lists the choices."""
    try:
        return Output(value.strip().lower())
    except ValueError:
        choices = ", ".join(o.value for o in Output)
        raise typer.BadParameter(f"'{value}' is not one of {choices}") from None


OutputOpt = Annotated[Output, typer.Option("--output", "-o", parser=parse_output,
                                           help="text, yaml or json")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show each step's details.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Deprecated: use -o json.")]


def _fail(error: GpulabError) -> typer.Exit:
    from rich.text import Text

    err.print(Text.assemble(("error:", "bold red"), " ", literal(str(error))))
    if isinstance(error, (ProfileError, PreflightError)):  # one line each, fixes their own
        for problem in error.problems:
            err.print(f"  {problem}", markup=False)
    return typer.Exit(int(error.exit_code))


REPORT_A_BUG = ("this is a bug in gpulab: please report it with the output above and "
                "`gpulab version -o json`")


def guard(body: Callable[[], int | None]) -> None:
    """Run a command body; turn user errors into one line and an exit code. A file or system
    error at the edges (a disk full, a permission, a path) is one line too; anything else is a
    bug: its traceback, then one line asking to report it."""
    try:
        code = body()
    except GpulabError as error:
        raise _fail(error) from None
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        err.print(f"error: {error.strerror or error}{where}", markup=False)
        raise typer.Exit(int(ExitCode.FAILED)) from None
    except typer.Exit:
        raise
    except Exception:
        import traceback

        traceback.print_exc()
        err.print(f"error: {REPORT_A_BUG}", markup=False)
        raise typer.Exit(int(ExitCode.FAILED)) from None
    if code:
        raise typer.Exit(code)


def emit(renderable: Any, console: Console | None = None) -> None:
    """Print a table (or text, taken literally) on stdout (or `console`): tables wrap to the
    terminal; in pipes and CI logs to $COLUMNS or gpulab.terminal.READABLE_WIDTH, without
    trailing padding or control codes. A table that would cut a word (a name, a digest) at
    that width is printed as one block per row instead (gpulab.terminal.records). Lines of
    text are never cut (soft wrap)."""
    from rich.table import Table

    console = console or out
    if isinstance(renderable, str):
        renderable = literal(renderable)
    width = output_width(console)
    if isinstance(renderable, Table) and not table_fits(renderable, width):
        renderable = literal("\n".join(records(renderable, width)))  # no name or word cut
    if console.is_terminal:
        console.print(renderable)
        return
    console.width = width
    with console.capture() as captured:
        console.print(renderable)
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    stream = sys.stderr if console is err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def add_row(table: Table, *cells: str | Text) -> None:
    """A row of text taken literally (names and messages from profiles, clusters, tools)."""
    table.add_row(*(literal(c) if isinstance(c, str) else c for c in cells))


def chosen_output(output: Output, json_alias: bool) -> Output:
    """`-o`, with the deprecated `--json` still meaning `-o json` (and saying so once)."""
    if json_alias:
        err.print("warning: --json is deprecated; use -o json", markup=False)
        return Output.json
    return output


def data(value: Any, output: Output) -> None:
    """Machine-readable output on stdout."""
    if output is Output.yaml:
        import yaml

        typer.echo(yaml.safe_dump(value, sort_keys=False), nl=False)
    else:
        import json

        typer.echo(json.dumps(value, indent=2))
