"""What KAI-Scheduler v0.16.8 (kai-scheduler/KAI-Scheduler 40da4c87) writes, for the builders and
fakes that stand for it: event texts, the PodGroup's resource status and the Queue status the
queue-controller sums from them. Each encoder is written from the Go line cited beside it, never
with gpulab's parsers (a fake that used gpulab's reading would agree with any bug in it).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

GPU = "nvidia.com/gpu"  # pkg/common/constants NvidiaGpuResource, the key KAI sums GPUs under
NODE_POOL = "default"  # the node pool of a cluster without node-pool labels


def humanize(value: float) -> str:
    """HumanizeResource(value, 1) (pkg/scheduler/api/resource_info/base_resources.go:166-171):
    -1 is "Unlimited", else go-humanize v1.0.1 FtoaWithDigits(value, 3) (ftoa.go:26-48):
    `strconv.FormatFloat(v, 'f', 6, 64)` cut to 3 decimals, trailing zeros and dot dropped."""
    if value == -1:
        return "Unlimited"
    text = f"{value:.6f}"
    whole, _, fraction = text.partition(".")
    text = f"{whole}.{fraction[:3]}"
    return text.rstrip("0").rstrip(".")


def over_limit(queue: str, limit: float, allocated: float, requested: float) -> str:
    """The GPU case of GetJobOverMaxAllowedMessageForQueue (pkg/scheduler/api/
    unschedule_info.go:57-83), which the proportion plugin gives a job its queue's limit refuses
    (plugins/proportion/capacity_policy/max_allowed_check.go:68-76)."""
    return (f"{queue} quota has reached the allowable limit of GPUs. Limit is {humanize(limit)} "
            f"GPUs, currently {humanize(allocated)} GPUs allocated and workload requested "
            f"{humanize(requested)} GPUs")


def fit_errors(reasons: dict[str, int]) -> str:
    """TasksFitErrors.Error() (pkg/scheduler/api/common_info/pod_errors.go:21, 219-245):
    ResourcesWereNotFoundMsg, then `<count> <reason>` per reason, sorted, joined by ". \\n",
    ended by "."."""
    histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
    text = "no nodes with enough resources were found"
    separator = ". \n"
    return f"{text}: {separator.join(histogram)}." if histogram else text


# pod_errors.go:101: a node whose free GPUs are fewer than the pod asks.
NOT_ENOUGH_GPUS = "node(s) didn't have enough resources: GPUs"

# The reasons of a job KAI turns away for its queue (pkg/apis/scheduling/v2alpha2/
# podgroup_types.go:358, 361).
OVER_LIMIT = "OverLimit"
QUEUE_DOES_NOT_EXIST = "QueueDoesNotExist"


def queue_does_not_exist(queue: str) -> str:
    """The QueueDoesNotExist message of a PodGroup whose spec.queue the shard does not have
    (validatePodgroupQueue, pkg/scheduler/cache/cluster_info/cluster_info.go:425-428, 454-458):
    the job's only fit error, so the pod reads it as job_fit_errors_message."""
    return f"Queue '{queue}' does not exist"


def node_condition_reasons(node: dict[str, Any]) -> list[str]:
    """A node's reasons under KAI's node-condition predicate (CheckNodeConditionPredicate,
    pkg/scheduler/scheduler_util/scheduler_utils.go:12-40): cordoned, then each condition in the
    node's order, Ready not True or a pressure/network condition not False. Each is a reason of
    its own in the fit-error histogram (plugins/predicates/predicates.go:343-349,
    NewFitErrorByReasons, pod_errors.go:54-60)."""
    reasons = ["node is unschedulable"] if (node.get("spec") or {}).get("unschedulable") else []
    for condition in (node.get("status") or {}).get("conditions") or []:
        kind, status = condition.get("type"), condition.get("status")
        if kind == "Ready" and status != "True":
            reasons.append("node has NotReady condition")
        elif kind in ("MemoryPressure", "DiskPressure", "PIDPressure",
                      "NetworkUnavailable") and status != "False":
            reasons.append(f"node has {kind} condition")
    return reasons


