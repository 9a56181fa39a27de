"""In-memory API servers for the live path of the vcluster-kai `verify`.

The host is a `FakeApi` (tests/kamaji_hami/fakes.py) seeded with the GPU node, the queue tree and
each vCluster's control-plane pod; each team's vCluster is a `VClusterApi` whose pod creation plays
vCluster's syncer (the host copy: translated name, labels and annotations unchanged, vCluster's
own labels and annotations added) and whose new namespaces refuse pods until their `default`
ServiceAccount exists (`service_account_after`). `FakeKai` plays KAI whenever host pods are read: pod-grouper
(a PodGroup `pg-<pod>-<uid>` owned by the pod, with its labels, in the label's queue,
`default-queue` without one), the scheduler (queue limits up
the parent chain first, then KAI's MaxNodePoolResources pre-filter for more GPUs than any node
has, then the GPU pool's capacity as one sum, fractions binpacked, every placed pod on the first
GPU node: the pools of these tests hold the share pods on one GPU), the kubelet (bound
pods turn Running) and the queue-controller (`status.allocated`, `330m` style).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gpulab.errors import AdapterError
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.verify import observe as verify_observe
from tests import kube_wire as kube
from tests.kamaji_hami.fakes import FakeApi, FakeClock
from tests.vcluster_kai import builders as b
from tests.vcluster_kai import kai_wire as kw
from tests.vcluster_kai import vcluster_wire as vw

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile


def _millis(amount: Decimal) -> str:
    return str(int(amount)) if amount == amount.to_integral_value() else f"{int(amount * 1000)}m"


@dataclass
class FakeKai:
    host: FakeApi
    profile: VclusterKaiProfile
    enforce_limits: bool = True
    queue_per_namespace: bool = False  # host-side admission ties each team to its own queue
    placed: dict[str, tuple[str, Decimal]] = field(default_factory=dict)  # pod uid -> (queue, GPUs)

    def attach(self) -> FakeKai:
        self.host.tick = self.tick
        return self

    def _queues(self) -> dict[str, dict[str, Any]]:
        return {o["metadata"]["name"]: o for (k, _, _), o in self.host.objects.items()
                if k == "Queue"}

    def _used(self, queue: str, queues: dict[str, dict[str, Any]]) -> Decimal:
        total = Decimal(0)
        for leaf, amount in self.placed.values():
            chain, name = [], leaf
            while name:
                chain.append(name)
                name = ((queues.get(name) or {}).get("spec") or {}).get("parentQueue", "")
            if queue in chain:
                total += amount
        return total

    @staticmethod
    def _request(pod: dict[str, Any]) -> Decimal:
        fraction = (pod["metadata"].get("annotations") or {}).get(kr.FRACTION_ANNOTATION)
        if fraction:
            return Decimal(fraction)
        limits = (pod["spec"]["containers"][0].get("resources") or {}).get("limits") or {}
        return Decimal(str(limits.get(kr.GPU_RESOURCE, 0)))

    def _team_queue(self, namespace: str) -> str | None:
        for team in self.profile.teams:
            if team.namespace == namespace:
                return team.queue_name
        return None

    def _group(self, pod: dict[str, Any]) -> dict[str, Any]:
        meta = pod["metadata"]
        name = meta.setdefault("annotations", {}).setdefault(
            kr.POD_GROUP_ANNOTATION, f"pg-{meta['name']}-{meta['uid']}")
        key = ("PodGroup", meta["namespace"], name)
        if key not in self.host.objects:
            queue = meta.get("labels", {}).get(kr.QUEUE_LABEL) or "default-queue"
            if self.queue_per_namespace:
                queue = self._team_queue(meta["namespace"]) or queue
            self.host.objects[key] = {
                "apiVersion": kr.PODGROUP_API, "kind": "PodGroup",
                "metadata": {"name": name, "namespace": meta["namespace"],
                             "uid": f"pg-{meta['uid']}", "labels": dict(meta.get("labels") or {}),
                             "annotations": {
                                 kw.TOP_OWNER_METADATA: kw.top_owner_metadata(meta["name"],
                                                                              meta["uid"]),
                                 **{k: v for k, v in meta["annotations"].items()
                                    if k != kr.POD_GROUP_ANNOTATION}},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                  "name": meta["name"], "uid": meta["uid"]}]},
                "spec": {"minMember": 1, "queue": queue, "priorityClassName": "train"},
                "status": {}}  # KAI writes no status.phase
        return self.host.objects[key]

    def _refuse(self, pod: dict[str, Any], group: dict[str, Any], reason: str,
                message: str, pod_message: str | None = None) -> None:
        """KAI's refusal: the PodGroup's condition (reason, message), the pod's PodScheduled
        condition and Warning event with the per-pod fit error when there is one, else the
        job's message (default_status_updater.go:357-374)."""
        job_message = kw.job_fit_errors_message([(reason, [message])])
        message_on_pod = pod_message or job_message
        entry = {"reason": reason, "message": message}
        group["status"]["schedulingConditions"] = [kw.unschedulable_condition(
            job_message, [entry], b.TS)]
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": message_on_pod}]
        if not any(e["involvedObject"]["uid"] == pod["metadata"]["uid"]
                   for e in self.host.event_list):
            self.host.event_list.append(b.event(pod, "Unschedulable", message_on_pod))

    def tick(self) -> None:
        with self.host.lock:
            queues = self._queues()
            for (kind, _, _), pod in list(self.host.objects.items()):
                if kind != "Pod" or pod["spec"].get("schedulerName") != kr.KAI_SCHEDULER:
                    continue
                if pod["spec"].get("nodeName"):
                    if pod["status"].get("phase") == "Pending":
                        pod["status"] = {"phase": "Running", "containerStatuses": [
                            {"name": "app", "ready": True, "restartCount": 0,
                             "state": {"running": {}}}]}
                    continue
                self._schedule(pod, self._group(pod), queues)
            for name, queue in queues.items():
                queue.setdefault("status", {})["allocated"] = {
                    kr.GPU_RESOURCE: _millis(self._used(name, queues))}

    def _schedule(self, pod: dict[str, Any], group: dict[str, Any],
                  queues: dict[str, dict[str, Any]]) -> None:
        want = self._request(pod)
        leaf = group["spec"]["queue"]
        name = leaf
        while name and self.enforce_limits:
            spec = (queues.get(name) or {}).get("spec") or {}
            limit = Decimal(str(((spec.get("resources") or {}).get("gpu") or {}).get("limit",
                                                                                     0)))
            used = self._used(name, queues)
            if limit != -1 and used + want > limit:
                self._refuse(pod, group, "OverLimit",
                             kw.over_limit(name, float(limit), float(used), float(want)))
                return
            name = spec.get("parentQueue", "")
        biggest = max((Decimal(str(((n.get("status") or {}).get("allocatable") or {}).get(
            kr.GPU_RESOURCE, 0))) for (k, _, _), n in self.host.objects.items() if k == "Node"),
            default=Decimal(0))
        if want > biggest:  # k8s_internal/predicates/maxNodeResources.go:78-81 (kai_wire)
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            message = kw.pre_predicate_failed(ns, name, kw.MAX_NODE_POOL_RESOURCES,
                                              kw.max_node_resources(ns, name, float(want),
                                                                    float(biggest)))
            self._refuse(pod, group, "PodSchedulingErrors", kw.not_found(ns, name, message),
                         pod_message=message)
            return
        free = Decimal(self.profile.gpu_pool.total) - sum(
            (a for _, a in self.placed.values()), Decimal(0))
        if want > free:
            self._refuse(pod, group, "PodSchedulingErrors", b.NOT_FOUND.format(
                namespace=pod["metadata"]["namespace"], name=pod["metadata"]["name"],
                message=b.NO_CAPACITY), pod_message=b.NO_CAPACITY)
            return
        self.placed[pod["metadata"]["uid"]] = (leaf, want)
        pod["spec"]["nodeName"] = b.GPU_NODE
        if pod["metadata"].get("annotations", {}).get(kr.FRACTION_ANNOTATION):
            pod["metadata"].setdefault("labels", {})["runai-gpu-group"] = b.GPU_GROUP
        group["status"] = {}


