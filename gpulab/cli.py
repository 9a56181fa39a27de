"""The command line: parse, call the core, render. No logic lives here.

Data goes to stdout, progress and messages to stderr (kind's rule). Every user error is one line
with a stable exit code (gpulab.errors.ExitCode); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml
from rich.table import Table
from rich.text import Text

from gpulab import __version__
from gpulab.errors import ExitCode, GpulabError, HostError, ProfileError, UsageError
from gpulab.terminal import SafeConsole, literal, output_width

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console

    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile
    from gpulab.verify.report import VerifyReport

__all__ = ["app", "main"]

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    name="gpulab",
    help="Build, verify and remove GPU-sharing Kubernetes labs on one Docker host, no GPU needed.",
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, pwsh)
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)
profiles_app = typer.Typer(help="List and show the built-in profiles.", no_args_is_help=True,
                           context_settings=HELP_OPTIONS)
app.add_typer(profiles_app, name="profiles")

# Markup and emoji are never read from user or cluster text, control characters are escaped
# (gpulab.terminal); tables wrap to the terminal, else $COLUMNS or a readable width (_emit).
out = SafeConsole()
err = SafeConsole(stderr=True)


class Output(str, Enum):
    text = "text"
    yaml = "yaml"
    json = "json"


def _output(value: str) -> Output:
    """`-o` as kubectl takes it; a wrong value lists the choices."""
    try:
        return Output(value.strip().lower())
    except ValueError:
        choices = ", ".join(o.value for o in Output)
        raise typer.BadParameter(f"'{value}' is not one of {choices}") from None


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


def _complete_profiles(incomplete: str) -> list[str]:
    from gpulab.profile.load import builtin_profiles

    return [name for name in builtin_profiles() if name.startswith(incomplete)]


def _complete_labs(incomplete: str) -> list[str]:
    from gpulab.paths import labs_root

    root = labs_root()
    names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return [name for name in names if name.startswith(incomplete)]


def _complete_members(ctx: typer.Context, incomplete: str) -> list[str]:
    """Tenants (teams) of the lab named by --name, else of the profile given or the default."""
    try:
        loaded, _ = _resolve_lab(ctx.params.get("profile"), ctx.params.get("name"))
    except GpulabError:
        return []
    members = ["management", *loaded.profile.member_names()]
    return [m for m in members if m.startswith(incomplete)]


def _complete_checks(ctx: typer.Context, incomplete: str) -> list[str]:
    """The check ids of the lab's stack (for `--tc`)."""
    from gpulab import core

    try:
        loaded, _ = _resolve_lab(ctx.params.get("profile"), ctx.params.get("name"))
        ids = core.check_ids(loaded.profile.stack)
    except GpulabError:
        return []
    return [i for i in ids if i.lower().startswith(incomplete.lower())]


def _not_blank(value: str | None) -> str | None:
    """`--name ''` or `-p "$UNSET"` must not quietly mean the default lab or profile."""
    if value is not None and not value.strip():
        raise typer.BadParameter("must not be empty (leave the option out for the default)")
    return value


OutputOpt = Annotated[Output, typer.Option("--output", "-o", parser=_output,
                                           help="text, yaml or json")]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", "-p",
        help="Built-in profile name (see `gpulab profiles list`) or a path to a profile file. "
        "Default: kamaji-hami.",
        autocompletion=_complete_profiles,
        callback=_not_blank,
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", help="Lab name; defaults to the profile's `name`.",
                 autocompletion=_complete_labs, callback=_not_blank),
]


def _fail(error: GpulabError) -> typer.Exit:
    err.print(Text.assemble(("error:", "bold red"), " ", literal(str(error))))
    if isinstance(error, ProfileError):
        for problem in error.problems:
            err.print(f"  {problem}", markup=False)
    return typer.Exit(int(error.exit_code))


REPORT_A_BUG = ("this is a bug in gpulab: please report it with the output above and "
                "`gpulab version -o json`")


def _guard(body: Callable[[], int | None]) -> None:
    """Run a command body; turn user errors into one line and an exit code. A file or system
    error at the edges (a disk full, a permission, a path) is one line too; anything else is a
    bug: its traceback, then one line asking to report it."""
    try:
        code = body()
    except GpulabError as error:
        raise _fail(error) from None
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        err.print(f"error: {error.strerror or error}{where}", markup=False)
        raise typer.Exit(int(ExitCode.FAILED)) from None
    except typer.Exit:
        raise
    except Exception:
        import traceback

        traceback.print_exc()
        err.print(f"error: {REPORT_A_BUG}", markup=False)
        raise typer.Exit(int(ExitCode.FAILED)) from None
    if code:
        raise typer.Exit(code)


def _load(profile: str | None) -> LoadedProfile:
    from gpulab.stacks import load_profile

    return load_profile(profile)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"gpulab {__version__}")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:  # bare `gpulab`: help on stdout, success (kubectl, kind)
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


def _emit(renderable: Any, console: Console | None = None) -> None:
    """Print a table (or text, taken literally) on stdout (or `console`): tables wrap to the
    terminal; in pipes and CI logs to $COLUMNS or gpulab.terminal.READABLE_WIDTH, without
    trailing padding or control codes. Lines of text are never cut (soft wrap)."""
    console = console or out
    if isinstance(renderable, str):
        renderable = literal(renderable)
    if console.is_terminal:
        console.print(renderable)
        return
    console.width = output_width(console)
    with console.capture() as captured:
        console.print(renderable)
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    stream = sys.stderr if console is err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def _add_row(table: Table, *cells: str | Text) -> None:
    """A row of text taken literally (names and messages from profiles, clusters, tools)."""
    table.add_row(*(literal(c) if isinstance(c, str) else c for c in cells))


