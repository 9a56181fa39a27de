"""One writer per lab: a second `up`/`down`/`verify` is refused with who holds the lab; a lock
left by a process that died is taken over with a note; reads never wait."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.errors import BusyError, ExitCode
from gpulab.lock import LOCK_FILE, holder, lab_lock
from gpulab.paths import lab_dir

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def _held_by_another_process(folder: Path, command: str) -> subprocess.Popen[bytes]:
    """A live process holding the lab's lock, as a concurrent `gpulab up` would."""
    folder.mkdir(parents=True, exist_ok=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (folder / LOCK_FILE).write_text(json.dumps({
        "pid": sleeper.pid, "host": socket.gethostname(), "command": command,
        "started": time.time()}))
    return sleeper


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
    sleeper = _held_by_another_process(folder, "up --name lab")
    try:
        with pytest.raises(BusyError) as caught, lab_lock("lab", folder, "down --name lab"):
            pass
        assert f"lab 'lab' is in use by `gpulab up --name lab` (pid {sleeper.pid}" in str(
            caught.value)
        assert caught.value.exit_code == ExitCode.BUSY == 5
        assert holder(folder)["pid"] == sleeper.pid  # the holder's lock stays
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # this pid is now dead
    folder.mkdir()
    (folder / LOCK_FILE).write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(),
                                                "command": "up", "started": time.time()}))
    notes: list[str] = []
    with lab_lock("lab", folder, "up", note=notes.append):
        assert holder(folder)["pid"] == os.getpid()
    assert notes and "no longer running" in notes[0]


def test_down_during_up_refuses_and_touches_nothing() -> None:
    folder = lab_dir("busy")
    sleeper = _held_by_another_process(folder, "up --name busy")
    (folder / "management.kubeconfig").write_text("kept")
    try:
        result = runner.invoke(app, ["down", "--name", "busy"])
    finally:
        sleeper.kill()
        sleeper.wait()
    # Docker is unreachable here, so down stops at Docker or at the lock; either way the lab's
    # files stay. With Docker, the lock refuses: tests/docker/test_cli_lifecycle.py.
    assert result.exit_code in (ExitCode.BUSY, ExitCode.HOST)
    assert (folder / "management.kubeconfig").read_text() == "kept"


def test_reads_do_not_wait_for_the_lock() -> None:
    folder = lab_dir("reading")
    sleeper = _held_by_another_process(folder, "up --name reading")
    try:
        result = runner.invoke(app, ["labs", "-o", "json"])
        assert result.exit_code == 0
        assert [lab["name"] for lab in json.loads(result.stdout)["labs"]] == ["reading"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_terminate_all_reaches_untracked_direct_children_too() -> None:
    """A helm that pyhelm3 started is a direct child gpulab did not start through children.run:
    SIGTERM reaches it as well."""
    from gpulab import children

    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert stray.pid in children._direct_children()
        assert children.terminate_all() >= 1
        stray.wait(timeout=10)
        assert stray.returncode == -15  # SIGTERM
    finally:
        if stray.poll() is None:
            stray.kill()


def test_a_lock_being_written_is_not_taken_over(tmp_path: Path) -> None:
    """Two `up` at the same moment: the second must not take the first's lock while the first
    has created the file but not written who it is yet."""
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / LOCK_FILE).write_text("")  # created, not written yet
    with pytest.raises(BusyError, match="in use by `gpulab unknown`"), \
            lab_lock("lab", folder, "up"):
        pass
    old = time.time() - 60
    os.utime(folder / LOCK_FILE, (old, old))  # nobody ever wrote it: stale after a while
    with lab_lock("lab", folder, "up"):
        assert holder(folder)["pid"] == os.getpid()