@dataclass
class KaiLab:
    profile: VclusterKaiProfile
    clock: FakeClock
    host: FakeApi
    teams: dict[str, VClusterApi]
    kai: FakeKai
    down: set[str] = field(default_factory=set)
    unsynced: set[str] = field(default_factory=set)  # vClusters whose syncer does nothing
    shared_ca: bool = False

    def team(self, name: str) -> FakeApi:
        if name in self.down:
            raise AdapterError(f"get server version at https://{b.NODE_IP}:"
                               f"{self.profile.team(name).api_node_port}: connection refused")
        return self.teams[name]

    def cross(self, credentials_of: str, server_of: str) -> FakeApi:
        if self.shared_ca:
            return self.teams[server_of]
        probe = FakeApi(f"{credentials_of}-on-{server_of}")
        port = self.profile.team(server_of).api_node_port
        probe.fail["list_objects"] = AdapterError(b.rejected_probe(port))
        return probe


class VClusterApi(FakeApi):
    """A vCluster's API server with what happens to a new namespace: kube-controller-manager's
    serviceaccount controller creates its `default` ServiceAccount `service_account_after`
    seconds later (None: never), and until then the ServiceAccount admission plugin refuses
    every pod that names no other account with 403 Forbidden (kubernetes
    plugin/pkg/admission/serviceaccount/admission.go; docs/vcluster-kai.md)."""

    def __init__(self, name: str, version: str, clock: FakeClock,
                 service_account_after: float | None = 0.0) -> None:
        super().__init__(name, version)
        self.clock = clock
        self.service_account_after = service_account_after
        self.namespaces_born: dict[str, float] = {}
        self.default_service_account = False  # _serviceaccount_controller plays it, with delay
        self.refused: list[str] = []  # pods the admission plugin refused

    def _serviceaccount_controller(self) -> None:
        if self.service_account_after is None:
            return
        for namespace, born in self.namespaces_born.items():
            key = ("ServiceAccount", namespace, "default")
            if key not in self.objects and ("Namespace", "", namespace) in self.objects and (
                    self.clock.now() >= born + self.service_account_after):
                self.objects[key] = {"apiVersion": "v1", "kind": "ServiceAccount",
                                     "metadata": {"name": "default", "namespace": namespace,
                                                  "uid": f"sa-{namespace}"}}

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            self._serviceaccount_controller()
            meta = obj["metadata"]
            if obj["kind"] == "Namespace" and self.key(obj) not in self.objects:
                self.namespaces_born[meta["name"]] = self.clock.now()
            namespace = meta.get("namespace") or "default"
            account = (obj.get("spec") or {}).get("serviceAccountName") or "default"
            if (obj["kind"] == "Pod" and self.key(obj) not in self.objects
                    and ("ServiceAccount", namespace, account) not in self.objects):
                self.refused.append(meta["name"])
                raise AdapterError(
                    f"apply Pod {namespace}/{meta['name']} at https://127.0.0.1:31443: 403 "
                    f"Forbidden: "
                    + kube.service_account_missing_message(meta["name"], namespace, account))
            return super().apply(obj, dry_run=dry_run)

    def get(self, api_version: str, kind: str, name: str,
            namespace: str | None = None) -> dict[str, Any] | None:
        with self.lock:
            self._serviceaccount_controller()
            return super().get(api_version, kind, name, namespace)


