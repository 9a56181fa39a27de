"""The only I/O of kamaji-hami's `verify`: read (and for the GPU checks, create) objects
through `KubeGateway`.

A live run observes a lab in three phases, each concurrent across tenants:

1. per tenant: the control plane (management cluster), the tenant's API version, nodes, system
   pods, calico-node, HAMi's ConfigMap, a logs probe per worker, then the GPU pods of
   `render.verify_objects` one after the other (three share pods, the fourth, the big pod), each
   waited for within a bound (Running, or Pending with HAMi's reason);
2. when every tenant's pods exist: each tenant's listings and the cross-tenant credential probes
   (so TC-08 sees whether another tenant's verify pods leak);
3. unless `keep`: the verify pods and namespace are deleted.

API failures never escape: they are stored in the state (an `..._error` field, a pod's
`create_error` or `last_seen`), because a check's verdict is a value. Waits are bounded and take
an injectable clock, so tests run in no time.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_RUN
from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks.registry import CHECKS, Check, pods_needed
from gpulab.stacks.kamaji_hami.state import LabState, TenantState
from gpulab.verify.observe import (
    CHECK_LABEL,
    VERIFY_NAMESPACE,
    Clock,
    CrossTenantGateway,
    clean_all,
    clean_object,
    clear_leftovers,
    default_service_account,
    delete_verify_objects,
    guard,
    labelled,
    listing_pod,
    one_line,
    poll,
    probe_credentials,
    stop_on_interrupt,
    stoppable,
)
from gpulab.verify.state import Listing, LogsProbe, PodRun

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gpulab.adapters.base import KubeGateway
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec
    from gpulab.verify.state import JsonObj

__all__ = ["AWAITED_REASON", "Gateways", "Timeouts", "observe_lab"]

NS = VERIFY_NAMESPACE
# What each verify pod (by render's check label) is waited for; None = Running.
AWAITED_REASON: dict[str, str | None] = {
    "TC-05": None,
    "TC-06": "CardInsufficientCore",
    "TC-07": "CardInsufficientMemory",
}
# Pods whose logs prove the tunnel to a worker, in order of preference (all in kube-system).
LOG_PODS = ("calico-node", "kube-proxy", "konnectivity-agent")


@dataclass(frozen=True)
class Gateways:
    """The API servers verify talks to.

    management: the kind management cluster (TenantControlPlanes and their pods);
    tenant: tenant name → that tenant's API (its admin kubeconfig); may raise GpulabError;
    cross: the credential-probe factory for TC-08 (None: TC-08 reports the probe as unobserved).
    """

    management: KubeGateway
    tenant: Callable[[str], KubeGateway]
    cross: CrossTenantGateway | None = None


@dataclass(frozen=True)
class Timeouts:
    """Every wait's bound, in seconds."""

    running: float = 120.0  # a share pod to become Running (the write-up's `--timeout=120s`)
    refused: float = 60.0  # an over-commit pod to get HAMi's refusal event
    cleanup: float = 60.0  # leftovers of an earlier run to disappear before starting
    service_account: float = 60.0  # the namespace's `default` ServiceAccount to appear
    interval: float = 2.0  # between polls


def _no_progress(_tenant: str, _message: str) -> None:
    return None


# --------------------------------------------------------------------------- helpers


def _pod_events(kube: KubeGateway, pod: Mapping[str, Any] | None) -> tuple[JsonObj, ...]:
    """Events about this very pod: events outlive pods (1h), and an earlier run's pod of the
    same name must not lend its FilteringFailed/BindingFailed to this one (matched by uid)."""
    if pod is None:
        return ()
    uid = str(o.metadata(pod).get("uid") or "")
    return clean_all(o.events_about(kube.events(NS, o.name(pod)), {uid}))


# --------------------------------------------------------------------------- credential probes


# --------------------------------------------------------------------------- phase 1: reads


@dataclass
class _Obs:
    """A tenant's observation while it is being made (frozen into TenantState at the end)."""

    tenant: str
    fields: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    runs: list[PodRun] | None = None
    kube: KubeGateway | None = None
    scenario_started: bool = False

    def time(self, check: str, seconds: float) -> None:
        self.timings[check] = round(self.timings.get(check, 0.0) + seconds, 3)

    def freeze(self) -> TenantState:
        runs = None if self.runs is None else tuple(self.runs)
        return TenantState(tenant=self.tenant, gpu_pods=runs, timings=dict(self.timings),
                           **self.fields)


