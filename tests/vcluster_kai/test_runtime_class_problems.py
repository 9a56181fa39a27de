"""The preflight's RuntimeClass line (steps.preflight._runtime_class_problems), one fact at a
time: what KAI would set, whether the cluster has it, and what could not be read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.stacks.vcluster_kai.existing import KaiFound
from gpulab.stacks.vcluster_kai.steps.preflight import _runtime_class_problems

GPU_OPERATOR = (("nvidia", "nvidia"), ("nvidia-legacy", "nvidia-legacy"))


def _facts(classes: Any, fake: bool = False) -> Any:
    return SimpleNamespace(runtime_classes=classes, fake_nodes=("cpu-1",) if fake else (),
                           runtime_classes_why="listing RuntimeClasses (node.k8s.io/v1) "
                                               "failed: 403 Forbidden")


def _kai(runtime_class: str) -> KaiFound:
    return KaiFound("kai-scheduler", "v0.16.8", True, None, runtime_class)


@pytest.mark.parametrize(("classes", "kai", "fake"), [
    (GPU_OPERATOR, None, False),  # gpulab chooses (keeps nvidia)
    ((), None, False),  # gpulab chooses (none)
    (GPU_OPERATOR, "nvidia", False),  # the KAI found sets one that exists
    ((), "", False),  # the KAI found sets none
    (None, "", False),  # ... so unread classes do not matter
    (None, None, True),  # fake GPUs bring nvidia
    ((), "nvidia", True),  # ... for a KAI found too
])
def test_nothing_to_refuse(classes: Any, kai: str | None, fake: bool) -> None:
    found = _kai(kai) if kai is not None else None
    assert _runtime_class_problems(_facts(classes, fake), found) == []


def test_a_kai_found_whose_class_is_absent_is_refused() -> None:
    [line] = _runtime_class_problems(_facts((("nvidia-cdi", "nvidia-cdi"),)), _kai("nvidia"))
    assert line.startswith("KAI Scheduler in kai-scheduler sets RuntimeClass nvidia on "
                           "GPU-fraction pods")
    assert "create RuntimeClass nvidia" in line


@pytest.mark.parametrize("kai", [None, "nvidia-cr"])
def test_unread_classes_are_unknown_not_absent(kai: str | None) -> None:
    found = _kai(kai) if kai is not None else None
    [line] = _runtime_class_problems(_facts(None), found)
    assert line.startswith(f"whether RuntimeClass {kai or 'nvidia'} exists is unknown, because "
                           "listing RuntimeClasses (node.k8s.io/v1) failed: 403 Forbidden")
    assert "absent" not in line and "no such" not in line
