"""What every vcluster-kai check needs: its team's state and spec, verdicts, shared diagnoses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpulab.naming import LABEL_RUN
from gpulab.stacks.vcluster_kai import objects as ko
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.verify import objects as o
from gpulab.verify.observe import VERIFY_NAMESPACE
from gpulab.verify.result import CheckResult

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState, ProbeRun, TeamState

__all__ = ["Ctx", "accounted_elsewhere", "control_plane_summary", "explain_run",
           "not_pods_group", "not_verifys_pod", "own_events", "prepare", "run_or_verdict"]


@dataclass(frozen=True)
class Ctx:
    """One check's view: the lab, the profile, the team's spec and its observed state."""

    check: str
    lab: KaiLabState
    profile: VclusterKaiProfile
    spec: TeamSpec
    st: TeamState

    @property
    def team(self) -> str:
        return self.spec.name

    @property
    def queue(self) -> str:
        return self.spec.queue_name

    def passed(self, evidence: str) -> CheckResult:
        return CheckResult(self.check, self.team, "pass", evidence=evidence)

    def failed(self, reason: str, evidence: str = "") -> CheckResult:
        return CheckResult(self.check, self.team, "fail", evidence=evidence, reason=reason)

    def error(self, reason: str, evidence: str = "") -> CheckResult:
        return CheckResult(self.check, self.team, "error", evidence=evidence, reason=reason)

    def skipped(self, reason: str, evidence: str = "") -> CheckResult:
        return CheckResult(self.check, self.team, "skip", evidence=evidence, reason=reason)

    def unobserved(self, what: str) -> CheckResult:
        """The data is missing: the vCluster API was down (see KAI-01), or it was not observed."""
        if self.st.api_error:
            return self.failed(
                f"the vCluster API of {self.team} did not answer, so {what} could not be read "
                f"(see KAI-01): {self.st.api_error}"
            )
        return self.error(f"{what} of {self.team} was not observed in this run or recording")


def prepare(lab: KaiLabState, profile: VclusterKaiProfile, team: str, check: str
            ) -> Ctx | CheckResult:
    """The check's context, or the `error` verdict explaining why the check cannot look."""
    try:
        spec = profile.team(team)
    except KeyError as err:
        return CheckResult(check, team, "error", reason=str(err).strip("'\""))
    st = lab.team(team)
    if st is None:
        return CheckResult(check, team, "error",
                           reason=f"team {team} is not in this observation or recording")
    if st.internal_error:
        return CheckResult(check, team, "error",
                           reason=f"verify failed while observing {team}: {st.internal_error}")
    return Ctx(check, lab, profile, spec, st)


def control_plane_summary(st: TeamState) -> str:
    """'team-nlp-0 Running' for the vCluster's control-plane pods on the host."""
    if st.control_plane_pods is None:
        return f"not readable ({st.host_error})" if st.host_error else "not observed"
    if not st.control_plane_pods:
        return "no pod (is the Helm release installed? gpulab up installs it)"
    parts = []
    for pod in st.control_plane_pods:
        problems = o.container_problems(pod)
        extra = f" ({', '.join(problems)})" if problems else ""
        parts.append(f"{o.name(pod)} {o.pod_phase(pod)}{extra}")
    return "; ".join(parts)


GPU_PODS = ("gpu-share", "gpu-over-limit", "gpu-over-capacity")


def run_or_verdict(ctx: Ctx, name: str) -> ProbeRun | CheckResult:
    """The team's verify pod `name`, or the verdict when verify's pods were not observed, or
    when the GPU was already in use (then verify made no GPU pod: its expectations assume an
    idle GPU and empty queues, so they would mean nothing)."""
    users = ctx.lab.host.gpu_users
    if name in GPU_PODS and users:
        return ctx.error(
            f"not run: before verify started the GPU was in use by {ko.describe_users(users)}; "
            f"verify needs the GPU and the team queues idle to know what must fit. Stop those "
            f"pods (kubectl delete pod -n NAMESPACE NAME) or verify a fresh lab "
            f"(gpulab down && gpulab up)")
    if name in GPU_PODS and users is None and ctx.lab.host.gpu_users_error:
        return ctx.error(f"could not tell whether the GPU was idle before verify started: "
                         f"{ctx.lab.host.gpu_users_error}")
    if ctx.st.pods is None:
        if ctx.st.scenario_error:
            return ctx.error(f"verify could not create its pods in {ctx.team}'s vCluster: "
                             f"{ctx.st.scenario_error}")
        return ctx.unobserved("verify's pods")
    run = ctx.st.run(name)
    if run is None:
        return ctx.error(f"{name} was not part of this observation")
    if foreign := not_verifys_pod(run, ctx.spec, ctx.lab.run_id):
        return ctx.failed(foreign)
    if foreign := not_pods_group(run, ctx.spec, ctx.lab.run_id):
        return ctx.failed(foreign)
    return own_events(run)


