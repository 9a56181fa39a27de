"""What every check needs: its tenant's state and spec, verdict constructors, shared diagnoses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpulab.naming import LABEL_RUN
from gpulab.stacks import common
from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami import render
from gpulab.verify.hami import CORDON_ANNOTATION
from gpulab.verify.observe import CHECK_LABEL, VERIFY_NAMESPACE
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from collections.abc import Iterable

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec
    from gpulab.stacks.kamaji_hami.state import LabState, TenantState
    from gpulab.verify.state import JsonObj, PodRun

__all__ = [
    "Ctx",
    "explain_gpu_pod",
    "gpu_scenario",
    "no_usable_card",
    "not_verifys_pod",
    "other_cards",
    "pods_not_serving",
    "prepare",
    "system_pods_summary",
    "webhook_bypassed",
    "worker_names",
]


@dataclass(frozen=True)
class Ctx:
    """One check's view: the lab, the profile, the tenant's spec and its observed state."""

    check: str
    lab: LabState
    profile: KamajiHamiProfile
    spec: TenantSpec
    st: TenantState

    @property
    def tenant(self) -> str:
        return self.spec.name

    def passed(self, evidence: str) -> CheckResult:
        return CheckResult(self.check, self.tenant, "pass", evidence=evidence)

    def failed(self, reason: str, evidence: str = "") -> CheckResult:
        return CheckResult(self.check, self.tenant, "fail", evidence=evidence, reason=reason)

    def error(self, reason: str, evidence: str = "") -> CheckResult:
        return CheckResult(self.check, self.tenant, "error", evidence=evidence, reason=reason)

    def skipped(self, reason: str) -> CheckResult:
        return CheckResult(self.check, self.tenant, "skip", reason=reason)

    def workers(self) -> list[str]:
        """The tenant's worker nodes (worker_names)."""
        return worker_names(self.lab, self.spec, self.st)

    @property
    def machines(self) -> bool:
        """The tenant's workers are machines that joined it (render.MACHINES)."""
        return self.st.workers == render.MACHINES

    def no_machine(self) -> CheckResult | None:
        """On joined machines, the `skip` when the tenant lists no node yet: whether its
        workers pass is unknown, not failed (None: it has nodes, or they were not read)."""
        if not self.machines or self.st.nodes is None or self.st.nodes:
            return None
        return self.skipped(
            f"unknown, because no machine has joined {self.tenant} yet (its API lists no "
            f"node): `gpulab join {self.tenant} --name {self.lab.lab}` prints what makes a "
            f"machine its GPU worker")

    def sized_card(self) -> render.VerifyCard:
        """The card (Ctx.card) of a GPU check that prepare_gpu let through."""
        card = self.card()
        if card is None:  # pragma: no cover - gpu_scenario skips such a tenant first
            raise ValueError(f"{self.tenant} has no card to size GPU pods from")
        return card

    def card(self) -> render.VerifyCard | None:
        """The card the GPU pods are sized from: on joined machines the first one they
        register (render.machine_card), else the profile's first mock card."""
        if self.machines:
            return render.machine_card(self.st.nodes)
        return render.profile_card(self.spec)

    def unobserved(self, what: str) -> CheckResult:
        """The data a check needs is missing: the tenant API was down, or it was not observed."""
        if self.st.api_error:
            return self.failed(
                f"the tenant API server of {self.tenant} did not answer, so {what} could not be "
                f"read (see TC-01): {self.st.api_error}"
            )
        return self.error(f"{what} of {self.tenant} was not observed in this run or recording")

    def nodes_missing(self) -> CheckResult:
        """The verdict when the node list was not read: the API refused it (fail: the tenant's
        RBAC or API is broken), the API was down (see TC-01), or it was not observed."""
        if self.st.nodes_error:
            return self.failed(f"the tenant API refused to list nodes: {self.st.nodes_error}")
        return self.unobserved("the node list")

    def pod_run(self, name: str) -> PodRun | None:
        """Verify's pod `name` with only the events about it: an event whose involvedObject uid
        is another pod's (a pod of the same name from an earlier run, or someone else's) is
        dropped; events without a uid are kept (the observation already matched them by uid,
        gpulab.stacks.kamaji_hami.observe._pod_events)."""
        run = self.st.pod_run(name)
        if run is None:
            return None
        uid = str(o.metadata(run.created or run.pod).get("uid") or "")
        own = o.events_about(run.events, {uid})
        return run if len(own) == len(run.events) else replace(run, events=own)

    def verify_run(self, name: str) -> PodRun | CheckResult:
        """Verify's own pod `name` (Ctx.pod_run), or the verdict when it was not observed or
        what was read is not verify's pod (not_verifys_pod)."""
        run = self.pod_run(name)
        if run is None:
            return self.error(f"{name} is not in this observation or recording")
        if foreign := not_verifys_pod(run, self.lab.run_id):
            return self.failed(foreign)
        return run

    def node(self, node_name: str) -> JsonObj | None:
        for node in self.st.nodes or ():
            if o.name(node) == node_name:
                return node
        return None


