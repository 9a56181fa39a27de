"""TC-08: each tenant sees only its own nodes, pods and GPUs; credentials do not cross."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from gpulab import naming
from gpulab.verify.state import CredentialProbe, Listing
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, only_tenant, tenant_replace

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState


def _listing(state: LabState, tenant: str) -> Listing:
    listing = state.tenants[tenant].listing
    assert listing is not None
    return listing


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    for tenant, other in (("tenant-a", "tenant-b"), ("tenant-b", "tenant-a")):
        result = judge(healthy, profile, "TC-08", tenant)
        assert result.status == "pass", result.reason
        assert f"lists 1 node(s) ({b.worker(tenant)})" in result.evidence
        assert f"none of the 5 verify pod(s) of {other} visible" in result.evidence
        assert f"{other}'s API server rejected {tenant}'s credentials" in result.evidence
        assert "401 Unauthorized" in result.evidence


def test_sees_the_other_tenants_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    listing = _listing(healthy, "tenant-a")
    foreign = b.node(profile.tenant("tenant-b"))
    state = tenant_replace(healthy, "tenant-a",
                           listing=replace(listing, nodes=(*listing.nodes, foreign)))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert f"tenant-a's API lists node {b.worker('tenant-b')} of tenant-b" in result.reason
    assert (f"shows 49152 nvidia.com/gpumem on nodes that are not its own "
            f"({b.worker('tenant-b')}): it sees another tenant's GPUs") in result.reason
    assert judge(state, profile, "TC-08", "tenant-b").status == "pass"


def test_sees_the_other_tenants_verify_pod(healthy: LabState,
                                           profile: KamajiHamiProfile) -> None:
    run = healthy.tenants["tenant-b"].pod_run("gpu-share-1")
    assert run is not None and run.pod is not None
    listing = _listing(healthy, "tenant-a")
    state = tenant_replace(healthy, "tenant-a",
                           listing=replace(listing, pods=(*listing.pods, run.pod)))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert "lists pod gpulab-verify/gpu-share-1 of tenant-b (same uid)" in result.reason


def test_pod_labelled_for_another_tenant(healthy: LabState, profile: KamajiHamiProfile) -> None:
    stray = copy.deepcopy(b.verify_pod(profile.tenant("tenant-b"), "gpu-share-2"))
    stray["metadata"]["uid"] = "never-seen-elsewhere"
    listing = _listing(healthy, "tenant-a")
    state = tenant_replace(healthy, "tenant-a",
                           listing=replace(listing, pods=(*listing.pods, stray)))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert f"labelled {naming.LABEL_TENANT}=tenant-b" in result.reason


def test_same_api_server_for_both_tenants(healthy: LabState, profile: KamajiHamiProfile) -> None:
    """tenant-b's kubeconfig points at tenant-a: identical listings."""
    state = tenant_replace(healthy, "tenant-b", listing=_listing(healthy, "tenant-a"))
    result = judge(state, profile, "TC-08", "tenant-b")
    assert result.status == "fail"
    assert f"lists node {b.worker('tenant-a')} of tenant-a" in result.reason
    assert "lists pod kube-system/calico-node-0x7kq of tenant-a (same uid)" in result.reason
    # tenant-a's own API still shows only tenant-a's objects.
    assert judge(state, profile, "TC-08", "tenant-a").status == "pass"


def test_unexpected_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    stray = b.node(profile.tenant("tenant-a"))
    stray["metadata"].update(name="someone-elses-laptop", uid="x-1")
    listing = _listing(healthy, "tenant-a")
    state = tenant_replace(healthy, "tenant-a",
                           listing=replace(listing, nodes=(*listing.nodes, stray)))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert "lists node someone-elses-laptop, which is not one of its workers" in result.reason


@pytest.mark.parametrize(("outcome", "status", "expected"), [
    ("accepted", "fail", "tenant-b's API server accepted tenant-a's admin credentials (it "
                         "listed 6 namespaces): the tenants share a certificate authority"),
    ("forbidden", "fail", "authenticated tenant-a's admin credentials and only RBAC refused"),
    ("error", "error", "could not present tenant-a's credentials to tenant-b"),
])
def test_credential_probe(healthy: LabState, profile: KamajiHamiProfile, outcome: str,
                          status: str, expected: str) -> None:
    detail = {"accepted": "it listed 6 namespaces",
              "forbidden": "list Namespace list: 403 Forbidden",
              "error": "connection failed (ConnectTimeoutError)"}[outcome]
    probe = CredentialProbe("tenant-a", "tenant-b", outcome, detail)  # type: ignore[arg-type]
    state = tenant_replace(healthy, "tenant-a", credential_probes=(probe,))
    result = judge(state, profile, "TC-08")
    assert result.status == status
    assert expected in result.reason


def test_probe_not_made_is_an_error(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", credential_probes=None), profile, "TC-08")
    assert result.status == "error"
    assert "were not presented to tenant-b's API server" in result.reason


def test_listing_refused(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", listing=Listing(error="list Pod list: 403 "
                                                                      "Forbidden"))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert "refused to list nodes or pods" in result.reason


def test_listing_unobserved(healthy: LabState, profile: KamajiHamiProfile) -> None:
    assert judge(tenant_replace(healthy, "tenant-a", listing=None), profile,
                 "TC-08").status == "error"


def test_other_tenant_unobserved_still_compares_names(healthy: LabState,
                                                      profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-b", listing=None)
    result = judge(state, profile, "TC-08")
    assert result.status == "pass"
    assert "listings of tenant-b not observed" in result.evidence


def test_single_tenant_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    solo = only_tenant(profile, "tenant-a")
    state = tenant_replace(healthy, "tenant-a", credential_probes=())
    result = judge(state, solo, "TC-08")
    assert result.status == "pass", result.reason
    assert "the only tenant of the lab" in result.evidence