def _syncer(lab_ref: list[KaiLab], team: TeamSpec) -> Any:
    def sync(pod: dict[str, Any]) -> None:
        lab = lab_ref[0]
        if team.name in lab.unsynced:
            return
        meta = pod["metadata"]
        host = copy.deepcopy(pod)
        host_name = kr.host_pod_name(meta["name"], meta["namespace"], team.name)
        api = getattr(lab, "teams", {}).get(team.name)  # the virtual API, when the lab has one
        namespace = (api.objects.get(("Namespace", "", meta["namespace"])) if api else None) or {}
        host["metadata"] = vw.host_pod_metadata(
            {**pod, "spec": {"serviceAccountName": "default", **pod.get("spec", {})}},
            host_name=host_name, host_namespace=team.namespace, vcluster=team.name,
            namespace_labels={**(namespace.get("metadata", {}).get("labels") or {}),
                              "kubernetes.io/metadata.name": meta["namespace"]})
        host["metadata"]["uid"] = f"host-{host_name}"
        host["spec"]["serviceAccountName"] = f"vc-workload-{team.name}"
        host["spec"].setdefault("schedulerName", "default-scheduler")
        host["status"] = {"phase": "Pending"}
        lab.host.put(host)

    return sync


def kai_lab(profile: VclusterKaiProfile, service_account_after: float | None = 0.0,
            **kai: Any) -> KaiLab:
    clock = FakeClock()
    host = FakeApi("host", "v1.36.4")
    host.put(*b.host_nodes(profile))
    for queue in b.host_queues(profile):
        host.put({**copy.deepcopy(queue), "status": {}})
    teams: dict[str, VClusterApi] = {}
    ref: list[KaiLab] = []
    for team in profile.teams:
        host.put(b.control_plane_pod(team))
        api = VClusterApi(team.name, "v1.36.0", clock, service_account_after)
        api.put(*b.host_nodes(profile), b.coredns(team))
        api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
        api.webhook = _syncer(ref, team)
        teams[team.name] = api
    lab = KaiLab(profile, clock, host, teams, FakeKai(host, profile, **kai).attach())
    ref.append(lab)
    return lab


def verify_namespace_left(lab: KaiLab, team: str) -> list[tuple[str, str, str]]:
    return sorted(k for k in lab.teams[team].objects
                  if k[1] == verify_observe.VERIFY_NAMESPACE or k == ("Namespace", "",
                                                              verify_observe.VERIFY_NAMESPACE))


__all__ = ["FakeKai", "KaiLab", "VClusterApi", "kai_lab", "verify_namespace_left"]
