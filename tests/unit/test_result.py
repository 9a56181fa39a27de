"""A failure says where to look further; other verdicts are left as the check wrote them."""

from __future__ import annotations

import pytest

from gpulab.verify.result import CheckResult

STEP = 'kubectl --kubeconfig "$(gpulab kubeconfig tenant-a --name lab)" get nodes -o wide'


def test_a_failure_without_a_command_gets_the_checks_next_step() -> None:
    result = CheckResult("TC-02", "tenant-a", "fail", reason="node w is NotReady")
    assert result.with_next_step(STEP).reason == f"node w is NotReady; to look further: {STEP}"


@pytest.mark.parametrize("reason", [
    "calico-node is 0/1 ready; kubectl -n kube-system describe ds calico-node",
    "worker w is not a node (see TC-02)",
    "no pod; `gpulab up` joins it again",
    "Queue team-a does not exist (KAI-03)",
])
def test_a_failure_that_already_says_where_to_look_is_unchanged(reason: str) -> None:
    result = CheckResult("TC-02", "tenant-a", "fail", reason=reason)
    assert result.with_next_step(STEP) == result


@pytest.mark.parametrize("status", ["pass", "error", "skip"])
def test_other_verdicts_are_unchanged(status: str) -> None:
    result = CheckResult("TC-02", "tenant-a", status, reason="x")  # type: ignore[arg-type]
    assert result.with_next_step(STEP) == result
