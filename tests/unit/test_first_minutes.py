"""The first minutes read well (issue #31 item 5), each through the command line: a "no such
lab" hint builds the lab asked for, `down` of nothing removes nothing, `kubeconfig` with no lab
leaves `$(...)` empty and fails, and `verify --kubeconfig` against an API server that does not
answer says so once, on stderr, with the server and the deadline.

Docker is the fake of tests/fakes.py (an empty engine: no lab in it); API servers are real
sockets on 127.0.0.1 (a closed port, and a listening one that never answers)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.paths import lab_dir
from tests.fakes import FakeRuntime, FakeWorld

runner = CliRunner()


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> FakeWorld:
    """An empty fake Docker engine, no kind or helm, and no real socket behind it."""
    import gpulab.tools

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    fake = FakeWorld()
    monkeypatch.setattr(core, "connect_runtime", lambda *_a, **_k: FakeRuntime(fake))
    monkeypatch.setattr(core, "docker_endpoint", lambda: None, raising=False)
    monkeypatch.setattr("gpulab.providers.kind.kind_cli", lambda *_a, **_k: None)
    monkeypatch.setattr(gpulab.tools, "find_tool", lambda _name: None)
    return fake


# --------------------------------------------------------------------------- no such lab

COMMANDS = {
    "status": ["status"],
    "verify": ["verify"],
    "logs": ["logs"],
    "kubeconfig": ["kubeconfig", "management"],
    "join": ["join", "tenant-a"],
}
SELECTORS = {  # the options that select the lab, and the lab and stack they select
    "profile": (["-p", "vcluster-kai"], "vcluster-kai", "vcluster-kai"),
    "profile and name": (["-p", "vcluster-kai", "--name", "teams"], "teams", "vcluster-kai"),
    "name": (["--name", "ghost"], "ghost", "kamaji-hami"),
    "neither": ([], "kamaji-hami", "kamaji-hami"),
}


@pytest.mark.parametrize("selector", SELECTORS, ids=list(SELECTORS))
@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_no_such_lab_suggests_the_up_that_builds_the_lab_asked_for(
        world: FakeWorld, command: str, selector: str, tmp_path: Path) -> None:
    options, lab, stack = SELECTORS[selector]
    argv = [*COMMANDS[command], *options]
    if command == "logs":
        argv.insert(1, str(tmp_path / "bundle"))
    result = runner.invoke(app, argv)
    assert result.exit_code == 6, (argv, result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr  # one line
    assert f"no lab named '{lab}' on this host" in result.stderr
    suggested = result.stderr.split("; ", 1)[1].removesuffix(" builds it)\n")
    words = shlex.split(suggested)
    assert words[:2] == ["gpulab", "up"], suggested
    # the suggestion, as `plan`, plans that lab from that profile
    planned = runner.invoke(app, ["plan", *words[2:]])
    assert planned.exit_code == 0, planned.stderr
    assert f"Plan for lab '{lab}' from " in planned.stderr
    assert planned.stderr.split(" from ", 1)[1].split()[0].endswith(f"/{stack}.yaml")
    assert not lab_dir(lab).exists()  # asking made nothing


# --------------------------------------------------------------------------- down of nothing


def _deletes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call that would delete something in Docker or kind, recorded."""
    from gpulab.providers import kind as kind_provider

    calls: list[str] = []
    for method in ("remove", "remove_network", "remove_volume"):
        def spy(self: Any, name: str, *_a: Any, _method: str = method, **_k: Any) -> bool:
            calls.append(f"docker {_method} {name}")
            return True
        monkeypatch.setattr(FakeRuntime, method, spy, raising=False)

    def teardown(self: Any, lab: str, *_a: Any, **_k: Any) -> Any:
        calls.append(f"teardown {lab}")
        raise AssertionError("down of nothing tore something down")

    monkeypatch.setattr(kind_provider.KindProvider, "teardown", teardown)
    return calls


