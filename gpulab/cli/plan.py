"""`gpulab plan`: every step and object `up` would create, changing nothing."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from gpulab.cli.common import add_row, emit, err, guard
from gpulab.cli.options import (
    ClusterContextOpt,
    ClusterKubeconfigOpt,
    FakeGpuNodeOpt,
    NameOpt,
    ProfileOpt,
    complete_members,
)
from gpulab.errors import UsageError

__all__ = ["register"]


class PlanOutput(str, Enum):
    text = "text"
    yaml = "yaml"
    json = "json"
    manifests = "manifests"


def _plan_output(value: str) -> PlanOutput:
    """`plan -o`: the outputs of every command, and `manifests`."""
    try:
        return PlanOutput(value.strip().lower())
    except ValueError:
        choices = ", ".join(o.value for o in PlanOutput)
        raise typer.BadParameter(f"'{value}' is not one of {choices}") from None


def plan_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    kubeconfig: ClusterKubeconfigOpt = None,
    context: ClusterContextOpt = None,
    fake_gpu_node: FakeGpuNodeOpt = None,
    output: Annotated[
        PlanOutput, typer.Option("--output", "-o", parser=_plan_output,
                                 help="text (steps), yaml or json (steps with every object), "
                                      "manifests (a cluster's objects for kubectl apply -f -)")
    ] = PlanOutput.text,
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="With -o manifests: the cluster whose "
                                                   "objects to print (management, a tenant or "
                                                   "a team).", autocompletion=complete_members)
    ] = None,
) -> None:
    """Show, without changing anything, the steps `up` would run and all they would create.

    The MetalLB range comes from the Docker network when Docker is reachable; otherwise it is
    shown as pending. `-o manifests --cluster NAME | kubectl apply -f -` applies the objects
    gpulab applies itself to that cluster; its Helm releases and upstream manifests are listed
    as comments in their place.
    """

    def body() -> None:
        from gpulab import core
        from gpulab.engine.plan import plan_json, plan_text, plan_yaml

        if cluster is not None and output is not PlanOutput.manifests:
            raise UsageError("--cluster goes with -o manifests")
        # what `up` with the same flags would do: a lab's recorded profile and cluster
        loaded, lab = core.resolve_lab(profile, name, for_up=True)
        loaded = core.with_fake_gpu_nodes(loaded, lab, fake_gpu_node, kubeconfig, context)
        steps, facts_note = core.plan_steps(
            loaded.profile, lab, probe_host=True,
            cluster=core.up_cluster(loaded.profile, lab, kubeconfig, context))
        notes = [f"note: {line}" for line in facts_note.splitlines()]
        if notes and output is not PlanOutput.text:
            err.print("\n".join(notes), markup=False)
        if output is PlanOutput.manifests:
            typer.echo(core.cluster_manifests(loaded.profile, steps, cluster), nl=False)
            return
        if output is PlanOutput.yaml:
            typer.echo(plan_yaml(steps), nl=False)
            return
        if output is PlanOutput.json:
            typer.echo(plan_json(steps))
            return
        from rich.table import Table

        err.print(f"Plan for lab '{lab}' from {loaded.source}", markup=False)
        if notes:
            err.print("\n".join(notes), markup=False)
        table = Table("#", "STEP", "WHAT", "CREATES", box=None)
        table.columns[3].overflow = "fold"
        for index, (step, title, lines) in enumerate(plan_text(steps), start=1):
            add_row(table, str(index), step, title, "\n".join(lines))
        emit(table)

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("plan", short_help="Show every step and object `up` would create, changing "
                                   "nothing.")(plan_command)
