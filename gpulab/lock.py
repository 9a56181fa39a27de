"""One writer per lab: `up`, `down` and a live `verify` hold `<lab folder>/.lock` while they run.

The file is created atomically (O_CREAT | O_EXCL) and says who holds it: pid, host, command and
start time. A second command is refused with that (BusyError, exit 5). A lock whose process is
gone (same host, dead pid) is stale: it is taken over with a note. Nothing else is locked: reads
(`status`, `plan`, `logs`, `labs`) never wait.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gpulab.errors import BusyError, GpulabError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["LOCK_FILE", "holder", "lab_lock"]

LOCK_FILE = ".lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def holder(folder: Path) -> dict[str, Any] | None:
    """Who holds the lab's lock (pid, host, command, started), or None."""
    try:
        data = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # being written right now, or damaged
        data = None
    if isinstance(data, dict):
        return data
    try:
        since = (folder / LOCK_FILE).stat().st_mtime
    except OSError:
        return None
    return {"pid": UNREADABLE, "host": "", "command": "unknown", "started": since}


UNREADABLE = -1  # a lock file that says nothing (yet): another gpulab may be writing it
UNREADABLE_GRACE = 10.0  # seconds after which an unreadable lock is stale


def _stale(info: dict[str, Any]) -> bool:
    pid = int(info.get("pid") or 0)
    if pid == UNREADABLE:
        return time.time() - float(info.get("started") or 0) > UNREADABLE_GRACE
    same_host = info.get("host") in ("", socket.gethostname())
    return same_host and (pid <= 0 or not _alive(pid))


def _describe(info: dict[str, Any]) -> str:
    started = float(info.get("started") or 0)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "?"
    return (f"`gpulab {info.get('command', '?')}` (pid {info.get('pid', '?')} on "
            f"{info.get('host') or '?'}, since {when})")


@contextmanager
def lab_lock(lab: str, folder: Path, command: str,
             note: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lab's lock for `command` (e.g. "up --name x"); BusyError if another holds it."""
    made = [d for d in (folder, *folder.parents) if not d.exists()]  # ours to remove if empty
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / LOCK_FILE
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
            "started": time.time()}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            info = holder(folder)
            if info is None:
                continue  # released meanwhile
            if not _stale(info):
                raise BusyError(f"lab '{lab}' is in use by {_describe(info)}",
                                hint="wait for it to finish (or stop it), then retry") from None
            if note:
                note(f"taking over the lock of lab '{lab}' left by {_describe(info)}, which "
                     "is no longer running")
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(mine, handle)
        break
    else:
        raise GpulabError(f"could not take the lock of lab '{lab}' at {path}",
                          hint="another gpulab is starting at the same moment; retry")
    try:
        yield
    finally:
        current = holder(folder)
        if current is not None and current.get("pid") == mine["pid"]:
            path.unlink(missing_ok=True)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # the lock was all there was (`down`, or a refused `up`)
        for parent in made[1:]:  # and the folders made for it (labs/), left empty
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
