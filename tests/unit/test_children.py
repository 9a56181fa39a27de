"""SIGTERM to `up` reaches every process gpulab started: the tools it runs through
`children.run` with their process groups, and every other descendant (a helm that pyhelm3
started, and what that helm started), found with psutil. Real processes (sleep), reaped; each
scenario runs in a fresh interpreter (tests/children_scenarios.py), where they are its only
descendants."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _scenario(name: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "tests.children_scenarios", name], cwd=ROOT,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return seen


def test_an_untracked_child_and_its_own_child_are_terminated() -> None:
    """Both get SIGTERM (the grandchild was missed when only direct children were signalled,
    and on macOS, without /proc, nothing was)."""
    seen = _scenario("untracked_with_a_child")
    assert seen["grandchild_of_parent"]
    assert seen["signalled"] == 2
    assert seen["grandchild_ended"]
    assert seen["parent_returncode"] in (-signal.SIGTERM, 128 + signal.SIGTERM)


def test_a_tracked_child_is_stopped_with_its_group_and_counted_once() -> None:
    seen = _scenario("tracked_with_a_child")
    assert seen == {"signalled": 1, "returncode": -signal.SIGTERM, "sleeper_ended": True}


def test_nothing_running_nothing_signalled() -> None:
    assert _scenario("nothing_running") == {"signalled": 0}
