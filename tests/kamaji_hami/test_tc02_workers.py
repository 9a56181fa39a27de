"""TC-02: workers Ready at the tenant's version, Calico up, logs readable through the tunnel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from gpulab.verify.state import LogsProbe
from tests import kube_wire as kube
from tests.existing.kamaji_machines import joined
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, node_replace, tenant_replace

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

WORKER = b.worker("tenant-a")
TUNNEL_ERROR = (
    "read logs of Pod kube-system/calico-node-j62f8 at https://172.18.255.200:6443: 500 "
    "InternalError: Get \"https://172.18.0.5:10250/containerLogs/kube-system/calico-node-j62f8/"
    "calico-node?tailLines=5\": No agent available"
)


def test_passes_on_the_write_up_lab(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(healthy, profile, "TC-02")
    assert result.status == "pass", result.reason
    assert f"{WORKER} Ready (v1.36.4)" in result.evidence
    assert "calico-node 1/1 ready" in result.evidence
    assert "read through the tunnel" in result.evidence


def test_missing_node(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", nodes=())
    result = judge(state, profile, "TC-02")
    assert result.status == "fail"
    assert f"worker {WORKER} is not a node of tenant-a" in result.reason
    assert "kubeadm join" in result.reason


def test_node_not_ready_points_at_calico(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = node_replace(healthy, "tenant-a", b.node(profile.tenant("tenant-a"), ready=False))
    result = judge(state, profile, "TC-02")
    assert result.status == "fail"
    assert f"node {WORKER} is NotReady (KubeletNotReady" in result.reason
    assert "cni plugin not initialized" in result.reason
    assert "calico-node pod on that node" in result.reason


def test_node_not_ready_without_network_cause_points_at_kubelet(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    bad = b.node(profile.tenant("tenant-a"))
    bad["status"]["conditions"] = [{"type": "Ready", "status": "Unknown",
                                    "reason": "NodeStatusUnknown",
                                    "message": "Kubelet stopped posting node status."}]
    result = judge(node_replace(healthy, "tenant-a", bad), profile, "TC-02")
    assert result.status == "fail"
    assert f"docker exec {WORKER} journalctl -u kubelet" in result.reason


def test_wrong_kubelet_version(healthy: LabState, profile: KamajiHamiProfile) -> None:
    state = node_replace(healthy, "tenant-a",
                         b.node(profile.tenant("tenant-a"), kubelet="v1.35.8"))
    result = judge(state, profile, "TC-02")
    assert result.status == "fail"
    assert "runs kubelet v1.35.8 but tenant-a is v1.36.4" in result.reason
    assert "kindest/node:v1.36.4" in result.reason


@pytest.mark.parametrize(("calico", "expected"), [
    (None, "DaemonSet kube-system/calico-node not found in tenant-a: Calico is not installed"),
    (b.calico(ready=0, desired=1), "calico-node is 0/1 ready"),
    (b.calico(ready=0, desired=0), "calico-node is 0/0 ready"),
])
def test_calico_not_up(healthy: LabState, profile: KamajiHamiProfile,
                       calico: dict[str, Any] | None, expected: str) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", calico=calico), profile, "TC-02")
    assert result.status == "fail"
    assert expected in result.reason


def test_unreadable_calico_is_not_reported_as_missing(healthy: LabState,
                                                      profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", calico=None,
                           system_error="list Pod list in kube-system: 503 ServiceUnavailable")
    result = judge(state, profile, "TC-02")
    assert result.status == "fail"
    assert "could not read DaemonSet kube-system/calico-node" in result.reason
    assert "not installed" not in result.reason


def test_tunnel_broken(healthy: LabState, profile: KamajiHamiProfile) -> None:
    probe = LogsProbe(WORKER, "kube-system", "calico-node-j62f8", ok=False, error=TUNNEL_ERROR)
    result = judge(tenant_replace(healthy, "tenant-a", logs_probes=(probe,)), profile, "TC-02")
    assert result.status == "fail"
    assert "could not read the logs of kube-system/calico-node-j62f8" in result.reason
    assert "No agent available" in result.reason
    assert "konnectivity-agent pods in kube-system [konnectivity-agent-gxqbv Running]" in (
        result.reason)


def test_no_pod_to_read_logs_from(healthy: LabState, profile: KamajiHamiProfile) -> None:
    probe = LogsProbe(WORKER, error="no running pod in kube-system on this node")
    result = judge(tenant_replace(healthy, "tenant-a", logs_probes=(probe,)), profile, "TC-02")
    assert result.status == "fail"
    assert f"no running pod on {WORKER} to read logs from" in result.reason


def test_tenant_api_down_fails_pointing_at_tc01(healthy: LabState,
                                                profile: KamajiHamiProfile) -> None:
    state = tenant_replace(healthy, "tenant-a", nodes=None, logs_probes=None,
                           api_error="connection failed")
    result = judge(state, profile, "TC-02")
    assert result.status == "fail"
    assert "did not answer" in result.reason
    assert "see TC-01" in result.reason


@pytest.mark.parametrize("field", ["nodes", "logs_probes"])
def test_unobserved_is_an_error(healthy: LabState, profile: KamajiHamiProfile,
                                field: str) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", **{field: None}), profile, "TC-02")
    assert result.status == "error"
    assert "was not observed" in result.reason


def test_second_worker_is_checked_too(healthy: LabState, profile: KamajiHamiProfile) -> None:
    two = b.with_gpus(profile, "tenant-a", {"model": "NVIDIA-A100-SXM4-80GB",
                                            "memory_mib": 81920}, workers=2)
    result = judge(healthy, two, "TC-02")
    assert result.status == "fail"
    assert f"worker {b.worker('tenant-a', 1)} is not a node of tenant-a" in result.reason


# --------------------------------------------------------------------------- what the user reads (#24)

CALICO = "calico-node 1/1 ready"
TUNNEL = f"logs of kube-system/calico-node-j62f8 on {WORKER} read through the tunnel"
HEALTHY_EVIDENCE = f"{WORKER} Ready (v1.36.4); {CALICO}; {TUNNEL}"


def _not_ready(profile: KamajiHamiProfile, message: str) -> dict[str, Any]:
    node = b.node(profile.tenant("tenant-a"))
    node["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                     "reason": "KubeletNotReady", "message": message}]
    return node


def test_pass_evidence_is_each_worker_calico_and_the_tunnel(healthy: LabState,
                                                            profile: KamajiHamiProfile) -> None:
    assert judge(healthy, profile, "TC-02").evidence == HEALTHY_EVIDENCE


# The kubelet's words for containerd v2.3.4's CRI status before any CNI config (kube_wire).
@pytest.mark.parametrize("message", [kube.network_not_ready()])
def test_a_network_cause_points_at_calico(healthy: LabState, profile: KamajiHamiProfile,
                                          message: str) -> None:
    result = judge(node_replace(healthy, "tenant-a", _not_ready(profile, message)), profile,
                   "TC-02")
    assert result.status == "fail"
    assert result.reason.endswith(
        "): the pod network is not up on it: check the calico-node pod on that node in "
        "kube-system")
    assert result.evidence == f"{CALICO}; {TUNNEL}"  # a NotReady worker is not evidence


def test_a_node_without_kubelet_version_is_ready_at_an_unknown_version(
        healthy: LabState, profile: KamajiHamiProfile) -> None:
    node = b.node(profile.tenant("tenant-a"))
    del node["status"]["nodeInfo"]["kubeletVersion"]
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-02")
    assert result.status == "pass", result.reason
    assert result.evidence.startswith(f"{WORKER} Ready (version unknown); ")


def test_a_missing_first_worker_does_not_hide_the_second(healthy: LabState,
                                                         profile: KamajiHamiProfile) -> None:
    two = b.with_gpus(profile, "tenant-a", {"model": "NVIDIA-A100-SXM4-80GB",
                                            "memory_mib": 81920}, workers=2)
    second = b.worker("tenant-a", 1)
    probe = LogsProbe(second, "kube-system", "calico-node-wkgsm", ok=True)
    state = tenant_replace(healthy, "tenant-a", nodes=(b.node(two.tenant("tenant-a"), 1),),
                           logs_probes=(probe,))
    result = judge(state, two, "TC-02")
    assert result.status == "fail"
    assert result.reason.startswith(f"worker {WORKER} is not a node of tenant-a")
    assert result.evidence == (f"{second} Ready (v1.36.4); {CALICO}; logs of "
                               f"kube-system/calico-node-wkgsm on {second} read through the tunnel")


def test_calico_not_ready_lists_its_pods(healthy: LabState, profile: KamajiHamiProfile) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", calico=b.calico(ready=0, desired=1)),
                   profile, "TC-02")
    assert result.reason.endswith("in tenant-a; pods: [calico-node-j62f8 Running]")
    assert result.evidence == f"{WORKER} Ready (v1.36.4); {TUNNEL}"


def test_no_pod_to_read_logs_from_says_why(healthy: LabState,
                                           profile: KamajiHamiProfile) -> None:
    probe = LogsProbe(WORKER, error="no running pod in kube-system on this node")
    result = judge(tenant_replace(healthy, "tenant-a", logs_probes=(probe,)), profile, "TC-02")
    assert result.reason == (f"no running pod on {WORKER} to read logs from, so the tunnel to it "
                             f"is unproven (no running pod in kube-system on this node)")
    result = judge(tenant_replace(healthy, "tenant-a", logs_probes=()), profile, "TC-02")
    assert result.reason == (f"no running pod on {WORKER} to read logs from, so the tunnel to it "
                             f"is unproven")


def test_a_crashing_agent_says_which_logs_to_read(healthy: LabState,
                                                 profile: KamajiHamiProfile) -> None:
    st = healthy.tenants["tenant-a"]
    system = []
    for pod in st.system_pods or ():
        name = pod["metadata"]["name"]
        system.append(pod if not name.startswith("konnectivity-agent") else b.pod(
            name, "kube-system", WORKER, ["agent"], tenant="tenant-a", phase="Running",
            statuses=[b.waiting("agent", "CrashLoopBackOff", 5)]))
    result = judge(tenant_replace(healthy, "tenant-a", system_pods=tuple(system)), profile,
                   "TC-02")
    assert result.status == "fail"
    assert result.reason.endswith(
        ": the Konnectivity agent is not running and ready; kubectl -n kube-system logs "
        "konnectivity-agent-gxqbv --previous in tenant-a")
    assert result.reason.startswith("konnectivity-agent-gxqbv Running (agent: waiting")


@pytest.mark.parametrize(("field", "what"), [
    ("logs_probes", "the logs probe (tunnel)"),
    ("system_pods", "the kube-system pods (konnectivity agents)"),
])
def test_unobserved_names_what(healthy: LabState, profile: KamajiHamiProfile, field: str,
                               what: str) -> None:
    result = judge(tenant_replace(healthy, "tenant-a", **{field: None}), profile, "TC-02")
    assert result.status == "error"
    assert result.reason == f"{what} of tenant-a was not observed in this run or recording"


# --------------------------------------------------------------------------- joined machines


def _machines(profile: KamajiHamiProfile, *nodes: dict[str, Any]) -> LabState:
    """tenant-a's workers are the joined machines `nodes`, each with calico-node's logs read
    through the tunnel as on the kind worker."""
    from dataclasses import replace

    state = b.healthy_state(profile)
    probe = (state.tenants["tenant-a"].logs_probes or ())[0]
    probes = tuple(replace(probe, node=n["metadata"]["name"]) for n in nodes)
    return b.tenant_replace(state, "tenant-a", workers="machines", nodes=nodes,
                            logs_probes=probes)


def _tunnel(node: str) -> str:
    return f"logs of kube-system/calico-node-j62f8 on {node} read through the tunnel"


def test_a_joined_machine_may_run_any_patch_of_the_tenants_minor(
        profile: KamajiHamiProfile) -> None:
    """tenant-a is v1.36.4: `gpulab join` asks kubelet v1.36.x, so v1.36.1 fits, v1.35.9 and
    v1.3.6 (same first digits) do not."""
    result = judge(_machines(profile, joined("gpu-7", kubelet="v1.36.1")), profile, "TC-02")
    assert result.status == "pass", result.reason
    assert result.evidence == f"gpu-7 Ready (v1.36.1); {CALICO}; {_tunnel('gpu-7')}"
    for other in ("v1.35.9", "v1.3.6"):
        machines = _machines(profile, joined("gpu-7", kubelet="v1.36.1"),
                             joined("gpu-8", kubelet=other))
        result = judge(machines, profile, "TC-02")
        assert (result.status, result.reason) == (
            "fail", f"node gpu-8 runs kubelet {other} but tenant-a is v1.36.4: install kubelet "
            "and kubeadm v1.36.x on that machine (gpulab join tenant-a lists what it needs)")
        assert result.evidence == (f"gpu-7 Ready (v1.36.1); {CALICO}; {_tunnel('gpu-7')}; "
                                   f"{_tunnel('gpu-8')}")


def test_a_joined_machine_not_ready_points_at_its_own_kubelet(
        profile: KamajiHamiProfile) -> None:
    node = joined("gpu-7", kubelet="v1.36.4")
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown",
                                     "reason": "NodeStatusUnknown",
                                     "message": "Kubelet stopped posting node status."}]
    result = judge(_machines(profile, node), profile, "TC-02")
    assert (result.status, result.reason) == (
        "fail", "node gpu-7 is NotReady (NodeStatusUnknown Kubelet stopped posting node "
        "status.): check its kubelet on the machine: `journalctl -u kubelet`")
    node["status"]["conditions"][0]["message"] = kube.network_not_ready()
    result = judge(_machines(profile, node), profile, "TC-02")
    assert result.reason.endswith("): the pod network is not up on it: check the calico-node "
                                  "pod on that node in kube-system"), result.reason


def test_a_kubelet_version_with_text_before_its_digits_is_not_the_tenants_minor(
        profile: KamajiHamiProfile) -> None:
    """Only a leading "v" is dropped before the minor is compared: "X1.36.1" is no v1.36.x."""
    result = judge(_machines(profile, joined("gpu-7", kubelet="X1.36.1")), profile, "TC-02")
    assert (result.status, result.reason) == (
        "fail", "node gpu-7 runs kubelet X1.36.1 but tenant-a is v1.36.4: install kubelet and "
        "kubeadm v1.36.x on that machine (gpulab join tenant-a lists what it needs)")


def test_a_crashing_agent_is_named_whole_in_the_logs_hint(healthy: LabState,
                                                          profile: KamajiHamiProfile) -> None:
    """The pod is named up to the first space of 'name Phase (...)', not the first blank: a
    name read from a recording may hold a tab."""
    st = healthy.tenants["tenant-a"]
    system = [pod for pod in st.system_pods or ()
              if not pod["metadata"]["name"].startswith("konnectivity-agent")]
    system.append(b.pod("konnectivity-agent-a\tb", "kube-system", WORKER, ["agent"],
                        tenant="tenant-a", phase="Running",
                        statuses=[b.waiting("agent", "CrashLoopBackOff", 5)]))
    result = judge(tenant_replace(healthy, "tenant-a", system_pods=tuple(system)), profile,
                   "TC-02")
    assert result.reason.endswith(
        "kubectl -n kube-system logs konnectivity-agent-a\tb --previous in tenant-a")