def test_down_of_a_lab_that_does_not_exist_says_so_once_and_removes_nothing(
        world: FakeWorld, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path) -> None:
    calls = _deletes(monkeypatch)
    result = runner.invoke(app, ["down", "--name", "ghost"])
    assert result.exit_code == 0, result.stderr  # idempotent, as `kind delete cluster`
    assert result.stderr == "nothing to remove: no lab named 'ghost' on this host\n"
    assert result.stdout == ""
    assert calls == []
    assert not (_isolated_home / "labs" / "ghost").exists()  # not even the lock's folder
    as_json = runner.invoke(app, ["down", "--name", "ghost", "-o", "json"])
    assert as_json.exit_code == 0 and calls == []
    assert '"removed": []' in as_json.stdout


def test_down_of_a_leftover_still_removes_it(world: FakeWorld,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side: something labelled for the lab (no folder) is a lab to remove."""
    from gpulab.adapters.base import ContainerInfo

    world.containers["gpulab-ghost-tenant-a-worker"] = ContainerInfo(
        "gpulab-ghost-tenant-a-worker", "gpulab-ghost-tenant-a-worker", "img", "running",
        {"gpulab.dev/lab": "ghost"}, {})
    calls = _deletes(monkeypatch)
    result = runner.invoke(app, ["down", "--name", "ghost"])
    assert calls == ["teardown ghost"], (result.stdout, result.stderr)


# --------------------------------------------------------------------------- kubeconfig


def test_kubeconfig_with_no_lab_prints_nothing_on_stdout_and_fails(world: FakeWorld) -> None:
    for argv in (["kubeconfig", "tenant-a"], ["kubeconfig", "tenant-a", "--export"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 6, result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("error: no lab named 'kamaji-hami' on this host")
    core.record_profile("kamaji-hami", core.load("kamaji-hami"))  # built, nothing saved yet
    not_up = runner.invoke(app, ["kubeconfig", "tenant-a"])
    assert not_up.exit_code == 4 and not_up.stdout == ""
    assert "lab 'kamaji-hami' is not up" in not_up.stderr


def test_export_kubeconfig_from_the_shell_gets_nothing_and_a_message(
        _isolated_home: Path) -> None:
    """As the README has it: `export KUBECONFIG=$(gpulab kubeconfig tenant-a)`: the variable
    stays empty (no path to a file that is not there) and the message reaches the terminal;
    the command's own status is non-zero, which `VAR=$(...)` keeps."""
    gpulab = f"{shlex.quote(sys.executable)} -m gpulab"
    script = (f"KUBECONFIG=$({gpulab} kubeconfig tenant-a); echo \"status=$? "
              f"value=[$KUBECONFIG]\"")
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False,
                          env={**os.environ, "GPULAB_HOME": str(_isolated_home)}, timeout=60)
    assert done.stdout == "status=6 value=[]\n"
    assert done.stderr.startswith("error: no lab named 'kamaji-hami' on this host")


# --------------------------------------------------------------------------- verify --kubeconfig


def _kubeconfig(path: Path, server: str) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("answer", ["closed", "silent"])
def test_verify_kubeconfig_says_once_on_stderr_that_the_server_did_not_answer(
        tmp_path: Path, answer: str) -> None:
    with socket.socket() as listener:
        if answer == "silent":  # connects (the kernel's backlog), never answers a byte
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            port = int(listener.getsockname()[1])
        else:
            port = _closed_port()
        server = f"https://127.0.0.1:{port}"
        config = _kubeconfig(tmp_path / "cluster.kubeconfig", server)
        result = runner.invoke(app, ["verify", "cluster", "--kubeconfig", str(config),
                                     "--request-timeout", "500ms",
                                     "--discovery-timeout", "1s"])
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert [line for line in result.stderr.splitlines() if server in line] == errors
    assert errors[0].startswith(f"error: cluster cluster: the API server at {server} did not "
                                "answer (deadline: 0.5s per request (--request-timeout), 1s "
                                "in all (--discovery-timeout))")
    assert "verify would refuse" not in result.stderr


