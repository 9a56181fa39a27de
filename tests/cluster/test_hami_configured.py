"""HAMi as the cluster configured it (issue #35): the scheduler's `--gpu-scheduler-policy` and
`--force-overwrite-default-scheduler`, the webhook's `namespaceSelector` and `objectSelector`.

Each shape is HAMi's pinned chart (v2.10.0, tests/data/pinned/charts/hami-2.10.0) rendered by
the real `helm template` with non-default values, the values taken from the chart's own
values.yaml and its comments (the examples there: `scheduler.defaultSchedulerPolicy`
`gpuSchedulerPolicy` lines 76-78, `forceOverwriteDefaultScheduler` line 80-81,
`admissionWebhook.namespaceSelector` lines 184-196 with `app.kubernetes.io/part-of:
kubeflow-profile` and `environment In (development, staging)`, `objectSelector` lines 197-208
with `app.kubernetes.io/managed-by: hami` and `hami.io/enable In ("true")`), next to one node
with HAMi's upstream register annotation (tests/cluster/upstream.py). The run plays HAMi with
tests/cluster/fake_hami.py, which reads the same objects with its own code (the selectors, the
policy, the overwrite flag). Before the fix each runnable shape failed its run (GPU-02 or GPU-03)
and each refusing shape ran pods HAMi never saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from gpulab.cluster.hami_config import matches, pod_policy, satisfy, selector_text
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from tests.cluster import builders as b
from tests.cluster import upstream as up
from tests.cluster.test_eligibility import HAMI_PASS, RUN, SERVER, _run

if TYPE_CHECKING:
    from pathlib import Path

MUTEX = {"scheduler": {"defaultSchedulerPolicy": {"gpuSchedulerPolicy": "mutex"}}}
NO_OVERWRITE = {"scheduler": {"forceOverwriteDefaultScheduler": False}}
KUBEFLOW_NS = {"scheduler": {"admissionWebhook": {"namespaceSelector": {
    "matchLabels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}}}
ENVIRONMENT_NS = {"scheduler": {"admissionWebhook": {"namespaceSelector": {"matchExpressions": [
    {"key": "environment", "operator": "In", "values": ["development", "staging"]}]}}}}
ENABLED_PODS = {"scheduler": {"admissionWebhook": {"objectSelector": {"matchExpressions": [
    {"key": "hami.io/enable", "operator": "In", "values": ["true"]}]}}}}
MANAGED_BY_HAMI = {"scheduler": {"admissionWebhook": {"objectSelector": {
    "matchLabels": {"app.kubernetes.io/managed-by": "hami"}}}}}
ONE_NAMESPACE = {"scheduler": {"admissionWebhook": {"namespaceSelector": {"matchExpressions": [
    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}]}}}}


def _merge(*values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        for key, sub in v.items():
            out[key] = _merge(out[key], sub) if isinstance(sub, dict) and key in out else sub
    return out


def _shape(values: dict[str, Any]) -> b.ClusterApi:
    """HAMi rendered by helm with `values`, serving, and one node with one A100."""
    from tests.rendered import find, render

    objs = render("hami", "hami", "kube-system", values)
    installed = [b._with_status(find(objs, "Deployment", "hami-scheduler"), 1, 1),
                 find(objs, "ConfigMap", "hami-scheduler-device"),
                 b._with_status(find(objs, "DaemonSet", "hami-device-plugin"), 1, 1),
                 find(objs, "MutatingWebhookConfiguration", "hami-webhook")]
    return b.cluster(*installed, b.raw_node("gpu-a", register=up.REGISTER_A100_GPU0))


def _plan(api: b.ClusterApi) -> Any:
    return plan(inventory(read_cluster(api, "prod", SERVER)), RUN)


@pytest.mark.parametrize("values", [MUTEX, NO_OVERWRITE, KUBEFLOW_NS, ENVIRONMENT_NS,
                                    ENABLED_PODS, _merge(MUTEX, NO_OVERWRITE, KUBEFLOW_NS,
                                                         ENABLED_PODS)],
                         ids=["mutex", "no-overwrite", "kubeflow-namespaces",
                              "environment-namespaces", "enabled-pods", "all-four"])
def test_hami_as_configured_sees_and_shares_verify_pods(values: dict[str, Any]) -> None:
    api = _shape(values)
    planned = _plan(api)
    assert planned.runnable, planned.refusals
    assert _run(api) == HAMI_PASS


def test_each_setting_shapes_the_objects() -> None:
    api = _shape(_merge(MUTEX, NO_OVERWRITE, KUBEFLOW_NS, ENABLED_PODS))
    planned = _plan(api)
    namespace, *pods = planned.objects()
    assert namespace["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubeflow-profile"
    for pod in pods:
        assert pod["metadata"]["labels"]["hami.io/enable"] == "true"
        assert pod["metadata"]["annotations"]["hami.io/gpu-scheduler-policy"] == "spread"
        assert pod["spec"]["schedulerName"] == "hami-scheduler"
    text = "\n".join(planned.notes)
    assert "--gpu-scheduler-policy=mutex" in text and "device.go:767-770" in text
    assert "--force-overwrite-default-scheduler=false" in text
    assert ("namespaceSelector app.kubernetes.io/part-of=kubeflow-profile,hami.io/webhook "
            "notin (ignore): verify labels its namespace app.kubernetes.io/part-of="
            "kubeflow-profile") in text
    assert ("objectSelector hami.io/webhook notin (ignore),hami.io/enable in (true): verify "
            "labels its pods hami.io/enable=true") in text


def test_the_defaults_change_nothing() -> None:
    planned = _plan(_shape({}))
    namespace, *pods = planned.objects()
    assert set(namespace["metadata"]["labels"]) == {"app.kubernetes.io/managed-by",
                                                    "gpulab.dev/run"}
    assert all(set(p["metadata"]["annotations"]) == {"nvidia.com/use-gpuuuid"} for p in pods)
    assert all("schedulerName" not in p["spec"] for p in pods)


@pytest.mark.parametrize(("values", "words"), [
    (MANAGED_BY_HAMI, "its objectSelector app.kubernetes.io/managed-by=hami,hami.io/webhook "
                      "notin (ignore) excludes pods labelled as verify labels them "
                      "(app.kubernetes.io/managed-by, gpulab.dev/check, gpulab.dev/run)"),
    (ONE_NAMESPACE, "its namespaceSelector hami.io/webhook notin (ignore),kubernetes.io/"
                    "metadata.name in (ml-team) excludes the namespace verify creates "
                    "(kubernetes.io/metadata.name=gpulab-verify-0a1b2c3d4e5f)"),
], ids=["managed-by-hami", "one-namespace"])
def test_a_webhook_that_cannot_see_verify_pods_is_refused(values: dict[str, Any],
                                                          words: str) -> None:
    api = _shape(values)
    planned = _plan(api)
    assert not planned.runnable
    (refusal,) = planned.refusals
    assert "HAMi's webhook (hami-webhook) would never see verify's pods" in refusal
    assert words in refusal
    result = _run(api)
    assert result["GPU-02"] == "error" and not any(w[0] == "create" for w in api.writes())


def test_a_mutex_plan_over_http_carries_the_policy(tmp_path: Path) -> None:
    """The same, read over HTTP (kmock) by the CLI's `--dry-run -o json`."""
    from tests.cluster.test_kmock import dry_run_plan

    planned = dry_run_plan(_shape(_merge(MUTEX, ENVIRONMENT_NS)), tmp_path)
    namespace, *pods = planned["objects"]
    assert namespace["metadata"]["labels"]["environment"] == "development"
    assert {p["metadata"]["annotations"]["hami.io/gpu-scheduler-policy"] for p in pods} == {
        "spread"}


