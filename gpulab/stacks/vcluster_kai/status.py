"""`gpulab status` for vcluster-kai: the host's GPU nodes and queue tree, then each team's
vCluster (control-plane pods, API, nodes and pods as the team sees them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from gpulab.errors import GpulabError
from gpulab.stacks.vcluster_kai import render as kr

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime, KubeGateway
    from gpulab.providers.base import ManagementRow
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile

__all__ = ["lab_status", "status_tables"]

TEAMS_AT_ONCE = 8  # teams whose vCluster `status` reads at once


def _quantity_text(value: Any) -> str:
    return "-" if value is None else str(value)


def lab_status(
    lab: str,
    runtime: ContainerRuntime | None,
    profile: VclusterKaiProfile,
    kube: Callable[[Path], KubeGateway],
    management_row: ManagementRow,
) -> dict[str, Any]:
    """The host cluster (its row as the lab's provider sees it), the GPU nodes, the queue tree
    with its allocations, and per team: the vCluster's control-plane pod on the host, its API
    and what it lists. `runtime` None: the lab is in an existing cluster (its GPU nodes are the
    cluster's own)."""
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    management = folder / "management.kubeconfig"
    cluster, state, present = (management_row.cluster, management_row.state,
                               management_row.present)
    info: dict[str, Any] = {
        "lab": lab,
        "stack": profile.stack,
        "management": {
            "cluster": cluster,
            "state": state,
            "kubeconfig": str(management) if management.exists() else "",
        },
        "gpu_nodes": [],
        "queues": [],
        "tenants": {},
        "exists": present,
    }
    host = kube(management) if present and management.exists() else None
    if host is not None:
        info.update(_host_status(host, profile, existing=runtime is None))
    # each team's rows are four requests of their own: asked for several teams at once
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(TEAMS_AT_ONCE, len(profile.teams))),
                            thread_name_prefix="gpulab-status") as pool:
        rows = pool.map(lambda team: _team_status(host, kube,
                                                  folder / f"{team.name}.kubeconfig", team),
                        profile.teams)
        for team, row in zip(profile.teams, rows, strict=True):
            info["tenants"][team.name] = row
    return info


def _host_status(host: KubeGateway, profile: VclusterKaiProfile, *, existing: bool = False
                 ) -> dict[str, Any]:
    """`existing`: the GPU nodes are the cluster's own (any node with GPUs allocatable), not a
    pool gpulab labelled."""
    pool = profile.gpu_pool.name
    try:
        if existing:
            nodes = [n for n in host.list_objects("v1", "Node")
                     if str(((n.get("status") or {}).get("allocatable") or {}).get(
                         kr.GPU_RESOURCE, "0")) not in ("0", "")]
        else:
            nodes = [n for n in host.list_objects("v1", "Node",
                                                  label_selector=f"{kr.POOL_LABEL}={pool}")
                     if (n["metadata"].get("labels") or {}).get(kr.POOL_LABEL) == pool]
        queues = host.list_objects(kr.QUEUE_API, "Queue")
    except GpulabError as err:
        return {"host_error": str(err)}
    gpu_nodes = [{
        "name": n["metadata"]["name"],
        "model": (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.product", ""),
        "gpus": _quantity_text(((n.get("status") or {}).get("allocatable") or {}).get(
            kr.GPU_RESOURCE)),
    } for n in nodes]
    rows = []
    for queue in queues:
        spec = queue.get("spec") or {}
        status = queue.get("status") or {}
        gpu = (spec.get("resources") or {}).get("gpu") or {}
        rows.append({
            "name": queue["metadata"]["name"],
            "parent": spec.get("parentQueue", ""),
            "gpu_quota": gpu.get("quota"),
            "gpu_limit": gpu.get("limit"),
            "allocated": _quantity_text((status.get("allocated") or {}).get(kr.GPU_RESOURCE)),
            "requested": _quantity_text((status.get("requested") or {}).get(kr.GPU_RESOURCE)),
        })
    return {"gpu_nodes": gpu_nodes, "queues": rows}


def _team_status(host: KubeGateway | None, kube: Callable[[Path], KubeGateway], path: Path,
                 team: TeamSpec) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": team.namespace, "queue": team.queue_name,
                             "kubeconfig": str(path) if path.exists() else ""}
    if host is not None:
        try:
            pods = host.list_objects("v1", "Pod", team.namespace,
                                     label_selector=f"app=vcluster,release={team.name}")
            entry["control_plane"] = [
                {"name": p["metadata"]["name"],
                 "phase": (p.get("status") or {}).get("phase", "Unknown")} for p in pods]
        except GpulabError as err:
            entry["control_plane_error"] = str(err)
    if path.exists():
        client = kube(path)
        try:
            entry["version"] = client.server_version()
            entry["nodes"] = sorted(n["metadata"]["name"]
                                    for n in client.list_objects("v1", "Node"))
            entry["pods"] = sorted(
                f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}"
                for p in client.list_objects("v1", "Pod")
                if p["metadata"].get("namespace") != "kube-system")
        except GpulabError as err:
            entry["api_error"] = str(err)
    return entry


def status_tables(info: dict[str, Any]) -> list[Table]:
    """vcluster-kai: the GPU nodes and queue tree of the host, then one table per team."""
    from rich.markup import escape

    tables = []
    if info.get("host_error"):
        tables.append(Table(title=escape(f"host API unreachable: {info['host_error']}"),
                            title_justify="left", box=None))
    queues = Table("QUEUE", "PARENT", "GPU QUOTA", "GPU LIMIT", "ALLOCATED", "REQUESTED",
                   box=None, title="queues (nvidia.com/gpu)", title_justify="left")
    for row in info.get("queues", []):
        queues.add_row(escape(row["name"]), escape(row["parent"] or "-"),
                       str(row["gpu_quota"]), str(row["gpu_limit"]), escape(row["allocated"]),
                       escape(row["requested"]))
    nodes = ", ".join(f"{n['name']} ({n['model']}, {n['gpus']} GPU)"
                      for n in info.get("gpu_nodes", [])) or "none seen"
    queues.caption = escape(f"GPU nodes: {nodes}")
    queues.caption_justify = "left"
    tables.append(queues)
    for team, entry in info["tenants"].items():
        plane = entry.get("control_plane")
        if plane is None:
            pods = entry.get("control_plane_error") or "control plane not observed"
        else:
            pods = ", ".join(f"{p['name']} {p['phase']}" for p in plane) or "no control-plane pod"
        api = (f"API unreachable ({entry['api_error']})" if entry.get("api_error")
               else f"API {entry['version']}" if entry.get("version") else "no kubeconfig")
        table = Table("NODES", "PODS (outside kube-system)", box=None, title_justify="left",
                      title=escape(f"{team}: vCluster in {entry['namespace']} [{pods}], {api}, "
                                   f"queue {entry['queue']}"))
        if entry.get("nodes") is not None:
            table.add_row(escape(", ".join(entry["nodes"])),
                          escape(", ".join(entry.get("pods", [])) or "none"))
        tables.append(table)
    return tables
