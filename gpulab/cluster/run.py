"""`verify --kubeconfig`'s entry points: judge what was read and done (pure), and the live run."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING

from gpulab.cluster.checks import judge
from gpulab.cluster.execute import Timeouts, probe_isolation, run_plan
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import DISCOVERY_TIMEOUT, read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.record import read_recording
from gpulab.cluster.state import ClusterVerifyState
from gpulab.verify.observe import Clock
from gpulab.verify.report import VerifyReport

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.cluster.plan import VerifyPlan
    from gpulab.cluster.state import ClusterRun, ClusterSnapshot
    from gpulab.verify.observe import CrossTenantGateway

__all__ = ["evaluate", "replay", "run_verify"]


def _subject(snapshots: Sequence[ClusterSnapshot]) -> str:
    return "cluster " + ", ".join(s.name for s in snapshots)


def replay(directory: Path) -> VerifyReport:
    """The verdicts of a recording of `verify --kubeconfig` (record.write_snapshots)."""
    members = read_recording(directory)
    snapshots = tuple(snapshot for snapshot, _run in members)
    state = ClusterVerifyState(lab=_subject(snapshots), snapshots=snapshots,
                               runs=tuple(run for _s, run in members if run is not None),
                               observed_at=snapshots[0].observed_at)
    return evaluate(state)


def evaluate(state: ClusterVerifyState, *, namespace: str | None = None,
             replayed: bool = True) -> VerifyReport:
    """The verdicts of GPU-01..GPU-06 per cluster over a run (live or recorded): the plan is
    derived again from each snapshot, with the run's id and namespace, so it is the one the run
    followed."""
    runs = {run.member: run for run in state.runs}
    results = []
    for snapshot in state.snapshots:
        found = inventory(snapshot)
        done = runs.get(snapshot.name)
        planned = plan(found, done.run_id if done else "", done.namespace if done else namespace)
        results += judge(found, planned, done, clusters=len(state.snapshots))
    notes = [f"{run.member}: {run.cleanup_error}" for run in state.runs if run.cleanup_error]
    notes += [f"{run.member}: namespace {run.namespace} left on purpose (--keep): kubectl "
              f"delete namespace {run.namespace}" for run in state.runs if run.left]
    return VerifyReport(lab=state.lab, results=tuple(results), state=state,
                        seconds=state.seconds, replayed=replayed, notes=tuple(notes),
                        judged_against="what the clusters showed when recorded" if replayed
                        else "")


def _saying(say: Callable[[str, str], None], member: str) -> Callable[[str], None]:
    return lambda message: say(member, message)


def run_verify(clients: Sequence[tuple[str, str, KubeGateway]], *,
               namespace: str | None = None, keep: bool = False,
               timeouts: Timeouts | None = None, clock: Clock | None = None,
               progress: Callable[[str, str], None] | None = None,
               cross: CrossTenantGateway | None = None,
               explain: Callable[[VerifyPlan], None] | None = None,
               discovery_timeout: float | None = DISCOVERY_TIMEOUT) -> VerifyReport:
    """Read every cluster, then run each runnable plan (one cluster after the other; each run
    removes its namespace before the next starts, also when interrupted), and judge. With
    several clusters, each run's pods are looked for from the others while they exist, and each
    cluster's credentials are presented to the others (`cross`, GPU-06). `explain` is shown each
    plan (or refusal) before anything is created in that cluster. Each cluster's discovery has
    `discovery_timeout` seconds in all (None: no total bound)."""
    clock = clock or Clock()
    say = progress or (lambda _m, _t: None)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = clock.now()
    run_id = uuid.uuid4().hex[:12]
    snapshots = [read_cluster(kube, name, server, deadline=discovery_timeout)
                 for name, server, kube in clients]
    runs: list[ClusterRun] = []
    for (name, server, kube), snapshot in zip(clients, snapshots, strict=True):
        planned = plan(inventory(snapshot), run_id, namespace)
        if explain is not None:
            explain(planned)
        if not planned.runnable:
            say(name, f"not run: {'; '.join(planned.refusals)}")
            continue
        say(name, f"running in namespace {planned.namespace}")
        others = [c for c in clients if c[0] != name]
        look = (partial(probe_isolation, name, planned.namespace, others=others,
                        server=server, cross=cross) if others else None)
        runs.append(run_plan(kube, planned, timeouts=timeouts, clock=clock, keep=keep,
                             say=_saying(say, name), while_running=look))
    state = ClusterVerifyState(lab=_subject(snapshots), snapshots=tuple(snapshots),
                               runs=tuple(runs), observed_at=started,
                               seconds=round(clock.now() - wall, 3))
    return evaluate(state, namespace=namespace, replayed=False)