MAX_NODE_POOL_RESOURCES = "MaxNodePoolResources"  # k8s_internal/predicates/predicates.go:29


def detailed_resources(gpus: float, milli_cpu: float = 0, memory: float = 0) -> str:
    """DetailedResourceString of a pod's request (pkg/scheduler/api/resource_info/
    resource_vector.go:299-331): GPUs, cores and GB humanized (base_resources.go:19-20, 166-171),
    then every other non-zero resource of the vector, here `pods: 1`, which every pod's request
    carries (api/pod_info/pod_info.go:400; `pods` is the vector's fourth resource,
    resource_vector.go:25-45)."""
    return (f"GPU: {humanize(gpus)}, CPU: {humanize(milli_cpu / 1000)} (cores), memory: "
            f"{humanize(memory / 1e9)} (GB), pods: 1")


def max_node_resources(namespace: str, name: str, gpus: float, max_gpus: float,
                       pool: str = NODE_POOL) -> str:
    """The MaxNodePoolResources pre-filter's message for a pod asking more GPUs than any node
    of the shard has allocatable (k8s_internal/predicates/maxNodeResources.go:67-81, 114-136;
    the pool is the shard's partition value, else "default", :52-54)."""
    asked = f"The pod {namespace}/{name} requires {detailed_resources(gpus)}. "
    if max_gpus == 0:
        return f"{asked}No node in the {pool} node-pool has GPU resources"
    return (f"{asked}Max GPU resources available in a single node in the {pool} node-pool is "
            f"topped at {humanize(max_gpus)}")


def pre_predicate_failed(namespace: str, name: str, predicate: str, message: str) -> str:
    """A pod one pre-filter turns away before any node is tried (evaluateTaskOnPrePredicate,
    plugins/predicates/predicates.go:207-237, prePredicateErrorFormat :49; the reason equal to
    the status's error is dropped, :65-79, kube-scheduler v0.35.4 framework/interface.go:
    137-205). The allocate action, KAI's first (apis/kai/v1/schedulingshard_types.go:223-229),
    keeps it as the pod's fit error (actions/common/allocate.go:157-165) and, with no node
    error under it, TasksFitErrors.Error() is this text alone (pod_errors.go:219-245): the
    pod's Unschedulable condition and event."""
    return (f"Scheduling conditions were not met for pod {namespace}/{name}:\n{predicate}: "
            f"{message}.\n")


def not_found(namespace: str, name: str, message: str) -> str:
    """The PodGroup's PodSchedulingErrors reason for a pod no node fits (pkg/scheduler/actions/
    common/allocate.go:244-248)."""
    return f"Resources were not found for pod {namespace}/{name} due to: {message}"


def scheduled(namespace: str, name: str, node: str, pool: str = NODE_POOL) -> str:
    """The Normal `Scheduled` event of a bound pod (pkg/scheduler/cache/status_updater/
    default_status_updater.go:152-156), recorded when the scheduler creates the pod's
    BindRequest (pkg/scheduler/cache/cache.go:321-339, the pool :398-403)."""
    return f"Successfully assigned pod {namespace}/{name} to node {node} at node-pool {pool}"


# `source.component` of the events KAI's scheduler writes on pods (Unschedulable, Scheduled) is
# the `--scheduler-name` it runs with: its cache's recorder is made with it (pkg/scheduler/cache/
# cache.go:174-182, from pkg/scheduler/scheduler.go:88 and cmd/scheduler/app/server.go:82), not
# with `<name>-<shard>` (the leader-election recorder's, server.go:209-213). Its default
# (cmd/scheduler/app/options/options.go:96, pkg/common/constants/constants.go:21):
DEFAULT_SCHEDULER_NAME = "kai-scheduler"


def quantity(amount: Decimal) -> str:
    """A resource.Quantity's canonical text for GPU amounts: whole numbers bare, fractions in
    milli-units ("330m", "2830m"), as the API server returns `status.allocated`."""
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int(amount * 1000)}m"


