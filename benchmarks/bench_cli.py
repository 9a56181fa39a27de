"""Start-up of `gpulab --help` and `gpulab plan` against a minimal 8-command Typer app's `--help`.

Heavy libraries (kubernetes, docker, pyhelm3) must only be imported by commands that use them:
`--help` and `plan` import none of them (plan reads the kind network through the stdlib socket
reader when Docker is on a unix socket). Goal: `plan` within 2.5x the minimal app's `--help`.
`--smoke` runs each command once, without the goal (CI: the benchmark cannot rot).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_PLAN_RATIO = 2.5
MINIMAL_APP = '''
import typer
app = typer.Typer()
for name in ("up", "down", "plan", "verify", "status", "logs", "doctor", "kubeconfig"):
    def command(lab: str = typer.Option("x", "--name", help="lab name"), verbose: bool = False
                ) -> None:
        """A command."""
    app.command(name)(command)
app()
'''
HEAVY = ("kubernetes", "docker", "pyhelm3")


def cases(minimal: Path) -> dict[str, list[str]]:
    return {
        "minimal 8-command Typer app --help": [sys.executable, str(minimal), "--help"],
        "gpulab --help": [sys.executable, "-m", "gpulab", "--help"],
        "gpulab plan -o yaml": [sys.executable, "-m", "gpulab", "plan", "-o", "yaml"],
    }


def measure(argv: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return samples


def heavy_modules(args: list[str]) -> list[str]:
    """Which of HEAVY the CLI imports for these arguments (run in-process via CliRunner)."""
    code = ("import sys; from typer.testing import CliRunner; from gpulab.cli import app; "
            f"CliRunner().invoke(app, {args!r}); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return [m for m in out.stdout.strip().split(",") if m]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run each, no goal (CI)")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else int(os.environ.get("BENCH_RUNS", "7"))
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal_app.py"
        minimal.write_text(MINIMAL_APP, encoding="utf-8")
        medians: dict[str, float] = {}
        print(f"{'command':40} {'median':>8} {'min':>8}  vs minimal app")
        for label, command in cases(minimal).items():
            samples = measure(command, runs)
            medians[label] = statistics.median(samples)
            base = next(iter(medians.values()))
            print(f"{label:40} {medians[label] * 1000:7.0f}ms {min(samples) * 1000:7.0f}ms  "
                  f"x{medians[label] / base:.2f}")
    for what, cli_args in (("--help", ["--help"]), ("plan", ["plan", "-o", "yaml"])):
        print(f"heavy modules imported by {what}: {', '.join(heavy_modules(cli_args)) or 'none'}")
    if args.smoke:
        print("smoke run: no goal checked")
        return 0
    ratio = medians["gpulab plan -o yaml"] / medians["minimal 8-command Typer app --help"]
    verdict = "met" if ratio <= GOAL_PLAN_RATIO else "MISSED"
    print(f"plan / minimal app --help: {ratio:.2f} (goal <= {GOAL_PLAN_RATIO}: {verdict})")
    return 0 if ratio <= GOAL_PLAN_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
