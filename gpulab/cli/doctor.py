"""`gpulab doctor`: can this host (and cluster) run the lab, with a fix for each problem."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpulab.cli.common import (
    JsonOpt,
    Output,
    OutputOpt,
    add_row,
    chosen_output,
    data,
    emit,
    err,
    guard,
)
from gpulab.cli.options import ClusterContextOpt, ClusterKubeconfigOpt, NameOpt, ProfileOpt
from gpulab.errors import ExitCode
from gpulab.terminal import literal

__all__ = ["register"]


def doctor_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    install_tools: Annotated[
        bool, typer.Option("--install-tools",
                           help="Download the pinned kind and helm into gpulab's cache "
                                "(checksums verified).")
    ] = False,
    kind_binary: Annotated[
        Path | None, typer.Option("--kind", metavar="<path>",
                                  help="A kind binary already on this host (offline hosts): "
                                       "its version is checked against the profile's pin, "
                                       "then it is copied into gpulab's cache.")
    ] = None,
    helm_binary: Annotated[
        Path | None, typer.Option("--helm", metavar="<path>",
                                  help="A helm binary already on this host, as --kind.")
    ] = None,
    no_pull: Annotated[
        bool, typer.Option("--no-pull",
                           help="Do not pull the profile's node image when it is missing "
                                "(about 1 GB, once per host; up needs it anyway): the "
                                "privileged probe then uses an image already on the host.")
    ] = False,
    kubeconfig: ClusterKubeconfigOpt = None,
    context: ClusterContextOpt = None,
    output: OutputOpt = Output.text,
    json_out: JsonOpt = False,
) -> None:
    """Check the host can run the lab: Docker (the engine the docker CLI and kind would use,
    contexts included), the node image (pulled when missing), privileged containers (probed with
    that image and a kind node's options), CPU, memory, disk, inotify, swap, kind, helm, name,
    subnet and host-port collisions. On a cluster you have (--kubeconfig/--context, the
    profile's cluster:, or the lab's record, as for up): helm, the kubeconfig, the cluster's API
    and up's read-only preflight, and Docker only for worker containers on this host. Each
    finding is ok, warn, fail or unknown (a check that could not run: why, and what to run),
    with the fix; exit 4 on a fail."""

    def body() -> int:
        from gpulab import core
        from gpulab.engine.progress import make_reporter
        from gpulab.tools import tool_versions

        loaded, lab = core.resolve_lab(profile, name)
        cluster = core.up_cluster(loaded.profile, lab, kubeconfig, context)
        tools = core.provider_tools(cluster)
        given = {"kind": kind_binary, "helm": helm_binary}  # --kind, --helm
        versions = tool_versions(loaded.profile)
        core.install_tools(install_tools, {tool: (given[tool], versions[tool]) for tool in given
                                           if tool in tools or given[tool] is not None},
                           say=lambda line: err.print(line, markup=False))
        with make_reporter(err, json_lines=False, verbose=False) as reporter:
            findings = core.doctor(loaded.profile, lab, reporter, pull=not no_pull,
                                   cluster=cluster)
        chosen = chosen_output(output, json_out)
        if chosen is not Output.text:
            data([f.to_dict() for f in findings], chosen)
        else:
            _print_findings(findings)
        return int(ExitCode.HOST) if any(f.status == "fail" for f in findings) else 0

    guard(body)


def _print_findings(findings: list[Any]) -> None:
    """Doctor's table (check, status, detail wrapped; a detail naming something too long for
    its column at this width, such as a digest-pinned image, whole under the table instead),
    then each fix whole on its own line, so the commands in it can be copied."""
    from gpulab.cli.common import out
    from gpulab.terminal import output_width, table_fits

    width = output_width(out)
    table, below = _table(findings, room=None)
    if not table_fits(table, width):
        room = width - max(len(f.check) for f in findings) - len("STATUS") - 6
        table, below = _table(findings, room=room)
    emit(table)
    if below:
        emit("\n".join(["", *below]))
    fixes = [f for f in findings if f.fix]
    if fixes:
        emit("\n".join(["", "to fix:", *(f"  {f.check}: {f.fix}" for f in fixes)]))


def _table(findings: list[Any], *, room: int | None) -> tuple[Any, list[str]]:
    """The findings' table, and the details (longest word over `room`) shown under it."""
    from rich.table import Table

    table = Table("CHECK", "STATUS", "DETAIL", box=None)
    table.columns[0].no_wrap = True
    table.columns[2].overflow = "fold"
    colors = {"ok": "green", "warn": "yellow", "fail": "red", "unknown": "magenta"}
    below: list[str] = []
    for f in findings:
        detail = f.detail
        if room is not None and any(len(word) > room for word in detail.split()):
            below.append(f"{f.check}: {detail}")
            detail = "see below"
        add_row(table, f.check, literal(f.status, colors[f.status]), detail)
    return table, below


def register(app: typer.Typer) -> None:
    app.command("doctor", short_help="Check this host can run the lab, with a fix for each "
                                     "problem.")(doctor_command)
