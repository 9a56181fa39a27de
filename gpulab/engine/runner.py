"""Run a plan: each step observes then acts; independent steps (tenants) run concurrently.

The lab's state is what exists, so a re-run skips satisfied steps and continues from the first one
that is not; there is no local progress file to get out of sync. A failed step blocks only the
steps that depend on it (one tenant's failure does not stop another tenant); an interrupt stops
new steps from starting. Every step's result is reported.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from gpulab.errors import GpulabError, StepError, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gpulab.engine.step import Step, StepContext

__all__ = [
    "Event",
    "Outcome",
    "Reporter",
    "RunResult",
    "StepResult",
    "order_steps",
    "run_steps",
]


class Outcome(str, Enum):
    DONE = "done"
    SKIPPED = "skipped"  # already satisfied
    FAILED = "failed"
    NOT_RUN = "not-run"  # blocked by a failure or an interrupt


@dataclass(frozen=True)
class Event:
    """A progress event: `started`, `note`, `waiting` (what the step waits for and for how
    long at most, in `message`), `done`, `skipped`, `failed`."""

    step: str
    kind: str
    title: str
    elapsed: float = 0.0
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "event": self.kind,
            "title": self.title,
            "elapsed": round(self.elapsed, 3),
            "message": self.message,
        }


class Reporter(Protocol):
    def __call__(self, event: Event) -> None: ...


@dataclass(frozen=True)
class StepResult:
    name: str
    title: str
    outcome: Outcome
    elapsed: float = 0.0
    error: GpulabError | None = None
    last_seen: str = ""


@dataclass
class RunResult:
    results: list[StepResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.interrupted and all(
            r.outcome in (Outcome.DONE, Outcome.SKIPPED) for r in self.results
        )

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.outcome is Outcome.FAILED]

    @property
    def built_anything(self) -> bool:
        """True when at least one step is done (now or before): something of the lab exists."""
        return any(r.outcome in (Outcome.DONE, Outcome.SKIPPED) for r in self.results)

    @property
    def all_skipped(self) -> bool:
        return bool(self.results) and all(r.outcome is Outcome.SKIPPED for r in self.results)


def order_steps(steps: Sequence[Step]) -> list[Step]:
    """Steps in a dependency-respecting order (stable for independent steps)."""
    by_name = {step.name: step for step in steps}
    if len(by_name) != len(steps):
        raise UsageError("plan has two steps with the same name")  # pragma: no cover - a bug
    ordered: list[Step] = []
    placed: set[str] = set()
    pending = list(steps)
    while pending:
        progressed = False
        for step in list(pending):
            if all(dep in placed or dep not in by_name for dep in step.requires):
                ordered.append(step)
                placed.add(step.name)
                pending.remove(step)
                progressed = True
        if not progressed:
            names = ", ".join(s.name for s in pending)
            raise UsageError(f"plan has a dependency cycle among: {names}")  # pragma: no cover
    return ordered


def run_steps(
    steps: Sequence[Step],
    ctx: StepContext,
    report: Reporter,
    *,
    max_workers: int = 8,
    clock: Callable[[], float] = time.monotonic,
) -> RunResult:
    """Run `steps` respecting `requires`; steps whose dependencies are met run concurrently."""
    ordered = order_steps(steps)
    known = {s.name for s in ordered}
    results: dict[str, StepResult] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def execute(step: Step) -> StepResult:
        started = clock()
        report(Event(step.name, "started", step.title))
        step_ctx = _scoped(ctx, step.name, report, step.title)
        try:
            if step.satisfied(step_ctx):
                result = StepResult(step.name, step.title, Outcome.SKIPPED, clock() - started)
                report(Event(step.name, "skipped", step.title, result.elapsed, "already done"))
                return result
            step.apply(step_ctx)
        except GpulabError as err:
            last = ctx.last_seen.get(step.name, "")
            wrapped = (
                err if isinstance(err, StepError) else StepError(step.name, err, last_seen=last)
            )
            elapsed = clock() - started
            result = StepResult(step.name, step.title, Outcome.FAILED, elapsed, wrapped, last)
            report(Event(step.name, "failed", step.title, result.elapsed, str(err)))
            return result
        result = StepResult(step.name, step.title, Outcome.DONE, clock() - started)
        report(Event(step.name, "done", step.title, result.elapsed))
        return result

    running: dict[Future[StepResult], str] = {}
    interrupted = False
    executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="gpulab-step")
    try:
        while True:
            with lock:
                finished = set(results)
            ready = [
                s
                for s in ordered
                if s.name not in finished
                and s.name not in running.values()
                and all(dep in finished or dep not in known for dep in s.requires)
                and all(
                    results[dep].outcome in (Outcome.DONE, Outcome.SKIPPED)
                    for dep in s.requires
                    if dep in results
                )
            ]
            if not stop.is_set():
                for step in ready:
                    running[executor.submit(execute, step)] = step.name
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                result = future.result()  # bugs in a step propagate with their traceback
                with lock:
                    results[name] = result
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        for future in running:
            future.cancel()
    finally:
        executor.shutdown(wait=not interrupted, cancel_futures=True)
    ordered_results = [
        results.get(s.name, StepResult(s.name, s.title, Outcome.NOT_RUN)) for s in ordered
    ]
    return RunResult(ordered_results, interrupted)


def _scoped(ctx: StepContext, step: str, report: Reporter, title: str) -> StepContext:
    """The shared context, with `note` bound to this step's events."""
    from dataclasses import replace

    from gpulab.engine.wait import waiting_text

    return replace(
        ctx,
        note=lambda message: report(Event(step, "note", title, 0.0, message)),
        waiting=lambda what, seconds: report(Event(step, "waiting", title, 0.0,
                                                   waiting_text(what, seconds))),
        last_seen=ctx.last_seen,
    )
