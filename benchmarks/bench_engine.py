"""Simulated `up` for 1, 2, 4 and 8 tenants: the critical path against running the steps one by one.

The plan is the real one (`kind_steps` of the kamaji-hami profile with N tenants); only each
step's work is replaced by a sleep from a latency model built on the published timings in
docs/dev/upstream-facts/peers-and-users.md §3 (kind create ~20 s, cert-manager and MetalLB ready within
~60-120 s, HAMi mock e2e ~3 min). One simulated second is one millisecond of wall time.

A step kind the model does not know stops the benchmark with its name: the model must follow the
plan, never lag it silently. Goal: 8 tenants cost at most 1.3x one tenant (tenants run
concurrently). `--smoke` runs a tiny scale once, without the goal (CI: the benchmark cannot rot).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from gpulab.engine.runner import run_steps
from gpulab.engine.step import Artifact, StepContext
from gpulab.providers.kind import cluster_facts, kind_steps
from gpulab.stacks import for_name, load_profile

GOAL_RATIO_8_TO_1 = 1.3
LATENCY = {  # simulated seconds per step kind ("management/<x>" or the tenant step's suffix)
    "management/cluster": 20, "management/images": 40, "management/cert-manager": 60,
    "management/metallb": 70, "management/kamaji": 60,
    "control-plane": 60, "workers": 5, "images": 20, "join": 30, "kube-proxy": 10, "calico": 60,
    "hami": 60,
    "gpus": 30,
}


@dataclass
class SimulatedStep:
    name: str
    title: str
    requires: tuple[str, ...]
    seconds: float
    scale: float

    def describe(self) -> list[Artifact]:
        return []

    def satisfied(self, ctx: StepContext) -> bool:
        return False

    def apply(self, ctx: StepContext) -> None:
        time.sleep(self.seconds * self.scale)


def step_kind(name: str) -> str:
    return name if name.startswith("management/") else name.split("/", 1)[1]


def simulated_plan(tenants: int, scale: float) -> list[SimulatedStep]:
    """The real plan for `tenants` tenants, each step sleeping its modelled latency."""
    profile = load_profile("kamaji-hami").profile
    base = profile.tenants[0]
    profile = profile.model_copy(update={"tenants": [
        base.model_copy(update={"name": f"tenant-{i}"}) for i in range(tenants)]})
    steps = []
    stack = for_name("kamaji-hami")
    plan = kind_steps(profile, "bench", stack,
                      cluster_facts(profile, "bench", stack.cluster_needs(profile), None))
    unknown = sorted({step_kind(s.name) for s in plan} - set(LATENCY))
    if unknown:
        raise SystemExit(f"bench_engine: no latency for step kind(s) {', '.join(unknown)}; "
                         "add them to LATENCY (the plan has changed)")
    for step in plan:
        steps.append(SimulatedStep(step.name, step.title, step.requires,
                                   LATENCY[step_kind(step.name)], scale))
    return steps


def critical_path(steps: list[SimulatedStep]) -> float:
    """The longest chain of `requires` (what an ideal scheduler would take)."""
    by_name = {s.name: s for s in steps}
    done: dict[str, float] = {}

    def finish(name: str) -> float:
        if name not in done:
            step = by_name[name]
            done[name] = step.seconds + max((finish(r) for r in step.requires if r in by_name),
                                            default=0.0)
        return done[name]

    return max(finish(s.name) for s in steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny scale, 1 and 2 tenants, no goal (CI)")
    args = parser.parse_args(argv)
    scale = 0.00002 if args.smoke else 0.001
    counts = (1, 2) if args.smoke else (1, 2, 4, 8)
    print(f"{'tenants':>7} {'steps':>5} {'serial':>8} {'critical':>9} {'wall':>8} {'wall/serial':>11}")
    walls: dict[int, float] = {}
    for tenants in counts:
        steps = simulated_plan(tenants, scale)
        serial = sum(s.seconds for s in steps)
        start = time.perf_counter()
        result = run_steps(steps, StepContext("bench", None), lambda _e: None)
        wall = (time.perf_counter() - start) / scale
        if not result.ok:
            raise SystemExit(f"bench_engine: the simulated run failed: {result}")
        walls[tenants] = wall
        print(f"{tenants:>7} {len(steps):>5} {serial:>7.0f}s {critical_path(steps):>8.0f}s "
              f"{wall:>7.0f}s {wall / serial:>11.2f}")
    if args.smoke:
        print("smoke run: no goal checked")
        return 0
    ratio = walls[8] / walls[1]
    verdict = "met" if ratio <= GOAL_RATIO_8_TO_1 else "MISSED"
    print(f"8 tenants / 1 tenant: {ratio:.2f} (goal <= {GOAL_RATIO_8_TO_1}: {verdict})")
    return 0 if ratio <= GOAL_RATIO_8_TO_1 else 1


if __name__ == "__main__":
    sys.exit(main())
