"""The adversarial corpus: the checked-in healthy recording (the write-up's lab) broken one fact at a
time. Each variant must fail exactly the checks that read that fact, for that tenant only, with a
reason naming the broken fact; healthy variants (reordered lists, unrelated pods and events, a
three-tenant lab with other GPU models and sizes) must still pass everything. Judged through the recording format, as `verify --replay` would."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.stacks import load_profile
from gpulab.stacks.common import VERIFY_IMAGE
from gpulab.stacks.kamaji_hami.record import read_recording, write_recording
from gpulab.stacks.kamaji_hami.run import evaluate
from gpulab.verify.result import LOOKS_FURTHER
from tests import kube_wire as kw
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as hw
from tests.recordings import listed_under_another_name, member_states, read_edited

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

RECORDING = Path(__file__).parents[1] / "data" / "recordings" / "writeup-healthy"
TENANTS = ("tenant-a", "tenant-b")


def _raw() -> dict[str, dict[str, Any]]:
    return member_states(RECORDING)


def _judge(edit: Callable[[dict[str, Any], dict[str, Any]], None], tenant: str
           ) -> list[tuple[str, str, str, str]]:
    states = _raw()
    other = next(t for t in TENANTS if t != tenant)
    edit(states[tenant], states[other])  # an edit may change the other tenant's state too
    recording = read_edited(RECORDING, read_recording, states)
    report = evaluate(recording.state, recording.profile())
    return [(r.id, r.tenant, r.status, r.reason) for r in report.results if r.status != "pass"]


def _run(st: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in st["gpu_pods"] if r["name"] == name)


def _system_pod(st: dict[str, Any], prefix: str) -> dict[str, Any]:
    return next(p for p in st["system_pods"] if p["metadata"]["name"].startswith(prefix))


def _crash(pod: dict[str, Any]) -> None:
    name = pod["status"]["containerStatuses"][-1]["name"]
    pod["status"]["containerStatuses"][-1] = {
        "name": name, "ready": False, "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}}}


def _register(st: dict[str, Any], **changes: Any) -> None:
    annotations = st["nodes"][0]["metadata"]["annotations"]
    cards = json.loads(annotations["hami.io/node-nvidia-register"])
    cards[0].update(changes)
    annotations["hami.io/node-nvidia-register"] = json.dumps(cards)


def _events_of_another_uid(run: dict[str, Any]) -> None:
    for event in run["events"]:
        event["involvedObject"]["uid"] = "a-pod-of-an-earlier-run"


def _share_pending(st: dict[str, Any]) -> None:
    pod = _run(st, "gpu-share-3")["pod"]
    pod["status"] = {"phase": "Pending"}
    pod["spec"].pop("nodeName", None)


def _bound_never_started(st: dict[str, Any]) -> None:
    """gpu-share-1 placed and bound by HAMi, its container never started: phase Pending while
    bound is "time spent pulling images" (k8s.io/api v0.36.3 core/v1/types.go:3499-3502); its
    image is not on the node and the registry answers that it has no such image."""
    run = _run(st, "gpu-share-1")
    run.update(outcome="timeout", last_seen="Pending, schedulerName hami-scheduler, node "
                                            "gpulab-kamaji-hami-tenant-a-worker")
    run["pod"]["status"] = {"phase": "Pending", "containerStatuses": [{
        "name": "app", "ready": False, "restartCount": 0,
        "state": {"waiting": {"reason": kw.IMAGE_PULL_BACKOFF, "message": kw.image_pull_backoff(
            VERIFY_IMAGE, kw.image_not_found(VERIFY_IMAGE))}}}]}


def _refused_at_admission(st: dict[str, Any]) -> None:
    """gpu-share-1 placed and bound by HAMi, then turned away by the kubelet: phase Failed with
    status.reason UnexpectedAdmissionError (what HAMi v2.10.0's e2e reads for a pod that
    "reached admission", hack/hami-mig-e2e.sh:621), no container ever started."""
    run = _run(st, "gpu-share-1")
    run.update(outcome="failed")
    run["pod"]["status"] = {"phase": "Failed", "reason": kw.UNEXPECTED_ADMISSION_ERROR,
                            "message": kw.unexpected_admission(
                                kw.devices_unavailable("nvidia.com/gpu", 1, 0))}


def _grant(st: dict[str, Any], name: str, memory: int) -> None:
    annotations = _run(st, name)["pod"]["metadata"]["annotations"]
    card, vendor, _memory, cores = annotations["hami.io/vgpu-devices-allocated"].split(":")[0] \
        .split(",")
    annotations["hami.io/vgpu-devices-allocated"] = f"{card},{vendor},{memory},{cores}:;"


def _uneven_grants(st: dict[str, Any]) -> None:
    """tenant-a's shares are 20000 MiB each: 30000 + 10000 + 20000 still adds up to 60000."""
    _grant(st, "gpu-share-1", 30000)
    _grant(st, "gpu-share-2", 10000)


