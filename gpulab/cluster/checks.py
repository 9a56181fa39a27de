"""The checks of `verify --kubeconfig`, pure functions over what was found, planned and seen.

They mean what the lab's TC-03..TC-07 mean (docs/checks.md), on the card the plan picked:

- GPU-01 HAMi serving: its scheduler, webhook and device plugin are installed, every one of
  their workloads with all its pods ready;
- GPU-02 admission: the first share pod was rewritten by HAMi's webhook (`schedulerName`: the
  scheduler's `--scheduler-name`, pkg/scheduler/webhook.go:107-108) and HAMi placed it on the
  card's node;
- GPU-03 sharing: the three share pods run (every container ready) on that node, each granted
  exactly one slice of the card, of the size it asked;
- GPU-04 core over-commit: the fourth pod is not placed and HAMi names CardInsufficientCore;
- GPU-05 memory over-commit: the big pod is not placed and HAMi names CardInsufficientMemory;
- on a KAI cluster instead: GPU-11 KAI serving (scheduler ready, GPU sharing on), GPU-12 the
  two half-GPU pods run on the chosen node on one GPU (KAI's `runai-gpu-group`), GPU-13 the
  request no node can hold stays Pending with a capacity reason from KAI (not a queue reason);
- GPU-06 isolation (several clusters): while this run's pods existed, no other cluster's
  credentials could list them (none listed, or refused), and the other API servers rejected
  this cluster's credentials (401 or a TLS alert; not asked when both name one API server).

A pod only counts when it is the one this run created: in the plan's namespace, with this run's
`gpulab.dev/run` label and the uid its create call returned; events only when their
`involvedObject.uid` is that pod's. What could not be read (a component, the pod read back, its
events) makes a check `error`, never `fail`: unknown is not absent; a fact known to be wrong
fails it whatever else is unknown (and its reason says what is). On a KAI cluster a pod that
came back without KAI's `schedulerName` is not KAI's to place or refuse: it fails GPU-12/13.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from gpulab.cluster.execute import EVENTS_UNREAD, FRACTION_PODS, POD_UNREAD, SHARE_PODS
from gpulab.cluster.inventory import http_status, why_unread
from gpulab.naming import LABEL_RUN
from gpulab.verify import objects as o
from gpulab.verify.hami import ALLOCATED_ANNOTATION, NODE_ANNOTATION, parse_allocation
from gpulab.verify.kai import GPU_GROUP_LABEL, kai_reasons, reasons_text
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from gpulab.cluster.inventory import Inventory
    from gpulab.cluster.plan import VerifyPlan
    from gpulab.cluster.state import ClusterRun
    from gpulab.verify.state import PodRun

__all__ = ["CHECKS", "CHECK_IDS", "KAI_CHECKS", "judge"]

CHECKS: tuple[tuple[str, str], ...] = (
    ("GPU-01", "HAMi serving"),
    ("GPU-02", "admission through HAMi"),
    ("GPU-03", "sharing one card"),
    ("GPU-04", "core over-commit refused"),
    ("GPU-05", "memory over-commit refused"),
    ("GPU-06", "isolation between clusters"),
)
CHECK_IDS = tuple(c for c, _t in CHECKS)
KAI_CHECKS: tuple[tuple[str, str], ...] = (
    ("GPU-11", "KAI serving"),
    ("GPU-12", "fractions share one GPU"),
    ("GPU-13", "over-capacity refused"),
    ("GPU-06", "isolation between clusters"),
)


# How discovery recognises each part of HAMi (gpulab.cluster.inventory), as a kubectl line that
# lists it: the scheduler by its label, the webhook by its name, the device plugin by its label
# (HAMi's chart) or its image (the mock's DaemonSet has no label of HAMi's).
_FIND_HAMI = {
    "HAMi scheduler": "kubectl get deploy -A -l app.kubernetes.io/component=hami-scheduler -o wide",
    "HAMi webhook": ("kubectl get mutatingwebhookconfigurations -o "
                     "'custom-columns=NAME:.metadata.name,WEBHOOKS:.webhooks[*].name' (HAMi's "
                     "webhook is vgpu.hami.io)"),
    "HAMi device plugin": ("kubectl get ds -A -o wide (HAMi's selects "
                           "app.kubernetes.io/component=hami-device-plugin, or runs a "
                           "mock-device-plugin image)"),
}


def _hami_serving(found: Inventory) -> CheckResult:
    """A part known to be missing or not ready fails, with the kubectl line that lists it; one
    that could not be read is an error (unknown is not absent)."""
    check, member = "GPU-01", found.member
    parts = (found.hami_scheduler, found.hami_webhook, found.hami_device_plugin)
    missing = [f"{p.name} {'not found' if not p.found else f'not ready ({p.ready})'}: "
               f"{_FIND_HAMI[p.name]}" for p in parts if not p.serving and not p.unknown]
    unknown = [f"{p.name} is {p.unknown}" for p in parts if p.unknown]
    shown = "; ".join(f"{p.name}: {p.where} {p.ready}".strip() for p in parts if p.found)
    if unknown and not any(p.found for p in parts):  # whether HAMi is there at all
        return CheckResult(check, member, "error", reason=(
            f"whether HAMi is installed is unknown: {summarize_problems(unknown)}"))
    if missing:
        return CheckResult(check, member, "fail", evidence=shown,
                           reason=summarize_problems([*missing, *unknown]))
    if unknown:
        return CheckResult(check, member, "error", evidence=shown,
                           reason=summarize_problems(unknown))
    return CheckResult(check, member, "pass", evidence=shown)


# What reading back verify's own pods and their events needs granted (docs/verify-any-cluster.md,
# "RBAC": the run's ClusterRole): a get of each pod (execute._final), a list of its events.
_READ_BACK = {"Pod": "get on pods", "Event": "list on events"}


def _unread(run: PodRun | None, note: str, kind: str) -> str:
    """Why the pod (POD_UNREAD) or its events (EVENTS_UNREAD) are unknown ('' when read)."""
    if run is None:
        return ""
    for text in run.notes:
        if text.startswith(note):
            why = why_unread(kind, text.removeprefix(note), _READ_BACK[kind]).removeprefix(
                "unknown: ")
            return f"{run.name}: {why}"
    return ""


def _not_ours(run: PodRun, plan: VerifyPlan) -> str:
    """Why the pod read is not the one this run created ('' when it is)."""
    pod = run.pod
    if pod is None:
        return f"{run.name} was not found when read back"
    meta = o.metadata(pod)
    if meta.get("namespace") != plan.namespace:
        return f"{run.name} was read from namespace {meta.get('namespace')}, not {plan.namespace}"
    if (label := o.labels(pod).get(LABEL_RUN)) != plan.run_id:
        carries = f"{LABEL_RUN}={label!r}" if label is not None else f"no {LABEL_RUN} label"
        return f"{plan.namespace}/{run.name} carries {carries}, not this run's {plan.run_id!r}"
    created = o.metadata(run.created).get("uid")
    if meta.get("uid") != created:
        return (f"{plan.namespace}/{run.name} has uid {meta.get('uid')}, not {created} that "
                f"verify created: it was replaced while verify waited")
    return ""


def _why(run: PodRun, plan: VerifyPlan) -> str:
    """The most specific cause of a pod not being where its check wants it."""
    look = f"kubectl -n {plan.namespace} describe pod {run.name} (run verify with --keep)"
    if run.outcome == "not-created":
        return f"{run.name} was not created {run.last_seen}"
    if run.outcome == "create-failed":
        return f"the API refused {run.name}: {run.create_error}"
    scheduler = o.scheduler_name(run.created)
    if plan.scheduler == "kai":
        if scheduler != plan.scheduler_name:
            return (f"{run.name} came back with schedulerName {scheduler}, not "
                    f"{plan.scheduler_name}")
    elif scheduler != plan.scheduler_name:
        return (f"{run.name} kept schedulerName {scheduler}: HAMi's webhook (vgpu.hami.io) did "
                f"not handle it (failurePolicy Ignore hides an unreachable webhook); {look}")
    if run.pod is None:  # read back as not found (a read that failed is a note: _unread)
        return (f"{run.name} was not found when read back ({run.outcome} after "
                f"{run.waited:.0f}s: {run.last_seen}): it was deleted while verify ran")
    events = " | ".join(str(e.get("message") or "") for e in run.events[-3:]) or "no events"
    return (f"{run.name}: {run.outcome} after {run.waited:.0f}s ({run.last_seen}); {events}; "
            f"{look}")


def _unready(label: str, pod: Mapping[str, Any], look: str) -> str:
    """What keeps a placed pod from serving, as a user reads it: a phase of Unknown is its
    node's silence; otherwise the containers not running and ready (o.container_problems:
    'app: waiting CrashLoopBackOff (3 restarts)'), or the phase that is not Running yet."""
    phase, node = o.pod_phase(pod), o.pod_node(pod)
    if phase == "Unknown":
        return (f"{label} is Unknown: its node {node} stopped reporting it (kubectl describe "
                f"node {node})")
    problems = ", ".join(o.container_problems(pod))
    why = f", but not every container is ready ({problems})" if problems else ", not Running"
    return f"{label} is {phase}{why}: {look}"


def _admission(plan: VerifyPlan, state: ClusterRun) -> CheckResult:
    check, member = "GPU-02", plan.member
    run = _pod(state, "gpu-share-1")
    assert plan.card is not None
    node = plan.card.node
    if run is None or run.created is None:
        return CheckResult(check, member, "fail", reason=_why(run, plan) if run else
                           "gpu-share-1 was not attempted")
    if o.scheduler_name(run.created) == plan.scheduler_name and run.pod is None and (
            unread := _unread(run, POD_UNREAD, "Pod")):
        return CheckResult(check, member, "error", reason=f"where HAMi placed it is unknown: "
                                                          f"{unread}")
    if o.scheduler_name(run.created) != plan.scheduler_name or run.pod is None:
        return CheckResult(check, member, "fail", reason=_why(run, plan))
    if foreign := _not_ours(run, plan):
        return CheckResult(check, member, "fail", reason=foreign)
    chosen = o.annots(run.pod).get(NODE_ANNOTATION, "")
    bound = o.pod_node(run.pod)
    if not node or chosen != node or bound != node:  # a replayed card may name no node
        return CheckResult(check, member, "fail", reason=(
            f"gpu-share-1 is pinned to {plan.card.device_id} on {node}, but HAMi chose "
            f"{chosen or 'no node'} and it is bound to {bound or 'no node'}; {_why(run, plan)}"))
    return CheckResult(check, member, "pass", evidence=(
        f"gpu-share-1 admitted with schedulerName {plan.scheduler_name}, placed by HAMi on "
        f"{node}"))


def _sharing(plan: VerifyPlan, state: ClusterRun) -> CheckResult:
    check, member = "GPU-03", plan.member
    assert plan.card is not None
    assert plan.sizes is not None
    card, sizes = plan.card, plan.sizes
    problems: list[str] = []
    unknown: list[str] = []
    for name in SHARE_PODS:
        run = _pod(state, name)
        if unread := _unread(run, POD_UNREAD, "Pod"):
            unknown.append(unread)
            continue
        if run is None or run.pod is None or run.created is None:
            problems.append(_why(run, plan) if run else f"{name} was not attempted")
            continue
        if foreign := _not_ours(run, plan):
            problems.append(foreign)
            continue
        if not o.pod_node(run.pod):  # not placed: its logs say nothing, its wait and events do
            problems.append(_why(run, plan))
            continue
        if not o.pod_serving(run.pod):
            problems.append(_unready(name, run.pod, f"kubectl -n {plan.namespace} logs {name}"))
            continue
        if o.pod_node(run.pod) != card.node:
            problems.append(f"{name} runs on {o.pod_node(run.pod)}, not {card.node}")
            continue
        grants = [g for c in parse_allocation(o.annots(run.pod).get(ALLOCATED_ANNOTATION))
                  for g in c]
        want = (card.device_id, sizes.share_memory, sizes.share_cores)
        got = [(g.device_id, g.memory_mib, g.cores) for g in grants]
        if got != [want]:
            problems.append(f"{name} was granted {got or 'nothing'} "
                            f"({ALLOCATED_ANNOTATION}), it asked for {want}")
    if problems:  # known wrong: a fail, which also says what is unknown
        return CheckResult(check, member, "fail",
                           reason=summarize_problems([*problems, *unknown]))
    if unknown:
        return CheckResult(check, member, "error", reason=summarize_problems(unknown))
    return CheckResult(check, member, "pass", evidence=(
        f"gpu-share-1..3 run together on {card.node}/{card.device_id} ({card.model}), each "
        f"granted {sizes.share_memory} MiB and {sizes.share_cores} cores: "
        f"{3 * sizes.share_memory}/{card.memory_mib} MiB, {3 * sizes.share_cores}/{card.cores} "
        f"cores in use"))


def _refusal(plan: VerifyPlan, state: ClusterRun, *, check: str, name: str, reason: str,
             what: str) -> CheckResult:
    """GPU-04 and GPU-05: pod `name` stays Pending and an event of its own names `reason`."""
    member = plan.member
    run = _pod(state, name)
    if run is None or run.created is None:
        # only a pod held back for the share pods (execute._blocked) is GPU-03's doing
        return CheckResult(check, member, "fail", reason=(
            _why(run, plan) + (" (see GPU-03)" if run.outcome == "not-created" else "")
            if run else f"{name} was not attempted"))
    if unread := _unread(run, POD_UNREAD, "Pod"):
        return CheckResult(check, member, "error", reason=f"whether HAMi placed it is "
                                                          f"unknown: {unread}")
    if foreign := _not_ours(run, plan):
        return CheckResult(check, member, "fail", reason=foreign)
    assert run.pod is not None
    if o.pod_node(run.pod):
        return CheckResult(check, member, "fail", reason=(
            f"HAMi placed {name} on {o.pod_node(run.pod)}, over-committing {what}; "
            f"kubectl -n kube-system logs deploy/hami-scheduler -c vgpu-scheduler-extender"))
    said = [str(e.get("message")) for e in run.events if reason in str(e.get("message"))]
    unread = _unread(run, EVENTS_UNREAD, "Event")
    if not said and unread:
        return CheckResult(check, member, "error", reason=(
            f"{name} is Pending, but whether HAMi said {reason} is unknown: {unread}"))
    if not said:
        return CheckResult(check, member, "fail", reason=(
            f"{name} is Pending but no event of its own names {reason}: {_why(run, plan)}"))
    return CheckResult(check, member, "pass", evidence=f"{name} stays Pending; HAMi: {said[0]}")


def _isolation(plan: VerifyPlan, state: ClusterRun) -> CheckResult:
    check, member = "GPU-06", plan.member
    if state.isolation is None:  # several clusters (judge), but no probe was recorded
        return CheckResult(check, member, "error", reason=(
            "not observed in this run or recording: no other cluster looked for this run's "
            "pods"))
    failures: list[str] = []
    errors: list[str] = []
    shown: list[str] = []
    look = f"kubectl -n {plan.namespace} get pods (with the other kubeconfig)"
    for probe in state.isolation:
        if probe.listed:
            failures.append(f"{probe.other}'s credentials list this run's pods "
                            f"{', '.join(probe.listed)} in {plan.namespace} (same uid): the "
                            f"clusters are not isolated; {look}")
        elif probe.listing_error:
            errors.append(f"{probe.other}'s listing failed: {probe.listing_error}")
        else:
            shown.append(f"{probe.other} sees none of them"
                         + (f" (refused: {probe.refused})" if probe.refused else ""))
        cred = probe.credentials
        if probe.same_server:
            shown.append(f"{probe.other} is the same API server: credentials not compared")
        elif cred is None:
            errors.append(f"{member}'s credentials were not presented to {probe.other}")
        elif cred.outcome == "accepted":
            failures.append(f"{probe.other}'s API server accepted {member}'s credentials "
                            f"({cred.detail}): they share a certificate authority or token "
                            f"issuer")
        elif cred.outcome == "forbidden":
            failures.append(f"{probe.other}'s API server authenticated {member}'s credentials "
                            f"and only RBAC refused them ({cred.detail})")
        elif cred.outcome == "error":
            errors.append(f"{member}'s credentials at {probe.other}: no verdict ({cred.detail})")
        else:
            shown.append(f"{probe.other} rejects {member}'s credentials")
    if failures:
        return CheckResult(check, member, "fail", evidence="; ".join(shown),
                           reason=summarize_problems([*failures, *errors]))
    if errors:
        return CheckResult(check, member, "error", evidence="; ".join(shown),
                           reason=summarize_problems(errors))
    return CheckResult(check, member, "pass", evidence="; ".join(shown))


def _kai_serving(found: Inventory) -> CheckResult:
    check, member = "GPU-11", found.member
    kai = found.kai_scheduler
    problems = []
    unknown = []
    if kai.unknown:
        unknown.append(f"KAI's scheduler is {kai.unknown}")
    elif not kai.serving:
        state = f"not ready ({kai.ready})" if kai.found else "not found"
        problems.append(f"KAI's scheduler is {state}")
    if "KAI GPU sharing" in found.unknown:  # sharing is "unknown": the Config was not read
        unknown.append(f"GPU sharing is {found.unknown['KAI GPU sharing']}")
    elif found.kai_gpu_sharing != "on":
        where = ("Config kai-config spec.admission.gpuSharing" if found.kai_config_found
                 else "no Config kai-config, whose spec.admission.gpuSharing turns it on")
        problems.append(f"GPU sharing is {found.kai_gpu_sharing} ({where})")
    evidence = "; ".join(x for x in (f"{kai.where} {kai.ready}".strip(),
                                     f"GPU sharing {found.kai_gpu_sharing}") if x)
    if problems:
        return CheckResult(check, member, "fail", evidence=evidence, reason=(
            f"{summarize_problems([*problems, *unknown])}; kubectl -n kai-scheduler get "
            f"deploy,pods"))
    if unknown:
        return CheckResult(check, member, "error", evidence=evidence,
                           reason=summarize_problems(unknown))
    return CheckResult(check, member, "pass", evidence=evidence)


def _fractions(plan: VerifyPlan, state: ClusterRun) -> CheckResult:
    check, member = "GPU-12", plan.member
    problems: list[str] = []
    groups: dict[str, str] = {}
    unknown: list[str] = []
    for name in FRACTION_PODS:
        run = _pod(state, name)
        if unread := _unread(run, POD_UNREAD, "Pod"):
            unknown.append(unread)
            continue
        if run is None or run.pod is None or run.created is None:
            problems.append(_why(run, plan) if run else f"{name} was not attempted")
            continue
        if foreign := _not_ours(run, plan):
            problems.append(foreign)
            continue
        if o.scheduler_name(run.created) != plan.scheduler_name:  # not KAI's to place
            problems.append(_why(run, plan))
            continue
        if not o.pod_serving(run.pod):
            look = f"kubectl -n {plan.namespace} describe pod {name}"
            reasons = kai_reasons(run.pod, None, run.events)
            problems.append(
                f"{name} (gpu-fraction 0.5) is {o.pod_phase(run.pod)}; KAI: "
                f"{reasons_text(reasons)}; {look}" if reasons else
                _unready(f"{name} (gpu-fraction 0.5)", run.pod, look))
            continue
        if o.pod_node(run.pod) != plan.node:
            problems.append(f"{name} runs on {o.pod_node(run.pod)}, not {plan.node}")
            continue
        groups[name] = o.labels(run.pod).get(GPU_GROUP_LABEL, "")
    if not problems and unknown:
        return CheckResult(check, member, "error", reason=summarize_problems(unknown))
    unlabelled = [name for name, group in groups.items() if not group]
    shown = ", ".join(f"{name} -> {group}" for name, group in groups.items() if group)
    if not problems and unlabelled:
        problems.append(
            f"{' and '.join(unlabelled)} {'carries' if len(unlabelled) == 1 else 'carry'} no "
            f"{GPU_GROUP_LABEL} label{f' ({shown})' if shown else ''}: KAI's binder labels each "
            f"GPU-fraction pod it binds with the GPU it shares; without it, one GPU is not shown")
    elif not problems and len(set(groups.values())) != 1:
        problems.append(f"the half-GPU pods are on different GPUs ({GPU_GROUP_LABEL}: {shown}): "
                        f"KAI spread them (placementStrategy gpu: spread?)")
    if problems:
        return CheckResult(check, member, "fail",
                           reason=summarize_problems([*problems, *unknown]))
    return CheckResult(check, member, "pass", evidence=(
        f"gpu-frac-1 and gpu-frac-2 (0.5 each) run together on {plan.node}, one GPU "
        f"({GPU_GROUP_LABEL}={next(iter(groups.values()))}), queue {plan.queue}"))


def _over_capacity(plan: VerifyPlan, state: ClusterRun) -> CheckResult:
    check, member = "GPU-13", plan.member
    run = _pod(state, "gpu-over-capacity")
    if unread := _unread(run, POD_UNREAD, "Pod"):
        return CheckResult(check, member, "error", reason=f"whether KAI placed it is unknown: "
                                                          f"{unread}")
    if run is None or run.created is None or run.pod is None:
        return CheckResult(check, member, "fail", reason=_why(run, plan) if run else
                           "gpu-over-capacity was not attempted")
    if foreign := _not_ours(run, plan):
        return CheckResult(check, member, "fail", reason=foreign)
    if o.scheduler_name(run.created) != plan.scheduler_name:  # a refusal would not be KAI's
        return CheckResult(check, member, "fail", reason=_why(run, plan))
    ask = next((p.ask() for p in plan.pods if p.name == run.name), "")
    if o.pod_node(run.pod):
        return CheckResult(check, member, "fail", reason=(
            f"KAI placed gpu-over-capacity ({ask}) on {o.pod_node(run.pod)}, more GPUs than any "
            f"node has: kubectl get node {o.pod_node(run.pod)} -o yaml (allocatable)"))
    reasons = kai_reasons(run.pod, None, run.events)
    capacity = [r for r in reasons if not r.is_queue]
    if capacity:
        return CheckResult(check, member, "pass", evidence=(
            f"gpu-over-capacity ({ask}) stays Pending; KAI ({capacity[0].source}): "
            f"{capacity[0].text()}"))
    if not reasons and (unread := _unread(run, EVENTS_UNREAD, "Event")):
        return CheckResult(check, member, "error", reason=(
            f"gpu-over-capacity ({ask}) is Pending, but KAI's reason is unknown: {unread}"))
    if reasons:
        return CheckResult(check, member, "fail", reason=(
            f"KAI refused gpu-over-capacity for its queue ({plan.queue}), not for capacity: "
            f"{reasons_text(reasons)}; kubectl get queues.scheduling.run.ai {plan.queue} -o yaml"))
    return CheckResult(check, member, "fail", reason=_why(run, plan))


# The checks of a run, by id (their functions run when judged, so each decides then).
_RUN_CHECKS: dict[str, Callable[[VerifyPlan, ClusterRun], CheckResult]] = {
    "GPU-02": _admission,
    "GPU-03": _sharing,
    "GPU-04": partial(_refusal, check="GPU-04", name="gpu-share-4",
                      reason="CardInsufficientCore", what="the card's cores"),
    "GPU-05": partial(_refusal, check="GPU-05", name="gpu-mem-big",
                      reason="CardInsufficientMemory", what="the card's memory"),
    "GPU-06": _isolation,
    "GPU-12": _fractions,
    "GPU-13": _over_capacity,
}


def _pod(state: ClusterRun, name: str) -> PodRun | None:
    return next((r for r in state.pods or () if r.name == name), None)


def judge(found: Inventory, plan: VerifyPlan, state: ClusterRun | None, *, clusters: int
          ) -> list[CheckResult]:
    """The verdicts for one cluster of `clusters` verified together: GPU-01..GPU-06 (HAMi), or
    GPU-11..13 and GPU-06 (KAI)."""
    kai = plan.scheduler == "kai"
    listed = KAI_CHECKS if kai else CHECKS
    titles = dict(listed)
    ids = [c for c, _t in listed]
    if found.error:
        said = "could not be read" if http_status(found.error) else "did not answer"
        out = [CheckResult(check, found.member, "error",
                           reason=f"the API server at {found.server} {said}: "
                                  f"{found.error}") for check in ids]
        return [r.with_meta(title=titles[r.id], seconds=0.0) for r in out]
    out = [_kai_serving(found) if kai else _hami_serving(found)]
    for check in ids[1:]:
        if check == "GPU-06" and clusters < 2:
            result = CheckResult(check, plan.member, "skip",
                                 reason="one cluster: isolation needs a --kubeconfig per tenant")
        elif plan.refusals:
            result = CheckResult(check, plan.member, "error",
                                 reason=f"not run: {'; '.join(plan.refusals)}")
        elif state is None:
            result = CheckResult(check, plan.member, "error",
                                 reason="not run in this observation or recording")
        elif state.namespace_error or state.pods is None:
            result = CheckResult(check, plan.member, "error",
                                 reason=f"not run: {state.namespace_error or 'no pod attempted'}")
        else:
            result = _RUN_CHECKS[check](plan, state)
        out.append(result)
    return [r.with_meta(title=titles[r.id], seconds=0.0) for r in out]
