"""The command line: one module per command, each parses, calls one use case (`gpulab.core`)
and renders. No logic lives here.

Data goes to stdout, progress and messages to stderr (kind's rule). Every user error is one line
with a stable exit code (gpulab.errors.ExitCode, gpulab.cli.common.guard); anything else is a
bug and keeps its traceback. A command module imports what its body uses inside the body, so
`gpulab --help` loads only Typer and these modules.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from gpulab import __version__
from gpulab.cli import (
    completion,
    doctor,
    down,
    join,
    kubeconfig,
    labs,
    logs,
    plan,
    profiles,
    status,
    up,
    verify,
    version,
)
from gpulab.cli.common import HELP_OPTIONS
from gpulab.errors import ExitCode

__all__ = ["app", "main"]

# `gpulab --help` lists the commands in the order a lab goes through them; Typer would put the
# commands with subcommands of their own (verify, profiles) last.
ORDER = ("plan", "up", "down", "status", "doctor", "kubeconfig", "join", "verify", "logs", "labs",
         "ls", "version", "completion", "profiles")


class _InOrder(TyperGroup):
    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))


app = typer.Typer(
    name="gpulab",
    cls=_InOrder,
    help="Build, verify and remove GPU-sharing Kubernetes labs on one Docker host, no GPU needed.",
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, pwsh)
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"gpulab {__version__}")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:  # bare `gpulab`: help on stdout, success (kubectl, kind)
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


for _command in (profiles, plan, up, down, status, doctor, kubeconfig, join, verify, logs, labs,
                 version, completion):
    _command.register(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interrupt outside a guarded body
        sys.exit(int(ExitCode.INTERRUPTED))