def _observe_control_plane(obs: _Obs, mgmt: KubeGateway, profile: KamajiHamiProfile) -> None:
    ns = profile.components.kamaji.tenant_namespace
    try:
        tcp = mgmt.get("kamaji.clastix.io/v1alpha1", "TenantControlPlane", obs.tenant, ns)
        selector = f"kamaji.clastix.io/name={obs.tenant}"
        pods = [p for p in mgmt.list_objects("v1", "Pod", ns, label_selector=selector)
                if o.labels(p).get("kamaji.clastix.io/name") == obs.tenant]
    except GpulabError as err:
        obs.fields["management_error"] = one_line(str(err))
        return
    obs.fields["tcp"] = clean_object(tcp)
    obs.fields["tcp_pods"] = clean_all(pods)


def _log_candidates(pods: Sequence[JsonObj], node: str) -> list[JsonObj]:
    def rank(pod: JsonObj) -> tuple[int, str]:
        pod_name = o.name(pod)
        for i, prefix in enumerate(LOG_PODS):
            if pod_name.startswith(prefix):
                return i, pod_name
        return len(LOG_PODS), pod_name

    running = [p for p in pods if o.pod_node(p) == node and o.pod_phase(p) == "Running"]
    return sorted(running, key=rank)


def _logs_probe(kube: KubeGateway, pods: Sequence[JsonObj], node: str) -> LogsProbe:
    candidates = _log_candidates(pods, node)
    if not candidates:
        return LogsProbe(node, error="no running pod in kube-system on this node")
    pod = candidates[0]
    namespace = str(o.metadata(pod).get("namespace") or "kube-system")
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    container = containers[0].get("name") or None  # explicit: some pods have several
    try:
        text = kube.pod_logs(o.name(pod), namespace, tail_lines=5, container=container)
    except GpulabError as err:
        return LogsProbe(node, namespace, o.name(pod), ok=False, error=one_line(str(err)))
    lines = [line for line in text.splitlines() if line.strip()]
    return LogsProbe(node, namespace, o.name(pod), ok=True,
                     excerpt=one_line(lines[-1], 160) if lines else "")


def _observe_tenant_api(
    obs: _Obs, kube: KubeGateway, profile: KamajiHamiProfile, spec: TenantSpec, lab: str,
    *, logs: bool, clock: Clock,
) -> None:
    start = clock.now()
    try:
        obs.fields["api_version"] = kube.server_version()
    except GpulabError as err:
        obs.fields["api_error"] = one_line(str(err))
        obs.time("TC-01", clock.now() - start)
        return
    obs.time("TC-01", clock.now() - start)
    start = clock.now()
    try:
        nodes = clean_all(kube.list_objects("v1", "Node"))
    except GpulabError as err:
        obs.fields["nodes_error"] = one_line(str(err))
        nodes = None
    obs.fields["nodes"] = nodes
    obs.time("TC-04", clock.now() - start)  # the inventory rests on the same node list
    hami_ns = profile.components.hami.namespace
    system: list[JsonObj] = []
    try:
        for ns in dict.fromkeys(("kube-system", hami_ns)):
            system += kube.list_objects("v1", "Pod", ns)
        obs.fields["system_pods"] = clean_all(system)
        obs.fields["calico"] = clean_object(
            kube.get("apps/v1", "DaemonSet", "calico-node", "kube-system"))
        obs.fields["hami_device_configmap"] = (
            kube.get("v1", "ConfigMap", "hami-scheduler-device", hami_ns) is not None)
    except GpulabError as err:
        obs.fields["system_error"] = one_line(str(err))
    if logs and nodes is not None:
        names = {o.name(n) for n in nodes}
        workers = ([o.name(n) for n in nodes] if obs.fields.get("workers") == render.MACHINES
                   else [render.worker_name(lab, spec.name, i)
                         for i in range(spec.workers.count)])
        system_pods = obs.fields.get("system_pods")
        obs.fields["logs_probes"] = tuple(
            _logs_probe(kube, system_pods, w) if system_pods is not None
            else LogsProbe(w, error=f"could not list kube-system pods: "
                                    f"{obs.fields.get('system_error', '')}")
            for w in workers if w in names
        )
    obs.time("TC-02", clock.now() - start)


# --------------------------------------------------------------------------- phase 1: GPU pods


@dataclass
class _Seen:
    pod: JsonObj | None = None
    events: tuple[JsonObj, ...] = ()
    notes: list[str] = field(default_factory=list)


