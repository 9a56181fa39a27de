"""What `gpulab verify` runs, whichever way it is asked (gpulab.cli.verify): the lab's checks
live, a recording of them judged again, or a cluster gpulab did not build."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpulab.cli.common import Output, data, err
from gpulab.cli.options import flags, locked, stop_signals
from gpulab.cli.verify_cluster import parse_timeout, verify_cluster
from gpulab.cli.verify_report import cluster_recording, print_report
from gpulab.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile
    from gpulab.verify.report import VerifyReport

__all__ = ["replay_source", "run_verify"]


def replay_source(value: Path | None) -> Path | None:
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


def _replayed_from(directory: Path) -> dict[str, str]:
    """The JUnit properties of a replay: the recording, and whether it is a shipped example
    (built from a write-up's outputs, not recorded on a running lab)."""
    from gpulab.verify.examples import PROVENANCE, is_example

    return {"gpulab.recording": str(directory),
            **({"gpulab.example": PROVENANCE} if is_example(directory) else {})}


def run_verify(*, profile: str | None = None, name: str | None = None, tc: str | None = None,
               keep: bool = False, junit: Path | None = None, chosen: Output = Output.text,
               record: Path | None = None, replay: Path | None = None,
               kubeconfig: list[Path] | None = None, context: list[str] | None = None,
               request_timeout: str = "30s", discovery_timeout: str = "60s",
               inspect: bool = False, dry_run: bool = False, namespace: str | None = None,
               verbose: bool = False, foreign: bool = False) -> int:
    """The lab's checks (`tc`: some of them), a recording of a lab's or a cluster's run judged
    again (`replay`), or a cluster gpulab did not build (`foreign`, or any of its options);
    returns the exit code."""
    from gpulab import core
    from gpulab.paths import check_output_file, check_output_folder
    from gpulab.verify.report import exit_code, report_json, write_junit

    check_output_file(junit, "--junit")  # before any work: a run is not lost to its report
    check_output_folder(record, "--record")
    machine = chosen is not Output.text
    if foreign or kubeconfig or context or inspect or dry_run or cluster_recording(replay):
        if profile is not None or name is not None:
            raise UsageError("--kubeconfig, --context, --inspect and --dry-run look at a "
                             "cluster gpulab did not build; -p/--name are for labs")
        return verify_cluster(kubeconfig or [], context or [], inspect=inspect,
                              dry_run=dry_run, namespace=namespace, replay=replay,
                              record=record, output=chosen, keep=keep, junit=junit,
                              tc=tc, verbose=verbose, timeout=parse_timeout(request_timeout),
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
        core.require_lab(lab, flags(profile, name))  # before the lock: it makes the folder

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
        timings = _replayed_from(replay) if replay is not None else {
            f"up.{s['step']}.seconds": str(s.get("seconds", ""))
            for s in core.recorded_timings(report.lab)}
        write_junit(report, junit, properties=timings)
    if machine:
        data(report_json(report), chosen)
    else:
        print_report(report)
    return int(exit_code(report))

