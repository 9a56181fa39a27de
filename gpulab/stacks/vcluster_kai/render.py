"""Pure renderers of the vcluster-kai lab: profile (+ the kind node's IP) → what gpulab creates.

Nothing here does I/O. `plan` prints these, `up` applies them, verify creates the pods of
`verify_objects`, and the tests validate them against the upstream schemas and chart values in
tests/data/pinned (facts: docs/dev/upstream-facts/stack-vcluster-kai.md).
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

from gpulab import naming
from gpulab.adapters import base
from gpulab.providers.base import ClusterNeeds, NodePool, PodForward, PortNeed
from gpulab.stacks import common
from gpulab.stacks.vcluster_kai.profile import VCLUSTER_LISTEN_ADDRESS
from gpulab.verify import kai
from gpulab.verify import observe as verify_observe

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile

__all__ = [
    "FRACTION_ANNOTATION",
    "GPU_RESOURCE",
    "KAI_DEPLOYMENTS",
    "KAI_SCHEDULER",
    "PODGROUP_API",
    "POD_GROUP_ANNOTATION",
    "POOL_LABEL",
    "QUEUE_API",
    "QUEUE_LABEL",
    "VERIFY_PODS",
    "ProbeSizes",
    "cluster_needs",
    "fake_gpu_operator_release",
    "gpu_node_labels",
    "gpu_node_names",
    "host_pod_name",
    "kai_scheduler_release",
    "node_gpus",
    "probe_sizes",
    "queue_objects",
    "queue_spec",
    "reservation_rbac",
    "sized_for_host",
    "team_port",
    "vcluster_release",
    "verify_objects",
]

POOL_LABEL = "run.ai/simulated-gpu-node-pool"
QUEUE_LABEL = kai.QUEUE_LABEL  # podgrouper.queueLabelKey
KAI_SCHEDULER = kai.KAI_SCHEDULER  # the schedulerName KAI's webhooks and scheduler answer to
FRACTION_ANNOTATION = kai.FRACTION_ANNOTATION
POD_GROUP_ANNOTATION = "pod-group-name"  # set by KAI's pod-grouper on the (host) pod
GPU_RESOURCE = "nvidia.com/gpu"
# vCluster v0.35.3 puts these on a synced pod's host copy: the virtual pod's namespace, name and
# uid (pkg/controllers/resources/pods/translate/translator.go:40-43, set at :263-280); labels are
# copied unchanged (pkg/util/translate/labels.go:23-29, HostLabel), so gpulab.dev/* reach the host.
CHECK_LABEL = "gpulab.dev/check"  # which check a verify pod is for
VC_NAMESPACE_ANNOTATION = "vcluster.loft.sh/namespace"
VC_NAME_ANNOTATION = "vcluster.loft.sh/name"
VC_UID_ANNOTATION = "vcluster.loft.sh/uid"
QUEUE_API = "scheduling.run.ai/v2"
PODGROUP_API = "scheduling.run.ai/v2alpha2"
# The chart deploys only kai-operator; the operator creates the others from the kai-config CR and
# the `default` SchedulingShard (facts §1 "Components and readiness"); helm's wait cannot see them.
KAI_DEPLOYMENTS = (
    "kai-operator",
    "admission",
    "binder",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
    "kai-scheduler-default",
)
# verify's pods in each team's vCluster, in creation order, with the check each serves.
VERIFY_PODS = {
    "gpu-share": "KAI-05",
    "gpu-over-limit": "KAI-06",
    "gpu-over-capacity": "KAI-07",
    "queue-foreign": "KAI-08",
}
_OPERATOR_RBAC = "rbac.authorization.k8s.io/v1"


def gpu_node_names(profile: VclusterKaiProfile, lab: str) -> list[str]:
    """The pool's kind workers, as verify expects them on a kind lab whose host shows none
    (checks.scheduling): kind names them <cluster>-worker, <cluster>-worker2, … `up` takes
    them from the provider (ClusterFacts.pool_nodes); a test holds the two to one rule."""
    cluster = naming.kind_cluster_name(lab)
    return [f"{cluster}-worker{i + 1 if i else ''}" for i in range(profile.gpu_pool.nodes)]


def gpu_node_labels(profile: VclusterKaiProfile) -> dict[str, str]:
    """What a GPU worker carries from creation on (KAI's hack/e2e-kind-config.yaml, plus the
    labels GPU feature discovery would put on a real node, so the write-up's
    `nodeSelector: nvidia.com/gpu.present: "true"` and KAI's gpu.count/gpu.memory reads work).
    fake-gpu-operator's own node labelling stays off, as in KAI's CI."""
    pool = profile.gpu_pool
    return {
        POOL_LABEL: pool.name,
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": pool.model,
        "nvidia.com/gpu.count": str(pool.count),
        "nvidia.com/gpu.memory": str(pool.memory_mib),
    }


def cluster_needs(profile: VclusterKaiProfile) -> ClusterNeeds:
    """The GPU pool's workers, labelled from creation on (`gpu_node_labels`), and each team's
    vCluster NodePort reachable from this host (`team_port`)."""
    pool = profile.gpu_pool
    return ClusterNeeds(
        pools=(NodePool(pool.name, pool.nodes, gpu_node_labels(profile)),),
        ports=tuple(team_port(team) for team in profile.teams))


VCLUSTER_POD_PORT = 8443  # the vCluster pod's API port (chart/templates/service.yaml:25-29)


def team_port(team: TeamSpec) -> PortNeed:
    """A team's vCluster API (its NodePort) at the team's port on this host's 127.0.0.1, the
    host's one address every Docker setup can reach: a node's container IP is not routable
    from rootless Docker, Podman or Docker Desktop. ClusterFacts.url_for says where it is.
    Through a port-forward it is the vCluster's pod as `vcluster connect` picks it (vCluster
    v0.35.3 pkg/cli/connect_helm.go:299-330: `app=vcluster,release=<name>` in the vCluster's
    namespace), at the port the exported kubeconfig names, 8443 (:378-405; the chart's Service
    sends 443 to targetPort 8443, chart/templates/service.yaml:25-29)."""
    return PortNeed(team.name, team.api_node_port, team.host_port, VCLUSTER_LISTEN_ADDRESS,
                    member=team.name,
                    forward=PodForward(team.namespace,
                                       (("app", "vcluster"), ("release", team.name)),
                                       VCLUSTER_POD_PORT))


def fake_gpu_operator_release(profile: VclusterKaiProfile, *,
                              reservation_namespace: str | None = None) -> base.HelmRelease:
    """KAI's hack/fake-gpu-operator-values.yaml with the profile's pool, and `--set
    draPlugin.enabled=false` as KAI's setup script adds (device-plugin path). The status-updater
    watches KAI's reservation namespace: the profile's, or (`reservation_namespace`) that of a
    KAI Scheduler found on an existing cluster."""
    pool = profile.gpu_pool
    values: dict[str, Any] = {
        "topology": {
            "nodePools": {
                pool.name: {
                    "gpuProduct": pool.model,
                    "gpuCount": pool.count,
                    "gpuMemory": pool.memory_mib,
                }
            },
            "nodePoolLabelKey": POOL_LABEL,
        },
        "environment": {
            "resourceReservationNamespace": reservation_namespace
            or profile.components.kai_scheduler.reservation_namespace,
        },
        "statusUpdater": {"disableNodeLabeling": True},
        "draPlugin": {"enabled": False},
    }
    return common.helm_release(profile.components.fake_gpu_operator, values)


def kai_scheduler_release(profile: VclusterKaiProfile, runtime_class: str | None = None
                          ) -> base.HelmRelease:
    """KAI with GPU sharing; `runtime_class` (existing.fraction_runtime_class), when given, is
    the RuntimeClass its admission sets on GPU-fraction pods ("" none) instead of the chart's
    `nvidia` (values.yaml:203)."""
    kai = profile.components.kai_scheduler
    values: dict[str, Any] = {
        "global": {
            "gpuSharing": True,
            "resourceReservation": {"namespace": kai.reservation_namespace},
        }
    }
    if runtime_class is not None:
        values["admission"] = {"gpuFractionRuntimeClassName": runtime_class}
    return common.helm_release(kai, values)


def reservation_rbac(profile: VclusterKaiProfile) -> list[dict[str, Any]]:
    """What KAI's CI creates by hand after installing fake-gpu-operator 0.0.74 (whose own Role
    is only rendered when the namespace already exists): `kubectl create clusterrole
    pods-patcher --verb=patch --resource=pods` and a RoleBinding for the status-updater."""
    fgo = profile.components.fake_gpu_operator
    labels = {naming.LABEL_MANAGED: "gpulab"}
    return [
        {
            "apiVersion": _OPERATOR_RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": "pods-patcher", "labels": labels},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}],
        },
        {
            "apiVersion": _OPERATOR_RBAC,
            "kind": "RoleBinding",
            "metadata": {
                "name": "fake-status-updater",
                "namespace": profile.components.kai_scheduler.reservation_namespace,
                "labels": labels,
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "pods-patcher"},
            "subjects": [{"kind": "ServiceAccount", "name": "status-updater",
                          "namespace": fgo.namespace}],
        },
    ]


def queue_spec(profile: VclusterKaiProfile, team: TeamSpec | None) -> dict[str, Any]:
    """The `spec` of the org queue (team None) or of a team's queue, every limit explicit."""
    queue = profile.org_queue if team is None else team.queue
    spec: dict[str, Any] = {}
    if queue.display_name:
        spec["displayName"] = queue.display_name
    if team is not None:
        spec["parentQueue"] = profile.org_queue.name
    if queue.priority is not None:
        spec["priority"] = queue.priority
    spec["resources"] = queue.resources.to_kai()
    return spec


