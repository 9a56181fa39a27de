"""The tools gpulab runs (kind, git, helm's dependency build) as children it can stop as a group.

Each child runs in a session of its own (so a terminal's Ctrl-C does not hit it twice, and its
own children go with it); `terminate_all` ends every running one with its process group, which
is what `up` does when it receives SIGTERM or SIGHUP: nothing keeps running after gpulab exits.
Every other descendant (the helm that pyhelm3 starts, and what it starts) gets the signal too,
found with psutil (so on macOS as on Linux), and registered stoppers end what runs elsewhere (a
Docker runtime's `docker exec` commands inside the nodes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import TYPE_CHECKING, Any

import psutil

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["add_stopper", "remove_stopper", "run", "terminate_all"]

_running: set[subprocess.Popen[Any]] = set()
_stoppers: dict[int, Callable[[int], int]] = {}  # e.g. a Docker runtime's running execs
_lock = threading.Lock()


def add_stopper(stopper: Callable[[int], int]) -> int:
    """Register work gpulab started that is not a local process (a `docker exec` runs inside a
    container): `stopper(sig)` stops it and says how many it stopped. Returns a handle."""
    with _lock:
        handle = id(stopper)
        _stoppers[handle] = stopper
    return handle


def remove_stopper(handle: int) -> None:
    with _lock:
        _stoppers.pop(handle, None)


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


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:  # gone meanwhile
        return None


def _descendants() -> list[psutil.Process]:
    """Every process below this one (children, theirs, ...; psutil reads them on Linux and
    macOS alike): those gpulab did not start through `run`, such as the helm that pyhelm3 runs,
    and whatever they started."""
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def terminate_all(sig: int = signal.SIGTERM) -> int:
    """Send `sig` to every running child's process group, then to every other descendant (helm
    run by pyhelm3, and its own children); how many were signalled."""
    with _lock:
        children = list(_running)
        stoppers = list(_stoppers.values())
    for child in children:
        _kill_group(child, sig)
    stopped = 0
    for stopper in stoppers:
        with contextlib.suppress(Exception):  # stopping is best effort, never a new failure
            stopped += stopper(sig)
    tracked = {child.pid for child in children}  # each leads its own group, signalled above
    others = 0
    for process in _descendants():
        if process.pid in tracked or _group(process.pid) in tracked:
            continue
        with contextlib.suppress(psutil.Error):  # psutil checks the pid was not reused
            process.send_signal(sig)
            others += 1
    return len(children) + others + stopped
