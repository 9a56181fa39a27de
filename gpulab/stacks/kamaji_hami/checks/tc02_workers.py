"""TC-02 workers: the profile's workers are Ready nodes at the tenant's version, Calico is up, and
the tunnel works (the tenant API reads the logs of a pod on each worker). On machines that joined
the tenant (an existing cluster's `cluster.workers: machines`) the workers are the nodes it lists,
at the tenant's minor; none yet is `skip` (unknown), not a failure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import (
    Ctx,
    pods_not_serving,
    prepare,
    system_pods_summary,
)
from gpulab.stacks.kamaji_hami.checks.tc01_control_planes import normalize_version
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState

__all__ = ["ID", "check"]

ID = "TC-02"


def _minor(version: str) -> str:
    return ".".join(normalize_version(version).lstrip("v").split(".")[:2])


def _kubelet_problem(ctx: Ctx, worker: str, kubelet: str) -> str:
    """Why the worker's kubelet version does not fit the tenant ('' when it does): the profile's
    kindest/node image is the tenant's exact version; a joined machine's kubelet must be at the
    tenant's minor, as `gpulab join` asks."""
    want = ctx.spec.kubernetes_version
    if not kubelet:
        return ""
    if ctx.machines:
        if _minor(kubelet) == _minor(want):
            return ""
        return (f"node {worker} runs kubelet {kubelet} but {ctx.tenant} is {want}: install "
                f"kubelet and kubeadm v{_minor(want)}.x on that machine (gpulab join "
                f"{ctx.tenant} lists what it needs)")
    if normalize_version(kubelet) == want:
        return ""
    return (f"node {worker} runs kubelet {kubelet} but {ctx.tenant} is {want}: the worker "
            f"image must be kindest/node:{want} (workers.image in the profile)")


def _node_problems(ctx: Ctx) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    evidence: list[str] = []
    journal = "on the machine: `journalctl -u kubelet`" if ctx.machines else ""
    for worker in ctx.workers():
        node = ctx.node(worker)
        if node is None:
            problems.append(
                f"worker {worker} is not a node of {ctx.tenant}: its kubeadm join never "
                f"completed or the node was deleted; `docker exec {worker} journalctl -u kubelet` "
                f"shows why, `gpulab up` joins it again"
            )
            continue
        ready, why = o.node_ready(node)
        kubelet = str(((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""))
        if not ready:
            # The kubelet words a pod-network NotReady as "container runtime network not
            # ready: ..." (kubernetes pkg/kubelet/kubelet.go updateRuntimeUp, whatever the
            # runtime's CNI error: tests/kube_wire.py network_not_ready).
            if "network" in why.lower():
                hint = ("the pod network is not up on it: check the calico-node pod on that node "
                        "in kube-system")
            else:
                hint = (f"check its kubelet {journal}" if journal else
                        f"check its kubelet: `docker exec {worker} journalctl -u kubelet`")
            problems.append(f"node {worker} is NotReady ({why}): {hint}")
        version = _kubelet_problem(ctx, worker, kubelet)
        if version:
            problems.append(version)
        if ready and not version:
            evidence.append(f"{worker} Ready ({kubelet or 'version unknown'})")
    return problems, evidence


def _calico(ctx: Ctx) -> tuple[list[str], list[str]]:
    ds = ctx.st.calico
    if ds is None and ctx.st.system_error:
        return [f"could not read DaemonSet kube-system/calico-node: {ctx.st.system_error}"], []
    if ds is None:
        return [
            f"DaemonSet kube-system/calico-node not found in {ctx.tenant}: Calico is not "
            f"installed; `gpulab up` installs it"
        ], []
    status = ds.get("status") or {}
    want = int(status.get("desiredNumberScheduled") or 0)
    ready = int(status.get("numberReady") or 0)
    if want == 0 or ready < want:
        return [
            f"calico-node is {ready}/{want} ready: `kubectl -n kube-system describe ds "
            f"calico-node` in {ctx.tenant}; pods: [{system_pods_summary(ctx.st, 'calico-node')}]"
        ], []
    return [], [f"calico-node {ready}/{want} ready"]


def _tunnel(ctx: Ctx) -> tuple[list[str], list[str]]:
    probes = {p.node: p for p in ctx.st.logs_probes or ()}
    problems: list[str] = []
    evidence: list[str] = []
    agents = system_pods_summary(ctx.st, "konnectivity-agent")
    for worker in ctx.workers():
        if ctx.node(worker) is None:
            continue  # already reported
        probe = probes.get(worker)
        if probe is None or not probe.pod:
            problems.append(
                f"no running pod on {worker} to read logs from, so the tunnel to it is unproven"
                + (f" ({probe.error})" if probe and probe.error else "")
            )
        elif not probe.ok:
            problems.append(
                f"the tenant API could not read the logs of {probe.namespace}/{probe.pod} on "
                f"{worker}: {probe.error}. The API server reaches kubelets only through "
                f"Konnectivity: check konnectivity-agent pods in kube-system [{agents}] and the "
                f"konnectivity-server container of the control-plane pod (TC-01)"
            )
        else:
            evidence.append(f"logs of {probe.namespace}/{probe.pod} on {worker} read through "
                            f"the tunnel")
    if ctx.st.system_pods is not None:
        problems += _agent_problems(ctx)
    return problems, evidence


def _agent_problems(ctx: Ctx) -> list[str]:
    """Kamaji's Konnectivity addon runs konnectivity-agent in the tenant's kube-system; a read that
    got through does not prove an agent that is crash-looping or not ready will carry the next
    call (the webhook's, TC-03)."""
    broken = pods_not_serving(ctx.st, "konnectivity-agent")
    if broken is None:
        return [f"no konnectivity-agent pod in kube-system of {ctx.tenant}: the hosted API server "
                f"has no tunnel to the workers; check the TenantControlPlane's "
                f"spec.addons.konnectivity (TC-01)"]
    return [f"{pod}: the Konnectivity agent is not running and ready; kubectl -n kube-system "
            f"logs {pod.split(' ', 1)[0]} --previous in {ctx.tenant}" for pod in broken]


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """Every profile worker is a Ready node with the tenant's kubelet version, calico-node is
    ready, and logs of a pod on every worker can be read through the tenant API."""
    ctx = prepare(lab, profile, tenant, ID)
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.nodes is None:
        return ctx.nodes_missing()
    if (skip := ctx.no_machine()) is not None:
        return skip
    problems, evidence = _node_problems(ctx)
    parts = (_calico, _tunnel) if ctx.st.logs_probes is not None else (_calico,)
    for part in parts:
        more, seen = part(ctx)
        problems += more
        evidence += seen
    if not problems and ctx.st.logs_probes is None:
        return ctx.unobserved("the logs probe (tunnel)")
    if not problems and ctx.st.system_pods is None:  # a failed read is already a problem
        return ctx.unobserved("the kube-system pods (konnectivity agents)")
    if problems:
        return ctx.failed(summarize_problems(problems), "; ".join(evidence))
    return ctx.passed("; ".join(evidence))
