"""gpulab.cluster.rules against upstream's own cases, where verify's pods alone do not reach a
rule: Toleration.ToleratesTaint as kubernetes/api tests it (core/v1/toleration_test.go at
kubernetes-1.36.3, TestTolerationToleratesTaint; the comparison operators' feature gate off,
kube-scheduler's default). verify's pods carry the API server's two default tolerations only;
these cases keep the port whole for any other."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.cluster.rules import tolerates

NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"

# (toleration_test.go line, toleration, taint, tolerated)
CASES: list[tuple[int, dict[str, Any], dict[str, Any], bool]] = [
    (35, {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE},
     {"key": "foo", "effect": NO_SCHEDULE}, True),
    (48, {"key": "foo", "operator": "Exists", "effect": NO_SCHEDULE},
     {"key": "foo", "value": "bar", "effect": NO_SCHEDULE}, True),
    (62, {"key": "", "operator": "Exists", "effect": NO_SCHEDULE},
     {"key": "foo", "value": "bar", "effect": NO_SCHEDULE}, True),
    (76, {"key": "foo", "operator": "Equal", "value": "bar", "effect": NO_SCHEDULE},
     {"key": "foo", "value": "bar", "effect": NO_SCHEDULE}, True),
    (91, {"key": "foo", "operator": "Equal", "value": "value1", "effect": NO_SCHEDULE},
     {"key": "foo", "value": "value2", "effect": NO_SCHEDULE}, False),
    (106, {"key": "foo", "operator": "Equal", "value": "bar", "effect": NO_SCHEDULE},
     {"key": "foo", "value": "bar", "effect": NO_EXECUTE}, False),
    # :137-150, tolerated only with the comparison operators' gate on (toleration.go:67-70)
    (137, {"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "750",
           "effect": NO_SCHEDULE},
     {"key": "node.kubernetes.io/sla", "value": "950", "effect": NO_SCHEDULE}, False),
]
# toleration.go:52-77 beyond the table: an empty effect matches every effect, an empty operator
# is Equal (:60-63), another key is no match (:56-58).
CODE: list[tuple[int, dict[str, Any], dict[str, Any], bool]] = [
    (52, {"key": "foo", "operator": "Exists"}, {"key": "foo", "effect": NO_EXECUTE}, True),
    (60, {"key": "foo", "value": "bar"}, {"key": "foo", "value": "bar", "effect": NO_SCHEDULE},
     True),
    (60, {"key": "foo", "value": "bar"}, {"key": "foo", "effect": NO_SCHEDULE}, False),
    (60, {"key": "foo"}, {"key": "foo", "effect": NO_SCHEDULE}, True),
    (56, {"key": "foo", "operator": "Exists"}, {"key": "other", "effect": NO_SCHEDULE}, False),
]


@pytest.mark.parametrize(("line", "toleration", "taint", "tolerated"), CASES + CODE,
                         ids=[f"line{c[0]}-{i}" for i, c in enumerate(CASES + CODE)])
def test_a_toleration_tolerates_a_taint_as_kubernetes_says(line: int, toleration: dict[str, Any],
                                                           taint: dict[str, Any],
                                                           tolerated: bool) -> None:
    assert tolerates(toleration, taint) is tolerated
