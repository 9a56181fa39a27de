"""`gpulab labs` (and `ls`): every lab on this host and its state."""

from __future__ import annotations

import typer

from gpulab.cli.common import Output, OutputOpt, add_row, data, emit, err, guard
from gpulab.errors import GpulabError

__all__ = ["register"]


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def labs_command(output: OutputOpt = Output.text) -> None:
    """List every lab on this host (state folder and Docker labels): profile, stack, state
    (ready, partial, broken; unreachable for a lab in an existing cluster whose API does not
    answer), tenants, age, kubeconfigs, cluster (kind's, or an existing cluster's server and
    context); and leftovers without state."""

    def body() -> int:
        from rich.table import Table

        from gpulab import core

        try:
            reader = core.read_docker(timeout=3)
        except GpulabError as error:
            err.print(f"warning: Docker not reachable ({error}); states of kind labs are "
                      "unknown", markup=False)
            reader = None
        found = core.labs(reader)
        if output is not Output.text:
            data(found, output)
            return 0
        if not found["labs"] and not found["leftovers"]:
            err.print("no labs on this host (gpulab up builds one)", markup=False)
            return 0
        table = Table("NAME", "PROFILE", "STACK", "STATE", "TENANTS", "AGE", "KUBECONFIGS",
                      "CLUSTER", box=None)
        for lab in found["labs"]:
            cluster = core.cluster_text(lab["cluster"])
            add_row(table, lab["name"], lab["profile"] or "-", lab["stack"] or "-",
                    lab["state"], ",".join(lab["tenants"]) or "-", _age(lab["age_seconds"]),
                    str(len(lab["kubeconfigs"])), cluster)
        emit(table)
        for left in found["leftovers"]:
            err.print(f"leftover: lab '{left['name']}' has containers but no state "
                      f"({', '.join(left['containers'])}); remove with `{left['remove']}`",
                      markup=False)
        return 0

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("labs", short_help="List every lab on this host and its state.")(labs_command)
    app.command("ls", help="Alias of `gpulab labs`.", short_help="Alias of `gpulab labs`.")(
        labs_command)
