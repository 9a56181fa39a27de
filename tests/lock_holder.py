"""Another process that holds a lab's lock, as a concurrent `gpulab up` would: it takes the lock
with `gpulab.lock.lab_lock`, says so on stdout, and holds it until its stdin closes (or it is
killed)."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HOLD = """
import sys
from pathlib import Path
from gpulab.lock import lab_lock
with lab_lock(sys.argv[1], Path(sys.argv[2]), sys.argv[3]):
    print("held", flush=True)
    sys.stdin.read()
"""

TRY = """
import sys
from pathlib import Path
from gpulab.errors import BusyError
from gpulab.lock import lab_lock
try:
    with lab_lock(sys.argv[1], Path(sys.argv[2]), sys.argv[3]):
        print("acquired", flush=True)
except BusyError as err:
    print(f"busy: {err}", flush=True)
"""


def start_holder(lab: str, folder: Path, command: str) -> subprocess.Popen[str]:
    """A process holding the lab's lock (it has said "held" when this returns)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, lab, str(folder), command],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "held":
        proc.kill()
        _, _ = proc.communicate()
        raise AssertionError(f"the holder did not take the lock: {line!r}")
    return proc


@contextmanager
def held_by_another_process(lab: str, folder: Path, command: str) -> Iterator[int]:
    """The lab's lock held by another process for the block; yields its pid."""
    proc = start_holder(lab, folder, command)
    try:
        yield proc.pid
    finally:
        proc.communicate(timeout=30)  # closes its stdin: it releases and exits
        if proc.poll() is None:
            proc.kill()


def try_in_another_process(lab: str, folder: Path, command: str) -> str:
    """Take and release the lab's lock in another process: "acquired" or "busy: <message>"."""
    done = subprocess.run([sys.executable, "-c", TRY, lab, str(folder), command],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()
