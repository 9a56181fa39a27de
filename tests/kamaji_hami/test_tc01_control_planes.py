"""TC-01: TenantControlPlane Ready, four components running, API at the profile's version."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from tests import kube_wire as kw
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, tenant_replace

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec
    from gpulab.stacks.kamaji_hami.state import LabState

COMPONENTS = ["kube-apiserver", "kube-scheduler", "kube-controller-manager"]


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    for tenant in ("tenant-a", "tenant-b"):
        result = judge(healthy, profile, "TC-01", tenant)
        assert result.status == "pass", result.reason
        assert "Ready" in result.evidence
        assert "konnectivity-server" in result.evidence
        assert "API answers v1.36.4" in result.evidence


def test_build_metadata_in_the_version_is_ignored(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", api_version="v1.36.4+kamaji")
    assert judge(state, profile, "TC-01").status == "pass"


def _spec(profile: KamajiHamiProfile) -> TenantSpec:
    return profile.tenant("tenant-a")


@pytest.mark.parametrize(("change", "expected"), [
    (lambda p: {"tcp": None},
     ["TenantControlPlane tenants/tenant-a not found in the management cluster", "gpulab up"]),
    (lambda p: {"tcp": b.tcp(_spec(p), state="Provisioning")},
     ["is Provisioning, not Ready", "kubectl -n tenants describe tcp tenant-a"]),
    (lambda p: {"tcp": b.tcp(_spec(p), state="NotReady")}, ["is NotReady, not Ready"]),
    (lambda p: {"tcp": b.tcp(_spec(p), version="v1.35.7")},
     ["asks for v1.35.7 but the profile wants v1.36.4"]),
    (lambda p: {"tcp_pods": ()}, ["no control-plane pod of tenant-a in namespace tenants"]),
    (lambda p: {"tcp_pods": (b.tcp_pod(_spec(p), containers=tuple(COMPONENTS)),)},
     ["has no konnectivity-server container", "spec.addons.konnectivity"]),
    (lambda p: {"tcp_pods": (b.tcp_pod(_spec(p), statuses=[
        b.running("kube-apiserver"), b.waiting("kube-scheduler", "CrashLoopBackOff", 7),
        b.running("kube-controller-manager"), b.running("konnectivity-server")]),)},
     ["container kube-scheduler of pod tenant-a-6f8c9d7b5-x2k4q is waiting CrashLoopBackOff "
      "(7 restarts)", "logs tenant-a-6f8c9d7b5-x2k4q -c kube-scheduler --previous"]),
    (lambda p: {"api_version": "v1.35.7"},
     ["the tenant API answers v1.35.7 but the profile wants v1.36.4"]),
    (lambda p: {"api_version": "", "api_error": "get server version at https://172.18.255.200:"
                "6443: connection failed (ConnectTimeoutError: timed out)"},
     ["the tenant API at 172.18.255.200:6443 did not answer", "MetalLB"]),
], ids=["tcp-missing", "tcp-provisioning", "tcp-not-ready", "tcp-wrong-version", "no-pods",
        "konnectivity-server-missing", "scheduler-crashloop", "api-wrong-version", "api-down"])
def test_fails_with_actionable_reason(healthy: LabState, profile: KamajiHamiProfile,
                                      change: Callable[[KamajiHamiProfile], dict[str, Any]],
                                      expected: list[str]) -> None:
    state = tenant_replace(healthy, "tenant-a", **change(profile))
    result = judge(state, profile, "TC-01")
    assert result.status == "fail"
    for text in expected:
        assert text in result.reason
    assert judge(state, profile, "TC-01", "tenant-b").status == "pass"


def test_terminating_pods_do_not_count(healthy: LabState, profile: KamajiHamiProfile) -> None:
    old = b.tcp_pod(profile.tenant("tenant-a"))
    old["metadata"]["deletionTimestamp"] = b.TS
    state = tenant_replace(healthy, "tenant-a", tcp_pods=(old,))
    assert "no control-plane pod" in judge(state, profile, "TC-01").reason


def test_one_healthy_pod_of_a_rollout_is_enough(healthy: LabState,
                                                profile: KamajiHamiProfile) -> None:
    spec = profile.tenant("tenant-a")
    new = b.tcp_pod(spec, statuses=[b.waiting(c, "ContainerCreating", 0) for c in COMPONENTS])
    state = tenant_replace(healthy, "tenant-a", tcp_pods=(b.tcp_pod(spec), new))
    assert judge(state, profile, "TC-01").status == "pass"


def test_unreadable_management_cluster_is_an_error(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", management_error="list Pod list in tenants at "
                           f"https://127.0.0.1:40123: {kw.kube_client_says(kw.unauthorized())}")
    result = judge(state, profile, "TC-01")
    assert result.status == "error"
    assert "could not read the management cluster" in result.reason


def test_tenant_missing_from_the_observation_is_an_error(healthy: LabState,
                                                         profile: KamajiHamiProfile) -> None:
    state = replace(healthy, tenants={"tenant-b": healthy.tenants["tenant-b"]})
    result = judge(state, profile, "TC-01", "tenant-a")
    assert result.status == "error"
    assert "not in this observation or recording" in result.reason


def test_tenant_unknown_to_the_profile_is_an_error(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    result = judge(healthy, profile, "TC-01", "tenant-z")
    assert result.status == "error"
    assert "no tenant 'tenant-z' in profile" in result.reason


# --------------------------------------------------------------------------- what the user reads (#24)

POD = "tenant-a-6f8c9d7b5-x2k4q"
HEALTHY_EVIDENCE = (
    f"TenantControlPlane tenants/tenant-a Ready (172.18.255.200:6443); pod {POD} running "
    f"kube-apiserver, kube-scheduler, kube-controller-manager, konnectivity-server; "
    f"API answers v1.36.4")


def test_pass_evidence_is_the_tcp_its_pod_and_the_api(healthy: LabState,
                                                      profile: KamajiHamiProfile) -> None:
    assert judge(healthy, profile, "TC-01").evidence == HEALTHY_EVIDENCE


@pytest.mark.parametrize("version", ["1.36.4", "v1.36.4+k3s1+extra", "1.36.4+kamaji"])
def test_versions_are_compared_without_v_or_build_metadata(
        healthy: LabState, profile: KamajiHamiProfile, version: str) -> None:
    state = tenant_replace(healthy, "tenant-a", api_version=version)
    result = judge(state, profile, "TC-01")
    assert result.status == "pass", result.reason
    assert result.evidence.endswith(f"; API answers {version}")


def test_a_tcp_without_status(healthy: LabState, profile: KamajiHamiProfile) -> None:
    tcp = b.tcp(_spec(profile))
    del tcp["status"]
    state = tenant_replace(healthy, "tenant-a", tcp=tcp, api_version="",
                           api_error="connection refused")
    result = judge(state, profile, "TC-01")
    assert result.status == "fail"
    assert "TenantControlPlane tenants/tenant-a is Unknown, not Ready" in result.reason
    assert "the tenant API did not answer: connection refused;" in result.reason
    assert result.evidence.startswith(
        f"TenantControlPlane tenants/tenant-a Unknown (no endpoint); pod {POD} running ")


def test_a_missing_tcp_is_all_that_is_said(healthy: LabState,
                                           profile: KamajiHamiProfile) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", tcp=None), profile, "TC-01")
    assert result.status == "fail"
    assert result.evidence == ""


@pytest.mark.parametrize(("pods", "expected"), [
    (None, "the control-plane pods in tenants were not observed"),
    ((), "no control-plane pod of tenant-a in namespace tenants"),
])
def test_without_pods_the_api_is_still_checked(healthy: LabState, profile: KamajiHamiProfile,
                                               pods: tuple[Any, ...] | None,
                                               expected: str) -> None:
    state = tenant_replace(healthy, "tenant-a", tcp_pods=pods)
    result = judge(state, profile, "TC-01")
    assert result.status == "fail"
    assert expected in result.reason
    assert result.evidence == ("TenantControlPlane tenants/tenant-a Ready (172.18.255.200:6443); "
                               "API answers v1.36.4")


def test_too_few_healthy_replicas(healthy: LabState, profile: KamajiHamiProfile) -> None:
    spec = _spec(profile)
    two = profile.model_copy(update={"tenants": [
        spec.model_copy(update={"control_plane": spec.control_plane.model_copy(
            update={"replicas": 2})}), profile.tenant("tenant-b")]})
    result = judge(healthy, two, "TC-01")
    assert result.status == "fail"
    assert result.reason == "1 of 2 control-plane pods healthy"
    assert result.evidence == HEALTHY_EVIDENCE


def test_a_crashing_component_names_the_namespace_and_keeps_the_evidence(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    pod = b.tcp_pod(_spec(profile), statuses=[
        b.running("kube-apiserver"), b.waiting("kube-scheduler", "CrashLoopBackOff", 7),
        b.running("kube-controller-manager"), b.running("konnectivity-server")])
    result = judge(tenant_replace(healthy, "tenant-a", tcp_pods=(pod,)), profile, "TC-01")
    assert (f"container kube-scheduler of pod {POD} is waiting CrashLoopBackOff (7 restarts): "
            f"kubectl -n tenants logs {POD} -c kube-scheduler --previous") in result.reason
    assert result.evidence == ("TenantControlPlane tenants/tenant-a Ready (172.18.255.200:6443); "
                               "API answers v1.36.4")


def test_a_waiting_reason_with_a_colon_stays_whole(healthy: LabState,
                                                   profile: KamajiHamiProfile) -> None:
    pod = b.tcp_pod(_spec(profile), statuses=[
        b.running("kube-apiserver"), b.waiting("kube-scheduler", "Error: exit 1", 0),
        b.running("kube-controller-manager"), b.running("konnectivity-server")])
    result = judge(tenant_replace(healthy, "tenant-a", tcp_pods=(pod,)), profile, "TC-01")
    assert f"container kube-scheduler of pod {POD} is waiting Error: exit 1: " in result.reason


def test_a_state_keyed_missing_is_a_state_not_a_missing_container(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    """A replay is read as written: a container whose state is keyed `missing` is a container in
    that state, reported with its logs command — not "has no container" with a component's
    hint (the missing components are found apart from the states' text)."""
    pod = b.tcp_pod(_spec(profile), statuses=[
        b.running("kube-apiserver"),
        {"name": "kube-scheduler", "ready": False, "restartCount": 0,
         "state": {"missing": {}}},
        b.running("kube-controller-manager"), b.running("konnectivity-server")])
    result = judge(tenant_replace(healthy, "tenant-a", tcp_pods=(pod,)), profile, "TC-01")
    assert (f"container kube-scheduler of pod {POD} is missing: "
            f"kubectl -n tenants logs {POD} -c kube-scheduler --previous") in result.reason
    assert "has no kube-scheduler container" not in result.reason


@pytest.mark.parametrize("component", ["kube-apiserver", "kube-scheduler",
                                       "kube-controller-manager", "konnectivity-server"])
def test_a_missing_component_is_named_with_what_it_breaks(
        healthy: LabState, profile: KamajiHamiProfile, component: str) -> None:
    hints = {"kube-apiserver": "the tenant has no API server",
             "kube-scheduler": "pods of the tenant cannot be scheduled",
             "kube-controller-manager": "the tenant's controllers (DaemonSets, ReplicaSets) do "
                                        "not run",
             "konnectivity-server": "without it the tenant API server cannot reach webhooks"}
    pod = b.tcp_pod(_spec(profile), statuses=[
        b.running(c) for c in hints if c != component])
    pod["spec"]["containers"] = [c for c in pod["spec"]["containers"] if c["name"] != component]
    result = judge(tenant_replace(healthy, "tenant-a", tcp_pods=(pod,)), profile, "TC-01")
    assert f"pod {POD} has no {component} container: {hints[component]}" in result.reason
