"""`gpulab verify` on clusters gpulab did not build (docs/verify-any-cluster.md): what is
there (`--inspect`), what verify would create (`--dry-run`), the run and its verdicts, or the
same from a recording of them."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from gpulab.cli.common import Output, data, emit, err
from gpulab.cli.options import stop_signals
from gpulab.cli.verify_report import print_report
from gpulab.errors import ExitCode, UsageError
from gpulab.terminal import literal

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["parse_timeout", "verify_cluster"]


def verify_cluster(kubeconfigs: list[Path], contexts: list[str], *, inspect: bool,
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


def parse_timeout(value: str, flag: str = "--request-timeout") -> float | None:
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
        data(inspection_data(found, plans), output)
    else:
        lines = [line for f in found if not f.error for line in inspection_lines(f)]
        for p in plans or ():
            lines += plan_lines(p)
        if lines:
            emit("\n".join(lines))
    for f in found:  # a cluster that did not answer: an error, on stderr, once
        if f.error:
            err.print(Text.assemble(("error:", "bold red"), " ",
                                    literal(inspection_lines(f)[0])))
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

    refused: list[Any] = []  # shown after the run: nothing is created in those clusters

    def explain(planned: Any) -> None:  # the plan, before anything is created (stderr)
        from gpulab.cluster.report import plan_lines

        if not planned.runnable:
            refused.append(planned)
        elif not machine:
            err.print("\n".join(plan_lines(planned)), markup=False, highlight=False)

    if replay is not None:
        report = core.replay_clusters(replay)
    else:
        if not machine:
            count = len(kubeconfigs) or max(len(contexts), 1)
            err.print(f"verifying {count} cluster(s) ...", markup=False)
        with stop_signals() as received:
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
        write_junit(report, junit, properties=None if replay is None else {
            "gpulab.recording": str(replay)})
    silent = _unanswered(state, refused, machine=machine,
                         deadline=None if replay is not None else (timeout, discovery))
    if silent and not machine:  # no cluster answered: said once each above, not per check
        return int(ExitCode.HOST)
    if machine:
        data(report_json(report), output)
    else:
        print_report(report, next_step="--keep leaves the namespace and pods for "
                                        "inspection; --inspect shows what was found")
    if isinstance(state, ClusterVerifyState) and any(s.error for s in state.snapshots):
        return int(ExitCode.HOST)
    return int(exit_code(report))


def _unanswered(state: Any, refused: list[Any], *, machine: bool,
                deadline: tuple[float | None, float | None] | None) -> bool:
    """The clusters whose API server did not answer, one `error:` line each on stderr (the
    server, and the deadlines of a live run); the other refusals as their plans say. True when
    no cluster answered: the report would only repeat it, per check."""
    from gpulab.cluster.inventory import http_status
    from gpulab.cluster.report import plan_lines
    from gpulab.cluster.state import ClusterVerifyState
    from gpulab.core import FOREIGN_UNREACHABLE

    snapshots = state.snapshots if isinstance(state, ClusterVerifyState) else ()
    silent = {s.name: s for s in snapshots if s.error and not http_status(s.error)}
    for snapshot in silent.values():
        within = ""
        if deadline is not None:
            request, discovery = deadline
            parts = [f"{request:g}s per request (--request-timeout)" if request else "",
                     f"{discovery:g}s in all (--discovery-timeout)" if discovery else ""]
            within = f" (deadline: {', '.join(p for p in parts if p) or 'none'})"
        err.print(f"error: cluster {snapshot.name}: the API server at {snapshot.server} did "
                  f"not answer{within}: {snapshot.error} ({FOREIGN_UNREACHABLE})",
                  markup=False, highlight=False)
    if not machine:
        for planned in refused:
            if planned.member not in silent:
                err.print("\n".join(plan_lines(planned)), markup=False, highlight=False)
    return bool(snapshots) and len(silent) == len(snapshots)
