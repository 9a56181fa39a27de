"""KAI-08 isolation, and the queue-label finding verify reports beside it.

KAI-08: each team's vCluster lists only its own pods (none of the other teams' verify pods, by
uid or by the `gpulab.dev/tenant` label), and its admin credentials are rejected by every other
team's vCluster API. Nodes are not compared: the pattern shares nodes on purpose (all host nodes
are synced into every vCluster).

The finding (facts §5, "Tenant isolation"): queues live on the host and OSS vCluster cannot
rewrite the `kai.scheduler/queue` label (patches are Pro), so a team can name another team's
queue. verify shows it: the first team creates `queue-foreign` labelled with the next team's
queue, and KAI's PodGroup on the host lands in that queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab import naming
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.checks.common import not_pods_group, prepare
from gpulab.verify import objects as o
from gpulab.verify.report import Finding
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.checks.common import Ctx
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState
    from gpulab.verify.state import JsonObj

__all__ = ["FINDING_ID", "FINDING_TITLE", "check", "queue_finding"]

ID = "KAI-08"
FINDING_ID = "KAI-F1"
FINDING_TITLE = "queue label not enforced"
ADVICE = (
    "Nothing on the host ties a team's pods to its queue: enforce it with host-side admission "
    "(e.g. a ValidatingAdmissionPolicy requiring kai.scheduler/queue=<team queue> on pods in "
    "vcluster-<team>), or vCluster Pro's pod patches"
)


def _uid(obj: JsonObj) -> str:
    return str(o.metadata(obj).get("uid") or "")


def _listing_problems(ctx: Ctx) -> tuple[list[str], list[str], list[str]]:
    """(problems, evidence, teams not observed) of the team's pod listing against the other
    teams' pods. A team whose observation is missing has pods verify knows no uid of: whether
    the listing shows them is unknown, not "no"."""
    assert ctx.st.listing is not None
    others: dict[str, str] = {}  # uid -> team
    counts: dict[str, int] = {}
    unobserved: list[str] = []
    for spec in ctx.profile.teams:
        if spec.name == ctx.team:
            continue
        st = ctx.lab.team(spec.name)
        if st is None:
            unobserved.append(spec.name)
            continue
        created = [r.created for r in st.pods or () if r.created]
        counts[spec.name] = len(created)
        others.update({_uid(p): spec.name for p in created if _uid(p)})
        if st.listing is not None:
            others.update({_uid(p): spec.name for p in st.listing.pods if _uid(p)})
    problems: list[str] = []
    for pod in ctx.st.listing.pods:
        where = f"{o.metadata(pod).get('namespace', '')}/{o.name(pod)}"
        label = o.labels(pod).get(naming.LABEL_TENANT)
        if label and label != ctx.team:
            problems.append(f"{ctx.team}'s vCluster lists pod {where} labelled "
                            f"{naming.LABEL_TENANT}={label}")
        elif _uid(pod) in others:
            problems.append(f"{ctx.team}'s vCluster lists pod {where} of {others[_uid(pod)]} "
                            f"(same uid)")
    namespaces = {o.metadata(p).get("namespace") for p in ctx.st.listing.pods}
    evidence = [f"{ctx.team}'s vCluster lists {len(ctx.st.listing.pods)} pod(s) in "
                f"{len(namespaces)} namespace(s)"]
    hidden = ", ".join(f"{n} of {team}" for team, n in counts.items() if n)
    if hidden:
        evidence.append(f"none of the verify pods of the other teams ({hidden}) visible")
    return problems, evidence, unobserved


def _own_pods_missing(ctx: Ctx) -> list[str]:
    """The team's own verify pods (created in this run, by the uid the create call returned)
    that its listing does not show: verify lists a vCluster's pods while every pod it created
    there still exists (observe.py, before the cleanup), so a listing without them is not of
    that moment."""
    assert ctx.st.listing is not None
    listed = {_uid(p) for p in ctx.st.listing.pods}
    return [f"{run.name} uid {_uid(run.created)}" for run in ctx.st.pods or ()
            if run.created and _uid(run.created) and _uid(run.created) not in listed]


def _probe_problems(ctx: Ctx) -> tuple[list[str], list[str], list[str]]:
    """(failures, errors, evidence) of this team's credentials at the other vClusters."""
    failures: list[str] = []
    errors: list[str] = []
    evidence: list[str] = []
    probes = {p.server_of: p for p in ctx.st.credential_probes or ()
              if p.credentials_of == ctx.team}
    for spec in ctx.profile.teams:
        other = spec.name
        if other == ctx.team:
            continue
        probe = probes.get(other)
        if probe is None:
            errors.append(f"{ctx.team}'s credentials were not presented to {other}'s vCluster in "
                          f"this run or recording")
        elif probe.outcome == "accepted":
            failures.append(f"{other}'s vCluster accepted {ctx.team}'s credentials "
                            f"({probe.detail}): the vClusters trust one CA, or {ctx.team}'s "
                            f"kubeconfig points at {other}'s NodePort")
        elif probe.outcome == "forbidden":
            failures.append(f"{other}'s vCluster authenticated {ctx.team}'s credentials and only "
                            f"RBAC refused them ({probe.detail}): the vClusters trust one CA")
        elif probe.outcome == "error":
            errors.append(f"could not present {ctx.team}'s credentials to {other}'s vCluster: "
                          f"{probe.detail}")
        else:
            evidence.append(f"{other}'s vCluster rejected {ctx.team}'s credentials "
                            f"({probe.detail})")
    return failures, errors, evidence


