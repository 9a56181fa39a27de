"""Who may place verify's pods where: one test per upstream rule (docs/verify-any-cluster.md,
"Who may place a pod where"), each on a cluster shape where that rule decides.

The HAMi and KAI shapes (tests/cluster/builders.py) hold a trap: the card or node or queue the
plan prefers (smallest, first by name), which one rule makes unusable, next to one that works. A
plan that ignores the rule picks the trap, and the fake scheduler (which plays upstream from its
own reading: tests/cluster/fake_hami.py, fake_kai.py) does not place the pods where the checks
want them. With the rule, the plan picks the other one, says why not the trap, and the run
passes every check.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpulab.cluster.checks import judge
from gpulab.cluster.execute import Timeouts
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.run import run_verify
from gpulab.verify.hami import decode_register
from gpulab.verify.observe import Clock
from tests.cluster import builders as b
from tests.cluster import upstream as up
from tests.cluster.fake_hami import FakeHami
from tests.cluster.fake_kai import FakeKai
from tests.kamaji_hami.fakes import FakeClock

RUN = "0a1b2c3d4e5f"
SERVER = "https://gpu.example:6443"
TIMEOUTS = Timeouts(running=60, refused=30, cleanup=10, interval=1)
Objects = dict[tuple[str, str, str], dict[str, Any]]


def _node(objs: Objects, name: str) -> dict[str, Any]:
    return objs[("Node", "", name)]


def _found(api: b.ClusterApi) -> Any:
    return inventory(read_cluster(api, "prod", SERVER))


def _run(api: b.ClusterApi, kai: bool = False) -> dict[str, str]:
    clock = FakeClock()
    (FakeKai(api) if kai else FakeHami(api, clock)).attach()
    before = sorted(api.objects)
    report = run_verify([("prod", SERVER, api)], timeouts=TIMEOUTS,
                        clock=Clock(clock.now, clock.sleep))
    assert sorted(api.objects) == before, "the namespace and every pod are gone"
    return {r.id: r.status for r in report.results}


HAMI_PASS = {"GPU-01": "pass", "GPU-02": "pass", "GPU-03": "pass", "GPU-04": "pass",
             "GPU-05": "pass", "GPU-06": "skip"}
KAI_PASS = {"GPU-11": "pass", "GPU-12": "pass", "GPU-13": "pass", "GPU-06": "skip"}


# --------------------------------------------------------------------------- HAMi's chart


@pytest.mark.parametrize("values", [
    {}, {"schedulerName": "gpu-sharing-scheduler"},
    {"scheduler": {"nodeLabelSelector": {"gpu": "on"}}},
    {"resourceName": "nvidia.com/vgpu", "resourceMem": "nvidia.com/vgpu-memory",
     "resourceCores": "nvidia.com/vgpu-cores"},
])
def test_the_hami_install_is_what_the_chart_renders(values: dict[str, Any]) -> None:
    """builders.hami_chart edits the committed render as the templates would: a fresh
    `helm template` of the pinned chart with the same values gives the same objects."""
    from tests.rendered import find, render

    kwargs: dict[str, Any] = {}
    if "schedulerName" in values:
        kwargs["scheduler_name"] = values["schedulerName"]
    if "scheduler" in values:
        kwargs["node_label_selector"] = values["scheduler"]["nodeLabelSelector"]
    names = {k: v for k, v in values.items() if k.startswith("resource")}
    if names:
        kwargs["resources"] = names
    built = b.hami_chart(**kwargs)
    rendered = render("hami", "hami", "kube-system", values)
    for kind, name in (("Deployment", "hami-scheduler"), ("DaemonSet", "hami-device-plugin"),
                       ("ConfigMap", "hami-scheduler-device"),
                       ("MutatingWebhookConfiguration", "hami-webhook")):
        fresh = find(rendered, kind, name)
        if kind == "Deployment":  # checksums of the ConfigMaps the values change
            for obj in (fresh, built[kind]):
                obj["spec"]["template"]["metadata"].pop("annotations", None)
        if kind == "DaemonSet":
            fresh["spec"]["template"]["metadata"].pop("annotations", None)
            built[kind]["spec"]["template"]["metadata"].pop("annotations", None)
        assert built[kind] == fresh, kind


# --------------------------------------------------------------------------- HAMi's rules


def _unhealthy(objs: Objects) -> None:
    _node(objs, "gpu-a")["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        up.REGISTER_A100_GPU0_UNHEALTHY)


def _device_cordon(objs: Objects) -> None:
    _node(objs, "gpu-a")["metadata"]["annotations"]["hami.io/device-cordon"] = up.CORDON_GPU0


def _mig_mode(objs: Objects) -> None:
    _node(objs, "gpu-a")["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        up.REGISTER_MIG_GPU0)
    _node(objs, "gpu-b")["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        up.REGISTER_40G_GPU0)


def _handshake_expired(objs: Objects) -> None:
    node = _node(objs, "gpu-a")
    node["metadata"]["annotations"]["hami.io/node-handshake"] = up.HANDSHAKE_REQUESTING_OLD
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"


def _label_selector(objs: Objects) -> None:
    objs[("Deployment", "kube-system", "hami-scheduler")] = b._with_status(
        b.hami_chart(node_label_selector={"gpu": "on"})["Deployment"], 1, 1)
    for name in ("gpu-b",):
        _node(objs, name)["metadata"]["labels"]["gpu"] = "on"


def _cordoned(objs: Objects) -> None:
    _node(objs, "gpu-a")["spec"]["unschedulable"] = True


def _tainted(objs: Objects) -> None:
    _node(objs, "gpu-a")["spec"]["taints"] = [dict(up.TAINT_KEY1)]


def _memory_pressure(objs: Objects) -> None:
    node = _node(objs, "gpu-a")
    node["spec"]["taints"] = [dict(up.MEMORY_PRESSURE_TAINT)]
    node["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})


# rule -> (edit that makes the trap unusable by that rule alone, what the plan says of it)
HAMI_RULES: dict[str, tuple[Any, str]] = {
    "hami-health-omitempty": (_unhealthy, "HAMi marks it unhealthy (registered without health"),
    "hami-device-cordon": (_device_cordon, "cordoned by the node's hami.io/device-cordon"),
    "hami-mig-mode": (_mig_mode, "registered in MIG mode"),
    "hami-handshake-expired": (_handshake_expired, "is over 60 s old and allocatable "
                                                   "nvidia.com/gpu is 0: HAMi dropped its cards"),
    "hami-node-label-selector": (_label_selector, "not selected by hami-scheduler's "
                                                  "--node-label-selector=gpu=on"),
    "kube-unschedulable": (_cordoned, "cordoned (spec.unschedulable)"),
    "kube-taint": (_tainted, "taint key1=value1:NoSchedule not tolerated"),
    "kube-memory-pressure": (_memory_pressure,
                             "taint node.kubernetes.io/memory-pressure:NoSchedule not tolerated"),
}


def test_without_a_rule_the_plan_takes_the_trap() -> None:
    """The control: gpu-a/GPU-0 is the card the plan prefers when nothing keeps it off."""
    api = b.shape_hami_eligibility()
    _node(api.objects, "gpu-a")["spec"]["taints"] = [dict(up.TAINT_PREFER)]  # only scores
    planned = plan(_found(api), RUN)
    assert planned.card is not None and (planned.card.node, planned.card.device_id) == (
        "gpu-a", "GPU-0")


@pytest.mark.parametrize("rule", sorted(HAMI_RULES))
def test_a_hami_rule_keeps_the_plan_off_the_trap(rule: str) -> None:
    edit, words = HAMI_RULES[rule]
    api = b.shape_hami_eligibility()
    edit(api.objects)
    planned = plan(_found(api), RUN)
    assert planned.runnable, planned.refusals
    assert planned.card is not None and planned.card.node == "gpu-b", planned.card
    # with gpu-b's card busy, the refusal names the rule for gpu-a's
    api.put(b.pod("serve", "prod", "gpu-b", grant=f"{planned.card.device_id},NVIDIA,3000,50:;"))
    refused = plan(_found(api), RUN)
    assert not refused.runnable
    assert words in refused.refusals[0], refused.refusals


@pytest.mark.parametrize("rule", sorted(HAMI_RULES))
def test_a_hami_rule_shape_passes_end_to_end(rule: str) -> None:
    api = b.shape_hami_eligibility()
    HAMI_RULES[rule][0](api.objects)
    assert _run(api) == HAMI_PASS


def _hami_single(**values: Any) -> b.ClusterApi:
    count = (values.get("resources") or {}).get("resourceName", "nvidia.com/gpu")
    return b.cluster(*b.hami("real", **values),
                     b.raw_node("gpu-b", register=up.REGISTER_A100_GPU1, count_resource=count))


def test_hami_pods_go_to_its_own_scheduler_name() -> None:
    """The webhook writes the scheduler's --scheduler-name (webhook.go:107-108): the plan
    expects that name, and GPU-02 judges by it."""
    api = _hami_single(scheduler_name="gpu-sharing-scheduler")
    found = _found(api)
    assert found.hami_scheduler_name == "gpu-sharing-scheduler"
    assert plan(found, RUN).scheduler_name == "gpu-sharing-scheduler"
    assert _run(api) == HAMI_PASS


def test_hami_pods_ask_with_the_resource_names_hami_counts() -> None:
    names = {"resourceName": "nvidia.com/vgpu", "resourceMem": "nvidia.com/vgpu-memory",
             "resourceCores": "nvidia.com/vgpu-cores"}
    api = _hami_single(resources=names)
    found = _found(api)
    assert found.hami_resources_from == "ConfigMap kube-system/hami-scheduler-device"
    _ns, first, *_ = plan(found, RUN).objects()
    assert first["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/vgpu": "1", "nvidia.com/vgpu-memory": "2000", "nvidia.com/vgpu-cores": "30"}
    assert _run(api) == HAMI_PASS


def test_an_unreadable_device_config_falls_back_to_the_charts_names_and_says_so() -> None:
    from gpulab.errors import AdapterError

    api = _hami_single()
    api.fail["get:ConfigMap"] = AdapterError("get ConfigMap at https://x: 403 Forbidden")
    found = _found(api)
    assert found.hami_resources.count == "nvidia.com/gpu"
    assert found.hami_resources_from == (
        "the chart's defaults (the device config is unknown: ConfigMap could not be read (403 "
        'Forbidden: grant get on configmaps, docs/verify-any-cluster.md "RBAC"))')
    assert "HAMi device config is unknown: ConfigMap could not be read (403 Forbidden" in (
        plan(found, RUN).notes[0])


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: d["status"].update(readyReplicas=0), "HAMi's scheduler is not serving"),
    (lambda d: d["spec"]["template"]["spec"]["containers"][1]["command"].remove(
        "--scheduler-name=hami-scheduler"), "runs without --scheduler-name"),
])
def test_a_hami_scheduler_that_cannot_place_the_pods_is_refused(edit: Any, words: str) -> None:
    api = b.shape_hami_eligibility()
    edit(api.objects[("Deployment", "kube-system", "hami-scheduler")])
    planned = plan(_found(api), RUN)
    assert not planned.runnable and words in planned.refusals[0], planned.refusals


def test_the_register_annotation_is_read_as_encoding_json_reads_it() -> None:
    """Keys match whatever their case; a value of the wrong type, or no list, gives no cards."""
    [card] = decode_register(up.REGISTER_A100_GPU0.replace('"health"', '"Health"')) or []
    assert card["health"] is True and card["devmem"] == 8192
    assert decode_register(up.REGISTER_A100_GPU0.replace("true", '"true"')) is None
    assert decode_register(up.REGISTER_A100_GPU0.replace('"count":10', '"count":1.5')) is None
    assert decode_register("[]") is None and decode_register(None) is None
    [unhealthy] = decode_register(up.REGISTER_A100_GPU0_UNHEALTHY) or []
    assert unhealthy["health"] is False


# --------------------------------------------------------------------------- KAI's rules


def _other_scheduler(objs: Objects) -> None:
    del objs[("Deployment", "kai-scheduler", "kai-scheduler-default")]
    deploy = b.kai_scheduler(name=up.OTHER_SCHEDULER)
    objs[("Deployment", "kai-scheduler", deploy["metadata"]["name"])] = deploy
    objs[("Config", "", "kai-config")]["spec"]["global"] = {"schedulerName": up.OTHER_SCHEDULER}


def _pool_node(objs: Objects) -> None:
    _node(objs, "gpu-small")["metadata"]["labels"][up.NODE_POOL_LABEL] = up.PARTITION


def _queue(name: str, parent: str, gpu: dict[str, Any], labels: dict[str, str] | None = None
           ) -> dict[str, Any]:
    """A Queue as docs/quickstart/default-queues.yaml writes one, its gpu resource replaced."""
    quickstart = {"cpu": {"limit": -1, "overQuotaWeight": 1, "quota": 0},
                  "memory": {"limit": -1, "overQuotaWeight": 1, "quota": 0}}
    spec: dict[str, Any] = {"resources": {**quickstart, "gpu": gpu}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
            "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


UNLIMITED = {"limit": -1, "overQuotaWeight": 1, "quota": 0}


def _add(objs: Objects, *queues: dict[str, Any]) -> None:
    for q in queues:
        objs[("Queue", "", q["metadata"]["name"])] = q


def _pool_queue(objs: Objects) -> None:
    _add(objs, _queue("a-team", "default-parent-queue", UNLIMITED,
                      {up.NODE_POOL_LABEL: up.PARTITION}))


def _ancestor_limit(objs: Objects) -> None:
    _add(objs, _queue("a-dept", "", {"limit": 4, "overQuotaWeight": 1, "quota": 4}),
         _queue("a-team", "a-dept", UNLIMITED))


def _absent_limit(objs: Objects) -> None:
    _add(objs, _queue("a-dept", "", {"overQuotaWeight": 1, "quota": 0}),
         _queue("a-team", "a-dept", UNLIMITED))


def _kai_cordoned(objs: Objects) -> None:
    _node(objs, "gpu-small")["spec"]["unschedulable"] = True


def _kai_tainted(objs: Objects) -> None:
    _node(objs, "gpu-small")["spec"]["taints"] = [dict(up.TAINT_KEY1)]


def _kai_pressure(objs: Objects) -> None:
    node = _node(objs, "gpu-small")
    node["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})


def _hostname(objs: Objects) -> None:
    _node(objs, "gpu-small")["metadata"]["labels"]["kubernetes.io/hostname"] = "ip-10-0-1-5"


# rule -> (edit, (node, queue) the plan takes, what the plan says when nothing else is left)
KAI_RULES: dict[str, tuple[Any, tuple[str, str], str]] = {
    "kai-scheduler-name": (_other_scheduler, ("gpu-small", "default-queue"), ""),
    "kai-node-pool-node": (_pool_node, ("gpu-spare", "default-queue"),
                           "in node pool partition-1 (kai.scheduler/node-pool)"),
    "kai-node-pool-queue": (_pool_queue, ("gpu-small", "default-queue"), ""),
    "kai-ancestor-limit": (_ancestor_limit, ("gpu-small", "default-queue"),
                           "a-team: its ancestor a-dept's gpu limit 4 < 0 allocated + 10 asked"),
    "kai-absent-limit-is-0": (_absent_limit, ("gpu-small", "default-queue"),
                              "a-team: its ancestor a-dept's gpu limit not set (KAI reads 0)"),
    "kai-unschedulable": (_kai_cordoned, ("gpu-spare", "default-queue"),
                          "not ready for KAI: node is unschedulable"),
    "kai-taint": (_kai_tainted, ("gpu-spare", "default-queue"),
                  "taint key1=value1:NoSchedule not tolerated"),
    "kai-node-conditions": (_kai_pressure, ("gpu-spare", "default-queue"),
                            "not ready for KAI: node has MemoryPressure condition"),
    "kube-hostname-label": (_hostname, ("gpu-small", "default-queue"), ""),
}


@pytest.mark.parametrize("rule", sorted(KAI_RULES))
def test_a_kai_rule_keeps_the_plan_off_the_trap(rule: str) -> None:
    edit, (node, queue), words = KAI_RULES[rule]
    api = b.shape_kai_eligibility()
    edit(api.objects)
    planned = plan(_found(api), RUN)
    assert planned.runnable, planned.refusals
    assert (planned.node, planned.queue) == (node, queue)
    if not words:
        return
    if node == "gpu-spare":  # without gpu-spare the plan refuses, naming the rule for gpu-small
        del api.objects[("Node", "", "gpu-spare")]
    else:  # without the quickstart's queues, likewise for a-team
        del api.objects[("Queue", "", "default-queue")]
        del api.objects[("Queue", "", "default-parent-queue")]
    refused = plan(_found(api), RUN)
    assert not refused.runnable and words in refused.refusals[0], refused.refusals


@pytest.mark.parametrize("rule", sorted(KAI_RULES))
def test_a_kai_rule_shape_passes_end_to_end(rule: str) -> None:
    api = b.shape_kai_eligibility()
    KAI_RULES[rule][0](api.objects)
    assert _run(api, kai=True) == KAI_PASS


def test_kai_pods_carry_its_scheduler_name_and_select_the_hostname_label() -> None:
    api = b.shape_kai_eligibility()
    _other_scheduler(api.objects)
    _hostname(api.objects)
    _ns, first, _second, big = plan(_found(api), RUN).objects()
    assert first["spec"]["schedulerName"] == big["spec"]["schedulerName"] == up.OTHER_SCHEDULER
    assert first["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "ip-10-0-1-5"}


def test_project_level_fairness_puts_leaves_under_an_unlimited_default() -> None:
    """--full-hierarchy-fairness=false (a shard argument): KAI keeps only queues with a parent
    and puts them under its own unlimited `default` (queue.go:59-75): a-dept's limit is gone."""
    api = b.shape_kai_eligibility()
    _ancestor_limit(api.objects)
    api.objects[("Deployment", "kai-scheduler", "kai-scheduler-default")] = b.kai_scheduler(
        shard_args=up.NO_FULL_HIERARCHY)
    planned = plan(_found(api), RUN)
    assert planned.queue == "a-team"
    assert _run(api, kai=True) == KAI_PASS


