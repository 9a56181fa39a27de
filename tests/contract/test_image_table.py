"""gpulab's image table (gpulab/image_platforms.json, docs/images.md) holds every image the built-in
profiles pull: the pinned charts rendered by the real `helm template` with gpulab's values, the
pinned manifests, and the images gpulab's own code names. A pin or an image that changes without
the table fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab import platforms
from gpulab.images import images_in_objects
from gpulab.stacks import common, load_profile
from gpulab.stacks.kamaji_hami import render as kh
from gpulab.stacks.kamaji_hami.steps.images import CONTROL_PLANE_IMAGES
from gpulab.stacks.vcluster_kai import render as kr
from tests.rendered import render
from tests.schemas import pinned_data

ROOT = Path(__file__).resolve().parents[2]
TABLE = platforms.load_table()
PROFILES = ("kamaji-hami", "vcluster-kai")
# tests/data/pinned/SOURCES.md: the vendored cert-manager chart is v1.21.1, standing in for the
# v1.21.2 gpulab pins (the v1.21.2 tag is not in the mirror); its images carry the chart's tag.
CERT_MANAGER_STAND_IN = ("quay.io/jetstack/cert-manager-", ":v1.21.1", ":v1.21.2")


def _manifest(name: str, version: str) -> list[dict[str, Any]]:
    path = pinned_data() / "manifests" / f"{name}-{version}{'-native' if name == 'metallb' else ''}.yaml"
    return [o for o in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(o, dict)]


def _rendered(release: Any, kube_version: str = "v1.36.4") -> list[str]:
    return images_in_objects(render(release.chart, release.name, release.namespace,
                                    release.values, kube_version))


def _kamaji_hami_images() -> set[str]:
    """Every image kamaji-hami pulls that a chart, a manifest or gpulab's code names."""
    profile: Any = load_profile("kamaji-hami").profile
    comps = profile.components
    found = [profile.management.node_image]
    found += _rendered(common.helm_release(comps.cert_manager))
    found += _rendered(kh.kamaji_release(profile))
    found += images_in_objects(_manifest("metallb", comps.metallb.version))
    found += images_in_objects(_manifest("calico", comps.calico.version))
    for tenant in profile.tenants:
        release = kh.hami_release(profile, tenant)
        found += _rendered(release, tenant.kubernetes_version)
        found += images_in_objects(kh.hami_mock_plugin(profile, release, "devices: {}"))
        found.append(tenant.workers.image)
        found += [f"registry.k8s.io/{c}:{tenant.kubernetes_version}" for c in CONTROL_PLANE_IMAGES]
        found += kh.konnectivity_images(tenant)
        found += images_in_objects(kh.kube_proxy_objects(tenant, "https://192.0.2.1:6443"))
        found += images_in_objects(kh.verify_objects(tenant))
    prefix, old, new = CERT_MANAGER_STAND_IN
    return {i.replace(old, new) if i.startswith(prefix) else i for i in found}


def _vcluster_kai_images() -> set[str]:
    profile: Any = load_profile("vcluster-kai").profile
    found = [profile.management.node_image]
    found += _rendered(kr.fake_gpu_operator_release(
        profile, reservation_namespace=profile.components.kai_scheduler.reservation_namespace))
    found += _rendered(kr.kai_scheduler_release(profile))
    for team in profile.teams:
        found += _rendered(kr.vcluster_release(profile, team))
        found += images_in_objects(kr.verify_objects(profile, team))
    return set(found)


def _table_images(stack: str, *, runtime: bool) -> set[str]:
    refs = {ref for pin in TABLE.stacks[stack].values() for ref in pin}
    return {ref for ref in refs if (TABLE.images[ref].how == "runtime") == runtime}


@pytest.mark.helm
@pytest.mark.slow
@pytest.mark.parametrize(("stack", "collect"), [("kamaji-hami", _kamaji_hami_images),
                                                ("vcluster-kai", _vcluster_kai_images)])
def test_the_table_lists_exactly_the_images_charts_manifests_and_code_pull(stack, collect) -> None:
    found = collect()
    listed = _table_images(stack, runtime=False)
    assert found - listed == set(), "pulled but not in gpulab/image_platforms.json"
    assert listed - found == set(), "in the table but nothing renders it (mark runtime ones)"


@pytest.mark.parametrize("name", PROFILES)
def test_every_pin_of_the_built_in_profiles_is_in_the_table(name: str) -> None:
    """A version bumped in a profile (chart, manifest, node image, image tag, Kubernetes) without
    the table fails: its images' platforms would be unknown."""
    profile = load_profile(name).profile
    assert set(platforms.image_pins(profile)) == set(TABLE.stacks[profile.stack])


def test_every_image_has_its_source_or_why_it_is_unconfirmed() -> None:
    referenced = {ref for pins in TABLE.stacks.values() for refs in pins.values() for ref in refs}
    assert referenced == set(TABLE.images)
    for ref, facts in TABLE.images.items():
        assert facts.how in ("profile", "rendered", "code", "runtime"), ref
        if facts.platforms is None:
            assert facts.why, ref
        else:
            assert facts.source and re.search(r":\d", facts.source), ref  # a file:line
            assert all(re.fullmatch(r"linux/[a-z0-9]+(/v\d)?", p) for p in facts.platforms), ref


def test_the_docs_table_lists_every_image() -> None:
    docs = (ROOT / "docs" / "images.md").read_text(encoding="utf-8")
    for ref, facts in TABLE.images.items():
        assert f"`{ref}`" in docs, ref
        if facts.platforms is None:
            row = next(line for line in docs.splitlines() if f"`{ref}`" in line)
            assert "unconfirmed" in row, ref


# A registry-qualified image name in gpulab's code: every one must be (the start of) an image of
# the table, so an image added in code without the table fails here.
_IMAGE_LITERAL = re.compile(r"[\"']((?:registry\.k8s\.io|docker\.io|ghcr\.io|quay\.io)/[^\"'\s{]+)")


def test_every_image_named_in_gpulabs_code_is_in_the_table() -> None:
    refs = list(TABLE.images)
    seen = []
    for path in sorted((ROOT / "gpulab").rglob("*.py")):
        for literal in _IMAGE_LITERAL.findall(path.read_text(encoding="utf-8")):
            seen.append(literal)
            assert any(ref.startswith(literal) for ref in refs), (path.name, literal)
    assert "registry.k8s.io/pause:3.10" in seen  # the scan does see gpulab's literals
