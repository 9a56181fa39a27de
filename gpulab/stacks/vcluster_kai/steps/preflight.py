"""An existing cluster's preflight: what the plan creates there and why the lab cannot go
in; and `gpulab join`, which vcluster-kai has no use for.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.existing import KaiFound, read_installed
from gpulab.stacks.vcluster_kai.profile import KUBELET_PORT_OFFSET
from gpulab.stacks.vcluster_kai.steps.existing_cluster import (
    FAKE_GPU_CLUSTER_OBJECTS,
    existing_namespaces,
    existing_pod_security,
    fake_gpu_nodes,
    queue_names,
)

if TYPE_CHECKING:
    from gpulab.providers.base import ExistingNeeds, GpuNode
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile


def existing_needs(profile: VclusterKaiProfile, lab: str, owned_before: Any
                   ) -> ExistingNeeds:
    """What the plan creates on an existing cluster, for the provider's read-only preflight:
    namespaces and queues that must not exist yet, and each verb and resource the user must be
    allowed (KAI's own needs only matter when it is installed: namespaces are asked for both)."""
    from gpulab.providers.base import Access, ExistingNeeds, chart_cluster_access, release_access

    kai = profile.components.kai_scheduler
    namespaces = existing_namespaces(profile, False)
    access = [Access(verb, "", "namespaces") for verb in ("create", "delete")]
    access += [Access(verb, "scheduling.run.ai", "queues") for verb in ("create", "delete")]
    access += chart_cluster_access()
    for namespace in (kai.namespace, *(t.namespace for t in profile.teams)):
        access += release_access(namespace)
    owned = tuple(owned_before or ())
    fake = fake_gpu_nodes(profile)
    absent: tuple[tuple[str, str, str], ...] = ()
    if fake:
        fgo = profile.components.fake_gpu_operator
        access += [Access(verb, "", "nodes") for verb in ("get", "patch")]
        access += [Access("create", "node.k8s.io", "runtimeclasses")]
        access += release_access(fgo.namespace, (
            ("", "services"), ("", "serviceaccounts"), ("", "configmaps"),
            ("apps", "deployments"), ("apps", "daemonsets")))
        installed = any(o.get("type") == "helm-release" and o.get("namespace") == fgo.namespace
                        for o in owned)  # this lab's own, from an earlier `up`
        absent = () if installed else FAKE_GPU_CLUSTER_OBJECTS
    return ExistingNeeds(namespaces=namespaces, queues=queue_names(profile),
                         access=tuple(access), owned_before=owned, fake_nodes=fake,
                         read=partial(read_installed, owned_before=owned),
                         fake_labels=tuple(kr.gpu_node_labels(profile).items()), absent=absent,
                         pod_security=existing_pod_security(profile, False))


def _fake_node_problems(facts: Any) -> list[str]:
    """Why fake GPUs cannot go on the named nodes (cluster.fake_gpu_nodes), one line each."""
    problems: list[str] = []
    for node in facts.fake_nodes:
        if not node.found:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) is not in the cluster: "
                            "name nodes `kubectl get nodes` lists")
        elif node.gpus:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) already advertises "
                            f"{kr.GPU_RESOURCE} {node.gpus}: fake GPUs go only on nodes "
                            "without GPUs (leave it out; its GPUs are used as they are)")
        elif node.conflicts:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) has label(s) "
                            f"{', '.join(node.conflicts)} that gpulab would overwrite: remove "
                            "them, or name another node")
    for found in facts.objects_found:
        problems.append(f"{found} already exists (fake-gpu-operator's chart creates it; is "
                        "fake-gpu-operator or the GPU Operator installed?): gpulab does not "
                        "adopt it")
    return problems