def worker_names(lab: LabState, spec: TenantSpec, st: TenantState | None) -> list[str]:
    """A tenant's worker nodes: on joined machines (render.MACHINES) every node its API listed
    (a Kamaji tenant's control plane is no node of it), else those the profile gives it
    (render.worker_name)."""
    if st is not None and st.workers == render.MACHINES:
        return [o.name(n) for n in st.nodes or ()]
    return [render.worker_name(lab.lab, spec.name, i) for i in range(spec.workers.count)]


def prepare(
    lab: LabState, profile: KamajiHamiProfile, tenant: str, check: str
) -> Ctx | CheckResult:
    """The check's context, or the `error` verdict explaining why the check cannot look."""
    try:
        spec = profile.tenant(tenant)
    except KeyError as err:
        return CheckResult(check, tenant, "error", reason=str(err).strip("'\""))
    st = lab.tenant(tenant)
    if st is None:
        return CheckResult(check, tenant, "error",
                           reason=f"tenant {tenant} is not in this observation or recording")
    if st.internal_error:
        return CheckResult(check, tenant, "error",
                           reason=f"verify failed while observing {tenant}: {st.internal_error}")
    return Ctx(check, lab, profile, spec, st)


# --------------------------------------------------------------------------- shared diagnoses


def _pods_named(pods: Iterable[JsonObj], prefix: str) -> list[JsonObj]:
    return [p for p in pods if o.name(p).startswith(prefix)]


def system_pods_summary(st: TenantState, prefix: str) -> str:
    """'konnectivity-agent-x Running; konnectivity-agent-y Pending (agent: waiting ...)'."""
    if st.system_pods is None:
        return "not observed"
    pods = _pods_named(st.system_pods, prefix)
    if not pods:
        return f"no {prefix}* pod found"
    parts = []
    for pod in pods:
        problems = o.container_problems(pod)
        extra = f" ({', '.join(problems)})" if problems else ""
        parts.append(f"{o.name(pod)} {o.pod_phase(pod)}{extra}")
    return "; ".join(parts)


_FINISHED = ("Succeeded", "Failed")


def pods_not_serving(st: TenantState, prefix: str) -> list[str] | None:
    """The `prefix`* pods in kube-system that are not Running with every container running and
    ready, as 'name Phase (container problems)'; None when none exists (or none was observed).
    Finished pods (Succeeded, Failed: an evicted pod its ReplicaSet replaced stays until the pod
    GC) are judged only when no other pod of that name exists: they serve nothing either way."""
    pods = _pods_named(st.system_pods or (), prefix)
    if not pods:
        return None
    live = [p for p in pods if o.pod_phase(p) not in _FINISHED]
    out = []
    for pod in live or pods:
        if not o.pod_serving(pod):
            problems = o.container_problems(pod)
            extra = f" ({', '.join(problems)})" if problems else ""
            out.append(f"{o.name(pod)} {o.pod_phase(pod)}{extra}")
    return out