def _pod_annotations(st: dict[str, Any], name: str) -> dict[str, Any]:
    annotations: dict[str, Any] = _run(st, name)["pod"]["metadata"]["annotations"]
    return annotations


def _other_card(st: dict[str, Any], name: str) -> None:
    """`name` granted card GPU-MOCK-1 (tenant-a has one card: the pinned one is GPU-MOCK-0)."""
    annotations = _pod_annotations(st, name)
    granted = annotations["hami.io/vgpu-devices-allocated"].replace("GPU-MOCK-0", "GPU-MOCK-1")
    annotations["hami.io/vgpu-devices-allocated"] = granted


def _not_placed_by_hami(st: dict[str, Any], name: str) -> None:
    annotations = _pod_annotations(st, name)
    for key in ("hami.io/vgpu-node", "hami.io/vgpu-devices-allocated",
                "hami.io/vgpu-devices-to-allocate", "hami.io/bind-phase"):
        annotations.pop(key)


def _component_crash(st: dict[str, Any]) -> None:
    statuses = st["tcp_pods"][0]["status"]["containerStatuses"]
    statuses[0] = {"name": statuses[0]["name"], "ready": False, "restartCount": 6,
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}}}


def _without_container(st: dict[str, Any], container: str) -> None:
    pod = st["tcp_pods"][0]
    pod["spec"]["containers"] = [c for c in pod["spec"]["containers"] if c["name"] != container]
    pod["status"]["containerStatuses"] = [
        c for c in pod["status"]["containerStatuses"] if c["name"] != container]


def _placement(st: dict[str, Any], name: str, vgpu_node: str, node: str) -> None:
    run = _run(st, name)
    run["pod"]["metadata"]["annotations"]["hami.io/vgpu-node"] = vgpu_node
    run["pod"]["spec"]["nodeName"] = node


def _foreign_pod(st: dict[str, Any], other: dict[str, Any]) -> None:
    theirs = next(p for p in other["listing"]["pods"] if p["metadata"]["name"] == "gpu-share-1")
    st["listing"]["pods"].append(theirs)


def _created_pod_listed_under_another_name(st: dict[str, Any], other: dict[str, Any]) -> None:
    """tenant-a lists a pod that only the uid tenant-b's create call returned gives away (the name
    and labels differ). tenant-b's own listing is left whole: one without its own pods fails
    tenant-b's TC-08 by itself (the case "listing taken without the tenant's own verify pods")."""
    uid = _run(other, "gpu-share-1")["created"]["metadata"]["uid"]
    listed_under_another_name(st, copy.deepcopy(other), uid)


def _gpu_capacity_on_unknown_node(st: dict[str, Any], _other: dict[str, Any]) -> None:
    node = copy.deepcopy(st["listing"]["nodes"][0])
    node["metadata"].update(name="somebody-elses-node", uid="u-elsewhere")
    st["listing"]["nodes"].append(node)


