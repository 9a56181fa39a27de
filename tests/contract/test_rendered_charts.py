"""What the cluster would receive: the real pinned charts rendered by real `helm template` with
gpulab's values (tests/rendered.py), asserted object by object."""

from __future__ import annotations

import pytest

from gpulab.stacks import load_profile
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from tests.rendered import container, find
from tests.rendered import render as helm_template

pytestmark = pytest.mark.helm


@pytest.fixture(scope="module")
def profile() -> KamajiHamiProfile:
    loaded = load_profile("kamaji-hami").profile
    assert isinstance(loaded, KamajiHamiProfile)
    return loaded


def _hami(profile: KamajiHamiProfile, tenant: int = 0) -> list[dict]:
    release = render.hami_release(profile, profile.tenants[tenant])
    return helm_template("hami", release.name, release.namespace, release.values,
                         profile.tenants[tenant].kubernetes_version)


def test_hami_extender_runs_with_the_profiles_node_lock_timeout(profile: KamajiHamiProfile) -> None:
    """HAMi v2.10.0 cmd/scheduler/main.go:79/114: only --node-lock-timeout sets the lock's life;
    the chart's default extraArgs (--debug, -v=4) stay, and the flag appears exactly once."""
    extender = container(find(_hami(profile), "Deployment", "hami-scheduler"),
                         "vgpu-scheduler-extender")
    command = extender["command"]
    assert command[0] == "scheduler"
    assert command[-3:] == ["--debug", "-v=4", "--node-lock-timeout=5s"]
    assert [a for a in command if a.startswith("--node-lock-timeout")] == ["--node-lock-timeout=5s"]
    env = {e["name"]: e.get("value") for e in extender.get("env", [])}
    assert env["HAMI_NODELOCK_EXPIRE"] == "5s"  # consistent, though the flag wins


def test_a_profile_timeout_reaches_the_extender(profile: KamajiHamiProfile) -> None:
    hami = profile.components.hami.model_copy(update={"node_lock_timeout": "30s"})
    changed = profile.model_copy(update={"components": profile.components.model_copy(
        update={"hami": hami})})
    extender = container(find(_hami(changed), "Deployment", "hami-scheduler"),
                         "vgpu-scheduler-extender")
    assert "--node-lock-timeout=30s" in extender["command"]
    assert "--node-lock-timeout=5s" not in extender["command"]


def test_hami_without_gpulab_values_keeps_the_five_minute_lock() -> None:
    """The fact the fix rests on: the chart's defaults never pass the flag (so 5m applies)."""
    objects = helm_template("hami", "hami", "kube-system", {})
    extender = container(find(objects, "Deployment", "hami-scheduler"), "vgpu-scheduler-extender")
    assert not [a for a in extender["command"] if "node-lock-timeout" in a]


def test_hami_runs_no_device_plugin_of_its_own_and_the_clusters_scheduler(
        profile: KamajiHamiProfile) -> None:
    """The real plugin and the chart's mock both stay off (gpulab runs the mock itself, with a
    config it can decode: tests/contract/test_pins.py); kube-scheduler is the tenant's version."""
    objects = _hami(profile)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("DaemonSet", "hami-mock-device-plugin") not in kinds
    assert ("DaemonSet", "hami-device-plugin") not in kinds  # the real plugin stays off
    assert not [o for o in objects if o["kind"] == "DaemonSet"]
    scheduler = container(find(objects, "Deployment", "hami-scheduler"), "kube-scheduler")
    assert scheduler["image"] == f"registry.k8s.io/kube-scheduler:{profile.tenants[0].kubernetes_version}"


def test_hamis_certificate_jobs_run_the_multi_arch_upstream_certgen(
        profile: KamajiHamiProfile) -> None:
    """Both certificate jobs (Kubernetes >= 1.22 takes `scheduler.patch.imageNew`) run
    ingress-nginx's own kube-webhook-certgen v1.1.1 by digest, not the chart's default re-push,
    with the chart's arguments (each a flag of that version: render.HAMI_CERTGEN_IMAGE)."""
    objects = _hami(profile)
    want = ("registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.1.1@sha256:"
            "64d8c73dca984af206adf9d6d7e46aa550362b1d7a01f3a0a91b20cc67868660")
    jobs = [o for o in objects if o.get("kind") == "Job"]
    assert len(jobs) == 2
    for job in jobs:
        [only] = job["spec"]["template"]["spec"]["containers"]
        assert only["image"] == want
        assert only["args"][0] in ("create", "patch")
    assert not any("liangjw" in str(o) for o in objects)
