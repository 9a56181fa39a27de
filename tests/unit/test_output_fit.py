"""Output that fits where it goes (issue #21 item 5), through the real command line: tables wrap
to $COLUMNS or 120 columns in pipes, commands stay whole on lines of their own, user and cluster
text is never markup, emoji or terminal control; help summaries are sentences; `plan -o yaml`
and `-o json` are one document and `-o manifests` is what `kubectl apply -f -` takes; `up -o`;
`gpulab completion SHELL` and `--tc` completion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.doctor import Finding
from gpulab.paths import lab_dir
from gpulab.terminal import READABLE_WIDTH
from tests.kamaji_hami.builders import RECORDINGS
from tests.schemas import validate_object

runner = CliRunner()
KUBECTL = Path(__file__).resolve().parents[2] / ".cache" / "ci-bin" / "kubectl"
HOSTILE = "[/bold] [red]:100: \x1b[31m\x1b]0;pwned\x07"  # markup, an emoji code, ESC, BEL
SHOWN = "[/bold] [red]:100: \\x1b[31m\\x1b]0;pwned\\x07"  # how gpulab prints it


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("COLUMNS", raising=False)


def _raw_controls(text: str) -> set[str]:
    return {c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0}


# --------------------------------------------------------------------------- widths


def _table(stdout: str) -> list[str]:
    """The table: the lines before the first blank line."""
    return stdout.split("\n\n", 1)[0].splitlines()


def test_a_piped_verify_table_fits_120_columns_and_reasons_stay_whole() -> None:
    result = runner.invoke(app, ["verify", "--replay",
                                 str(RECORDINGS / "writeup-webhook-bypassed")])
    assert result.exit_code == 3, result.stderr
    table = _table(result.stdout)
    assert len(table) > 16 and max(map(len, table)) <= READABLE_WIDTH
    assert all(line == line.rstrip() for line in result.stdout.splitlines())
    assert "\x1b[" not in result.stdout
    reason = json.loads(runner.invoke(app, [
        "verify", "--replay", str(RECORDINGS / "writeup-webhook-bypassed"), "-o", "json",
    ]).stdout)["results"]
    failed = next(r for r in reason if r["id"] == "TC-03" and r["status"] == "fail")
    # the whole reason, with its command, on one line under the table (soft wrap)
    assert f"FAIL TC-03 GPU admission path (tenant-b): {failed['reason']}" in (
        result.stdout.splitlines())


def test_columns_sets_the_width_of_piped_tables() -> None:
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy")],
                           env={"COLUMNS": "90"})
    assert result.exit_code == 0, result.stderr
    table = _table(result.stdout)
    assert max(map(len, table)) <= 90 and max(map(len, table)) > 80
    wide = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "kai-healthy")],
                         env={"COLUMNS": "200"})
    assert 120 < max(map(len, _table(wide.stdout))) <= 200


def test_plan_and_doctor_tables_fit_and_fixes_are_whole_lines(monkeypatch) -> None:
    plan = runner.invoke(app, ["plan"])
    assert plan.exit_code == 0, plan.stderr
    assert max(map(len, plan.stdout.splitlines())) <= READABLE_WIDTH
    fix = ("sudo sysctl fs.inotify.max_user_watches=524288 && echo fs.inotify.max_user_watches="
           "524288 | sudo tee /etc/sysctl.d/99-kind.conf  # see https://kind.sigs.k8s.io/docs/"
           "user/known-issues/#pod-errors-due-to-too-many-open-files")
    findings = [Finding("inotify watches", "warn", "fs.inotify.max_user_watches = 8192 " * 8, fix),
                Finding("docker", "ok", "Docker 29.0.1 at unix:///var/run/docker.sock")]
    monkeypatch.setattr("gpulab.providers.kind.preflight", lambda *_a, **_k: findings)
    doctor = runner.invoke(app, ["doctor", "--no-pull"])
    assert doctor.exit_code == 0, doctor.stderr
    table = _table(doctor.stdout)
    assert table[0].split() == ["CHECK", "STATUS", "DETAIL"]
    assert max(map(len, table)) <= READABLE_WIDTH
    assert f"  inotify watches: {fix}" in doctor.stdout.splitlines()


# --------------------------------------------------------------------------- literal text


def test_profile_problems_print_markup_emoji_and_controls_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "[red]mine:100:.yaml"
    path.write_text(yaml.safe_dump({"stack": "kamaji-hami", HOSTILE: 1}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "gpulab", "plan", "-p", str(path)],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "GPULAB_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr
    assert f"error: {path}: " in done.stderr  # the file's name, markup and all
    assert f"{SHOWN}: unknown field" in done.stderr
    assert "💯" not in done.stderr and not _raw_controls(done.stderr)
    assert "Traceback" not in done.stderr


def _kubeconfig(path: Path, context: str) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}]}))
    return path


@pytest.mark.parametrize("mode", [["--inspect"], []])
def test_cluster_names_print_as_they_are(tmp_path: Path, mode: list[str]) -> None:
    config = _kubeconfig(tmp_path / "k.yaml", HOSTILE)
    result = runner.invoke(app, ["verify", "--kubeconfig", str(config), "--context", HOSTILE,
                                 *mode])
    assert result.exit_code == 4, result.output
    # the error line of --inspect; or, for a run, the one line saying its API server did
    # not answer: both on stderr
    assert SHOWN in result.stderr
    assert "💯" not in result.output and not _raw_controls(result.output)
    assert "not-a-secret" not in result.output


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize("group", [[], ["profiles"]])
def test_help_summaries_are_whole_sentences(group: list[str]) -> None:
    result = runner.invoke(app, [*group, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:", 1)[1]
    summaries: list[str] = []
    for line in commands.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            summaries.append(line.split(None, 1)[1])
        elif line.strip() and summaries:
            summaries[-1] += " " + line.strip()
    assert len(summaries) >= 2
    for summary in summaries:
        assert summary.endswith(".") and not summary.endswith("..."), summary
        assert not summary.endswith(("e.g.", "i.e.")), summary


# --------------------------------------------------------------------------- plan


@pytest.mark.parametrize("profile", ["kamaji-hami", "vcluster-kai"])
def test_plan_yaml_and_json_hold_the_same_document(profile: str) -> None:
    as_yaml = runner.invoke(app, ["plan", "-p", profile, "-o", "yaml"])
    as_json = runner.invoke(app, ["plan", "-p", profile, "-o", "json"])
    assert as_yaml.exit_code == as_json.exit_code == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "clusters"), [
    ("kamaji-hami", ["management", "tenant-a", "tenant-b"]),
    ("vcluster-kai", ["management"]),
])
def test_plan_manifests_are_each_clusters_objects_for_kubectl(profile: str,
                                                             clusters: list[str]) -> None:
    steps = json.loads(runner.invoke(app, ["plan", "-p", profile, "-o", "json"]).stdout)
    for cluster in clusters:
        result = runner.invoke(app, ["plan", "-p", profile, "-o", "manifests", "--cluster",
                                     cluster])
        assert result.exit_code == 0, result.stderr
        docs = list(yaml.safe_load_all(result.stdout))
        assert docs and all(isinstance(d, dict) for d in docs), "no empty documents"
        for doc in docs:
            validate_object(doc)
        applied = [a["body"] for s in steps if not s["step"].endswith("/verify")
                   for a in s["artifacts"] if a["cluster"] == cluster
                   and isinstance(a["body"], dict) and "metadata" in a["body"]
                   and a["kind"] != "kind-cluster"]
        assert docs == applied, "every object up applies there, in up's order, and only those"
        releases = [a["name"] for s in steps for a in s["artifacts"]
                    if a["cluster"] == cluster and a["kind"] == "helm-release"]
        for release in releases:
            assert f"# helm release {release} (step " in result.stdout
        if KUBECTL.is_file():  # kubectl itself reads the stream (offline: label --local)
            read = subprocess.run([str(KUBECTL), "label", "--local", "-f", "-", "-o", "name",
                                   "gpulab.dev/plan=1"], input=result.stdout, text=True,
                                  capture_output=True, timeout=60, check=False,
                                  env={**os.environ, "KUBECONFIG": os.devnull})
            assert read.returncode == 0, read.stderr
            assert len(read.stdout.split()) == len(docs)


def test_plan_manifests_needs_a_cluster_when_there_are_several() -> None:
    result = runner.invoke(app, ["plan", "-o", "manifests"])
    assert result.exit_code == 2
    assert "-o manifests needs --cluster" in result.stderr
    assert "management, tenant-a, tenant-b" in result.stderr
    wrong = runner.invoke(app, ["plan", "-o", "manifests", "--cluster", "tenant-z"])
    assert wrong.exit_code == 2 and "--cluster tenant-z: not a cluster" in wrong.stderr
    alone = runner.invoke(app, ["plan", "--cluster", "tenant-a"])
    assert alone.exit_code == 2 and "--cluster goes with -o manifests" in alone.stderr


# --------------------------------------------------------------------------- up -o


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_up_ends_with_a_machine_readable_summary(monkeypatch, output: str) -> None:
    from gpulab.engine.runner import Outcome, RunResult, StepResult
    from gpulab.errors import StepError

    def fake_up(profile, name, reporter, **_kwargs):
        return RunResult(results=[
            StepResult("management/cluster", "Creating", Outcome.DONE, 20.0),
            StepResult("tenant-a/join", "Joining", Outcome.FAILED, 3.5,
                       error=StepError("tenant-a/join", "kubeadm join failed")),
            StepResult("tenant-a/gpus", "GPUs", Outcome.NOT_RUN)])

    monkeypatch.setattr(core, "up", fake_up)
    result = runner.invoke(app, ["up", "--name", "demo", "-o", output])
    assert result.exit_code == 1, result.stderr
    summary = yaml.safe_load(result.stdout)  # JSON is YAML too
    assert summary["lab"] == "demo" and summary["outcome"] == "failed"
    assert summary["exit_code"] == 1 and summary["seconds"] == 23.5
    assert [(s["step"], s["outcome"], s["seconds"]) for s in summary["steps"]] == [
        ("management/cluster", "done", 20.0), ("tenant-a/join", "failed", 3.5),
        ("tenant-a/gpus", "not-run", 0.0)]
    assert "kubeadm join failed" in summary["steps"][1]["error"]
    assert "kubeadm join failed" in result.stderr  # people still read stderr
    both = runner.invoke(app, ["up", "--json", "-o", "json"])
    assert both.exit_code == 2 and "choose one" in both.stderr


def test_up_summary_lists_the_kubeconfigs_of_a_built_lab(monkeypatch) -> None:
    from gpulab.engine.runner import Outcome, RunResult, StepResult

    def fake_up(profile, name, reporter, **_kwargs):
        folder = lab_dir("demo")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tenant-a.kubeconfig").write_text("{}")
        return RunResult(results=[StepResult("tenant-a/join", "Joining", Outcome.DONE, 1.0)])

    monkeypatch.setattr(core, "up", fake_up)
    result = runner.invoke(app, ["up", "--name", "demo", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "built"
    assert summary["kubeconfigs"] == {"tenant-a": str(lab_dir("demo") / "tenant-a.kubeconfig")}


# --------------------------------------------------------------------------- completion


def _lab(name: str, profile: str) -> None:
    folder = lab_dir(name)
    folder.mkdir(parents=True)
    (folder / "lab.json").write_text(json.dumps({"profile": profile, "stack": profile}))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_completion_prints_the_script(shell: str) -> None:
    result = runner.invoke(app, ["completion", shell])
    assert result.exit_code == 0, result.stderr
    assert "_GPULAB_COMPLETE" in result.stdout and "gpulab" in result.stdout
    wrong = runner.invoke(app, ["completion", "tcsh"])
    assert wrong.exit_code == 2 and "'tcsh' is not one of bash, zsh" in wrong.stderr


def test_tc_completes_the_labs_check_ids() -> None:
    _lab("beta", "vcluster-kai")
    done = runner.invoke(app, [], prog_name="gpulab",
                         env={"_GPULAB_COMPLETE": "complete_bash",
                              "COMP_WORDS": "gpulab verify --name beta --tc KAI-0",
                              "COMP_CWORD": "5"})
    assert done.stdout.split()[:3] == ["KAI-01", "KAI-02", "KAI-03"], done.stdout
    kamaji = runner.invoke(app, [], prog_name="gpulab",
                           env={"_GPULAB_COMPLETE": "complete_bash",
                                "COMP_WORDS": "gpulab verify --tc TC-0", "COMP_CWORD": "3"})
    assert kamaji.stdout.split()[0] == "TC-01", kamaji.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_completes_check_ids_in_bash(tmp_path: Path) -> None:
    _lab("beta", "vcluster-kai")
    bindir = Path(sys.executable).parent
    assert (bindir / "gpulab").exists(), "the console script is installed next to python"
    script = ('source <(gpulab completion bash); COMP_WORDS=(gpulab verify --name beta --tc '
              'KAI-0); COMP_CWORD=5; _gpulab_completion gpulab; echo "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ,
                                            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["KAI-01", "KAI-02"], done.stdout
