"""Entry points for `gpulab verify`: run the checks live, or re-evaluate a recording offline."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gpulab.stacks.common import lab_clients
from gpulab.stacks.kamaji_hami.checks.registry import CHECK_IDS, select
from gpulab.stacks.kamaji_hami.observe import Gateways, observe_lab
from gpulab.verify.report import VerifyReport, not_recorded_result
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from gpulab.profile.base import LabProfile
    from gpulab.providers.base import LabCluster
    from gpulab.stacks.kamaji_hami.observe import Timeouts
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.observe import Clock

__all__ = ["check_ids", "evaluate", "parse_checks", "replay", "run_checks", "run_verify",
           "write_recording"]


def evaluate(
    state: LabState,
    profile: KamajiHamiProfile,
    checks: Sequence[str] | None = None,
    *,
    replayed: bool = True,
    seconds: float = 0.0,
) -> VerifyReport:
    """Judge an observed (or recorded) state: pure, no I/O.

    Args:
        state: a live observation or `read_recording(...).state`.
        profile: what the lab should be (usually the recording's own profile).
        checks: TC ids to judge (default: those the state was observed for, else all; the
            others are then `skip` results saying they were not recorded). A check asked for
            that the state was not observed for reports `error`.
        replayed: marks the report as a replay (shown in JSON).
        seconds: wall time to report.

    Returns:
        A VerifyReport with one result per check and profile tenant, in TC then profile order.
    """
    recorded = state.checks or CHECK_IDS
    ids = tuple(checks) if checks is not None else recorded
    # Judged by default, a recording made with --tc holds only some checks: the others are
    # shown as not recorded, never left out (docs/checks.md "Record and replay").
    unrecorded = () if checks is not None else tuple(c for c in CHECK_IDS if c not in recorded)
    results: list[CheckResult] = []
    for check in select((*ids, *unrecorded)):
        for spec in profile.tenants:
            tenant = state.tenant(spec.name)
            if check.id in unrecorded:
                result = not_recorded_result(check.id, spec.name, recorded)
            elif check.id not in state.checks:
                observed = ", ".join(state.checks) or "none"
                result = CheckResult(check.id, spec.name, "error",
                                     reason=f"{check.id} was not observed in this run or "
                                            f"recording (observed: {observed})")
            else:
                try:
                    result = check.run(state, profile, spec.name)
                except Exception as err:  # a bug in a check: report it as a value (nox)
                    result = CheckResult(check.id, spec.name, "error",
                                         reason=f"internal error in {check.id}: "
                                                f"{type(err).__name__}: {err}")
            timing = tenant.timings.get(check.id, 0.0) if tenant else 0.0
            result = result.with_next_step(check.next_step(state.lab, spec.name, profile))
            results.append(result.with_meta(title=check.title, seconds=timing))
    notes = tuple(
        f"{name}: {st.cleanup_error}" for name, st in state.tenants.items() if st.cleanup_error
    )
    return VerifyReport(lab=state.lab, results=tuple(results), state=state, seconds=seconds,
                        replayed=replayed, notes=notes, all_checks=CHECK_IDS,
                        not_recorded=unrecorded)


def run_verify(
    profile: KamajiHamiProfile,
    lab: str,
    gateways: Gateways,
    *,
    checks: Sequence[str] | None = None,
    keep: bool = False,
    timeouts: Timeouts | None = None,
    clock: Clock | None = None,
    progress: Callable[[str, str], None] | None = None,
    complete_binds: bool = True,
    max_workers: int | None = None,
    workers: str = "",
) -> VerifyReport:
    """Observe the lab (tenants concurrently, see observe.observe_lab) and judge it.

    Args:
        profile, lab: the lab's profile and name.
        gateways: Gateways(management, tenant=name → KubeGateway, cross=CrossTenantGateway).
        checks: TC ids from `--tc` (registry.parse_tc); None = all eight.
        keep: `--keep`: leave the verify namespace and pods in the tenants.
        timeouts, clock, progress, complete_binds, max_workers, workers: see
            observe.observe_lab.

    Returns:
        The VerifyReport; `report.state` is what `--record DIR` saves (report.write_recording).
        Lab problems are results, never exceptions; UsageError only for unknown check ids.
    """
    selected = select(checks)
    started = time.monotonic()
    state = observe_lab(profile, lab, gateways, checks=selected, keep=keep, timeouts=timeouts,
                        clock=clock, progress=progress, complete_binds=complete_binds,
                        max_workers=max_workers, workers=workers)
    return evaluate(state, profile, [c.id for c in selected], replayed=False,
                    seconds=time.monotonic() - started)


# --------------------------------------------------------------------------- the stack's verify


def run_checks(
    profile: KamajiHamiProfile,
    lab: str,
    folder: Path,
    *,
    checks: list[str] | None,
    keep: bool,
    progress: Callable[[str, str], None] | None = None,
    reach: Callable[[Path], Path] | None = None,
    cluster: LabCluster | None = None,
) -> VerifyReport:
    """The live `verify` of TC-01..TC-08 through the lab's saved kubeconfigs in `folder`: the
    control planes through the management cluster's (on an existing cluster, the one lab.json
    names), each tenant through its own (`reach` is always None: a tenant's control plane is
    reached at its own address, on an existing cluster a LoadBalancer's). A lab whose workers
    are machines that joined it (`cluster`: its provider's LabCluster says `join`; on an
    existing cluster `cluster.workers: machines`, the default there) is judged on the nodes
    each tenant lists and the GPUs they register (observe.observe_lab's `workers`)."""
    members = [t.name for t in profile.tenants]
    with lab_clients(lab, folder, members) as (management, tenant, cross):
        gateways = Gateways(management=management, tenant=tenant, cross=cross)
        return run_verify(profile, lab, gateways, checks=checks, keep=keep, progress=progress,
                          workers=workers_of(cluster))


def workers_of(cluster: LabCluster | None) -> str:
    """render.MACHINES when the provider says the lab's workers are machines that join
    (`cluster`, its LabCluster); '' for kindest/node worker containers on this host."""
    from gpulab.stacks.kamaji_hami.render import MACHINES

    return MACHINES if cluster is not None and cluster.workers == "join" else ""


def check_ids() -> list[str]:
    """Every check of this stack, in order (for completion and docs)."""
    return list(CHECK_IDS)


def parse_checks(value: str | None) -> list[str] | None:
    """`--tc` for this stack: `TC-05,tc-06` or `5,6`; None = every check."""
    from gpulab.stacks.kamaji_hami.checks.registry import parse_tc
    parsed = parse_tc(value)
    return list(parsed) if parsed else None


def replay(directory: Path, checks: list[str] | None, profile: LabProfile | None = None
           ) -> tuple[VerifyReport, KamajiHamiProfile]:
    """Judge a kamaji-hami recording offline with `profile`, else the one it was recorded with."""
    from gpulab.stacks.kamaji_hami.record import read_recording
    recording = read_recording(directory)
    judged = recording.profile() if profile is None else _kamaji_profile(profile)
    return evaluate(recording.state, judged, checks), judged


def _kamaji_profile(profile: LabProfile) -> KamajiHamiProfile:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

    if not isinstance(profile, KamajiHamiProfile):  # pragma: no cover - core checks the stack
        raise TypeError(f"not a kamaji-hami profile: {profile.stack}")
    return profile


def write_recording(directory: Path, report: VerifyReport, profile: KamajiHamiProfile) -> Path:
    """Save what a kamaji-hami verify observed (docs/recording-format.md)."""
    from gpulab.stacks.kamaji_hami.record import write_recording as write
    from gpulab.stacks.kamaji_hami.state import LabState
    if not isinstance(report.state, LabState):  # pragma: no cover - a report of another stack
        raise TypeError("not a kamaji-hami verify report")
    return write(directory, report.state, profile)