def _complete_bind(kube: KubeGateway, pod: JsonObj) -> str:
    """Do the device plugin's part once HAMi has bound a verify pod, as the write-up did by hand.

    The mock plugin never does it (HAMi v2.10.0: only the real plugin's Allocate calls
    `updatePodAnnotationsAndReleaseLock`, pkg/device-plugin/nvidiadevice/nvinternal/plugin/
    util.go:397-405): first the pod's `hami.io/bind-phase: success`, then the node's
    `hami.io/mutex.lock` is removed only if it names this pod, under the node's resourceVersion
    (pkg/util/nodelock/nodelock.go:175-239, `ReleaseNodeLock`). A lock held by another pod is
    never touched; a lock that changed meanwhile (409) is read again, three times at most.
    """
    ann = o.annots(pod)
    if ann.get(o.BIND_PHASE) != "allocating":
        return ""
    pod_name = o.name(pod)
    node = o.pod_node(pod) or ann.get(o.VGPU_NODE, "")
    kube.annotate("v1", "Pod", pod_name, {o.BIND_PHASE: "success"}, namespace=NS)
    done = f"set {o.BIND_PHASE}=success on {pod_name}"
    if not node:
        return done
    for _ in range(3):
        current = kube.get("v1", "Node", node)
        lock = o.annots(current).get(o.NODE_LOCK, "")
        if not lock.endswith(f",{NS},{pod_name}"):
            return done
        version = str(o.metadata(current).get("resourceVersion") or "") or None
        try:
            kube.annotate("v1", "Node", node, {o.NODE_LOCK: None}, resource_version=version)
        except GpulabError as err:
            if getattr(err, "status", None) == 409:
                continue
            raise
        return f"{done} and released HAMi's node lock on {node} (the mock device plugin never does)"
    return f"{done}; the node lock on {node} kept changing, left to HAMi's expiry"


def _wait(
    kube: KubeGateway, pod_name: str, awaited: str | None, *, timeouts: Timeouts, clock: Clock,
    complete_binds: bool,
) -> tuple[str, str, _Seen]:
    seen = _Seen()

    def probe() -> tuple[str | None, str]:
        pod = kube.get("v1", "Pod", pod_name, NS)
        if pod is None:
            seen.pod = None
            return "gone", "the pod disappeared"
        events = _pod_events(kube, pod)
        if complete_binds and awaited is None:
            note = _complete_bind(kube, pod)
            if note:
                seen.notes.append(note)
        seen.pod, seen.events = clean_object(pod), events
        phase = o.pod_phase(pod)
        observation = f"{o.pod_summary(pod)}; {o.short_events(events, 2)}"
        if awaited is None:
            if phase == "Running":
                return "running", observation
        else:
            if any(awaited in o.event_message(e) for e in events if e.get("type") != "Normal"):
                return "refused", observation
            if o.pod_node(pod) or phase == "Running":
                return "scheduled", observation
        if phase in ("Failed", "Succeeded"):
            return "failed", observation
        return None, observation

    timeout = timeouts.running if awaited is None else timeouts.refused
    outcome, last = poll(probe, timeout, timeouts.interval, clock)
    return outcome, last, seen


def _blocker(pod_name: str, check: str, runs: Mapping[str, PodRun]) -> str:
    """Why a pod must not be created yet ('' when it may)."""
    shares = [r for r in runs.values() if r.check == "TC-05"]
    if check == "TC-05":
        stuck = [r for r in shares if r.outcome != "running"]
    elif check == "TC-06":
        stuck = [r for r in shares if r.outcome != "running"]
        if len(shares) < 3 and not stuck:
            return f"{pod_name} needs the three share pods on the card first"
    else:
        return ""
    if stuck:
        first = stuck[0]
        return f"not created because {first.name} did not run ({first.outcome})"
    return ""


def _create_and_wait(
    kube: KubeGateway, pod: JsonObj, check: str, *, timeouts: Timeouts, clock: Clock,
    complete_binds: bool, say: Callable[[str], None],
) -> PodRun:
    pod_name = o.name(pod)
    start = clock.now()
    try:
        created = clean_object(kube.apply(pod))
    except GpulabError as err:
        say(f"{pod_name} refused by the API: {one_line(str(err), 120)}")
        return PodRun(pod_name, check, create_error=one_line(str(err)), outcome="create-failed",
                      waited=round(clock.now() - start, 3))
    awaited = AWAITED_REASON.get(check)
    say(f"{pod_name} created (schedulerName {o.scheduler_name(created)}), waiting for "
        f"{awaited or 'Running'}")
    outcome, last, seen = _wait(kube, pod_name, awaited, timeouts=timeouts, clock=clock,
                                complete_binds=complete_binds)
    waited = round(clock.now() - start, 3)
    say(f"{pod_name}: {outcome} after {waited:.0f}s")
    return PodRun(pod_name, check, created=created, pod=seen.pod, events=seen.events,
                  outcome=outcome, waited=waited, last_seen=last, notes=tuple(seen.notes))


