"""Labels and names every lab uses, whatever its stack (Docker labels, kind cluster name)."""

from __future__ import annotations

__all__ = ["LABEL_LAB", "LABEL_MANAGED", "LABEL_ROLE", "LABEL_RUN", "LABEL_TENANT",
           "chart_labels", "kind_cluster_name"]

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


def chart_labels(lab: str) -> dict[str, str]:
    """The labels gpulab's Helm post-renderer (gpulab.helm_labels) puts on every object of a
    chart it installs for `lab`. Not `app.kubernetes.io/managed-by`: helm sets it to `Helm` on
    every object of a release (pkg/action/validate.go:140-173, install.go:339, upgrade.go:328 at
    v3.19.2) and requires that value to adopt an object (validate.go:94-124)."""
    return {LABEL_LAB: lab}
