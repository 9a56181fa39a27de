"""How this host reaches a tenant's API server: a NodePort of gpulab's own on the management
node, published by the cluster's provider on the host's 127.0.0.1 (kind: extraPortMappings),
while the tenant's workers keep joining at its LoadBalancer address on the kind network. Pure.

Why a Service of gpulab's own and not Kamaji's: Kamaji builds the TenantControlPlane's Service
itself (internal/resources/k8s_service_resource.go at 26.8.2-edge, ddbabd87): its first port is
`networkProfile.port` with that targetPort (:108-114); `serviceType: NodePort` makes the API
server's NodePort that same `networkProfile.port` (:160-162), so the control plane would move to
a 30000-32767 port and leave the LoadBalancer address the workers and the existing-cluster path
use; `additionalPorts` always get `NodePort: 0` (:120-128), any free port; and with
`LoadBalancer` the NodePorts Kubernetes allocates are random (`allocateLoadBalancerNodePorts`,
:137-151). A second Service selecting the control plane's pods as Kamaji's does
(`kamaji.clastix.io/name: <tcp>`, :97-99) gives a fixed NodePort without touching Kamaji's.

The certificate: Kamaji's API server certificate always carries 127.0.0.1 and localhost
(internal/kubeadm/configuration.go:59-66 at ddbabd87, before `networkProfile.certSANs`), so the
loopback name the host uses needs no `certSANs`; another name would (`cert_sans`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.naming import LABEL_MANAGED
from gpulab.profile.base import LOOPBACK
from gpulab.providers.base import PortNeed

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

__all__ = ["TCP_POD_LABEL", "api_server_sans", "cert_sans", "host_kubeconfig", "tenant_api_port",
           "tenant_api_service"]

TCP_POD_LABEL = "kamaji.clastix.io/name"  # k8s_service_resource.go:97-99 at ddbabd87


def tenant_api_port(profile: KamajiHamiProfile, tenant: TenantSpec) -> PortNeed:
    """The tenant's API server as a port need: its NodePort, published at its host port on
    127.0.0.1; `gpulab kubeconfig <tenant>` names it."""
    node, host = profile.api_ports(tenant)
    return PortNeed(tenant.name, node, host, LOOPBACK, member=tenant.name)


def service_name(tenant: TenantSpec) -> str:
    """The Service's name: beside Kamaji's, which is named like the TenantControlPlane."""
    return f"{tenant.name}-host-api"


def tenant_api_service(profile: KamajiHamiProfile, tenant: TenantSpec) -> dict[str, Any]:
    """gpulab's NodePort Service to the tenant's control plane pods, at the API server's port
    (Kamaji's Service sends `networkProfile.port` to the same targetPort, :108-114)."""
    node, _host = profile.api_ports(tenant)
    port = tenant.control_plane.port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(tenant),
            "namespace": profile.components.kamaji.tenant_namespace,
            "labels": {"tenant.clastix.io": tenant.name, LABEL_MANAGED: "gpulab"},
        },
        "spec": {
            "type": "NodePort",
            "selector": {TCP_POD_LABEL: tenant.name},
            "ports": [{"name": "kube-apiserver", "protocol": "TCP", "port": port,
                       "targetPort": port, "nodePort": node}],
        },
    }


def api_server_sans(profile: KamajiHamiProfile, tenant: TenantSpec, address: str,
                    extra: list[str]) -> list[str]:
    """The names Kamaji's API server certificate carries (configuration.go:59-66 at
    ddbabd87): 127.0.0.1, localhost, the TCP's name and its Service's in-cluster names, the
    control plane's address, then `networkProfile.certSANs` (`extra`)."""
    ns = profile.components.kamaji.tenant_namespace
    return ["127.0.0.1", "localhost", tenant.name, f"{tenant.name}.{ns}.svc",
            f"{tenant.name}.{ns}.svc.cluster.local", address, *extra]


def cert_sans(host: str) -> list[str]:
    """What `networkProfile.certSANs` must add so the certificate covers `host`, the name
    this host reaches the API by: nothing for the names Kamaji always adds."""
    return [] if host in ("127.0.0.1", "localhost") else [host]


def host_kubeconfig(saved: bytes, server: str) -> bytes:
    """Kamaji's admin kubeconfig with every cluster's server set to `server` (where this host
    reaches the API); its CA and credentials unchanged."""
    import yaml

    config = yaml.safe_load(saved) or {}
    for cluster in config.get("clusters") or []:
        (cluster.setdefault("cluster", {}))["server"] = server
    return yaml.safe_dump(config, sort_keys=False).encode()
