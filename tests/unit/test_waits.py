"""The bounded waits (engine `wait_until`, verify `poll`), now tenacity loops: the same probes at
the same moments, the same deadline, read from the injected clock only; no real sleep."""

from __future__ import annotations

import pytest

from gpulab.engine.step import StepContext
from gpulab.engine.wait import WaitTimeout, wait_until
from gpulab.errors import AdapterError, GpulabError
from gpulab.verify.observe import Clock, Interrupted, poll, stoppable


class FakeTime:
    """A clock that moves only when slept on; remembers every sleep and when each probe ran."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self.probes: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(autouse=True)
def _no_real_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """tenacity's own clock and sleep must not be what the waits use."""
    import time

    import tenacity

    def refuse(*_args: object) -> None:
        raise AssertionError("a real sleep")

    monkeypatch.setattr(time, "sleep", refuse)
    monkeypatch.setattr(tenacity, "sleep", refuse, raising=False)


def _ctx(fake: FakeTime, scale: float = 1.0) -> StepContext:
    return StepContext("lab", None, sleep=fake.sleep, timeout_scale=scale)


def test_wait_until_probes_until_ok_on_the_injected_clock() -> None:
    fake = FakeTime()

    def probe() -> tuple[bool, str]:
        fake.probes.append(fake.now)
        return fake.now >= 106, f"at {fake.now:g}"

    ctx = _ctx(fake)
    assert wait_until(ctx, "s", "the thing", probe, timeout=30, interval=2,
                      clock=fake.clock) == "at 106"
    assert fake.probes == [100, 102, 104, 106] and fake.sleeps == [2, 2, 2]
    assert ctx.last_seen["s"] == "the thing: at 106"


def test_wait_until_gives_up_at_the_deadline_with_what_it_last_saw() -> None:
    fake = FakeTime()

    def probe() -> tuple[bool, str]:
        fake.probes.append(fake.now)
        if len(fake.probes) == 2:
            raise AdapterError("webhook not ready")  # an observation, not a failure
        return False, "status Provisioning"

    with pytest.raises(WaitTimeout) as caught:
        wait_until(_ctx(fake), "s", "the thing", probe, timeout=10, interval=2,
                   clock=fake.clock)
    assert str(caught.value) == ("timed out after 10s waiting for the thing; last seen: status "
                                 "Provisioning")
    assert fake.probes == [100, 102, 104, 106, 108, 110]  # as the loop it replaces: last at 10 s
    assert fake.sleeps == [2] * 5


def test_wait_until_scales_the_deadline_and_caps_the_interval() -> None:
    fake = FakeTime()
    with pytest.raises(WaitTimeout, match="timed out after 1s"):
        wait_until(_ctx(fake, scale=0.1), "s", "x", lambda: (False, ""), timeout=10,
                   interval=2, clock=fake.clock)
    assert fake.sleeps == [pytest.approx(0.2)] * 5


def test_wait_until_lets_a_bug_through_at_once() -> None:
    fake = FakeTime()

    def probe() -> tuple[bool, str]:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        wait_until(_ctx(fake), "s", "x", probe, timeout=10, clock=fake.clock)
    assert fake.sleeps == []


def test_poll_returns_the_first_outcome() -> None:
    fake = FakeTime()
    answers = iter([(None, "Pending"), (None, ""), ("Running", "phase Running")])
    clock = Clock(now=fake.clock, sleep=fake.sleep)
    assert poll(lambda: next(answers), timeout=60, interval=1, clock=clock) == (
        "Running", "phase Running")
    assert fake.sleeps == [1, 1]


def test_poll_times_out_with_the_last_observation() -> None:
    fake = FakeTime()

    def probe() -> tuple[str | None, str]:
        fake.probes.append(fake.now)
        if fake.now >= 104:
            raise GpulabError("503 Service Unavailable")
        return None, "Pending"

    clock = Clock(now=fake.clock, sleep=fake.sleep)
    assert poll(probe, timeout=5, interval=2, clock=clock) == (
        "timeout", "API error: 503 Service Unavailable")
    assert fake.probes == [100, 102, 104, 106]


def test_poll_stops_when_verify_is_interrupted() -> None:
    fake = FakeTime()
    clock, stop = stoppable(Clock(now=fake.clock, sleep=fake.sleep))

    def probe() -> tuple[str | None, str]:
        stop.set()  # Ctrl-C arrives while waiting
        return None, "Pending"

    with pytest.raises(Interrupted):
        poll(probe, timeout=60, interval=1, clock=clock)
    assert fake.sleeps == []