def _run_gpu_pods(
    obs: _Obs, kube: KubeGateway, spec: TenantSpec, lab: str, wanted: frozenset[str], *,
    timeouts: Timeouts, clock: Clock, complete_binds: bool, say: Callable[[str], None],
    run_id: str,
) -> None:
    card = None
    if obs.fields.get("workers") == render.MACHINES:
        # joined machines: sized from the first card their HAMi device plugin registered; no
        # card (no machine yet, or none registered) means no pod: the checks say why (TC-04)
        card = render.machine_card(obs.fields.get("nodes"))
        if card is None:
            return
    namespace, *pods = render.verify_objects(spec, card)
    pods = [p for p in pods if o.name(p) in wanted]
    if not pods:
        obs.runs = []
        return
    start = clock.now()
    obs.scenario_started = True
    try:
        problem = clear_leftovers(kube, timeouts.cleanup, timeouts.interval, clock)
        if not problem:
            kube.apply(labelled(namespace, lab, spec.name))
            # The pods name no ServiceAccount: the tenant's API server refuses them (403) until
            # the namespace's `default` exists (verify_observe.default_service_account).
            waited = default_service_account(kube, NS, timeouts.service_account,
                                              timeouts.interval, clock)
            if waited:
                problem = f"could not prepare namespace {NS}: {waited}"
    except GpulabError as err:
        problem = f"could not prepare namespace {NS}: {one_line(str(err))}"
    obs.time("TC-03", clock.now() - start)
    if problem:
        obs.fields["scenario_error"] = problem
        return
    runs: dict[str, PodRun] = {}
    for pod in pods:
        pod_name = o.name(pod)
        check = o.labels(pod).get(CHECK_LABEL, "")
        blocked = _blocker(pod_name, check, runs)
        if blocked:
            say(f"{pod_name} {blocked}")
            runs[pod_name] = PodRun(pod_name, check, outcome="not-created", last_seen=blocked)
            continue
        mine = labelled(pod, lab, spec.name)
        mine["metadata"]["labels"][LABEL_RUN] = run_id
        run = _create_and_wait(kube, mine, check, timeouts=timeouts,
                               clock=clock, complete_binds=complete_binds, say=say)
        runs[pod_name] = run
        obs.time("TC-03" if pod_name == "gpu-share-1" else check, run.waited)
    obs.runs = [_final_snapshot(kube, run) for run in runs.values()]


def _final_snapshot(kube: KubeGateway, run: PodRun) -> PodRun:
    """Re-read a created pod and its events once all pods were waited for (one moment for all)."""
    if run.created is None:
        return run
    try:
        pod = clean_object(kube.get("v1", "Pod", run.name, NS))
        events = _pod_events(kube, pod)
    except GpulabError as err:
        return replace(run, last_seen=f"final read failed: {one_line(str(err))}")
    return replace(run, pod=pod, events=events)


# --------------------------------------------------------------------------- phases 2 and 3


def _observe_isolation(
    obs: _Obs, kube: KubeGateway, cross: CrossTenantGateway | None, others: Sequence[str],
    clock: Clock,
) -> None:
    start = clock.now()
    try:
        listing = Listing(nodes=clean_all(kube.list_objects("v1", "Node")),
                          pods=tuple(listing_pod(p) for p in kube.list_objects("v1", "Pod")))
    except GpulabError as err:
        listing = Listing(error=one_line(str(err)))
    obs.fields["listing"] = listing
    if cross is not None:
        obs.fields["credential_probes"] = tuple(
            probe_credentials(cross, obs.tenant, other) for other in others)
    elif not others:
        obs.fields["credential_probes"] = ()
    obs.time("TC-08", clock.now() - start)


def _cleanup(obs: _Obs) -> None:
    kube = obs.kube
    if kube is None or not obs.scenario_started:
        return
    errors = delete_verify_objects(kube, [r.name for r in obs.runs or () if r.created is not None])
    if errors:
        obs.fields["cleanup_error"] = (
            f"could not delete everything in {NS} (delete the namespace by hand): "
            + "; ".join(errors))


# --------------------------------------------------------------------------- the lab


