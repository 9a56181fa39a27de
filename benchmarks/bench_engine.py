"""Simulated `up` for 1, 2, 4 and 8 tenants: wall time against running the steps one by one.

Every step's work is a sleep from a latency model built on the published timings in
shared/docs/peers-and-users.md §3 (kind create ~20 s, cert-manager and MetalLB ready within
~60-120 s, HAMi mock e2e ~3 min). One simulated second is one millisecond here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpulab.engine.runner import run_steps
from gpulab.engine.step import Artifact, StepContext
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami.steps import HostFacts, build_steps

SCALE = 0.001  # seconds of wall time per simulated second
LATENCY = {  # simulated seconds per step kind
    "management/cluster": 20, "management/cert-manager": 60, "management/metallb": 70,
    "management/kamaji": 60,
    "control-plane": 60, "workers": 5, "join": 30, "calico": 60, "hami": 60, "gpus": 30,
}


@dataclass
class SimulatedStep:
    name: str
    title: str
    requires: tuple[str, ...]
    seconds: float

    def describe(self) -> list[Artifact]:
        return []

    def satisfied(self, ctx: StepContext) -> bool:
        return False

    def apply(self, ctx: StepContext) -> None:
        time.sleep(self.seconds * SCALE)


def simulated_plan(tenants: int) -> list[SimulatedStep]:
    profile = load_profile("kamaji-hami").profile
    base = profile.tenants[0]
    profile = profile.model_copy(update={"tenants": [
        base.model_copy(update={"name": f"tenant-{i}"}) for i in range(tenants)]})
    steps = []
    for step in build_steps(profile, "bench", HostFacts()):
        key = step.name if step.name.startswith("management/") else step.name.split("/", 1)[1]
        steps.append(SimulatedStep(step.name, step.title, step.requires, LATENCY[key]))
    return steps


def main() -> None:
    print(f"{'tenants':>7} {'steps':>5} {'sequential':>11} {'wall':>8} {'ratio':>6}")
    for tenants in (1, 2, 4, 8):
        steps = simulated_plan(tenants)
        sequential = sum(s.seconds for s in steps)
        start = time.perf_counter()
        result = run_steps(steps, StepContext("bench", None), lambda _e: None)
        wall = (time.perf_counter() - start) / SCALE
        assert result.ok
        print(f"{tenants:>7} {len(steps):>5} {sequential:>10.0f}s {wall:>7.0f}s "
              f"{wall / sequential:>6.2f}")


if __name__ == "__main__":
    main()