# (name, edit(state, other tenant's state), checks that must fail, a phrase the reason must hold)
BROKEN: list[tuple[str, Any, set[str], str]] = [
    ("tcp missing", lambda st, _o: st.update(tcp=None), {"TC-01"}, "not found in the management"),
    ("tcp not ready",
     lambda st, _o: st["tcp"]["status"]["kubernetesResources"]["version"].update(
         status="NotReady"), {"TC-01"}, "is NotReady, not Ready"),
    ("tcp runs another version",
     lambda st, _o: st["tcp"]["status"]["kubernetesResources"]["version"].update(
         version="v1.30.0"), {"TC-01"}, "reports it runs v1.30.0"),
    ("tcp asks for another version",
     lambda st, _o: st["tcp"]["spec"]["kubernetes"].update(version="v1.30.0"), {"TC-01"},
     "asks for v1.30.0"),
    ("tenant API answers another version", lambda st, _o: st.update(api_version="v1.30.0"),
     {"TC-01"}, "answers v1.30.0"),
    ("worker NotReady",
     lambda st, _o: b.ready_condition(st["nodes"][0]).update(
         status="False", reason="KubeletNotReady"), {"TC-02"}, "is NotReady"),
    ("worker kubelet at another version",
     lambda st, _o: st["nodes"][0]["status"]["nodeInfo"].update(kubeletVersion="v1.30.0"),
     {"TC-02"}, "runs kubelet v1.30.0"),
    ("calico-node not ready", lambda st, _o: st["calico"]["status"].update(numberReady=0),
     {"TC-02"}, "calico-node is 0/1 ready"),
    ("logs through the tunnel failed",
     lambda st, _o: st["logs_probes"][0].update(ok=False, error="i/o timeout"), {"TC-02"},
     "could not read the logs"),
    ("konnectivity-agent crash-looping",
     lambda st, _o: _crash(_system_pod(st, "konnectivity-agent")), {"TC-02"},
     "the Konnectivity agent is not running and ready"),
    ("konnectivity-agent evicted and not replaced",
     lambda st, _o: _system_pod(st, "konnectivity-agent").update(
         _finished(_system_pod(st, "konnectivity-agent"), "konnectivity-agent-7c9d6b8f4-q2wxz",
                   "Failed", reason="Evicted")),
     {"TC-02"}, "konnectivity-agent-7c9d6b8f4-q2wxz Failed"),
    ("konnectivity-agent missing",
     lambda st, _o: st.update(system_pods=[
         p for p in st["system_pods"]
         if not p["metadata"]["name"].startswith("konnectivity-agent")]),
     {"TC-02"}, "no konnectivity-agent pod"),
    ("allocatable nvidia.com/gpu zero",
     lambda st, _o: st["nodes"][0]["status"]["allocatable"].update({"nvidia.com/gpu": "0"}),
     {"TC-04"}, "allocatable nvidia.com/gpu=0"),
    ("registered card memory wrong", lambda st, _o: _register(st, devmem=40960), {"TC-04"},
     "has memory 40960"),
    ("registered card unhealthy", lambda st, _o: _register(st, health=False), {"TC-04"},
     "is not healthy"),
    ("hami handshake missing",
     lambda st, _o: st["nodes"][0]["metadata"]["annotations"].pop("hami.io/node-handshake"),
     {"TC-04"}, "no hami.io/node-handshake"),
    ("webhook bypassed",
     lambda st, _o: _run(st, "gpu-share-1")["created"]["spec"].update(
         schedulerName="default-scheduler"), {"TC-03"}, "kept schedulerName default-scheduler"),
    ("placement events of another pod",
     lambda st, _o: _events_of_another_uid(_run(st, "gpu-share-1")), {"TC-03"},
     "no FilteringSucceed / BindingSucceed event"),
    ("share pod not running", lambda st, _o: _share_pending(st), {"TC-05", "TC-06"},
     "gpu-share-3 is Pending"),
    ("share pod crash-looping",
     lambda st, _o: _crash(_run(st, "gpu-share-2")["pod"]), {"TC-05", "TC-06"},
     "gpu-share-2 is Running on"),
    ("share pod replaced by someone else's",
     lambda st, _o: _run(st, "gpu-share-2")["pod"]["metadata"].update(uid="not-verifys"),
     {"TC-05", "TC-06"}, "has uid not-verifys"),
    ("share pod of another verify run",
     lambda st, _o: _run(st, "gpu-share-2")["pod"]["metadata"]["labels"].update(
         {"gpulab.dev/run": "0123456789ab"}), {"TC-05", "TC-06"},
     "belongs to another verify run (gpulab.dev/run='0123456789ab'"),
    ("first share pod of another verify run",
     lambda st, _o: _run(st, "gpu-share-1")["pod"]["metadata"]["labels"].update(
         {"gpulab.dev/run": "0123456789ab"}), {"TC-03", "TC-05", "TC-06"},
     "belongs to another verify run (gpulab.dev/run='0123456789ab'"),
    ("big pod of another verify run",
     lambda st, _o: _run(st, "gpu-mem-big")["pod"]["metadata"]["labels"].update(
         {"gpulab.dev/run": "0123456789ab"}), {"TC-07"},
     "belongs to another verify run (gpulab.dev/run='0123456789ab'"),
    ("per-pod grants only add up", lambda st, _o: _uneven_grants(st), {"TC-05"},
     "gpu-share-1 was granted 30000 MiB"),
    ("fourth pod placed (cores over-committed)",
     lambda st, _o: _run(st, "gpu-share-4")["pod"]["spec"].update(
         nodeName="gpulab-kamaji-hami-tenant-a-worker"), {"TC-06"}, "HAMi placed gpu-share-4"),
    ("memory refusal event of an earlier pod",
     lambda st, _o: _events_of_another_uid(_run(st, "gpu-mem-big")), {"TC-07"},
     "no scheduler left an event"),
    ("another tenant's node listed",
     lambda st, other: st["listing"]["nodes"].append(other["nodes"][0]), {"TC-08"},
     "lists node gpulab-kamaji-hami-tenant-b-worker of tenant-b"),
    ("another tenant accepts the credentials",
     lambda st, _o: st["credential_probes"][0].update(outcome="accepted", detail="200 OK"),
     {"TC-08"}, "accepted tenant-a's admin credentials"),
    ("control-plane component crash-looping", lambda st, _o: _component_crash(st), {"TC-01"},
     "container kube-apiserver of pod tenant-a-6f8c9d7b5-x2k4q is waiting CrashLoopBackOff"),
    ("konnectivity-server container missing",
     lambda st, _o: _without_container(st, "konnectivity-server"), {"TC-01"},
     "has no konnectivity-server container"),
    ("no control-plane pod", lambda st, _o: st.update(tcp_pods=[]), {"TC-01"},
     "no control-plane pod of tenant-a"),
    ("tenant API down",  # what a live run records: the error, and nothing read through the API
     lambda st, _o: st.update(api_version="", api_error="connection refused", nodes=None,
                              system_pods=None, calico=None, logs_probes=None, gpu_pods=None,
                              listing=None, credential_probes=None),
     {f"TC-0{i}" for i in range(1, 9)}, "connection refused"),
    ("worker not a node", lambda st, _o: st.update(nodes=[]), {"TC-02", "TC-04"},
     "worker gpulab-kamaji-hami-tenant-a-worker is not a node of tenant-a"),
    ("calico-node DaemonSet missing", lambda st, _o: st.update(calico=None), {"TC-02"},
     "DaemonSet kube-system/calico-node not found"),
    ("no pod on the worker to read logs from", lambda st, _o: st.update(logs_probes=[]),
     {"TC-02"}, "no running pod on gpulab-kamaji-hami-tenant-a-worker to read logs from"),
    ("register annotation missing",
     lambda st, _o: st["nodes"][0]["metadata"]["annotations"].pop("hami.io/node-nvidia-register"),
     {"TC-04"}, "hami.io/node-nvidia-register"),
    ("register annotation not JSON",
     lambda st, _o: st["nodes"][0]["metadata"]["annotations"].update(
         {"hami.io/node-nvidia-register": "GPU-MOCK-0,10,81920,100,NVIDIA-A100,0,true:"}),
     {"TC-04"}, "is not a JSON list of devices"),
    ("registered card of another model",
     lambda st, _o: _register(st, type="NVIDIA-L4"), {"TC-04"}, "has model 'NVIDIA-L4'"),
    ("registered card split differs", lambda st, _o: _register(st, count=4), {"TC-04"},
     "has split 4, the profile says 10"),
    ("handshake of another kind",
     lambda st, _o: st["nodes"][0]["metadata"]["annotations"].update(
         {"hami.io/node-handshake": "Deleted_2026-11-20 10:14:30"}), {"TC-04"},
     "Deleted_2026-11-20 10:14:30"),
    ("mock plugin registered no memory",
     lambda st, _o: st["nodes"][0]["status"]["allocatable"].update({"nvidia.com/gpumem": "0"}),
     {"TC-04"}, "has not registered the cards"),
    ("node capacity nvidia.com/gpu unset",
     lambda st, _o: (st["nodes"][0]["status"]["capacity"].pop("nvidia.com/gpu", None),
                     st["nodes"][0]["status"]["allocatable"].update({"nvidia.com/gpu": "0"})),
     {"TC-04"}, "capacity nvidia.com/gpu is not set"),
    ("allocatable gpumem of another card",
     lambda st, _o: st["nodes"][0]["status"]["allocatable"].update(
         {"nvidia.com/gpumem": "40960"}), {"TC-04"},
     "allocatable nvidia.com/gpumem=40960 (want 81920)"),
    ("create refused by the API",
     lambda st, _o: _run(st, "gpu-share-1").update(
         created=None, pod=None, events=[], outcome="create-failed",
         create_error='admission webhook "vgpu.hami.io" denied the request'),
     {"TC-03", "TC-05", "TC-06"}, "the tenant API refused gpu-share-1"),
    ("HAMi chose another tenant's worker",
     lambda st, _o: _placement(st, "gpu-share-1", "gpulab-kamaji-hami-tenant-b-worker",
                               "gpulab-kamaji-hami-tenant-b-worker"),
     {"TC-03", "TC-05"}, "gpulab-kamaji-hami-tenant-b-worker"),
    ("bound to another node than HAMi chose",
     lambda st, _o: _run(st, "gpu-share-1")["pod"]["spec"].update(nodeName="somewhere-else"),
     {"TC-03", "TC-05"}, "somewhere-else"),
    ("first share pod bound but never started",
     lambda st, _o: _bound_never_started(st), {"TC-03", "TC-05", "TC-06"},
     "gpu-share-1 is bound to gpulab-kamaji-hami-tenant-a-worker but not running"),
    ("first share pod refused by the kubelet at admission",
     lambda st, _o: _refused_at_admission(st), {"TC-03", "TC-05", "TC-06"},
     "gpu-share-1 failed: UnexpectedAdmissionError"),
    ("share pod without a HAMi allocation", lambda st, _o: _not_placed_by_hami(st, "gpu-share-2"),
     {"TC-05"}, "gpu-share-2 runs without a HAMi allocation"),
    ("share pod on another card than pinned", lambda st, _o: _other_card(st, "gpu-share-3"),
     {"TC-05"}, "gpu-share-3 on GPU-MOCK-1"),
    ("fourth pod refused for another reason",
     lambda st, _o: [e.update(message=e["message"].replace(hw.CARD_INSUFFICIENT_CORE,
                                                            hw.CARD_NOT_HEALTH))
                     for e in _run(st, "gpu-share-4")["events"]], {"TC-06"}, "CardNotHealth"),
    ("big pod placed (memory over-committed)",
     lambda st, _o: _run(st, "gpu-mem-big")["pod"]["spec"].update(
         nodeName="gpulab-kamaji-hami-tenant-a-worker"), {"TC-07"},
     "HAMi placed gpu-mem-big (90000 MiB, 10 cores)"),
    ("another tenant's pod listed", _foreign_pod, {"TC-08"},
     "lists pod gpulab-verify/gpu-share-1 of tenant-b"),
    ("a pod tenant-b's verify created, listed under another name",
     _created_pod_listed_under_another_name, {"TC-08"}, "lists pod default/renamed of tenant-b"),
    ("listing taken without the tenant's own verify pods (after the cleanup)",
     lambda st, _o: st["listing"].update(pods=[
         p for p in st["listing"]["pods"]
         if p["metadata"].get("namespace") != "gpulab-verify"]),
     {"TC-08"}, "listing lacks its own verify pods of this run (gpu-share-1 uid"),
    ("GPU capacity on a node that is not the tenant's", _gpu_capacity_on_unknown_node, {"TC-08"},
     "shows 81920 nvidia.com/gpumem on nodes that are not its own (somebody-elses-node)"),
    ("listing refused",
     lambda st, _o: st.update(listing={"nodes": [], "pods": [], "error": "403 Forbidden"}),
     {"TC-08"}, "refused to list nodes or pods: 403 Forbidden"),
    ("another tenant authenticates the credentials (403)",
     lambda st, _o: st["credential_probes"][0].update(outcome="forbidden",
                                                      detail="403 Forbidden"),
     {"TC-08"}, "authenticated tenant-a's admin credentials and only RBAC refused them"),
]