def webhook_bypassed(st: TenantState, pod: JsonObj) -> str:
    """Why a GPU pod kept its scheduler: HAMi's webhook was not called (or skipped the pod)."""
    sched = o.scheduler_name(pod)
    pod_name = o.name(pod)
    if sched != "default-scheduler":
        return (
            f"{pod_name} names scheduler {sched}: HAMi's webhook leaves pods that already name a "
            f"scheduler alone, so HAMi never saw it; something else set schedulerName"
        )
    serving = [p for p in _pods_named(st.system_pods or (), "hami-scheduler") if o.pod_serving(p)]
    if st.system_pods is not None and not serving:
        # HAMi v2.10.0's webhook is served by the hami-scheduler pod: its clientConfig is the
        # hami-scheduler Service (charts/hami/templates/scheduler/webhook.yaml:17-21); with the
        # pod down the call fails and failurePolicy Ignore admits the pod unchanged, whatever
        # the tunnel does.
        return (
            f"{pod_name} kept schedulerName default-scheduler: HAMi's webhook was not called "
            f"because its server is not serving: the hami-scheduler pod in kube-system is "
            f"[{system_pods_summary(st, 'hami-scheduler')}] (failurePolicy Ignore hides this); "
            f"kubectl -n kube-system describe pod -l app.kubernetes.io/component=hami-scheduler "
            f"in {st.tenant}"
        )
    return (
        f"{pod_name} kept schedulerName default-scheduler: HAMi's webhook was not called: the "
        f"tenant API server could not reach it through Konnectivity (failurePolicy Ignore hides "
        f"this); check konnectivity-agent pods in kube-system of the tenant "
        f"[{system_pods_summary(st, 'konnectivity-agent')}] and the konnectivity-server container "
        f"of its control-plane pod (TC-01)"
    )


def _lock_reason(ctx: Ctx, pod_name: str, event_text: str) -> str:
    timeout = ctx.profile.components.hami.node_lock_timeout
    return (
        f"HAMi could not bind {pod_name}: node lock contention ({event_text}). HAMi locks a node "
        f"while binding and only the real device plugin releases the lock; with the mock plugin "
        f"it lasts until HAMi's --node-lock-timeout (components.hami.node_lock_timeout = "
        f"{timeout}) or until verify completes its own pod's bind. A lock held longer means "
        f"another pod holds it or the extender runs without the flag: kubectl -n kube-system get "
        f"deploy hami-scheduler -o yaml | grep node-lock-timeout"
    )


_REASON_HINTS = {
    "node unregistered": "HAMi has not registered the worker's mock GPUs (see TC-04)",
    "CardUuidMismatch": "the card the pod is pinned to (nvidia.com/use-gpuuuid) is not among "
    "the registered devices (see TC-04)",
    "CardNotHealth": "the registered card is marked unhealthy (see TC-04)",
    "CardInsufficientMemory": "the card's memory is taken by other pods",
    "CardInsufficientCore": "the card's cores are taken by other pods",
    "CardTimeSlicingExhausted": "the card already holds `split` pods",
}


def not_verifys_pod(run: PodRun, run_id: str = "") -> str:
    """Why the last snapshot of `run` is not the pod verify created ('' when it is). Verify's
    pods are known by namespace, the `gpulab.dev/check` label render gives them, the
    `gpulab.dev/run` label of this run (`run_id`; not checked when empty, as in older
    recordings) and the uid the create call returned; a pod with the same name that differs in
    any of these is not evidence."""
    pod = run.pod
    if pod is None:
        return ""
    meta = o.metadata(pod)
    namespace = str(meta.get("namespace") or "")
    if namespace != VERIFY_NAMESPACE:
        return (f"the {run.name} that was read is in namespace {namespace or '(none)'}, not "
                f"verify's {VERIFY_NAMESPACE}: it is not verify's pod")
    label = (meta.get("labels") or {}).get(CHECK_LABEL)
    if label != run.check:
        return (f"{VERIFY_NAMESPACE}/{run.name} lacks verify's label {CHECK_LABEL}="
                f"{run.check} (it has {label!r}): a pod of the same name that verify did not "
                f"create; delete it (kubectl -n {VERIFY_NAMESPACE} delete pod {run.name}) and "
                f"re-run verify")
    other_run = (meta.get("labels") or {}).get(LABEL_RUN)
    if run_id and other_run != run_id:
        return (f"{VERIFY_NAMESPACE}/{run.name} belongs to another verify run ({LABEL_RUN}="
                f"{other_run!r}, this run is {run_id!r}): a pod left by an earlier or concurrent "
                f"verify; kubectl -n {VERIFY_NAMESPACE} delete pod {run.name}")
    created = o.metadata(run.created).get("uid")
    if created and meta.get("uid") != created:
        return (f"{VERIFY_NAMESPACE}/{run.name} has uid {meta.get('uid')}, not {created} that "
                f"verify created: the pod was deleted and re-created by someone else while "
                f"verify waited")
    return ""


