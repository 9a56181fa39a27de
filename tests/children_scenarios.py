"""Scenarios for tests/unit/test_children.py, each run in a fresh interpreter
(`python -m tests.children_scenarios NAME`) so that `children.terminate_all` meets only the
processes the scenario started, not the test runner's own (multiprocessing's helpers, ...).
Each prints one JSON line of what it saw."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import psutil

from gpulab import children

SLEEP = shutil.which("sleep") or "sleep"


def ended(process: psutil.Process) -> bool:
    """Waits (psutil's bounded wait) for a process that is not our child to end; an ended one
    whose new parent has not reaped it yet (a zombie) counts as ended."""
    try:
        process.wait(timeout=30)
    except psutil.TimeoutExpired:
        return process.status() == psutil.STATUS_ZOMBIE
    return True


def untracked_with_a_child() -> dict[str, Any]:
    """Like pyhelm3's helm: started by gpulab, not through children.run, and starting a process
    of its own."""
    parent = subprocess.Popen(["/bin/sh", "-c", f"{SLEEP} 300 & echo $!; wait"],
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    grandchild = psutil.Process(int(parent.stdout.readline()))
    try:
        return {"grandchild_of_parent": grandchild.ppid() == parent.pid,
                "signalled": children.terminate_all(),
                "grandchild_ended": ended(grandchild),
                "parent_returncode": parent.wait(timeout=30)}
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            grandchild.kill()
        if parent.poll() is None:
            parent.kill()
        parent.wait()


class _Noticed(set[Any]):
    """children._running that says when children.run has registered its child."""

    def __init__(self) -> None:
        super().__init__()
        self.added = threading.Event()

    def add(self, item: Any) -> None:
        super().add(item)
        self.added.set()


def tracked_with_a_child() -> dict[str, Any]:
    """children.run's child and its own sleep (same session): stopped by their group."""
    running = _Noticed()
    children._running = running
    fifo = Path(tempfile.mkdtemp()) / "started"
    os.mkfifo(fifo)
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", children.run(
        ["/bin/sh", "-c", f"{SLEEP} 300 & echo $! > {fifo}; wait"], timeout=120)))
    worker.start()
    try:
        assert running.added.wait(timeout=60)
        sleeper = psutil.Process(int(fifo.read_text()))  # blocks until the sleep has started
        signalled = children.terminate_all()
        worker.join(timeout=60)
    finally:
        for child in list(running):
            children._kill_group(child, signal.SIGKILL)
        worker.join(timeout=60)
        fifo.unlink()
        fifo.parent.rmdir()
    return {"signalled": signalled, "returncode": box["result"].returncode,
            "sleeper_ended": ended(sleeper)}


def nothing_running() -> dict[str, Any]:
    return {"signalled": children.terminate_all()}


if __name__ == "__main__":
    print(json.dumps(globals()[sys.argv[1]]()), flush=True)
