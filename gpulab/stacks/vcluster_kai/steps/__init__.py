"""The vcluster-kai lab as a plan of steps.

Order (one place decides it): kind cluster (a GPU-pool worker) → fake-gpu-operator, until the pool
advertises its GPUs → KAI Scheduler → the reservation RBAC fake GPUs need, and the queue tree; per
team, once the GPUs are advertised and concurrently with KAI: its vCluster (kubeconfig saved 0600)
→ the GPU node seen from inside it. This is KAI's own CI order (hack/setup-e2e-cluster.sh): fake
GPUs first, KAI with GPU sharing, then the RBAC. The vClusters wait for fake-gpu-operator because
everything runs on the pool's worker: on a slow link their images would be pulled while fake-gpu-
operator's still are (FAKE_GPUS_TIMEOUT).

Besides the four functions every stack provides, this module offers the optional hooks core uses
when a stack has them: `lab_status`, `parse_checks`, `replay`, `write_recording`.

This module is that order (`build_steps`, `verify_previews`); each step lives in its own module:
`fake_gpus` (fake-gpu-operator), `kai` (KAI, its reservation RBAC and queues), `vcluster`,
`gpu_node`, `preview` (what verify creates), `existing_cluster` (the steps of a cluster gpulab
did not make) and `preflight` (what the provider checks there, and `gpulab join`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from gpulab.stacks.common import HelmAddon, LabNamespaces, Reused
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.existing import fraction_runtime_class
from gpulab.stacks.vcluster_kai.steps.existing_cluster import (
    FAKE_GPU_CLUSTER_OBJECTS,
    FakeGpuLabels,
    _fake_gpu_steps,
    existing_namespaces,
    existing_pod_security,
    fake_gpu_nodes,
    queue_names,
)
from gpulab.stacks.vcluster_kai.steps.fake_gpus import (
    FAKE_GPUS_STEP,
    FAKE_GPUS_TIMEOUT,
    TOPOLOGY_CONFIGMAP,
    FakeGpus,
    _fake_gpus,
)
from gpulab.stacks.vcluster_kai.steps.gpu_node import TeamGpuNode
from gpulab.stacks.vcluster_kai.steps.kai import KAI_CRDS, Queues, ReservationRbac, _kai_ready
from gpulab.stacks.vcluster_kai.steps.preflight import (
    existing_needs,
    existing_problems,
    join_commands,
)
from gpulab.stacks.vcluster_kai.steps.preview import VerifyPreview
from gpulab.stacks.vcluster_kai.steps.vcluster import TeamVCluster
from gpulab.taints import union, vcluster_toleration

if TYPE_CHECKING:
    from gpulab.engine.step import Step
    from gpulab.providers.base import ClusterFacts
    from gpulab.stacks.vcluster_kai.existing import KaiFound
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

__all__ = [
    "FAKE_GPUS_STEP",
    "FAKE_GPUS_TIMEOUT",
    "FAKE_GPU_CLUSTER_OBJECTS",
    "KAI_CRDS",
    "TOPOLOGY_CONFIGMAP",
    "FakeGpuLabels",
    "FakeGpus",
    "Queues",
    "ReservationRbac",
    "TeamGpuNode",
    "TeamVCluster",
    "VerifyPreview",
    "build_steps",
    "existing_namespaces",
    "existing_needs",
    "existing_pod_security",
    "existing_problems",
    "fake_gpu_nodes",
    "join_commands",
    "queue_names",
    "verify_previews",
]


def verify_previews(profile: VclusterKaiProfile) -> list[Step]:
    return [VerifyPreview(profile, team) for team in profile.teams]


def build_steps(profile: VclusterKaiProfile, lab: str, facts: ClusterFacts) -> list[Step]:
    """Every step of `up` for this profile, in the one order that matters, on what the
    cluster's provider answered for `cluster_needs` (providers.base.ClusterFacts): on a shared
    cluster the lab's namespaces first and a KAI found there reused; the GPUs of the lab's own
    pool (fake-gpu-operator on its nodes), or those found (reused, plus fake ones on nodes named
    for them); the queue tree; a vCluster per team, reached as the facts say."""
    kai_found: KaiFound | None = facts.found if facts.shared else None
    steps: list[Step] = []
    if facts.shared:  # the lab's namespaces are its own objects there
        levels = tuple((n, level) for n, level, _what
                       in existing_pod_security(profile, kai_found is not None))
        steps.append(LabNamespaces(lab, existing_namespaces(profile, kai_found is not None),
                                   levels=levels))
    gpus_step = "management/gpu-nodes"
    if facts.gpus == "pool":
        steps.append(_pool_gpus(profile, facts))
        gpus_step = FAKE_GPUS_STEP
    elif facts.fake_nodes:
        steps += _fake_gpu_steps(profile, facts, kai_found)
        gpus_step = FAKE_GPUS_STEP
    runtime = fraction_runtime_class(facts.runtime_classes, fake=bool(facts.fake_nodes)) \
        if facts.shared else None
    steps.append(_kai_step(profile, kai_found, requires=(
        "management/namespaces",) if facts.shared else (gpus_step,), runtime_class=runtime))
    steps += _found_gpus(facts)
    if facts.gpus == "pool":  # the pool's fake GPUs annotate KAI's reservation pods
        steps.append(ReservationRbac(profile))
    steps.append(Queues(profile, lab if facts.shared else None))
    steps += _team_steps(profile, lab, facts, gpus_step)
    return steps


def _pool_gpus(profile: VclusterKaiProfile, facts: ClusterFacts) -> Step:
    """fake-gpu-operator on the nodes of the lab's own GPU pool."""
    return _fake_gpus(profile, kr.fake_gpu_operator_release(profile),
                      list(facts.nodes(profile.gpu_pool.name)), "per pool node",
                      "the pool's nodes", requires=("management/cluster",))


