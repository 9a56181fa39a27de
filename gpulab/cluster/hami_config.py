"""HAMi as the cluster configured it, not as its chart defaults it: pure, no I/O.

What of HAMi's own configuration decides whether verify's pods reach HAMi and share a card
(HAMi v2.10.0, Project-HAMi/HAMi 4707fb02; Kubernetes at kubernetes-1.36.3):

- `--gpu-scheduler-policy` (cmd/scheduler/main.go:71, default `spread`; the chart's
  `scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy`, templates/scheduler/deployment.yaml:113):
  a comma-separated list (pkg/util/util.go:287-298); with `mutex` a card already used by a pod
  is refused to the next one (`ExclusiveDeviceAllocateConflict`, pkg/device/nvidia/device.go:
  723-725, 767-770), so three pods never share it. A pod's annotation
  `hami.io/gpu-scheduler-policy` replaces the default for that pod (pkg/util/util.go:277-285,
  pkg/util/types.go:89): verify's pods carry the policy without `mutex`.
- `--force-overwrite-default-scheduler` (cmd/scheduler/main.go:81, default true; the chart's
  `scheduler.forceOverwriteDefaultScheduler`, deployment.yaml:114): when false the webhook leaves
  a pod whose `schedulerName` is `default-scheduler` as it is (pkg/scheduler/webhook.go:64-69),
  and a pod that names no scheduler has `default-scheduler` by then (the API server defaults it
  before admission): verify's pods then name HAMi's scheduler themselves, which the webhook
  accepts (its third condition, webhook.go:66).
- the webhook's `namespaceSelector` and `objectSelector` (the chart's
  `scheduler.admissionWebhook.namespaceSelector`, `objectSelector`, `whitelistNamespaces`,
  templates/scheduler/webhook.yaml:26-58): the API server calls the webhook only for pods whose
  namespace's labels and own labels match them (apiserver
  pkg/admission/plugin/webhook/predicates/namespace/matcher.go:105-136,
  predicates/object/matcher.go:37-61; an empty selector matches everything, apimachinery
  pkg/apis/meta/v1/helpers.go:36-42; requirements as pkg/labels/selector.go:247-264). A
  namespace carries its own name as `kubernetes.io/metadata.name`. verify creates its namespace
  and pods, so it gives them the labels the selectors ask for, or says why it cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpulab.cluster.rules import matches_labels

__all__ = ["DEFAULT_GPU_POLICY", "MUTEX", "NAMESPACE_NAME_LABEL", "POLICY_ANNOTATION",
           "PodShape", "go_bool", "matches", "pod_policy", "satisfy", "selector_text"]

DEFAULT_GPU_POLICY = "spread"  # cmd/scheduler/main.go:71 (util.GPUSchedulerPolicySpread)
MUTEX = "mutex"  # pkg/util/types.go:80
POLICY_ANNOTATION = "hami.io/gpu-scheduler-policy"  # pkg/util/types.go:89
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def go_bool(value: str | None, default: bool) -> bool:
    """A boolean flag as pflag parses it (strconv.ParseBool); `default` when absent or not a
    boolean (pflag would refuse to start the scheduler then: it is not serving anyway)."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return default


def pod_policy(policy: str) -> str | None:
    """The GPU policy verify's pods carry (`hami.io/gpu-scheduler-policy`) when the scheduler's
    default holds `mutex`: the same list without it (`spread` when nothing is left); None when
    there is no `mutex` and the pods need no annotation."""
    names = [p.strip() for p in policy.split(",")]
    if MUTEX not in names:
        return None
    kept = [p for p in names if p and p != MUTEX]
    return ",".join(kept) or DEFAULT_GPU_POLICY


