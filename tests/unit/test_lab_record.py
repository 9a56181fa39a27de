"""A lab's name alone is enough (issue #21 item 1): `up -p FILE` records the whole profile, the
contexts `kubeconfig --merge` adds and what it created, so once FILE is gone `down`, `status`,
`verify`, `kubeconfig` and `logs` work from `--name` and `down` removes exactly the recorded
contexts. Everything runs through the CLI with the fakes of tests/fakes.py for Docker, kind,
helm and the Kubernetes APIs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.paths import lab_dir
from gpulab.profile.load import builtin_profiles
from gpulab.stacks import load_profile
from tests.fakes import FakeKind, FakeRuntime, FakeWorld, _cluster_of, fake_adapters

runner = CliRunner()


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> FakeWorld:
    """Docker, kind and every Kubernetes API are the fakes; no helm binary."""
    import gpulab.adapters.kube
    import gpulab.tools

    fake = FakeWorld()
    real_up = core.up

    def up(profile: Any, name: str | None, report: Any, **_kwargs: Any) -> Any:
        adapters = fake_adapters(fake, lab_dir(core.lab_name(profile, name)))
        return real_up(profile, name, report, adapters=adapters, sleep=lambda _s: None)

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setattr(core, "up", up)
    monkeypatch.setattr(core, "connect_runtime", lambda *_a, **_k: FakeRuntime(fake))
    monkeypatch.setattr(core, "docker_endpoint", lambda: None, raising=False)
    monkeypatch.setattr("gpulab.providers.kind.kind_cli", lambda *_a, **_k: FakeKind(fake))
    monkeypatch.setattr(gpulab.adapters.kube, "KubeClient",
                        lambda path=None, **_k: fake.kube(_cluster_of(Path(path))))
    monkeypatch.setattr(gpulab.tools, "find_tool", lambda _name: None)
    return fake


def _user_kubeconfig(path: Path) -> Path:
    """A kubeconfig of the user's own, with a context gpulab must never touch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "mine",
        "clusters": [{"name": "mine", "cluster": {"server": "https://mine:6443"}}],
        "users": [{"name": "mine", "user": {}}],
        "contexts": [{"name": "mine", "context": {"cluster": "mine", "user": "mine"}}]}))
    return path


def _contexts(path: Path) -> list[str]:
    return [c["name"] for c in yaml.safe_load(path.read_text()).get("contexts") or []]


def _custom_profile(path: Path) -> Path:
    """kamaji-hami as a user's copy: lab `mylab`, tenants `red` and `blue` (names the built-in
    profile does not have, so `-p kamaji-hami` could not name their contexts)."""
    data = yaml.safe_load(builtin_profiles()["kamaji-hami"].read_text())
    data["name"] = "mylab"
    data["tenants"][0]["name"], data["tenants"][1]["name"] = "red", "blue"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _verified_members(monkeypatch: pytest.MonkeyPatch, lab: str) -> list[str]:
    """`verify --name LAB` through the CLI, its checks stubbed: the members of the profile it
    judged the lab against."""
    from gpulab.stacks.kamaji_hami import run
    from gpulab.verify.report import VerifyReport

    judged: list[list[str]] = []

    def run_checks(profile: Any, lab: str, _folder: Path, **_kwargs: Any) -> VerifyReport:
        judged.append(profile.member_names())
        return VerifyReport(lab=lab, results=(), state=None)  # type: ignore[arg-type]

    monkeypatch.setattr(run, "run_checks", run_checks)
    verify = runner.invoke(app, ["verify", "--name", lab])
    assert verify.exit_code == 0, verify.stderr
    return judged[0]