@pytest.mark.parametrize(("edit", "words"), [
    (lambda objs: objs[("Deployment", "kai-scheduler", "kai-scheduler-default")]["status"]
     .update(readyReplicas=0), "KAI's scheduler is not serving"),
    (lambda objs: (objs.pop(("Deployment", "kai-scheduler", "kai-scheduler-default")),
                   objs.__setitem__(("Deployment", "kai-scheduler", "kai-operator"),
                                    b.workload("Deployment", "kai-operator", "kai-scheduler",
                                               {"app": "kai-operator"},
                                               ["ghcr.io/kai-scheduler/kai-scheduler/"
                                                "operator:v0.16.8"]))),
     "kai-operator is not a scheduler"),
])
def test_a_kai_scheduler_that_does_not_serve_is_refused(edit: Any, words: str) -> None:
    api = b.shape_kai_eligibility()
    edit(api.objects)
    planned = plan(_found(api), RUN)
    assert not planned.runnable and words in planned.refusals[0], planned.refusals


# --------------------------------------------------------------------------- MIG, and in passing


def test_mig_nodes_are_gpu_nodes_and_their_pods_gpu_users() -> None:
    api = b.shape_kai_eligibility()
    api.put(b.raw_node("gpu-mig", allocatable={up.MIG_RESOURCE: "2"}),
            b.pod("infer", "ml", "gpu-mig", limits={up.MIG_RESOURCE: "1"}))
    found = _found(api)
    mig = next(n for n in found.gpu_nodes if n.name == "gpu-mig")
    assert mig.mig == (f"{up.MIG_RESOURCE}=2",) and mig.users == ("ml/infer",)
    assert "ml/infer" in found.gpu_users
    planned = plan(found, RUN)
    assert planned.node == "gpu-small"
    assert any("gpu-mig advertises MIG devices" in n and "not shared by KAI fractions" in n
               for n in planned.notes), planned.notes