def check(lab: KaiLabState, profile: VclusterKaiProfile, team: str) -> CheckResult:
    """Only the team's own pods in its vCluster's listing; its credentials useless elsewhere."""
    ctx = prepare(lab, profile, team, ID)
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.listing is None:
        return ctx.unobserved("the isolation listing")
    if ctx.st.listing.error:
        return ctx.failed(f"{team}'s vCluster refused to list pods: {ctx.st.listing.error}")
    if missing := _own_pods_missing(ctx):
        return ctx.failed(
            f"{team}'s pod listing lacks its own verify pods of this run ({', '.join(missing)}): "
            f"it was not taken while verify's pods existed (after the cleanup, or from another "
            f"run), so it cannot show that the other teams' pods are hidden; re-run gpulab "
            f"verify --tc KAI-08")
    failures, evidence, unobserved = _listing_problems(ctx)
    probe_failures, errors, probe_evidence = _probe_problems(ctx)
    failures += probe_failures
    evidence += probe_evidence
    if len(profile.teams) == 1:
        evidence.append("the only team of the lab: no other vCluster to present credentials to")
    shown = "; ".join(evidence)
    if failures:
        return ctx.failed(summarize_problems(failures), shown)
    if errors:
        return ctx.error(summarize_problems(errors), shown)
    if unobserved:
        teams = " and ".join(unobserved)
        return ctx.skipped(
            f"unknown whether {team}'s vCluster lists the verify pods of {teams}, because "
            f"{teams} could not be observed (not in this run or recording): verify knows no "
            f"uid of their pods, and their label alone does not show them hidden", shown)
    return ctx.passed(shown)


def queue_finding(lab: KaiLabState, profile: VclusterKaiProfile) -> tuple[Finding | None, str]:
    """(the finding, or None with a note when the lab enforces queues after all)."""
    team = profile.teams[0]
    st = lab.team(team.name)
    run = st.run("queue-foreign") if st is not None else None
    target = str(o.labels((run.created if run else None) or {}).get(kr.QUEUE_LABEL) or "")
    if not target:
        target = next((str(o.labels(p).get(kr.QUEUE_LABEL)) for p in
                       kr.verify_objects(profile, team) if o.name(p) == "queue-foreign"), "")
    foreign = not_pods_group(run, team, lab.run_id) if run is not None else ""
    group = run.pod_group if run and not foreign else None
    grouped = str(((group or {}).get("spec") or {}).get("queue") or "")
    seconds = run.waited if run else 0.0
    if run is not None and group is not None and grouped == target:
        return Finding(
            FINDING_ID, FINDING_TITLE, team.name,
            f"{team.name} labelled its pod {run.name} {kr.QUEUE_LABEL}={target} inside its "
            f"vCluster, the label reached the host unchanged and KAI queued it in {target} "
            f"(PodGroup {o.name(group)}): a team can spend another team's queue, and a pod "
            f"without the label lands in default-queue",
            ADVICE, True, seconds), ""
    if run is not None and group is not None:
        return None, (f"{FINDING_ID}: {team.name}'s pod labelled {kr.QUEUE_LABEL}={target} was "
                      f"queued in {grouped or 'no queue'}: something on the host enforces the "
                      f"team's queue, so the queue-label gap is closed on this lab")
    why = "not observed in this run or recording" if run is None else (
        foreign or run.create_error or run.last_seen or run.outcome)
    return Finding(
        FINDING_ID, FINDING_TITLE, team.name,
        f"OSS vCluster passes {kr.QUEUE_LABEL} through unchanged (its patches are Pro), so a "
        f"team can name another team's queue; verify could not show it here ({why})",
        ADVICE, False, seconds), ""