# --------------------------------------------------------------------------- up's refusal


def test_up_refusal_is_a_short_line_per_problem_with_its_fix_on_its_own(
        world: FakeWorld, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path) -> None:
    """No kind and no helm (find_tool finds nothing): two problems, each on a line of its own
    and its fix under it, after one `error:` line; exit 4 as before; nothing created."""
    from gpulab.adapters.docker_endpoint import DockerEndpoint

    monkeypatch.setattr(core, "docker_endpoint", lambda: DockerEndpoint("unix:///s"))
    monkeypatch.setenv("PATH", str(_isolated_home))  # no helm or git of this host's either
    for variable in ("GPULAB_KIND", "GPULAB_HELM"):
        monkeypatch.delenv(variable, raising=False)
    result = runner.invoke(app, ["up", "--name", "refused"])
    assert result.exit_code == 4, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    count = int(errors[0].split()[2])
    assert count >= 2
    assert errors[0] == (f"error: preflight: {count} problems on this host, nothing was "
                         "created (gpulab doctor shows every check)")
    problems = lines[lines.index(errors[0]) + 1:]
    assert problems[0] == "  kind: kind not found"
    assert problems[1].startswith("    fix: gpulab doctor --install-tools, or install kind v")
    assert "  helm: helm not found" in problems
    assert len([p for p in problems if p.startswith("  ") and not p.startswith("    ")]) \
        == count
    assert all(len(p) <= 160 for p in problems), problems  # short: the causes are brief here
    assert world.containers == {} and not (_isolated_home / "labs" / "refused").exists()


# --------------------------------------------------------------------------- long waits


class _Waits:
    """A step that waits for something that comes on the third look."""

    name = "tenant-a/control-plane"
    title = "Creating tenant-a's control plane"
    requires: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.looks = 0

    def describe(self) -> list[Any]:
        return []

    def satisfied(self, _ctx: Any) -> bool:
        return False

    def apply(self, ctx: Any) -> None:
        from gpulab.engine.wait import wait_until

        def ready() -> tuple[bool, str]:
            self.looks += 1
            return self.looks >= 3, f"look {self.looks}"

        wait_until(ctx, self.name, "TenantControlPlane tenant-a Ready", ready, timeout=600)


@pytest.mark.parametrize("json_lines", [False, True])
def test_up_says_what_a_long_wait_waits_for_and_how_long_it_will_wait(
        monkeypatch: pytest.MonkeyPatch, json_lines: bool) -> None:
    """Through `gpulab up`: the progress lines (no -v) name the wait and its deadline once,
    when the step turns out to wait; --json has it as a `waiting` event."""
    import json

    from gpulab.engine.runner import RunResult, run_steps
    from gpulab.engine.step import StepContext

    def up(_profile: Any, lab: str, report: Any, **_kwargs: Any) -> RunResult:
        ctx = StepContext(lab=lab, adapters=None, sleep=lambda _s: None)
        return run_steps([_Waits()], ctx, report)

    monkeypatch.setattr(core, "up", up)
    monkeypatch.setattr(core, "record_profile", lambda *_a: None)
    monkeypatch.setattr(core, "record_timings", lambda *_a: None)
    monkeypatch.setattr("gpulab.cli.up.next_steps", lambda *_a: "lab is up")
    result = runner.invoke(app, ["up", "--name", "waits", *(["--json"] if json_lines else [])])
    assert result.exit_code == 0, result.stderr
    said = "waiting up to 10m for TenantControlPlane tenant-a Ready"
    if json_lines:
        events = [json.loads(line) for line in result.stdout.splitlines()]
        waits = [e for e in events if e["event"] == "waiting"]
        assert [(e["step"], e["message"]) for e in waits] == [("tenant-a/control-plane", said)]
    else:
        lines = result.stderr.splitlines()
        assert lines.count(f" … Creating tenant-a's control plane: {said}") == 1, lines
        done = next(i for i, line in enumerate(lines) if line.startswith(" ✓ Creating"))
        assert lines.index(f" … Creating tenant-a's control plane: {said}") < done


