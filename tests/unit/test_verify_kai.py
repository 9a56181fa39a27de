"""What gpulab reads of KAI Scheduler's answers (gpulab/verify/kai.py): the reasons a PodGroup,
a pod condition and the events give, in order and once each, and the per-node histogram of a
refusal told apart into GPU shortages and other reasons.

The messages are KAI v0.16.8's own wording (docs/dev/upstream-facts/stack-vcluster-kai.md §1,
pkg/scheduler/api/common_info/pod_errors.go); these pin the readings the checks build their
verdicts on (mutation testing, docs/dev/mutation-testing.md, found them unpinned)."""

from __future__ import annotations

import pytest

from gpulab.verify.kai import (
    FRACTION_ANNOTATION,
    GPU_GROUP_LABEL,
    KAI_SCHEDULER,
    QUEUE_LABEL,
    QUEUE_REASONS,
    KaiReason,
    kai_pod,
    kai_reasons,
    node_reasons,
    queue_reasons,
    reasons_text,
)

# pod_errors.go:21,219-245 with allocate.go:244-248: KAI's words when no node fits.
NO_NODE = ("Resources were not found for pod team/job due to: no nodes with enough resources "
           "were found: 1 node has DiskPressure condition. \n1 node(s) didn't have enough "
           "resources: GPUs.")


def _group(*conditions: object) -> dict[str, object]:
    return {"status": {"schedulingConditions": list(conditions)}}


def test_a_reason_is_its_code_and_its_message_with_blanks_folded() -> None:
    reason = KaiReason("OverLimit", "  queue  team-a\n is over   its limit ", "PodGroup")
    assert (reason.code, reason.message, reason.source) == (
        "OverLimit", "queue team-a is over its limit", "PodGroup")
    assert reason.text() == "OverLimit: queue team-a is over its limit"
    assert KaiReason("", "no nodes", "event").text() == "no nodes"
    # A code without a message is the code alone (as KAI writes it on the pod then); nothing
    # at all says so.
    assert KaiReason("OverLimit", "", "PodGroup").text() == "OverLimit"
    assert KaiReason("", "", "event Unschedulable").text() == "no reason given"
    assert repr(reason) == ("KaiReason('OverLimit', 'queue team-a is over its limit', "
                            "'PodGroup')")


def test_two_reasons_are_the_same_whatever_told_them() -> None:
    a = KaiReason("OverLimit", "over", "PodGroup")
    b = KaiReason("OverLimit", "over", "event Unschedulable")
    assert a == b
    assert hash(a) == hash(b)
    assert a != KaiReason("OverLimit", "under", "PodGroup")
    assert a != KaiReason("", "over", "PodGroup")
    assert a != ("OverLimit", "over")


@pytest.mark.parametrize("code", QUEUE_REASONS)
def test_queue_reasons_by_code_or_in_the_message(code: str) -> None:
    assert KaiReason(code, "", "PodGroup").is_queue
    assert KaiReason("", f"job is {code} in queue q", "event").is_queue


def test_a_node_reason_is_not_a_queue_reason() -> None:
    assert not KaiReason("", NO_NODE, "event").is_queue
    assert QUEUE_REASONS == ("OverLimit", "NonPreemptibleOverQuota", "QueueDoesNotExist")


def test_the_podgroups_conditions_give_each_reason_in_order() -> None:
    group = _group(
        {"type": "UnschedulableOnNodePool", "reasons": [
            {"reason": "OverLimit", "message": "queue q is over its limit"},
            {"reason": "", "message": ""},  # says nothing: skipped
            "junk",
            {"message": "only a message"}]},
        {"type": "UnschedulableOnNodePool", "reason": "NonPreemptibleOverQuota",
         "message": "over quota"},  # deprecated fields, no reasons[]
        {"type": "UnschedulableOnNodePool", "reasons": [{"reason": "QueueDoesNotExist"}],
         "reason": "Ignored", "message": "the reasons[] win"},
        "junk",
        {"type": "UnschedulableOnNodePool"})  # nothing at all
    assert [(r.code, r.message, r.source) for r in queue_reasons(group)] == [
        ("OverLimit", "queue q is over its limit", "PodGroup"),
        ("", "only a message", "PodGroup"),
        ("NonPreemptibleOverQuota", "over quota", "PodGroup"),
        ("QueueDoesNotExist", "", "PodGroup"),
    ]
    assert queue_reasons({"status": {"schedulingConditions": [
        {"reason": "", "message": "deprecated message alone"}]}})[0].message == (
        "deprecated message alone")
    assert queue_reasons(None) == []
    assert queue_reasons({"status": None}) == []


