"""The seam, proven by a provider gpulab/ does not know (#34 item 3): tests/providers/fake.py,
registered from here only, runs both stacks' whole life on the kmock clusters the other tests
serve. Nothing in gpulab/ names it: the profile chooses it (`cluster.provider: fake`), the
registry finds its package, lab.json restores it for status, verify and down, and each stack
plans from the facts it answers (ClusterFacts), never from its name.

vcluster-kai: plan, up, status, verify (against the in-memory copy of the host that
tests/existing/test_existing_end_to_end.py's verify uses: FakeKai plays KAI), down, and the
cluster as it was. kamaji-hami: plan, up, status, a machine joining each tenant and verify on
them (tests/existing/test_kamaji_verify.py's harness: HAMi's real plugin's registration on the
joined nodes), down, and the cluster as it was.
"""

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
from gpulab.providers import registry
from gpulab.stacks import load_profile
from tests.existing.kamaji_machines import A100, a100, hami_on, join_machine
from tests.existing.kmock_cluster import ExistingCluster, FakeHelm
from tests.existing.kmock_kamaji import KamajiCluster, KamajiHelm
from tests.existing.test_existing_end_to_end import _verify
from tests.existing.test_kamaji_verify import _through
from tests.existing.test_kamaji_verify import _verify as _verify_tenants
from tests.providers import fake

TEAMS = ["team-nlp", "team-vision", "team-recommender"]
TENANTS = ["tenant-a", "tenant-b"]


@pytest.fixture(autouse=True)
def _fake_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))
    fake.register()
    yield
    fake.unregister()
    assert fake.NAME not in registry.names()


def _profile_file(stack: str, kubeconfig: Path, folder: Path) -> Path:
    """The built-in profile of `stack`, its cluster the fake provider's."""
    document = yaml.safe_load(builtin_profiles()[stack].read_text(encoding="utf-8"))
    document["cluster"] = {"provider": fake.NAME, "kubeconfig": str(kubeconfig)}
    path = folder / f"{stack}-on-fake.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _plan(path: Path) -> list[str]:
    plan = CliRunner().invoke(app, ["plan", "-p", str(path), "-o", "json"])
    assert plan.exit_code == 0, plan.output
    return [step["step"] for step in json.loads(plan.stdout)]


def _up(path: Path, lab: str, adapters: Any) -> None:
    loaded = load_profile(str(path))
    result = core.up(loaded.profile, lab, lambda _e: None, adapters=adapters,
                     sleep=lambda _s: None)
    assert result.ok, [str(f.error) for f in result.failures]
    core.record_profile(lab, loaded)  # as `gpulab up` does


def test_an_unregistered_provider_is_refused_in_one_line(tmp_path: Path) -> None:
    fake.unregister()
    try:
        path = _profile_file("vcluster-kai", tmp_path / "k", tmp_path)
        plan = CliRunner().invoke(app, ["plan", "-p", str(path)])
        assert plan.exit_code == 2
        assert "'fake' is not a provider gpulab knows: existing, kind" in plan.stderr
    finally:
        fake.register()


@pytest.mark.slow
def test_vcluster_kai_lives_its_whole_life_on_the_fake_provider(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = "vcluster-kai"
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        before = cluster.state()
        path = _profile_file(lab, cluster.kubeconfig, tmp_path)
        steps = _plan(path)
        assert steps[:2] == ["management/cluster", "management/namespaces"]
        assert "management/gpu-nodes" in steps and "management/fake-gpus" not in steps

        _up(path, lab, cluster.adapters(lab_dir(lab)))
        record = lab_record.read(lab)
        assert record is not None and record.provider == fake.NAME
        assert ("helm-release", "kai-scheduler") in {(o["type"], o.get("name"))
                                                      for o in record.owned}

        monkeypatch.setattr(core, "_status_client", cluster.client)  # each vCluster: kmock's
        status = CliRunner().invoke(app, ["status", "--name", lab, "-o", "json"])
        assert status.exit_code == 0, status.output
        info = json.loads(status.stdout)
        assert info["management"]["cluster"] == f"fake {cluster.kubeconfig}"
        assert [n["name"] for n in info["gpu_nodes"]] == ["gpu-node-1"]
        listed = CliRunner().invoke(app, ["labs"], env={"COLUMNS": "300"})
        assert f"fake {cluster.kubeconfig}" in listed.stdout

        results, _teams = _verify(cluster, monkeypatch)
        failed = {k: r["reason"] for k, r in results.items() if r["status"] != "pass"}
        assert not failed, failed
        assert "Queue team-nlp allocated nvidia.com/gpu 330m" in \
            results[("KAI-05", "team-nlp")]["evidence"]

        teardown = core.remove_lab(lab, core.lab_provider(lab, helm=lambda _p: FakeHelm(cluster)))
        assert not teardown.leftovers, teardown.leftovers
        assert cluster.state() == before
    assert lab_record.read(lab) is None


@pytest.mark.slow
def test_kamaji_hami_lives_its_life_on_the_fake_provider(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = "kamaji-hami"
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        before = cluster.state()
        path = _profile_file(lab, cluster.kubeconfig, tmp_path)
        steps = _plan(path)
        # workers that join: a control plane and Calico per tenant, no containers
        assert [s for s in steps if s.startswith("tenant-a/")] == [
            "tenant-a/control-plane", "tenant-a/calico", "tenant-a/verify"]

        _up(path, lab, cluster.adapters(lab_dir(lab)))
        _through(monkeypatch, cluster)  # verify's clients: each tenant's kmock server
        monkeypatch.setattr(core, "_status_client", cluster.client)
        status = CliRunner().invoke(app, ["status", "--name", lab, "-o", "json"])
        assert status.exit_code == 0, status.output
        assert json.loads(status.stdout)["management"]["cluster"] == f"fake {cluster.kubeconfig}"

        tenants = load_profile(str(path)).profile.tenants
        for tenant, node in zip(tenants, ("gpu-7", "gpu-8"), strict=True):
            join_machine(cluster, tenant, lab, node=node, cards=[a100()])
        with hami_on(cluster, list(tenants)):
            code, results = _verify_tenants()
        failed = {k: r["reason"] for k, r in results.items() if r["status"] != "pass"}
        assert not failed and code == 0, failed
        # the fake says its workers join: judged on the card the machine registers
        assert f"Running together on gpu-7, card {A100}" in results[("TC-05", "tenant-a")][
            "evidence"]

        teardown = core.remove_lab(lab, core.lab_provider(lab, helm=lambda _p: KamajiHelm(cluster)))
        assert not teardown.leftovers, teardown.leftovers
        assert cluster.state() == before
    assert lab_record.read(lab) is None
