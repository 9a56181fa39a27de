"""`gpulab status` for kamaji-hami: each tenant's control plane (from the management cluster),
its workers (Docker labels) and nodes, and per GPU card the memory and cores in use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_LAB, LABEL_TENANT
from gpulab.stacks.kamaji_hami.render import worker_name
from gpulab.verify.hami import card_usage, usage_bar

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime, KubeGateway
    from gpulab.providers.base import ManagementRow
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

__all__ = ["lab_status", "status_tables"]


def lab_status(
    lab: str,
    runtime: ContainerRuntime | None,
    profile: KamajiHamiProfile,
    kube: Callable[[Path], KubeGateway],
    management: ManagementRow,
) -> dict[str, Any]:
    """What exists for the lab: the management cluster as the lab's provider sees it,
    containers from Docker labels; with saved kubeconfigs, each tenant's control plane, nodes
    and per-card GPU use (`kube` builds a client per kubeconfig). `runtime` None: the lab is in
    an existing cluster (its record names it)."""
    from gpulab.paths import lab_dir

    if runtime is None:
        return _existing_status(lab, profile, kube, management)
    workers = runtime.containers({LABEL_LAB: lab})
    tenants: dict[str, dict[str, Any]] = {}
    for container in workers:
        tenant = container.labels.get(LABEL_TENANT, "?")
        entry = tenants.setdefault(tenant, {"workers": []})
        entry["workers"].append({"name": container.name, "state": container.status,
                                 "ip": next(iter(container.networks.values()), "")})
    for spec in profile.tenants:
        entry = tenants.setdefault(spec.name, {"workers": []})
        have = {w["name"] for w in entry["workers"]}
        for index in range(spec.workers.count):
            wanted = worker_name(lab, spec.name, index)
            if wanted not in have:
                entry["workers"].append({"name": wanted, "state": "missing", "ip": ""})
    folder = lab_dir(lab)
    management_kubeconfig = folder / "management.kubeconfig"
    for tenant, entry in tenants.items():
        kubeconfig = folder / f"{tenant}.kubeconfig"
        entry["kubeconfig"] = str(kubeconfig) if kubeconfig.exists() else ""
        if management.present and management_kubeconfig.exists():
            entry["control_plane"] = _control_plane(kube(management_kubeconfig), profile, tenant)
        if kubeconfig.exists():
            entry.update(_tenant_inside(kube(kubeconfig)))
    return {
        "lab": lab,
        "stack": profile.stack,
        "management": {
            "cluster": management.cluster,
            "state": management.state,
            "kubeconfig": str(management_kubeconfig) if management_kubeconfig.exists() else "",
        },
        "tenants": dict(sorted(tenants.items())),
        "exists": management.present or bool(workers),
    }


def _existing_status(lab: str, profile: KamajiHamiProfile,
                     kube: Callable[[Path], KubeGateway], row: ManagementRow
                     ) -> dict[str, Any]:
    """A lab in an existing cluster: each tenant's control plane from the management cluster;
    its workers are the machines that joined (`gpulab join`), as the tenant's API lists them."""
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    management = folder / "management.kubeconfig"
    present = row.present
    tenants: dict[str, dict[str, Any]] = {}
    for spec in profile.tenants:
        kubeconfig = folder / f"{spec.name}.kubeconfig"
        entry: dict[str, Any] = {"workers": [], "kubeconfig": str(kubeconfig)
                                 if kubeconfig.exists() else ""}
        if present:
            entry["control_plane"] = _control_plane(kube(management), profile, spec.name)
        if kubeconfig.exists():
            entry.update(_tenant_inside(kube(kubeconfig)))
            entry["workers"] = [{"name": n["name"], "state": "joined", "ip": ""}
                                for n in entry.get("nodes", [])]
        tenants[spec.name] = entry
    return {
        "lab": lab,
        "stack": profile.stack,
        "management": {
            "cluster": row.cluster,
            "state": row.state,
            "kubeconfig": str(management) if present else "",
        },
        "tenants": tenants,
        "exists": present,
    }


