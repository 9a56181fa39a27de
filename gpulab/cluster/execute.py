"""The writing half of `verify --kubeconfig`: the plan's pods, in their own namespace, and
nothing else (docs/verify-any-cluster.md, "Safe by construction").

`run_plan` creates the plan's namespace (refusing one that already exists: verify only removes
what it created), then the pods one at a time, each waited for within a bound, reads each once
more with its events (matched by uid), and finally deletes the pods and the namespace and waits
until the namespace is gone. The deletion runs whatever happens in between: an API error, a bug,
Ctrl-C or SIGTERM (both arrive as KeyboardInterrupt). It never touches nodes, annotations or any
other namespace, so it does not release HAMi's node lock either (the plan says what that means).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpulab.cluster.plan import CHECK_LABEL, KAI_REFUSAL
from gpulab.cluster.state import ClusterRun, IsolationProbe
from gpulab.errors import GpulabError
from gpulab.naming import LABEL_RUN
from gpulab.verify import objects as o
from gpulab.verify.kai import kai_reasons
from gpulab.verify.observe import (
    Clock,
    clean_all,
    clean_object,
    default_service_account,
    one_line,
    poll,
    probe_credentials,
)
from gpulab.verify.state import PodRun

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.adapters.base import KubeGateway
    from gpulab.cluster.plan import VerifyPlan
    from gpulab.verify.observe import CrossTenantGateway
    from gpulab.verify.state import JsonObj

__all__ = ["EVENTS_UNREAD", "FRACTION_PODS", "POD_UNREAD", "SHARE_PODS", "WAIT_NOTICE",
           "Timeouts", "probe_isolation", "run_plan"]

SHARE_PODS = ("gpu-share-1", "gpu-share-2", "gpu-share-3")
FRACTION_PODS = ("gpu-frac-1", "gpu-frac-2")
WAIT_NOTICE = "still waiting for "  # progress shown without -v: a long wait is never silent
NOTICE_EVERY = 30.0
# A PodRun note when the last read of the pod, or of its events, failed: not seen is not absent.
POD_UNREAD = "the pod could not be read back: "
EVENTS_UNREAD = "its events could not be read: "


@dataclass(frozen=True)
class Timeouts:
    """Bounds in seconds. `running` covers HAMi's default --node-lock-timeout (5m): on such
    clusters nobody may release the lock for verify's pods (the mock device plugin never does)."""

    running: float = 400.0
    refused: float = 90.0
    cleanup: float = 120.0
    service_account: float = 60.0  # the new namespace's `default` ServiceAccount to appear
    interval: float = 2.0


def _probe(kube: KubeGateway, namespace: str, name: str, uid: str, awaited: str
           ) -> Callable[[], tuple[str | None, str]]:
    def probe() -> tuple[str | None, str]:
        pod = kube.get("v1", "Pod", name, namespace)
        if pod is None or o.metadata(pod).get("uid") != uid:
            return "gone", "the pod verify created is gone"
        seen = o.pod_summary(pod)
        if o.pod_phase(pod) == "Failed":
            return "failed", seen
        if awaited == "running":
            return ("running" if o.pod_phase(pod) == "Running" else None), seen
        if o.pod_node(pod):
            return "scheduled", seen
        events = o.events_about(kube.events(namespace, name), {uid})
        # one line each: KAI's refusals run over several ("...:\nMaxNodePoolResources: ...")
        messages = [o.event_message(e) for e in events]
        last = f"{seen}; events: {' | '.join(messages[-2:]) or 'none'}"
        if awaited == KAI_REFUSAL:  # KAI's pod condition or Unschedulable events
            return ("refused" if kai_reasons(pod, None, events) else None), last
        return ("refused" if any(awaited in m for m in messages) else None), last
    return probe


def _span(seconds: float) -> str:
    """30s, 2m, 6m40s."""
    minutes, rest = divmod(round(seconds), 60)
    return (f"{minutes}m" if minutes else "") + (f"{rest}s" if rest or not minutes else "")


def _noticed(probe: Callable[[], tuple[str | None, str]], what: str, timeout: float,
             clock: Clock, say: Callable[[str], None]) -> Callable[[], tuple[str | None, str]]:
    """`probe`, saying every NOTICE_EVERY seconds of waiting what it last saw: "still waiting
    for gpu-share-1 (Pending, ...): 2m of 6m40s". API errors are observations, as in `poll`."""
    start = clock.now()
    due = [start + NOTICE_EVERY]

    def probe_and_say() -> tuple[str | None, str]:
        try:
            outcome, seen = probe()
        except GpulabError as err:
            outcome, seen = None, f"API error: {one_line(err.message)}"
        now = clock.now()
        if outcome is None and now >= due[0]:
            say(f"{WAIT_NOTICE}{what}" + (f" ({seen})" if seen else "")
                + f": {_span(now - start)} of {_span(timeout)}")
            while due[0] <= now:
                due[0] += NOTICE_EVERY
        return outcome, seen
    return probe_and_say