def _fraction_refusal(node: GpuNode) -> str:
    """Why KAI v0.16.8 places no GPU-fraction pod (the lab's) on `node` ('' : it may): not
    ready or cordoned (pkg/scheduler/scheduler_util/scheduler_utils.go:12-45, as
    gpulab.cluster.rules.kai_not_ready reads it), tainted NoExecute (its GPU reservation pods
    would be evicted), or MIG-enabled with MIG strategy `single`
    (only whole GPUs) or `mixed` (only MIG devices): pkg/scheduler/api/node_info/node_info.go:
    336-344 at v0.16.8."""
    if node.not_ready:
        return ", ".join(node.not_ready)
    evicting = [f"{k}={v}:{e}" if v else f"{k}:{e}" for k, v, e in node.taints
                if e == "NoExecute"]
    if evicting:
        # KAI's binder puts each GPU-fraction pod's reservation pod on the node by name, with
        # no tolerations (pkg/binder/binding/resourcereservation/resource_reservation.go:
        # 527-588 at v0.16.8): a NoExecute taint evicts it (Kubernetes taint-based eviction)
        return (f"taint {', '.join(evicting)} evicts KAI's GPU reservation pods, which "
                "tolerate nothing")
    if node.mig_enabled and node.mig_strategy == "single":
        return "MIG strategy single: KAI puts only whole-GPU pods there"
    if node.mig_enabled and node.mig_strategy == "mixed":
        return "MIG strategy mixed: KAI puts only pods asking for MIG devices there"
    return ""


def _gpu_node_problems(nodes: tuple[GpuNode, ...]) -> list[str]:
    """One line when no GPU node can take the lab's GPU-fraction pods, the nodes grouped by
    why, then what to do; one of several that cannot is fine (KAI places on the others)."""
    why = {n.name: _fraction_refusal(n) for n in nodes}
    if not all(why.values()):
        return []
    grouped: dict[str, list[str]] = {}
    for name, text in why.items():
        grouped.setdefault(text, []).append(name)
    listed = "; ".join(f"{', '.join(names)}: {text}" for text, names in grouped.items())
    fixes = []
    if any(n.not_ready for n in nodes):
        fixes.append("`kubectl uncordon NODE`, or wait for it to be Ready")
    if any(n.mig_enabled and not n.not_ready for n in nodes):
        fixes.append("turn MIG off on a node (the GPU Operator's nvidia.com/mig.config="
                     "all-disabled)")
    if any(e == "NoExecute" for n in nodes for _k, _v, e in n.taints):
        fixes.append("make the GPU nodes' NoExecute taints NoSchedule (the lab's pods then "
                     "tolerate them)")
    fixes.append("put fake GPUs on a node of yours: --fake-gpu-node NODE")
    return [f"no GPU node takes GPU-fraction pods ({listed}): {'; or '.join(fixes)}"]


def _runtime_class_problems(facts: Any, kai: KaiFound | None) -> list[str]:
    """The RuntimeClass KAI's admission sets on every GPU-fraction pod must exist, or the API
    server refuses each one. gpulab installs KAI with one that exists, or with none
    (existing.fraction_runtime_class); a KAI found installed is not changed, so its class must
    exist. Unread RuntimeClasses are unknown, not absent: refused."""
    classes = facts.runtime_classes
    needed = kai.runtime_class if kai is not None else None  # None: gpulab chooses
    if kai is not None and not needed:
        return []  # the KAI found sets none
    if facts.fake_nodes and needed in (None, "nvidia"):
        return []  # fake-gpu-operator's chart creates RuntimeClass nvidia
    if classes is None:
        return [f"whether RuntimeClass {needed or 'nvidia'} exists is unknown, because "
                f"{facts.runtime_classes_why} (KAI sets a RuntimeClass on every GPU-fraction "
                "pod): allow list on runtimeclasses.node.k8s.io"]
    if kai is not None and needed not in {name for name, _handler in classes}:
        return [f"KAI Scheduler in {kai.namespace} sets RuntimeClass {needed} on "
                "GPU-fraction pods (Config kai-config spec.admission.gpuFractionRuntimeClassName) "
                "and the cluster has no such RuntimeClass: the API server would refuse each "
                f"pod; create RuntimeClass {needed}, or helm upgrade KAI with "
                "--set-string admission.gpuFractionRuntimeClassName= yourself"]
    return []


