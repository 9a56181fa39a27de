"""Every values key gpulab sets must exist in the pinned chart's own values.yaml.

Helm accepts unknown keys silently, and the HAMi docs still show keys older charts used
(e.g. `scheduler.kubeScheduler.imageTag`), so a misspelt or stale key would install fine and do
nothing. Upstream values files: tests/data/pinned (see SOURCES.md there for the pinned commits).
A key whose upstream value is null or an empty map counts as existing: the chart reads whatever
is put there (e.g. HAMi's `devicePlugin.extraEnvs: {}`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from gpulab.adapters import base
from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami import render
from tests.schemas import pinned_data

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

# chart name → upstream values file (and the Chart.yaml that says which version it is)
UPSTREAM = {
    "hami": ("hami_chart_values.yaml", "hami_chart_Chart.yaml"),
    "kamaji": ("kamaji_chart_values.yaml", "kamaji_chart_Chart.yaml"),
}


@cache
def upstream(chart: str) -> tuple[dict[str, Any], str]:
    values_file, chart_file = UPSTREAM[chart]
    values = yaml.safe_load((pinned_data() / values_file).read_text())
    version = yaml.safe_load((pinned_data() / chart_file).read_text())["version"]
    return values, str(version)


def unknown_keys(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Dotted key paths set in `ours` that `theirs` (a chart's values.yaml) does not have."""
    if not isinstance(ours, dict):
        return []
    if theirs is None or theirs == {}:
        return []  # free-form in the chart: anything below is accepted
    if not isinstance(theirs, dict):
        return [f"{path} (the chart has a {type(theirs).__name__} here, not a map)"]
    missing = []
    for key, value in ours.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in theirs:
            missing.append(where)
        else:
            missing += unknown_keys(value, theirs[key], where)
    return missing


def releases(profile: KamajiHamiProfile) -> list[base.HelmRelease]:
    """The releases of the kamaji-hami stack that have an upstream values file to check."""
    out = [render.kamaji_release(profile)]
    out += [render.hami_release(profile, tenant) for tenant in profile.tenants]
    return out


def test_the_kamaji_hami_profile_has_releases_to_check() -> None:
    profile = load_profile("kamaji-hami").profile
    assert {r.chart for r in releases(profile)} == set(UPSTREAM)
    assert len(releases(profile)) == 1 + len(profile.tenants)


KAMAJI_HAMI_RELEASES = releases(load_profile("kamaji-hami").profile)


@pytest.mark.parametrize(
    "release", KAMAJI_HAMI_RELEASES, ids=[f"{r.name}@{r.kubeconfig_of}" for r in KAMAJI_HAMI_RELEASES]
)
def test_every_values_key_exists_upstream(release: base.HelmRelease) -> None:
    theirs, version = upstream(release.chart)

    assert release.version in (version, f"v{version}"), (
        f"{release.name}: gpulab pins {release.chart} {release.version} but tests/data/pinned has "
        f"the values.yaml of {version}; refresh the upstream copy"
    )
    assert unknown_keys(release.values, theirs) == [], (
        f"{release.name} ({release.kubeconfig_of}) sets keys chart {release.chart} "
        f"{release.version} does not have"
    )


def test_null_overrides_name_real_keys() -> None:
    """`resources: null` (Kamaji) must remove a key that exists, or it silently does nothing."""
    release = render.kamaji_release(load_profile("kamaji-hami").profile)
    theirs, _ = upstream("kamaji")
    nulls = [k for k, v in release.values.items() if v is None]
    assert nulls == ["resources"]
    assert all(theirs.get(k) not in (None, {}) for k in nulls)


def test_the_check_catches_stale_hami_doc_keys() -> None:
    theirs, _ = upstream("hami")
    stale = {
        "scheduler": {"kubeScheduler": {"imageTag": "v1.36.4"}},  # HAMi README's --set example
        "devicePlugin": {"deviceSplitCount": 10, "extraEnvs": {"ANY": "1"}},
        "resourceName": "nvidia.com/gpu",
        "mockDevicePlugin": {"image": {"tag": "1.0.1"}, "enable": True},
    }
    assert unknown_keys(stale, theirs) == [
        "scheduler.kubeScheduler.imageTag",
        "mockDevicePlugin.enable",
    ]
    assert unknown_keys({"resourceName": {"x": 1}}, theirs) == [
        "resourceName (the chart has a str here, not a map)"
    ]