@pytest.mark.parametrize(("name", "edit", "failing", "phrase"), BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_each_broken_fact_fails_exactly_its_checks(
        name: str, edit: Any, failing: set[str], phrase: str) -> None:
    results = _judge(edit, "tenant-a")
    assert {(check, tenant) for check, tenant, _s, _r in results} == {
        (check, "tenant-a") for check in failing}, results
    assert all(status == "fail" for _c, _t, status, _r in results), results
    assert all(phrase in reason for _c, _t, _s, reason in results), results


def _reorder(st: dict[str, Any], _other: dict[str, Any]) -> None:
    for key in ("nodes", "system_pods", "gpu_pods"):
        st[key].reverse()
    for run in st["gpu_pods"]:
        run["events"].reverse()
    st["listing"]["pods"].reverse()


def _unrelated_pod(st: dict[str, Any], _other: dict[str, Any]) -> None:
    pod = copy.deepcopy(st["system_pods"][0])
    pod["metadata"].update(name="my-app-1", namespace="default", uid="u-my-app",
                           labels={"app": "mine"})
    st["system_pods"].append(pod)
    st["listing"]["pods"].append(
        {"metadata": {"name": "my-app-1", "namespace": "default", "uid": "u-my-app"}})


def _unrelated_event(st: dict[str, Any], _other: dict[str, Any]) -> None:
    run = _run(st, "gpu-share-4")
    event = copy.deepcopy(run["events"][0])
    event["involvedObject"]["uid"] = "an-earlier-run"
    event["message"] = b.FAILED_SCHEDULING.format(
        reasons=hw.gen_reason({hw.CARD_INSUFFICIENT_MEMORY: 1}, 1))
    run["events"].append(event)


def _finished(pod: dict[str, Any], name: str, phase: str, **status: Any) -> dict[str, Any]:
    done = copy.deepcopy(pod)
    done["metadata"].update(name=name, uid=f"u-{name}")
    done["status"] = {"phase": phase, **status, "containerStatuses": [
        {"name": c["name"], "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0 if phase == "Succeeded" else 137,
                                  "reason": "Completed" if phase == "Succeeded" else "Error"}}}
        for c in done["spec"]["containers"]]}
    return done


