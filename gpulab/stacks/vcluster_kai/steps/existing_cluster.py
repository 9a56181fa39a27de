"""vcluster-kai in a cluster gpulab did not make: its namespaces, pod security, the nodes
that get fake GPUs and their labels, and the queues.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab import pod_security
from gpulab.engine.step import Artifact
from gpulab.errors import AdapterError
from gpulab.stacks.common import management_kube
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.steps.fake_gpus import _fake_gpus

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import Step, StepContext
    from gpulab.providers.base import ClusterFacts, FakeNode
    from gpulab.stacks.vcluster_kai.existing import KaiFound
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile


def existing_namespaces(profile: VclusterKaiProfile, kai_found: bool) -> tuple[str, ...]:
    """The namespaces the lab creates on an existing cluster (fake-gpu-operator's first when
    the profile names nodes for fake GPUs)."""
    kai = profile.components.kai_scheduler
    fake = (profile.components.fake_gpu_operator.namespace,) if fake_gpu_nodes(profile) else ()
    own = () if kai_found else (kai.namespace, kai.reservation_namespace)
    return (*fake, *own, *(team.namespace for team in profile.teams))


def existing_pod_security(profile: VclusterKaiProfile, kai_found: bool
                          ) -> tuple[tuple[str, str, str], ...]:
    """(namespace, Pod Security level, what needs it) for each namespace the lab creates on an
    existing cluster whose pods would not pass `restricted` (gpulab.pod_security.needed over
    the pinned charts rendered with gpulab's values: tests/contract/test_pod_security.py):
    fake-gpu-operator 0.0.74's device plugin and status exporter are privileged with hostPath
    volumes (templates/device-plugin/_helpers.tpl:43-44,64-76; templates/status-exporter/
    daemonset.yaml:28, _helpers.tpl:65); KAI v0.16.8's pods (the chart's operator and jobs, the
    operator's services with `global.securityContext`, pkg/operator/operands/common/common.go
    :179,230, the binder's reservation pods, pkg/binder/binding/resourcereservation/
    resource_reservation.go:527-560) and vCluster 0.35.3's StatefulSet need `baseline`. The
    teams' own pods, synced into `vcluster-<team>`, are held to baseline there too."""
    kai = profile.components.kai_scheduler
    fgo = profile.components.fake_gpu_operator.namespace
    out = [(fgo, pod_security.PRIVILEGED, "fake-gpu-operator's device plugin (privileged, "
            "hostPath volumes)")] if fake_gpu_nodes(profile) else []
    if not kai_found:
        out += [(kai.namespace, pod_security.BASELINE, "KAI Scheduler"),
                (kai.reservation_namespace, pod_security.BASELINE,
                 "KAI's GPU reservation pods")]
    out += [(t.namespace, pod_security.BASELINE, f"vCluster {t.name}") for t in profile.teams]
    return tuple(out)


def fake_gpu_nodes(profile: VclusterKaiProfile) -> tuple[str, ...]:
    """`cluster.fake_gpu_nodes` (provider existing): the nodes that get fake GPUs."""
    spec = profile.cluster
    return tuple(spec.fake_gpu_nodes or ()) if spec is not None else ()


# What fake-gpu-operator v0.0.74 creates outside its namespace and a cluster may already have
# (chart templates/runtime-class.yml:1-6, templates/status-updater/clusterrole.yaml:4-5): Helm
# refuses to install over them, and `helm uninstall` would remove them with the release.
FAKE_GPU_CLUSTER_OBJECTS = (("node.k8s.io/v1", "RuntimeClass", "nvidia"),
                            ("rbac.authorization.k8s.io/v1", "ClusterRole",
                             "fake-status-updater"))


@dataclass
class FakeGpuLabels:
    """Provider existing: the GPU pool's labels on each node named in `cluster.fake_gpu_nodes`,
    as KAI's own e2e puts them on its kind workers (hack/e2e-kind-config.yaml:9-13; render.
    gpu_node_labels). Only labels a node lacks are set (`adds`, from the preflight), each
    recorded in lab.json before it is set; `down` removes exactly those, while they still
    have gpulab's value. Nothing else of the node changes."""

    nodes: tuple[FakeNode, ...]
    name: str = "management/fake-gpu-labels"
    title: str = "Labelling the named nodes for fake GPUs"
    requires: tuple[str, ...] = ("management/namespaces",)

    def describe(self) -> list[Artifact]:
        return [Artifact("node-label", f"{node.name} {key}={value}",
                         {"node": node.name, "key": key, "value": value})
                for node in self.nodes for key, value in node.adds]

    def _missing(self, kube: KubeGateway) -> list[str]:
        missing = []
        for node in self.nodes:
            live = kube.get("v1", "Node", node.name) or {}
            labels = (live.get("metadata") or {}).get("labels") or {}
            missing += [f"{node.name} {k}" for k, v in node.adds if labels.get(k) != v]
        return missing

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            missing = self._missing(management_kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, f"labels missing: {', '.join(missing)}" if missing
                    else "every named node carries the pool's labels")
        return not missing

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        for node in self.nodes:
            if node.adds:
                kube.label("v1", "Node", node.name, dict(node.adds))


def _fake_gpu_steps(profile: VclusterKaiProfile, facts: ClusterFacts,
                    kai_found: KaiFound | None) -> list[Step]:
    """Provider existing with `cluster.fake_gpu_nodes`: the nodes labelled, then fake-gpu-
    operator (the kind lab's release: KAI's hack/fake-gpu-operator-values.yaml with the
    profile's pool), until every named node advertises the pool's GPUs. Its status-updater
    must patch KAI's reservation pods: the chart grants that itself when the reservation
    namespace exists at install (templates/status-updater/pod-patch-role.yaml:1 and
    pod-patch-rolebinding.yaml:1 `lookup` it), and it does: gpulab creates it first, or the
    reused KAI has it."""
    names = [n.name for n in facts.fake_nodes]
    reservation = (kai_found.reservation_namespace if kai_found is not None else None) \
        or profile.components.kai_scheduler.reservation_namespace
    release = kr.fake_gpu_operator_release(profile, reservation_namespace=reservation)
    return [FakeGpuLabels(tuple(facts.fake_nodes)),
            _fake_gpus(profile, release, names, f"on {', '.join(names)}", "the named nodes",
                       requires=("management/fake-gpu-labels",))]


def queue_names(profile: VclusterKaiProfile) -> tuple[str, ...]:
    return tuple(q["metadata"]["name"] for q in kr.queue_objects(profile))
