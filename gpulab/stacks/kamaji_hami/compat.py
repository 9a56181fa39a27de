"""Version support tables for pinned upstream components.

Facts from docs/dev/upstream-facts/stack-kamaji-hami.md: Kamaji's webhook rejects a
TenantControlPlane above its `KubeadmVersion` (the patch is ignored); v1.36 support first appears
in 26.5.3-edge; the docs' support table starts tenants at v1.30.
"""

from __future__ import annotations

import re

__all__ = ["MANAGEMENT_MINORS", "kamaji_tenant_range", "kamaji_tenant_version_problem",
           "parse_minor"]

KAMAJI_MIN_TENANT_MINOR = 30
# An existing cluster as Kamaji's management cluster: "any regular and conformant Kubernetes
# v1.33+ cluster" (Kamaji 26.8.2-edge docs/content/getting-started/kamaji-generic.md:43); the
# pinned cert-manager v1.21 supports Kubernetes 1.33 to 1.36, and is tested on the same: its
# project's "Supported releases" table (https://cert-manager.io/docs/releases/, source
# cert-manager/website content/docs/releases/README.md:22-24 at 776e5dba, the 1.21 row added by
# c17bb3c8 "Finalise v1.21.0 release notes"; 1.20 was 1.32-1.35, :25). The chart itself only
# sets a floor (deploy/charts/cert-manager Chart.yaml `kubeVersion: >= 1.22.0-0` at v1.21.1).
MANAGEMENT_MINORS = (33, 36)
# (first edge build, highest tenant minor it accepts), newest first.
_KAMAJI_MAX_MINOR: tuple[tuple[tuple[int, int, int], int], ...] = (
    ((26, 5, 3), 36),
    ((0, 0, 0), 35),
)
_EDGE_TAG = re.compile(r"^(\d+)\.(\d+)\.(\d+)-edge$")
_LEGACY_EDGE_TAG = re.compile(r"^edge-(\d+)\.(\d+)\.(\d+)$")


def parse_minor(version: str) -> int:
    """`v1.36.4` → 36."""
    match = re.match(r"^v?1\.(\d+)\.\d+", version)
    if not match:
        raise ValueError(f"not a Kubernetes version: {version}")
    return int(match.group(1))


def kamaji_tenant_range(image_tag: str) -> tuple[int, int] | None:
    """Lowest and highest tenant minor a Kamaji edge build supports, or None if unknown."""
    match = _EDGE_TAG.match(image_tag) or _LEGACY_EDGE_TAG.match(image_tag)
    if not match:
        return None
    build = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    for first_build, max_minor in _KAMAJI_MAX_MINOR:
        if build >= first_build:
            return KAMAJI_MIN_TENANT_MINOR, max_minor
    return None  # pragma: no cover - the table ends with a catch-all


def kamaji_tenant_version_problem(image_tag: str, version: str) -> str | None:
    """Why `version` cannot run on Kamaji `image_tag`, or None when it can."""
    supported = kamaji_tenant_range(image_tag)
    if supported is None:
        return (
            f"cannot tell which tenant versions Kamaji '{image_tag}' supports; "
            "use an edge build tag like 26.8.2-edge"
        )
    try:
        minor = parse_minor(version)
    except ValueError:
        return None  # the version's own format rule reports this
    low, high = supported
    if not low <= minor <= high:
        return (
            f"{version} is not supported by Kamaji {image_tag} "
            f"(tenants v1.{low}.x to v1.{high}.x)"
        )
    return None
