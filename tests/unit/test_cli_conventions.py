"""The command line as kind, kubectl and helm users expect it (issue: conventions): -h, bare
`gpulab`, -o everywhere, completion, `labs`, `version`, hints, merged kubeconfig contexts."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, kubeconfigs
from gpulab.adapters.base import ContainerInfo
from gpulab.cli import app
from gpulab.cli.options import complete_checks, complete_labs, complete_members, complete_profiles
from gpulab.paths import lab_dir

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def _built(lab: str, profile: str, members: list[str]) -> Path:
    """A lab folder as `up` leaves it: the profile record and the kubeconfigs."""
    folder = lab_dir(lab)
    folder.mkdir(parents=True)
    (folder / "lab.json").write_text(json.dumps({"profile": profile, "stack": profile}))
    for member in ["management", *members]:
        config = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": member, "cluster": {"server": f"https://{member}:6443"}}],
                  "users": [{"name": "admin", "user": {"token": f"secret-{member}"}}],
                  "contexts": [{"name": "c", "context": {"cluster": member, "user": "admin"}}],
                  "current-context": "c"}
        (folder / f"{member}.kubeconfig").write_text(yaml.safe_dump(config))
    return folder


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["up", "-h"], ["profiles", "-h"]])
def test_dash_h_is_help(argv: list[str]) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 0 and "Usage:" in result.stdout


def test_bare_gpulab_prints_help_and_succeeds() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0
    assert "Commands" in result.stdout and "labs" in result.stdout and "version" in result.stdout


# --------------------------------------------------------------------------- -o


@pytest.mark.parametrize("command", [["status"], ["doctor"], ["plan"], ["profiles", "list"],
                                     ["labs"], ["version"], ["verify"], ["down"], ["up"]])
def test_a_bad_output_lists_the_choices(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "-o", "xml"])
    assert result.exit_code == 2
    assert "'xml' is not one of text, yaml, json" in result.stderr
    assert "Value error" not in result.stderr


def test_json_is_a_deprecated_alias_of_dash_o_json(tmp_path: Path) -> None:
    from tests.kamaji_hami.builders import RECORDINGS

    new = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                              "-o", "json"])
    old = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                              "--json"])
    assert new.exit_code == old.exit_code == 0
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "--json is deprecated; use -o json" in old.stderr
    as_yaml = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                  "-o", "yaml"])
    assert yaml.safe_load(as_yaml.stdout) == json.loads(new.stdout)


def test_piped_tables_are_not_padded_nor_cut() -> None:
    result = runner.invoke(app, ["plan"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines and all(line == line.rstrip() for line in lines)
    assert "\x1b[" not in result.stdout and "…" not in result.stdout
    assert max(len(line) for line in lines) > 80  # nothing squeezed into 80 columns


# --------------------------------------------------------------------------- version


def test_version_lists_every_pin_for_bug_reports() -> None:
    result = runner.invoke(app, ["version", "-o", "json"])
    assert result.exit_code == 0
    info = json.loads(result.stdout)
    assert info["gpulab"] and info["helm"].startswith("v")
    kamaji = info["profiles"]["kamaji-hami"]
    assert kamaji["kind"] == "v0.33.0" and kamaji["node_image"].startswith("kindest/node:v1.36.4@")
    charts = {c["chart"]: c for c in kamaji["charts"]}
    assert charts["kamaji"]["from"] == "https://github.com/clastix/kamaji@ddbabd87ed0e:charts/kamaji"
    assert charts["hami"]["version"] == "2.10.0"
    assert {m["component"]: m["version"] for m in kamaji["manifests"]} == {
        "metallb": "v0.16.1", "calico": "v3.31.2"}
    assert kamaji["images"]["components.kamaji.image_tag"] == "26.8.2-edge"
    assert "vcluster-kai" in info["profiles"]
    text = runner.invoke(app, ["version"])
    assert text.exit_code == 0 and "chart hami 2.10.0" in text.stdout


# --------------------------------------------------------------------------- labs


def test_labs_without_docker_lists_the_state_folder() -> None:
    _built("lab-one", "vcluster-kai", ["team-nlp", "team-vision", "team-recommender"])
    result = runner.invoke(app, ["labs", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    [lab] = json.loads(result.stdout)["labs"]
    assert (lab["name"], lab["profile"], lab["stack"], lab["state"]) == (
        "lab-one", "vcluster-kai", "vcluster-kai", "unknown")
    assert lab["tenants"] == ["team-nlp", "team-vision", "team-recommender"]
    assert len(lab["kubeconfigs"]) == 4
    assert "Docker not reachable" in result.stderr
    ls = runner.invoke(app, ["ls"])
    assert ls.exit_code == 0 and "lab-one" in ls.stdout


class _Reader:
    def __init__(self, containers: list[ContainerInfo]) -> None:
        self.found = containers

    def containers(self, labels):
        return list(self.found)

    def network(self, name):
        return None


def _container(name: str, lab: str, status: str = "running", kind: bool = False) -> ContainerInfo:
    labels = {"io.x-k8s.kind.cluster": f"gpulab-{lab}"} if kind else {"gpulab.dev/lab": lab}
    return ContainerInfo(name, name, "kindest/node", status, labels, {})


def test_lab_states_and_leftovers() -> None:
    members = ["tenant-a", "tenant-b"]
    _built("ready", "kamaji-hami", members)
    _built("broken", "kamaji-hami", members)
    half = _built("half", "kamaji-hami", members)
    (half / "tenant-b.kubeconfig").unlink()
    reader = _Reader([
        _container("gpulab-ready-control-plane", "ready", kind=True),
        _container("gpulab-ready-tenant-a-worker", "ready"),
        _container("gpulab-broken-tenant-a-worker", "broken", status="exited"),
        _container("gpulab-half-control-plane", "half", kind=True),
        _container("gpulab-ghost-tenant-a-worker", "ghost"),  # no state folder
    ])
    found = core.labs(reader)  # type: ignore[arg-type]
    states = {lab["name"]: lab["state"] for lab in found["labs"]}
    assert states == {"broken": "broken", "half": "partial", "ready": "ready"}
    assert found["leftovers"] == [{"name": "ghost", "containers": ["gpulab-ghost-tenant-a-worker"],
                                   "remove": "gpulab down --name ghost"}]


# --------------------------------------------------------------------------- up's flags


def test_up_name_continues_the_recorded_profile_and_refuses_another() -> None:
    _built("teams", "vcluster-kai", ["team-nlp", "team-vision", "team-recommender"])
    refused = runner.invoke(app, ["up", "--name", "teams", "-p", "kamaji-hami"])
    assert refused.exit_code == 2
    assert "lab 'teams' was built from profile 'vcluster-kai', not 'kamaji-hami'" in refused.stderr
    continued = runner.invoke(app, ["up", "--name", "teams"])  # stops at Docker, after loading
    assert continued.exit_code == 4
    assert "vcluster-kai.yaml" in continued.stderr


# --------------------------------------------------------------------------- completion


def test_completion_offers_labs_profiles_tenants_and_checks(monkeypatch) -> None:
    _built("alpha", "kamaji-hami", ["tenant-a", "tenant-b"])
    _built("beta", "vcluster-kai", ["team-nlp", "team-vision", "team-recommender"])
    assert complete_labs("a") == ["alpha"]
    assert complete_profiles("vc") == ["vcluster-kai"]

    class Ctx:
        params = {"name": "beta", "profile": None}

    assert complete_members(Ctx(), "team-n") == ["team-nlp"]  # type: ignore[arg-type]
    assert complete_checks(Ctx(), "kai-0")[:2] == ["KAI-01", "KAI-02"]  # type: ignore[arg-type]
    Ctx.params = {"name": "alpha", "profile": None}
    assert complete_checks(Ctx(), "")[0] == "TC-01"  # type: ignore[arg-type]


def test_shell_completion_scripts_are_offered() -> None:
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.stdout and "--show-completion" in result.stdout
    done = runner.invoke(app, [], prog_name="gpulab",
                         env={"_GPULAB_COMPLETE": "complete_bash", "COMP_WORDS": "gpulab ver",
                              "COMP_CWORD": "1"})
    assert "verify" in done.stdout and "version" in done.stdout


# --------------------------------------------------------------------------- kubeconfig --merge


def test_merge_adds_a_context_like_kind_and_keeps_the_users_own(tmp_path: Path,
                                                               monkeypatch) -> None:
    _built("alpha", "kamaji-hami", ["tenant-a", "tenant-b"])
    target = tmp_path / "kube" / "config"
    target.parent.mkdir()
    target.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "mine",
        "clusters": [{"name": "mine", "cluster": {"server": "https://mine"}}],
        "users": [{"name": "mine", "user": {}}],
        "contexts": [{"name": "mine", "context": {"cluster": "mine", "user": "mine"}}]}))
    monkeypatch.setenv("KUBECONFIG", f"{target}{os.pathsep}/elsewhere")
    result = runner.invoke(app, ["kubeconfig", "tenant-a", "--name", "alpha", "--merge"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "gpulab-alpha-tenant-a"
    assert "secret-" not in result.stdout + result.stderr  # credentials never printed
    merged = yaml.safe_load(target.read_text())
    assert merged["current-context"] == "mine"  # the user's choice stays
    contexts = {c["name"]: c["context"] for c in merged["contexts"]}
    assert contexts["gpulab-alpha-tenant-a"] == {"cluster": "gpulab-alpha-tenant-a",
                                                "user": "gpulab-alpha-tenant-a"}
    clusters = {c["name"]: c["cluster"] for c in merged["clusters"]}
    assert clusters["gpulab-alpha-tenant-a"]["server"] == "https://tenant-a:6443"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    again = runner.invoke(app, ["kubeconfig", "tenant-a", "--name", "alpha", "--merge"])
    assert again.exit_code == 0
    assert [c["name"] for c in yaml.safe_load(target.read_text())["contexts"]].count(
        "gpulab-alpha-tenant-a") == 1  # replaced, not duplicated


def test_removal_is_exact_per_lab(tmp_path: Path) -> None:
    config = {"contexts": [{"name": "gpulab-a-t1"}, {"name": "gpulab-a-b-t1"}, {"name": "x"}],
              "clusters": [{"name": "gpulab-a-t1"}, {"name": "gpulab-a-b-t1"}],
              "users": [{"name": "gpulab-a-t1"}], "current-context": "gpulab-a-t1"}
    names = {kubeconfigs.context_name("a", m) for m in ("management", "t1")}
    left, removed = kubeconfigs.remove(config, names)
    assert removed == ["gpulab-a-t1"]
    assert [c["name"] for c in left["contexts"]] == ["gpulab-a-b-t1", "x"]  # lab a-b untouched
    assert left["current-context"] == ""


# --------------------------------------------------------------------------- timings


def test_step_timings_are_kept_for_status_and_junit() -> None:
    from gpulab.engine.runner import Outcome, RunResult, StepResult
    from gpulab.verify.report import junit_xml
    from tests.kamaji_hami.builders import RECORDINGS

    def run(*steps: tuple[str, Outcome, float]) -> RunResult:
        return RunResult(results=[StepResult(name=n, title=n, outcome=o, elapsed=s)
                                  for n, o, s in steps])

    core.record_timings("t", run(("management/cluster", Outcome.DONE, 21.5),
                                 ("tenant-a/join", Outcome.FAILED, 3.0)))
    core.record_timings("t", run(("management/cluster", Outcome.SKIPPED, 0.0),
                                 ("tenant-a/join", Outcome.DONE, 31.0)))
    timings = {t["step"]: (t["outcome"], t["seconds"]) for t in core.recorded_timings("t")}
    assert timings == {"management/cluster": ("done", 21.5), "tenant-a/join": ("done", 31.0)}
    from gpulab.stacks import for_name

    report, _ = for_name("kamaji-hami").replay(RECORDINGS / "writeup-healthy", None)
    xml = junit_xml(report, properties={"up.tenant-a/join.seconds": "31.0"})
    assert '<property name="up.tenant-a/join.seconds" value="31.0"' in xml


def test_plain_progress_is_one_line_per_step_with_its_duration() -> None:
    import io

    from gpulab.engine.progress import PlainReporter
    from gpulab.engine.runner import Event

    stream = io.StringIO()
    reporter = PlainReporter(stream)
    for event in (Event("a", "started", "Creating", 0.0, ""),
                  Event("a", "note", "Creating", 0.0, "kind create"),
                  Event("a", "done", "Creating", 12.34, ""),
                  Event("b", "started", "Joining", 0.0, ""),
                  Event("b", "failed", "Joining", 0.4, "kubeadm join failed")):
        reporter(event)
    assert stream.getvalue().splitlines() == [" ✓ Creating [12.3s]", " ✗ Joining [0.4s]"]
    verbose = io.StringIO()
    loud = PlainReporter(verbose, verbose=True)
    loud(Event("a", "started", "Creating", 0.0, ""))
    loud(Event("a", "note", "Creating", 0.0, "kind create"))
    assert verbose.getvalue().splitlines() == [" • Creating ...", "   kind create"]


def test_after_up_the_lab_is_explained_like_kind_does(monkeypatch) -> None:
    """What `up` prints when it built something: how long each step took, then how to use the
    lab (export KUBECONFIG, kubectl get nodes, gpulab verify with the --name used)."""
    from gpulab.engine.runner import Outcome, RunResult, StepResult

    def fake_up(profile, name, reporter, **_kwargs):
        return RunResult(results=[StepResult("management/cluster", "Creating", Outcome.DONE,
                                             20.0),
                                  StepResult("tenant-a/join", "Joining", Outcome.DONE, 31.5)])

    monkeypatch.setattr(core, "up", fake_up)
    result = runner.invoke(app, ["up", "--name", "demo"])
    assert result.exit_code == 0, result.stderr
    folder = lab_dir("demo")
    assert f"export KUBECONFIG={folder / 'tenant-a.kubeconfig'}" in result.stderr
    assert "kubectl get nodes" in result.stderr
    assert "gpulab verify --name demo" in result.stderr
    rows = [line.split() for line in result.stderr.splitlines()]
    assert ["tenant-a/join", "done", "31.5"] in rows and ["total", "51.5"] in rows
    assert [t["step"] for t in core.recorded_timings("demo")] == ["management/cluster",
                                                                  "tenant-a/join"]


# --------------------------------------------------------------------------- hostile flags


@pytest.mark.parametrize("argv", [["down", "--name", ""], ["down", "--name", "  "],
                                  ["status", "-p", ""], ["up", "-p", " ", "--name", "x"],
                                  ["verify", "--name", ""]])
def test_empty_name_or_profile_never_means_the_default(argv: list[str]) -> None:
    """`gpulab down --name "$UNSET"` must not remove the default lab."""
    result = runner.invoke(app, argv)
    assert result.exit_code == 2
    assert "must not be empty" in result.stderr


@pytest.mark.parametrize(("host", "expected"), [
    ("tcp://", "is not a Docker address"),
    ("foo", "is not a Docker address"),
    ("tcp://host:notaport", "is not a Docker address (Port could not be cast"),
    ("tcp://[::1", "is not a Docker address (Invalid IPv6 URL)"),
    ("ssh://me@host", "needs docker-py's ssh support"),
    ("npipe:////./pipe/docker_engine", "only supported on Windows"),
    ("unix:///nonexistent/docker.sock", "no Docker engine at unix:///nonexistent/docker.sock"),
])
def test_every_malformed_docker_host_is_one_clean_line(monkeypatch, host: str,
                                                       expected: str) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 4, (result.stderr, result.exception)
    assert expected in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr


def test_a_lab_name_too_long_for_what_it_composes_is_refused_with_the_name() -> None:
    long = "a" * 41  # a DNS label; gpulab-<lab>-tenant-a-worker is 64 characters (> 63)
    result = runner.invoke(app, ["plan", "--name", long])
    assert result.exit_code == 2, result.stderr
    assert f"lab name '{long}' is too long" in result.stderr
    assert f"gpulab-{long}-tenant-a-worker" in result.stderr and "at most 63" in result.stderr
    kind_limit = runner.invoke(app, ["plan", "-p", "vcluster-kai", "--name", "b" * 44])
    assert kind_limit.exit_code == 2
    assert "the kind cluster would be named" in kind_limit.stderr and "at most 50" in (
        kind_limit.stderr)


def test_a_system_error_at_the_edge_is_one_line(monkeypatch, tmp_path: Path) -> None:
    from gpulab.usecases import lab

    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "labs" / "x" / "lab.json"))

    monkeypatch.setattr(lab, "load", full)
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (f"error: No space left on device "
                                     f"({tmp_path / 'labs' / 'x' / 'lab.json'})")


def test_a_bug_keeps_its_traceback_and_asks_to_be_reported(monkeypatch) -> None:
    from gpulab.usecases import lab

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(lab, "load", broken)
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr
    assert "this is a bug in gpulab: please report it" in result.stderr
