"""How long gpulab takes to refuse hostile profiles (alias bomb, 33 MiB file, 5000-deep nesting,
UTF-16, tags...): the goal is well under a second each, so a hostile file can never hang a
command. The corpus is the tests' own (tests/unit/test_hostile_profiles.py CORPUS).

`--smoke` runs each case once without the goal (CI: the benchmark cannot rot).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.errors import GpulabError
from gpulab.profile import safe_yaml
from gpulab.stacks import parse_profile
from tests.unit.test_hostile_profiles import CORPUS

GOAL_SECONDS = 1.0


def refuse(data: bytes) -> float:
    start = time.perf_counter()
    text, problem = safe_yaml.decode(data[: safe_yaml.MAX_BYTES + 1])
    if not problem:
        try:
            parse_profile(text, "bench.yaml")
        except GpulabError:
            pass
        else:
            raise SystemExit("bench_hostile: a hostile profile was accepted")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="once each, no goal (CI)")
    args = parser.parse_args(argv)
    worst = 0.0
    print(f"{'case':20} {'seconds':>8}")
    for name, (data, _expected) in sorted(CORPUS.items()):
        seconds = min(refuse(data) for _ in range(1 if args.smoke else 5))
        worst = max(worst, seconds)
        print(f"{name:20} {seconds:8.4f}")
    if args.smoke:
        print("smoke run: no goal checked")
        return 0
    verdict = "met" if worst < GOAL_SECONDS else "MISSED"
    print(f"slowest refusal {worst:.3f}s (goal < {GOAL_SECONDS}s: {verdict})")
    return 0 if worst < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