def _control_plane(kube: KubeGateway, profile: KamajiHamiProfile, tenant: str
                   ) -> dict[str, Any]:
    namespace = profile.components.kamaji.tenant_namespace
    try:
        tcp = kube.get("kamaji.clastix.io/v1alpha1", "TenantControlPlane", tenant, namespace)
    except GpulabError as err:
        return {"error": str(err)}
    if tcp is None:
        return {"status": "missing"}
    state = tcp.get("status") or {}
    version = (state.get("kubernetesResources") or {}).get("version") or {}
    return {
        "status": version.get("status", "Unknown"),
        "version": version.get("version") or (tcp.get("spec") or {}).get("kubernetes", {}).get(
            "version", ""),
        "endpoint": state.get("controlPlaneEndpoint", ""),
    }


def _tenant_inside(kube: KubeGateway) -> dict[str, Any]:
    """Nodes and GPU cards as the tenant's own API reports them."""
    try:
        nodes = kube.list_objects("v1", "Node")
        pods = kube.list_objects("v1", "Pod")
    except GpulabError as err:
        return {"api_error": str(err)}
    node_rows = []
    for item in nodes:
        conditions = {c.get("type"): c.get("status")
                      for c in (item.get("status") or {}).get("conditions") or []}
        node_rows.append({
            "name": item["metadata"]["name"],
            "ready": conditions.get("Ready") == "True",
            "version": ((item.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""),
        })
    cards = [
        {"node": c.node, "device": c.device_id, "model": c.model,
         "memory_mib": {"used": c.used_memory, "total": c.memory_mib},
         "cores": {"used": c.used_cores, "total": c.cores}, "pods": c.pods}
        for c in card_usage(nodes, pods)
    ]
    return {"nodes": node_rows, "gpus": cards}


def status_tables(info: dict[str, Any]) -> list[Table]:
    """One table per tenant, from `lab_status`'s dict."""
    return [_tenant_status(tenant, entry) for tenant, entry in info["tenants"].items()]


def _tenant_status(tenant: str, entry: dict[str, Any]) -> Table:
    """One tenant: control plane, workers and nodes, then a bar per GPU card."""
    from rich.markup import escape

    cp = entry.get("control_plane") or {}
    if "error" in cp:
        title = f"{tenant}: control plane unreachable ({cp['error']})"
    elif cp:
        title = (f"{tenant}: control plane {cp.get('status')} {cp.get('version', '')} "
                 f"at {cp.get('endpoint') or '-'}")
    else:
        title = f"{tenant}: control plane not observed (no management kubeconfig)"
    table = Table("WORKER", "CONTAINER", "NODE", "VERSION", box=None, title=escape(title),
                  title_justify="left")
    nodes = {n["name"]: n for n in entry.get("nodes", [])}
    for worker in entry["workers"]:
        node = nodes.get(worker["name"])
        table.add_row(escape(worker["name"]), escape(worker["state"]),
                      ("Ready" if node["ready"] else "NotReady") if node else "-",
                      escape(node["version"]) if node else "")
    if not entry["workers"] and cp and "error" not in cp:  # an existing cluster's tenant
        table.add_row(escape(f"(none joined: gpulab join {tenant})"), "", "", "")
    if entry.get("api_error"):
        table.add_row("", "", escape(f"tenant API unreachable: {entry['api_error']}"), "")
    for card in entry.get("gpus", []):
        mem, cores = card["memory_mib"], card["cores"]
        table.add_row(
            escape(f"  {card['device']} {card['model']}"),
            escape(f"mem {usage_bar(mem['used'], mem['total'], 12)} "
                   f"{mem['used']}/{mem['total']} MiB"),
            escape(f"cores {usage_bar(cores['used'], cores['total'], 10)} "
                   f"{cores['used']}/{cores['total']}"),
            escape(", ".join(card["pods"]) or "idle"),
        )
    return table
