"""TC-08 isolation: a tenant's API lists only its own nodes, pods and GPU capacity, the other
tenants' verify pods are invisible to it, and its admin credentials are rejected by every other
tenant's API server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulab import naming
from gpulab.stacks.kamaji_hami import objects as o
from gpulab.stacks.kamaji_hami.checks.common import Ctx, prepare, worker_names
from gpulab.verify.result import CheckResult, summarize_problems

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.state import JsonObj

__all__ = ["ID", "check"]

ID = "TC-08"


@dataclass
class _Others:
    """What the other tenants own: worker names, uids they list, their verify pods."""

    workers: dict[str, str] = field(default_factory=dict)  # node name -> tenant
    node_uids: dict[str, str] = field(default_factory=dict)  # uid -> tenant
    pod_uids: dict[str, str] = field(default_factory=dict)  # uid -> tenant
    verify_pods: dict[str, int] = field(default_factory=dict)  # tenant -> verify pods created
    unobserved: list[str] = field(default_factory=list)


def _uid(obj: JsonObj) -> str:
    return str(o.metadata(obj).get("uid") or "")


def _others(ctx: Ctx) -> _Others:
    seen = _Others()
    for spec in ctx.profile.tenants:
        if spec.name == ctx.tenant:
            continue
        st = ctx.lab.tenant(spec.name)
        for worker in worker_names(ctx.lab, spec, st):
            seen.workers[worker] = spec.name
        if st is None or st.listing is None:
            seen.unobserved.append(spec.name)
            continue
        seen.node_uids.update({_uid(n): spec.name for n in st.listing.nodes if _uid(n)})
        seen.pod_uids.update({_uid(p): spec.name for p in st.listing.pods if _uid(p)})
        created = [r.created for r in st.gpu_pods or () if r.created]
        seen.pod_uids.update({_uid(p): spec.name for p in created if _uid(p)})
        seen.verify_pods[spec.name] = len(created)
    return seen


def _listing_problems(ctx: Ctx, others: _Others) -> list[str]:
    assert ctx.st.listing is not None
    own = set(ctx.workers())
    problems: list[str] = []
    for node in ctx.st.listing.nodes:
        node_name, uid = o.name(node), _uid(node)
        if node_name in own:
            continue  # its own worker (if another tenant lists it too, that one fails)
        if node_name in others.workers:
            problems.append(f"{ctx.tenant}'s API lists node {node_name} of "
                            f"{others.workers[node_name]}")
        elif uid in others.node_uids:
            problems.append(f"{ctx.tenant}'s API lists node {node_name}, which "
                            f"{others.node_uids[uid]}'s API lists too (same uid)")
        else:
            problems.append(f"{ctx.tenant}'s API lists node {node_name}, which is not one of its "
                            f"workers ({', '.join(sorted(own))})")
    for pod in ctx.st.listing.pods:
        where = f"{o.metadata(pod).get('namespace', '')}/{o.name(pod)}"
        label = o.labels(pod).get(naming.LABEL_TENANT)
        on = o.pod_node(pod)
        if label == ctx.tenant or on in own:
            continue  # its own pod (if another tenant lists it too, that one fails)
        if _uid(pod) in others.pod_uids:
            problems.append(f"{ctx.tenant}'s API lists pod {where} of "
                            f"{others.pod_uids[_uid(pod)]} (same uid)")
        elif label and label != ctx.tenant:
            problems.append(f"{ctx.tenant}'s API lists pod {where} labelled "
                            f"{naming.LABEL_TENANT}={label}")
        elif on in others.workers:
            problems.append(f"{ctx.tenant}'s API lists pod {where} running on {on} of "
                            f"{others.workers[on]}")
    return problems


def _own_pods_missing(ctx: Ctx) -> list[str]:
    """This tenant's verify pods of this run (by the uid their create call returned) that its
    own listing does not show: verify lists while every pod it created exists (observe.py: the
    listings come before the cleanup), so a listing without them is not of that moment and
    cannot show the other tenants' pods are hidden."""
    assert ctx.st.listing is not None
    listed = {_uid(p) for p in ctx.st.listing.pods}
    return [f"{run.name} uid {_uid(run.created)}" for run in ctx.st.gpu_pods or ()
            if run.created and _uid(run.created) and _uid(run.created) not in listed]


