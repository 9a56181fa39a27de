"""Start-up of `gpulab --help` and `gpulab plan` against a minimal 8-command Typer app's `--help`.

Each command is a fresh `python` process, timed from start to exit; the three run side by side,
one of each per round (so a busy machine slows all three alike), and the median of the rounds is
compared. `plan -p kamaji-hami` runs with DOCKER_HOST at a socket that does not exist (it does not
wait on Docker) and GPULAB_HOME in a temporary folder. Heavy libraries (kubernetes, docker,
pyhelm3) must only be imported by commands that use them: `--help` and `plan` import none.
Goals (#34 item 7): `gpulab --help` within 1.3x and `plan` within 2.5x the minimal app's
`--help`. `--smoke` runs each command once, without the goals (CI: the benchmark cannot rot).
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

GOAL_HELP_RATIO = 1.3
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


MINIMAL = "minimal 8-command Typer app --help"
HELP = "gpulab --help"
PLAN = "gpulab plan -p kamaji-hami"


def cases(minimal: Path) -> dict[str, list[str]]:
    return {
        MINIMAL: [sys.executable, str(minimal), "--help"],
        HELP: [sys.executable, "-m", "gpulab", "--help"],
        PLAN: [sys.executable, "-m", "gpulab", "plan", "-p", "kamaji-hami"],
    }


def measure(commands: dict[str, list[str]], runs: int, env: dict[str, str]
            ) -> dict[str, list[float]]:
    """Wall time of each command, `runs` rounds of one run each, side by side."""
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, env=env)
            samples[label].append(time.perf_counter() - start)
    return samples


def heavy_modules(args: list[str], env: dict[str, str]) -> list[str]:
    """Which of HEAVY the CLI imports for these arguments (run in-process via CliRunner)."""
    code = ("import sys; from typer.testing import CliRunner; from gpulab.cli import app; "
            f"CliRunner().invoke(app, {args!r}); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=env)
    return [m for m in out.stdout.strip().split(",") if m]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run each, no goal (CI)")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else int(os.environ.get("BENCH_RUNS", "15"))
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GPULAB_HOME": str(Path(tmp) / "home"),
               "DOCKER_HOST": f"unix://{tmp}/no-docker.sock", "COLUMNS": "120"}
        env.pop("DOCKER_CONTEXT", None)
        # as an install runs: its modules' bytecode cached (pip compiles it; the warm-up round
        # writes it for a source tree), not compiled again on every start
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        minimal = Path(tmp) / "minimal_app.py"
        minimal.write_text(MINIMAL_APP, encoding="utf-8")
        measure(cases(minimal), 1, env)  # warm-up: bytecode written, files in the page cache
        load = os.getloadavg()[0]
        samples = measure(cases(minimal), runs, env)
        print(f"{runs} rounds; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after "
              f"({os.cpu_count()} CPUs)")
        medians = {label: statistics.median(s) for label, s in samples.items()}
        print(f"{'command':40} {'median':>8} {'min':>8}  vs minimal app")
        for label, values in samples.items():
            print(f"{label:40} {medians[label] * 1000:7.0f}ms {min(values) * 1000:7.0f}ms  "
                  f"x{medians[label] / medians[MINIMAL]:.2f}")
        for what, cli_args in (("--help", ["--help"]), ("plan", ["plan", "-p", "kamaji-hami"])):
            print(f"heavy modules imported by {what}: "
                  f"{', '.join(heavy_modules(cli_args, env)) or 'none'}")
    if args.smoke:
        print("smoke run: no goal checked")
        return 0
    met = True
    for label, goal in ((HELP, GOAL_HELP_RATIO), (PLAN, GOAL_PLAN_RATIO)):
        ratio = medians[label] / medians[MINIMAL]
        met = met and ratio <= goal
        print(f"{label} / minimal app --help: {ratio:.2f} (goal <= {goal}: "
              f"{'met' if ratio <= goal else 'MISSED'})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