def test_a_lab_built_from_a_file_is_used_and_removed_by_its_name_alone(
        world: FakeWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _custom_profile(tmp_path / "profiles" / "mine.yaml")
    kube = _user_kubeconfig(tmp_path / "kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(kube))

    up = runner.invoke(app, ["up", "-p", str(mine)])
    assert up.exit_code == 0, up.stderr
    record = json.loads((lab_dir("mylab") / "lab.json").read_text())
    assert record["profile"] == str(mine.resolve())
    assert record["document"] == lab_record.document(load_profile(str(mine)).profile)
    assert record["created"]["kind_clusters"] == ["gpulab-mylab"]
    assert {"gpulab-mylab-control-plane", "gpulab-mylab-red-worker",
            "gpulab-mylab-blue-worker"} <= set(record["created"]["containers"])
    for tenant in ("red", "blue"):
        merged = runner.invoke(app, ["kubeconfig", tenant, "--name", "mylab", "--merge"])
        assert merged.exit_code == 0, merged.stderr
    assert lab_record.read("mylab").contexts == (  # type: ignore[union-attr]
        lab_record.MergedContext("gpulab-mylab-red", kube),
        lab_record.MergedContext("gpulab-mylab-blue", kube))
    assert _contexts(kube) == ["mine", "gpulab-mylab-red", "gpulab-mylab-blue"]

    mine.unlink()
    mine.parent.rmdir()

    status = runner.invoke(app, ["status", "--name", "mylab", "-o", "json"])
    assert status.exit_code == 0, status.stderr
    info = json.loads(status.stdout)
    assert set(info["tenants"]) == {"red", "blue"} and info["management"]["api_error"] == ""
    path = runner.invoke(app, ["kubeconfig", "blue", "--name", "mylab"])
    assert path.exit_code == 0 and path.stdout.strip() == str(lab_dir("mylab") / "blue.kubeconfig")
    bundle = tmp_path / "bundle"
    logs = runner.invoke(app, ["logs", str(bundle), "--name", "mylab"])
    assert logs.exit_code == 0, logs.stderr
    assert (bundle / "docker" / "containers.json").is_file()
    assert (bundle / "clusters" / "red" / "pods.json").is_file()

    assert _verified_members(monkeypatch, "mylab") == ["red", "blue"]  # not the default's

    # the old workaround names another profile: refused, and nothing is touched
    other = runner.invoke(app, ["down", "--name", "mylab", "-p", "kamaji-hami"])
    assert other.exit_code == 2
    assert other.stderr == (f"error: lab 'mylab' was built from profile '{mine.resolve()}', not "
                            "'kamaji-hami' (leave out -p: --name mylab alone uses the profile "
                            "the lab was built from)\n")
    assert "gpulab-mylab-red-worker" in world.containers and lab_dir("mylab").is_dir()

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "elsewhere"))  # the recorded file counts
    down = runner.invoke(app, ["down", "--name", "mylab"])
    assert down.exit_code == 0, down.stderr
    for tenant in ("red", "blue"):
        assert f"removed context gpulab-mylab-{tenant} from {kube}" in down.stderr
    assert "lab 'mylab' removed; nothing labelled for it is left" in down.stderr
    assert _contexts(kube) == ["mine"]
    assert yaml.safe_load(kube.read_text())["current-context"] == "mine"
    assert not [c for c in world.containers if "mylab" in c] and not world.clusters
    assert not lab_dir("mylab").exists()
    again = runner.invoke(app, ["down", "--name", "mylab"])
    assert again.exit_code == 0 and "nothing to remove" in again.stderr


def test_a_moved_copy_of_the_profile_is_the_same_profile(world: FakeWorld, tmp_path: Path
                                                         ) -> None:
    mine = _custom_profile(tmp_path / "a" / "mine.yaml")
    assert runner.invoke(app, ["up", "-p", str(mine)]).exit_code == 0
    moved = tmp_path / "b" / "renamed.yaml"
    moved.parent.mkdir()
    mine.rename(moved)
    same = runner.invoke(app, ["status", "--name", "mylab", "-p", str(moved), "-o", "json"])
    assert same.exit_code == 0, same.stderr  # another path, the same document
    again = runner.invoke(app, ["up", "--name", "mylab"])  # continues from the record
    assert again.exit_code == 0, again.stderr
    assert f"from {mine.resolve()} (the profile recorded in the lab folder; that file is gone)" \
        in again.stderr and "is already up; nothing to do" in again.stderr
    edited = yaml.safe_load(moved.read_text())
    edited["tenants"][1]["name"] = "green"
    moved.write_text(yaml.safe_dump(edited))
    refused = runner.invoke(app, ["kubeconfig", "red", "--name", "mylab", "-p", str(moved)])
    assert refused.exit_code == 2 and "was built from profile" in refused.stderr