@profiles_app.command("list", short_help="List the built-in profiles.")
def profiles_list(
    output: OutputOpt = Output.text,
) -> None:
    """List built-in profiles with their stack, tenants and description (exit 4 when the install
    has none)."""

    def body() -> None:
        from gpulab.profile.load import builtin_profiles, no_builtin_profiles
        from gpulab.stacks import parse_profile

        builtins = builtin_profiles()
        if not builtins:
            raise no_builtin_profiles()
        rows: list[dict[str, Any]] = []
        for name, path in builtins.items():
            try:
                prof = parse_profile(path.read_text(encoding="utf-8"), str(path))
            except ProfileError as error:
                rows.append({"name": name, "path": str(path), "error": str(error)})
                continue
            rows.append({
                "name": name,
                "stack": prof.stack,
                "tenants": prof.member_names(),
                "description": prof.description,
                "path": str(path),
            })
        if output is Output.json:
            typer.echo(json.dumps(rows, indent=2))
            return
        if output is Output.yaml:
            typer.echo(yaml.safe_dump(rows, sort_keys=False), nl=False)
            return
        table = Table("PROFILE", "STACK", "TENANTS", "DESCRIPTION", box=None)
        for row in rows:
            _add_row(table, row["name"], row.get("stack", "invalid"),
                     ", ".join(row.get("tenants", [])), row.get("description") or row.get(
                         "error", ""))
        _emit(table)

    _guard(body)


@profiles_app.command("show", short_help="Print a profile's file, to copy and edit it.")
def profiles_show(
    profile: Annotated[str, typer.Argument(help="Built-in profile name or file path.")],
) -> None:
    """Print a profile's file (validated first), e.g. to copy and edit it."""

    def body() -> None:
        loaded = _load(profile)
        typer.echo(loaded.source.read_text(encoding="utf-8"), nl=False)

    _guard(body)


ClusterKubeconfigOpt = Annotated[
    Path | None, typer.Option("--kubeconfig", metavar="<path>",
                              help="Build the lab in this existing cluster (provider existing) "
                                   "instead of a new kind cluster; see docs/own-cluster.md.")
]
ClusterContextOpt = Annotated[
    str | None, typer.Option("--context", metavar="<str>",
                             help="With an existing cluster: the kubeconfig's context (default: "
                                  "its current context).")
]


FakeGpuNodeOpt = Annotated[
    list[str] | None, typer.Option("--fake-gpu-node", metavar="<node>",
                                   help="With an existing cluster (vcluster-kai): a node that "
                                        "gets fake GPUs from fake-gpu-operator, as "
                                        "cluster.fake_gpu_nodes; repeat for more. Recorded in "
                                        "lab.json; `down` removes the labels it set.")
]


def _cluster_choice(profile: LabProfile, kubeconfig: Path | None, context: str | None) -> Any:
    from gpulab.providers import choose

    return choose(profile, kubeconfig, context)


@app.command(short_help="Show every step and object `up` would create, changing nothing.")
def plan(
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
                                                   "a team).", autocompletion=_complete_members)
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
        loaded, lab = _resolve_lab(profile, name, for_up=True)
        loaded = _fake_gpu_nodes(loaded, lab, fake_gpu_node, kubeconfig, context)
        steps, facts_note = core.plan_steps(
            loaded.profile, lab, probe_host=True,
            cluster=_up_cluster(loaded.profile, lab, kubeconfig, context))
        if facts_note and output is not PlanOutput.text:
            err.print(f"note: {facts_note}", markup=False)
        if output is PlanOutput.manifests:
            typer.echo(_manifests(loaded.profile, steps, cluster), nl=False)
            return
        if output is PlanOutput.yaml:
            typer.echo(plan_yaml(steps), nl=False)
            return
        if output is PlanOutput.json:
            typer.echo(plan_json(steps))
            return
        err.print(f"Plan for lab '{lab}' from {loaded.source}", markup=False)
        if facts_note:
            err.print(f"note: {facts_note}", markup=False)
        table = Table("#", "STEP", "WHAT", "CREATES", box=None)
        table.columns[3].overflow = "fold"
        for index, (step, title, lines) in enumerate(plan_text(steps), start=1):
            _add_row(table, str(index), step, title, "\n".join(lines))
        _emit(table)

    _guard(body)


def _manifests(profile: LabProfile, steps: list[Any], cluster: str | None) -> str:
    """`plan -o manifests`: one cluster's objects as `up` applies them (not verify's test
    objects, which verify creates and removes)."""
    from gpulab.engine.plan import manifest_clusters, plan_manifests
    from gpulab.stacks import for_profile

    previews = {s.name for s in for_profile(profile).verify_previews(profile)}
    built = [s for s in steps if s.name not in previews]
    clusters = manifest_clusters(built)
    if cluster is None and len(clusters) == 1:
        cluster = clusters[0]
    if cluster is None:
        raise UsageError(f"-o manifests needs --cluster: the lab's objects go to "
                         f"{', '.join(clusters)} (one kubectl apply each)",
                         hint=f"e.g. gpulab plan -o manifests --cluster {clusters[0]}")
    if cluster not in clusters:
        raise UsageError(f"--cluster {cluster}: not a cluster of this lab",
                         hint=f"choose from {', '.join(clusters)}")
    return plan_manifests(built, cluster)


VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show each step's details.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Deprecated: use -o json.")]


def _chosen_output(output: Output, json_alias: bool) -> Output:
    """`-o`, with the deprecated `--json` still meaning `-o json` (and saying so once)."""
    if json_alias:
        err.print("warning: --json is deprecated; use -o json", markup=False)
        return Output.json
    return output