def queue_objects(profile: VclusterKaiProfile, lab: str | None = None) -> list[dict[str, Any]]:
    """The queue tree (parent first: KAI resolves `parentQueue` by name); on an existing cluster
    (`lab` given) each queue also carries the lab's label."""
    labels = {naming.LABEL_MANAGED: "gpulab", **({naming.LABEL_LAB: lab} if lab else {})}

    def queue(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": QUEUE_API, "kind": "Queue",
                "metadata": {"name": name, "labels": dict(labels)}, "spec": spec}

    out = [queue(profile.org_queue.name, queue_spec(profile, None))]
    out += [queue(team.queue_name, queue_spec(profile, team)) for team in profile.teams]
    return out


def vcluster_release(profile: VclusterKaiProfile, team: TeamSpec,
                     existing: ExistingExpose | None = None, *, server: str = ""
                     ) -> base.HelmRelease:
    """One team's vCluster: the write-up's vcluster.yaml (host nodes synced in, owner references
    off) plus how the host reaches it (NodePort on 127.0.0.1, `team_port`: `server`, the URL
    the cluster's provider gives it, in the exported kubeconfig; certificate SANs) and a fixed
    NodePort for each port of its Service. On an existing cluster, `existing` says how."""
    values: dict[str, Any] = {
        "sync": {
            "fromHost": {
                "nodes": {"enabled": True, "selector": {"all": True}},
                # Without it the syncer clears priorityClassName on host pods (facts §3).
                "priorityClasses": {"enabled": True},
            }
        },
        "experimental": {"syncSettings": {"setOwner": False}},
        "controlPlane": {
            # Both ports of the chart's Service get a fixed NodePort (templates/service.yaml:26-45
            # at v0.35.3): the API, and the kubelet port, which would otherwise take any free
            # NodePort, perhaps another team's API port (profile.KUBELET_PORT_OFFSET).
            "service": {"spec": {"type": "NodePort"}, "httpsNodePort": team.api_node_port,
                        "kubeletNodePort": team.kubelet_node_port},
            "proxy": {"extraSANs": [VCLUSTER_LISTEN_ADDRESS, "localhost"]},
        },
        "exportKubeConfig": {"server": server},
    }
    if existing is not None:
        values = _existing_values(values, team, existing)
    vc = profile.components.vcluster
    return base.HelmRelease(
        name=team.name,
        namespace=team.namespace,
        chart=vc.chart.name,
        repo=vc.chart.repo,
        version=vc.chart.version,
        values=common.deep_merge(values, vc.values),
        kubeconfig_of="management",
    )


