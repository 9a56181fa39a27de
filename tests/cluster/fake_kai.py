"""KAI Scheduler's default shard played on a fake cluster (tests/cluster/builders.ClusterApi), for
the runs of `verify --kubeconfig` on KAI clusters. Whenever pods are read it places the pods
named for KAI's scheduler as KAI v0.16.8 would, decoding everything itself from upstream's rules
(never with gpulab's parsers; docs/dev/upstream-facts/stack-vcluster-kai.md §1 for the answers):

- the scheduler name, node-pool label and queue label from the Config `kai-config`
  `spec.global` (pkg/apis/kai/v1/global.go:64-74, defaults :119-122, constants.go:20-26); the
  scheduler runs as the Deployment `<schedulerName>-<shard>` and serves only when ready; its
  `--full-hierarchy-fairness` (default true, cmd/scheduler/app/options/options.go:125);
- the default shard (`--partition-label-value=`) sees only nodes and queues without the node-pool
  label (pkg/scheduler/conf/scheduler_conf.go:99-116), drops queues whose parent it cannot see
  (pkg/scheduler/cache/cluster_info/queue.go:105-115), and with project-level fairness keeps only
  queues with a parent, under an unlimited `default` (queue.go:22-75);
- a queue that does not exist refuses with QueueDoesNotExist; a limit on the queue or any
  ancestor that cannot hold what is allocated plus the ask refuses with OverLimit
  (plugins/proportion/capacity_policy/max_allowed_check.go:16-66): -1 is unlimited, a limit not
  set is 0 (pkg/apis/scheduling/v2/resources.go:17-24, proportion.go:344-347);
- nodes must be ready for KAI (pkg/scheduler/scheduler_util/scheduler_utils.go:12-40), tolerated
  (k8s tainttoleration, as KAI's predicates run it: k8s_internal/predicates/predicates.go:85-93,
  with the API server's default not-ready/unreachable tolerations), and match the pod's
  nodeSelector by the node's labels;
- a pod KAI cannot place gets `PodScheduled=False/Unschedulable` and a Warning `Unschedulable`
  event, both with KAI's message for it (default_status_updater.go:240-256, 349-381), from the
  component `--scheduler-name` (kai_wire.DEFAULT_SCHEDULER_NAME): a queue refusal is the job's
  message (kai_wire.job_fit_errors_message of QueueDoesNotExist or OverLimit); more GPUs than any
  node of the shard has allocatable is the MaxNodePoolResources pre-filter's
  (kai_wire.pre_predicate_failed, max_node_resources), before any node is tried; otherwise the
  per-node histogram (kai_wire.fit_errors): a node short of GPUs (NOT_ENOUGH_GPUS) before its
  node conditions (node_condition_reasons, framework/session.go:226-256). A node the pod's
  nodeSelector or an untolerated taint rules out would need kube-scheduler's NodeAffinity and
  TaintToleration texts, which are not pinned here: such a refusal raises instead of inventing
  them. KAI writes the PodGroup's UnschedulableOnNodePool condition too, from every action's
  fit errors of the session (allocate, consolidation, reclaim, preempt may each add one:
  actions/common/action_eligibility.go:29-42), which reading alone does not settle: this fake
  writes none;
- a placed pod gets the Normal `Scheduled` event (kai_wire.scheduled) and runs on the next read;
  fractions bin-pack onto one GPU of the node (`runai-gpu-group`), or spread over GPUs
  (`spread=True`, KAI's `placementStrategy.gpu: spread`);
- with `controllers=True`, also KAI's pod-grouper and queue-controller, which a lab's verify reads:
  a bare pod gets a PodGroup `pg-<pod>-<uid>` in its namespace
  (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:94-96, the prefix `pg`:
  plugins/constants/constants.go:7), in the queue of its queue label, else `default-queue`
  (default_grouper.go:134-147, constants.go:19), owned by the pod and carrying its labels
  (default_grouper.go:69-81, 115-131: a bare pod is its own top owner), named on the pod by the
  annotation `pod-group-name` (pkg/common/constants/constants.go:54); each Queue's
  `status.allocated` is
  what its pod groups and child queues hold (pkg/queuecontroller/controllers/resource_updater/
  resource_updater.go:23-73), GPUs written as Kubernetes quantities (`330m` for 0.33).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tests.cluster.command_line import flag
from tests.vcluster_kai import kai_wire as kw

if TYPE_CHECKING:
    from tests.cluster.builders import ClusterApi

DEFAULTS = {"schedulerName": "kai-scheduler", "nodePoolLabelKey": "kai.scheduler/node-pool",
            "queueLabelKey": "kai.scheduler/queue"}
_TOLERATIONS = ({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute"})



@dataclass
class FakeKai:
    api: ClusterApi
    spread: bool = False
    place_anyway: bool = False  # a broken scheduler that over-commits
    controllers: bool = False  # also pod-grouper and queue-controller (see the docstring)
    groups: dict[str, list[Decimal]] = field(default_factory=dict)  # node -> fill per GPU

    def attach(self) -> FakeKai:
        self.api.tick = self.tick
        return self

    def _objects(self, kind: str) -> list[dict[str, Any]]:
        return [o for (k, _ns, _n), o in sorted(self.api.objects.items()) if k == kind]

    def _settings(self) -> dict[str, str]:
        config = self.api.obj("Config", "kai-config") or {}
        found = (config.get("spec") or {}).get("global") or {}
        return {k: str(found.get(k) or v) for k, v in DEFAULTS.items()}

    def _scheduler_args(self, name: str) -> list[str] | None:
        """The default shard's command line, or None when it does not run (not ready)."""
        for deploy in self._objects("Deployment"):
            if not deploy["metadata"]["name"].startswith(f"{name}-"):
                continue
            args = [a for c in deploy["spec"]["template"]["spec"]["containers"]
                    for a in c.get("args") or []]
            if flag(args, "partition-label-value") == "" and \
                    (deploy.get("status") or {}).get("readyReplicas", 0) > 0:
                return args
        return None

    def _refuse(self, pod: dict[str, Any], message: str, args: list[str]) -> None:
        """markTaskUnschedulable (default_status_updater.go:240-256): the Warning event, and the
        condition (markUnschedulable defaults to true, utils/pod_group_utils.go:16, 62-67)."""
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": message}]
        self.api.add_event(pod, "Unschedulable", message,
                           component=flag(args, "scheduler-name") or kw.DEFAULT_SCHEDULER_NAME)

    def tick(self) -> None:
        settings = self._settings()
        with self.api.lock:
            args = self._scheduler_args(settings["schedulerName"])
            for pod in self._objects("Pod"):
                if pod["spec"].get("schedulerName") != settings["schedulerName"]:
                    continue
                if pod["spec"].get("nodeName"):
                    if pod["status"].get("phase") == "Pending":
                        pod["status"] = {"phase": "Running", "containerStatuses": [
                            {"name": "app", "ready": True, "restartCount": 0,
                             "state": {"running": {}}}]}
                    continue
                if self.controllers:
                    self._group(pod, settings)
                if args is not None and not pod["status"].get("conditions"):
                    self._schedule(pod, settings, args)
            if self.controllers and args is not None:
                self._queue_status(settings, args)

    # ---------------------------------------------------------------- pod-grouper, queue-controller

    def _group(self, pod: dict[str, Any], settings: dict[str, str]) -> None:
        meta = pod["metadata"]
        annotations = meta.setdefault("annotations", {})
        name = annotations.setdefault("pod-group-name", f"pg-{meta['name']}-{meta['uid']}")
        key = ("PodGroup", meta.get("namespace") or "default", name)
        if key not in self.api.objects:
            queue = (meta.get("labels") or {}).get(settings["queueLabelKey"], "default-queue")
            self.api.objects[key] = {
                "apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": key[1], "uid": f"pg-{meta['uid']}",
                             "labels": dict(meta.get("labels") or {}),
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                  "name": meta["name"], "uid": meta["uid"]}]},
                "spec": {"minMember": 1, "queue": queue}, "status": {}}

    @staticmethod
    def _quantity(amount: Decimal) -> str:
        whole = amount.to_integral_value()
        return str(int(whole)) if amount == whole else f"{int(amount * 1000)}m"

    def _queue_status(self, settings: dict[str, str], args: list[str]) -> None:
        allocated = self._allocated(self._queues(settings, args), settings["queueLabelKey"],
                                    settings["schedulerName"])
        for queue in self._objects("Queue"):
            held = allocated.get(queue["metadata"]["name"], Decimal(0))
            queue["status"] = {"allocated": {"nvidia.com/gpu": self._quantity(held)}}

    # ---------------------------------------------------------------- queues

    def _queues(self, settings: dict[str, str], args: list[str]) -> dict[str, dict[str, Any]]:
        pool = settings["nodePoolLabelKey"]
        seen = {q["metadata"]["name"]: q for q in self._objects("Queue")
                if pool not in (q["metadata"].get("labels") or {})}
        if flag(args, "full-hierarchy-fairness") == "false":
            seen = {n: {**q, "spec": {**q["spec"], "parentQueue": "default"}}
                    for n, q in seen.items() if (q.get("spec") or {}).get("parentQueue")}
            seen["default"] = {"metadata": {"name": "default"},
                               "spec": {"resources": {"gpu": {"limit": -1}}}}
        changed = True
        while changed:  # orphans go, with their children
            changed = False
            for name, queue in list(seen.items()):
                parent = (queue.get("spec") or {}).get("parentQueue")
                if parent and parent not in seen:
                    del seen[name]
                    changed = True
        return seen

    @staticmethod
    def _limit(queue: dict[str, Any]) -> Decimal:
        resources = (queue.get("spec") or {}).get("resources") or {}
        value = (resources.get("gpu") or {}).get("limit")
        return Decimal(str(value)) if value is not None else Decimal(0)

    def _ask(self, pod: dict[str, Any]) -> Decimal:
        fraction = (pod["metadata"].get("annotations") or {}).get("gpu-fraction")
        if fraction:
            return Decimal(fraction)
        return sum((Decimal(str((c.get("resources") or {}).get("limits", {}).get(
            "nvidia.com/gpu", 0))) for c in pod["spec"].get("containers") or []), Decimal(0))

    def _allocated(self, queues: dict[str, dict[str, Any]], label: str,
                   scheduler: str) -> dict[str, Decimal]:
        """GPUs placed per queue, counted up the hierarchy (proportion.go:359-401): only KAI's
        pods have a pod group, hence a queue (pkg/podgrouper/pod_controller.go:90-92)."""
        out: dict[str, Decimal] = {}
        for pod in self._objects("Pod"):
            if not pod["spec"].get("nodeName") or pod["status"].get("phase") in (
                    "Succeeded", "Failed") or pod["spec"].get("schedulerName") != scheduler:
                continue
            name = (pod["metadata"].get("labels") or {}).get(label)
            while name in queues:
                out[name] = out.get(name, Decimal(0)) + self._ask(pod)
                name = (queues[name].get("spec") or {}).get("parentQueue")
        return out

    # ---------------------------------------------------------------- nodes

    @staticmethod
    def _tolerated(pod: dict[str, Any], node: dict[str, Any]) -> bool:
        tolerations = [*(pod["spec"].get("tolerations") or []), *_TOLERATIONS]
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any((not t.get("key") or t["key"] == taint["key"])
                       and (not t.get("effect") or t["effect"] == taint["effect"])
                       and (t.get("operator") == "Exists"
                            or t.get("value", "") == taint.get("value", ""))
                       for t in tolerations):
                return False
        return True

    def _gpus_free(self, node: dict[str, Any], fill: list[Decimal]) -> list[Decimal]:
        """What each GPU of `node` has left: whole-GPU pods running there (placed by anyone)
        hold the first free devices, fractions what the fake put on their group."""
        left = [1 - used for used in fill]
        held = sum((self._ask(p) for p in self._objects("Pod")
                    if p["spec"].get("nodeName") == node["metadata"]["name"]
                    and p["status"].get("phase") not in ("Succeeded", "Failed")
                    and not (p["metadata"].get("annotations") or {}).get("gpu-fraction")),
                   Decimal(0))
        for index, room in enumerate(left):
            if held <= 0:
                break
            if room == 1:
                left[index], held = Decimal(0), held - 1
        return left

    def _schedule(self, pod: dict[str, Any], settings: dict[str, str], args: list[str]) -> None:
        meta = pod["metadata"]
        queues = self._queues(settings, args)
        label = settings["queueLabelKey"]
        queue = (meta.get("labels") or {}).get(label, "default-queue")
        if queue not in queues:
            self._refuse(pod, kw.job_fit_errors_message(
                [(kw.QUEUE_DOES_NOT_EXIST, [kw.queue_does_not_exist(queue)])]), args)
            return
        want = self._ask(pod)
        allocated = self._allocated(queues, label, settings["schedulerName"])
        name: str | None = queue
        while name in queues:
            limit = self._limit(queues[name])
            held = allocated.get(name, Decimal(0))
            if limit != -1 and limit < held + want:
                self._refuse(pod, kw.job_fit_errors_message([(kw.OVER_LIMIT, [kw.over_limit(
                    name, float(limit), float(held), float(want))])]), args)
                return
            name = (queues[name].get("spec") or {}).get("parentQueue")
        fraction = (meta.get("annotations") or {}).get("gpu-fraction")
        pool = settings["nodePoolLabelKey"]
        nodes = [n for n in self._objects("Node")
                 if pool not in (n["metadata"].get("labels") or {})]
        biggest = max((Decimal(str(n["status"]["allocatable"].get("nvidia.com/gpu", 0)))
                       for n in nodes), default=Decimal(0))
        if want > biggest and not self.place_anyway:
            self._refuse(pod, kw.pre_predicate_failed(
                meta["namespace"], meta["name"], kw.MAX_NODE_POOL_RESOURCES,
                kw.max_node_resources(meta["namespace"], meta["name"], float(want),
                                      float(biggest))), args)
            return
        reasons: dict[str, int] = {}
        for node in nodes:
            node_name = node["metadata"]["name"]
            gpus = int(node["status"]["allocatable"].get("nvidia.com/gpu", 0))
            fill = self.groups.setdefault(node_name, [Decimal(0)] * gpus)
            left = self._gpus_free(node, fill)
            free = [i for i, room in enumerate(left) if room >= want] if fraction else []
            short = not free if fraction else want > sum(1 for room in left if room == 1)
            why = ([kw.NOT_ENOUGH_GPUS] if short and not self.place_anyway
                   else kw.node_condition_reasons(node))
            if not why and not self._tolerated(pod, node):
                why = ["an untolerated taint (kube-scheduler's TaintToleration)"]
            labels = node["metadata"].get("labels") or {}
            if not why and any(labels.get(k) != v for k, v in
                               (pod["spec"].get("nodeSelector") or {}).items()):
                why = ["a nodeSelector it does not match (kube-scheduler's NodeAffinity)"]
            if why:
                for reason in why:
                    reasons[reason] = reasons.get(reason, 0) + 1
                continue
            if fraction:
                index = (max(free, key=lambda i: left[i]) if self.spread
                         else min(free, key=lambda i: left[i]))
                fill[index] += want
                meta.setdefault("labels", {})[kw.GPU_GROUP] = f"{node_name}-gpu{index}"
            pod["spec"]["nodeName"] = node_name
            self.api.add_event(pod, "Scheduled", kw.scheduled(meta["namespace"], meta["name"],
                                                              node_name), kind="Normal",
                               component=flag(args, "scheduler-name")
                               or kw.DEFAULT_SCHEDULER_NAME)
            return
        unpinned = [r for r in reasons if "kube-scheduler's" in r]
        if unpinned:
            raise NotImplementedError(
                f"FakeKai would refuse {meta['name']} for {unpinned}: kube-scheduler's texts for "
                f"these are not pinned in the tests; write them in tests/kube_wire.py first")
        self._refuse(pod, kw.fit_errors(reasons), args)
