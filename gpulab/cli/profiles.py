"""`gpulab profiles list|show`: the built-in profiles."""

from __future__ import annotations

from typing import Annotated

import typer

from gpulab.cli.common import HELP_OPTIONS, Output, OutputOpt, add_row, data, emit, guard

__all__ = ["register"]


def profiles_list(output: OutputOpt = Output.text) -> None:
    """List built-in profiles with their stack, tenants and description (exit 4 when the install
    has none)."""

    def body() -> None:
        from rich.table import Table

        from gpulab import core

        rows = core.builtin_profile_rows()
        if output is not Output.text:
            data(rows, output)
            return
        table = Table("PROFILE", "STACK", "TENANTS", "DESCRIPTION", box=None)
        for row in rows:
            add_row(table, row["name"], row.get("stack", "invalid"),
                    ", ".join(row.get("tenants", [])), row.get("description") or row.get(
                        "error", ""))
        emit(table)

    guard(body)


def profiles_show(
    profile: Annotated[str, typer.Argument(help="Built-in profile name or file path.")],
) -> None:
    """Print a profile's file (validated first), e.g. to copy and edit it."""

    def body() -> None:
        from gpulab import core

        loaded = core.load(profile)
        typer.echo(loaded.source.read_text(encoding="utf-8"), nl=False)

    guard(body)


def register(app: typer.Typer) -> None:
    profiles_app = typer.Typer(help="List and show the built-in profiles.", no_args_is_help=True,
                               context_settings=HELP_OPTIONS)
    profiles_app.command("list", short_help="List the built-in profiles.")(profiles_list)
    profiles_app.command("show", short_help="Print a profile's file, to copy and edit it.")(
        profiles_show)
    app.add_typer(profiles_app, name="profiles")
