"""Provider kind: the kind cluster a lab's `ClusterNeeds` asks for (kind.x-k8s.io/v1alpha4).

The stack says what it needs (pools of labelled workers, host ports); this renders the one kind
config that gives it, at the profile's pinned node image (`management.node_image`). Pure.
Imports no stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.naming import LABEL_LAB, kind_cluster_name

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile
    from gpulab.providers.base import ClusterNeeds, PortNeed

__all__ = ["kind_config", "port_mapping"]


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