def _create_and_wait(kube: KubeGateway, obj: JsonObj, check: str, awaited: str, *,
                     timeouts: Timeouts, clock: Clock, say: Callable[[str], None]) -> PodRun:
    name = o.name(obj)
    namespace = str(o.metadata(obj).get("namespace"))
    start = clock.now()
    try:
        created = clean_object(kube.apply(obj))
    except GpulabError as err:
        say(f"{name}: refused by the API: {one_line(err.message, 120)}")
        return PodRun(name, check, create_error=one_line(err.message), outcome="create-failed")
    uid = str(o.metadata(created).get("uid") or "")
    timeout = timeouts.running if awaited == "running" else timeouts.refused
    probe = _noticed(_probe(kube, namespace, name, uid, awaited), name, timeout, clock, say)
    outcome, last = poll(probe, timeout, timeouts.interval, clock)
    waited = round(clock.now() - start, 3)
    say(f"{name}: {outcome} after {waited:.0f}s")
    return PodRun(name, check, created=created, outcome=outcome, waited=waited, last_seen=last)


def _final(kube: KubeGateway, namespace: str, run: PodRun) -> PodRun:
    """The pod and its events (matched by uid), read once every pod was waited for. A read that
    fails is a note (POD_UNREAD, EVENTS_UNREAD), so the checks tell it from a pod that is gone
    or has no such event."""
    if run.created is None:
        return run
    uid = str(o.metadata(run.created).get("uid") or "")
    try:
        pod = kube.get("v1", "Pod", run.name, namespace)
    except GpulabError as err:
        return PodRun(run.name, run.check, created=run.created, outcome=run.outcome,
                      waited=run.waited, last_seen=f"final read failed: {one_line(err.message)}",
                      notes=(*run.notes, POD_UNREAD + one_line(err.message)))
    notes = run.notes
    try:
        events = clean_all(o.events_about(kube.events(namespace, run.name), {uid}))
    except GpulabError as err:  # 404: events are not served, so there are none
        events = ()
        if getattr(err, "status", None) != 404:
            notes = (*notes, EVENTS_UNREAD + one_line(err.message))
    return PodRun(run.name, run.check, created=run.created, pod=clean_object(pod),
                  events=events, outcome=run.outcome, waited=run.waited, last_seen=run.last_seen,
                  notes=notes)


def _cleanup(kube: KubeGateway, plan: VerifyPlan, created: list[str], timeouts: Timeouts,
             clock: Clock, say: Callable[[str], None] = lambda _m: None) -> str:
    """Delete the run's pods and namespace and wait until the namespace is gone; '' when it is,
    else what is left (one line)."""
    errors = []
    for name in created:
        try:
            kube.delete("v1", "Pod", name, plan.namespace)
        except GpulabError as err:
            errors.append(one_line(err.message, 160))
    try:
        kube.delete("v1", "Namespace", plan.namespace)
    except GpulabError as err:
        errors.append(one_line(err.message, 160))

    def gone() -> tuple[str | None, str]:
        return ("gone" if kube.get("v1", "Namespace", plan.namespace) is None else None), ""

    outcome, _ = poll(_noticed(gone, f"namespace {plan.namespace} to be deleted",
                               timeouts.cleanup, clock, say),
                      timeouts.cleanup, timeouts.interval, clock)
    if outcome != "gone":
        errors.append(f"namespace {plan.namespace} still exists after {timeouts.cleanup:.0f}s: "
                      f"kubectl delete namespace {plan.namespace}")
    return "; ".join(errors)


def _blocked(name: str, runs: dict[str, PodRun]) -> str:
    """Why `name` is not created: a share pod before it did not run (it could not test).
    The fraction pods and the capacity probe are always created."""
    if name == "gpu-share-4":
        before: tuple[str, ...] = SHARE_PODS
    elif name in SHARE_PODS:
        before = SHARE_PODS[:SHARE_PODS.index(name)]
    else:
        before = ()
    stuck = [n for n in before if runs.get(n) is None or runs[n].outcome != "running"]
    return f"because {', '.join(stuck)} did not run" if stuck else ""


