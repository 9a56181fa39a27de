"""Kinds' REST paths (known ones, else discovery), the patch content types, and small
readers of objects (event times, JSON patch pointers).
"""


from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gpulab.errors import AdapterError

FIELD_MANAGER = "gpulab"
APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"

# (apiVersion, kind) → (plural, namespaced). Kinds missing here are discovered on first use.
_KNOWN: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Endpoints"): ("endpoints", True),
    ("v1", "Event"): ("events", True),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("v1", "Pod"): ("pods", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "Service"): ("services", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("coordination.k8s.io/v1", "Lease"): ("leases", True),
    ("events.k8s.io/v1", "Event"): ("events", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): (
        "mutatingwebhookconfigurations",
        False,
    ),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): (
        "validatingwebhookconfigurations",
        False,
    ),
    ("cert-manager.io/v1", "Certificate"): ("certificates", True),
    ("cert-manager.io/v1", "ClusterIssuer"): ("clusterissuers", False),
    ("cert-manager.io/v1", "Issuer"): ("issuers", True),
    ("kamaji.clastix.io/v1alpha1", "DataStore"): ("datastores", False),
    ("kamaji.clastix.io/v1alpha1", "TenantControlPlane"): ("tenantcontrolplanes", True),
    ("metallb.io/v1beta1", "IPAddressPool"): ("ipaddresspools", True),
    ("metallb.io/v1beta1", "L2Advertisement"): ("l2advertisements", True),
}


@dataclass(frozen=True)
class _Resource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(
        self, namespace: str | None = None, name: str | None = None, sub: str | None = None
    ) -> str:
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        if sub:
            parts.append(sub)
        return "/".join(parts)


def _describe(kind: str, name: str | None, namespace: str | None) -> str:
    if name is None:
        return f"{kind} list" + (f" in {namespace}" if namespace else "")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _event_time(event: dict[str, Any]) -> str:
    meta = event.get("metadata") or {}
    return str(event.get("lastTimestamp") or event.get("eventTime")
               or meta.get("creationTimestamp") or "")


_POINTER_ESCAPE = re.compile(r"~(?![01])")


def _check_pointer(pointer: str) -> None:
    if pointer and not pointer.startswith("/"):
        raise AdapterError(f"JSON patch path {pointer!r} must start with '/'")
    if _POINTER_ESCAPE.search(pointer):
        raise AdapterError(
            f"JSON patch path {pointer!r} has a bad escape: write '~0' for '~', '~1' for '/'"
        )