def _data(value: Any, output: Output) -> None:
    """Machine-readable output on stdout."""
    if output is Output.yaml:
        typer.echo(yaml.safe_dump(value, sort_keys=False), nl=False)
    else:
        typer.echo(json.dumps(value, indent=2))


def _resolve_lab(profile: str | None, name: str | None, *, for_up: bool = False
                 ) -> tuple[LoadedProfile, str]:
    """The profile and lab name (`--name`, else the profile's). A lab `up` built is described
    by its record (gpulab.lab_record): without -p, the profile document it was built from is
    used, wherever its file went; a -p must agree with it (the same profile, or the same
    document) or is refused. `up` builds from the -p given, the other commands from the
    record. A lab recorded by an older gpulab (a reference, no document) resolves as before."""
    from gpulab import core, lab_record
    from gpulab.profile.base import dns_label

    given = _load(profile) if profile is not None or name is None else None
    if name is None:
        assert given is not None
        lab = given.profile.name
    else:
        try:
            lab = dns_label(name)
        except ValueError as error:
            raise UsageError(f"--name: {error}") from None
    record = lab_record.read(lab)
    recorded = lab_record.recorded_loaded(record) if record is not None else None
    if record is None or recorded is None:  # no record, or an older gpulab's: as before
        if profile is None:
            if name is not None:
                given = _load(record.ref if record is not None else None)
        elif for_up and name is not None and record is not None and record.ref is not None \
                and given is not None and lab_record.profile_ref(given) != record.ref:
            raise _disagrees(lab, record.ref, profile, for_up=True)
        assert given is not None
        return given, core.lab_name(given.profile, lab)
    if profile is not None and given is not None:
        if not lab_record.agrees(record, given):
            raise _disagrees(lab, record.ref or str(record.path), profile, for_up=for_up)
        if for_up:
            return given, core.lab_name(given.profile, lab)
    return recorded, core.lab_name(recorded.profile, lab)


def _disagrees(lab: str, recorded: str, profile: str, *, for_up: bool) -> UsageError:
    """A -p that is not the profile the lab was built from (neither its name nor its document)."""
    if for_up:
        hint = (f"gpulab up --name {lab} continues it; gpulab down --name {lab} first to build "
                f"it from '{profile}'")
    else:
        hint = f"leave out -p: --name {lab} alone uses the profile the lab was built from"
    return UsageError(f"lab '{lab}' was built from profile '{recorded}', not '{profile}'",
                      hint=hint)


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """SIGTERM and SIGHUP end `up` the way Ctrl-C does (no new step starts, the lab's state is
    what exists, so `up` resumes), and stop the tools it runs (kind, git) with their process
    groups, which a terminal's Ctrl-C reaches by itself. Yields the signals received."""
    from gpulab import children

    received: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        received.append(signum)
        children.terminate_all()
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield received
        return
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _locked(lab: str, command: str) -> Any:
    """The lab's one-writer lock for this command (gpulab.lock)."""
    from gpulab.lock import lab_lock
    from gpulab.paths import lab_dir

    return lab_lock(lab, lab_dir(lab), command,
                    note=lambda message: err.print(f"note: {message}", markup=False))


def _flags(profile: str | None, name: str | None) -> str:
    """The -p/--name the user gave, for hints that must work when pasted."""
    import shlex

    parts = []
    if profile:
        parts.append(f"-p {shlex.quote(profile)}")
    if name:
        parts.append(f"--name {shlex.quote(name)}")
    return (" " + " ".join(parts)) if parts else ""


TOOL_OUTPUT_LINES = 12  # of a failed tool's own output under gpulab's line (-v: all of it)


def _tool_output(error: BaseException | None, verbose: bool) -> list[str]:
    """The tail of what kind, helm, kubeadm... printed when they failed (AdapterError.output)."""
    cause = getattr(error, "cause", error)
    text = str(getattr(cause, "output", "") or "").strip()
    if not text:
        return []
    lines = text.splitlines()
    return lines if verbose else lines[-TOOL_OUTPUT_LINES:]


@app.command(short_help="Build the lab, or continue building it.")
def up(
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
        Output, typer.Option("--output", "-o", parser=_output,
                             help="text, yaml or json: with yaml or json, a summary on stdout "
                                  "at the end (steps, seconds, outcome, kubeconfigs)")
    ] = Output.text,
) -> None:
    """Build the lab. Safe to re-run: finished steps are skipped, a failed or interrupted run
    continues from the first unfinished step. With --name alone, a lab is continued from the
    profile it was built from."""

    def body() -> int:
        from gpulab import core
        from gpulab.engine.progress import make_reporter

        if json_events and output is not Output.text:
            raise UsageError("--json (one event per line) and -o (a summary at the end) both "
                             "write stdout: choose one")
        loaded, lab = _resolve_lab(profile, name, for_up=True)
        loaded = _fake_gpu_nodes(loaded, lab, fake_gpu_node, kubeconfig, context)
        again = f"gpulab up{_flags(profile, name)}"
        if not json_events:
            gone = "" if loaded.builtin or loaded.source.exists() else \
                " (the profile recorded in the lab folder; that file is gone)"
            err.print(f"Building lab '{lab}' from {loaded.source}{gone}", markup=False)
        with _locked(lab, f"up{_flags(profile, name)}"), _stop_signals() as received, \
                make_reporter(err, json_lines=json_events, verbose=verbose) as reporter:
            result = core.up(loaded.profile, lab, reporter, skip_preflight=skip_preflight,
                             cluster=_up_cluster(loaded.profile, lab, kubeconfig, context))
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
                err.print(_next_steps(loaded.profile, lab), markup=False)
        return _up_summary(output, lab, loaded, result,
                           "already-up" if result.all_skipped else "built", 0)

    _guard(body)