def pod_group_resources(fraction: Decimal | None, whole_gpus: int, *, allocated: bool
                        ) -> dict[str, Any]:
    """status.resourcesStatus of a bare pod's PodGroup (pkg/podgroupcontroller/controllers/
    patcher/pod_group.go:38-48, from metadata/pod.go:24-62): requested, for a Pending or Running
    pod, is its containers' requests plus the gpu-fraction annotation under nvidia.com/gpu
    (pod.go:112-128, resources/requested.go:19-56); allocated, for a pod bound or running
    (pod.go:73-78), is its requests plus the fraction it received, when the binder marked it
    `received-resource-type: Fraction` (pod.go:89-110, resources/received.go:22-34). A pod that
    requests no GPU has empty lists, which the API leaves out."""
    amount = (fraction or Decimal(0)) + whole_gpus
    requested = {GPU: quantity(amount)} if amount else {}
    status: dict[str, Any] = {}
    if requested:
        status["requested"] = requested
        if allocated:
            status["allocated"] = dict(requested)
    return status


# The binder's annotation on a pod bound to a GPU fraction (pkg/binder/binding/binder.go:130-133,
# pkg/common/constants/constants.go:59), and the label of the GPU group it shares
# (constants.go:74, binding/resourcereservation/resource_reservation.go:294).
RECEIVED_TYPE = "received-resource-type"
GPU_GROUP = "runai-gpu-group"


def sum_resources(lists: list[dict[str, str]]) -> dict[str, str]:
    """SumResources over GPU lists (pkg/common/resources/resource_list.go:15-31): a key is
    present only when some list has it."""
    total: dict[str, Decimal] = {}
    for resources in lists:
        for key, text in resources.items():
            value = Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text)
            total[key] = total.get(key, Decimal(0)) + value
    return {key: quantity(value) for key, value in total.items()}


def queue_status(children: list[dict[str, Any]], groups: list[dict[str, Any]],
                 child_names: list[str]) -> dict[str, Any]:
    """A Queue's status as the queue-controller writes it: childQueues (pkg/queuecontroller/
    controllers/childqueues_updater/childqueues_updater.go:20-37), allocated and requested summed over the child queues' statuses and the queue's own
    PodGroups' resourcesStatus (resource_updater.go:23-77); empty lists are left out."""
    status: dict[str, Any] = {}
    if child_names:
        status["childQueues"] = list(child_names)
    for key in ("allocated", "requested"):
        summed = sum_resources([(c.get("status") or {}).get(key) or {} for c in children]
                               + [g.get(key) or {} for g in groups])
        if summed:
            status[key] = summed
    return status


def job_fit_errors_message(errors: list[tuple[str, list[str]]]) -> str:
    """JobFitErrorsToMessage (pkg/scheduler/api/common_info/job_errors.go:44-75): the reason of
    the only fit error (else "Unable to schedule podgroup", :20), then ": " and its messages
    (repeated ones counted), sorted, joined by ". \\n", ended by ".". KAI writes it as the
    PodGroup's condition message and, when no per-pod fit error exists, as the pod's
    Unschedulable event and condition (status_updater/default_status_updater.go:355-378,
    424-438)."""
    reason = errors[0][0] if len(errors) == 1 else "Unable to schedule podgroup"
    counts: dict[str, int] = {}
    for _reason, messages in errors:
        for message in messages:
            counts[message] = counts.get(message, 0) + 1
    histogram = sorted(f"{n} {m}" if n > 1 else m for m, n in counts.items())
    separator = ". \n"
    return f"{reason}: {separator.join(histogram)}." if histogram else reason


def unschedulable_condition(message: str, explanations: list[dict[str, Any]],
                            when: str) -> dict[str, Any]:
    """The PodGroup's scheduling condition when KAI cannot place it (markPodGroupUnschedulable,
    default_status_updater.go:297-318): type UnschedulableOnNodePool on the node pool, reason
    Unschedulable, the job message, status True, one explanation per fit error (reason,
    message, details: job_errors.go:119-125, 211-217)."""
    return {"type": "UnschedulableOnNodePool", "nodePool": NODE_POOL, "reason": "Unschedulable",
            "message": message, "status": "True", "transitionID": "0",
            "lastTransitionTime": when, "reasons": explanations}