def test_a_cpu_node_listed_first_hides_no_gpu_node() -> None:
    for shape in (b.shape_hami_eligibility(), b.shape_kai_eligibility()):
        names = [n.name for n in _found(shape).gpu_nodes]
        assert "a-cpu-0" not in names and names[0].startswith("gpu-")


def test_an_ordinary_pod_on_a_gpu_node_is_not_a_gpu_user() -> None:
    """Asking no GPU, or 0 of one, uses none: gpu-small stays the node the fractions go to."""
    api = b.shape_kai_eligibility()
    api.put(b.pod("sidecar", "monitoring", "gpu-small", limits={"nvidia.com/gpu": "0"}))
    found = _found(api)
    assert found.gpu_users == ("prod/train",)
    assert next(n for n in found.gpu_nodes if n.name == "gpu-small").users == ()
    assert plan(found, RUN).node == "gpu-small"
    assert _run(api, kai=True) == KAI_PASS


def test_a_finished_pod_holding_a_grant_uses_no_card() -> None:
    found = _found(b.shape_hami_eligibility())
    card = next(c for c in found.cards if c.device_id == "GPU-1")
    assert card.idle and card.users == ()


def test_half_ready_is_not_serving() -> None:
    api = b.shape_hami_eligibility()
    second = copy.deepcopy(api.objects[("DaemonSet", "kube-system", "hami-device-plugin")])
    second["metadata"]["name"] = "hami-device-plugin-l4"
    second["status"] = {"desiredNumberScheduled": 1, "numberReady": 0}
    api.put(second)
    found = _found(api)
    assert found.hami_device_plugin.ready == "2/2, 0/1" and not found.hami_device_plugin.serving
    first = judge(found, plan(found, RUN), None, clusters=1)[0]
    assert (first.id, first.status) == ("GPU-01", "fail")