def not_verifys_pod(run: ProbeRun, spec: TeamSpec, run_id: str) -> str:
    """Why the host pod read for `run` is not the host copy of the pod verify created ('' when
    it is, or when none was read). The copy is known by the team's host namespace, the virtual
    namespace, name and uid vCluster annotates it with (render.VC_*_ANNOTATION), the
    `gpulab.dev/check` label and this run's `gpulab.dev/run` label (`run_id`; not checked when
    empty, as in older recordings); a pod that differs in any of these is not evidence."""
    pod = run.host
    if pod is None:
        return ""
    meta = o.metadata(pod)
    name = o.name(pod)
    where = f"{meta.get('namespace') or '(none)'}/{name}"
    look = f"kubectl -n {spec.namespace} get pod {name} -o yaml"
    if meta.get("namespace") != spec.namespace:
        return (f"the host pod read for {run.name} is {where}, outside {spec.namespace} where "
                f"{spec.name}'s vCluster syncs its pods: it is not verify's pod")
    annotations = o.annots(pod)
    virtual = (annotations.get(kr.VC_NAMESPACE_ANNOTATION), annotations.get(kr.VC_NAME_ANNOTATION))
    if virtual != (VERIFY_NAMESPACE, run.name):
        return (f"host pod {where} is the copy of {'/'.join(str(v) for v in virtual)}, not of "
                f"verify's {VERIFY_NAMESPACE}/{run.name} ({kr.VC_NAMESPACE_ANNOTATION}, "
                f"{kr.VC_NAME_ANNOTATION}); {look}")
    labels = o.labels(pod)
    check = labels.get(CHECK_LABEL)
    if check != run.check:
        return (f"host pod {where} lacks verify's label {CHECK_LABEL}={run.check} (it has "
                f"{check!r}): a pod of the same name that verify did not create; delete it in "
                f"the vCluster (kubectl -n {VERIFY_NAMESPACE} delete pod {run.name}) and re-run "
                f"verify")
    other_run = labels.get(LABEL_RUN)
    if run_id and other_run != run_id:
        return (f"host pod {where} belongs to another verify run ({LABEL_RUN}={other_run!r}, "
                f"this run is {run_id!r}): a pod left by an earlier or concurrent verify; "
                f"kubectl -n {VERIFY_NAMESPACE} delete pod {run.name} in {spec.name}'s vCluster")
    created = str(o.metadata(run.created).get("uid") or "")
    copied = annotations.get(kr.VC_UID_ANNOTATION)
    if created and copied != created:
        return (f"host pod {where} is the copy of virtual pod uid {copied or '(none)'}, not "
                f"{created} that verify created ({kr.VC_UID_ANNOTATION}): the pod was deleted "
                f"and re-created while verify waited; {look}")
    return ""


CHECK_LABEL = kr.CHECK_LABEL


def not_pods_group(run: ProbeRun, spec: TeamSpec, run_id: str) -> str:
    """Why the PodGroup read for `run` is not its host pod's own ('' when it is, or when none
    was read). KAI v0.16.8's pod-grouper groups a pod without owners as its own top owner: the
    PodGroup is `pg-<pod name>-<pod uid>` in the pod's namespace, named in the pod's
    `pod-group-name` annotation (pkg/podgrouper/podgrouper/plugins/defaultgrouper/
    default_grouper.go:94-96, pkg/podgrouper/pod_controller.go:179-206), owned by the pod and
    labelled with the pod's labels (default_grouper.go:69-80,119-132,
    pkg/podgrouper/podgroup/handler.go:93-103), so with this run's `gpulab.dev/run` label
    (`run_id`; not checked when empty, as in older recordings)."""
    group, pod = run.pod_group, run.host
    if group is None or pod is None:
        return ""
    meta = o.metadata(group)
    name = o.name(group)
    where = f"{meta.get('namespace') or '(none)'}/{name}"
    look = f"kubectl -n {spec.namespace} get podgroups.scheduling.run.ai {name} -o yaml"
    other_run = o.labels(group).get(LABEL_RUN)
    if run_id and other_run != run_id:
        return (f"PodGroup {where} read for {run.name} belongs to another verify run "
                f"({LABEL_RUN}={other_run!r}, this run is {run_id!r}; KAI copies the pod's "
                f"labels to its PodGroup): it is not this run's pod's PodGroup; {look}")
    named = o.annots(pod).get(kr.POD_GROUP_ANNOTATION)
    if meta.get("namespace") != o.metadata(pod).get("namespace") or name != named:
        return (f"PodGroup {where} read for {run.name} is not the one its host pod "
                f"{o.name(pod)} names in its {kr.POD_GROUP_ANNOTATION} annotation "
                f"({named or 'none'}): another workload's PodGroup is not evidence; {look}")
    owners = [str(ref.get("uid") or "(none)") for ref in meta.get("ownerReferences") or []
              if isinstance(ref, dict)]
    uid = str(o.metadata(pod).get("uid") or "")
    if owners and uid not in owners:
        return (f"PodGroup {where} read for {run.name} is owned by uid {', '.join(owners)}, not "
                f"by host pod {o.name(pod)} (uid {uid or '(none)'}): a PodGroup left by an "
                f"earlier pod of that name; {look}")
    return ""


