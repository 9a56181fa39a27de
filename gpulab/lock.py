"""One writer per lab: `up`, `down` and a live `verify` hold `<lab folder>/.lock` while they run.

The lock is the kernel's (`flock` on the file, exclusive, never waited for): it is held for the
life of the command and released by the kernel when the process ends, however it ends (SIGKILL,
a crash, a reboot), so there is no stale lock to detect and nothing to take over. Inside the file
the holder writes who it is (pid, host, command, start time), only so that a second command can
be refused with that (BusyError, exit 5); whether the lab is held is the kernel's answer alone.

Releasing removes the file while still holding the lock; a command that opened the old file
meanwhile locks a file no longer at the path and tries again with the new one. A file left by a
holder that was killed is not locked, so the next command takes it, with a note naming the
command that left it. Nothing else is locked: reads (`status`, `plan`, `logs`, `labs`) never wait.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gpulab.errors import BusyError, GpulabError
from gpulab.paths import unwritable_labs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["LOCK_FILE", "holder", "lab_lock"]

LOCK_FILE = ".lock"
_ATTEMPTS = 5  # each retry follows a holder removing the file we had opened: rare, bounded
_CONTENDED = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})  # EACCES: some NFS


def _try_lock(fd: int, path: Path, operation: int = fcntl.LOCK_EX) -> bool:
    """Take the kernel's lock on `fd` without waiting: True if taken, False if another holds it.
    A filesystem that cannot lock (some network mounts) is an error the user can act on."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in _CONTENDED:
            return False
        raise GpulabError(
            f"cannot lock {path}: {os.strerror(err.errno) if err.errno else err}",
            hint="put gpulab's labs on a local filesystem (set GPULAB_HOME)") from err
    return True


def _still_at(fd: int, path: Path) -> bool:
    """The locked file is the one at `path` (a releasing holder removes the file it held: whoever
    locked that removed file holds nothing and must open the path again)."""
    try:
        here = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _read(fd: int) -> dict[str, Any] | None:
    """What the file says of its holder; None when empty or unreadable (being written)."""
    try:
        raw = os.pread(fd, 65536, 0)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(fd: int, info: dict[str, Any]) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)


def holder(folder: Path) -> dict[str, Any] | None:
    """Who holds the lab's lock (pid, host, command, started), or None when nobody does.

    Asks the kernel (a shared lock taken and dropped at once, so a taker at that very moment may
    be refused), then reads the file; a holder that has not written itself yet is
    `{"command": "unknown", ...}`."""
    path = folder / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        if _try_lock(fd, path, fcntl.LOCK_SH):
            return None
        return _read(fd) or {"pid": "?", "host": "", "command": "unknown", "started": 0}
    finally:
        os.close(fd)


def _describe(info: dict[str, Any]) -> str:
    started = float(info.get("started") or 0)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "?"
    return (f"`gpulab {info.get('command', '?')}` (pid {info.get('pid', '?')} on "
            f"{info.get('host') or '?'}, since {when})")


def _acquire(lab: str, folder: Path) -> int:
    """An open descriptor of `<folder>/.lock` holding its exclusive lock; BusyError if another
    command holds it."""
    path = folder / LOCK_FILE
    for _ in range(_ATTEMPTS):
        try:  # O_CLOEXEC: the tools gpulab runs (kind, helm) never hold the lab's lock
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # a releasing holder removed the folder meanwhile
            continue
        except OSError as err:  # GPULAB_HOME a file, read-only, ...: before any work
            raise unwritable_labs(folder, err) from None
        try:
            taken = _try_lock(fd, path)
            if taken and _still_at(fd, path):
                return fd
            if not taken:
                info = _read(fd)
                who = _describe(info) if info else "another gpulab command (starting just now)"
                raise BusyError(f"lab '{lab}' is in use by {who}",
                                hint="wait for it to finish (or stop it), then retry")
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # we locked the file a releasing holder had just removed: open the new one
    raise GpulabError(f"could not take the lock of lab '{lab}' at {path}",
                      hint="other gpulab commands keep taking and releasing it; retry")


@contextmanager
def lab_lock(lab: str, folder: Path, command: str,
             note: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lab's lock for `command` (e.g. "up --name x"); BusyError if another holds it."""
    made = [d for d in (folder, *folder.parents) if not d.exists()]  # ours to remove if empty
    fd = _acquire(lab, folder)
    try:
        left = _read(fd)  # a holder that ended without releasing (killed) left its record
        _write(fd, {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                    "started": time.time()})
        if left and note:
            note(f"taking over the lock of lab '{lab}' left by {_describe(left)}, which is no "
                 "longer running")
        yield
    finally:
        if _still_at(fd, folder / LOCK_FILE):  # removed while still held, then released
            with contextlib.suppress(FileNotFoundError):
                (folder / LOCK_FILE).unlink()
        os.close(fd)
        for empty in (folder, *made[1:]):  # the lock was all there was (`down`, a refused
            with contextlib.suppress(OSError):  # `up`), and the folders made for it (labs/)
                if empty.is_dir() and not any(empty.iterdir()):
                    empty.rmdir()
