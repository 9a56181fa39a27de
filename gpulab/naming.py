"""Labels and names every lab uses, whatever its stack (Docker labels, kind cluster name)."""

from __future__ import annotations

__all__ = ["LABEL_LAB", "LABEL_MANAGED", "LABEL_ROLE", "LABEL_RUN", "LABEL_TENANT",
           "kind_cluster_name"]

LABEL_LAB = "gpulab.dev/lab"

LABEL_TENANT = "gpulab.dev/tenant"

LABEL_ROLE = "gpulab.dev/role"
# The verify run that created a pod (an id per `gpulab verify`), so a pod of another run is
# never taken as this run's evidence.
LABEL_RUN = "gpulab.dev/run"

LABEL_MANAGED = "app.kubernetes.io/managed-by"


def kind_cluster_name(lab: str) -> str:
    """The kind cluster (and management context `kind-<name>`) of a lab."""
    return f"gpulab-{lab}"
