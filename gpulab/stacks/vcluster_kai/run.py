"""Entry points of the vcluster-kai `verify`: run the checks live, or judge a recording offline."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gpulab.stacks.common import lab_clients
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.checks.isolation import queue_finding
from gpulab.stacks.vcluster_kai.checks.registry import CHECK_IDS, select
from gpulab.stacks.vcluster_kai.observe import KaiGateways, observe_lab
from gpulab.verify.report import VerifyReport, not_recorded_result
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.profile.base import LabProfile
    from gpulab.providers.base import LabCluster
    from gpulab.stacks.vcluster_kai.observe import Timeouts
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState
    from gpulab.verify.observe import Clock
    from gpulab.verify.report import Finding

__all__ = ["check_ids", "evaluate", "parse_checks", "replay", "run_checks", "run_verify",
           "write_recording"]


def evaluate(
    state: KaiLabState,
    profile: VclusterKaiProfile,
    checks: Sequence[str] | None = None,
    *,
    replayed: bool = True,
    seconds: float = 0.0,
) -> VerifyReport:
    """Judge an observed (or recorded) state: pure, no I/O.

    One result per check and team (checks in registry order, teams in profile order); a check
    asked for that the state was not observed for reports `error`; judged by default, the checks
    a recording made with --tc does not hold are `skip` results saying they were not recorded.
    The queue-label finding is judged with KAI-08 (its probe runs in KAI-08's phase).
    """
    # on a cluster gpulab did not make, the pods were sized from the GPU nodes found there
    profile = kr.sized_for_host(profile, state.host.gpus, state.host.gpu_nodes)
    recorded = state.checks or CHECK_IDS
    ids = tuple(checks) if checks is not None else recorded
    # Judged by default, a recording made with --tc holds only some checks: the others are
    # shown as not recorded, never left out (docs/checks.md "Record and replay").
    unrecorded = () if checks is not None else tuple(c for c in CHECK_IDS if c not in recorded)
    selected = select(ids)
    results: list[CheckResult] = []
    for check in select((*ids, *unrecorded)):
        for team in profile.teams:
            st = state.team(team.name)
            if check.id in unrecorded:
                result = not_recorded_result(check.id, team.name, recorded)
            elif check.id not in state.checks:
                observed = ", ".join(state.checks) or "none"
                result = CheckResult(check.id, team.name, "error",
                                     reason=f"{check.id} was not observed in this run or "
                                            f"recording (observed: {observed})")
            else:
                try:
                    result = check.run(state, profile, team.name)
                except Exception as err:  # a bug in a check: report it as a value
                    result = CheckResult(check.id, team.name, "error",
                                         reason=f"internal error in {check.id}: "
                                                f"{type(err).__name__}: {err}")
            timing = st.timings.get(check.id, 0.0) if st else 0.0
            result = result.with_next_step(check.next_step(state.lab, team.name, profile))
            results.append(result.with_meta(title=check.title, seconds=timing))
    notes = [f"{name}: {st.cleanup_error}" for name, st in state.teams.items() if st.cleanup_error]
    findings: tuple[Finding, ...] = ()
    if any(c.id == "KAI-08" for c in selected) and "KAI-08" in state.checks:
        finding, note = queue_finding(state, profile)
        findings = (finding,) if finding is not None else ()
        if note:
            notes.append(note)
    return VerifyReport(lab=state.lab, results=tuple(results), state=state, seconds=seconds,
                        replayed=replayed, notes=tuple(notes), findings=findings,
                        all_checks=CHECK_IDS, not_recorded=unrecorded)


def run_verify(
    profile: VclusterKaiProfile,
    lab: str,
    gateways: KaiGateways,
    *,
    checks: Sequence[str] | None = None,
    keep: bool = False,
    timeouts: Timeouts | None = None,
    clock: Clock | None = None,
    progress: Callable[[str, str], None] | None = None,
    gpus: str = "pool",
) -> VerifyReport:
    """Observe the lab (observe.observe_lab) and judge it; lab problems are results."""
    selected = select(checks)
    started = time.monotonic()
    state = observe_lab(profile, lab, gateways, checks=selected, keep=keep, timeouts=timeouts,
                        clock=clock, progress=progress, gpus=gpus)
    return evaluate(state, profile, [c.id for c in selected], replayed=False,
                    seconds=time.monotonic() - started)


# --------------------------------------------------------------------------- the stack's verify


def run_checks(
    profile: VclusterKaiProfile,
    lab: str,
    folder: Path,
    *,
    checks: list[str] | None,
    keep: bool,
    progress: Callable[[str, str], None] | None = None,
    reach: Callable[[Path], Path] | None = None,
    cluster: LabCluster | None = None,
) -> VerifyReport:
    """The live `verify` (KAI-01..KAI-08 and the queue finding) through the saved kubeconfigs,
    each team's through `reach` when the provider gives one (a port-forward lab: a copy that
    reaches the vCluster through a forward); where the provider says the lab's GPUs are those
    found (`cluster`, its LabCluster), verified on the GPUs found there."""
    gpus = cluster.gpus if cluster is not None else "pool"
    members = [t.name for t in profile.teams]
    with lab_clients(lab, folder, members) as (host, team, cross):
        gateways = KaiGateways(host=host, team=team, cross=cross)
        if reach is not None:
            with _reached(folder, reach) as reached:
                return run_verify(profile, lab, reached(gateways), checks=checks, keep=keep,
                                  progress=progress, gpus=gpus)
        return run_verify(profile, lab, gateways, checks=checks, keep=keep, progress=progress,
                          gpus=gpus)


@contextmanager
def _reached(folder: Path, reach: Callable[[Path], Path]
             ) -> Iterator[Callable[[KaiGateways], KaiGateways]]:
    """The gateways with each team's vCluster (and KAI-08's credential probes) reached through
    the kubeconfig `reach` gives for the team's saved one (the provider's: forwards of the
    cluster's API on a port-forward lab); the clients made here closed after."""
    from dataclasses import replace

    from gpulab.verify.observe import kubeconfig_cross_gateway

    made: list[KubeGateway] = []

    def client(path: Path) -> KubeGateway:
        made.append(_kube_client(path))
        return made[-1]

    def kubeconfig_of(member: str) -> Path:
        return reach(folder / f"{member}.kubeconfig")

    def reached(gateways: KaiGateways) -> KaiGateways:
        return replace(gateways, team=lambda member: client(kubeconfig_of(member)),
                       cross=kubeconfig_cross_gateway(kubeconfig_of, client,
                                                      scratch=folder / "verify"))

    try:
        yield reached
    finally:
        for made_client in made:
            close = getattr(made_client, "close", None)
            if callable(close):
                close()


