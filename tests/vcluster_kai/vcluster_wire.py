"""What vCluster v0.35.3 (loft-sh/vcluster 57da739f) writes on the host copy of a pod it syncs, in
single-namespace mode, for the builders and the fake syncer (tests/vcluster_kai/live_fakes.py).
Each step is written from the Go line cited beside it, never with gpulab's reading of it.

gpulab's values set `experimental.syncSettings.setOwner: false` (render.py), so the host copy has
no owner reference (translate.go:185-209 returns none without an Owner).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# pkg/util/translate/types.go:10-15, 20-31.
OBJECT_NAMESPACE = "vcluster.loft.sh/object-namespace"
OBJECT_NAME = "vcluster.loft.sh/object-name"
OBJECT_UID = "vcluster.loft.sh/object-uid"
OBJECT_KIND = "vcluster.loft.sh/object-kind"
OBJECT_HOST_NAME = "vcluster.loft.sh/object-host-name"
OBJECT_HOST_NAMESPACE = "vcluster.loft.sh/object-host-namespace"
RELEASE_LABEL = "release"
NAMESPACE_LABEL = "vcluster.loft.sh/namespace"
MARKER_LABEL = "vcluster.loft.sh/managed-by"
CONTROLLER_LABEL = "vcluster.loft.sh/controlled-by"
LABEL_PREFIX = "vcluster.loft.sh/label"
NAMESPACE_LABEL_PREFIX = "vcluster.loft.sh/ns-label"
MANAGED_ANNOTATIONS = "vcluster.loft.sh/managed-annotations"
MANAGED_LABELS = "vcluster.loft.sh/managed-labels"
# pkg/controllers/resources/pods/translate/translator.go:40-47.
POD_NAMESPACE = "vcluster.loft.sh/namespace"
POD_NAME = "vcluster.loft.sh/name"
POD_LABELS = "vcluster.loft.sh/labels"
POD_UID = "vcluster.loft.sh/uid"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SERVICE_ACCOUNT_NAME = "vcluster.loft.sh/service-account-name"
# The kind annotation of a core/v1 Pod: schema.GroupVersionKind.String() (k8s.io/apimachinery
# v0.36.3 pkg/runtime/schema/group_version.go:161-163), group "" for the core group.
POD_KIND = "/v1, Kind=Pod"
# single_namespace.go:138-148: the labels vCluster rewrites instead of copying.
TRANSLATED_LABELS = (RELEASE_LABEL, NAMESPACE_LABEL, MARKER_LABEL, CONTROLLER_LABEL)


def safe_concat_name(*parts: str) -> str:
    """SafeConcatName (pkg/util/translate/translate.go:211-218)."""
    full = "-".join(parts)
    if len(full) > 63:
        digest = hashlib.sha256(full.encode()).hexdigest()[:10]
        return (full[:52] + "-" + digest).replace(".-", "-")
    return full


def _with_prefix(prefix: str, key: str, vcluster: str) -> str:
    """convertLabelKeyWithPrefix (single_namespace.go:168-171): VClusterName is the vCluster's
    name (types.go:28-29, set at start)."""
    return safe_concat_name(prefix, vcluster, "x", hashlib.sha256(key.encode()).hexdigest()[:10])


def host_label(key: str, vcluster: str) -> str:
    """HostLabel (labels.go:23-29): a translated label gets a prefixed key, any other is kept."""
    return _with_prefix(LABEL_PREFIX, key, vcluster) if key in TRANSLATED_LABELS else key


def labels_annotation(labels: dict[str, str]) -> str:
    """LabelsAnnotation (translator.go:460-474): `key=<JSON of the value>`, sorted, one a line."""
    return "\n".join(sorted(f"{k}={json.dumps(v)}" for k, v in labels.items()))


def host_pod_metadata(virtual: dict[str, Any], *, host_name: str, host_namespace: str,
                      vcluster: str, namespace_labels: dict[str, str]) -> dict[str, Any]:
    """The host copy's metadata (name, namespace, labels, annotations) of the virtual pod
    `virtual` (as the vCluster API returned it: uid set, spec.serviceAccountName defaulted):
    - HostMetadata (translate.go:58-64): annotations by HostAnnotations (:117-151: the virtual
      ones, their keys listed in managed-annotations (applyAnnotations :262-280, applyMaps
      :309-335), then object-name/-uid/-host-name/-host-namespace/-namespace/-kind), labels by
      HostLabelsMap (labels.go:43-70: each kept (a translated one skipped), then managed-by and
      namespace);
    - the pod translator (translator.go:259-290, 313-321): the pod's namespace, name, uid,
      service account and labels annotations, safe-to-evict "false" for a pod without a
      controller, and every label of the virtual namespace under a ns-label key."""
    meta = virtual["metadata"]
    namespace, name = str(meta["namespace"]), str(meta["name"])
    v_labels: dict[str, str] = dict(meta.get("labels") or {})
    v_annotations: dict[str, str] = dict(meta.get("annotations") or {})
    copied = {k: v for k, v in v_annotations.items()
              if k not in (MANAGED_ANNOTATIONS, MANAGED_LABELS, OBJECT_NAME, OBJECT_HOST_NAME,
                           OBJECT_HOST_NAMESPACE, OBJECT_UID, OBJECT_KIND, OBJECT_NAMESPACE)}
    annotations = dict(copied)
    if copied:
        annotations[MANAGED_ANNOTATIONS] = "\n".join(sorted(copied))
    annotations.update({
        OBJECT_NAME: name, OBJECT_UID: str(meta.get("uid", "")), OBJECT_HOST_NAME: host_name,
        OBJECT_HOST_NAMESPACE: host_namespace, OBJECT_NAMESPACE: namespace,
        OBJECT_KIND: POD_KIND,
    })
    annotations.setdefault(POD_NAMESPACE, namespace)
    annotations.setdefault(POD_NAME, name)
    annotations.setdefault(POD_UID, str(meta.get("uid", "")))
    annotations.setdefault(SERVICE_ACCOUNT_NAME,
                           str((virtual.get("spec") or {}).get("serviceAccountName", "")))
    annotations.setdefault(POD_LABELS, labels_annotation(v_labels))
    controlled = any(ref.get("controller") for ref in meta.get("ownerReferences") or [])
    annotations.setdefault(SAFE_TO_EVICT, "true" if controlled else "false")
    translated_keys = {_with_prefix(LABEL_PREFIX, k, vcluster) for k in TRANSLATED_LABELS}
    labels = {host_label(k, vcluster): v for k, v in v_labels.items()
              if k not in translated_keys}
    labels[MARKER_LABEL] = vcluster
    labels[NAMESPACE_LABEL] = namespace
    for key, value in namespace_labels.items():
        labels[_with_prefix(NAMESPACE_LABEL_PREFIX, key, vcluster)] = value
    return {"name": host_name, "namespace": host_namespace, "labels": labels,
            "annotations": annotations}


def parse_toleration(text: str) -> dict[str, str] | None:
    """toleration.ParseToleration (pkg/util/toleration/toleration.go:11-62): `*` is Exists on
    everything; `key[=value]` without an effect (Equal, or "" operator when no value: the API's
    default Equal); `key:Effect` is Exists, `key=value:Effect` Equal. None for what it refuses
    (label-value validation of the value left out: gpulab's values are taint values, which the
    API server validated as label values already)."""
    if text == "*":
        return {"operator": "Exists"}
    colon, equal = text.split(":"), text.split("=")
    out: dict[str, str] = {}
    if len(colon) == 1:
        if len(equal) > 2:
            return None
        out["key"] = equal[0]
        if len(equal) == 2:
            out["value"] = equal[1]
        return out
    if len(colon) != 2:
        return None
    pair = colon[0].split("=")
    if len(pair) > 2:
        return None
    out = {"key": pair[0], "effect": colon[1],
           "operator": "Equal" if len(pair) == 2 else "Exists"}
    if len(pair) == 2:
        out["value"] = pair[1]
    return out


def enforce_tolerations(spec: dict[str, Any], enforce: list[str]) -> dict[str, Any]:
    """The host copy's spec with `sync.toHost.pods.enforceTolerations` applied: each parsed
    one (parseEnforcedTolerations, translator.go:1015-1024: unparsable ones dropped) appended
    unless an equal one is there (translator.go:446-451, hasToleration diff.go:276-283)."""
    out = dict(spec)
    tolerations = list(out.get("tolerations") or [])
    for text in enforce:
        parsed = parse_toleration(text)
        if parsed is not None and parsed not in tolerations:
            tolerations.append(parsed)
    if tolerations:
        out["tolerations"] = tolerations
    return out