def _fake_gpu_nodes(loaded: LoadedProfile, lab: str, nodes: list[str] | None,
                    kubeconfig: Path | None, context: str | None) -> LoadedProfile:
    from gpulab.providers import with_fake_gpu_nodes

    return with_fake_gpu_nodes(loaded, lab, nodes,
                               existing=kubeconfig is not None or context is not None)


def _up_cluster(profile: LabProfile, lab: str, kubeconfig: Path | None, context: str | None
                ) -> Any:
    """The cluster `up` builds in: `--kubeconfig/--context`; else, for a lab already built, the
    one its record names; else the profile's."""
    from gpulab.providers import choose

    return choose(profile, kubeconfig, context, lab=lab)


def _up_summary(output: Output, lab: str, loaded: LoadedProfile, result: Any, outcome: str,
                code: int) -> int:
    """`up -o json|yaml`: what happened, as data on stdout (stderr keeps the progress); returns
    `code`."""
    if output is Output.text:
        return code
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    members = ["management", *loaded.profile.member_names()]
    _data({
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
    table = Table("STEP", "RESULT", "SECONDS", box=None, title="step timings",
                  title_justify="left")
    for step in result.results:
        if step.outcome.value != "not-run":
            _add_row(table, step.name, step.outcome.value, f"{step.elapsed:.1f}")
    _add_row(table, "total", "", f"{sum(s.elapsed for s in result.results):.1f}")
    _emit(table, err)


def _next_steps(profile: Any, lab: str) -> str:
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


@app.command(short_help="Remove the lab and check nothing of it is left.")
def down(
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
            loaded, lab = _resolve_lab(profile, name)
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
        with _locked(lab, f"down{_flags(profile, name)}"):
            result = core.down(lab, provider, members)
        return _down_report(lab, result, _chosen_output(output, json_out))

    _guard(body)


def _down_report(lab: str, result: Any, chosen: Output) -> int:
    """`down`'s report: what went, what was kept, and exit 1 when something is left."""
    if chosen is not Output.text:
        _data({"lab": lab, "removed": result.removed, "kept": result.kept,
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


@app.command(short_help="Show the lab's clusters, nodes and GPU cards in use.")
def status(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Show the lab: management cluster, each tenant's control plane, workers and nodes, and per
    GPU card the memory and cores in use with the pods using them."""

    def body() -> int:
        from gpulab import core

        loaded, lab = _resolve_lab(profile, name)
        info = core.status(lab, core.lab_provider(lab), loaded.profile)
        if not info["exists"]:
            raise core.no_lab(lab)
        mgmt = info["management"]
        if output is not Output.text:
            _data(info, output)
        else:
            _emit(f"lab {lab}: management cluster {mgmt['cluster']} is {mgmt['state']}")
            for table in core.status_tables(loaded.profile, info):
                _emit(table)
        if mgmt.get("api_error"):  # shown above as it is; the lab cannot be used (exit 4)
            raise HostError(mgmt["api_error"], hint=f"gpulab up --name {lab} builds or repairs "
                            f"it; gpulab logs --name {lab} collects diagnostics")
        return 0

    _guard(body)


@app.command(short_help="Check this host can run the lab, with a fix for each problem.")
def doctor(
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
    finding is ok, warn or fail, with the fix; exit 4 on a fail."""

    def body() -> int:
        from gpulab import core
        from gpulab.engine.progress import make_reporter
        from gpulab.tools import tool_versions

        loaded, lab = _resolve_lab(profile, name)
        cluster = _up_cluster(loaded.profile, lab, kubeconfig, context)
        tools = core.provider_tools(cluster)
        given = {"kind": kind_binary, "helm": helm_binary}  # --kind, --helm
        versions = tool_versions(loaded.profile)
        _install_tools(install_tools, {tool: (given[tool], versions[tool]) for tool in given
                                       if tool in tools or given[tool] is not None})
        with make_reporter(err, json_lines=False, verbose=False) as reporter:
            findings = core.doctor(loaded.profile, lab, reporter, pull=not no_pull,
                                   cluster=cluster)
        chosen = _chosen_output(output, json_out)
        if chosen is not Output.text:
            _data([f.to_dict() for f in findings], chosen)
        else:
            _print_findings(findings)
        return int(ExitCode.HOST) if any(f.status == "fail" for f in findings) else 0

    _guard(body)


def _install_tools(download: bool, tools: dict[str, tuple[Path | None, str]]) -> None:
    """`doctor --install-tools` / `--kind PATH` / `--helm PATH`: a binary given is checked and
    copied into the cache; a binary named by $GPULAB_KIND / $GPULAB_HELM is checked; a missing
    one is downloaded."""
    from gpulab.tools import TOOL_ENV, adopt_tool, check_version, find_tool, install_tool

    for tool, (given, version) in tools.items():
        if given is not None:
            path = adopt_tool(tool, given, version)
            err.print(f"installed {tool} {version} at {path} (from {given})", markup=False)
        elif download:
            found = find_tool(tool)
            variable = TOOL_ENV[tool]
            if found is not None and os.environ.get(variable, "").strip():
                check_version(tool, found, version, f"{variable}={found}")
                err.print(f"using {tool} at {found} ({variable})", markup=False)
            elif found is None:
                path = install_tool(tool, version)
                err.print(f"installed {tool} {version} at {path}", markup=False)


def _print_findings(findings: list[Any]) -> None:
    """Doctor's table (check, status, detail wrapped), then each fix whole on its own line, so
    the commands in it can be copied."""
    table = Table("CHECK", "STATUS", "DETAIL", box=None)
    table.columns[0].no_wrap = True
    table.columns[2].overflow = "fold"
    colors = {"ok": "green", "warn": "yellow", "fail": "red"}
    for f in findings:
        _add_row(table, f.check, literal(f.status, colors[f.status]), f.detail)
    _emit(table)
    fixes = [f for f in findings if f.fix]
    if fixes:
        _emit("\n".join(["", "to fix:", *(f"  {f.check}: {f.fix}" for f in fixes)]))


@app.command(short_help="Print the path of a tenant's kubeconfig.")
def kubeconfig(
    tenant: Annotated[str, typer.Argument(help="Tenant (or team) name, or 'management'.",
                                          autocompletion=_complete_members)],
    profile: ProfileOpt = None,
    name: NameOpt = None,
    export: Annotated[
        bool, typer.Option("--export", help="Print `export KUBECONFIG=...` for eval.")
    ] = False,
    merge: Annotated[
        bool, typer.Option("--merge", help="Add context gpulab-LAB-TENANT to your kubeconfig "
                                           "($KUBECONFIG or ~/.kube/config), as kind does; "
                                           "`gpulab down` removes it.")
    ] = False,
    port_forward: Annotated[
        bool, typer.Option("--port-forward",
                           help="A lab in an existing cluster: forward a local port through "
                                "the cluster's API to the team's vCluster (as `vcluster "
                                "connect` does), print the path of a kubeconfig for it and "
                                "wait until Ctrl-C.")
    ] = False,
    port: Annotated[
        int | None, typer.Option("--port", min=0, max=65535, metavar="<int>",
                                 help="With --port-forward: the local port on 127.0.0.1 "
                                      "(default: the team's api_host_port, the port its saved "
                                      "kubeconfig names; 0: any free port).")
    ] = None,
) -> None:
    """Print the path of a tenant's (or team's) saved kubeconfig (never its contents). With
    --port-forward: the path of a temporary kubeconfig reaching the team's vCluster through a
    port-forward, kept open until Ctrl-C (exit 130; only that file is removed)."""

    def body() -> int:
        from gpulab import core
        from gpulab.errors import UsageError

        if port is not None and not port_forward:
            raise UsageError("--port goes with --port-forward")
        if port_forward and merge:
            raise UsageError("--port-forward and --merge cannot be combined: the forwarded "
                             "kubeconfig lasts only while the command runs")
        loaded, lab = _resolve_lab(profile, name)
        folder = core.require_lab(lab)
        known = ["management", *loaded.profile.member_names()]
        if tenant not in known:
            raise UsageError(f"unknown tenant '{tenant}'", hint=f"choose from {', '.join(known)}")
        if port_forward:
            return _port_forward(lab, loaded.profile, tenant, port, export=export)
        path = folder / f"{tenant}.kubeconfig"
        if not path.is_file():
            raise HostError(f"lab '{lab}' is not up: no kubeconfig saved for {tenant} in "
                            f"{folder}", hint=f"run gpulab up --name {lab}")
        if tenant != "management" and core.lab_forwarded(lab):
            err.print(f"note: {tenant}'s vCluster is reached by port-forward: its kubeconfig "
                      f"answers only while `gpulab kubeconfig {tenant} --name {lab} "
                      "--port-forward` runs", markup=False, highlight=False)
        if merge:
            from gpulab import kubeconfigs, lab_record

            target = kubeconfigs.user_kubeconfig()
            context = kubeconfigs.context_name(lab, tenant)
            lab_record.record_context(lab, context, target)  # first: `down` removes it
            kubeconfigs.merge_file(path, target, context)
            err.print(f"added context {context} to {target} (mode 0600); use it with "
                      f"kubectl --context {context} or kubectl config use-context {context}",
                      markup=False)
            typer.echo(context)
            return 0
        typer.echo(f"export KUBECONFIG={path}" if export else str(path))
        return 0

    _guard(body)


@app.command(short_help="Print the commands that join a machine to a tenant (existing cluster).")
def join(
    tenant: Annotated[str, typer.Argument(help="Tenant name.",
                                          autocompletion=_complete_members)],
    profile: ProfileOpt = None,
    name: NameOpt = None,
    node: Annotated[
        str | None, typer.Option("--node", metavar="<str>",
                                 help="The machine's node name (default: "
                                      "gpulab-LAB-TENANT-worker).")
    ] = None,
    ttl: Annotated[
        str, typer.Option("--ttl", metavar="<duration>",
                          help="How long the join token lives, 1m to 24h.")
    ] = "1h",
) -> None:
    """For a lab on an existing cluster: create a short-lived bootstrap token in the tenant and
    print the kubeadm join for the machine, its labels, and HAMi with the NVIDIA device
    plugin (docs/own-cluster.md)."""

    def body() -> int:
        from gpulab import core

        seconds = core.join_ttl(ttl)
        loaded, lab = _resolve_lab(profile, name)
        typer.echo(core.join(lab, loaded.profile, tenant, node=node, ttl_seconds=seconds),
                   nl=False)
        return 0

    _guard(body)


def _port_forward(lab: str, profile: LabProfile, tenant: str, port: int | None, *,
                  export: bool) -> int:
    """`kubeconfig --port-forward`: open it, print the kubeconfig's path, wait for Ctrl-C (or
    SIGTERM/SIGHUP), then close it and remove that file only."""
    import time

    from gpulab import core

    def problem(message: str) -> None:
        err.print(f"port-forward: {message}", markup=False, highlight=False)

    with _stop_signals() as received:
        forward = None
        try:
            forward = core.port_forward(lab, profile, tenant, port=port, on_error=problem)
            typer.echo(f"export KUBECONFIG={forward.kubeconfig}" if export
                       else str(forward.kubeconfig))
            sys.stdout.flush()
            err.print(f"forwarding {forward.server} to pod {forward.namespace}/{forward.pod} "
                      f"port 8443 through the cluster's API; {tenant}'s vCluster answers "
                      f"{forward.version}. Use it: KUBECONFIG={forward.kubeconfig} kubectl get "
                      "namespaces. Ctrl-C stops the forward and removes that file.",
                      markup=False, highlight=False)
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            what = "stopped" if not received else "terminated"
            err.print(f"{what}: port-forward to {tenant}'s vCluster closed"
                      + (f"; removed {forward.kubeconfig}" if forward else ""), markup=False)
            return 128 + received[0] if received else int(ExitCode.INTERRUPTED)
        finally:
            if forward is not None:
                forward.close()


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
    against = _load(profile) if profile is not None else None
    if is_example(directory):  # never passed off as a real lab's run
        err.print(f"note: replaying {PROVENANCE} ({directory})", markup=False)
    return core.replay_verify(directory, tc, against)


@app.command(short_help="Run the acceptance checks on a lab, or on any HAMi or KAI cluster.")
def verify(
    profile: ProfileOpt = None,
    name: NameOpt = None,
    tc: Annotated[
        str | None, typer.Option("--tc", help="Only these checks, e.g. TC-05,TC-06 or KAI-05 "
                                               "(or 5,6).", autocompletion=_complete_checks)
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

        chosen = _chosen_output(output, json_out)
        machine = chosen is not Output.text
        if kubeconfig or context or inspect or dry_run or _cluster_recording(replay):
            if profile is not None or name is not None:
                raise UsageError("--kubeconfig, --context, --inspect and --dry-run look at a "
                                 "cluster gpulab did not build; -p/--name are for labs")
            return _verify_cluster(kubeconfig or [], context or [], inspect=inspect,
                                   dry_run=dry_run, namespace=namespace, replay=replay,
                                   record=record, output=chosen, keep=keep, junit=junit,
                                   tc=tc, verbose=verbose,
                                   timeout=_request_timeout(request_timeout),
                                   discovery=_request_timeout(discovery_timeout,
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
            loaded, lab = _resolve_lab(profile, name)
            recorded_profile = loaded.profile
            checks = core.verify_checks(loaded.profile.stack, tc)
            core.require_lab(lab)  # before the lock, which would make the lab's folder

            def progress(tenant: str, message: str) -> None:
                if verbose and not machine:
                    err.print(f"  {tenant}: {message}", markup=False, highlight=False)

            if not machine:
                err.print(f"verifying lab '{lab}' ...", markup=False)
            with _locked(lab, f"verify{_flags(profile, name)}"), _stop_signals() as received:
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
            _data(report_json(report), chosen)
        else:
            _print_report(report)
        return int(exit_code(report))

    _guard(body)


def _print_report(report: VerifyReport, next_step: str = "") -> None:
    """The verdicts as a table on stdout (a pass's evidence wrapped in it; the reason of any
    other result, and a finding, whole on a line of its own under the table, so the commands in
    it can be copied), then the summary, notes and next step on stderr."""
    from gpulab.verify.report import FINDING, summary_line, table_rows

    table = Table("CHECK", "TENANT", "RESULT", "EVIDENCE OR REASON", "SECONDS", box=None)
    table.columns[0].no_wrap = True
    table.columns[2].no_wrap = True
    table.columns[3].overflow = "fold"
    table.columns[4].justify = "right"
    colors = {"PASS": "green", "FAIL": "red", "ERROR": "red", "SKIP": "yellow",
              FINDING: "magenta"}
    below: list[str] = []
    for check, tenant, result, detail, seconds in table_rows(report):
        shown = detail
        if result != "PASS" and detail:
            below.append(f"{result} {check} ({tenant}): {detail}")
            shown = "see below"
        _add_row(table, check, tenant, literal(result, colors.get(result, "")), shown, seconds)
    _emit(table)
    if below:
        _emit("\n".join(["", *below]))
    err.print(summary_line(report), markup=False)
    for note in report.notes:
        err.print(f"warning: {note}", markup=False)
    if not report.ok and not report.replayed:
        err.print("next: " + (next_step or f"gpulab logs --name {report.lab} collects "
                              "diagnostics; --keep leaves the test pods for inspection"),
                  markup=False)


def _cluster_recording(replay: Path | None) -> bool:
    if replay is None:
        return False
    from gpulab.cluster.record import is_cluster_recording

    return is_cluster_recording(replay)


def _verify_cluster(kubeconfigs: list[Path], contexts: list[str], *, inspect: bool,
                    dry_run: bool, namespace: str | None, replay: Path | None,
                    record: Path | None, output: Output, keep: bool, junit: Path | None,
                    tc: str | None, verbose: bool, timeout: float | None,
                    discovery: float | None = 60) -> int:
    """`verify --kubeconfig` on clusters gpulab did not build (docs/verify-any-cluster.md):
    discovery (`--inspect`), the derived plan (`--dry-run`), or the run and its verdicts; or the
    same from a recording of them (`--replay`). Without --kubeconfig, kubectl's default
    kubeconfig ($KUBECONFIG, else ~/.kube/config) at its current context or each --context."""
    from gpulab.profile.base import dns_label

    if tc is not None:
        raise UsageError("--tc does not apply to --kubeconfig: every GPU-0x check runs")
    if replay is not None and (kubeconfigs or contexts):
        raise UsageError("--replay reads a recording; it takes no --kubeconfig or --context")
    if (inspect or dry_run) and (keep or junit):
        raise UsageError("--keep and --junit go with a run, not with --inspect / --dry-run")
    if namespace is not None:
        try:
            dns_label(namespace)
        except ValueError as err:
            raise UsageError(f"--namespace {namespace!r}: {err}") from None
    with _http_notes(verbose):
        if inspect or dry_run:
            return _inspect_clusters(kubeconfigs, contexts, dry_run=dry_run,
                                     namespace=namespace, replay=replay, record=record,
                                     output=output, timeout=timeout, discovery=discovery)
        return _run_clusters(kubeconfigs, contexts, namespace=namespace, replay=replay,
                             record=record, output=output, keep=keep, junit=junit,
                             verbose=verbose, timeout=timeout, discovery=discovery)


def _request_timeout(value: str, flag: str = "--request-timeout") -> float | None:
    """`--request-timeout` as kubectl reads it (30s, 1m, 500ms, a number of seconds; 0: none)."""
    from gpulab.cluster.kubeconfig import parse_duration

    try:
        return parse_duration(value)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None


@contextlib.contextmanager
def _http_notes(verbose: bool) -> Iterator[None]:
    """The HTTP client's own output, as gpulab lines: urllib3's warnings (an unverified TLS
    connection, ...) become one `note:` each, after the command's output, instead of raw
    Python warnings; its retry lines (and the Kubernetes client's) show only with -v."""
    import logging
    import warnings

    class Retries(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if verbose:
                err.print(f"  retry: {' '.join(record.getMessage().split())}", markup=False)

    handler = Retries(logging.WARNING)
    loggers = [logging.getLogger(n) for n in ("urllib3", "gpulab.adapters.kube")]
    saved = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for logger, propagate in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate
        _warnings_as_notes(caught)


def _warnings_as_notes(caught: list[Any]) -> None:
    import warnings

    def from_http(w: Any) -> bool:  # raised in, or of a category of, urllib3 or the client
        where = {w.category.__module__.split(".")[0], *Path(str(w.filename)).parts}
        return bool(where & {"urllib3", "kubernetes"})

    ours = [w for w in caught if from_http(w)]
    insecure = [w for w in ours if w.category.__name__ == "InsecureRequestWarning"]
    if insecure:
        err.print(f"note: {len(insecure)} request(s) went to an API server without checking "
                  "its TLS certificate (insecure-skip-tls-verify in the kubeconfig): anyone "
                  "on the network path could have answered", markup=False)
    for message in sorted({" ".join(str(w.message).split()) for w in ours
                           if w not in insecure}):
        err.print(f"note: the HTTP client warned: {message}", markup=False)
    for w in caught:  # anything else, as Python would have shown it
        if w not in ours:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _inspect_clusters(kubeconfigs: list[Path], contexts: list[str], *, dry_run: bool,
                      namespace: str | None, replay: Path | None, record: Path | None,
                      output: Output, timeout: float | None,
                      discovery: float | None = 60) -> int:
    import uuid

    from gpulab import core
    from gpulab.cluster.inventory import inventory
    from gpulab.cluster.plan import plan
    from gpulab.cluster.record import read_snapshots, write_snapshots
    from gpulab.cluster.report import inspection_data, inspection_lines, plan_lines

    snapshots = (read_snapshots(replay) if replay is not None
                 else core.inspect_clusters(kubeconfigs, contexts, request_timeout=timeout,
                                            discovery_timeout=discovery))
    if record is not None:
        write_snapshots(record, snapshots)
    found = [inventory(s) for s in snapshots]
    run_id = uuid.uuid4().hex[:12]
    plans = [plan(f, run_id, namespace) for f in found] if dry_run else None
    if output is not Output.text:
        _data(inspection_data(found, plans), output)
    else:
        lines = [line for f in found for line in inspection_lines(f)]
        for p in plans or ():
            lines += plan_lines(p)
        _emit("\n".join(lines))
    if any(f.error for f in found):
        return int(ExitCode.HOST)
    if plans is not None and not all(p.runnable for p in plans):
        return int(ExitCode.CHECKS_FAILED)
    return int(ExitCode.OK)


def _run_clusters(kubeconfigs: list[Path], contexts: list[str], *, namespace: str | None,
                  replay: Path | None, record: Path | None, output: Output, keep: bool,
                  junit: Path | None, verbose: bool, timeout: float | None,
                  discovery: float | None = 60) -> int:
    from gpulab import core
    from gpulab.cluster.execute import WAIT_NOTICE
    from gpulab.cluster.record import write_snapshots
    from gpulab.cluster.state import ClusterVerifyState
    from gpulab.verify.report import exit_code, report_json, write_junit

    machine = output is not Output.text

    def progress(member: str, message: str) -> None:  # long waits are shown without -v too
        if (verbose or message.startswith(WAIT_NOTICE)) and not machine:
            err.print(f"  {member}: {message}", markup=False, highlight=False)

    def explain(planned: Any) -> None:  # the plan, before anything is created (stderr)
        from gpulab.cluster.report import plan_lines

        if not machine:
            err.print("\n".join(plan_lines(planned)), markup=False, highlight=False)

    if replay is not None:
        report = core.replay_clusters(replay)
    else:
        if not machine:
            count = len(kubeconfigs) or max(len(contexts), 1)
            err.print(f"verifying {count} cluster(s) ...", markup=False)
        with _stop_signals() as received:
            try:
                report = core.verify_clusters(kubeconfigs, contexts, namespace=namespace,
                                              keep=keep, progress=progress, explain=explain,
                                              request_timeout=timeout,
                                              discovery_timeout=discovery)
            except KeyboardInterrupt:  # run_plan removed the namespace it was using
                what = "terminated" if received else "interrupted"
                err.print(f"{what}: verify stopped before judging; the namespace of the "
                          f"cluster being verified was deleted", markup=False)
                return 128 + received[0] if received else int(ExitCode.INTERRUPTED)
    state = report.state
    if record is not None and isinstance(state, ClusterVerifyState):
        write_snapshots(record, state.snapshots, state.runs)
    if junit is not None:
        write_junit(report, junit)
    if machine:
        _data(report_json(report), output)
    else:
        _print_report(report, next_step="--keep leaves the namespace and pods for "
                                        "inspection; --inspect shows what was found")
    if isinstance(state, ClusterVerifyState) and any(s.error for s in state.snapshots):
        return int(ExitCode.HOST)
    return int(exit_code(report))


@app.command(short_help="Collect a diagnostics bundle of the lab.")
def logs(
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

        loaded, lab = _resolve_lab(profile, name)
        provider = core.lab_provider(lab)  # in a cluster gpulab did not make: no Docker
        if not provider.exists(lab):  # no bundle of nothing
            raise core.no_lab(lab)
        target = folder or Path(f"gpulab-logs-{lab}-{time.strftime('%Y%m%d-%H%M%S')}")
        err.print(f"collecting diagnostics for lab '{lab}' ...", markup=False)
        path = core.collect_logs(lab, target, provider, loaded.profile, tar=tar)
        errors = target / "errors.txt"
        if errors.exists():
            err.print(f"some collectors failed, see {errors}", markup=False)
        typer.echo(str(path))
        return 0

    _guard(body)


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@app.command("labs", short_help="List every lab on this host and its state.")
def labs_command(output: OutputOpt = Output.text) -> None:
    """List every lab on this host (state folder and Docker labels): profile, stack, state
    (ready, partial, broken; unreachable for a lab in an existing cluster whose API does not
    answer), tenants, age, kubeconfigs, cluster (kind's, or an existing cluster's server and
    context); and leftovers without state."""

    def body() -> int:
        from gpulab import core

        try:
            reader = core.read_docker(timeout=3)
        except GpulabError as error:
            err.print(f"warning: Docker not reachable ({error}); states of kind labs are "
                      "unknown", markup=False)
            reader = None
        found = core.labs(reader)
        if output is not Output.text:
            _data(found, output)
            return 0
        if not found["labs"] and not found["leftovers"]:
            err.print("no labs on this host (gpulab up builds one)", markup=False)
            return 0
        table = Table("NAME", "PROFILE", "STACK", "STATE", "TENANTS", "AGE", "KUBECONFIGS",
                      "CLUSTER", box=None)
        for lab in found["labs"]:
            cluster = core.cluster_text(lab["cluster"])
            _add_row(table, lab["name"], lab["profile"] or "-", lab["stack"] or "-",
                     lab["state"], ",".join(lab["tenants"]) or "-", _age(lab["age_seconds"]),
                     str(len(lab["kubeconfigs"])), cluster)
        _emit(table)
        for left in found["leftovers"]:
            err.print(f"leftover: lab '{left['name']}' has containers but no state "
                      f"({', '.join(left['containers'])}); remove with `{left['remove']}`",
                      markup=False)
        return 0

    _guard(body)


app.command("ls", help="Alias of `gpulab labs`.", short_help="Alias of `gpulab labs`.")(
    labs_command)


@app.command("version", short_help="Print the versions of gpulab and all it deploys.")
def version_command(output: OutputOpt = Output.text) -> None:
    """gpulab's version and every version it deploys, per built-in profile (for bug reports)."""

    def body() -> int:
        from gpulab.profile.load import builtin_profiles
        from gpulab.tools import HELM_VERSION

        info: dict[str, Any] = {"gpulab": __version__, "python": sys.version.split()[0],
                                "helm": HELM_VERSION, "profiles": {}}
        for name in builtin_profiles():
            try:
                info["profiles"][name] = _load(name).profile.pins()
            except GpulabError as error:
                info["profiles"][name] = {"error": str(error)}
        if output is not Output.text:
            _data(info, output)
            return 0
        lines = [f"gpulab {info['gpulab']} (python {info['python']}, helm {info['helm']})"]
        for name, pins in info["profiles"].items():
            if "error" in pins:
                lines.append(f"{name}: {pins['error']}")
                continue
            lines.append(f"{name}: kind {pins['kind']}, node {pins['node_image']}")
            lines += [f"  chart {c['chart']} {c['version']} ({c['from']})" for c in pins["charts"]]
            lines += [f"  manifest {m['component']} {m['version']}" for m in pins["manifests"]]
            lines += [f"  {where}: {tag}" for where, tag in pins["images"].items()]
        _emit("\n".join(lines))
        return 0

    _guard(body)


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"
    pwsh = "pwsh"


def _shell(value: str) -> Shell:
    try:
        return Shell(value.strip().lower())
    except ValueError:
        choices = ", ".join(s.value for s in Shell)
        raise typer.BadParameter(f"'{value}' is not one of {choices}") from None


@app.command(short_help="Print the shell completion script for bash, zsh, fish or PowerShell.")
def completion(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh, fish, powershell or pwsh.",
                                           parser=_shell, metavar="SHELL")],
) -> None:
    """Print the completion script for SHELL (commands, lab names, profiles, tenants, check
    ids), as kind, kubectl and helm do; e.g. `source <(gpulab completion bash)` or
    `gpulab completion zsh > "${fpath[1]}/_gpulab"`."""
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="gpulab", complete_var="_GPULAB_COMPLETE",
                                     shell=shell.value))


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interrupt outside a guarded body
        sys.exit(int(ExitCode.INTERRUPTED))