def explain_gpu_pod(ctx: Ctx, run: PodRun | None, pod_name: str) -> str:
    """Why a verify GPU pod is not Running and placed by HAMi: the most specific cause first."""
    if run is None:
        return f"{pod_name} was not part of this observation"
    if run.outcome == "not-created":
        return f"{pod_name} was not created: {run.last_seen or 'a pod before it did not run'}"
    if run.create_error:
        denied = "denied" in run.create_error and "webhook" in run.create_error
        who = "HAMi's admission webhook denied it" if denied else "the create call failed"
        return f"the tenant API refused {pod_name} ({who}): {run.create_error}"
    pod = run.pod or run.created
    if pod is None:
        return f"{pod_name} disappeared while verify waited for it (deleted by someone else?)"
    if o.scheduler_name(run.created or pod) != o.HAMI_SCHEDULER:
        return webhook_bypassed(ctx.st, run.created or pod)
    node = o.pod_node(pod)
    phase = o.pod_phase(pod)
    if phase == "Failed":
        status = pod.get("status") or {}
        why = f"{status.get('reason', '')} {status.get('message', '')}".strip()
        # The kubelet refuses a pod at admission with status.reason UnexpectedAdmissionError when
        # the device plugin's Allocate fails (HAMi v2.10.0 hack/hami-mig-e2e.sh:621 reads it).
        hint = (f"; the kubelet refused it at admission: the device plugin on {node} could not "
                f"allocate its GPU (kubectl -n kube-system logs of the "
                f"{render.MOCK_PLUGIN} pod on {node})" if "AdmissionError" in why and node else "")
        return f"{pod_name} failed: {why or 'no reason given'}{hint}"
    if node and phase != "Running":
        problems = o.container_problems(pod)
        hint = ""
        if any("Image" in p for p in problems):
            hint = f"; the image {common.VERIFY_IMAGE} must be pullable or present on {node}"
        return (f"{pod_name} is bound to {node} but not running: "
                f"{', '.join(problems) or phase}{hint}")
    if not node:
        lock = o.lock_contention(run.events)
        if lock is not None:
            return _lock_reason(ctx, pod_name, o.event_message(lock))
        reasons = [r for r in o.hami_reasons(run.events) if r != o.LOCK_CONTENTION]
        if reasons:
            hints = [_REASON_HINTS[r] for r in reasons if r in _REASON_HINTS]
            failed = o.events_with(run.events, "FilteringFailed") or run.events
            return (
                f"HAMi found no card for {pod_name} ({', '.join(reasons)}: "
                f"{o.event_message(failed[-1])})"
                + (f"; {'; '.join(hints)}" if hints else "")
            )
        if not run.events:
            schedulers = system_pods_summary(ctx.st, "hami-scheduler")
            return (
                f"{pod_name} is {phase} with schedulerName hami-scheduler but no scheduler left "
                f"an event about it: hami-scheduler is not running or not handling pods; "
                f"hami-scheduler pods in kube-system: [{schedulers}]"
            )
    waited = f" after {run.waited:.0f}s" if run.waited else ""
    last = f"; last seen: {run.last_seen}" if run.last_seen else ""
    return f"{pod_name} is {o.pod_summary(pod)}{waited}{last}; events: {o.short_events(run.events)}"