def test_a_wait_that_is_over_at_the_first_look_says_nothing() -> None:
    from gpulab.engine.runner import Event
    from gpulab.engine.step import StepContext
    from gpulab.engine.wait import duration, wait_until

    events: list[Event] = []
    ctx = StepContext(lab="x", adapters=None, sleep=lambda _s: None,
                      waiting=lambda what, s: events.append(Event("s", "waiting", what, s)))
    wait_until(ctx, "s", "it", lambda: (True, ""), timeout=30)
    assert events == []
    assert [duration(s) for s in (0, 45, 300, 90, 3600, 5400)] == [
        "0s", "45s", "5m", "1m30s", "1h", "1h30m"]


# --------------------------------------------------------------------------- narrow terminals

NARROW = {"COLUMNS": "40"}


def _whole(words: set[str], text: str) -> list[str]:
    """The words that no line of `text` holds whole."""
    lines = text.splitlines()
    return sorted(w for w in words if not any(w in line for line in lines))


def _words(*texts: str) -> set[str]:
    return {word for text in texts for word in text.split()}


@pytest.mark.parametrize("profile", ["kamaji-hami", "vcluster-kai"])
def test_a_narrow_plan_cuts_no_name(profile: str) -> None:
    import json

    steps = json.loads(runner.invoke(app, ["plan", "-p", profile, "-o", "json"]).stdout)
    result = runner.invoke(app, ["plan", "-p", profile], env=NARROW)
    assert result.exit_code == 0, result.stderr
    names = _words(*(s["step"] for s in steps), *(a["name"] for s in steps
                                                  for a in s["artifacts"]))
    assert len(names) > 20
    assert _whole(names, result.stdout) == []
    assert "…" not in result.stdout


@pytest.mark.parametrize("example", ["example:kamaji-hami", "example:vcluster-kai"])
def test_a_narrow_verify_report_cuts_no_name_or_word(example: str) -> None:
    import json

    doc = json.loads(runner.invoke(app, ["verify", "replay", example, "-o", "json"]).stdout)
    result = runner.invoke(app, ["verify", "replay", example], env=NARROW)
    assert result.exit_code == 0, result.stderr
    words = _words(*(f"{r['id']} {r['tenant']} {r.get('evidence', '')} {r.get('reason', '')}"
                     for r in doc["results"]))
    assert _whole(words, result.stdout) == []
    assert "…" not in result.stdout


def test_a_narrow_doctor_cuts_no_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.doctor import Finding

    image = ("kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7e"
             "a312e3cbfaed")
    findings = [Finding("node image", "warn", f"{image} is not on this host and was not pulled "
                        "(--no-pull)", f"docker pull {image}"),
                Finding("inotify watches", "ok", "fs.inotify.max_user_watches = 524288")]
    monkeypatch.setattr("gpulab.providers.kind.preflight", lambda *_a, **_k: findings)
    result = runner.invoke(app, ["doctor", "--no-pull"], env=NARROW)
    assert result.exit_code == 0, result.stderr
    assert _whole(_words(*(f"{f.check} {f.status} {f.detail}" for f in findings)),
                  result.stdout) == []
    assert f"  node image: docker pull {image}" in result.stdout.splitlines()
    assert "…" not in result.stdout
    # at 100 columns the table stays, and the detail naming the image is whole under it
    wide = runner.invoke(app, ["doctor", "--no-pull"], env={"COLUMNS": "100"})
    assert wide.stdout.splitlines()[0].split() == ["CHECK", "STATUS", "DETAIL"]
    assert wide.stdout.splitlines()[1].split() == ["node", "image", "warn", "see", "below"]
    assert f"node image: {findings[0].detail}" in wide.stdout.splitlines()