def _lived_in(st: dict[str, Any], _other: dict[str, Any]) -> None:
    """A tenant as it looks after use: a konnectivity-agent pod the kubelet evicted and its
    ReplicaSet replaced (Kamaji's agent in Deployment mode; an evicted pod stays, Failed, until
    the pod GC), and in `default` a finished and a failed job that held the card (HAMi counts
    neither: pkg/scheduler/scheduler.go:144-153 at v2.10.0)."""
    agent = _system_pod(st, "konnectivity-agent")
    st["system_pods"].append(_finished(
        agent, "konnectivity-agent-7c9d6b8f4-q2wxz", "Failed", reason="Evicted",
        message="The node was low on resource: memory."))
    share = copy.deepcopy(_run(st, "gpu-share-1")["pod"])
    share["metadata"].update(namespace="default", labels={"job-name": "train"})
    for name, phase in (("train-b7kq2", "Succeeded"), ("train-x5wzd", "Failed")):
        pod = _finished(share, name, phase)
        st["listing"]["pods"].append({"metadata": pod["metadata"], "spec": pod["spec"],
                                      "status": pod["status"]})


@pytest.mark.parametrize("edit", [_reorder, _unrelated_pod, _unrelated_event, _lived_in],
                         ids=["reordered lists", "unrelated pod", "unrelated event",
                              "lived-in tenant"])
