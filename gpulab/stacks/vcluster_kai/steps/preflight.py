"""An existing cluster's preflight: what the plan creates there and why the lab cannot go
in; and `gpulab join`, which vcluster-kai has no use for.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.existing import KaiFound, read_installed
from gpulab.stacks.vcluster_kai.steps.existing_cluster import (
    FAKE_GPU_CLUSTER_OBJECTS,
    existing_namespaces,
    existing_pod_security,
    fake_gpu_nodes,
    queue_names,
)

if TYPE_CHECKING:
    from gpulab.providers.base import ExistingNeeds
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
                        "Operator or device plugin, or name nodes for fake GPUs in "
                        "cluster.fake_gpu_nodes")
    problems += _fake_node_problems(facts)
    kai: KaiFound | None = facts.stack  # the stack's own read (read_installed)
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
