"""SIGTERM and SIGHUP end `up` the way Ctrl-C does: the tools it runs are stopped with their
process groups, kind's temporary config is removed, and one line says how to continue or remove
the lab; exit 128 + the signal (143, 129). A real `gpulab up` process, a fake kind that hangs."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.docker.conftest import unique
from tests.host import require_helm

HANGING_KIND = """#!/bin/sh
case "$1" in
  version) echo "kind v0.33.0 go1.24.0 linux/amd64" ;;
  get) echo "No kind clusters found." >&2 ;;
  create) echo $$ > "$KIND_PID_FILE"; sleep 60 & echo $! > "$KIND_PID_FILE.child"; wait ;;
  delete) exit 0 ;;
esac
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                   (signal.SIGHUP, 129, "hung up (SIGHUP)")])
def test_a_signal_stops_up_and_everything_it_started(tmp_path: Path, runtime, sig: int,
                                                     code: int, said: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kind = bin_dir / "kind"
    kind.write_text(HANGING_KIND)
    kind.chmod(kind.stat().st_mode | stat.S_IXUSR)
    helm_dir = Path(require_helm()).parent
    pid_file = tmp_path / "kind.pid"
    temp = tmp_path / "tmp"
    temp.mkdir()
    lab = unique("sig")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{helm_dir}{os.pathsep}{os.environ['PATH']}",
           "GPULAB_HOME": str(tmp_path / "home"), "KIND_PID_FILE": str(pid_file),
           "TMPDIR": str(temp)}
    up = subprocess.Popen([sys.executable, "-m", "gpulab", "up", "--name", lab,
                           "--skip-preflight"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and Path(f"{pid_file}.child").exists()):
            assert up.poll() is None, up.communicate()
            assert time.monotonic() < deadline, "kind create never started"
            time.sleep(0.1)
        kind_pid = int(pid_file.read_text())
        sleeper = int(Path(f"{pid_file}.child").read_text())
        assert list(temp.glob("gpulab-kind-*"))  # kind's config is there while it runs
        up.send_signal(sig)
        _, stderr = up.communicate(timeout=30)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == code, stderr
    assert f"{said}: lab '{lab}' is partly built; `gpulab up --name {lab}` continues" in stderr
    assert "Traceback" not in stderr
    assert not _alive(kind_pid) and not _alive(sleeper)  # the whole group went
    assert not list(temp.glob("gpulab-kind-*"))  # temp files removed
    assert not (tmp_path / "home" / "labs" / lab / ".lock").exists()  # the lock released


@pytest.mark.parametrize("as_other_user", [False, True])
def test_stopping_up_also_stops_its_docker_execs(runtime, node_spec, monkeypatch,
                                                 as_other_user: bool) -> None:
    """A `kubeadm join` runs inside a node through `docker exec`, not as gpulab's child: the
    runtime stops it too, directly by its host pid, or (when gpulab may not signal it) inside
    the container by its pid there."""
    import threading

    from gpulab import children
    from gpulab.adapters import docker_runtime

    if as_other_user:
        def refuse(pid: int, sig: int) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(docker_runtime.os, "kill", refuse)
    spec = node_spec()
    runtime.run_node(spec)
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: box.setdefault(
        "result", runtime.exec(spec.name, ["sleep", "60"], timeout=90)))
    worker.start()
    deadline = time.monotonic() + 10
    while not runtime._execs and time.monotonic() < deadline:  # the exec is registered
        time.sleep(0.05)
    time.sleep(0.3)  # the exec's process is started
    started = time.monotonic()
    assert children.terminate_all() >= 1
    worker.join(timeout=20)
    assert not worker.is_alive(), "the exec was not stopped"
    assert time.monotonic() - started < 20
    result = box["result"]
    assert result.exit_code in (143, -15, 128 + 15), result  # type: ignore[attr-defined]
