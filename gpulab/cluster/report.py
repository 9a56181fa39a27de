"""Text and data of `verify --kubeconfig --inspect / --dry-run`: what was found, what would run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.cluster.inventory import http_status

if TYPE_CHECKING:
    from gpulab.cluster.inventory import Component, Inventory
    from gpulab.cluster.plan import VerifyPlan

__all__ = ["inspection_data", "inspection_lines", "plan_lines"]


# What the inspection says of a fact is found, absent ("not found", "none") or, when what it is
# read from could not be read, unknown and why (Inventory.unknown): never "none" for that.

EMPTY_POOL = '"" (empty: no shard selects it)'  # a node-pool label with no value


def _component(c: Component) -> str:
    if not c.found:
        return f"  {c.name + ':':<20} {c.unknown or 'not found'}"
    ready = f", {c.ready} ready" if c.ready else ""
    detail = f"; {c.detail}" if c.detail else ""
    return f"  {c.name + ':':<20} {c.where}{ready}{detail}"


def inspection_lines(found: Inventory) -> list[str]:
    """What discovery found in one cluster, as lines for a terminal or a CI log."""
    head = f"cluster {found.member} ({found.server or 'unknown server'}"
    if found.error:  # an answer that is an error (403, 500) is not silence
        said = "could not be read" if http_status(found.error) else "did not answer"
        return [f"{head}): {said}: {found.error}"]
    lines = [f"{head}, Kubernetes {found.version})"]
    lines += [_component(c) for c in (found.hami_scheduler, found.hami_webhook,
                                      found.hami_device_plugin, found.kai_scheduler)]
    unknown = found.unknown
    if found.has_hami:
        names = found.hami_resources
        selector = ",".join(f"{k}={v}" for k, v in found.hami_node_selector.items())
        lines.append(f"  {'HAMi settings:':<20} --scheduler-name "
                     f"{found.hami_scheduler_name or '(none)'}; resources {names.count}, "
                     f"{names.memory}, {names.cores} (from {found.hami_resources_from})"
                     + (f"; --node-label-selector {selector}" if selector else ""))
    if found.has_kai:
        queues = (unknown.get("queues", "unknown") if found.queues is None else
                  ", ".join(q.text() for q in found.queues) or "none")
        sharing = found.kai_gpu_sharing
        if sharing == "unknown":
            sharing = unknown.get("KAI GPU sharing", sharing)
        elif not found.kai_config_found:
            sharing += " (no Config kai-config)"
        lines.append(f"  {'KAI GPU sharing:':<20} {sharing}; queues: {queues}")
    lines.append(f"  {'tenancy:':<20} {_tenancy(found)}")
    if not found.gpu_nodes:
        nodes = (unknown.get("GPU nodes", "unknown") if found.gpu_nodes is None else
                 "none (no node advertises nvidia.com/gpu)")
        lines.append(f"  {'GPU nodes:':<20} {nodes}")
    for node in found.gpu_nodes or ():
        state = "Ready" if node.ready else "NotReady"
        hand = f", handshake {node.handshake}" if node.handshake else ""
        mig = f", MIG {', '.join(node.mig)}" if node.mig else ""
        lines.append(f"  {'GPU node:':<20} {node.name} ({state}, {node.resource} {node.gpus}, "
                     f"{node.cards} card(s) registered by HAMi{hand}{mig})")
        for why in (*node.blockers, node.hami_unseen if found.has_hami else "",
                    f"KAI node pool {node.pool or EMPTY_POOL}"
                    if node.pooled and found.has_kai else ""):
            if why:
                lines.append(f"  {'':<20}   {why}")
    for card in found.cards or ():
        health = "" if card.healthy else ", UNHEALTHY"
        health += ", cordoned (hami.io/device-cordon)" if card.cordoned else ""
        health += ", MIG mode" if card.mode == "mig" else ""
        users = f" by {', '.join(card.users)}" if card.users else ""
        use = (f"in use {card.used_memory} MiB, {card.used_cores} cores{users}"
               if card.used_memory is not None and card.used_cores is not None else
               f"in use: {unknown.get('GPU users', 'unknown')}")
        lines.append(f"  {'card:':<20} {card.node}/{card.device_id} {card.model}, "
                     f"{card.memory_mib} MiB, {card.cores} cores, split {card.split}{health}; "
                     f"{use}")
    users = (unknown.get("GPU users", "unknown") if found.gpu_users is None else
             ", ".join(found.gpu_users))
    if users:
        lines.append(f"  {'GPU users:':<20} {users}")
    for unseen in found.unseen:
        lines.append(f"  {'not readable:':<20} {unseen}")
    return lines


def _tenancy(found: Inventory) -> str:
    """Kamaji's and vCluster's control planes found, and those that could not be read."""
    unread = {k: found.unknown[k] for k in ("Kamaji", "vCluster") if k in found.unknown}
    if not found.tenancy and unread and len(set(unread.values())) == 1:
        return next(iter(unread.values()))  # one reason for both: say it once
    return "; ".join([*found.tenancy, *(f"{k}: {why}" for k, why in unread.items())]) \
        or "none found"


def plan_lines(plan: VerifyPlan) -> list[str]:
    """What verify would create in one cluster, or why it refuses."""
    if plan.refusals:
        return [f"cluster {plan.member}: verify would refuse, creating nothing:",
                *(f"  - {why}" for why in plan.refusals),
                *(f"  note: {note}" for note in plan.notes)]
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