def prepare_gpu(
    lab: LabState, profile: KamajiHamiProfile, tenant: str, check: str
) -> tuple[Ctx, render.SharingSizes] | CheckResult:
    """`prepare` then `gpu_scenario`: the context and pod sizes of a GPU check, or its verdict."""
    ctx = prepare(lab, profile, tenant, check)
    if isinstance(ctx, CheckResult):
        return ctx
    sizes = gpu_scenario(ctx)
    if isinstance(sizes, CheckResult):
        return sizes
    return ctx, sizes


def no_usable_card(ctx: Ctx) -> str:
    """Why verify has no card to size its GPU pods from on joined machines: what HAMi did
    register instead (render.machine_cards), each an unknown with its reason."""
    survey = render.machine_cards(ctx.st.nodes)
    if not survey.mig and not survey.cordoned:
        return (f"unknown, because no node of {ctx.tenant} registers a healthy card with HAMi "
                f"(see TC-04), so verify has no card to size its GPU pods from and created "
                f"none")
    kinds, why = [], []
    if survey.mig:
        kinds.append(f"in MIG mode ({'; '.join(survey.mig)})")
        why.append("HAMi v2.10.0 grants a pod on a MIG card a whole MIG instance, the smallest "
                   "allowed profile whose memory fits (pkg/device/nvidia/device.go:601-644, "
                   "645-659), not the memory and cores it asks, which TC-05..TC-07 measure")
    if survey.cordoned:
        kinds.append(f"cordoned ({CORDON_ANNOTATION}: {'; '.join(survey.cordoned)})")
        why.append("HAMi's Fit skips a cordoned card (pkg/device/nvidia/device.go:698-713, "
                   "726, 735)")
    return (f"unknown, because every healthy card the nodes of {ctx.tenant} register with HAMi "
            f"is {' or '.join(kinds)}: {'; '.join(why)}; verify created no GPU pod (TC-04 "
            f"judges the cards' registration)")


def other_cards(ctx: Ctx) -> str:
    """On joined machines, the cards HAMi registered that verify's GPU pods did not use
    ('' when there are none): they share the tenant, but TC-05..TC-07 judged one card."""
    if not ctx.machines:
        return ""
    survey = render.machine_cards(ctx.st.nodes)
    sized = ctx.card()
    rest = [f"{c.node} {c.device_id} {c.model}" for c in survey.usable if c != sized]
    rest += [*survey.mig, *(f"{c} cordoned" for c in survey.cordoned)]
    if not rest:
        return ""
    return (f"; not exercised by TC-05..TC-07 (unknown whether HAMi shares them), also "
            f"registered: {'; '.join(rest)}")


def gpu_scenario(ctx: Ctx) -> render.SharingSizes | CheckResult:
    """The pod sizes the GPU checks expect, or the skip/error/fail verdict when they cannot run.

    Skip when the tenant has no GPUs or its first card admits no size (render.sharing_sizes, the
    rule in docs/checks.md): verify then creates no GPU pods for it.
    """
    if ctx.machines:
        if ctx.st.nodes is None:
            return ctx.nodes_missing()
        if (skip := ctx.no_machine()) is not None:
            return skip
    gpu = ctx.card()
    if gpu is None and ctx.machines:
        return ctx.skipped(no_usable_card(ctx))
    if gpu is None:
        return ctx.skipped(f"{ctx.tenant} has no GPUs in the profile, so there is nothing for "
                           f"HAMi to schedule")
    sizes = render.sharing_sizes(gpu, gpu.device_id)
    if not sizes.applicable:
        return ctx.skipped(
            f"card {gpu.model} ({gpu.cores} cores, split {gpu.split}) admits no pod size where "
            f"three pods fit and a fourth does not (sizing rule, docs/checks.md), so verify "
            f"creates no GPU pods for {ctx.tenant}"
        )
    if ctx.st.gpu_pods is None:
        if ctx.st.scenario_error:
            return ctx.error(f"verify could not run its GPU pods in {ctx.tenant}: "
                             f"{ctx.st.scenario_error}")
        return ctx.unobserved("the GPU pods")
    return sizes
