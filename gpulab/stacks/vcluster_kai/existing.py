"""vcluster-kai on a cluster it shares: what of the stack is installed there already.

The provider reads the cluster (its nodes, names, access); what is the stack's to recognise,
an installed KAI Scheduler, this module reads (`read_installed`, the stack's
`ExistingNeeds.read`), and the plan reuses it (steps.build_steps) or refuses it
(steps.existing_problems).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway

__all__ = ["KaiFound", "image_tag", "read_installed"]


@dataclass(frozen=True)
class KaiFound:
    """KAI Scheduler found installed: the namespace of its `kai-operator` Deployment, the
    operator image's tag (KAI v0.16.8 deployments/kai-scheduler/templates/services/operator.yaml
    :7,22-24; the tag defaults to the chart's appVersion, templates/_helpers.tpl:7-8), and
    `spec.admission.gpuSharing` of its Config `kai-config` (templates/_helpers.tpl:18-24,172,
    195: the chart's `global.gpuSharing`), None when unreadable.
    `spec.binder.resourceReservation.namespace` of that Config is where its binder puts GPU
    reservation pods (templates/_helpers.tpl:74,91-93; None when the Config leaves it out)."""

    namespace: str
    version: str
    gpu_sharing: bool | None
    reservation_namespace: str | None = None


def image_tag(image: str) -> str:
    """The tag of an image reference, '' when it has none (a digest alone says no version):
    `reference := name [ ":" tag ] [ "@" digest ]`, a port only in the domain before the first
    '/' (distribution/reference reference.go:6-18, vendored by moby at v28.5.2)."""
    last = image.rsplit("/", 1)[-1].split("@", 1)[0]
    return last.rsplit(":", 1)[1] if ":" in last else ""


def read_installed(kube: KubeGateway, owned_before: tuple[dict[str, Any], ...] = ()
                   ) -> KaiFound | None:
    """The KAI Scheduler installed in the cluster (GETs only), None when there is none or it
    is the one this lab installed on an earlier `up` (its namespace is in lab.json)."""
    ours = {(o.get("kind"), o.get("name")) for o in owned_before}
    for dep in kube.list_objects("apps/v1", "Deployment"):
        if dep["metadata"]["name"] != "kai-operator":
            continue
        namespace = str(dep["metadata"].get("namespace", ""))
        if ("Namespace", namespace) in ours:
            return None
        containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "containers") or []
        image = next((str(c.get("image", "")) for c in containers
                      if c.get("name") == "operator"), "")
        config = kube.get("kai.scheduler/v1", "Config", "kai-config") or {}
        spec = config.get("spec") or {}
        sharing = (spec.get("admission") or {}).get("gpuSharing")
        reservation = ((spec.get("binder") or {}).get("resourceReservation") or {}).get(
            "namespace")
        return KaiFound(namespace, image_tag(image),
                        sharing if isinstance(sharing, bool) else None,
                        str(reservation) if reservation else None)
    return None
