"""One writer per lab, by the kernel's lock: a second `up`/`down`/`verify` is refused with who
holds the lab; a holder killed with SIGKILL releases it; two takers of a lock file left behind
never both win; reads never wait. Real processes contend (subprocess, multiprocessing)."""

from __future__ import annotations

import errno
import fcntl
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab import lock
from gpulab.cli import app
from gpulab.errors import BusyError, ExitCode, GpulabError
from gpulab.lock import LOCK_FILE, holder, lab_lock
from gpulab.paths import lab_dir
from tests.lock_holder import held_by_another_process, start_holder, try_in_another_process

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def _left_behind(folder: Path, command: str = "up --name lab") -> int:
    """A lock file as a holder killed mid-run leaves it: its record, no process, no lock."""
    folder.mkdir(parents=True, exist_ok=True)
    pid = _dead_pid()
    (folder / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname(),
                                                "command": command, "started": time.time()}))
    return pid


def test_the_holder_is_written_and_removed(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    with lab_lock("lab", folder, "up --name lab"):
        info = holder(folder)
        assert info is not None and info["pid"] == os.getpid()
        assert info["command"] == "up --name lab" and info["host"] == socket.gethostname()
        assert (folder / LOCK_FILE).stat().st_mode & 0o777 == 0o600
    assert holder(folder) is None
    assert not folder.exists()  # the lock was all there was


def test_a_second_writer_is_refused_with_who_holds_the_lab(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    with held_by_another_process("lab", folder, "up --name lab") as pid:
        with pytest.raises(BusyError) as caught, lab_lock("lab", folder, "down --name lab"):
            pass
        assert f"lab 'lab' is in use by `gpulab up --name lab` (pid {pid} on " in str(
            caught.value)
        assert caught.value.exit_code == ExitCode.BUSY == 5
        assert (holder(folder) or {})["pid"] == pid  # the holder's lock stays
        assert try_in_another_process("lab", folder, "verify").startswith(
            f"busy: lab 'lab' is in use by `gpulab up --name lab` (pid {pid}")
    with lab_lock("lab", folder, "down --name lab"):  # released when the holder ended
        assert (holder(folder) or {})["pid"] == os.getpid()


def _contend(folder: str, barrier: Any, results: Any, release: Any) -> None:
    """One of several processes taking the same lab's lock at the same moment."""
    barrier.wait()
    try:
        with lab_lock("lab", Path(folder), f"up --name lab (pid {os.getpid()})"):
            results.put("won")
            release.wait()
    except BusyError:
        results.put("busy")


def test_processes_taking_the_lock_at_once_one_wins(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    count = 4
    barrier, results, release = context.Barrier(count), context.Queue(), context.Event()
    workers = [context.Process(target=_contend, args=(str(tmp_path / "lab"), barrier, results,
                                                       release)) for _ in range(count)]
    for worker in workers:
        worker.start()
    try:
        outcomes = sorted(results.get(timeout=60) for _ in workers)  # the winner still holds
    finally:
        release.set()
        for worker in workers:
            worker.join(timeout=60)
    assert outcomes == ["busy"] * (count - 1) + ["won"]
    assert all(worker.exitcode == 0 for worker in workers)


def test_a_holder_killed_with_sigkill_releases_the_lab(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    proc = start_holder("lab", folder, "up --name lab")
    assert (holder(folder) or {})["pid"] == proc.pid
    proc.kill()  # SIGKILL: no cleanup runs, the file stays
    proc.communicate(timeout=30)
    assert (folder / LOCK_FILE).exists()
    assert holder(folder) is None  # the kernel released its lock
    notes: list[str] = []
    with lab_lock("lab", folder, "down --name lab", note=notes.append):
        assert (holder(folder) or {})["command"] == "down --name lab"
    assert notes == [f"taking over the lock of lab 'lab' left by `gpulab up --name lab` "
                     f"(pid {proc.pid} on {socket.gethostname()}, since "
                     f"{notes[0].split('since ', 1)[1]}"]
    assert notes[0].endswith("which is no longer running")


def test_two_takers_of_a_lock_left_behind_never_both_win(tmp_path: Path) -> None:
    """The race of a pid file's stale takeover: two commands both see the dead holder's file;
    the first replaces it while the second is replacing it too, and both run. With the kernel's
    lock the second is refused, naming the first."""
    folder = tmp_path / "lab"
    dead = _left_behind(folder)
    (folder / "management.kubeconfig").write_text("a lab half built")
    second: list[str] = []

    def meanwhile(message: str) -> None:  # the first has seen the file left behind
        assert f"(pid {dead} on" in message
        second.append(try_in_another_process("lab", folder, "down --name lab"))

    with lab_lock("lab", folder, "up --name lab", note=meanwhile):
        pass
    assert len(second) == 1
    assert second[0].startswith(
        f"busy: lab 'lab' is in use by `gpulab up --name lab` (pid {os.getpid()} on ")


def test_a_lock_file_nobody_holds_is_taken_at_once(tmp_path: Path) -> None:
    """A holder killed before it wrote itself leaves an empty file: no lock, so taken at once
    (no grace period), without a note as there is nobody to name."""
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / LOCK_FILE).write_text("")
    notes: list[str] = []
    with lab_lock("lab", folder, "up", note=notes.append):
        assert (holder(folder) or {})["pid"] == os.getpid()
    assert notes == []


def test_a_holder_not_written_yet_is_still_a_holder(tmp_path: Path) -> None:
    """Locked but empty (the holder is writing itself right now): refused all the same."""
    folder = tmp_path / "lab"
    folder.mkdir()
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(BusyError, match="in use by another gpulab command"), \
                lab_lock("lab", folder, "up"):
            pass
        assert (holder(folder) or {})["command"] == "unknown"
    finally:
        os.close(fd)


def test_a_taker_of_a_removed_lock_file_opens_the_new_one(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder removes the file as it releases: a taker that opened that file just before
    locks a file no longer at the path, so it opens the path again, and there meets the next
    holder."""
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / LOCK_FILE).write_text("")
    real = lock._try_lock
    others: list[subprocess.Popen[str]] = []

    def released_meanwhile(fd: int, path: Path, operation: int = fcntl.LOCK_EX) -> bool:
        if not others:  # between our open and our lock: removed, then taken by another
            (folder / LOCK_FILE).unlink()
            others.append(start_holder("lab", folder, "up --name lab"))
        return real(fd, path, operation)

    monkeypatch.setattr(lock, "_try_lock", released_meanwhile)
    try:
        with pytest.raises(BusyError, match=r"in use by `gpulab up --name lab` \(pid "), \
                lab_lock("lab", folder, "down --name lab"):
            pass
    finally:
        for other in others:
            other.communicate(timeout=30)


def test_a_filesystem_without_locks_is_named(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(lock.fcntl, "flock", no_locks)
    with pytest.raises(GpulabError, match=r"cannot lock .*lab/\.lock: No locks available") as caught, \
            lab_lock("lab", tmp_path / "lab", "up"):
        pass
    assert "local filesystem" in str(caught.value)


def test_down_during_up_refuses_and_touches_nothing() -> None:
    folder = lab_dir("busy")
    folder.mkdir(parents=True)
    (folder / "management.kubeconfig").write_text("kept")
    with held_by_another_process("busy", folder, "up --name busy"):
        result = runner.invoke(app, ["down", "--name", "busy"])
    # Docker is unreachable here, so down stops at Docker or at the lock; either way the lab's
    # files stay. With Docker, the lock refuses: tests/docker/test_cli_lifecycle.py.
    assert result.exit_code in (ExitCode.BUSY, ExitCode.HOST)
    assert (folder / "management.kubeconfig").read_text() == "kept"


def test_reads_do_not_wait_for_the_lock() -> None:
    folder = lab_dir("reading")
    with held_by_another_process("reading", folder, "up --name reading"):
        result = runner.invoke(app, ["labs", "-o", "json"])
        assert result.exit_code == 0
        assert [lab["name"] for lab in json.loads(result.stdout)["labs"]] == ["reading"]