# --------------------------------------------------------------------------- the rules alone


def test_pod_policy_drops_mutex_only() -> None:
    assert pod_policy("spread") is None
    assert pod_policy("mutex") == "spread"
    assert pod_policy("binpack, mutex,numa") == "binpack,numa"


@pytest.mark.parametrize(("selector", "labels", "want"), [
    (None, {}, True), ({}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {"a": "c"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "x"},
     False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, {"a": "2"}, False),
])
def test_selectors_match_as_kubernetes_matches_them(selector: Any, labels: dict[str, str],
                                                    want: bool) -> None:
    assert matches(selector, labels) is want


def test_satisfy_adds_only_what_is_asked_and_refuses_contradictions() -> None:
    sel = {"matchLabels": {"team": "ml"},
           "matchExpressions": [{"key": "hami.io/webhook", "operator": "NotIn",
                                 "values": ["ignore"]},
                                {"key": "tier", "operator": "Exists"}]}
    assert satisfy(sel, {"mine": "1"}) == {"team": "ml", "tier": ""}
    assert satisfy(sel, {"team": "other"}) is None
    assert satisfy({"matchExpressions": [{"key": "x", "operator": "In", "values": ["a"]},
                                         {"key": "x", "operator": "NotIn", "values": ["a"]}]},
                   {}) is None
    assert selector_text(sel) == "team=ml,hami.io/webhook notin (ignore),tier"
