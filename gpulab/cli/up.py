"""`gpulab up`: build the lab, or continue building it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpulab.cli.common import Output, VerboseOpt, add_row, data, emit, err, guard, parse_output
from gpulab.cli.options import (
    ClusterContextOpt,
    ClusterKubeconfigOpt,
    FakeGpuNodeOpt,
    NameOpt,
    ProfileOpt,
    flags,
    locked,
    stop_signals,
)
from gpulab.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gpulab.profile.load import LoadedProfile

__all__ = ["next_steps", "register"]

TOOL_OUTPUT_LINES = 12  # of a failed tool's own output under gpulab's line (-v: all of it)


def _tool_output(error: BaseException | None, verbose: bool) -> list[str]:
    """The tail of what kind, helm, kubeadm... printed when they failed (AdapterError.output)."""
    cause = getattr(error, "cause", error)
    text = str(getattr(cause, "output", "") or "").strip()
    if not text:
        return []
    lines = text.splitlines()
    return lines if verbose else lines[-TOOL_OUTPUT_LINES:]


def up_command(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    kubeconfig: ClusterKubeconfigOpt = None,
    context: ClusterContextOpt = None,
    fake_gpu_node: FakeGpuNodeOpt = None,
    verbose: VerboseOpt = False,
    json_events: Annotated[
        bool, typer.Option("--json", help="One JSON event per line on stdout.")
    ] = False,
    skip_preflight: Annotated[
        bool, typer.Option("--skip-preflight", help="Do not stop on failed doctor checks.")
    ] = False,
    output: Annotated[
        Output, typer.Option("--output", "-o", parser=parse_output,
                             help="text, yaml or json: with yaml or json, a summary on stdout "
                                  "at the end (steps, seconds, outcome, kubeconfigs)")
    ] = Output.text,
) -> None:
    """Build the lab. Safe to re-run: finished steps are skipped, a failed or interrupted run
    continues from the first unfinished step. With --name alone, a lab is continued from the
    profile it was built from."""

    def body() -> int:
        import signal

        from gpulab import core
        from gpulab.engine.progress import make_reporter

        if json_events and output is not Output.text:
            raise UsageError("--json (one event per line) and -o (a summary at the end) both "
                             "write stdout: choose one")
        loaded, lab = core.resolve_lab(profile, name, for_up=True)
        loaded = core.with_fake_gpu_nodes(loaded, lab, fake_gpu_node, kubeconfig, context)
        again = f"gpulab up{flags(profile, name)}"
        if not json_events:
            gone = "" if loaded.builtin or loaded.source.exists() else \
                " (the profile recorded in the lab folder; that file is gone)"
            err.print(f"Building lab '{lab}' from {loaded.source}{gone}", markup=False)
        with locked(lab, f"up{flags(profile, name)}"), stop_signals() as received, \
                make_reporter(err, json_lines=json_events, verbose=verbose) as reporter:
            result = core.up(loaded.profile, lab, reporter, skip_preflight=skip_preflight,
                             cluster=core.up_cluster(loaded.profile, lab, kubeconfig, context))
            if result.built_anything:  # a lab that exists remembers its profile for `--name`
                core.record_profile(lab, loaded)
                core.record_timings(lab, result)
        if not json_events and not result.all_skipped:
            _emit_timings(result)
        if result.interrupted or received:
            names = {int(signal.SIGTERM): "terminated (SIGTERM)",
                     int(signal.SIGHUP): "hung up (SIGHUP)"}
            what = names.get(received[0], "interrupted") if received else "interrupted"
            err.print(f"{what}: lab '{lab}' is partly built; `{again}` continues, "
                      f"`gpulab down --name {lab}` removes it", markup=False)
            code = 128 + int(received[0]) if received else int(ExitCode.INTERRUPTED)
            return _up_summary(output, lab, loaded, result, "interrupted", code)
        if not result.ok:
            for failure in result.failures:
                err.print(f"error: {failure.error}", markup=False)  # once: not in progress lines
                if failure.last_seen:
                    err.print(f"  last seen: {failure.last_seen}", markup=False)
                tail = _tool_output(failure.error, verbose)
                if tail:
                    err.print("  its output" + ("" if verbose else
                                                f" (last {len(tail)} lines; -v: all)") + ":",
                              markup=False)
                    for line in tail:
                        err.print(f"  | {line}", markup=False)
            err.print(f"next: `{again}` resumes from here; `gpulab logs --name {lab}` collects "
                      f"diagnostics; `gpulab down --name {lab}` removes the lab", markup=False)
            codes = {int(f.error.exit_code) for f in result.failures if f.error}
            code = max(codes) if codes else int(ExitCode.FAILED)
            return _up_summary(output, lab, loaded, result, "failed", code)
        if not json_events:
            if result.all_skipped:
                err.print(f"lab '{lab}' is already up; nothing to do", markup=False)
            else:
                err.print(next_steps(loaded.profile, lab), markup=False)
        return _up_summary(output, lab, loaded, result,
                           "already-up" if result.all_skipped else "built", 0)

    guard(body)


def _up_summary(output: Output, lab: str, loaded: LoadedProfile, result: Any, outcome: str,
                code: int) -> int:
    """`up -o json|yaml`: what happened, as data on stdout (stderr keeps the progress); returns
    `code`."""
    if output is Output.text:
        return code
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    members = ["management", *loaded.profile.member_names()]
    data({
        "lab": lab,
        "profile": str(loaded.source),
        "outcome": outcome,  # built, already-up, failed, interrupted
        "exit_code": code,
        "seconds": round(sum(s.elapsed for s in result.results), 1),
        "steps": [{"step": s.name, "title": s.title, "outcome": s.outcome.value,
                   "seconds": round(s.elapsed, 1),
                   "error": str(s.error) if s.error else None} for s in result.results],
        "kubeconfigs": {m: str(folder / f"{m}.kubeconfig") for m in members
                        if (folder / f"{m}.kubeconfig").is_file()},
    }, output)
    return code


def _emit_timings(result: Any) -> None:
    """Where the minutes went: one row per step (stderr, after the progress lines)."""
    from rich.table import Table

    table = Table("STEP", "RESULT", "SECONDS", box=None, title="step timings",
                  title_justify="left")
    for step in result.results:
        if step.outcome.value != "not-run":
            add_row(table, step.name, step.outcome.value, f"{step.elapsed:.1f}")
    add_row(table, "total", "", f"{sum(s.elapsed for s in result.results):.1f}")
    emit(table, err)


def next_steps(profile: Any, lab: str) -> str:
    """What kind prints after `create cluster`: how to use what was just built."""
    from gpulab import core
    from gpulab.paths import lab_dir

    first = profile.member_names()[0]
    kubeconfig = lab_dir(lab) / f"{first}.kubeconfig"
    joined = core.lab_cluster(lab, profile).workers == "join"
    last = (f"  gpulab join TENANT --name {lab}   (its workers are your machines: the kubeadm "
            "join and HAMi for each)" if profile.stack == "kamaji-hami" and joined
            else f"  gpulab verify --name {lab}")
    if core.lab_forwarded(lab):
        # nothing listens at the saved kubeconfigs' servers until a forward runs
        ports = ", ".join(f"{t.name} 127.0.0.1:{t.host_port}"
                          for t in getattr(profile, "teams", ()))
        return (f"lab '{lab}' is up. Its vClusters are reached by port-forward through the "
                f"cluster's API (no LoadBalancer, and its nodes do not answer from here). "
                f"Reach a team:\n"
                f"  gpulab kubeconfig TEAM --name {lab} --port-forward   (until Ctrl-C; prints "
                f"a kubeconfig for it)\n"
                f"  the saved kubeconfigs name these ports, served while that runs: {ports}\n"
                f"  export KUBECONFIG={kubeconfig}; kubectl get nodes   (in another terminal)\n"
                f"  gpulab verify --name {lab}   (opens forwards of its own)")
    return (f"lab '{lab}' is up. Use it:\n"
            f"  export KUBECONFIG={kubeconfig}\n"
            f"  kubectl get nodes\n"
            f"  gpulab kubeconfig TENANT --name {lab}   (tenants: "
            f"{', '.join(profile.member_names())})\n"
            f"{last}")


def register(app: typer.Typer) -> None:
    app.command("up", short_help="Build the lab, or continue building it.")(up_command)