def _node_port_problems(profile: VclusterKaiProfile, facts: Any) -> list[str]:
    """Each fixed NodePort of a team's vCluster (NodePort exposure) that a Service of the
    cluster holds already: its install would fail half-way ("provided port is already
    allocated")."""
    if facts.expose != "NodePort":
        return []
    held = dict(facts.node_ports)
    problems = []
    for team in profile.teams:
        for port, what in ((team.api_node_port, "API"),
                           (team.kubelet_node_port, f"kubelet port, api_node_port - "
                                                    f"{KUBELET_PORT_OFFSET}")):
            if port in held:
                problems.append(f"NodePort {port} (the {what} of team {team.name}'s vCluster) "
                                f"is held by Service {held[port]}: give the team another "
                                "api_node_port, or set cluster.expose: port-forward")
    return problems


def existing_problems(profile: VclusterKaiProfile, facts: Any) -> list[str]:
    """Why the lab cannot go into this cluster, one line each ([]: it can)."""
    problems: list[str] = []
    if facts.minor is None:
        problems.append(f"Kubernetes version {facts.version} is not one gpulab can read")
    else:
        problems += profile.host_minor_problems(facts.minor)
    if facts.default_storage_class is None:
        problems.append("no default StorageClass (each vCluster keeps its data on a "
                        "PersistentVolumeClaim): mark one with the annotation "
                        "storageclass.kubernetes.io/is-default-class=true")
    if not facts.gpu_nodes and not facts.fake_nodes:
        problems.append(f"no node advertises {kr.GPU_RESOURCE}: install the NVIDIA GPU "
                        "Operator or device plugin, or put fake GPUs on a node of yours: "
                        "--fake-gpu-node NODE (the profile's cluster.fake_gpu_nodes)")
    elif not facts.fake_nodes:
        problems += _gpu_node_problems(facts.gpu_nodes)
    problems += _fake_node_problems(facts)
    kai: KaiFound | None = facts.stack  # the stack's own read (read_installed)
    problems += _runtime_class_problems(facts, kai)
    problems += _node_port_problems(profile, facts)
    pinned = profile.components.kai_scheduler.chart.version
    if kai is not None:
        line = ".".join(pinned.lstrip("v").split(".")[:2])
        if ".".join(kai.version.lstrip("v").split(".")[:2]) != line:
            problems.append(f"KAI Scheduler {kai.version or '(version unreadable)'} is installed "
                            f"in {kai.namespace}; this profile pins {pinned} (v{line}.x is "
                            "reused; gpulab never upgrades or removes it)")
        elif kai.gpu_sharing is not True:
            problems.append(f"KAI Scheduler {kai.version} in {kai.namespace} runs without GPU "
                            "sharing (Config kai-config spec.admission.gpuSharing is "
                            f"{kai.gpu_sharing}); the lab needs it: helm upgrade it with "
                            "--set global.gpuSharing=true yourself (gpulab never changes it)")
    needed = set(existing_namespaces(profile, kai is not None))
    fgo = profile.components.fake_gpu_operator.namespace if fake_gpu_nodes(profile) else None
    for namespace in facts.namespaces_found:
        if namespace == fgo:
            problems.append(f"namespace {namespace} already exists; gpulab does not adopt it "
                            "(fake-gpu-operator goes there: set components.fake_gpu_operator."
                            "namespace to another)")
        elif namespace in needed:
            problems.append(f"namespace {namespace} already exists; gpulab does not adopt it "
                            "(delete it, or rename the team)")
    for queue in facts.queues_found:
        problems.append(f"queue {queue} already exists; gpulab does not adopt it (rename "
                        "org_queue or the team's queue)")
    if facts.expose == "NodePort" and not facts.node_address:
        problems.append("no node address to reach the vClusters' NodePorts: set "
                        "cluster.node_address")
    if facts.denied:
        more = f" (+{len(facts.denied) - 1} more)" if len(facts.denied) > 1 else ""
        problems.append(f"not allowed to {facts.denied[0]}{more}: see docs/own-cluster.md for "
                        "the RBAC to grant")
    return problems


def join_commands(profile: VclusterKaiProfile, lab: str, member: str, *, node: str | None,
                  ttl_seconds: int, kube: Any) -> str:
    """vcluster-kai has no workers to join: a vCluster schedules onto its host's nodes."""
    from gpulab.errors import UsageError

    raise UsageError("gpulab join is for kamaji-hami tenants; a vCluster runs its pods on the "
                     "host cluster's nodes, which have nothing to join")