def observe_lab(
    profile: KamajiHamiProfile,
    lab: str,
    gateways: Gateways,
    *,
    checks: Sequence[Check] = CHECKS,
    keep: bool = False,
    timeouts: Timeouts | None = None,
    clock: Clock | None = None,
    progress: Callable[[str, str], None] | None = None,
    complete_binds: bool = True,
    max_workers: int | None = None,
    workers: str = "",
) -> LabState:
    """Observe every tenant of `profile` for `checks` (see the module docstring for the phases).

    Args:
        profile: the lab's profile (tenants, workers, GPUs).
        lab: the lab name (worker node names derive from it).
        gateways: management + per-tenant gateways and the credential-probe factory.
        checks: the selected checks; decides which GPU pods are created and whether listings and
            credential probes are made.
        keep: leave the verify namespace and pods in the tenants.
        timeouts, clock: bounds of every wait and the time source (tests inject fakes).
        progress: called as progress(tenant, message) from worker threads.
        complete_binds: after HAMi binds a verify pod, do the mock device plugin's part
            for that pod (bind-phase=success, release the node lock it holds), as the write-up
            did by hand, so the next pod binds at once instead of after HAMi's lock timeout
            (profile components.hami.node_lock_timeout). Never touches locks of other pods.
        max_workers: threads for the tenants (default: one per tenant).
        workers: render.MACHINES when the tenants' workers are machines that joined them (an
            existing cluster's `cluster.workers: machines`): each tenant's workers are the nodes
            it lists, the GPU pods are sized from the first card they register
            (render.machine_card) and none is created without one, and no bind is completed
            (their real device plugin does it: HAMi v2.10.0 pkg/device-plugin/nvidiadevice/
            nvinternal/plugin/util.go:397-405, `updatePodAnnotationsAndReleaseLock`).

    Returns:
        The LabState; never raises for lab problems (they are in the state).
    """
    timeouts = timeouts or Timeouts()
    clock, stop = stoppable(clock)  # stopped on Ctrl-C/SIGTERM: waits end, the cleanup runs
    say_to = progress or _no_progress
    ids = {c.id for c in checks}
    wanted = pods_needed(checks)
    names = [t.name for t in profile.tenants]
    observations = {name: _Obs(name, fields={"workers": workers} if workers else {})
                    for name in names}
    complete_binds = complete_binds and not workers  # only the mock plugin leaves it to verify
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run_id = uuid.uuid4().hex[:12]  # the gpulab.dev/run label of this run's pods
    wall = clock.now()

    def phase1(spec: TenantSpec) -> None:
        obs = observations[spec.name]

        def say(message: str) -> None:
            say_to(spec.name, message)

        def body() -> None:
            start = clock.now()
            _observe_control_plane(obs, gateways.management, profile)
            obs.time("TC-01", clock.now() - start)
            try:
                obs.kube = gateways.tenant(spec.name)
            except GpulabError as err:
                obs.fields["api_error"] = one_line(str(err))
                return
            _observe_tenant_api(obs, obs.kube, profile, spec, lab, logs="TC-02" in ids,
                                clock=clock)
            if obs.fields.get("api_error"):
                return
            _run_gpu_pods(obs, obs.kube, spec, lab, wanted, timeouts=timeouts, clock=clock,
                          complete_binds=complete_binds, say=say, run_id=run_id)

        say("observing")
        guard(obs.fields, "observing", body)

    def phase2(spec: TenantSpec) -> None:
        obs = observations[spec.name]
        if obs.kube is None or obs.fields.get("api_error"):
            return
        kube = obs.kube
        others = [n for n in names if n != spec.name]
        guard(obs.fields, "listing", lambda: _observe_isolation(obs, kube, gateways.cross, others,
                                                          clock))

    def phase3(spec: TenantSpec) -> None:
        obs = observations[spec.name]
        if not keep:
            guard(obs.fields, "cleanup", lambda: _cleanup(obs))

    threads = max_workers or max(1, len(names))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gpulab-verify") as pool:
        try:
            with stop_on_interrupt(stop):
                list(pool.map(phase1, profile.tenants))
                if "TC-08" in ids:
                    list(pool.map(phase2, profile.tenants))
        finally:
            list(pool.map(phase3, profile.tenants))
    return LabState(
        lab=lab,
        tenants={name: obs.freeze() for name, obs in observations.items()},
        checks=tuple(c.id for c in CHECKS if c.id in ids),
        observed_at=started_at,
        seconds=round(clock.now() - wall, 3),
        run_id=run_id,
    )