@pytest.mark.parametrize("tenant", TENANTS)
def test_healthy_variants_still_pass(edit: Any, tenant: str) -> None:
    assert _judge(edit, tenant) == []


def test_the_corpus_covers_every_check() -> None:
    covered = set().union(*(failing for _n, _e, failing, _p in BROKEN))
    assert covered == {f"TC-0{i}" for i in range(1, 9)}


# A recording that lacks the evidence a check needs: that check is `error`, never `pass`.
MISSING = [
    ("nodes", {"TC-02", "TC-04"}),
    ("system_pods", {"TC-02"}),
    ("logs_probes", {"TC-02"}),
    ("gpu_pods", {"TC-03", "TC-05", "TC-06", "TC-07"}),
    ("listing", {"TC-08"}),
    ("credential_probes", {"TC-08"}),
]


@pytest.mark.parametrize(("key", "erroring"), MISSING, ids=[m[0] for m in MISSING])
def test_missing_evidence_is_an_error_never_a_pass(key: str, erroring: set[str]) -> None:
    results = _judge(lambda st, _o: st.pop(key), "tenant-a")
    assert {(check, status) for check, _t, status, _r in results} == {
        (check, "error") for check in erroring}, results
    assert all("in this run or recording" in reason for _c, _t, _s, reason in results), results


