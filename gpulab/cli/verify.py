"""`gpulab verify`: the acceptance checks on a lab, on a recording of one, or on any HAMi or
KAI cluster (gpulab.cli.verify_cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpulab.cli.common import (
    JsonOpt,
    Output,
    OutputOpt,
    VerboseOpt,
    chosen_output,
    data,
    err,
    guard,
)
from gpulab.cli.options import NameOpt, ProfileOpt, complete_checks, flags, locked, stop_signals
from gpulab.cli.verify_cluster import parse_timeout, verify_cluster
from gpulab.cli.verify_report import cluster_recording, print_report
from gpulab.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile
    from gpulab.verify.report import VerifyReport

__all__ = ["register"]


def _replay_source(value: Path | None) -> Path | None:
    """`--replay example:NAME`: the example recording shipped with gpulab (package data)."""
    from gpulab.verify.examples import example_recording, is_example_ref

    if value is None or not is_example_ref(str(value)):
        return value
    try:
        return example_recording(str(value))
    except UsageError as error:
        raise typer.BadParameter(str(error)) from None


def _replay(directory: Path, tc: str | None, profile: str | None, name: str | None,
            record: Path | None) -> tuple[VerifyReport, LabProfile]:
    """`verify --replay`: the recording judged against `--profile`, else its own profile."""
    from gpulab import core
    from gpulab.errors import UsageError
    from gpulab.verify.examples import PROVENANCE, is_example

    if record is not None:
        raise UsageError("--record and --replay cannot be combined")
    if name is not None:
        raise UsageError("--name and --replay cannot be combined",
                         hint="a replay judges the lab in the recording; --profile judges it "
                              "against another profile")
    against = core.load(profile) if profile is not None else None
    if is_example(directory):  # never passed off as a real lab's run
        err.print(f"note: replaying {PROVENANCE} ({directory})", markup=False)
    return core.replay_verify(directory, tc, against)


def verify_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    tc: Annotated[
        str | None, typer.Option("--tc", help="Only these checks, e.g. TC-05,TC-06 or KAI-05 "
                                               "(or 5,6).", autocompletion=complete_checks)
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave verify's namespace and pods in the tenants "
                                          "(teams).")
    ] = False,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML (one testcase per check and "
                                                   "tenant) to this file.")
    ] = None,
    output: OutputOpt = Output.text,
    json_out: JsonOpt = False,
    record: Annotated[
        Path | None,
        typer.Option("--record", help="Save the API objects the checks looked at into this "
                                      "folder (see docs/recording-format.md)."),
    ] = None,
    replay: Annotated[
        Path | None, typer.Option("--replay", callback=_replay_source,
                                  help="Re-evaluate a recording offline; no cluster is "
                                       "contacted. Judged against the profile it was recorded "
                                       "with, or --profile. example:kamaji-hami and "
                                       "example:vcluster-kai replay the examples shipped with "
                                       "gpulab.")
    ] = None,
    kubeconfig: Annotated[
        list[Path] | None,
        typer.Option("--kubeconfig", metavar="<path>",
                     help="A cluster gpulab did not build (repeat for several tenants); "
                          "without it, --context, --inspect and --dry-run use $KUBECONFIG or "
                          "~/.kube/config, as kubectl does. See docs/verify-any-cluster.md.")
    ] = None,
    context: Annotated[
        list[str] | None,
        typer.Option("--context", metavar="<str>",
                     help="The kubeconfig context: once for all, or once per --kubeconfig; "
                          "without --kubeconfig, one cluster per --context.")
    ] = None,
    request_timeout: Annotated[
        str, typer.Option("--request-timeout", metavar="<duration>",
                          help="How long to wait for each API request of a --kubeconfig "
                               "cluster, as kubectl's flag: 30s, 1m, 500ms; 0 for no limit.")
    ] = "30s",
    discovery_timeout: Annotated[
        str, typer.Option("--discovery-timeout", metavar="<duration>",
                          help="How long reading each --kubeconfig cluster may take in all; "
                               "what is not read by then is shown as unknown. 0 for no limit.")
    ] = "60s",
    inspect: Annotated[
        bool, typer.Option("--inspect", help="A cluster gpulab did not build: show what is "
                                             "installed and the GPU cards; read-only, creates "
                                             "nothing.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="A cluster gpulab did not build: also show the "
                                             "pods verify would create, sized from the cards "
                                             "found.")
    ] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="With --kubeconfig: the namespace for "
                                                     "verify's pods (default "
                                                     "gpulab-verify-RUNID).")
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run the acceptance checks on the lab (TC-01..TC-08 for kamaji-hami, KAI-01..KAI-08 for
    vcluster-kai), with evidence or reasons, and any finding (a known gap shown on the lab).
    With --kubeconfig: a HAMi or KAI cluster gpulab did not build (GPU-0x/GPU-1x checks;
    --inspect and --dry-run only look).

    Exit 0 when every check passes, 3 when any fails, 2 for usage errors, 4 when the lab is not
    up or its API (or a --kubeconfig cluster) cannot be reached, 5 when another command holds
    the lab, 6 when there is no such lab. Findings do not change the exit code.
    """

    def body() -> int:
        from gpulab import core
        from gpulab.verify.report import exit_code, report_json, write_junit

        chosen = chosen_output(output, json_out)
        machine = chosen is not Output.text
        if kubeconfig or context or inspect or dry_run or cluster_recording(replay):
            if profile is not None or name is not None:
                raise UsageError("--kubeconfig, --context, --inspect and --dry-run look at a "
                                 "cluster gpulab did not build; -p/--name are for labs")
            return verify_cluster(kubeconfig or [], context or [], inspect=inspect,
                                   dry_run=dry_run, namespace=namespace, replay=replay,
                                   record=record, output=chosen, keep=keep, junit=junit,
                                   tc=tc, verbose=verbose,
                                   timeout=parse_timeout(request_timeout),
                                   discovery=parse_timeout(discovery_timeout,
                                                              "--discovery-timeout"))
        if namespace:
            raise UsageError("--namespace goes with a cluster gpulab did not build "
                             "(--kubeconfig, --context, --inspect or --dry-run)")
        if request_timeout != "30s":
            raise UsageError("--request-timeout goes with a cluster gpulab did not build "
                             "(--kubeconfig, --context, --inspect or --dry-run)")
        if discovery_timeout != "60s":
            raise UsageError("--discovery-timeout goes with a cluster gpulab did not build "
                             "(--kubeconfig, --context, --inspect or --dry-run)")

        if replay is not None:
            report, recorded_profile = _replay(replay, tc, profile, name, record)
        else:
            loaded, lab = core.resolve_lab(profile, name)
            recorded_profile = loaded.profile
            checks = core.verify_checks(loaded.profile.stack, tc)
            core.require_lab(lab)  # before the lock, which would make the lab's folder

            def progress(tenant: str, message: str) -> None:
                if verbose and not machine:
                    err.print(f"  {tenant}: {message}", markup=False, highlight=False)

            if not machine:
                err.print(f"verifying lab '{lab}' ...", markup=False)
            with locked(lab, f"verify{flags(profile, name)}"), stop_signals() as received:
                try:
                    report = core.verify(loaded.profile, lab, checks=checks, keep=keep,
                                         progress=progress)
                except KeyboardInterrupt:  # the verify pods are already deleted (observe_lab)
                    what = "terminated" if received else "interrupted"
                    left = ("its pods were left (--keep)" if keep else
                            "verify asked each tenant to delete its pods and namespace")
                    err.print(f"{what}: verify of lab '{lab}' stopped before judging; {left}",
                              markup=False)
                    return 128 + received[0] if received else int(ExitCode.INTERRUPTED)
        if record is not None:
            core.record_verify(record, report, recorded_profile)
        if junit is not None:
            timings = {} if replay is not None else {
                f"up.{s['step']}.seconds": str(s.get("seconds", ""))
                for s in core.recorded_timings(report.lab)}
            write_junit(report, junit, properties=timings)
        if machine:
            data(report_json(report), chosen)
        else:
            print_report(report)
        return int(exit_code(report))

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("verify", short_help="Run the acceptance checks on a lab, or on any HAMi or KAI "
                                     "cluster.")(verify_command)
