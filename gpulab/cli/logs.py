"""`gpulab logs`: a diagnostics bundle of the lab."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpulab.cli.common import err, guard
from gpulab.cli.options import NameOpt, ProfileOpt, flags

__all__ = ["register"]


def logs_command(
    folder: Annotated[
        Path | None,
        typer.Argument(help="Where to write the bundle (default ./gpulab-logs-LAB-TIME)."),
    ] = None,
    profile: ProfileOpt = None,
    name: NameOpt = None,
    tar: Annotated[bool, typer.Option("--tar", help="Also pack it as FOLDER.tar.gz.")] = False,
) -> None:
    """Collect diagnostics: node journals, container states, each cluster's pods, events, nodes,
    helm releases and HAMi logs. Prints the bundle's path on stdout. A source that cannot be
    reached is noted in the bundle's errors.txt; no bundle is written for a lab that does not
    exist (exit 6). A lab in a cluster gpulab did not make: only what gpulab created there (its
    namespaces' pods, logs, events and Services, its queues, the teams' vClusters), within two
    minutes in all."""

    def body() -> int:
        import time

        from gpulab import core
        from gpulab.paths import check_output_file, check_output_folder

        check_output_folder(folder, "FOLDER")
        if tar and folder is not None:
            check_output_file(folder.with_name(f"{folder.name}.tar.gz"), "--tar")
        loaded, lab = core.resolve_lab(profile, name)
        provider = core.lab_provider(lab)  # in a cluster gpulab did not make: no Docker
        if not provider.exists(lab):  # no bundle of nothing
            raise core.no_lab(lab, flags(profile, name))
        target = folder or Path(f"gpulab-logs-{lab}-{time.strftime('%Y%m%d-%H%M%S')}")
        err.print(f"collecting diagnostics for lab '{lab}' ...", markup=False)
        path = core.collect_logs(lab, target, provider, loaded.profile, tar=tar)
        errors = target / "errors.txt"
        if errors.exists():
            err.print(f"some collectors failed, see {errors}", markup=False)
        typer.echo(str(path))
        return 0

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("logs", short_help="Collect a diagnostics bundle of the lab.")(logs_command)
