"""Pod Security on an existing cluster: the level each namespace gpulab creates is labelled with
(stacks' existing_pod_security / lab_pod_security) is exactly the least strict level its pods
need, judged by gpulab.pod_security over the pinned charts rendered by the real `helm template`
with gpulab's values (tests/rendered.py), and MetalLB's manifest labels its own namespace for
its pods. Pods the operators make at run time (KAI's services and reservation pods, Kamaji's
control planes) are not rendered by a chart: the stacks cite their source for them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpulab import pod_security as ps
from gpulab.profile.base import ClusterSpec
from gpulab.providers import existing
from gpulab.stacks import common, load_profile
from gpulab.stacks.kamaji_hami import existing as kh_existing
from gpulab.stacks.kamaji_hami import render as kh
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.steps import existing_pod_security
from tests.rendered import render
from tests.schemas import pinned_data

pytestmark = pytest.mark.helm


def _least(objects: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The least strict level the objects' pods need, and why (each pod needing it)."""
    need, why = ps.RESTRICTED, []
    for obj in objects:
        for spec in ps.pod_specs(obj):
            level = ps.needed(spec)
            if ps.LEVELS.index(level) < ps.LEVELS.index(need):
                need, why = level, []
            if level == need and level != ps.RESTRICTED:
                broken = ps.baseline_violations(spec) or ps.restricted_violations(spec)
                why.append(f"{obj['kind']}/{obj['metadata']['name']}: {broken[0]}")
    return need, why


def _levels(rows: tuple[tuple[str, str, str], ...]) -> dict[str, str]:
    return {namespace: level for namespace, level, _what in rows}


def test_vcluster_kai_namespaces_are_labelled_with_what_their_charts_need() -> None:
    loaded = load_profile("vcluster-kai").profile
    profile: Any = loaded.model_copy(update={"cluster": ClusterSpec(
        provider="existing", fake_gpu_nodes=["n1"])})
    levels = _levels(existing_pod_security(profile, kai_found=False))
    releases = [kr.fake_gpu_operator_release(profile,
                                             reservation_namespace="kai-resource-reservation"),
                kr.kai_scheduler_release(profile),
                *(kr.vcluster_release(profile, team, kr.ExistingExpose(
                    "NodePort", "10.0.0.5", "lab", {team.name: str(existing.port_url(
                        kr.team_port(team), "NodePort", "10.0.0.5"))}))
                  for team in profile.teams)]
    seen = {}
    for release in releases:
        need, why = _least(render(release.chart, release.name, release.namespace,
                                  release.values))
        seen[release.namespace] = need
        assert levels.get(release.namespace, ps.RESTRICTED) == need, (release.name, why)
    assert seen["gpu-operator"] == ps.PRIVILEGED  # the device plugin: privileged, hostPath
    assert levels["kai-resource-reservation"] == ps.BASELINE  # KAI's binder's pods (cited)
    # a reused KAI keeps its own namespaces; no fake GPUs: no fake-gpu-operator namespace
    assert set(_levels(existing_pod_security(loaded, kai_found=True))) == {
        t.namespace for t in profile.teams}


def test_kamaji_hami_namespaces_are_labelled_with_what_their_charts_need() -> None:
    profile: Any = load_profile("kamaji-hami").profile
    levels = _levels(kh_existing.lab_pod_security(profile, None))
    for release in (common.helm_release(profile.components.cert_manager),
                    kh.kamaji_release(profile)):
        need, why = _least(render(release.chart, release.name, release.namespace,
                                  release.values))
        assert levels.get(release.namespace, ps.RESTRICTED) == need, (release.name, why)
    assert profile.components.cert_manager.namespace not in levels  # restricted: no label
    assert levels[profile.components.kamaji.tenant_namespace] == ps.BASELINE  # cited


def test_metallbs_manifest_labels_its_namespace_for_its_pods() -> None:
    path = pinned_data() / "manifests" / "metallb-v0.16.1-native.yaml"
    objects = [o for o in yaml.safe_load_all(path.read_text()) if isinstance(o, dict)]
    namespace = next(o for o in objects if o["kind"] == "Namespace")
    need, why = _least(objects)
    assert need == ps.PRIVILEGED, why  # the speaker: hostNetwork, NET_RAW
    assert ps.enforced(namespace["metadata"]["labels"]) == need