# A lab shaped unlike the write-up: three tenants, other models and sizes, two workers for one.
def _three_tenant_profile() -> KamajiHamiProfile:
    profile = load_profile("kamaji-hami").profile
    tenant_c = profile.tenant("tenant-b").model_copy(update={"name": "tenant-c"})
    profile = profile.model_copy(update={"tenants": [*profile.tenants, tenant_c]})
    profile = b.with_gpus(profile, "tenant-a", {
        "model": "NVIDIA-T4", "count": 1, "memory_mib": 15360, "cores": 100, "split": 4,
        "id_prefix": "GPU-MOCK-"})
    return b.with_gpus(profile, "tenant-c", {
        "model": "NVIDIA-H100-NVL", "count": 4, "memory_mib": 95830, "cores": 100, "split": 8,
        "id_prefix": "GPU-MOCK-C"}, workers=2)


def _round_trip(state: LabState, profile: KamajiHamiProfile, tmp_path: Path
                ) -> list[tuple[str, str, str, str]]:
    recording = read_recording(write_recording(tmp_path / "rec", state, profile).parent)
    report = evaluate(recording.state, recording.profile())
    assert {r.tenant for r in report.results} == {"tenant-a", "tenant-b", "tenant-c"}
    assert len(report.results) == 8 * 3
    return [(r.id, r.tenant, r.status, r.reason) for r in report.results if r.status != "pass"]