def top_owner_metadata(name: str, uid: str) -> str:
    """The PodGroup annotation `kai.scheduler/top-owner-metadata` of a bare pod
    (pkg/common/constants/constants.go:51; default_grouper.go:98-117 with
    pkg/podgrouper/topowner: yaml.v3 of {name, uid, group, version, kind})."""
    return f'name: {name}\nuid: {uid}\ngroup: ""\nversion: v1\nkind: Pod\n'


TOP_OWNER_METADATA = "kai.scheduler/top-owner-metadata"


_SI_SUFFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def si_quantity(value: int, *, milli: bool = False) -> str:
    """resource.NewQuantity(value, DecimalSI) (or NewMilliQuantity) as text: k8s.io/apimachinery
    v0.36.3 pkg/api/resource/quantity.go:425-458 (CanonicalizeBytes: zero is "0", else the
    mantissa with its exponent a multiple of 3 and the DecimalSI suffix of that exponent)."""
    if value == 0:
        return "0"
    exponent = -3 if milli else 0
    while value % 1000 == 0 and exponent < 18:
        value //= 1000
        exponent += 3
    return f"{value}{_SI_SUFFIXES[exponent]}"


Resources = tuple[float, float, float]  # (GPUs, millicores, memory bytes), as KAI counts them


def resource_list(resources: Resources) -> dict[str, str]:
    """ResourceRequirementsFromQuantities(...).ToResourceList() (plugins/proportion/utils/
    utils.go:23-29, api/resource_info/resource_requirment.go:34-39, 74-88 and
    base_resources.go:107-116): cpu as int64 millicores, memory as int64 bytes, and under
    nvidia.com/gpu a fraction below one as milli-GPUs, else the whole devices
    (NewGpuResourceRequirementWithGpus, gpu_resource_requirment.go:44-58: int64 of the GPUs
    from one up, none for zero or KAI's -1 "unlimited")."""
    gpus, milli_cpu, memory = resources
    if 0 < gpus < 1:
        gpu = si_quantity(int(gpus * 1000), milli=True)
    else:
        gpu = si_quantity(int(gpus) if gpus >= 1 else 0)
    return {"cpu": si_quantity(int(milli_cpu), milli=True), "memory": si_quantity(int(memory)),
            GPU: gpu}


def quota_details(queue: str, *, requested: Resources, deserved: Resources,
                  allocated: Resources, allocated_non_preemptible: Resources, limits: Resources,
                  pod_group_requested: Resources, preemptible: bool) -> dict[str, Any]:
    """`details.queueDetails` of an OverLimit explanation (plugins/proportion/capacity_policy/
    max_allowed_check.go:16-48; field names from apis/scheduling/v2alpha2/podgroup_types.go:
    319-350): the queue's name (its QueueAttributes.UID, the Queue object's name:
    api/queue_info/queue_info.go:58) and eight resource lists (resource_list), the pod group's
    non-preemptible request empty (all zero) when the job is preemptible. The queue's shares
    are what the proportion plugin holds (proportion.go:318-412): deserved and limits from the
    Queue's spec (memory times 1000 * 1000, -1 kept), allocated from its running jobs,
    requested from running and pending ones."""
    return {
        "name": queue,
        "queueRequestedResources": resource_list(requested),
        "queueDeservedResources": resource_list(deserved),
        "queueAllocatedNonPreemptibleResources": resource_list(allocated_non_preemptible),
        "podGroupRequestedResources": resource_list(pod_group_requested),
        "podGroupRequestedNonPreemptibleResources": resource_list(
            (0, 0, 0) if preemptible else pod_group_requested),
        "queueAllocatedResources": resource_list(allocated),
        "queueResourceLimits": resource_list(limits),
    }
