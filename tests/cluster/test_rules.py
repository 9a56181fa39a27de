"""gpulab.cluster.rules against upstream's own cases, where verify's pods alone do not reach a
rule: Toleration.ToleratesTaint as kubernetes/api tests it (core/v1/toleration_test.go at
kubernetes-1.36.3, TestTolerationToleratesTaint; the comparison operators' feature gate off,
kube-scheduler's default). verify's pods carry the API server's two default tolerations only;
these cases keep the port whole for any other. HAMi's `--node-label-selector` as spf13/pflag
v1.0.10 (HAMi v2.10.0's go.mod; tag commit 0491e57) reads a StringToString flag
(string_to_string.go:25-59, its tests string_to_string_test.go), and HAMi's handshake as
CheckHealth cuts it (pkg/device/devices.go:576-596 at v2.10.0)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from gpulab.cluster.rules import (
    device_config_resources,
    flag_values,
    handshake_expired,
    label_selector,
    tolerates,
)

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


# (flag values in order, the selector HAMi's scheduler lists nodes with)
SELECTORS: list[tuple[list[str], dict[str, str]]] = [
    # string_to_string_test.go:143-144 (TestS2SCalledTwice): a repeated flag adds to the map, a
    # later key wins, quotes keep a comma in a CSV field, and a value with one `=` is one pair
    (["a=1,b=2", "b=3", '"e=5,6"', "f=7,8"], {"a": "1", "b": "3", "e": "5,6", "f": "7,8"}),
    # :63-64 (TestS2S): the CSV record createS2SFlag writes
    (['a=1,b=2,d=4,c=3,"e=5,6"'], {"a": "1", "b": "2", "d": "4", "c": "3", "e": "5,6"}),
    # string_to_string.go:44: SplitN(pair, "=", 2) cuts at the first `=`, later keys win
    (["gpu=on=1,gpu=on"], {"gpu": "on"}),
    (["gpu=on=1,zone=a"], {"gpu": "on=1", "zone": "a"}),
    # nothing is trimmed (a CSV field keeps its blanks; only `"` around a single pair goes)
    (["gpu = on, zone=a"], {"gpu ": " on", " zone": "a"}),
    (['"gpu=on"'], {"gpu": "on"}),
    (['"X=1X"'], {"X": "1X"}),  # strings.Trim(val, `"`): quotes only
    # refused by Set (:29-30, :45-46): the scheduler does not start, no pair is read
    (["gpu"], {}),
    (["gpu=on,zone=a,junk"], {}),
    (["gpu=on", "junk"], {"gpu": "on"}),
    # CSV that encoding/csv refuses (a quoted field with more after it, :36-38): that value
    # adds nothing, the next one still does
    (['"a=1"x,b=2', "c=3"], {"c": "3"}),
    ([], {}),
]


@pytest.mark.parametrize(("values", "selector"), SELECTORS,
                         ids=[f"case{i}" for i in range(len(SELECTORS))])
def test_the_node_label_selector_is_read_as_pflag_reads_a_string_to_string(
        values: list[str], selector: dict[str, str]) -> None:
    assert label_selector(values) == selector


def test_every_value_of_a_repeated_flag_is_read_in_order() -> None:
    args = ["--node-label-selector=a=1", "--scheduler-name", "x", "--node-label-selector",
            "b=2", "--node-label-selector"]
    assert flag_values(args, "--node-label-selector") == ["a=1", "b=2"]
    assert flag_values(args, "--scheduler-name") == ["x"]
    assert flag_values(args, "--missing") == []


NOW = datetime(2026, 12, 1, 10, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(("handshake", "expired"), [
    ("Requesting_2026-12-01 10:00:00", True),    # devices.go:601 writes this; 5 min old
    ("Requesting_2026-12-01 10:04:30", False),   # under 60 s (:587-589)
    ("Reported_2026-12-01 10:00:00", False),     # not Requesting (:578)
    # strings.Cut cuts at the first `_` (:579): the rest does not parse as a time.DateTime,
    # so HAMi counts the node healthy (:583-586) whatever follows a later `_`
    ("Requesting_x_2026-12-01 10:00:00", False),
    ("Deleted_Requesting_2026-12-01 10:00:00", False),
    ("Requesting", False),                       # no `_` (:580-582)
    # time.DateTime's two-digit fields take two digits (Go time/format.go, getnum with
    # fixed=true), where Python's strptime would take one: unparsable, healthy (:583-586)
    ("Requesting_2026-12-1 10:00:00", False),
    ("Requesting_2026-12-01 10:00:00 extra", False),
])
def test_a_handshake_is_cut_where_hami_cuts_it(handshake: str, expired: bool) -> None:
    assert handshake_expired(handshake, 0, NOW) is expired
    assert handshake_expired(handshake, 1, NOW) is False  # allocatable still there (:591-595)


def test_a_device_config_that_is_no_mapping_names_no_resources() -> None:
    """The rule two equivalents of tests/mutation_equivalent.toml rely on (an empty text and a
    plain word read alike): neither is a mapping, so no resource names (the chart's defaults are
    used); nor is a config nested too deep to read."""
    assert device_config_resources("") is None
    assert device_config_resources("XXXX") is None
    assert device_config_resources("nvidia: " + "[" * 5000 + "]" * 5000) is None
    assert device_config_resources("nvidia:\n  resourceCountName: a/b\n") is not None