def _kube_client(path: Path) -> KubeGateway:
    """A client of the kubeconfig at `path`, as lab_clients makes them."""
    from gpulab.adapters.kube import KubeClient

    return KubeClient(path)


def check_ids() -> list[str]:
    """Every check of this stack, in order (for completion and docs)."""
    return list(CHECK_IDS)


def parse_checks(value: str | None) -> list[str] | None:
    """`--tc` for this stack: `KAI-05,kai-06` or `5,6`; None = every check."""
    from gpulab.stacks.vcluster_kai.checks.registry import parse_tc
    parsed = parse_tc(value)
    return None if parsed is None else list(parsed)


def replay(directory: Path, checks: list[str] | None, profile: LabProfile | None = None
           ) -> tuple[VerifyReport, VclusterKaiProfile]:
    """Judge a recording made by this stack's verify, offline, with `profile`, else the one it
    was recorded with."""
    from gpulab.stacks.vcluster_kai.record import read_recording
    recording = read_recording(directory)
    judged = recording.profile() if profile is None else _kai_profile(profile)
    return evaluate(recording.state, judged, checks), judged


def _kai_profile(profile: LabProfile) -> VclusterKaiProfile:
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

    if not isinstance(profile, VclusterKaiProfile):  # pragma: no cover - core checks the stack
        raise TypeError(f"not a vcluster-kai profile: {profile.stack}")
    return profile


def write_recording(directory: Path, report: VerifyReport, profile: VclusterKaiProfile) -> Path:
    from gpulab.stacks.vcluster_kai.record import write_recording as write
    from gpulab.stacks.vcluster_kai.state import KaiLabState
    if not isinstance(report.state, KaiLabState):  # pragma: no cover - a bug in the caller
        raise TypeError("not a vcluster-kai verify report")
    return write(directory, report.state, profile)
