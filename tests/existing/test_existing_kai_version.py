"""vcluster-kai on a cluster that already runs KAI Scheduler: reused only at the pinned release
line with GPU sharing, otherwise refused with why before anything is created (issue 23: "an
existing KAI Scheduler is reused when its version and gpuSharing fit, otherwise refused with
why - never upgraded or removed"; docs/own-cluster.md "Before anything is created").

The version is the tag of the `kai-operator` Deployment's `operator` image (KAI v0.16.8
deployments/kai-scheduler/templates/services/operator.yaml:7,22-24; the tag defaults to the
chart's appVersion, templates/_helpers.tpl:7-8): stacks.vcluster_kai.existing.read_installed reads it, and
stacks/vcluster_kai/steps.existing_problems takes the profile's pinned minor line (v0.16.x)
and refuses any other, older or newer, with the version found and the one pinned. kmock
plays the cluster (tests/existing/kmock_cluster.py, kai=True), the image set per test."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab import lab_record
from gpulab.cli import app
from gpulab.errors import HostError
from gpulab.stacks import load_profile
from tests.existing.kmock_cluster import ExistingCluster
from tests.existing.test_existing import TEAMS, _up

if TYPE_CHECKING:
    from pathlib import Path

REGISTRY = "registry/local/kai-scheduler/operator"  # the chart's values.yaml:5 + operator.yaml
DIGEST = "sha256:" + "3f" * 32
PINNED: Any = load_profile("vcluster-kai").profile.components.kai_scheduler.chart.version


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _kai_at(monkeypatch: pytest.MonkeyPatch, image: str) -> None:
    monkeypatch.setattr("tests.existing.kmock_cluster.KAI_IMAGE", image)


def _refusal(found: str) -> str:
    return (f"KAI Scheduler {found} is installed in kai-scheduler; this profile pins {PINNED} "
            f"(v0.16.x is reused; gpulab never upgrades or removes it)")


def test_the_pin_is_the_v0_16_line() -> None:
    assert PINNED == "v0.16.8"  # the cases below are written against this line


@pytest.mark.slow
@pytest.mark.parametrize(("image", "found"), [
    (f"{REGISTRY}:v0.15.3", "v0.15.3"),  # the minor line before
    (f"{REGISTRY}:v0.9.16", "v0.9.16"),  # an older minor that sorts after 16 as text
    (f"{REGISTRY}:v0.17.0", "v0.17.0"),  # the next minor
    (f"{REGISTRY}:v1.0.0", "v1.0.0"),  # a new major
    (f"{REGISTRY}:v1.16.8", "v1.16.8"),  # a new major, the same minor and patch numbers
    (f"{REGISTRY}@{DIGEST}", "(version unreadable)"),  # pinned by digest: no tag to read
    (REGISTRY, "(version unreadable)"),  # no tag at all
], ids=["older-minor", "old-minor-v0.9", "newer-minor", "new-major", "new-major-v1.16",
        "digest-only", "untagged"])
def test_kai_at_a_version_the_pins_do_not_take_is_refused_before_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, found: str) -> None:
    _kai_at(monkeypatch, image)
    with ExistingCluster(tmp_path, kai=True).running(TEAMS) as cluster:
        before = cluster.state()
        with pytest.raises(HostError) as refused:
            _up(cluster, tmp_path)
        assert refused.value.message == f"preflight: {_refusal(found)}"
        assert refused.value.exit_code == 4
        # the same through the CLI: one line, exit 4
        result = CliRunner().invoke(app, ["up", "-p", "vcluster-kai", "--kubeconfig",
                                          str(cluster.kubeconfig)])
        assert result.exit_code == 4, result.output
        assert f"error: preflight: {_refusal(found)}" in " ".join(result.stderr.split())
        # plan says why as well, and shows KAI as found (never as an install or an upgrade)
        plan = CliRunner().invoke(app, ["plan", "-p", "vcluster-kai", "--kubeconfig",
                                        str(cluster.kubeconfig), "-o", "json"])
        steps = {s["step"]: s for s in json.loads(plan.stdout)}
        assert [a["kind"] for a in steps["management/kai-scheduler"]["artifacts"]] == ["reused"]
        assert cluster.state() == before  # KAI as found, nothing created
        assert {m for m, p in cluster.writes()
                if not p.startswith("/apis/authorization.k8s.io/")} == set()
    assert lab_record.read("vcluster-kai") is None


@pytest.mark.slow
@pytest.mark.parametrize(("image", "found"), [
    (f"{REGISTRY}:v0.16.8", "v0.16.8"),  # the pin itself
    (f"{REGISTRY}:v0.16.2", "v0.16.2"),  # an earlier patch of the line
    (f"{REGISTRY}:0.16.9", "0.16.9"),  # a later patch, tagged without the v
    (f"{REGISTRY}:v0.16.8@{DIGEST}", "v0.16.8"),  # tag and digest: the tag says the version
], ids=["pinned", "earlier-patch", "later-patch-no-v", "tag-and-digest"])
def test_kai_on_the_pinned_line_with_gpu_sharing_is_reused_and_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, found: str) -> None:
    _kai_at(monkeypatch, image)
    with ExistingCluster(tmp_path, kai=True).running(TEAMS) as cluster:
        plan = CliRunner().invoke(app, ["plan", "-p", "vcluster-kai", "--kubeconfig",
                                        str(cluster.kubeconfig), "-o", "json"])
        assert plan.exit_code == 0, plan.output
        steps = {s["step"]: s for s in json.loads(plan.stdout)}
        (kai,) = steps["management/kai-scheduler"]["artifacts"]
        assert kai["kind"] == "reused"
        assert kai["body"] == {"namespace": "kai-scheduler", "version": found,
                               "gpuSharing": True}
        before = cluster.state()
        result = _up(cluster, tmp_path)
        assert result.ok, [str(f.error) for f in result.failures]
        assert ("kai-scheduler", "kai-scheduler") not in cluster.releases  # not installed
        record = lab_record.read("vcluster-kai")
        assert record is not None
        assert not [o for o in record.owned if o.get("name") == "kai-scheduler"
                    or o.get("namespace") == "kai-scheduler"]
        from tests.existing.test_existing import _down

        assert _down(cluster).leftovers == []
        assert cluster.state() == before  # KAI untouched: never upgraded or removed