def test_a_narrow_status_cuts_no_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Status's tables (the kamaji-hami stack's) from a status document in gpulab's own shape
    (core.status's), at 40 columns."""
    worker = "gpulab-kamaji-hami-tenant-a-worker"
    info = {"stack": "kamaji-hami", "exists": True,
            "management": {"cluster": "gpulab-kamaji-hami", "state": "running"},
            "tenants": {"tenant-a": {
                "control_plane": {"status": "Ready", "version": "v1.36.4",
                                  "endpoint": "172.18.255.200:6443"},
                "workers": [{"name": worker, "state": "running"}],
                "nodes": [{"name": worker, "ready": True, "version": "v1.36.4"}],
                "gpus": [{"device": "GPU-MOCK-0", "model": "A100-SXM4-80GB",
                          "memory_mib": {"used": 60000, "total": 81920},
                          "cores": {"used": 90, "total": 100},
                          "pods": ["gpu-share-1", "gpu-share-2", "gpu-share-3"]}]}}}
    monkeypatch.setattr(core, "lab_provider", lambda *_a, **_k: None)
    monkeypatch.setattr(core, "status", lambda *_a, **_k: info)
    result = runner.invoke(app, ["status"], env=NARROW)
    assert result.exit_code == 0, result.stderr
    names = {worker, "gpulab-kamaji-hami", "GPU-MOCK-0", "A100-SXM4-80GB", "gpu-share-1,",
             "gpu-share-2,", "gpu-share-3", "172.18.255.200:6443", "60000/81920"}
    assert _whole(names, result.stdout) == []
    assert "…" not in result.stdout


def test_a_helm_install_says_it_waits_before_helm_starts_waiting() -> None:
    """helm --wait blocks up to the step's timeout: the wait is said before it, not after."""
    from types import SimpleNamespace

    from gpulab.adapters.base import HelmRelease
    from gpulab.engine.step import StepContext
    from gpulab.stacks.common import HelmAddon

    said: list[str] = []
    release = HelmRelease(name="cert-manager", chart="cert-manager", version="v1.19.1",
                          namespace="cert-manager", repo="https://charts.jetstack.io",
                          values={})

    class Helm:
        def install(self, _release: Any, timeout_seconds: int) -> None:
            said.append(f"helm install ({timeout_seconds}s)")

    adapters = SimpleNamespace(helm=lambda _path: Helm(), management_kubeconfig=lambda: "k",
                               kube=lambda _path: None)
    ctx = StepContext(lab="x", adapters=adapters, sleep=lambda _s: None,
                      waiting=lambda what, s: said.append(f"waiting {s:g}s for {what}"))
    step = HelmAddon(release, name="management/cert-manager", title="t", requires=(),
                     ready=lambda _kube: (True, "ready"), ready_what="the webhook",
                     timeout=300)
    step.apply(ctx)
    assert said == ["waiting 300s for helm to install cert-manager and its pods to be ready",
                    "helm install (300s)"]


def test_the_live_line_of_a_waiting_step_says_what_and_how_long() -> None:
    """On a terminal the spinner's line of the step carries the wait."""
    import io

    from rich.console import Console

    from gpulab.engine.progress import LiveReporter
    from gpulab.engine.runner import Event

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with LiveReporter(console) as live:
        live(Event("t/cp", "started", "Creating t's control plane"))
        live(Event("t/cp", "waiting", "Creating t's control plane", 0.0,
                   "waiting up to 10m for TenantControlPlane t Ready"))
        (task,) = live.progress.tasks
        assert task.description == ("Creating t's control plane: waiting up to 10m for "
                                    "TenantControlPlane t Ready")
