"""KAI-01..KAI-07: pure functions `(KaiLabState, profile, team) -> CheckResult`.

Each proves one thing the vCluster + KAI write-up showed by hand; docs/vcluster-kai.md describes
what each proves and when it fails.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gpulab.stacks.vcluster_kai import objects as ko
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.checks.common import (
    Ctx,
    accounted_elsewhere,
    control_plane_summary,
    explain_run,
    prepare,
    run_or_verdict,
)
from gpulab.verify import kai
from gpulab.verify import objects as o
from gpulab.verify.observe import VERIFY_NAMESPACE
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState, ProbeRun
    from gpulab.verify.state import JsonObj

__all__ = [
    "GPU_GROUP_LABEL",
    "check_api",
    "check_gpu_node",
    "check_over_capacity",
    "check_over_limit",
    "check_pod_via_kai",
    "check_queue_tree",
    "check_sharing",
    "millis",
]

GPU_GROUP_LABEL = kai.GPU_GROUP_LABEL  # KAI's label on fraction pods sharing one device
OVER_LIMIT_TEXT = "has reached the allowable limit"  # KAI's OverLimit message (unschedule_info.go)


def millis(value: Decimal | float) -> str:
    """0.33 → '330m', 1 → '1' (how KAI writes GPU quantities)."""
    amount = Decimal(str(value))
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int(amount * 1000)}m"


def _number(value: Any) -> str:
    """A queue value as KAI's docs write it: whole numbers without a decimal point, every digit
    kept (`:g` would print a memory limit of 1234567 as 1.23457e+06); a bool is not a number."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return str(value)


# --------------------------------------------------------------------------- KAI-01