def accounted_elsewhere(ctx: Ctx, run: ProbeRun) -> str:
    """Why `run`'s pod is not accounted in the team's own queue ('' when it is, or when it has no
    PodGroup): KAI charges a workload to its PodGroup's `spec.queue` (the pod-grouper copies the
    `kai.scheduler/queue` label there, default_grouper.go:134-146), so another queue there means
    the team's queue status and limits say nothing about this pod."""
    group = run.pod_group
    if group is None:
        return ""
    queue = str((group.get("spec") or {}).get("queue") or "")
    if queue == ctx.queue:
        return ""
    label = o.labels(run.host).get(kr.QUEUE_LABEL, "none")
    return (f"PodGroup {o.name(group)} of {run.name} is in queue {queue or 'none'}, not "
            f"{ctx.queue}: KAI accounts {ctx.team}'s pod in {queue or 'no'} queue (host pod "
            f"labelled {kr.QUEUE_LABEL}={label}); kubectl -n {ctx.spec.namespace} get "
            f"podgroups.scheduling.run.ai {o.name(group)} -o yaml")


def own_events(run: ProbeRun) -> ProbeRun:
    """`run` with only the events about its host pod and that pod's PodGroup: an event whose
    involvedObject uid is another object's (a same-named pod of an earlier run, someone else's
    PodGroup) is dropped; events without a uid are kept."""
    uids = {str(o.metadata(x).get("uid") or "") for x in (run.host, run.pod_group)}
    return replace(run, events=o.events_about(run.events, uids))


_HINT_RUNNING = (
    "a fraction pod only starts once KAI's binder has a GPU reservation pod in the reservation "
    "namespace annotated by fake-gpu-operator's status-updater (the reservation RBAC) and "
    "RuntimeClass nvidia exists"
)


def explain_run(ctx: Ctx, run: ProbeRun) -> str:
    """Why a verify pod is not where its check wants it: the most specific cause first."""
    name = run.name
    if run.outcome == "not-created":
        if run.last_seen.startswith("because"):
            return f"{name} was not created {run.last_seen}"
        return f"{name} was not created: {run.last_seen or 'a pod before it did not run'}"
    if run.create_error:
        return f"{ctx.team}'s vCluster API refused {name}: {run.create_error}"
    if run.host is None:
        return (f"the vCluster did not sync {name} to the host (no pod "
                f"{ctx.spec.namespace}/{run.host_name} after {run.waited:.0f}s); the vCluster's "
                f"control plane on the host: {control_plane_summary(ctx.st)}")
    host = run.host
    phase = o.pod_phase(host)
    if phase == "Failed":
        status = host.get("status") or {}
        why = f"{status.get('reason') or ''} {status.get('message') or ''}".strip()
        return f"{name} failed on the host: {why or 'no reason given'}"
    node = o.pod_node(host)
    if node and phase != "Running":
        problems = o.container_problems(host)
        return (f"{name} is bound to {node} but {', '.join(problems) or phase}; {_HINT_RUNNING}; "
                f"events: {o.short_events(run.events)}")
    reasons = ko.kai_reasons(host, run.pod_group, run.events)
    if not node and reasons:
        return f"KAI keeps {name} {phase}: {ko.reasons_text(reasons)}"
    if not node and run.pod_group is None:
        queue = o.labels(host).get(kr.QUEUE_LABEL, "none")
        return (f"{name} is {phase} and KAI's pod-grouper made no PodGroup for it (schedulerName "
                f"{o.scheduler_name(host)}, {kr.QUEUE_LABEL} {queue}): check the pod-grouper "
                f"deployment in KAI's namespace; events: {o.short_events(run.events)}")
    waited = f" after {run.waited:.0f}s" if run.waited else ""
    last = f"; last seen: {run.last_seen}" if run.last_seen else ""
    return (f"{name} is {o.pod_summary(host)}{waited}, KAI gave no reason{last}; events: "
            f"{o.short_events(run.events)}")
