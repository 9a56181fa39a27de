"""TC-08: each tenant sees only its own nodes, pods and GPUs; credentials do not cross."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

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


def _also_listed(state: LabState, tenant: str, *, nodes: tuple[dict[str, Any], ...] = (),
                 pods: tuple[dict[str, Any], ...] = ()) -> LabState:
    """`state` with `nodes` and `pods` added to what `tenant`'s API listed."""
    listing = _listing(state, tenant)
    return tenant_replace(state, tenant, listing=replace(
        listing, nodes=(*listing.nodes, *nodes), pods=(*listing.pods, *pods)))


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    for tenant, other in (("tenant-a", "tenant-b"), ("tenant-b", "tenant-a")):
        result = judge(healthy, profile, "TC-08", tenant)
        assert result.status == "pass", result.reason
        assert f"lists 1 node(s) ({b.worker(tenant)})" in result.evidence
        assert f"none of the 5 verify pod(s) of {other} visible" in result.evidence
        assert f"{other}'s API server rejected {tenant}'s credentials" in result.evidence
        assert "401 Unauthorized" in result.evidence


def test_sees_the_other_tenants_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    foreign = b.node(profile.tenant("tenant-b"))
    state = _also_listed(healthy, "tenant-a", nodes=(foreign,))
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
    state = _also_listed(healthy, "tenant-a", pods=(run.pod,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert "lists pod gpulab-verify/gpu-share-1 of tenant-b (same uid)" in result.reason


def test_pod_labelled_for_another_tenant(healthy: LabState, profile: KamajiHamiProfile) -> None:
    stray = copy.deepcopy(b.verify_pod(profile.tenant("tenant-b"), "gpu-share-2"))
    stray["metadata"]["uid"] = "never-seen-elsewhere"
    state = _also_listed(healthy, "tenant-a", pods=(stray,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert f"labelled {naming.LABEL_TENANT}=tenant-b" in result.reason


def test_same_api_server_for_both_tenants(healthy: LabState, profile: KamajiHamiProfile) -> None:
    """tenant-b's kubeconfig points at tenant-a: identical listings."""
    state = tenant_replace(healthy, "tenant-b", listing=_listing(healthy, "tenant-a"))
    result = judge(state, profile, "TC-08", "tenant-b")
    assert result.status == "fail"
    assert f"lists node {b.worker('tenant-a')} of tenant-a" in result.reason
    assert "lists pod default/train-b7kq2 of tenant-a (same uid)" in result.reason
    # tenant-a's own API still shows only tenant-a's objects.
    assert judge(state, profile, "TC-08", "tenant-a").status == "pass"


def test_unexpected_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    stray = b.node(profile.tenant("tenant-a"))
    stray["metadata"].update(name="someone-elses-laptop", uid="x-1")
    state = _also_listed(healthy, "tenant-a", nodes=(stray,))
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


# --------------------------------------------------------------------------- what the user reads (#24)

HEALTHY_A = (
    f"tenant-a's API lists 1 node(s) ({b.worker('tenant-a')}) and 12 pod(s), GPU gpumem 81920, "
    f"gpucores 100; none of the 5 verify pod(s) of tenant-b visible; tenant-b's API server "
    f"rejected tenant-a's credentials ({b.rejected_probe('172.18.255.201:6443')})"
)
LISTED_A = HEALTHY_A.partition("; tenant-b's API server")[0]  # without the probe's outcome


def _three_tenants(profile: KamajiHamiProfile, b_workers: int = 1) -> KamajiHamiProfile:
    """tenant-a, tenant-b (with `b_workers` workers) and tenant-c, a copy of tenant-b."""
    spec_b = profile.tenant("tenant-b")
    spec_b = spec_b.model_copy(update={
        "workers": spec_b.workers.model_copy(update={"count": b_workers})})
    spec_c = profile.tenant("tenant-b").model_copy(update={"name": "tenant-c"})
    return profile.model_copy(update={"tenants": [profile.tenant("tenant-a"), spec_b, spec_c]})


def test_pass_evidence_is_the_listing_the_hidden_pods_and_the_probes(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    assert judge(healthy, profile, "TC-08").evidence == HEALTHY_A


def test_failure_and_error_keep_the_same_evidence(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    probe = CredentialProbe("tenant-a", "tenant-b", "accepted", "it listed 6 namespaces")
    failed = judge(tenant_replace(healthy, "tenant-a", credential_probes=(probe,)), profile,
                   "TC-08")
    assert failed.status == "fail"
    assert failed.evidence == LISTED_A
    errored = judge(tenant_replace(healthy, "tenant-a", credential_probes=None), profile,
                    "TC-08")
    assert errored.status == "error"
    assert errored.evidence == LISTED_A


def test_every_other_tenant_is_named(profile: KamajiHamiProfile) -> None:
    three = _three_tenants(profile)
    state = b.healthy_state(three)
    result = judge(state, three, "TC-08")
    assert result.status == "pass", result.reason
    assert ("none of the 5 verify pod(s) of tenant-b, 5 verify pod(s) of tenant-c visible"
            in result.evidence)
    unseen = tenant_replace(tenant_replace(state, "tenant-b", listing=None), "tenant-c",
                            listing=None)
    assert ("listings of tenant-b, tenant-c not observed (compared by worker names only)"
            in judge(unseen, three, "TC-08").evidence)


def test_an_unobserved_tenant_does_not_stop_the_comparison_with_the_next(
        profile: KamajiHamiProfile) -> None:
    three = _three_tenants(profile)
    state = tenant_replace(b.healthy_state(three), "tenant-b", listing=None)
    result = judge(state, three, "TC-08")
    assert "none of the 5 verify pod(s) of tenant-c visible" in result.evidence
    assert "listings of tenant-b not observed" in result.evidence


def test_gpus_of_several_foreign_nodes_are_summed_and_named(profile: KamajiHamiProfile) -> None:
    three = _three_tenants(profile)
    state = b.healthy_state(three)
    foreign = (b.node(three.tenant("tenant-b")), b.node(three.tenant("tenant-c")))
    state = _also_listed(state, "tenant-a", nodes=foreign)
    result = judge(state, three, "TC-08")
    assert result.status == "fail"
    assert (f"shows 98304 nvidia.com/gpumem on nodes that are not its own "
            f"({b.worker('tenant-b')}, {b.worker('tenant-c')})") in result.reason
    assert (f"lists 3 node(s) ({b.worker('tenant-a')}, {b.worker('tenant-b')}, "
            f"{b.worker('tenant-c')})") in result.evidence


def test_the_second_worker_of_another_tenant_is_named(profile: KamajiHamiProfile) -> None:
    three = _three_tenants(profile, b_workers=2)
    state = b.healthy_state(three)
    second = b.node(three.tenant("tenant-b"), 1)
    state = _also_listed(state, "tenant-a", nodes=(second,))
    result = judge(state, three, "TC-08")
    assert f"tenant-a's API lists node {b.worker('tenant-b', 1)} of tenant-b" in result.reason


def test_a_renamed_node_of_another_tenant_is_found_by_uid(healthy: LabState,
                                                          profile: KamajiHamiProfile) -> None:
    renamed = copy.deepcopy(_listing(healthy, "tenant-b").nodes[0])
    renamed["metadata"]["name"] = "renamed"
    state = _also_listed(healthy, "tenant-a", nodes=(renamed,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert ("tenant-a's API lists node renamed, which tenant-b's API lists too (same uid)"
            in result.reason)


def test_a_node_without_uid_is_not_matched_to_another_without_uid(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    nameless = copy.deepcopy(_listing(healthy, "tenant-b").nodes[0])
    del nameless["metadata"]["uid"]
    listing_b = _listing(healthy, "tenant-b")
    state = tenant_replace(healthy, "tenant-b",
                           listing=replace(listing_b, nodes=(nameless,)))
    stray = copy.deepcopy(nameless)
    stray["metadata"]["name"] = "stray"
    stray["status"]["allocatable"] = {}
    state = _also_listed(state, "tenant-a", nodes=(stray,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert (f"tenant-a's API lists node stray, which is not one of its workers "
            f"({b.worker('tenant-a')})") == result.reason


def test_a_foreign_node_without_gpus_is_not_a_gpu_problem(healthy: LabState,
                                                          profile: KamajiHamiProfile) -> None:
    stray = b.node(profile.tenant("tenant-a"))
    stray["metadata"].update(name="laptop", uid="x-1")
    stray["status"]["allocatable"] = {}
    state = _also_listed(healthy, "tenant-a", nodes=(stray,))
    result = judge(state, profile, "TC-08")
    assert "GPU" not in result.reason
    assert "GPU gpumem 81920, gpucores 100" in result.evidence


def test_two_workers_of_its_own_are_named(profile: KamajiHamiProfile) -> None:
    spec_a = profile.tenant("tenant-a")
    two = profile.model_copy(update={"tenants": [
        spec_a.model_copy(update={"workers": spec_a.workers.model_copy(update={"count": 2})}),
        profile.tenant("tenant-b")]})
    state = b.healthy_state(two)
    stray = b.node(spec_a)
    stray["metadata"].update(name="laptop", uid="x-1")
    state = _also_listed(state, "tenant-a", nodes=(stray,))
    result = judge(state, two, "TC-08")
    assert (f"lists node laptop, which is not one of its workers ({b.worker('tenant-a')}, "
            f"{b.worker('tenant-a', 1)})") in result.reason


def test_a_pod_without_namespace_is_named_by_name(healthy: LabState,
                                                  profile: KamajiHamiProfile) -> None:
    stray = copy.deepcopy(b.verify_pod(profile.tenant("tenant-b"), "gpu-share-2"))
    stray["metadata"]["uid"] = "never-seen-elsewhere"
    del stray["metadata"]["namespace"]
    state = _also_listed(healthy, "tenant-a", pods=(stray,))
    result = judge(state, profile, "TC-08")
    assert f"lists pod /gpu-share-2 labelled {naming.LABEL_TENANT}=tenant-b" in result.reason


def test_an_unlabelled_pod_on_another_tenants_worker(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    stray = copy.deepcopy(b.verify_pod(profile.tenant("tenant-b"), "gpu-share-2"))
    stray["metadata"]["uid"] = "never-seen-elsewhere"
    del stray["metadata"]["labels"][naming.LABEL_TENANT]
    stray["spec"]["nodeName"] = b.worker("tenant-b")
    state = _also_listed(healthy, "tenant-a", pods=(stray,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert (f"tenant-a's API lists pod gpulab-verify/gpu-share-2 running on "
            f"{b.worker('tenant-b')} of tenant-b") in result.reason


def test_a_pod_on_a_machine_joined_to_another_tenant(healthy: LabState,
                                                    profile: KamajiHamiProfile) -> None:
    """tenant-b's workers are joined machines: its workers are the nodes its API lists (gpu-9),
    not the kindest/node names the profile would give it, so a pod of tenant-a's listing on
    gpu-9 is on another tenant's worker."""
    from tests.existing.kamaji_machines import card, machine_node

    machine = machine_node("gpu-9", b.LAB, "tenant-b", "v1.36.4",
                            [card("GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "NVIDIA L4", 23034)])
    state = tenant_replace(healthy, "tenant-b", workers="machines", nodes=(machine,))
    stray = copy.deepcopy(b.verify_pod(profile.tenant("tenant-a"), "gpu-share-1"))
    stray["metadata"].update(name="stray", uid="never-seen-elsewhere")
    del stray["metadata"]["labels"][naming.LABEL_TENANT]
    stray["spec"]["nodeName"] = "gpu-9"
    state = _also_listed(state, "tenant-a", pods=(stray,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert ("tenant-a's API lists pod gpulab-verify/stray running on gpu-9 of tenant-b"
            in result.reason), result.reason


def test_another_tenants_created_pod_is_found_by_uid(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    """A pod tenant-b's create call returned, unlabelled and unbound, found by its uid only."""
    run = healthy.tenants["tenant-b"].pod_run("gpu-share-1")
    assert run is not None and run.created is not None
    stray = copy.deepcopy(run.created)
    del stray["metadata"]["labels"][naming.LABEL_TENANT]
    state = tenant_replace(healthy, "tenant-b",
                           listing=replace(_listing(healthy, "tenant-b"), pods=()))
    state = _also_listed(state, "tenant-a", pods=(stray,))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    assert "lists pod gpulab-verify/gpu-share-1 of tenant-b (same uid)" in result.reason


def test_a_listing_without_its_own_verify_pods_is_stale(healthy: LabState,
                                                        profile: KamajiHamiProfile) -> None:
    listing = _listing(healthy, "tenant-a")
    runs = healthy.tenants["tenant-a"].gpu_pods or ()
    gone = {r.created["metadata"]["uid"] for r in runs[:2] if r.created}
    pods = tuple(p for p in listing.pods if p["metadata"].get("uid") not in gone)
    state = tenant_replace(healthy, "tenant-a", listing=replace(listing, pods=pods))
    result = judge(state, profile, "TC-08")
    assert result.status == "fail"
    names = ", ".join(f"{r.name} uid {r.created['metadata']['uid']}" for r in runs[:2]
                      if r.created)
    assert f"tenant-a's pod listing lacks its own verify pods of this run ({names}):" \
        in result.reason


def test_a_created_pod_without_uid_is_not_looked_for(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    runs = []
    for run in healthy.tenants["tenant-a"].gpu_pods or ():
        created = copy.deepcopy(run.created)
        if created:
            del created["metadata"]["uid"]
        runs.append(replace(run, created=created))
    state = tenant_replace(healthy, "tenant-a", gpu_pods=tuple(runs))
    result = judge(state, profile, "TC-08")
    assert result.status == "pass", result.reason


def test_listing_unobserved_names_it(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", listing=None), profile, "TC-08")
    assert result.reason == ("the isolation listing of tenant-a was not observed in this run "
                             "or recording")


def test_single_tenant_lab_says_so_and_hides_nothing(healthy: LabState,
                                                     profile: KamajiHamiProfile) -> None:
    solo = only_tenant(profile, "tenant-a")
    state = tenant_replace(healthy, "tenant-a", credential_probes=())
    result = judge(state, solo, "TC-08")
    assert result.evidence.endswith(
        "GPU gpumem 81920, gpucores 100; the only tenant of the lab: no other API server to "
        "present credentials to")
