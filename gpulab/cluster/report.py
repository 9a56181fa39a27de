"""Text and data of `verify --kubeconfig --inspect / --dry-run`: what was found, what would run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.cluster.observe import UNANSWERED

if TYPE_CHECKING:
    from gpulab.cluster.inventory import Component, Inventory
    from gpulab.cluster.plan import VerifyPlan

__all__ = ["inspection_data", "inspection_lines", "plan_lines"]


_WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")  # read_cluster keeps all three or none
# The kinds each line of the inspection is read from, when it would say "not found" or "none".
_SOURCES: dict[str, tuple[str, ...]] = {
    "HAMi scheduler": _WORKLOADS, "HAMi device plugin": _WORKLOADS, "KAI scheduler": _WORKLOADS,
    "HAMi webhook": ("MutatingWebhookConfiguration",), "queues": ("Queue",),
    "tenancy": ("TenantControlPlane", *_WORKLOADS), "GPU nodes": ("Node",), "GPU users": ("Pod",),
}


def _unknown(found: Inventory, line: str) -> str:
    """'' when what `line` shows was read, else what to say instead of "not found" or "none":
    "unknown, because the API server did not answer ..." (discovery's deadline or the request's),
    or "unknown (Kind not readable)" (a refusal, e.g. 403; the reason is listed at the end)."""
    unread = dict(u.split(": ", 1) for u in found.unseen if ": " in u)
    missing = [kind for kind in _SOURCES[line] if kind in unread]
    late = [unread[k] for k in missing if unread[k].startswith(UNANSWERED)]
    if late:
        return late[0].split(" (")[0].split(": ")[0]
    return f"unknown ({', '.join(missing)} not readable)" if missing else ""


def _component(c: Component, found: Inventory) -> str:
    if not c.found:
        return f"  {c.name + ':':<20} {_unknown(found, c.name) or 'not found'}"
    ready = f", {c.ready} ready" if c.ready else ""
    detail = f"; {c.detail}" if c.detail else ""
    return f"  {c.name + ':':<20} {c.where}{ready}{detail}"


def inspection_lines(found: Inventory) -> list[str]:
    """What discovery found in one cluster, as lines for a terminal or a CI log."""
    head = f"cluster {found.member} ({found.server or 'unknown server'}"
    if found.error:
        return [f"{head}): did not answer: {found.error}"]
    lines = [f"{head}, Kubernetes {found.version})"]
    lines += [_component(c, found) for c in (found.hami_scheduler, found.hami_webhook,
                                             found.hami_device_plugin, found.kai_scheduler)]
    if found.has_hami:
        names = found.hami_resources
        selector = ",".join(f"{k}={v}" for k, v in found.hami_node_selector.items())
        lines.append(f"  {'HAMi settings:':<20} --scheduler-name "
                     f"{found.hami_scheduler_name or '(none)'}; resources {names.count}, "
                     f"{names.memory}, {names.cores} (from {found.hami_resources_from})"
                     + (f"; --node-label-selector {selector}" if selector else ""))
    if found.has_kai:
        queues = (", ".join(q.text() for q in found.queues) or _unknown(found, "queues")
                  or "none")
        lines.append(f"  {'KAI GPU sharing:':<20} {found.kai_gpu_sharing}; queues: {queues}")
    tenancy = "; ".join(found.tenancy) or _unknown(found, "tenancy") or "none found"
    lines.append(f"  {'tenancy:':<20} {tenancy}")
    if not found.gpu_nodes:
        nodes = _unknown(found, "GPU nodes") or "none (no node advertises nvidia.com/gpu)"
        lines.append(f"  {'GPU nodes:':<20} {nodes}")
    for node in found.gpu_nodes:
        state = "Ready" if node.ready else "NotReady"
        hand = f", handshake {node.handshake}" if node.handshake else ""
        mig = f", MIG {', '.join(node.mig)}" if node.mig else ""
        lines.append(f"  {'GPU node:':<20} {node.name} ({state}, {node.resource} {node.gpus}, "
                     f"{node.cards} card(s) registered by HAMi{hand}{mig})")
        for why in (*node.blockers, node.hami_unseen if found.has_hami else "",
                    f"KAI node pool {node.pool}" if node.pool and found.has_kai else ""):
            if why:
                lines.append(f"  {'':<20}   {why}")
    for card in found.cards:
        health = "" if card.healthy else ", UNHEALTHY"
        health += ", cordoned (hami.io/device-cordon)" if card.cordoned else ""
        health += ", MIG mode" if card.mode == "mig" else ""
        users = f" by {', '.join(card.users)}" if card.users else ""
        lines.append(f"  {'card:':<20} {card.node}/{card.device_id} {card.model}, "
                     f"{card.memory_mib} MiB, {card.cores} cores, split {card.split}{health}; "
                     f"in use {card.used_memory} MiB, {card.used_cores} cores{users}")
    users = ", ".join(found.gpu_users) or _unknown(found, "GPU users")
    if users:
        lines.append(f"  {'GPU users:':<20} {users}")
    for unseen in found.unseen:
        lines.append(f"  {'not readable:':<20} {unseen}")
    return lines


def plan_lines(plan: VerifyPlan) -> list[str]:
    """What verify would create in one cluster, or why it refuses."""
    if plan.refusals:
        return [f"cluster {plan.member}: verify would refuse, creating nothing:",
                *(f"  - {why}" for why in plan.refusals)]
    where = f"namespace {plan.namespace}, labelled gpulab.dev/run={plan.run_id}"
    if plan.card is not None:
        card = plan.card
        lines = [f"cluster {plan.member}: card {card.node}/{card.device_id} ({card.model}, "
                 f"{card.memory_mib} MiB, {card.cores} cores, split {card.split}); {where}; "
                 f"every pod pinned to the card (nvidia.com/use-gpuuuid):"]
    else:
        lines = [f"cluster {plan.member}: KAI, queue {plan.queue}, fractions on node "
                 f"{plan.node}; {where}:"]
    if plan.card is None or plan.scheduler_name != "hami-scheduler":
        lines[0] = lines[0][:-1] + f"; schedulerName {plan.scheduler_name}:"
    lines += [f"  {p.name:<18} {p.check}  {p.ask():<26} -> {p.expect}" for p in plan.pods]
    lines += [f"  note: {note}" for note in plan.notes]
    return lines


def inspection_data(found: list[Inventory], plans: list[VerifyPlan] | None = None
                    ) -> dict[str, Any]:
    """The JSON/YAML document of `--inspect` (and `--dry-run`: with the plans)."""
    data: dict[str, Any] = {"clusters": [f.to_dict() for f in found]}
    if plans is not None:
        data["plans"] = [p.to_dict() for p in plans]
    return data
