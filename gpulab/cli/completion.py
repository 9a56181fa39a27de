"""`gpulab completion SHELL`: the shell completion script."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

__all__ = ["register"]


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"
    pwsh = "pwsh"


def _shell(value: str) -> Shell:
    try:
        return Shell(value.strip().lower())
    except ValueError:
        choices = ", ".join(s.value for s in Shell)
        raise typer.BadParameter(f"'{value}' is not one of {choices}") from None


def completion_command(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh, fish, powershell or pwsh.",
                                           parser=_shell, metavar="SHELL")],
) -> None:
    """Print the completion script for SHELL (commands, lab names, profiles, tenants, check
    ids), as kind, kubectl and helm do; e.g. `source <(gpulab completion bash)` or
    `gpulab completion zsh > "${fpath[1]}/_gpulab"`."""
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="gpulab", complete_var="_GPULAB_COMPLETE",
                                     shell=shell.value))


def register(app: typer.Typer) -> None:
    app.command("completion", short_help="Print the shell completion script for bash, zsh, "
                                         "fish or PowerShell.")(completion_command)
