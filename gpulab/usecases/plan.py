"""`gpulab plan -o manifests`: one cluster's objects, as `up` applies them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile

__all__ = ["cluster_manifests"]


def cluster_manifests(profile: LabProfile, steps: list[Any], cluster: str | None) -> str:
    """One cluster's objects as `up` applies them (not verify's test objects, which verify
    creates and removes); `cluster` may be left out when the lab has only one."""
    from gpulab.engine.plan import manifest_clusters, plan_manifests
    from gpulab.stacks import for_profile

    previews = {s.name for s in for_profile(profile).verify_previews(profile)}
    built = [s for s in steps if s.name not in previews]
    clusters = manifest_clusters(built)
    if cluster is None and len(clusters) == 1:
        cluster = clusters[0]
    if cluster is None:
        raise UsageError(f"-o manifests needs --cluster: the lab's objects go to "
                         f"{', '.join(clusters)} (one kubectl apply each)",
                         hint=f"e.g. gpulab plan -o manifests --cluster {clusters[0]}")
    if cluster not in clusters:
        raise UsageError(f"--cluster {cluster}: not a cluster of this lab",
                         hint=f"choose from {', '.join(clusters)}")
    return plan_manifests(built, cluster)
