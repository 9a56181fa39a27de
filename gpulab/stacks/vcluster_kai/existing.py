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

__all__ = ["KaiFound", "fraction_runtime_class", "image_tag", "read_installed"]


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
    # the RuntimeClass its admission sets on GPU-fraction pods ("" none): the Config's
    # spec.admission.gpuFractionRuntimeClassName, else the deprecated gpuPodRuntimeClassName, else
    # "nvidia" (pkg/apis/kai/v1/admission/admission.go:52-64,89-94; the operator passes it as
    # --gpu-fraction-runtime-class-name, pkg/operator/operands/admission/resources.go:393-398;
    # "" registers no runtime enforcement, cmd/admission/main.go:58-61, app/options.go:36-44)
    runtime_class: str = "nvidia"


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
        admission = spec.get("admission") or {}
        runtime = next((admission[k] for k in ("gpuFractionRuntimeClassName",
                                               "gpuPodRuntimeClassName")
                        if admission.get(k) is not None), "nvidia")
        return KaiFound(namespace, image_tag(image),
                        sharing if isinstance(sharing, bool) else None,
                        str(reservation) if reservation else None, str(runtime))
    return None


NVIDIA_HANDLER = "nvidia"  # the containerd runtime handler of NVIDIA's container runtime


def fraction_runtime_class(classes: tuple[tuple[str, str], ...] | None, *, fake: bool
                           ) -> str | None:
    """The value gpulab gives KAI's `admission.gpuFractionRuntimeClassName` when it installs
    KAI v0.16.8 on an existing cluster with `classes` (RuntimeClass name, handler):

    - None (the chart's own `nvidia`): RuntimeClass `nvidia` exists, fake GPUs will bring it
      (fake-gpu-operator's chart creates it), or the classes could not be read (the preflight
      refuses that: unknown);
    - another RuntimeClass's name, the first whose handler is `nvidia` (as k3s users name theirs
      otherwise, or the GPU Operator's `nvidia-cdi`/`nvidia-legacy` left alone);
    - "": none with that handler: KAI's admission then sets no RuntimeClass on GPU-fraction pods
      (the chart renders `gpuFractionRuntimeClassName: ""` into Config kai-config,
      templates/_helpers.tpl:203-207; the operator passes it on and an empty name registers no
      runtime enforcement, cmd/admission/main.go:58-61). Null would not do: helm drops a null
      key, `hasKey` fails, the Config leaves the field out and the operator's default is
      `nvidia` again (admission.go:89-94). The pods then run with the node's default runtime.
    """
    if fake or classes is None or any(name == "nvidia" for name, _h in classes):
        return None
    return next((name for name, handler in classes if handler == NVIDIA_HANDLER), "")