def _capacity_problems(ctx: Ctx) -> tuple[list[str], str]:
    """GPU capacity this tenant sees on nodes that are not its own (its own nodes' capacity is
    TC-04's business)."""
    assert ctx.st.listing is not None
    own = set(ctx.workers())
    problems: list[str] = []
    shown = []
    for key in ("nvidia.com/gpumem", "nvidia.com/gpucores"):
        per_node = {
            o.name(n): o.int_quantity(((n.get("status") or {}).get("allocatable") or {}).get(key))
            or 0
            for n in ctx.st.listing.nodes
        }
        foreign = {name: v for name, v in per_node.items() if name not in own and v}
        shown.append(f"{key.removeprefix('nvidia.com/')} {sum(per_node.values())}")
        if foreign:
            problems.append(
                f"{ctx.tenant}'s API shows {sum(foreign.values())} {key} on nodes that are not "
                f"its own ({', '.join(sorted(foreign))}): it sees another tenant's GPUs")
    return problems, ", ".join(shown)


def _probe_problems(ctx: Ctx) -> tuple[list[str], list[str], list[str]]:
    """(failures, errors, evidence) of presenting this tenant's credentials elsewhere."""
    failures: list[str] = []
    errors: list[str] = []
    evidence: list[str] = []
    others = [t.name for t in ctx.profile.tenants if t.name != ctx.tenant]
    probes = {p.server_of: p for p in ctx.st.credential_probes or ()
              if p.credentials_of == ctx.tenant}
    for other in others:
        probe = probes.get(other)
        if probe is None:
            errors.append(f"{ctx.tenant}'s credentials were not presented to {other}'s API "
                          f"server in this run or recording")
        elif probe.outcome == "accepted":
            failures.append(
                f"{other}'s API server accepted {ctx.tenant}'s admin credentials "
                f"({probe.detail}): the tenants share a certificate authority, or "
                f"{ctx.tenant}'s kubeconfig points at {other}; recreate the TenantControlPlanes "
                f"so each gets its own CA"
            )
        elif probe.outcome == "forbidden":
            failures.append(
                f"{other}'s API server authenticated {ctx.tenant}'s admin credentials and only "
                f"RBAC refused them ({probe.detail}): the tenants' CAs trust each other's "
                f"certificates; each TenantControlPlane needs its own CA"
            )
        elif probe.outcome == "error":
            errors.append(f"could not present {ctx.tenant}'s credentials to {other}: "
                          f"{probe.detail}")
        else:
            evidence.append(f"{other}'s API server rejected {ctx.tenant}'s credentials "
                            f"({probe.detail})")
    return failures, errors, evidence


def check(lab: LabState, profile: KamajiHamiProfile, tenant: str) -> CheckResult:
    """Nothing of another tenant in this tenant's listings (by worker name, uid, label, node),
    visible GPU capacity at most its own, and its credentials rejected by every other tenant."""
    ctx = prepare(lab, profile, tenant, ID)
    if isinstance(ctx, CheckResult):
        return ctx
    if ctx.st.listing is None:
        return ctx.unobserved("the isolation listing")
    if ctx.st.listing.error:
        return ctx.failed(f"{tenant}'s API refused to list nodes or pods: {ctx.st.listing.error}")
    others = _others(ctx)
    failures = _listing_problems(ctx, others)
    if missing := _own_pods_missing(ctx):
        failures.append(
            f"{tenant}'s pod listing lacks its own verify pods of this run ({', '.join(missing)}):"
            f" it was not taken while verify's pods existed (after the cleanup, or from another "
            f"run, or from another tenant's API server), so it cannot show that the other "
            f"tenants' pods are hidden")
    capacity, shown = _capacity_problems(ctx)
    failures += capacity
    probe_failures, errors, evidence = _probe_problems(ctx)
    failures += probe_failures
    listed = (f"{tenant}'s API lists {len(ctx.st.listing.nodes)} node(s) "
              f"({', '.join(sorted(o.name(n) for n in ctx.st.listing.nodes))}) and "
              f"{len(ctx.st.listing.pods)} pod(s), GPU {shown}")
    hidden = ", ".join(f"{count} verify pod(s) of {other}" for other, count in
                       others.verify_pods.items())
    parts = [listed, *( [f"none of the {hidden} visible"] if hidden else []), *evidence]
    if not others.workers:
        parts.append("the only tenant of the lab: no other API server to present credentials to")
    if others.unobserved:
        parts.append(f"listings of {', '.join(others.unobserved)} not observed (compared by "
                     f"worker names only)")
    if failures:
        return ctx.failed(summarize_problems(failures), "; ".join(parts))
    if errors:
        return ctx.error(summarize_problems(errors), "; ".join(parts))
    return ctx.passed("; ".join(parts))