class ExistingExpose:
    """How a team's vCluster is reached on a cluster gpulab did not make (provider existing):
    `LoadBalancer` (the server is the Service's address, known once it has one), `NodePort`
    on `address`, or `port-forward`; `servers`: the URL the provider gives each team's port
    (`team_port`, by team name: ClusterFacts.urls); `lab` labels the Service."""

    def __init__(self, how: str, address: str | None, lab: str,
                 servers: Mapping[str, str], tolerations: tuple[str, ...] = ()) -> None:
        self.how, self.address, self.lab, self.servers = how, address, lab, servers
        self.tolerations = tolerations  # enforceTolerations: what the GPU nodes' taints need

    def server(self, team: TeamSpec) -> str | None:
        """The vCluster API URL, None for a LoadBalancer before it has an address."""
        return self.servers.get(team.name)


def _existing_values(values: dict[str, Any], team: TeamSpec, expose: ExistingExpose
                     ) -> dict[str, Any]:
    """The vCluster chart's values on an existing cluster (v0.35.3): its Service labelled for
    the lab (`controlPlane.service.labels`, chart templates/service.yaml:16-17); NodePort as on
    kind but with the node's address as server and SAN; LoadBalancer, whose address vCluster
    adds to its certificate by itself (pkg/server/cert/cert.go:268-279) and which gpulab writes
    into the saved kubeconfig once the Service has it (port 443: templates/service.yaml:25-30);
    port-forward: a ClusterIP Service, the saved kubeconfig at 127.0.0.1
    (providers.existing.forward)."""
    service: dict[str, Any] = {"labels": {naming.LABEL_LAB: expose.lab,
                                          naming.LABEL_MANAGED: "gpulab"}}
    out = dict(values)
    if expose.tolerations:
        # every pod the vCluster syncs to the host gets them (pkg/controllers/resources/pods/
        # translate/translator.go:446-451 at v0.35.3), so its pods, verify's among them, may go
        # to GPU nodes that carry those taints
        out["sync"] = {**out["sync"], "toHost": {"pods": {
            "enforceTolerations": list(expose.tolerations)}}}
    plane = dict(out["controlPlane"])
    if expose.how == "port-forward":
        # the chart's default ClusterIP Service (values.yaml:591-592), reached through the host
        # API's pods/portforward; vCluster's certificate always holds localhost and 127.0.0.1
        # (pkg/server/cert/cert.go:54-60, 70-73)
        plane["service"] = {**service, "spec": {"type": "ClusterIP"}}
        plane["proxy"] = {"extraSANs": ["localhost"]}
        out["exportKubeConfig"] = {"server": expose.server(team)}
        out["controlPlane"] = plane
        return out
    if expose.how == "LoadBalancer":
        service["spec"] = {"type": "LoadBalancer"}
        plane["proxy"] = {"extraSANs": ["localhost"]}
        out.pop("exportKubeConfig", None)
    else:  # NodePort: the kind values' Service (type and fixed node ports), labelled
        service.update(plane["service"])
        plane["proxy"] = {"extraSANs": [a for a in (expose.address, "localhost") if a]}
        out["exportKubeConfig"] = {"server": expose.server(team)}
    plane["service"] = service
    out["controlPlane"] = plane
    return out