def check_api(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """The team's vCluster answers `/version` from the host, at the address its saved kubeconfig
    names (the NodePort on the kind node)."""
    ctx = prepare(lab, profile, team, "KAI-01")
    if isinstance(ctx, CheckResult):
        return ctx
    st = ctx.st
    plane = control_plane_summary(st)
    where = st.api_server or f"port {ctx.spec.api_node_port}"
    if st.api_error:
        pods = st.control_plane_pods or ()
        running = bool(pods) and all(o.pod_serving(p) for p in pods)
        unreached = (
            "this machine cannot reach the address the vCluster is exposed at (docs/"
            "own-cluster.md, 'Reaching the vClusters')" if lab.host.gpus == "found" else
            "the host cannot reach the NodePort on the kind node (docs/vcluster-kai.md, "
            "'Reaching a vCluster from the host')")
        if st.control_plane_pods is None:
            # Unread is not absent: without its pods, whether the control plane runs is unknown.
            cause = (f"whether its control plane runs on the host is unknown (its pods: "
                     f"{plane}); kubectl -n {ctx.spec.namespace} get pods on the host")
        elif running:
            cause = f"its control plane runs on the host, so {unreached}"
        else:
            cause = (f"its control plane is not running (Helm release {team} in "
                     f"{ctx.spec.namespace}; gpulab up installs it)")
        return ctx.failed(f"the vCluster API of {team} at {where} did not answer: "
                          f"{st.api_error}; {cause}", f"control plane on the host: {plane}")
    if not st.api_version:
        return ctx.error(f"the vCluster API of {team} was not observed in this run or recording")
    return ctx.passed(f"{where} answered /version {st.api_version}; control plane on the host: "
                      f"{plane}")


# --------------------------------------------------------------------------- KAI-02


def _allocatable(node: JsonObj | None) -> str:
    return str(((node or {}).get("status") or {}).get("allocatable", {}).get(kr.GPU_RESOURCE, 0))


def check_gpu_node(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """The team's vCluster lists the pool's GPU nodes, as the host has them: same name, the pool
    label, `nvidia.com/gpu` allocatable = the pool's GPUs per node. The host's node is the truth
    (vCluster syncs its copy from it): a copy showing GPUs the host's node no longer has is
    stale, and without the host's nodes the copy proves nothing."""
    ctx = prepare(lab, profile, team, "KAI-02")
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.nodes is None:
        if ctx.st.nodes_error:
            return ctx.failed(f"{team}'s vCluster refused to list nodes: {ctx.st.nodes_error}")
        return ctx.unobserved("the node list")
    if lab.host.gpu_nodes is None:
        why = (f"could not be read: {lab.host.nodes_error}" if lab.host.nodes_error
               else "were not observed in this run or recording")
        return ctx.error(f"the host's GPU nodes {why}; the nodes {team}'s vCluster lists are "
                         f"copies synced from them and may be stale, so they prove nothing alone")
    if lab.host.gpus == "found":
        return _existing_gpu_nodes(ctx, lab, team)
    pool = profile.gpu_pool
    host_nodes = {o.name(n): n for n in lab.host.gpu_nodes}
    wanted = sorted(host_nodes) or kr.gpu_node_names(profile, lab.lab)
    listed = {o.name(n): n for n in ctx.st.nodes}
    problems: list[str] = []
    seen: list[str] = []
    if not host_nodes:
        problems.append(f"the host has no node labelled {kr.POOL_LABEL}={pool.name} (the GPU "
                        f"pool; gpulab up labels the worker and fake-gpu-operator serves it)")
    for name in wanted:
        node = listed.get(name)
        if node is None:
            problems.append(_not_synced(team, listed, name))
            continue
        have = _allocatable(node)
        host = host_nodes.get(name)
        if host is not None and _allocatable(host) != str(pool.count):
            stale = (f"; {team}'s vCluster still shows {have}: its copy is stale (the host's "
                     f"node is the truth)" if have != _allocatable(host) else "")
            problems.append(
                f"{name} has {kr.GPU_RESOURCE} {_allocatable(host)} on the host{stale}: "
                f"fake-gpu-operator does not advertise the pool's {pool.count} GPU(s) (step "
                f"management/fake-gpus; kubectl describe node {name} on the host)")
            continue
        if have != str(pool.count):
            problems.append(f"{name} has {kr.GPU_RESOURCE} {have} in {team}'s vCluster, "
                            f"the pool has {pool.count} per node")
            continue
        label = o.labels(node).get(kr.POOL_LABEL)
        if label != pool.name:
            problems.append(f"{name} is listed without its pool label {kr.POOL_LABEL}={pool.name}"
                            f" (has {label!r})")
            continue
        model = o.labels(node).get("nvidia.com/gpu.product", pool.model)
        seen.append(f"{name} ({model}, {have} x {kr.GPU_RESOURCE} allocatable)")
    if problems:
        return ctx.failed(summarize_problems(problems))
    return ctx.passed(f"{team}'s vCluster lists GPU node {', '.join(seen)} among {len(listed)} "
                      f"node(s), synced from the host")


def _not_synced(team: str, listed: Mapping[str, Any], name: str) -> str:
    """Why GPU node `name` is missing from the nodes `team`'s vCluster lists."""
    names = ", ".join(sorted(listed)) or "none"
    return (f"{team}'s vCluster lists {len(listed)} node(s) ({names}) but not the GPU node "
            f"{name}: host nodes are synced in only with sync.fromHost.nodes enabled and "
            f"selector all (gpulab's values)")


def _existing_gpu_nodes(ctx: Ctx, lab: KaiLabState, team: str) -> CheckResult:
    """KAI-02 on a cluster gpulab did not make: the host's GPU nodes are every node advertising
    GPUs (GPU Operator, device plugin); each is listed in the vCluster with the GPUs the host's
    node has (no pool label: gpulab labels no node it did not make)."""
    host_nodes = {o.name(n): n for n in lab.host.gpu_nodes or ()}
    listed = {o.name(n): n for n in ctx.st.nodes or ()}
    if not host_nodes:
        return ctx.failed(f"no node of the host advertises {kr.GPU_RESOURCE} now (the GPU "
                          f"Operator or device plugin; kubectl describe nodes on the host)")
    problems: list[str] = []
    seen: list[str] = []
    for name in sorted(host_nodes):
        node = listed.get(name)
        if node is None:
            problems.append(_not_synced(team, listed, name))
            continue
        have, host = _allocatable(node), _allocatable(host_nodes[name])
        if have != host:
            problems.append(f"{name} has {kr.GPU_RESOURCE} {have} in {team}'s vCluster, {host} "
                            f"on the host: its copy is stale (the host's node is the truth)")
            continue
        model = o.labels(node).get("nvidia.com/gpu.product") or "model not labelled"
        seen.append(f"{name} ({model}, {have} x {kr.GPU_RESOURCE} allocatable)")
    if problems:
        return ctx.failed(summarize_problems(problems))
    return ctx.passed(f"{team}'s vCluster lists GPU node {', '.join(seen)} among {len(listed)} "
                      f"node(s), synced from the host")


# --------------------------------------------------------------------------- KAI-03


def _differences(want: Any, live: Any, path: str) -> list[str]:
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return [f"{path} is {live!r}, the profile says {want!r}"]
        out: list[str] = []
        for key, value in want.items():
            where = f"{path}.{key}"
            if key not in live:
                limits = key == "limit" or (isinstance(value, dict) and "limit" in value)
                why = " (KAI reads an omitted limit as 0)" if limits else ""
                out.append(f"{where} is missing{why}; the profile says {_number(value)}")
            else:
                out += _differences(value, live[key], where)
        return out
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if isinstance(live, (int, float)) and not isinstance(live, bool) and float(
                live) == float(want):
            return []
        return [f"{path} is {_number(live)}, the profile says {_number(want)}"]
    return [] if want == live else [f"{path} is {live!r}, the profile says {want!r}"]


def _resources_text(spec: dict[str, Any]) -> str:
    parts = []
    for resource in ("gpu", "cpu", "memory"):
        res = (spec.get("resources") or {}).get(resource) or {}
        parts.append(f"{resource} {_number(res.get('quota'))}/{_number(res.get('limit'))}/"
                     f"{_number(res.get('overQuotaWeight'))}")
    return ", ".join(parts)


def check_queue_tree(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """The team's queue and the org queue exist on the host exactly as the profile renders them
    (parent, priority, quota/limit/overQuotaWeight of gpu, cpu and memory, every limit explicit)."""
    ctx = prepare(lab, profile, team, "KAI-03")
    if isinstance(ctx, CheckResult):
        return ctx
    queues = lab.host.queues
    if queues is None:
        if lab.host.queues_error:
            return ctx.error(f"the host's queues could not be read: {lab.host.queues_error}")
        return ctx.error("the host's queues were not observed in this run or recording")
    problems: list[str] = []
    evidence: list[str] = []
    for name, want in ((ctx.queue, kr.queue_spec(profile, ctx.spec)),
                       (profile.org_queue.name, kr.queue_spec(profile, None))):
        live = ko.find_queue(queues, name)
        if live is None:
            problems.append(f"Queue {name} does not exist on the host (gpulab up creates it)")
            continue
        spec = live.get("spec") or {}
        problems += [f"Queue {name}: {d}" for d in _differences(want, spec, "spec")]
        if "parentQueue" not in want and spec.get("parentQueue"):
            # The profile writes this queue at the top of the tree: under another parent it is
            # not the profile's hierarchy (and that parent's quota and limit apply to it).
            problems.append(f"Queue {name}: spec.parentQueue is {spec['parentQueue']!r}, the "
                            f"profile writes none ({name} is a top-level queue)")
        parent = f" under {spec['parentQueue']}" if spec.get("parentQueue") else ""
        evidence.append(f"{name}{parent} ({_resources_text(spec)})")
    shown = "; ".join(evidence)
    if problems:
        return ctx.failed(summarize_problems(problems) + "; run gpulab up to re-apply the queues",
                          shown)
    return ctx.passed(f"quota/limit/overQuotaWeight as in the profile: {shown}")


# --------------------------------------------------------------------------- KAI-04


def check_pod_via_kai(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """A pod the team creates inside its vCluster reaches the host with `schedulerName:
    kai-scheduler`, its queue label and its `gpu-fraction`, and KAI groups it into that queue."""
    ctx = prepare(lab, profile, team, "KAI-04")
    if isinstance(ctx, CheckResult):
        return ctx
    run = run_or_verdict(ctx, "gpu-share")
    if isinstance(run, CheckResult):
        return run
    if run.created is None or run.host is None:
        return ctx.failed(explain_run(ctx, run))
    host = run.host
    share = kr.probe_sizes(profile, ctx.spec).share_text
    where = f"host pod {ctx.spec.namespace}/{o.name(host)}"
    problems: list[str] = []
    scheduler = o.scheduler_name(host)
    if scheduler != kr.KAI_SCHEDULER:
        problems.append(f"{where} has schedulerName {scheduler}: vCluster copies the pod spec "
                        f"unchanged, so something rewrote it; KAI never sees the pod")
    queue = o.labels(host).get(kr.QUEUE_LABEL)
    if queue is None:
        problems.append(f"{where} has no {kr.QUEUE_LABEL} label: KAI puts it in default-queue")
    elif queue != ctx.queue:
        problems.append(f"{where} is labelled {kr.QUEUE_LABEL}={queue}, not {ctx.queue}")
    fraction = o.annots(host).get(kr.FRACTION_ANNOTATION)
    if fraction != share:
        problems.append(f"{where} has {kr.FRACTION_ANNOTATION} {fraction!r}, the pod asked "
                        f"{share!r}")
    group = run.pod_group
    group_queue = str((group or {}).get("spec", {}).get("queue") or "")
    if group is None:
        problems.append(f"KAI's pod-grouper made no PodGroup for {where} (no "
                        f"{kr.POD_GROUP_ANNOTATION} annotation); events: "
                        f"{o.short_events(run.events)}")
    elif group_queue != ctx.queue:
        problems.append(f"PodGroup {o.name(group)} is in queue {group_queue or 'none'}, not "
                        f"{ctx.queue}")
    evidence = (f"{where}: schedulerName {scheduler}, {kr.QUEUE_LABEL}={queue}, "
                f"{kr.FRACTION_ANNOTATION} {fraction}"
                + (f"; PodGroup {o.name(group)} in queue {group_queue or 'none'}" if group
                   else ""))
    if problems:
        return ctx.failed(summarize_problems(problems), evidence)
    return ctx.passed(evidence)


# --------------------------------------------------------------------------- KAI-05


def _running(run: ProbeRun | None) -> bool:
    """Running on a node with every container running and ready (a crash-looping container
    holds its GPU share without using it)."""
    return run is not None and o.pod_serving(run.host) and bool(o.pod_node(run.host))


def check_sharing(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """Every team's share pod runs at the same moment on one GPU node (one GPU group when KAI
    labels it), and the team's queue shows the share as allocated (330m for 0.33)."""
    ctx = prepare(lab, profile, team, "KAI-05")
    if isinstance(ctx, CheckResult):
        return ctx
    run = run_or_verdict(ctx, "gpu-share")
    if isinstance(run, CheckResult):
        return run
    if not _running(run):
        containers = o.container_problems(run.host) if run.host else []
        if containers and o.pod_phase(run.host) == "Running":
            return ctx.failed(
                f"{run.name} is Running on {o.pod_node(run.host) or '-'} but its containers are "
                f"not: {', '.join(containers)}; kubectl -n {VERIFY_NAMESPACE} logs {run.name} "
                f"--previous in {team}'s vCluster")
        return ctx.failed(explain_run(ctx, run))
    share = kr.probe_sizes(profile, ctx.spec).share
    runs: dict[str, ProbeRun] = {team: run}
    problems: list[str] = []
    if elsewhere := accounted_elsewhere(ctx, run):
        problems.append(elsewhere)
    for other in profile.teams:
        if other.name == team:
            continue
        other_st = lab.team(other.name)
        other_run = other_st.run("gpu-share") if other_st else None
        if not _running(other_run):
            host = other_run.host if other_run else None
            state = o.pod_phase(host) if other_run else "not observed"
            if host is not None and state == "Running" and o.container_problems(host):
                state += f", {', '.join(o.container_problems(host))}"
            problems.append(f"{other.name}'s gpu-share is not Running at the same moment "
                            f"({state}), so the GPU was not shared by every team (see "
                            f"{other.name}'s KAI-05)")
        elif other_run is not None:
            runs[other.name] = other_run
    nodes = {name: o.pod_node(r.host) for name, r in runs.items()}
    groups = {name: o.labels(r.host).get(GPU_GROUP_LABEL) for name, r in runs.items()}
    if len(set(nodes.values())) > 1:
        problems.append(f"the share pods run on different nodes ({nodes}), not on one GPU")
    elif all(groups.values()) and len(set(groups.values())) > 1:
        problems.append(f"the share pods are on different GPUs ({GPU_GROUP_LABEL}: {groups})")
    node = nodes[team]
    group = f" (GPU group {groups[team]})" if groups[team] else ""
    together = (f"gpu-share of {', '.join(runs)} Running together on {node}{group}, "
                f"{kr.FRACTION_ANNOTATION} {share:g} each")
    queues = lab.host.queues
    if queues is None:
        why = lab.host.queues_error or "not in this run or recording"
        return ctx.error(f"the queues' status was not observed ({why})", together)
    queue = ko.find_queue(queues, ctx.queue)
    want = Decimal(str(share))
    have = ko.allocated(queue, kr.GPU_RESOURCE)
    raw = ((queue or {}).get("status") or {}).get("allocated", {}) or {}
    shown = raw.get(kr.GPU_RESOURCE, "none") if isinstance(raw, dict) else "none"
    if queue is None:
        problems.append(f"Queue {ctx.queue} does not exist (KAI-03)")
    elif have != want:
        wait = f" ({lab.host.queue_wait})" if lab.host.queue_wait else ""
        problems.append(f"Queue {ctx.queue} shows allocated {kr.GPU_RESOURCE} {shown}, expected "
                        f"{millis(want)} for the running share pod{wait}")
    evidence = f"{together}; Queue {ctx.queue} allocated {kr.GPU_RESOURCE} {shown}"
    if problems:
        return ctx.failed(summarize_problems(problems), evidence)
    return ctx.passed(evidence)


# --------------------------------------------------------------------------- KAI-06, KAI-07


def _placed(ctx: Ctx, run: ProbeRun, what: str, why: str) -> CheckResult | None:
    host = run.host or {}
    node = o.pod_node(host)
    if node or o.pod_phase(host) in ("Running", "Succeeded"):
        return ctx.failed(f"KAI placed {run.name} ({what}) on {node or '?'} {why}",
                          o.pod_summary(host))
    return None


_OVER_LIMIT_QUEUE = re.compile(r"(\S+) quota " + OVER_LIMIT_TEXT)


def _over_limit_queue(reason: ko.KaiReason) -> str:
    """The queue an OverLimit message names ('<queue> quota has reached the allowable limit of
    GPUs. …', unschedule_info.go:81); '' when it names none."""
    match = _OVER_LIMIT_QUEUE.search(reason.message)
    return match.group(1) if match else ""


def check_over_limit(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """A request above the team queue's GPU limit stays Pending and KAI says `OverLimit` (read
    from the PodGroup's scheduling conditions, the pod's events as a fallback)."""
    ctx = prepare(lab, profile, team, "KAI-06")
    if isinstance(ctx, CheckResult):
        return ctx
    sizes = kr.probe_sizes(profile, ctx.spec)
    if sizes.over_limit is None:
        return ctx.skipped(f"Queue {ctx.queue} has no GPU limit (-1), so no request can "
                           f"exceed it")
    run = run_or_verdict(ctx, "gpu-over-limit")
    if isinstance(run, CheckResult):
        return run
    what = f"{sizes.over_limit} x {kr.GPU_RESOURCE}"
    limit = f"queue {ctx.queue}'s GPU limit {sizes.limit:g}"
    if run.host is None or run.created is None:
        return ctx.failed(explain_run(ctx, run))
    placed = _placed(ctx, run, what, f"although {limit}: the limit is not enforced; check the "
                                     f"live queue (KAI-03)")
    if placed is not None:
        return placed
    if elsewhere := accounted_elsewhere(ctx, run):
        return ctx.failed(elsewhere, o.pod_summary(run.host))
    reasons = ko.queue_reasons(run.pod_group) or ko.kai_reasons(run.host, None, run.events)
    coded = [r for r in reasons if r.code == "OverLimit"]
    worded = [r for r in reasons if OVER_LIMIT_TEXT in r.message or "OverLimit" in r.message]
    # KAI walks the queue chain up from the workload's queue and names the queue whose limit
    # is reached first in its message (proportion/capacity_policy/max_allowed_check.go:19-32,
    # api/unschedule_info.go:55-82): only the team's own queue shows the team's limit works.
    # A coded reason is often worded too: each reason once, the one naming the other queue.
    foreign = [r for r in coded + [r for r in worded if r not in coded]
               if _over_limit_queue(r) not in ("", ctx.queue)]
    if foreign:
        queue = _over_limit_queue(foreign[0])
        return ctx.failed(f"{run.name} ({what}) is Pending for queue {queue}'s limit, not "
                          f"{limit}: \"{foreign[0].text()}\"; kubectl get queues.scheduling.run.ai "
                          f"{queue} -o yaml", o.pod_summary(run.host))
    pg = f"PodGroup {o.name(run.pod_group)}" if run.pod_group else "no PodGroup"
    if coded:
        return ctx.passed(f"{run.name} ({what}, {limit}) stays {o.pod_phase(run.host)}; KAI "
                          f"({pg}): {coded[0].text()}")
    if worded:
        return ctx.passed(f"{run.name} ({what}, {limit}) stays {o.pod_phase(run.host)}; KAI "
                          f"({worded[0].source}; {pg} carried no code): {worded[0].text()}")
    if reasons:
        return ctx.failed(f"{run.name} ({what}) is Pending, but KAI gave another reason than "
                          f"OverLimit although it exceeds {limit}: {ko.reasons_text(reasons)}",
                          o.pod_summary(run.host))
    return ctx.failed(explain_run(ctx, run))


def check_over_capacity(lab: KaiLabState, profile: VclusterKaiProfile, team: str
                        ) -> CheckResult:
    """With every share pod running, a request the GPU pool can no longer hold (but within the
    team's limit) stays Pending with KAI's capacity reason, not a queue reason; on a pool of
    several nodes, one that no node can hold (render.ProbeSizes)."""
    ctx = prepare(lab, profile, team, "KAI-07")
    if isinstance(ctx, CheckResult):
        return ctx
    sizes = kr.probe_sizes(profile, ctx.spec)
    amount = sizes.capacity_amount
    what = (f"{kr.FRACTION_ANNOTATION} {amount:g}" if sizes.capacity_fraction is not None
            else f"{sizes.capacity_gpus} x {kr.GPU_RESOURCE}")
    if not sizes.capacity_within_limit:
        return ctx.skipped(
            f"Queue {ctx.queue}'s GPU limit {sizes.limit:g} cannot hold the share pod and a "
            f"capacity probe ({what}) together, so KAI would refuse the probe for the limit "
            f"(KAI-06), not for capacity")
    run = run_or_verdict(ctx, "gpu-over-capacity")
    if isinstance(run, CheckResult):
        return run
    if run.host is None or run.created is None:
        return ctx.failed(explain_run(ctx, run))
    used = sizes.share * len(profile.teams)
    largest = f"no node of the pool has more than {sizes.largest_node} GPU(s)"
    placed = _placed(ctx, run, what, (
        f"although {largest}: a node is over-committed" if sizes.beyond_any_node else
        f"while the share pods held {used:g} of the pool's {sizes.total_gpus} GPU(s): the GPU "
        f"is over-committed"))
    if placed is not None:
        return placed
    if elsewhere := accounted_elsewhere(ctx, run):
        return ctx.failed(elsewhere, o.pod_summary(run.host))
    # The PodGroup's conditions, when there are any, are KAI's own verdict on the workload; the
    # pod's condition and events are read only without them.
    reasons = ko.queue_reasons(run.pod_group) or ko.kai_reasons(run.host, None, run.events)
    capacity = [r for r in reasons if not r.is_queue]
    # On a pool of several nodes the probe asks one GPU more than the largest node has: KAI's
    # MaxNodePoolResources pre-filter refuses it before any node is tried (kai.beyond_any_node).
    too_big = [r for r in capacity if kai.beyond_any_node(r.message)]
    if too_big and sizes.beyond_any_node:
        return ctx.passed(f"{run.name} ({what}) stays {o.pod_phase(run.host)}: {largest}; KAI "
                          f"({too_big[0].source}): {too_big[0].text()}")
    if too_big:
        return ctx.failed(f"KAI turned {run.name} ({what}) away because no node has that many "
                          f"GPUs, although the pool's node has {sizes.largest_node}: "
                          f"\"{too_big[0].text()}\"; the node KAI sees has fewer GPUs than "
                          f"verify found (kubectl describe nodes on the host)",
                          o.pod_summary(run.host))
    # KAI refuses a node for its GPUs before any predicate runs: a node refused for something
    # else (a condition, a taint) had room on its GPU, so only GPU shortages on every node KAI
    # looked at show the GPU is full (gpulab.verify.kai.node_reasons).
    shortages = [kai.node_reasons(r.message) for r in capacity]
    others = [entry for _gpu, other in shortages for entry in other]
    if others:
        return ctx.failed(
            f"KAI turned {run.name} ({what}) away for something else than the GPU on some node "
            f"({'; '.join(others[:2])}): KAI checks a node's GPUs before anything else, so that "
            f"node had room on its GPU and this does not show the GPU is full; kubectl "
            f"describe nodes on the host (conditions, taints)", o.pod_summary(run.host))
    if any(gpu for gpu, _other in shortages):
        held = (": no node KAI looked at had that many GPUs free" if sizes.beyond_any_node
                else f" while the share pods hold {used:g} of {sizes.total_gpus} GPU(s)")
        return ctx.passed(f"{run.name} ({what}) stays {o.pod_phase(run.host)}{held}; KAI "
                          f"({capacity[0].source}): {capacity[0].text()}")
    if capacity:
        return ctx.failed(f"KAI keeps {run.name} ({what}) {o.pod_phase(run.host)} but names no "
                          f"GPU shortage: {ko.reasons_text(capacity)}; this does not show the "
                          f"GPU is full", o.pod_summary(run.host))
    if reasons:
        return ctx.failed(f"KAI refused {run.name} for its queue, not for the GPU's capacity: "
                          f"{ko.reasons_text(reasons)}; queue {ctx.queue}'s limit should hold "
                          f"{what} on top of the share pod", o.pod_summary(run.host))
    return ctx.failed(explain_run(ctx, run))
