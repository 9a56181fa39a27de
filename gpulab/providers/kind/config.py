"""Provider kind: the kind cluster a lab's `ClusterNeeds` asks for (kind.x-k8s.io/v1alpha4).

The stack says what it needs (pools of labelled workers, host ports); this renders the one kind
config that gives it, at the profile's pinned node image (`management.node_image`), and says
what the stack may rely on once kind made it: the node names kind gives (`node_names`) and where
this host reaches each port (`port_url`). Pure. Imports no stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.naming import LABEL_LAB, kind_cluster_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.profile.base import LabProfile
    from gpulab.providers.base import ClusterNeeds, PortNeed

__all__ = ["control_plane_node", "kind_config", "node_names", "port_mapping", "port_url"]


def kind_config(profile: LabProfile, lab: str, needs: ClusterNeeds) -> dict[str, Any]:
    """One control-plane node publishing `needs.ports` on the host, then each pool's workers
    with the pool's labels; every node at the profile's node image, labelled for the lab."""
    image = profile.management.node_image
    control: dict[str, Any] = {"role": "control-plane", "image": image,
                               "labels": {LABEL_LAB: lab}}
    if needs.ports:
        control["extraPortMappings"] = [port_mapping(port) for port in needs.ports]
    nodes = [control]
    nodes += [{"role": "worker", "image": image, "labels": {LABEL_LAB: lab, **pool.labels}}
              for pool in needs.pools for _ in range(pool.count)]
    return {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": kind_cluster_name(lab),
        "nodes": nodes,
    }


def port_mapping(port: PortNeed) -> dict[str, Any]:
    """A NodePort published on the host's `port.address`, the way kind publishes its own API
    server (providers/docker/provision.go generatePortMappings → `--publish
    <address>:<host>:<node>/tcp`). A node's container IP is not routable from the host on
    rootless Docker, Podman or Docker Desktop (macOS, Windows); a published loopback port is."""
    return {"containerPort": port.node_port, "hostPort": port.host_port,
            "listenAddress": port.address, "protocol": "TCP"}


def _namer(cluster: str) -> Callable[[str], str]:
    """kind's node namer (pkg/cluster/internal/providers/common/namer.go:25-37 at fed26882,
    called per node of the config in order by providers/docker/provision.go:42-45):
    `<cluster>-<role>`, then `<cluster>-<role>2`, `3`, … for the next nodes of that role."""
    counter: dict[str, int] = {}

    def name(role: str) -> str:
        count = counter.get(role, 0) + 1
        counter[role] = count
        return f"{cluster}-{role}{count if count > 1 else ''}"

    return name


def control_plane_node(lab: str) -> str:
    """The name of the lab's (one) control-plane node, its container's name."""
    return _namer(kind_cluster_name(lab))("control-plane")


def node_names(lab: str, needs: ClusterNeeds) -> dict[str, tuple[str, ...]]:
    """Each pool's nodes as kind names the workers `kind_config` lists, in that order."""
    name = _namer(kind_cluster_name(lab))
    return {pool.name: tuple(name("worker") for _ in range(pool.count)) for pool in needs.pools}


def port_url(port: PortNeed) -> str:
    """Where this host reaches `port`: kind publishes it on `port.address` (`port_mapping`)."""
    host = f"[{port.address}]" if ":" in port.address else port.address
    return f"https://{host}:{port.host_port}"
