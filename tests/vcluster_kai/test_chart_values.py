"""Every values key gpulab sets for KAI and fake-gpu-operator exists in the pinned chart's own
values.yaml (helm ignores unknown keys silently); the pattern of tests/contract/test_chart_values.
vCluster values are validated against the chart's JSON schema instead (tests/vcluster_kai/
test_render.py), which refuses unknown keys by itself."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
import yaml

from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests.contract.test_chart_values import unknown_keys
from tests.schemas import pinned_data

# chart (last path element of its oci:// name) → (pinned version, upstream values file)
UPSTREAM = {
    "kai-scheduler": ("v0.16.8", "kai_v0.16.8_chart_values.yaml"),
    "fake-gpu-operator": ("0.0.74", "fakegpu_v0.0.74_chart_values.yaml"),
}


@cache
def upstream(chart: str) -> dict[str, Any]:
    return yaml.safe_load((pinned_data() / UPSTREAM[chart][1]).read_text())  # type: ignore[no-any-return]


def _profile() -> VclusterKaiProfile:
    profile = load_profile("vcluster-kai").profile
    assert isinstance(profile, VclusterKaiProfile)
    return profile


RELEASES = [kr.kai_scheduler_release(_profile()), kr.fake_gpu_operator_release(_profile())]


@pytest.mark.parametrize("release", RELEASES, ids=[r.name for r in RELEASES])
def test_every_values_key_exists_upstream(release: Any) -> None:
    chart = release.chart.rsplit("/", 1)[-1]
    version, _ = UPSTREAM[chart]
    assert release.version == version, (
        f"gpulab pins {chart} {release.version} but tests/data/pinned has the values of {version}")
    assert unknown_keys(release.values, upstream(chart)) == []


def test_the_pool_name_is_a_key_of_nodepools() -> None:
    """`topology.nodePools.<pool>` is a map keyed by pool name: the built-in `default` exists
    upstream; another name is a new key, which the chart accepts (it ranges over the map)."""
    values = kr.fake_gpu_operator_release(_profile()).values
    assert list(values["topology"]["nodePools"]) == ["default"]
    assert set(values["topology"]["nodePools"]["default"]) == set(
        upstream("fake-gpu-operator")["topology"]["nodePools"]["default"])


def test_values_are_kais_ci_values() -> None:
    """KAI's hack/fake-gpu-operator-values.yaml with the profile's pool, and DRA off as KAI's
    setup script sets; KAI with global.gpuSharing=true (facts §1, §2)."""
    fgo = kr.fake_gpu_operator_release(_profile()).values
    hack = yaml.safe_load((pinned_data() / "kai_v0.16.8_hack_fake-gpu-operator-values.yaml")
                          .read_text())
    assert fgo["environment"] == hack["environment"]
    assert fgo["statusUpdater"] == hack["statusUpdater"]
    assert fgo["topology"]["nodePoolLabelKey"] == hack["topology"]["nodePoolLabelKey"]
    assert fgo["draPlugin"] == {"enabled": False}
    assert fgo["topology"]["nodePools"]["default"] == {
        "gpuProduct": "NVIDIA-L40S", "gpuCount": 1, "gpuMemory": 46068}
    kai = kr.kai_scheduler_release(_profile()).values
    assert kai == {"global": {"gpuSharing": True, "resourceReservation": {
        "namespace": "kai-resource-reservation"}}}
    assert upstream("kai-scheduler")["global"]["resourceReservation"]["namespace"] == (
        "kai-resource-reservation")


def test_the_check_catches_a_stale_kai_key() -> None:
    stale = {"global": {"gpuSharing": True, "gpu_sharing": True},
             "scheduler": {"placementStrategy": "binpack"}, "binder": {"cdi": True}}
    assert unknown_keys(stale, upstream("kai-scheduler")) == ["global.gpu_sharing", "binder.cdi"]
