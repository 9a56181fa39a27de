"""`gpulab verify`: the acceptance checks on a lab (all of them, or one per subcommand: `gpulab
verify tc-05`), on a recording (`verify replay DIR`), or on any HAMi or KAI cluster (`verify
cluster`). Each check's `--help` says what it proves, what it reads and how it fails: text
derived from the checks' docs (verify_checks.json, written by `python -m tests.check_help`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from gpulab.cli.common import (
    HELP_OPTIONS,
    JsonOpt,
    Output,
    OutputOpt,
    VerboseOpt,
    chosen_output,
    err,
    guard,
)
from gpulab.cli.options import NameOpt, ProfileOpt
from gpulab.cli.verify_lab import replay_source, run_verify
from gpulab.cli.verify_options import (
    ContextsOpt,
    DiscoveryTimeoutOpt,
    DryRunOpt,
    InspectOpt,
    JunitOpt,
    KeepOpt,
    KubeconfigsOpt,
    NamespaceOpt,
    RecordOpt,
    ReplayOpt,
    RequestTimeoutOpt,
    TcOpt,
)
from gpulab.errors import UsageError

__all__ = ["CHECKS", "register"]

# Every check of every stack: id, stack, title, proves, reads, fails (tests.check_help).
CHECKS: list[dict[str, str]] = json.loads(
    Path(__file__).with_name("verify_checks.json").read_text(encoding="utf-8"))
EXIT_CODES = ("Exit 0 when every check passes, 3 when any fails, 2 for usage errors, 4 when the "
              "lab is not up or its API (or a --kubeconfig cluster) cannot be reached, 5 when "
              "another command holds the lab, 6 when there is no such lab. Findings do not "
              "change the exit code.")
CLUSTER_FLAGS = ("--kubeconfig", "--context", "--inspect", "--dry-run", "--namespace",
                 "--request-timeout", "--discovery-timeout")


def verify_command(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    name: NameOpt = None,
    tc: TcOpt = None,
    keep: KeepOpt = False,
    junit: JunitOpt = None,
    output: OutputOpt = Output.text,
    json_out: JsonOpt = False,
    record: RecordOpt = None,
    replay: ReplayOpt = None,
    kubeconfig: KubeconfigsOpt = None,
    context: ContextsOpt = None,
    request_timeout: RequestTimeoutOpt = "30s",
    discovery_timeout: DiscoveryTimeoutOpt = "60s",
    inspect: InspectOpt = False,
    dry_run: DryRunOpt = False,
    namespace: NamespaceOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run the acceptance checks on the lab (TC-01..TC-08 for kamaji-hami, KAI-01..KAI-08 for
    vcluster-kai), with evidence or reasons, and any finding (a known gap shown on the lab).
    One check: `gpulab verify tc-05` (its --help says what it proves, reads and how it fails).
    A recording: `gpulab verify replay DIR`. A HAMi or KAI cluster gpulab did not build:
    `gpulab verify cluster --kubeconfig FILE` (GPU-0x/GPU-1x checks; --inspect and --dry-run
    only look). --replay, --kubeconfig, --context, --inspect and --dry-run here still work and
    are deprecated.

    Exit 0 when every check passes, 3 when any fails, 2 for usage errors, 4 when the lab is not
    up or its API (or a --kubeconfig cluster) cannot be reached, 5 when another command holds
    the lab, 6 when there is no such lab. Findings do not change the exit code.
    """
    given = _given(ctx)
    if ctx.invoked_subcommand is not None:
        if given:
            guard(lambda: _refuse(f"give {', '.join(given)} after the subcommand: gpulab "
                                  f"verify {ctx.invoked_subcommand} {' '.join(given)} ..."))
        return

    def body() -> int:
        old = [flag for flag in given if flag in ("--replay", *CLUSTER_FLAGS)]
        if old:
            instead = "replay DIR" if "--replay" in old else "cluster"
            err.print(f"warning: verify {' '.join(old)} is deprecated; use gpulab verify "
                      f"{instead}", markup=False)
        return run_verify(profile=profile, name=name, tc=tc, keep=keep, junit=junit,
                          chosen=chosen_output(output, json_out), record=record, replay=replay,
                          kubeconfig=kubeconfig, context=context,
                          request_timeout=request_timeout, discovery_timeout=discovery_timeout,
                          inspect=inspect, dry_run=dry_run, namespace=namespace,
                          verbose=verbose)

    guard(body)


