"""Wall time of `gpulab --help` and `gpulab plan` against a bare `python -c 'import typer, rich'`.

Heavy libraries (kubernetes, docker, pyhelm3) must only be imported by commands that use them, so
`--help` should cost little more than importing typer and rich.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
CASES = {
    "python -c 'import typer, rich'": [sys.executable, "-c", "import typer, rich"],
    "gpulab --help": [sys.executable, "-m", "gpulab", "--help"],
    "gpulab plan -o yaml (no Docker)": [sys.executable, "-m", "gpulab", "plan", "-o", "yaml"],
}


def measure(argv: list[str]) -> list[float]:
    env = dict(os.environ, DOCKER_HOST="unix:///nonexistent.sock")
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return samples


def heavy_modules_loaded_by_help() -> list[str]:
    code = ("import sys; from typer.testing import CliRunner; from gpulab.cli import app; "
            "CliRunner().invoke(app, ['--help']); "
            "print(','.join(m for m in ('kubernetes', 'docker', 'pyhelm3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return [m for m in out.stdout.strip().split(",") if m]


def main() -> None:
    baseline = None
    print(f"{'command':40} {'median':>8} {'min':>8}  vs baseline")
    for label, argv in CASES.items():
        samples = measure(argv)
        median = statistics.median(samples)
        baseline = baseline or median
        print(f"{label:40} {median * 1000:7.0f}ms {min(samples) * 1000:7.0f}ms  "
              f"x{median / baseline:.2f}")
    heavy = heavy_modules_loaded_by_help()
    print(f"heavy modules imported by --help: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
