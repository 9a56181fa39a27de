"""`gpulab down`: remove the lab and check nothing of it is left."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpulab.cli.common import JsonOpt, Output, OutputOpt, chosen_output, data, err, guard
from gpulab.cli.options import ClusterContextOpt, NameOpt, ProfileOpt, flags, locked
from gpulab.errors import ExitCode, ProfileError

__all__ = ["register"]


def down_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    output: OutputOpt = Output.text,
    json_out: JsonOpt = False,
    kubeconfig: Annotated[
        Path | None, typer.Option("--kubeconfig", metavar="<path>",
                                  help="A lab in an existing cluster: the kubeconfig that "
                                       "reaches it now (default: the one `up` was given).")
    ] = None,
    context: ClusterContextOpt = None,
) -> None:
    """Remove what the lab's provider made for it, then check nothing is left: on kind
    everything labelled for the lab; in an existing cluster exactly what `up` created there
    (its record), never the cluster or what was there before."""

    def body() -> int:
        from gpulab import core, lab_record

        try:
            loaded, lab = core.resolve_lab(profile, name)
            members = loaded.profile.member_names()
        except ProfileError:  # a recorded document this gpulab no longer takes: down needs none
            record = lab_record.read(name) if name is not None and profile is None else None
            if name is None or record is None or not record.complete:
                raise
            lab, members = name, []
            err.print(f"note: the profile recorded in {record.path} is not valid for this "
                      "gpulab; removing the lab by its record and labels", markup=False)
        # as lab.json recorded it (kind: Docker and kind, connected before the lab is locked)
        provider = core.lab_provider(lab, kubeconfig=kubeconfig, context=context)
        if not provider.exists(lab):  # nothing to delete: no call that deletes, no lock
            return _nothing(lab, chosen_output(output, json_out))
        with locked(lab, f"down{flags(profile, name)}"):
            result = core.remove_lab(lab, provider, members)
        return _down_report(lab, result, chosen_output(output, json_out))

    guard(body)


def _nothing(lab: str, chosen: Output) -> int:
    """`down` of a lab this host has no trace of (no folder, nothing its provider made): said
    once, exit 0 as `kind delete cluster` does, so clean-up scripts can always run it."""
    if chosen is not Output.text:
        data({"lab": lab, "removed": [], "kept": [], "leftovers": []}, chosen)
    else:
        err.print(f"nothing to remove: no lab named '{lab}' on this host", markup=False)
    return 0


def _down_report(lab: str, result: Any, chosen: Output) -> int:
    """`down`'s report: what went, what was kept, and exit 1 when something is left."""
    if chosen is not Output.text:
        data({"lab": lab, "removed": result.removed, "kept": result.kept,
              "leftovers": result.leftovers}, chosen)
    else:
        if not result.removed:
            err.print(f"nothing to remove: no lab named '{lab}' on this host", markup=False)
        for item in result.removed:
            err.print(f" - removed {item}", markup=False)
        for item in result.kept:
            err.print(f" = kept {item}", markup=False)
        for note in result.notes:  # how the provider went about it
            err.print(f"note: {note}", markup=False)
    if result.leftovers:
        err.print(f"error: still present after down: {', '.join(result.leftovers)}",
                  markup=False)
        return int(ExitCode.FAILED)
    if result.removed and chosen is Output.text:
        err.print(f"lab '{lab}' removed; nothing labelled for it is left", markup=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command("down", short_help="Remove the lab and check nothing of it is left.")(
        down_command)