def test_kai_reasons_podgroup_first_then_the_pod_then_events_each_once() -> None:
    group = _group({"reasons": [{"reason": "OverLimit", "message": "over"}]})
    pod = {"status": {"conditions": [
        {"type": "Ready", "status": "False", "message": "not this one"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": NO_NODE}]}}
    events = [
        {"type": "Warning", "reason": "Unschedulable", "message": NO_NODE},  # same as the pod's
        {"type": "Warning", "reason": "FailedScheduling", "message": "0/2 nodes are available"},
        {"type": "Normal", "reason": "Unschedulable", "message": "a Normal event"},
        {"type": "Warning", "reason": "BackOff", "message": "another reason"},
        {"type": "Warning", "reason": "Unschedulable", "note": "from   note"},
    ]
    reasons = kai_reasons(pod, group, events)
    assert [(r.code, r.message, r.source) for r in reasons] == [
        ("OverLimit", "over", "PodGroup"),
        ("", " ".join(NO_NODE.split()), "pod condition"),
        ("", "0/2 nodes are available", "event FailedScheduling"),
        ("", "from note", "event Unschedulable"),
    ]


def test_a_scheduled_pod_or_a_silent_condition_adds_nothing() -> None:
    scheduled = {"status": {"conditions": [{"type": "PodScheduled", "status": "True",
                                            "message": "placed"}]}}
    silent = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    assert kai_reasons(scheduled, None, []) == []
    assert kai_reasons(silent, None, []) == []
    assert kai_reasons(None, None, []) == []


def test_the_node_histogram_is_split_into_gpu_shortages_and_other_reasons() -> None:
    assert node_reasons(NO_NODE) == (["1 node(s) didn't have enough resources: GPUs"],
                                     ["1 node has DiskPressure condition"])


@pytest.mark.parametrize(("message", "expected"), [
    # kube-scheduler's form, entries joined by ", "
    ("0/3 nodes are available: 1 node(s) had untolerated taint {key1: value1}, 2 node(s) "
     "didn't have enough resources: GPU memory.",
     (["2 node(s) didn't have enough resources: GPU memory"],
      ["1 node(s) had untolerated taint {key1: value1}"])),
    # KAI's per node group form (topology), and MIG profiles
    ("no nodes with enough resources were found: 2 node-group(s) didn't have enough of mig "
     "profile 1g.5gb.",
     (["2 node-group(s) didn't have enough of mig profile 1g.5gb"], [])),
    # several entries, the last with no full stop
    ("3 node(s) didn't have enough resources: GPUs. 1 node has MemoryPressure condition",
     (["3 node(s) didn't have enough resources: GPUs"], ["1 node has MemoryPressure condition"])),
    # a shortage in words without a histogram: the whole message
    ("the job didn't have enough resources: GPU in any node",
     (["the job didn't have enough resources: GPU in any node"], [])),
    # nothing about nodes
    ("queue team-a is over its limit", ([], [])),
    ("", ([], [])),
])
def test_node_reasons_of_each_form(message: str, expected: tuple[list[str], list[str]]) -> None:
    assert node_reasons(message) == expected


def test_reasons_text_shows_two_and_counts_the_rest() -> None:
    reasons = [KaiReason("A", "one", "s"), KaiReason("", "two", "s"), KaiReason("C", "3", "s")]
    assert reasons_text(reasons) == "A: one; two (+1 more)"
    assert reasons_text(reasons, limit=3) == "A: one; two; C: 3"
    assert reasons_text(reasons[:2]) == "A: one; two"
    assert reasons_text(reasons, limit=1) == "A: one (+2 more)"
    assert reasons_text([]) == ""


def test_a_fraction_pod_for_kai() -> None:
    pod = kai_pod("p", "ns", {"app": "x"}, "pause:3.10", queue="team-a", fraction="0.5",
                  node="worker-1")
    assert pod == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns",
                     "labels": {"app": "x", QUEUE_LABEL: "team-a"},
                     "annotations": {FRACTION_ANNOTATION: "0.5"}},
        "spec": {"schedulerName": KAI_SCHEDULER, "restartPolicy": "Never",
                 "terminationGracePeriodSeconds": 0,
                 "nodeSelector": {"kubernetes.io/hostname": "worker-1"},
                 "containers": [{"name": "app", "image": "pause:3.10",
                                 "imagePullPolicy": "IfNotPresent"}]}}


def test_a_whole_gpu_pod_with_another_scheduler_and_queue_label() -> None:
    pod = kai_pod("p", "ns", {}, "img", queue="q", gpus=2, scheduler_name="other",
                  queue_label="runai/queue")
    assert pod["spec"]["schedulerName"] == "other"
    assert pod["metadata"] == {"name": "p", "namespace": "ns", "labels": {"runai/queue": "q"}}
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "2"}}
    assert "nodeSelector" not in pod["spec"]


