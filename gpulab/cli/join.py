"""`gpulab join`: the commands that make a machine a worker of a tenant (existing cluster)."""

from __future__ import annotations

from typing import Annotated

import typer

from gpulab.cli.common import guard
from gpulab.cli.options import NameOpt, ProfileOpt, complete_members, flags

__all__ = ["register"]


def join_command(
    tenant: Annotated[str, typer.Argument(help="Tenant name.",
                                          autocompletion=complete_members)],
    profile: ProfileOpt = None,
    name: NameOpt = None,
    node: Annotated[
        str | None, typer.Option("--node", metavar="<str>",
                                 help="The machine's node name (default: "
                                      "gpulab-LAB-TENANT-worker).")
    ] = None,
    ttl: Annotated[
        str, typer.Option("--ttl", metavar="<duration>",
                          help="How long the join token lives, 1m to 24h.")
    ] = "1h",
) -> None:
    """For a lab on an existing cluster: create a short-lived bootstrap token in the tenant and
    print the kubeadm join for the machine, its labels, and HAMi with the NVIDIA device
    plugin (docs/own-cluster.md)."""

    def body() -> int:
        from gpulab import core

        seconds = core.join_ttl(ttl)
        loaded, lab = core.resolve_lab(profile, name)
        core.require_lab(lab, flags(profile, name))
        typer.echo(core.join(lab, loaded.profile, tenant, node=node, ttl_seconds=seconds),
                   nl=False)
        return 0

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("join", short_help="Print the commands that join a machine to a tenant "
                                   "(existing cluster).")(join_command)