def _kai_step(profile: VclusterKaiProfile, found: KaiFound | None, *,
              requires: tuple[str, ...], runtime_class: str | None = None) -> Step:
    """KAI Scheduler: the one found in the cluster, reused; else installed with GPU sharing
    (and, on an existing cluster, the RuntimeClass for GPU-fraction pods it has:
    existing.fraction_runtime_class)."""
    if found is not None:
        return Reused("management/kai-scheduler", "Using the cluster's KAI Scheduler",
                      f"KAI Scheduler {found.version} in {found.namespace}",
                      {"namespace": found.namespace, "version": found.version,
                       "gpuSharing": found.gpu_sharing})
    return HelmAddon(
        kr.kai_scheduler_release(profile, runtime_class),
        name="management/kai-scheduler",
        title="Installing KAI Scheduler with GPU sharing" + (
            "" if runtime_class is None else
            f" (GPU-fraction pods get RuntimeClass {runtime_class})" if runtime_class else
            " (no RuntimeClass with handler nvidia: GPU-fraction pods keep the node's default "
            "runtime)"),
        requires=requires,
        ready=partial(_kai_ready, namespace=profile.components.kai_scheduler.namespace),
        ready_what="the KAI operator's deployments",
        timeout=420,
    )


def _found_gpus(facts: ClusterFacts) -> list[Step]:
    """The GPU nodes found (not those named for fake GPUs), reused as they are: a step when
    there are any, or when no node is named for fake GPUs either (preflight refused that)."""
    if facts.gpus != "found":
        return []
    fake = {n.name for n in facts.fake_nodes}
    real = [n for n in facts.gpu_nodes if n.name not in fake]
    if not real and fake:
        return []
    return [Reused("management/gpu-nodes", "Using the cluster's GPU nodes",
                   f"{len(real)} GPU node(s)",
                   {n.name: {kr.GPU_RESOURCE: n.gpus, "product": n.product, "from": n.source}
                    for n in real})]


def _team_steps(profile: VclusterKaiProfile, lab: str, facts: ClusterFacts, gpus_step: str
                ) -> list[Step]:
    """Each team's vCluster, reached as `facts.expose` says (published: the host port the
    provider maps), and the GPU node its vCluster lists, with the pool's GPUs per node."""
    pool = facts.nodes(profile.gpu_pool.name)
    fake = {n.name for n in facts.fake_nodes}
    found = {n.name: n.gpus for n in facts.gpu_nodes}
    counts = {name: profile.gpu_pool.count if facts.gpus == "pool" or name in fake
              else found[name] for name in pool}
    tolerations = tuple(vcluster_toleration(t) for t in union(
        n.taints for n in facts.gpu_nodes if n.name in pool))
    expose = None if facts.expose == "published" else \
        kr.ExistingExpose(facts.expose, facts.node_address, lab, facts.urls, tolerations)
    first = "management/namespaces" if facts.shared else "management/cluster"
    steps: list[Step] = []
    for team in profile.teams:
        node_after = (f"{team.name}/vcluster",) if facts.shared else \
            (f"{team.name}/vcluster", gpus_step)
        steps += [TeamVCluster(profile, lab, team, facts, existing=expose,
                               after=(first, gpus_step)),
                  TeamGpuNode(profile, lab, team, counts=counts, after=node_after)]
    return steps
