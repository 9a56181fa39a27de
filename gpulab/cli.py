"""The command line: parse, call the core, render. No logic lives here.

Data goes to stdout, progress and messages to stderr (kind's rule). Every user error is one line
with a stable exit code (gpulab.errors.ExitCode); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gpulab import __version__
from gpulab.errors import ExitCode, GpulabError, ProfileError

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.profile.load import LoadedProfile

__all__ = ["app", "main"]

app = typer.Typer(
    name="gpulab",
    help="Build, verify and remove GPU-sharing Kubernetes labs on one Docker host, no GPU needed.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
profiles_app = typer.Typer(help="List and show the built-in profiles.", no_args_is_help=True)
app.add_typer(profiles_app, name="profiles")

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, highlight=False)


class Output(str, Enum):
    text = "text"
    yaml = "yaml"
    json = "json"


ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", "-p",
        help="Built-in profile name (see `gpulab profiles list`) or a path to a profile file. "
        "Default: kamaji-hami.",
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", help="Lab name; defaults to the profile's `name`."),
]


def _fail(error: GpulabError) -> typer.Exit:
    err.print(f"[bold red]error:[/] {error}", markup=True)
    if isinstance(error, ProfileError):
        for problem in error.problems:
            err.print(f"  {problem}", markup=False)
    return typer.Exit(int(error.exit_code))


def _guard(body: Callable[[], int | None]) -> None:
    """Run a command body; turn user errors into one line and an exit code."""
    try:
        code = body()
    except GpulabError as error:
        raise _fail(error) from None
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if code:
        raise typer.Exit(code)


def _load(profile: str | None) -> LoadedProfile:
    from gpulab.profile.load import load_profile

    return load_profile(profile)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"gpulab {__version__}")
        raise typer.Exit(0)


@profiles_app.command("list")
def profiles_list(
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.text,
) -> None:
    """List built-in profiles with their stack, tenants and description."""

    def body() -> None:
        from gpulab.profile.load import builtin_profiles, parse_profile

        rows: list[dict[str, Any]] = []
        for name, path in builtin_profiles().items():
            try:
                prof = parse_profile(path.read_text(encoding="utf-8"), str(path))
            except ProfileError as error:
                rows.append({"name": name, "path": str(path), "error": str(error)})
                continue
            rows.append({
                "name": name,
                "stack": prof.stack,
                "tenants": [t.name for t in prof.tenants],
                "description": prof.description,
                "path": str(path),
            })
        if output is Output.json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = Table("PROFILE", "STACK", "TENANTS", "DESCRIPTION", box=None)
        for row in rows:
            table.add_row(row["name"], row.get("stack", "invalid"),
                          ", ".join(row.get("tenants", [])), row.get("description") or row.get(
                              "error", ""))
        out.print(table)

    _guard(body)


@profiles_app.command("show")
def profiles_show(
    profile: Annotated[str, typer.Argument(help="Built-in profile name or file path.")],
) -> None:
    """Print a profile's file (validated first), e.g. to copy and edit it."""

    def body() -> None:
        loaded = _load(profile)
        typer.echo(loaded.source.read_text(encoding="utf-8"), nl=False)

    _guard(body)


@app.command()
def plan(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    output: Annotated[
        Output, typer.Option("--output", "-o", help="text (steps), yaml (every object), json")
    ] = Output.text,
) -> None:
    """Show, without changing anything, the steps `up` would run and all they would create.

    The MetalLB range comes from the Docker network when Docker is reachable; otherwise it is
    shown as pending.
    """

    def body() -> None:
        from gpulab import core
        from gpulab.plan import plan_json, plan_text, plan_yaml

        loaded = _load(profile)
        steps, facts_note = core.plan_steps(loaded.profile, name, probe_host=True)
        if output is Output.yaml:
            typer.echo(plan_yaml(steps), nl=False)
            return
        if output is Output.json:
            typer.echo(plan_json(steps))
            return
        lab = core.lab_name(loaded.profile, name)
        err.print(f"Plan for lab '{lab}' from {loaded.source}", markup=False)
        if facts_note:
            err.print(f"note: {facts_note}", markup=False)
        table = Table("#", "STEP", "WHAT", "CREATES", box=None)
        for index, (step, title, lines) in enumerate(plan_text(steps), start=1):
            table.add_row(str(index), step, title, "\n".join(lines))
        out.print(table)

    _guard(body)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interrupt outside a guarded body
        sys.exit(int(ExitCode.INTERRUPTED))