def host_pod_name(name: str, namespace: str, vcluster: str) -> str:
    """The name vCluster gives a virtual pod on the host (single-namespace mode, VC
    pkg/util/translate SafeConcatName): `<name>-x-<namespace>-x-<vcluster>`, or above 63
    characters its first 52 + `-` + 10 hex of its sha256."""
    full = f"{name}-x-{namespace}-x-{vcluster}"
    if len(full) <= 63:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    return (full[:52] + "-" + digest).replace(".-", "-")


# --------------------------------------------------------------------------- verify


class ProbeSizes:
    """What verify's GPU pods ask for (the rule is in docs/vcluster-kai.md).

    share: each team's `gpu-share` pod, a fraction such that every team's fits on one GPU at once
      (floor(100 / teams) / 100, at most 0.5): 0.33 for the write-up's three teams;
    capacity: `gpu-over-capacity`, a request that cannot fit while the share pods run, yet stays
      within the team's limit: a fraction (0.5, or more than what is free) on a one-GPU pool;
      every GPU of the node as whole GPUs on a one-node pool (the share pods hold part of one
      of them); on a pool of several nodes one GPU more than its largest node has
      (`beyond_any_node`): the share pods fill part of one GPU, so anything one node can hold
      would fit on another, and only KAI's refusal of what no node can hold shows it does not
      over-commit (its MaxNodePoolResources pre-filter, gpulab.verify.kai.beyond_any_node);
    over_limit: `gpu-over-limit`, whole GPUs one above the team's GPU limit (None: no limit).

    The pool's `count` is its largest node's GPUs (sized_for_host).
    """

    def __init__(self, profile: VclusterKaiProfile, team: TeamSpec) -> None:
        teams = len(profile.teams)
        self.share = min(50, 100 // max(teams, 1)) / 100
        free = 1 - teams * self.share
        pool = profile.gpu_pool
        self.total_gpus = pool.total
        self.largest_node = pool.count
        self.beyond_any_node = pool.nodes > 1
        if self.total_gpus == 1:
            self.capacity_fraction: float | None = 0.5 if free < 0.5 else min(
                0.99, round(free + 0.1, 2))
            self.capacity_gpus = 0
        else:
            self.capacity_fraction = None
            self.capacity_gpus = pool.count + 1 if self.beyond_any_node else pool.count
        limit = team.queue.resources.gpu.limit
        self.limit = limit
        self.over_limit: int | None = None if limit == -1 else math.floor(limit) + 1

    @property
    def share_text(self) -> str:
        return f"{self.share:g}"

    @property
    def capacity_amount(self) -> float:
        """GPUs the capacity probe asks for."""
        return self.capacity_fraction if self.capacity_fraction is not None else float(
            self.capacity_gpus)

    @property
    def capacity_within_limit(self) -> bool:
        """The capacity probe (on top of the share pod) must not be refused for the limit."""
        return self.limit == -1 or self.share + self.capacity_amount <= self.limit + 1e-9


def probe_sizes(profile: VclusterKaiProfile, team: TeamSpec) -> ProbeSizes:
    return ProbeSizes(profile, team)


def node_gpus(node: dict[str, Any] | None) -> int:
    """`nvidia.com/gpu` allocatable on a node (0 when absent or unreadable)."""
    value = (((node or {}).get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0)
    try:
        return int(str(value))
    except ValueError:
        return 0


def sized_for_host(profile: VclusterKaiProfile, gpus: str,
                   gpu_nodes: tuple[dict[str, Any], ...] | None) -> VclusterKaiProfile:
    """The profile whose GPU pool is what the host has: where the lab's GPUs are those found
    (`gpus` found: a cluster gpulab did not make) the pool is the GPU nodes found there (their
    number, the most GPUs one of them has, and the first one's product), so verify's pods are
    sized from the GPUs found, not from the profile's simulated pool; the profile itself
    otherwise (or when no GPU node was read). Only verify reads it: the capacity probe of a
    pool of several nodes must ask more than its largest node has (ProbeSizes), so `count` is
    the largest, not the least (nodes 8, 4 and 2: a probe of 3 x 2 = 6 GPUs would fit on the
    first)."""
    if gpus != "found" or not gpu_nodes:
        return profile
    counts = [node_gpus(n) for n in gpu_nodes]
    first = ((gpu_nodes[0].get("metadata") or {}).get("labels") or {}).get(
        "nvidia.com/gpu.product") or profile.gpu_pool.model
    # model_copy: the pool's bounds (at most 4 kind workers) are for the nodes gpulab makes
    pool = profile.gpu_pool.model_copy(update={"nodes": len(gpu_nodes),
                                               "count": max(1, *counts),
                                               "model": str(first)})
    return profile.model_copy(update={"gpu_pool": pool})


def _foreign_queue(profile: VclusterKaiProfile, team: TeamSpec) -> str:
    """The queue the first team names although it is not its own: the next team's."""
    names = [t.queue_name for t in profile.teams]
    index = names.index(team.queue_name)
    return names[(index + 1) % len(names)] if len(names) > 1 else "default-queue"


def _pod(team: TeamSpec, name: str, queue: str, *, fraction: str | None = None,
         gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "app",
        "image": common.VERIFY_IMAGE,
        "imagePullPolicy": "IfNotPresent",
    }
    if gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: str(gpus)}}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": verify_observe.VERIFY_NAMESPACE,
        "labels": {
            naming.LABEL_MANAGED: "gpulab",
            CHECK_LABEL: VERIFY_PODS[name],
            naming.LABEL_TENANT: team.name,
            QUEUE_LABEL: queue,
        },
    }
    if fraction is not None:
        metadata["annotations"] = {FRACTION_ANNOTATION: fraction}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": KAI_SCHEDULER,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [container],
        },
    }


def verify_objects(profile: VclusterKaiProfile, team: TeamSpec) -> list[dict[str, Any]]:
    """The namespace and pods verify creates inside a team's vCluster (names: VERIFY_PODS)."""
    sizes = probe_sizes(profile, team)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": verify_observe.VERIFY_NAMESPACE,
                     "labels": {naming.LABEL_MANAGED: "gpulab"}},
    }
    pods = [_pod(team, "gpu-share", team.queue_name, fraction=sizes.share_text)]
    if sizes.over_limit is not None:
        pods.append(_pod(team, "gpu-over-limit", team.queue_name, gpus=sizes.over_limit))
    if sizes.capacity_within_limit:
        if sizes.capacity_fraction is not None:
            pods.append(_pod(team, "gpu-over-capacity", team.queue_name,
                             fraction=f"{sizes.capacity_fraction:g}"))
        else:
            pods.append(_pod(team, "gpu-over-capacity", team.queue_name,
                             gpus=sizes.capacity_gpus))
    if team.name == profile.teams[0].name:
        pods.append(_pod(team, "queue-foreign", _foreign_queue(profile, team)))
    return [namespace, *pods]
