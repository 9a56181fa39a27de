"""gpulab's commands against the real Docker engine on a host that cannot run kind.

A fake `kind` that fails the way kind does without its node image stands in for kind; everything
else (Docker, labels, teardown) is real.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.naming import LABEL_LAB, LABEL_TENANT
from gpulab.profile.load import builtin_profiles
from tests.docker.conftest import unique
from tests.host import require_helm

runner = CliRunner()

FAKE_KIND = """#!/bin/sh
# Stands in for kind on a host that cannot pull kindest/node.
case "$1" in
  version) echo "kind v0.33.0 go1.24.0 linux/amd64" ;;
  get) echo "No kind clusters found." >&2 ;;
  create)
    echo "Creating cluster ..." >&2
    echo " ✗ Ensuring node image (kindest/node:v1.36.4) 🖼" >&2
    echo 'ERROR: failed to create cluster: failed to pull image "kindest/node:v1.36.4": command "docker pull kindest/node:v1.36.4" failed with error: exit status 1' >&2
    exit 1 ;;
  delete) exit 0 ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def fake_kind_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kind = bin_dir / "kind"
    kind.write_text(FAKE_KIND)
    kind.chmod(kind.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    return bin_dir


def _labelled(client, lab: str) -> list[str]:
    found = [c.name for c in client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"})]
    found += [n.name for n in client.networks.list(filters={"label": f"{LABEL_LAB}={lab}"})]
    found += [v.name for v in client.volumes.list(filters={"label": f"{LABEL_LAB}={lab}"})]
    return found


def test_down_on_nothing_says_so() -> None:
    lab = unique("none")
    result = runner.invoke(app, ["down", "--name", lab])
    assert result.exit_code == 0, result.stderr
    assert f"nothing to remove: no lab named '{lab}' on this host" in result.stderr


def test_status_on_nothing(client) -> None:
    lab = unique("none")
    result = runner.invoke(app, ["status", "--name", lab, "-o", "json"])
    assert result.exit_code == 6, result.stderr
    assert result.stdout == ""
    assert result.stderr == (f"error: no lab named '{lab}' on this host (gpulab labs lists the "
                             f"labs here; gpulab up --name {lab} builds it)\n")


def test_up_stops_at_the_first_step_needing_the_internet_and_leaves_nothing(
    fake_kind_path: Path, client, _isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helm_dir = str(Path(require_helm()).parent)  # after the fake kind: a real kind may be there
    monkeypatch.setenv("PATH", os.pathsep.join([str(fake_kind_path), helm_dir,
                                                os.environ.get("PATH", "")]))
    lab = unique("up")
    result = runner.invoke(app, ["up", "--name", lab, "--skip-preflight"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "step 'management/cluster' failed" in errors[0]
    assert 'failed to pull image "kindest/node:v1.36.4"' in errors[0]
    assert "Traceback" not in result.stderr
    assert f"`gpulab up --name {lab}` resumes from here" in result.stderr  # the flags used
    # gpulab's line once (not also in the progress lines), then kind's own output under it
    assert "✗ Creating management cluster (kind) [" in result.stderr
    assert "  | ERROR: failed to create cluster: failed to pull image" in result.stderr
    assert "management/cluster  failed" in result.stderr  # the step timings
    assert _labelled(client, lab) == []
    assert not (_isolated_home / "labs" / lab).exists()
    # and `down` afterwards has nothing to do
    down = runner.invoke(app, ["down", "--name", lab])
    assert down.exit_code == 0 and "nothing to remove" in down.stderr


def test_down_removes_a_half_built_lab_by_label(runtime, node_spec, client, lab: str,
                                                _isolated_home: Path) -> None:
    worker = node_spec(labels={LABEL_TENANT: "tenant-a"})
    runtime.run_node(worker)
    # a node container as kind labels it, left by a crashed `kind create`
    kind_node = node_spec(labels={"io.x-k8s.kind.cluster": f"gpulab-{lab}"},
                          name=f"gpulab-{lab}-control-plane")
    runtime.run_node(kind_node)
    anonymous = {m["Name"] for m in client.api.inspect_container(worker.name)["Mounts"]
                 if m["Type"] == "volume"}
    assert anonymous, "the worker should have its anonymous /var volume"
    (_isolated_home / "labs" / lab).mkdir(parents=True)
    (_isolated_home / "labs" / lab / "tenant-a.kubeconfig").write_text("x")

    result = runner.invoke(app, ["down", "--name", lab], env={"PATH": "/usr/bin:/bin"})
    assert result.exit_code == 0, result.stderr
    assert f"removed container {worker.name}" in result.stderr
    assert f"removed container gpulab-{lab}-control-plane" in result.stderr
    assert "nothing labelled for it is left" in result.stderr
    assert _labelled(client, lab) == []
    assert client.containers.list(all=True, filters={"label": f"io.x-k8s.kind.cluster=gpulab-{lab}"}) == []
    assert not anonymous & {v.name for v in client.volumes.list()}
    assert not (_isolated_home / "labs" / lab).exists()
    again = runner.invoke(app, ["down", "--name", lab])
    assert again.exit_code == 0 and "nothing to remove" in again.stderr


def test_status_lists_workers_from_labels(runtime, node_spec, lab: str) -> None:
    runtime.run_node(node_spec(labels={LABEL_TENANT: "tenant-a"},
                               name=f"gpulab-{lab}-tenant-a-worker"))
    result = runner.invoke(app, ["status", "--name", lab, "-o", "json"])
    assert result.exit_code == 4, result.stderr  # shown, but not up: no management cluster
    assert f"error: lab '{lab}' is not up: no management.kubeconfig" in result.stderr
    info = json.loads(result.stdout)
    assert info["exists"] is True
    assert info["tenants"]["tenant-a"]["workers"][0]["state"] == "running"
    assert info["tenants"]["tenant-b"]["workers"][0]["state"] == "missing"


def test_plan_reads_the_pool_from_a_real_dual_stack_network(
    dual_stack_network, tmp_path: Path
) -> None:
    text = builtin_profiles()["kamaji-hami"].read_text().replace(
        "  network: kind", f"  network: {dual_stack_network.name}")
    profile = tmp_path / "p.yaml"
    profile.write_text(text)
    result = runner.invoke(app, ["plan", "-p", str(profile), "-o", "manifests", "--cluster",
                                 "management"])
    assert result.exit_code == 0, result.stderr
    pool = next(d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "IPAddressPool")
    net = dual_stack_network.ipv4
    assert pool["spec"]["addresses"] == [f"{net[200]}-{net[250]}"]
    assert ":" not in pool["spec"]["addresses"][0]



def test_down_removes_the_contexts_merged_into_the_users_kubeconfig(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path) -> None:
    import json as _json

    import yaml as _yaml

    lab = unique("merged")
    folder = _isolated_home / "labs" / lab
    folder.mkdir(parents=True)
    (folder / "lab.json").write_text(_json.dumps({"profile": "kamaji-hami"}))
    (folder / "tenant-a.kubeconfig").write_text(_yaml.safe_dump({
        "clusters": [{"name": "t", "cluster": {"server": "https://t:6443"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "t", "user": "u"}}],
        "current-context": "c"}))
    target = tmp_path / "config"
    monkeypatch.setenv("KUBECONFIG", str(target))
    merged = runner.invoke(app, ["kubeconfig", "tenant-a", "--name", lab, "--merge"])
    assert merged.exit_code == 0, merged.stderr
    down = runner.invoke(app, ["down", "--name", lab])
    assert down.exit_code == 0, down.stderr
    assert f"removed context gpulab-{lab}-tenant-a from {target}" in down.stderr
    assert _yaml.safe_load(target.read_text())["contexts"] == []


def test_up_preflight_refuses_a_docker_that_cannot_run_privileged_nodes(
        fake_kind_path: Path, client, _isolated_home: Path) -> None:
    """On this CI host Docker refuses --privileged ("unable to apply caps"): `up` must say so
    before creating anything, with advice for this engine (a rootful Docker Engine on Linux:
    not "use rootful Docker"), instead of failing deep inside kind."""
    from tests.docker.conftest import privileged_run_allowed

    if privileged_run_allowed(client):
        pytest.skip("this Docker runs privileged containers: nothing to refuse")
    lab = unique("priv")
    result = runner.invoke(app, ["up", "--name", lab])
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert "error: preflight: " in result.stderr
    assert "\n  privileged: Docker refused a --privileged container" in result.stderr
    assert "which this rootful Docker refused" in result.stderr
    assert "use rootful Docker" not in result.stderr
    assert _labelled(client, lab) == []
    assert not (_isolated_home / "labs" / lab).exists()


def test_status_json_carries_the_step_timings_of_up(_isolated_home: Path) -> None:
    import json as _json

    lab = unique("timed")
    folder = _isolated_home / "labs" / lab
    folder.mkdir(parents=True)
    (folder / "lab.json").write_text(_json.dumps({"profile": "kamaji-hami"}))
    timings = [{"step": "management/cluster", "outcome": "done", "seconds": 21.5}]
    (folder / "timings.json").write_text(_json.dumps(timings))
    result = runner.invoke(app, ["status", "--name", lab, "-o", "json"])
    assert result.exit_code == 4, result.stderr  # its management cluster was never saved
    assert _json.loads(result.stdout)["timings"] == timings


def test_down_during_up_is_refused_by_the_lock(_isolated_home: Path) -> None:
    from tests.lock_holder import held_by_another_process

    lab = unique("locked")
    folder = _isolated_home / "labs" / lab
    folder.mkdir(parents=True)
    (folder / "management.kubeconfig").write_text("kept")
    with held_by_another_process(lab, folder, f"up --name {lab}") as pid:
        result = runner.invoke(app, ["down", "--name", lab])
    assert result.exit_code == 5, result.stderr
    assert f"lab '{lab}' is in use by `gpulab up --name {lab}` (pid {pid}" in result.stderr
    assert (folder / "management.kubeconfig").read_text() == "kept"  # never half-torn