def run_plan(kube: KubeGateway, plan: VerifyPlan, *, timeouts: Timeouts | None = None,
             clock: Clock | None = None, keep: bool = False,
             say: Callable[[str], None] = lambda _m: None,
             while_running: Callable[[tuple[PodRun, ...]], tuple[IsolationProbe, ...]]
             | None = None) -> ClusterRun:
    """Run `plan` (which must be runnable) in one cluster; see the module docstring.

    while_running: called with the pods as read back, before the cleanup, so other clusters can
    look for them (GPU-06); its probes are kept in the run.
    """
    timeouts = timeouts or Timeouts()
    clock = clock or Clock()
    start = clock.now()
    base = ClusterRun(plan.member, plan.namespace, plan.run_id)
    namespace, *pods = plan.objects()
    awaited = {p.name: p.awaited for p in plan.pods}
    try:
        existing = kube.get("v1", "Namespace", plan.namespace)
    except GpulabError as err:
        return replace(base, namespace_error=f"could not read namespace {plan.namespace}: "
                                             f"{one_line(err.message)}")
    if existing is not None:
        owner = o.labels(existing).get(LABEL_RUN)
        return replace(base, namespace_error=(
            f"namespace {plan.namespace} already exists"
            + (f" (left by verify run {owner}: kubectl delete namespace {plan.namespace})"
               if owner else "; verify only uses a namespace it creates: pass another "
                             "--namespace")))
    try:
        kube.apply(namespace)
    except GpulabError as err:
        return replace(base, namespace_error=f"could not create namespace {plan.namespace}: "
                                             f"{one_line(err.message)}")
    created: list[str] = []
    runs: dict[str, PodRun] = {}
    cleanup_error = ""
    try:
        # The pods name no ServiceAccount: the API server refuses them (403) until the new
        # namespace's `default` exists (verify.observe.default_service_account).
        try:
            unprepared = default_service_account(kube, plan.namespace, timeouts.service_account,
                                                 timeouts.interval, clock)
        except GpulabError as err:
            unprepared = (f"could not read ServiceAccount {plan.namespace}/default: "
                          f"{one_line(err.message)}")
        for pod in pods if not unprepared else ():
            name, check = o.name(pod), o.labels(pod).get(CHECK_LABEL, "")
            if blocked := _blocked(name, runs):
                runs[name] = PodRun(name, check, outcome="not-created", last_seen=blocked)
                continue
            runs[name] = _create_and_wait(kube, pod, check, awaited[name], timeouts=timeouts,
                                          clock=clock, say=say)
            if runs[name].created is not None:
                created.append(name)
        finals = tuple(_final(kube, plan.namespace, run) for run in runs.values())
        isolation = (while_running(finals) if while_running is not None and not unprepared
                     else None)
    finally:  # the namespace exists from here on: remove it whatever happened
        if not keep:
            cleanup_error = _cleanup(kube, plan, created, timeouts, clock, say)
    if unprepared:
        return replace(base, namespace_error=f"namespace {plan.namespace} not ready: {unprepared}",
                       cleanup_error=cleanup_error, left=keep,
                       seconds=round(clock.now() - start, 3))
    return ClusterRun(plan.member, plan.namespace, plan.run_id, pods=finals,
                      cleanup_error=cleanup_error, left=keep,
                      seconds=round(clock.now() - start, 3), isolation=isolation)


def probe_isolation(member: str, namespace: str, pods: tuple[PodRun, ...],
                    others: list[tuple[str, str, KubeGateway]], server: str,
                    cross: CrossTenantGateway | None) -> tuple[IsolationProbe, ...]:
    """What each other cluster sees of `member`'s pods (listing `namespace` with its own
    credentials: refused or none of them is isolation), and whether it accepts `member`'s
    credentials (skipped when both name one API server). Read-only."""
    ours = {str(o.metadata(p.created).get("uid")): p.name for p in pods if p.created}
    out = []
    for other, other_server, kube in others:
        same = other_server.rstrip("/") == server.rstrip("/")
        listed: tuple[str, ...] = ()
        refused = listing_error = ""
        try:
            items = kube.list_objects("v1", "Pod", namespace)
            listed = tuple(sorted(ours[u] for u in (str(o.metadata(i).get("uid")) for i in items)
                                  if u in ours))
        except GpulabError as err:
            if " 403" in err.message or "Forbidden" in err.message:
                refused = one_line(err.message)
            else:
                listing_error = one_line(err.message)
        credentials = None
        if not same and cross is not None:
            credentials = probe_credentials(cross, member, other)
        out.append(IsolationProbe(other, same, listed, refused, listing_error, credentials))
    return tuple(out)

