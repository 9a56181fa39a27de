"""`gpulab status`: the lab's clusters, nodes and GPU cards in use."""

from __future__ import annotations

import typer

from gpulab.cli.common import Output, OutputOpt, data, emit, guard
from gpulab.cli.options import NameOpt, ProfileOpt, flags
from gpulab.errors import HostError

__all__ = ["register"]


def status_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Show the lab: management cluster, each tenant's control plane, workers and nodes, and per
    GPU card the memory and cores in use with the pods using them."""

    def body() -> int:
        from gpulab import core

        loaded, lab = core.resolve_lab(profile, name)
        info = core.status(lab, core.lab_provider(lab), loaded.profile)
        if not info["exists"]:
            raise core.no_lab(lab, flags(profile, name))
        mgmt = info["management"]
        if output is not Output.text:
            data(info, output)
        else:
            emit(f"lab {lab}: management cluster {mgmt['cluster']} is {mgmt['state']}")
            for table in core.status_tables(loaded.profile, info):
                emit(table)
        if mgmt.get("api_error"):  # shown above as it is; the lab cannot be used (exit 4)
            again = flags(profile, name) or f" --name {lab}"
            raise HostError(mgmt["api_error"], hint=f"gpulab up{again} builds or repairs "
                            f"it; gpulab logs{again} collects diagnostics")
        return 0

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("status", short_help="Show the lab's clusters, nodes and GPU cards in use.")(
        status_command)