def _expressions(selector: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = selector.get("matchExpressions") or ()
    return [e for e in found if isinstance(e, Mapping)] if isinstance(found, list) else []


def _match_labels(selector: Mapping[str, Any]) -> dict[str, str]:
    found = selector.get("matchLabels") or {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}


def _values(expression: Mapping[str, Any]) -> list[str]:
    found = expression.get("values") or ()
    return [str(v) for v in found] if isinstance(found, list) else []


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match a metav1.LabelSelector (None or empty: everything; an operator
    Kubernetes does not know: nothing)."""
    if not selector:
        return True
    if not matches_labels(labels, _match_labels(selector)):
        return False
    for expression in _expressions(selector):
        key, op, values = str(expression.get("key", "")), expression.get("operator"), \
            _values(expression)
        has = key in labels
        if op == "In":
            ok = has and labels[key] in values
        elif op == "NotIn":
            ok = not has or labels[key] not in values
        elif op == "Exists":
            ok = has
        elif op == "DoesNotExist":
            ok = not has
        else:
            ok = False
        if not ok:
            return False
    return True


def selector_text(selector: Mapping[str, Any] | None) -> str:
    """A selector as kubectl writes one (`a=b,c in (d,e),!f`)."""
    parts = [f"{k}={v}" for k, v in sorted(_match_labels(selector or {}).items())]
    for expression in _expressions(selector or {}):
        key, op, values = str(expression.get("key", "")), str(expression.get("operator")), \
            _values(expression)
        parts.append({"In": f"{key} in ({','.join(values)})",
                      "NotIn": f"{key} notin ({','.join(values)})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(op, f"{key} {op}"))
    return ",".join(parts) or "(everything)"


def satisfy(selector: Mapping[str, Any] | None, fixed: Mapping[str, str],
            each: Sequence[Mapping[str, str]] = ({},)) -> dict[str, str] | None:
    """The labels to add to `fixed` (labels verify must keep) so that the object, with each of
    `each` added too (the pods' own labels), matches `selector`: what `matchLabels` and `In` ask
    (the first value), `Exists` (an empty value); None when no labels added can match (a fixed
    label it refuses, `NotIn`/`DoesNotExist` on one, conflicting requirements)."""
    if not selector:
        return {}
    extra: dict[str, str] = {}
    for key, value in _match_labels(selector).items():
        if key not in fixed:
            extra.setdefault(key, value)
    for expression in _expressions(selector):
        key, op, values = str(expression.get("key", "")), expression.get("operator"), \
            _values(expression)
        if key in fixed or key in extra:
            continue
        if op == "In" and values:
            extra[key] = values[0]
        elif op == "Exists":
            extra[key] = ""
    if all(matches(selector, {**fixed, **extra, **own}) for own in each):
        return extra
    return None


@dataclass(frozen=True)
class PodShape:
    """What verify gives its namespace and pods so that HAMi, as configured, sees and shares
    them: labels for the webhook's selectors, the GPU policy annotation, the scheduler name set
    by verify itself; or why it cannot (`refusal`)."""

    namespace_labels: dict[str, str] = field(default_factory=dict)
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = ""  # set in the pods by verify ("": the webhook sets it)
    notes: tuple[str, ...] = ()
    refusal: str = ""


def pod_shape(*, gpu_policy: str, force_overwrite: bool, scheduler_name: str,
              webhook: str, namespace_selector: Mapping[str, Any] | None,
              object_selector: Mapping[str, Any] | None, namespace_labels: Mapping[str, str],
              pod_labels: Sequence[Mapping[str, str]]) -> PodShape:
    """How verify's namespace (`namespace_labels`: what it has already, its name included) and
    pods (`pod_labels`: each pod's own) must look for HAMi to see and share them (module doc).
    `webhook` names the MutatingWebhookConfiguration ('' when none was found: nothing to
    satisfy)."""
    notes: list[str] = []
    annotations: dict[str, str] = {}
    policy = pod_policy(gpu_policy)
    if policy is not None:
        annotations[POLICY_ANNOTATION] = policy
        notes.append(f"hami-scheduler runs with --gpu-scheduler-policy={gpu_policy}: with mutex a "
                     f"used card takes no other pod (ExclusiveDeviceAllocateConflict, "
                     f"pkg/device/nvidia/device.go:767-770); verify's pods carry "
                     f"{POLICY_ANNOTATION}={policy}, which HAMi reads before its default "
                     f"(pkg/util/util.go:277-285)")
    named = ""
    if not force_overwrite:
        named = scheduler_name
        notes.append(f"hami-scheduler runs with --force-overwrite-default-scheduler=false: its "
                     f"webhook leaves pods on default-scheduler (pkg/scheduler/webhook.go:64-69), "
                     f"so verify's pods name {scheduler_name} themselves; GPU-02 then shows that "
                     f"HAMi placed gpu-share-1, not that its webhook rewrote schedulerName")
    if not webhook:
        return PodShape(pod_annotations=annotations, scheduler_name=named, notes=tuple(notes))
    ns_extra = satisfy(namespace_selector, namespace_labels)
    if ns_extra is None:
        return PodShape(refusal=(
            f"HAMi's webhook ({webhook}) would never see verify's pods: its namespaceSelector "
            f"{selector_text(namespace_selector)} excludes the namespace verify creates "
            f"({NAMESPACE_NAME_LABEL}={namespace_labels.get(NAMESPACE_NAME_LABEL, '')}) "
            f"whatever labels it adds (apiserver pkg/admission/plugin/webhook/predicates/"
            f"namespace/matcher.go:105-136); pass --namespace with a name it admits, or verify "
            f"in a cluster whose webhook takes every namespace"))
    fixed = {k: v for k, v in (pod_labels[0] if pod_labels else {}).items()
             if all(p.get(k) == v for p in pod_labels)}
    varying = [{k: v for k, v in p.items() if k not in fixed} for p in pod_labels] or [{}]
    obj_extra = satisfy(object_selector, fixed, varying)
    if obj_extra is not None:  # a pod's own label wins over one added for all
        obj_extra = {k: v for k, v in obj_extra.items() if not any(k in p for p in varying)}
    if obj_extra is None:
        return PodShape(refusal=(
            f"HAMi's webhook ({webhook}) would never see verify's pods: its objectSelector "
            f"{selector_text(object_selector)} excludes pods labelled as verify labels them "
            f"({', '.join(sorted({k for p in pod_labels for k in p}))}) whatever labels it "
            f"adds (apiserver pkg/admission/plugin/webhook/predicates/object/matcher.go:37-61)"))
    for what, extra, selector in (("namespace", ns_extra, namespace_selector),
                                  ("pods", obj_extra, object_selector)):
        if extra:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
            notes.append(f"HAMi's webhook ({webhook}) sees only {what} matching its "
                         f"{'namespaceSelector' if what == 'namespace' else 'objectSelector'} "
                         f"{selector_text(selector)}: verify labels its {what} {shown}")
    return PodShape(namespace_labels=ns_extra, pod_labels=obj_extra, pod_annotations=annotations,
                    scheduler_name=named, notes=tuple(notes))
