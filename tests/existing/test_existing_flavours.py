"""Clusters as they come (#32): each shape of tests/existing/flavours.py, served by kmock, is
planned right or refused in one line naming the fact and the fix, before anything is created;
`plan`, `up` and `doctor` say the same (one preflight: ExistingProvider.ground).

On main before this change every shape below but k3s, mig-single and one-not-ready was taken
wrongly (planned where it must be refused, refused where it must be planned, or planned without
the RuntimeClass or tolerations it needs)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.errors import HostError
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile
from tests.existing.flavours import SHAPES, Shape
from tests.existing.kmock_cluster import ExistingCluster

if TYPE_CHECKING:
    from pathlib import Path

TEAMS = ["team-nlp"]
LAB = "vcluster-kai"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))
    helm = tmp_path / "bin" / "helm"
    helm.parent.mkdir()
    helm.write_text("#!/bin/sh\necho 'v3.19.2'\n")
    helm.chmod(0o755)
    monkeypatch.setenv("GPULAB_HELM", str(helm))


def _plan(cluster: ExistingCluster) -> tuple[dict[str, Any], str]:
    """(steps by name, the stderr note) of `gpulab plan --kubeconfig ... -o json`."""
    result = runner.invoke(app, ["plan", "-p", LAB, "--kubeconfig", str(cluster.kubeconfig),
                                 "-o", "json"])
    assert result.exit_code == 0, result.output
    return {s["step"]: s for s in json.loads(result.stdout)}, result.stderr


def _doctor_fails(cluster: ExistingCluster) -> list[str]:
    result = runner.invoke(app, ["doctor", "-p", LAB, "--kubeconfig", str(cluster.kubeconfig),
                                 "-o", "json"])
    assert result.exit_code in (0, 4), result.output
    return [f["detail"] for f in json.loads(result.stdout) if f["status"] == "fail"]


def _up_refusal(cluster: ExistingCluster, tmp_path: Path) -> str | None:
    """up's one-line refusal, None when its preflight let it through: `up` opens the
    provider's session (core.up: provider.open, which refuses), here without running its steps
    (only the preflight is tested)."""
    from gpulab.paths import lab_dir
    from gpulab.providers import for_choice
    from gpulab.stacks import for_profile

    profile = load_profile(LAB).profile
    provider = for_choice(ClusterChoice("existing", kubeconfig=cluster.kubeconfig),
                          core._host())
    try:
        session = provider.open(profile, LAB, for_profile(profile), lambda _e: None,
                                adapters=cluster.adapters(lab_dir(LAB)))
    except HostError as err:
        return err.message
    session.close()
    return None


def _values(steps: dict[str, Any], step: str) -> dict[str, Any]:
    artifact = next(a for a in steps[step]["artifacts"] if a["kind"] == "helm-release")
    return artifact["body"]["values"]  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_plan_up_and_doctor_agree(shape: Shape, tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, **shape.cluster_kwargs()).running(TEAMS) as cluster:
        before = cluster.state()
        _steps, note = _plan(cluster)
        refused = _up_refusal(cluster, tmp_path)
        fails = _doctor_fails(cluster)
        assert cluster.state() == before  # nothing created by any of the three
    if shape.refused is None:
        assert "up would refuse" not in note, note
        assert refused is None, refused
        assert fails == [], fails
        return
    assert note.startswith(f"note: up would refuse: {shape.refused}"), note
    assert refused is not None and refused.startswith(f"preflight: {shape.refused}"), refused
    assert any(f.startswith(shape.refused) for f in fails), fails
    line = refused.removeprefix("preflight: ").split(" (see docs", 1)[0]
    assert ": " in line and "\n" not in line  # the fact, then what to do


REFUSED = [s for s in SHAPES.values() if s.refused is not None]


@pytest.mark.parametrize("shape", REFUSED, ids=[s.name for s in REFUSED])
def test_each_refusal_is_one_line_naming_the_fact_and_the_fix(shape: Shape, tmp_path: Path
                                                              ) -> None:
    with ExistingCluster(tmp_path, **shape.cluster_kwargs()).running(TEAMS) as cluster:
        before = cluster.state()
        refused = _up_refusal(cluster, tmp_path)
        assert cluster.state() == before
    assert refused is not None and refused.startswith(f"preflight: {shape.refused}"), refused
    line = refused.removeprefix("preflight: ")
    assert "\n" not in line and ": " in line  # the fact, then what to do
    assert "absent" not in line and " none" not in line


def _shape_plan(name: str, tmp_path: Path) -> dict[str, Any]:
    with ExistingCluster(tmp_path, **SHAPES[name].cluster_kwargs()).running(TEAMS) as cluster:
        steps, note = _plan(cluster)
    assert "up would refuse" not in note, note
    return steps


def test_no_runtime_class_installs_kai_without_one(tmp_path: Path) -> None:
    steps = _shape_plan("device-plugin-no-runtime-class", tmp_path)
    kai = _values(steps, "management/kai-scheduler")
    assert kai["admission"] == {"gpuFractionRuntimeClassName": ""}
    assert "no RuntimeClass with handler nvidia" in steps["management/kai-scheduler"]["title"]


def test_a_runtime_class_of_another_name_is_the_one_kai_sets(tmp_path: Path) -> None:
    kai = _values(_shape_plan("runtime-class-other-name", tmp_path), "management/kai-scheduler")
    assert kai["admission"] == {"gpuFractionRuntimeClassName": "nvidia-cr"}


@pytest.mark.parametrize("name", ["k3s", "mig-single", "one-not-ready"])
def test_runtime_class_nvidia_keeps_the_charts_value(name: str, tmp_path: Path) -> None:
    kai = _values(_shape_plan(name, tmp_path), "management/kai-scheduler")
    assert "admission" not in kai  # the chart's own gpuFractionRuntimeClassName: nvidia


def test_the_beta_default_class_is_the_default(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, **SHAPES["beta-default-class"].cluster_kwargs()
                         ).running(TEAMS) as cluster:
        result = runner.invoke(app, ["doctor", "-p", LAB, "--kubeconfig",
                                     str(cluster.kubeconfig), "-o", "json"])
    storage = [(f["status"], f["detail"]) for f in json.loads(result.stdout)
               if f["check"] == "storage class"]
    assert storage == [("ok", "default StorageClass local-path")]


def test_gpu_taints_are_enforced_on_every_synced_pod(tmp_path: Path) -> None:
    values = _values(_shape_plan("gpu-taint", tmp_path), "team-nlp/vcluster")
    assert values["sync"]["toHost"] == {"pods": {
        "enforceTolerations": ["nvidia.com/gpu=present:NoSchedule"]}}
    assert values["sync"]["fromHost"]["nodes"] == {"enabled": True, "selector": {"all": True}}


def test_untainted_gpu_nodes_enforce_no_toleration(tmp_path: Path) -> None:
    values = _values(_shape_plan("k3s", tmp_path), "team-nlp/vcluster")
    assert "toHost" not in values["sync"]


def test_no_gpu_names_the_flag(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, **SHAPES["no-gpu"].cluster_kwargs()).running(TEAMS) \
            as cluster:
        refused = _up_refusal(cluster, tmp_path)
    assert refused is not None and "--fake-gpu-node NODE" in refused


def test_each_refused_gpu_node_is_named_with_why(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, **SHAPES["all-cordoned"].cluster_kwargs()).running(TEAMS) \
            as cluster:
        refused = _up_refusal(cluster, tmp_path)
    assert refused is not None
    assert "(gpu-1, gpu-2, gpu-3: node is unschedulable)" in refused
    assert "kubectl uncordon NODE" in refused
