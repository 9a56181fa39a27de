"""TC-01 control planes: the TenantControlPlane is Ready, its four components run, its API answers
at the profile's version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.state import JsonObj

__all__ = ["COMPONENTS", "ID", "TCP_LABEL", "check", "normalize_version"]

ID = "TC-01"
TCP_LABEL = "kamaji.clastix.io/name"  # Kamaji's label on the control-plane Deployment's pods
COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "konnectivity-server")

_COMPONENT_HINTS = {
    "konnectivity-server": (
        "without it the tenant API server cannot reach webhooks, logs or exec on the workers "
        "(GPU pods silently bypass HAMi); the TenantControlPlane needs spec.addons.konnectivity, "
        "which gpulab renders: re-apply it with `gpulab up`"
    ),
    "kube-apiserver": "the tenant has no API server",
    "kube-scheduler": "pods of the tenant cannot be scheduled",
    "kube-controller-manager": "the tenant's controllers (DaemonSets, ReplicaSets) do not run",
}


def normalize_version(version: str) -> str:
    """'v1.36.4+k3s1' → 'v1.36.4' (build metadata is not part of the version compared)."""
    text = version.strip()
    if text and not text.startswith("v"):
        text = "v" + text
    return text.split("+", 1)[0]


def _pod_problems(pod: JsonObj, namespace: str) -> list[str]:
    pod_name = o.name(pod)
    # a missing component is found apart from the states' text (a state may be keyed anything)
    problems = [f"pod {pod_name} has no {container} container: {_COMPONENT_HINTS[container]}"
                for container in o.missing_containers(pod, COMPONENTS)]
    for problem in o.container_problems(pod):
        container, _, state = problem.partition(": ")
        problems.append(
            f"container {container} of pod {pod_name} is {state}: "
            f"kubectl -n {namespace} logs {pod_name} -c {container} --previous"
        )
    return problems


def _control_plane(ctx: Ctx) -> tuple[list[str], list[str], bool]:
    """(problems, evidence, fatal) about the TCP object and its pods."""
    st, spec = ctx.st, ctx.spec
    ns = ctx.profile.components.kamaji.tenant_namespace
    tcp = st.tcp
    if tcp is None:
        return [
            f"TenantControlPlane {ns}/{spec.name} not found in the management cluster: it was "
            f"never created or was deleted; run `gpulab up`"
        ], [], True
    status = tcp.get("status") or {}
    version = (status.get("kubernetesResources") or {}).get("version") or {}
    state = str(version.get("status") or "Unknown")
    endpoint = str(status.get("controlPlaneEndpoint") or "no endpoint")
    problems: list[str] = []
    evidence = [f"TenantControlPlane {ns}/{spec.name} {state} ({endpoint})"]
    if state != "Ready":
        problems.append(
            f"TenantControlPlane {ns}/{spec.name} is {state}, not Ready: Kamaji has not finished "
            f"reconciling it; `kubectl -n {ns} describe tcp {spec.name}` and the kamaji "
            f"controller logs in {ctx.profile.components.kamaji.namespace} say why"
        )
    wanted = ((tcp.get("spec") or {}).get("kubernetes") or {}).get("version")
    if wanted and normalize_version(str(wanted)) != spec.kubernetes_version:
        problems.append(
            f"TenantControlPlane asks for {wanted} but the profile wants "
            f"{spec.kubernetes_version}: the lab was built from another profile; `gpulab down` "
            f"and `gpulab up` it again"
        )
    # "Version is the running Kubernetes version of the Tenant Control Plane" (Kamaji CRD,
    # status.kubernetesResources.version.version): Ready at another version is not this lab.
    running = version.get("version")
    if running and normalize_version(str(running)) != spec.kubernetes_version:
        problems.append(
            f"TenantControlPlane {ns}/{spec.name} reports it runs {running} "
            f"(status.kubernetesResources.version.version) but the profile wants "
            f"{spec.kubernetes_version}: an upgrade has not finished or the lab was built from "
            f"another profile; `kubectl -n {ns} get tcp {spec.name} -o yaml`"
        )
    pods = [p for p in st.tcp_pods or () if not o.metadata(p).get("deletionTimestamp")]
    if st.tcp_pods is None:
        problems.append(f"the control-plane pods in {ns} were not observed")
        return problems, evidence, False
    if not pods:
        problems.append(
            f"no control-plane pod of {spec.name} in namespace {ns}: Kamaji's Deployment "
            f"{spec.name} has no pods; `kubectl -n {ns} describe deployment {spec.name}`"
        )
        return problems, evidence, False
    healthy = [p for p in pods if not _pod_problems(p, ns)]
    replicas = spec.control_plane.replicas
    if len(healthy) < replicas:
        for pod in pods:
            problems.extend(_pod_problems(pod, ns))
        if not problems:
            problems.append(f"{len(healthy)} of {replicas} control-plane pods healthy")
    for pod in healthy:
        evidence.append(f"pod {o.name(pod)} running {', '.join(COMPONENTS)}")
    return problems, evidence, False


def _api(ctx: Ctx) -> tuple[list[str], list[str]]:
    st, spec = ctx.st, ctx.spec
    if st.api_error:
        endpoint = str(((st.tcp or {}).get("status") or {}).get("controlPlaneEndpoint") or "")
        at = f" at {endpoint}" if endpoint else ""
        return [
            f"the tenant API{at} did not answer: {st.api_error}; check the LoadBalancer address "
            f"(MetalLB) in the TCP's status.controlPlaneEndpoint and the kube-apiserver "
            f"container's logs"
        ], []
    if not st.api_version:
        return [f"the tenant API version of {spec.name} was not observed"], []
    got = normalize_version(st.api_version)
    if got != spec.kubernetes_version:
        return [
            f"the tenant API answers {st.api_version} but the profile wants "
            f"{spec.kubernetes_version}: the control plane runs another version; set "
            f"spec.kubernetes.version of the TenantControlPlane (Kamaji upgrades one minor at a "
            f"time) or rebuild the lab"
        ], []
    return [], [f"API answers {st.api_version}"]


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """Ready TCP + kube-apiserver, kube-scheduler, kube-controller-manager and konnectivity-server
    running in its pod(s) + the tenant API answering at the profile's Kubernetes version."""
    ctx = prepare(lab, profile, tenant, ID)
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.management_error:
        return ctx.error(f"could not read the management cluster: {ctx.st.management_error}")
    problems, evidence, fatal = _control_plane(ctx)
    if not fatal:
        api_problems, api_evidence = _api(ctx)
        problems += api_problems
        evidence += api_evidence
    if problems:
        return ctx.failed(summarize_problems(problems), "; ".join(evidence))
    return ctx.passed("; ".join(evidence))
