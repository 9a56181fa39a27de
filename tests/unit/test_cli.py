"""The command line as a user meets it: help, plan without Docker, one-line errors, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.profile.load import builtin_profiles

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan must work on a machine without Docker: make every connection attempt fail."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("up", "down", "status", "plan", "doctor", "kubeconfig", "profiles"):
        assert command in result.stdout


def test_python_dash_m_works() -> None:
    done = subprocess.run([sys.executable, "-m", "gpulab", "--version"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("gpulab ")


def test_profiles_list() -> None:
    result = runner.invoke(app, ["profiles", "list", "-o", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows if "error" not in r] == list(builtin_profiles())
    kamaji = next(r for r in rows if r["name"] == "kamaji-hami")
    assert kamaji["tenants"] == ["tenant-a", "tenant-b"]


def test_plan_manifests_without_docker_show_pending_pool() -> None:
    result = runner.invoke(app, ["plan", "-o", "manifests", "--cluster", "management"])
    assert result.exit_code == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    pool = next(d for d in docs if d["kind"] == "IPAddressPool")
    assert pool["spec"]["addresses"][0].startswith("<pending")
    assert sum(d["kind"] == "TenantControlPlane" for d in docs) == 2


def test_plan_text_and_json() -> None:
    text = runner.invoke(app, ["plan"])
    assert text.exit_code == 0
    assert "management/cluster" in text.stdout and "tenant-b/gpus" in text.stdout
    assert "Docker not reachable" in text.stderr
    data = json.loads(runner.invoke(app, ["plan", "-o", "json", "--name", "lab2"]).stdout)
    workers = [a for s in data for a in s["artifacts"] if a["kind"] == "container"]
    assert {w["name"] for w in workers} == {"gpulab-lab2-tenant-a-worker",
                                            "gpulab-lab2-tenant-b-worker"}


def test_broken_profile_is_one_line_per_problem_and_exit_2(tmp_path) -> None:
    text = builtin_profiles()["kamaji-hami"].read_text().replace("memory_mib: 24576",
                                                                  "memory_mib: 0")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["plan", "--profile", str(path)])
    assert result.exit_code == 2
    assert ("Traceback" not in result.stderr and result.exception is None) or isinstance(
        result.exception, SystemExit)
    assert "1 problem in profile, nothing was created" in result.stderr
    assert f"{path}:" in result.stderr and "tenants[1].gpus[0].memory_mib: must be > 0" in \
        result.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (["plan", "--profile", "nope"], "unknown profile 'nope'"),
    (["plan", "--name", "Bad_Name"], "--name: 'Bad_Name' is not a DNS-1123 label"),
    (["kubeconfig", "tenant-z"], "unknown tenant 'tenant-z'"),
])
def test_user_errors_are_one_line_exit_2(argv, message, _isolated_home) -> None:
    (_isolated_home / "labs" / "kamaji-hami").mkdir(parents=True)  # the lab exists
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_flag_is_a_usage_error() -> None:
    result = runner.invoke(app, ["plan", "--frobnicate"])
    assert result.exit_code == 2


def test_kubeconfig_prints_path_never_contents(_isolated_home) -> None:
    folder = _isolated_home / "labs" / "kamaji-hami"
    folder.mkdir(parents=True)
    (folder / "tenant-a.kubeconfig").write_text("client-key-data: SECRET\n")
    result = runner.invoke(app, ["kubeconfig", "tenant-a", "--export"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"export KUBECONFIG={folder / 'tenant-a.kubeconfig'}"
    assert "SECRET" not in result.stdout + result.stderr


def test_status_and_down_without_docker_are_host_errors() -> None:
    for argv in (["status"], ["down"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 4, (argv, result.stdout, result.stderr)
        assert result.stderr.startswith("error:")


def test_plan_lists_the_objects_verify_creates() -> None:
    steps = yaml.safe_load(runner.invoke(app, ["plan", "-o", "yaml"]).stdout)
    pods = [a["body"] for s in steps for a in s["artifacts"] if a["kind"] == "object"
            and a["body"]["kind"] == "Pod"]
    assert len(pods) == 10  # five per tenant
    assert {p["metadata"]["namespace"] for p in pods} == {"gpulab-verify"}


RECORDINGS = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "recordings"


def test_verify_replay_healthy_passes(tmp_path) -> None:
    junit = tmp_path / "v.xml"
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                 "--junit", str(junit)])
    assert result.exit_code == 0, result.stderr
    assert "16 pass (replayed against the recording's profile)" in result.stderr
    import xml.etree.ElementTree as ET

    root = ET.parse(junit).getroot()
    assert len(root.findall(".//testcase")) == 16
    assert not root.findall(".//failure")


def test_verify_replay_broken_fails_with_exit_3_and_json() -> None:
    result = runner.invoke(app, ["verify", "--replay",
                                 str(RECORDINGS / "writeup-webhook-bypassed"), "--json",
                                 "--tc", "TC-03"])
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    verdicts = {(r["id"], r["tenant"]): r["status"] for r in data["results"]}
    assert verdicts == {("TC-03", "tenant-a"): "pass", ("TC-03", "tenant-b"): "fail"}


def test_verify_usage_errors() -> None:
    both = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                               "--record", "x"])
    assert both.exit_code == 2 and "cannot be combined" in both.stderr
    bad_tc = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                 "--tc", "TC-99"])
    assert bad_tc.exit_code == 2
    missing = runner.invoke(app, ["verify", "--replay", "/nonexistent"])
    assert missing.exit_code == 2


def test_verify_kubeconfig_on_no_lab_and_on_a_lab_that_is_not_up(_isolated_home) -> None:
    for argv in (["verify", "--name", "ghost"], ["kubeconfig", "tenant-a", "--name", "ghost"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 6, (argv, result.stderr)
        assert result.stderr.strip() == ("error: no lab named 'ghost' on this host (gpulab labs "
                                         "lists the labs here; gpulab up --name ghost builds it)")
    folder = _isolated_home / "labs" / "ghost"
    folder.mkdir(parents=True)  # as a failed `up` leaves it: no kubeconfig saved yet
    (folder / "timings.json").write_text("[]")
    for argv, what in ((["verify", "--name", "ghost"], "no management.kubeconfig"),
                       (["kubeconfig", "tenant-a", "--name", "ghost"], "no kubeconfig saved")):
        result = runner.invoke(app, argv)
        assert result.exit_code == 4, (argv, result.stderr)
        assert "lab 'ghost' is not up" in result.stderr and what in result.stderr
        assert "gpulab up --name ghost" in result.stderr
        assert len([line for line in result.stderr.splitlines() if "error" in line]) == 1


def test_name_alone_finds_the_profile_a_lab_was_built_from(_isolated_home) -> None:
    from gpulab import core
    from gpulab.stacks import load_profile

    core.record_profile("teams", load_profile("vcluster-kai"))
    folder = _isolated_home / "labs" / "teams"
    (folder / "team-nlp.kubeconfig").write_text("x")
    result = runner.invoke(app, ["kubeconfig", "team-nlp", "--name", "teams"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(folder / "team-nlp.kubeconfig")
    # a --profile that is not the one the lab was built from is refused, in one line
    other = runner.invoke(app, ["kubeconfig", "team-nlp", "--name", "teams", "-p", "kamaji-hami"])
    assert other.exit_code == 2
    assert other.stderr.strip() == ("error: lab 'teams' was built from profile 'vcluster-kai', "
                                    "not 'kamaji-hami' (leave out -p: --name teams alone uses "
                                    "the profile the lab was built from)")
    same = runner.invoke(app, ["kubeconfig", "team-nlp", "--name", "teams", "-p", "vcluster-kai"])
    assert same.exit_code == 0, same.stderr


def test_plan_with_name_alone_plans_from_the_profile_the_lab_was_built_from(
        _isolated_home, tmp_path) -> None:
    """`plan --name LAB` shows what `up --name LAB` would do: the recorded profile (here a file
    with 2 teams, since moved away), not the default one; a -p that disagrees is refused as
    `up` refuses it."""
    import json

    import yaml

    from gpulab import core
    from gpulab.stacks import load_profile

    source = tmp_path / "two-teams.yaml"
    document = yaml.safe_load(load_profile("vcluster-kai").source.read_text())
    document["teams"] = document["teams"][:2]
    source.write_text(yaml.safe_dump(document))
    core.record_profile("teams", load_profile(str(source)))
    source.unlink()
    planned = runner.invoke(app, ["plan", "--name", "teams", "-o", "json"])
    assert planned.exit_code == 0, planned.stderr
    steps = {step["step"] for step in json.loads(planned.stdout)}
    kept = {t["name"] for t in document["teams"]}
    assert {f"{team}/vcluster" for team in kept} <= steps
    assert not [s for s in steps if s.startswith("team-recommender/")], sorted(steps)
    other = runner.invoke(app, ["plan", "--name", "teams", "-p", "kamaji-hami"])
    assert other.exit_code == 2
    assert "lab 'teams' was built from profile" in other.stderr


def test_verify_replay_of_a_hand_edited_recording_is_one_line(tmp_path) -> None:
    rec = tmp_path / "rec"
    shutil.copytree(RECORDINGS / "writeup-healthy", rec)
    state = next(rec.glob("state-*.json"))
    data = json.loads(state.read_text())
    data["state"]["nodes"] = 5
    state.write_text(json.dumps(data))
    result = runner.invoke(app, ["verify", "--replay", str(rec)])
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"{state} does not match the recording format" in result.stderr
    assert "re-record with gpulab verify --record" in result.stderr


def _profile_variant(tmp_path, edit) -> str:
    data = yaml.safe_load((builtin_profiles()["kamaji-hami"]).read_text())
    edit(data)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_verify_replay_judges_against_profile_when_given(tmp_path) -> None:
    healthy = str(RECORDINGS / "writeup-healthy")
    same = _profile_variant(tmp_path, lambda d: None)
    result = runner.invoke(app, ["verify", "--replay", healthy, "--profile", same])
    assert result.exit_code == 0, result.stderr
    assert f"(replayed against profile {same})" in result.stderr

    def bigger_card(data) -> None:
        data["tenants"][0]["gpus"][0]["memory_mib"] = 40960
    smaller = _profile_variant(tmp_path, bigger_card)
    failed = runner.invoke(app, ["verify", "--replay", healthy, "--profile", smaller,
                                 "-o", "json"])
    assert failed.exit_code == 3, failed.stderr
    doc = json.loads(failed.stdout)
    assert doc["judged_against"] == f"profile {smaller}"
    failing = {(r["id"], r["tenant"]) for r in doc["results"] if r["status"] != "pass"}
    assert failing and all(tenant == "tenant-a" for _, tenant in failing)


def test_verify_replay_against_a_profile_with_an_unrecorded_tenant_is_no_pass(tmp_path) -> None:
    def third_tenant(data) -> None:
        extra = dict(data["tenants"][1], name="tenant-c")
        data["tenants"].append(extra)
    three = _profile_variant(tmp_path, third_tenant)
    result = runner.invoke(app, ["verify", "--replay", str(RECORDINGS / "writeup-healthy"),
                                 "--profile", three, "-o", "json"])
    assert result.exit_code == 3, result.stderr
    doc = json.loads(result.stdout)
    for_c = [r for r in doc["results"] if r["tenant"] == "tenant-c"]
    assert len(for_c) == 8 and all(r["status"] == "error" for r in for_c)
    assert all("tenant tenant-c is not in this observation or recording" in r["reason"]
               for r in for_c)


def test_verify_replay_refuses_a_profile_of_another_stack_and_name() -> None:
    healthy = str(RECORDINGS / "writeup-healthy")
    other = runner.invoke(app, ["verify", "--replay", healthy, "--profile", "vcluster-kai"])
    assert other.exit_code == 2
    assert "is a kamaji-hami recording but profile" in other.stderr
    assert "leave out --profile" in other.stderr
    named = runner.invoke(app, ["verify", "--replay", healthy, "--name", "x"])
    assert named.exit_code == 2 and "--name and --replay cannot be combined" in named.stderr


@pytest.mark.parametrize("keep", [False, True])
def test_verify_interrupted_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                                     keep: bool, _isolated_home) -> None:
    from gpulab import core

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(core, "verify", interrupted)
    (_isolated_home / "labs" / "kamaji-hami").mkdir(parents=True)  # the lab exists
    result = runner.invoke(app, ["verify", *(["--keep"] if keep else [])])
    assert result.exit_code == 130
    assert "interrupted: verify of lab 'kamaji-hami' stopped before judging" in result.stderr
    expected = ("its pods were left (--keep)" if keep
                else "verify asked each tenant to delete its pods and namespace")
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