def test_kais_names() -> None:
    assert (QUEUE_LABEL, FRACTION_ANNOTATION, KAI_SCHEDULER, GPU_GROUP_LABEL) == (
        "kai.scheduler/queue", "gpu-fraction", "kai-scheduler", "runai-gpu-group")


def test_the_deprecated_fields_alone_each_give_a_reason() -> None:
    """A condition without reasons[] (older KAI) gives its own reason and message, either of
    which may be missing; junk before it does not stop the reading."""
    group = _group("junk", {"reason": "OverLimit"}, 7, {"message": "only the message"})
    assert [(r.code, r.message, r.source) for r in queue_reasons(group)] == [
        ("OverLimit", "", "PodGroup"), ("", "only the message", "PodGroup")]


# KAI v0.16.8 writes a job's refusal on the pod as "<code>: <message>." (JobFitErrorsToMessage,
# pkg/scheduler/api/common_info/job_errors.go:44-75; default_status_updater.go:357-374) and
# keeps code and message apart in the PodGroup's reasons[] (job_errors.go:211-217).
OVER = ("team-a quota has reached the allowable limit of GPUs. Limit is 1 GPUs, currently 0.33 "
        "GPUs allocated and workload requested 2 GPUs")


def test_the_words_a_reason_can_come_in() -> None:
    assert KaiReason("OverLimit", OVER, "PodGroup").said == {f"OverLimit: {OVER}", OVER}
    assert KaiReason("", f"OverLimit: {OVER}.", "event").said == {f"OverLimit: {OVER}"}
    assert KaiReason("OverLimit", "", "PodGroup").said == {"OverLimit"}
    assert KaiReason("", "", "event").said == {"no reason given"}


def test_one_message_once_whether_coded_or_not() -> None:
    """The PodGroup's coded reason, the pod's condition in KAI's words and an event with the
    bare message (an older or hand-made copy) are one reason: the coded one."""
    group = _group({"reasons": [{"reason": "OverLimit", "message": OVER}]})
    pod = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                      "message": f"OverLimit: {OVER}."}]}}
    events = [{"type": "Warning", "reason": "Unschedulable", "message": OVER},
              {"type": "Warning", "reason": "Unschedulable", "message": f"OverLimit: {OVER}."}]
    reasons = kai_reasons(pod, group, events)
    assert [(r.code, r.message, r.source) for r in reasons] == [("OverLimit", OVER, "PodGroup")]
    assert reasons_text(reasons) == f"OverLimit: {OVER}"


def test_a_pod_copy_before_any_code_is_kept_once() -> None:
    pod = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                      "message": f"OverLimit: {OVER}."}]}}
    events = [{"type": "Warning", "reason": "Unschedulable", "message": f"OverLimit: {OVER}"}]
    assert reasons_text(kai_reasons(pod, None, events)) == f"OverLimit: {OVER}."


def test_codes_without_messages_are_told_apart_and_match_the_pods_word() -> None:
    group = _group({"reasons": [{"reason": "OverLimit"}, {"reason": "QueueDoesNotExist"}]})
    pod = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                      "message": "OverLimit"}]}}
    events = [{"type": "Warning", "reason": "Unschedulable", "message": ""},
              {"type": "Warning", "reason": "FailedScheduling", "message": "  "}]
    reasons = kai_reasons(pod, group, events)
    assert reasons_text(reasons, limit=3) == "OverLimit; QueueDoesNotExist; no reason given"