def _given(ctx: typer.Context) -> list[str]:
    """The options given on the command line, not left at their defaults."""
    return [p.opts[0] for p in ctx.command.params if p.name is not None and getattr(
        ctx.get_parameter_source(p.name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")]


def _refuse(message: str) -> None:
    raise UsageError(message)


def _check_command(check: str) -> Callable[..., None]:
    """`gpulab verify <check>`: the lab's verify with only this check (as --tc CHECK)."""

    def run_check(
        profile: ProfileOpt = None,
        name: NameOpt = None,
        keep: KeepOpt = False,
        junit: JunitOpt = None,
        output: OutputOpt = Output.text,
        record: RecordOpt = None,
        verbose: VerboseOpt = False,
    ) -> None:
        guard(lambda: run_verify(profile=profile, name=name, tc=check, keep=keep, junit=junit,
                                 chosen=output, record=record, verbose=verbose))

    return run_check


def check_help(check: dict[str, str]) -> str:
    """A check subcommand's --help: what it proves, what it reads, how it fails."""
    return "\n\n".join([
        f"{check['id']} {check['title']} ({check['stack']} labs): run only this check on the "
        f"lab, as --tc {check['id']}.", check["proves"], check["reads"], check["fails"],
        EXIT_CODES])


def replay_command(
    directory: Annotated[Path, typer.Argument(
        metavar="DIR", callback=replay_source,
        help="A recording (verify --record, or verify cluster --record); example:kamaji-hami "
             "and example:vcluster-kai are the examples shipped with gpulab.")],
    profile: ProfileOpt = None,
    tc: TcOpt = None,
    inspect: InspectOpt = False,
    dry_run: DryRunOpt = False,
    junit: JunitOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Judge a recording again, offline: no cluster is contacted. A lab's recording is judged
    against the profile it was recorded with, or --profile; a cluster's recording (verify
    cluster --record) as it was run, or as it was inspected (--inspect, --dry-run)."""
    guard(lambda: run_verify(profile=profile, tc=tc, replay=directory, inspect=inspect,
                             dry_run=dry_run, junit=junit, chosen=output))


def cluster_command(
    kubeconfig: KubeconfigsOpt = None,
    context: ContextsOpt = None,
    inspect: InspectOpt = False,
    dry_run: DryRunOpt = False,
    namespace: NamespaceOpt = None,
    request_timeout: RequestTimeoutOpt = "30s",
    discovery_timeout: DiscoveryTimeoutOpt = "60s",
    keep: KeepOpt = False,
    junit: JunitOpt = None,
    output: OutputOpt = Output.text,
    record: RecordOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run the GPU-0x/GPU-1x checks on HAMi or KAI clusters gpulab did not build (one per
    --kubeconfig or --context; without either, kubectl's default kubeconfig at its current
    context): read what is installed and the GPU cards, create pods sized from them in a
    namespace of their own, judge, and remove them. --inspect and --dry-run only look.
    See docs/verify-any-cluster.md."""
    guard(lambda: run_verify(kubeconfig=kubeconfig, context=context, inspect=inspect,
                             dry_run=dry_run, namespace=namespace,
                             request_timeout=request_timeout,
                             discovery_timeout=discovery_timeout, keep=keep, junit=junit,
                             chosen=output, record=record, verbose=verbose, foreign=True))


class _ChecksOnDemand(TyperGroup):
    """verify's subcommands; a check's is built when it is asked for (its run, its --help,
    `verify --help`, completion), not on every start of gpulab."""

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        return [*(c["id"].lower() for c in CHECKS), *super().list_commands(ctx)]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # type: ignore[override]
        check = next((c for c in CHECKS if c["id"].lower() == cmd_name), None)
        if check is None:
            return super().get_command(ctx, cmd_name)
        single = typer.Typer(context_settings=HELP_OPTIONS, rich_markup_mode=None)
        single.command(cmd_name, help=check_help(check),
                       short_help=f"{check['id']} {check['title']} ({check['stack']})")(
            _check_command(check["id"]))
        return typer.main.get_command(single)


def register(app: typer.Typer) -> None:
    verify_app = typer.Typer(cls=_ChecksOnDemand,
                             context_settings={**HELP_OPTIONS, "token_normalize_func": str.lower})
    verify_app.callback(invoke_without_command=True)(verify_command)
    verify_app.command("replay", short_help="Judge a recording again, offline.")(replay_command)
    verify_app.command("cluster", short_help="Verify a HAMi or KAI cluster gpulab did not "
                                             "build.")(cluster_command)
    app.add_typer(verify_app, name="verify", short_help="Run the acceptance checks on a lab, or "
                                                        "on any HAMi or KAI cluster.")
