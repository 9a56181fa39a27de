"""Bounded waits that remember what they last saw, so a timeout can say it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NoReturn

from tenacity import Retrying, retry_if_result, wait_fixed

from gpulab.errors import AdapterError, GpulabError

if TYPE_CHECKING:
    from collections.abc import Callable

    from tenacity import RetryCallState

    from gpulab.engine.step import StepContext

__all__ = ["WaitTimeout", "duration", "wait_until", "waiting_text"]


def duration(seconds: float) -> str:
    """`45s`, `5m`, `1m30s`, `1h`: a wait's length as a person reads it."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "",
             f"{secs}s" if secs or not total else ""]
    return "".join(parts)


def waiting_text(what: str, seconds: float) -> str:
    """What a step waits for and how long it will wait at most."""
    return f"waiting up to {duration(seconds)} for {what}"


class WaitTimeout(GpulabError):
    """A bounded wait ran out; `last_seen` is the latest observation."""

    def __init__(self, what: str, seconds: float, last_seen: str) -> None:
        detail = f"; last seen: {last_seen}" if last_seen else ""
        super().__init__(f"timed out after {seconds:.0f}s waiting for {what}{detail}")
        self.last_seen = last_seen


def wait_until(
    ctx: StepContext,
    step: str,
    what: str,
    probe: Callable[[], tuple[bool, str]],
    *,
    timeout: float,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Poll `probe` (→ ok, observation) until ok or `timeout` seconds; returns the observation.

    Adapter errors while polling (an API not up yet, a webhook warming up) count as observations,
    not failures: they are retried until the deadline and then reported as the last thing seen.
    The deadline is read from `clock` and the pauses go through `ctx.sleep` (tenacity's own
    time source is never used), so tests run it in no time.
    """
    limit = timeout * ctx.timeout_scale
    deadline = clock() + limit

    said: list[bool] = []

    def attempt() -> tuple[bool, str]:
        try:
            ok, seen = probe()
        except AdapterError as err:
            ok, seen = False, str(err)
        ctx.observe(step, f"{what}: {seen}" if seen else what)
        if not ok and not said:  # once, when it turns out to be a wait: what, and how long
            said.append(True)
            ctx.waiting(what, limit)
        return ok, seen

    def timed_out(state: RetryCallState) -> NoReturn:
        seen = state.outcome.result()[1] if state.outcome else ""
        raise WaitTimeout(what, limit, seen)

    _, seen = Retrying(
        retry=retry_if_result(lambda result: not result[0]),
        stop=lambda _state: clock() >= deadline,
        wait=wait_fixed(interval * min(ctx.timeout_scale, 1.0)),
        sleep=ctx.sleep,
        retry_error_callback=timed_out,
    )(attempt)
    return seen
