"""The tools gpulab runs (kind, git, helm's dependency build) as children it can stop as a group.

Each child runs in a session of its own (so a terminal's Ctrl-C does not hit it twice, and its
own children go with it); `terminate_all` ends every running one with its process group, which
is what `up` does when it receives SIGTERM or SIGHUP: nothing keeps running after gpulab exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import Any

__all__ = ["run", "terminate_all"]

_running: set[subprocess.Popen[Any]] = set()
_lock = threading.Lock()


def run(argv: list[str], *, timeout: float | None, env: dict[str, str] | None = None,
        cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv, capture_output, text) in a new session, tracked until it ends.
    Raises subprocess.TimeoutExpired (the child's group killed first) like subprocess.run."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", env=env, cwd=cwd, start_new_session=True) as child:
        with _lock:
            _running.add(child)
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child, signal.SIGKILL)
            stdout, stderr = child.communicate()
            raise subprocess.TimeoutExpired(argv, timeout or 0, output=stdout,
                                            stderr=stderr) from None
        finally:
            with _lock:
                _running.discard(child)
    return subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)


def _kill_group(child: subprocess.Popen[Any], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, sig)


def terminate_all(sig: int = signal.SIGTERM) -> int:
    """Send `sig` to every running child's process group; how many there were."""
    with _lock:
        children = list(_running)
    for child in children:
        _kill_group(child, sig)
    return len(children)