def test_three_tenants_with_other_gpu_models_pass(tmp_path: Path) -> None:
    profile = _three_tenant_profile()
    assert _round_trip(b.healthy_state(profile), profile, tmp_path) == []


def test_three_tenants_a_wrong_grant_fails_only_its_tenant(tmp_path: Path) -> None:
    profile = _three_tenant_profile()
    spec = profile.tenant("tenant-c")
    wrong = b.placed(spec, "gpu-share-2", memory=1024)  # the pod asked for its share, got 1 GiB
    state = b.run_replace(b.healthy_state(profile), "tenant-c", wrong)
    results = _round_trip(state, profile, tmp_path)
    assert {(check, tenant) for check, tenant, _s, _r in results} == {("TC-05", "tenant-c")}
    assert "gpu-share-2" in results[0][3] and "1024" in results[0][3], results


@pytest.mark.parametrize(("name", "edit"), [(b[0], b[1]) for b in BROKEN],
                         ids=[b[0] for b in BROKEN])
def test_every_failure_says_where_to_look_further(name: str, edit: Any) -> None:
    for check, _tenant, _status, reason in _judge(edit, "tenant-a"):
        assert LOOKS_FURTHER.search(reason), f"{name}: {check} gives no command: {reason}"


def test_the_next_step_is_a_command_for_this_lab_and_tenant() -> None:
    row = next(b for b in BROKEN if b[0] == "HAMi chose another tenant's worker")
    reasons = {check: reason for check, _t, _s, reason in _judge(row[1], "tenant-a")}
    assert reasons["TC-03"].endswith(
        '; to look further: gpulab verify --name kamaji-hami --tc TC-03 --keep, then kubectl '
        '--kubeconfig "$(gpulab kubeconfig tenant-a --name kamaji-hami)" -n gpulab-verify '
        'describe pod gpu-share-1')


# A read that failed: the error is recorded in place of the evidence; (name, fields, verdicts).
READ_FAILED: list[tuple[str, dict[str, Any], dict[str, str], str]] = [
    ("management cluster unreadable",
     {"tcp": None, "tcp_pods": None, "management_error": "connection refused"},
     {"TC-01": "error"}, "could not read the management cluster: connection refused"),
    ("node list refused", {"nodes": None, "nodes_error": "403 Forbidden"},
     {"TC-02": "fail", "TC-04": "fail"}, "the tenant API refused to list nodes: 403 Forbidden"),
    ("system reads refused",
     {"system_pods": None, "calico": None, "hami_device_configmap": None,
      "system_error": "403 Forbidden"},
     {"TC-02": "fail"}, "could not read DaemonSet kube-system/calico-node: 403 Forbidden"),
    ("verify namespace not prepared",
     {"gpu_pods": None, "scenario_error": "could not prepare namespace gpulab-verify: 403"},
     {"TC-03": "error", "TC-05": "error", "TC-06": "error", "TC-07": "error"},
     "verify could not run its GPU pods in tenant-a"),
]


@pytest.mark.parametrize(("name", "fields", "verdicts", "phrase"), READ_FAILED,
                         ids=[r[0] for r in READ_FAILED])
def test_a_failed_read_is_reported_with_its_error(name: str, fields: dict[str, Any],
                                                  verdicts: dict[str, str], phrase: str) -> None:
    results = _judge(lambda st, _o: st.update(fields), "tenant-a")
    assert {check: status for check, _t, status, _r in results} == verdicts, results
    assert all(phrase in reason for _c, _t, _s, reason in results), results