def test_down_removes_exactly_the_recorded_contexts(world: FakeWorld, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    kube = _user_kubeconfig(tmp_path / "kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(kube))
    r = runner.invoke(app, ["up", "--name", "lab1"])
    assert r.exit_code == 0, r.stderr
    assert runner.invoke(app, ["kubeconfig", "tenant-a", "--name", "lab1", "--merge"]
                         ).exit_code == 0
    # a context of the same shape that gpulab did not merge (the user made it by hand)
    from gpulab import kubeconfigs

    kubeconfigs.merge_file(lab_dir("lab1") / "tenant-b.kubeconfig", kube, "gpulab-lab1-tenant-b")
    down = runner.invoke(app, ["down", "--name", "lab1"])
    assert down.exit_code == 0, down.stderr
    assert _contexts(kube) == ["mine", "gpulab-lab1-tenant-b"]


def test_an_older_record_still_works_and_up_takes_it_over(world: FakeWorld, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of an older gpulab: `lab.json` names the profile only. `down` removes the
    contexts named after its tenants, as it did; the next `up` records the document and adopts
    the contexts already merged."""
    kube = _user_kubeconfig(tmp_path / "kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(kube))
    assert runner.invoke(app, ["up", "--name", "old"]).exit_code == 0
    from gpulab import kubeconfigs

    for tenant in ("tenant-a", "tenant-b"):  # merged by the older gpulab: not recorded
        kubeconfigs.merge_file(lab_dir("old") / f"{tenant}.kubeconfig", kube,
                               kubeconfigs.context_name("old", tenant))
    (lab_dir("old") / "lab.json").write_text(json.dumps({"profile": "kamaji-hami",
                                                         "stack": "kamaji-hami"}))
    status = runner.invoke(app, ["status", "--name", "old", "-o", "json"])
    assert status.exit_code == 0, status.stderr
    assert runner.invoke(app, ["up", "--name", "old"]).exit_code == 0
    record = lab_record.read("old")
    assert record is not None and record.complete
    assert {c.context for c in record.contexts} == {"gpulab-old-tenant-a", "gpulab-old-tenant-b"}

    (lab_dir("old") / "lab.json").write_text(json.dumps({"profile": "kamaji-hami"}))  # older
    down = runner.invoke(app, ["down", "--name", "old"])
    assert down.exit_code == 0, down.stderr
    assert _contexts(kube) == ["mine"]


def test_a_recorded_profile_this_gpulab_refuses_still_lets_down_remove_the_lab(
        world: FakeWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A later gpulab may not take a document an earlier one recorded: the commands that need
    the profile say so (exit 2); `down` needs none of it and removes the lab by its record."""
    kube = _user_kubeconfig(tmp_path / "kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(kube))
    assert runner.invoke(app, ["up", "--name", "lab2"]).exit_code == 0
    assert runner.invoke(app, ["kubeconfig", "tenant-b", "--name", "lab2", "--merge"]
                         ).exit_code == 0
    path = lab_dir("lab2") / "lab.json"
    record = json.loads(path.read_text())
    record["document"]["retired_field"] = True
    path.write_text(json.dumps(record))
    status = runner.invoke(app, ["status", "--name", "lab2"])
    assert status.exit_code == 2 and "retired_field: unknown field" in status.stderr
    down = runner.invoke(app, ["down", "--name", "lab2"])
    assert down.exit_code == 0, down.stderr
    assert f"note: the profile recorded in {path} is not valid for this gpulab" in down.stderr
    assert f"removed context gpulab-lab2-tenant-b from {kube}" in down.stderr
    assert _contexts(kube) == ["mine"] and not lab_dir("lab2").exists()


def test_down_without_kind_removes_the_nodes_by_label_and_says_so(
        world: FakeWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """`down` of a kind lab reaches Docker and kind through the lab's provider: with kind gone
    from the host, the cluster's node containers are removed by kind's label, and the note says
    how; with kind there, kind deletes the cluster and no note is printed."""
    assert runner.invoke(app, ["up", "--name", "nokind"]).exit_code == 0
    assert "gpulab-nokind-control-plane" in world.containers
    monkeypatch.setattr("gpulab.providers.kind.kind_cli", lambda *_a, **_k: None)
    down = runner.invoke(app, ["down", "--name", "nokind"])
    assert down.exit_code == 0, down.stderr
    assert " - removed container gpulab-nokind-control-plane" in down.stderr
    assert "note: kind not found; removed the cluster's containers by label" in down.stderr
    assert "gpulab-nokind-control-plane" not in world.containers

    monkeypatch.setattr("gpulab.providers.kind.kind_cli", lambda *_a, **_k: FakeKind(world))
    assert runner.invoke(app, ["up", "--name", "withkind"]).exit_code == 0
    down = runner.invoke(app, ["down", "--name", "withkind"])
    assert down.exit_code == 0, down.stderr
    assert " - removed kind cluster gpulab-withkind" in down.stderr
    assert "note:" not in down.stderr
