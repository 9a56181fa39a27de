"""Where a verify pod may land, by the rules of the schedulers that place it: pure, no I/O.

Each function follows one upstream rule, read at the pins (HAMi v2.10.0, KAI Scheduler v0.16.8,
Kubernetes: see each docstring for file and lines); docs/verify-any-cluster.md ("Who may place a
pod where") lists them with the test shape each one decides.

verify's pods carry no tolerations of their own and no requests but GPUs: they are BestEffort,
and the API server gives them only DefaultTolerationSeconds' two NoExecute tolerations.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import yaml

from gpulab import nesting
from gpulab.taints import taint_text
from gpulab.verify import objects as o
from gpulab.verify.hami import HamiResources

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_TOLERATIONS",
    "HOSTNAME_LABEL",
    "device_config_resources",
    "flag_value",
    "flag_values",
    "handshake_expired",
    "kai_not_ready",
    "label_selector",
    "matches_labels",
    "mig_resources",
    "untolerated_taints",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"

# kubernetes plugin/pkg/admission/defaulttolerationseconds/admission.go:43-55,116-122 (read at
# aed80471; on by default): every pod that has none gets these two (NoExecute, 300 s).
DEFAULT_TOLERATIONS: tuple[Mapping[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
)
# nodeunschedulable: a cordoned node refuses pods that do not tolerate this taint.
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


# --------------------------------------------------------------------------- kube-scheduler


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Toleration.ToleratesTaint (kubernetes/api core/v1/toleration.go:52-77 at
    kubernetes-1.36.3): an empty effect or key matches any; Equal (or empty) compares values,
    Exists matches all; Lt/Gt only with comparison operators on (the scheduler's default: off,
    so they match nothing)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return operator == "Exists"


def untolerated_taints(node: Mapping[str, Any],
                       tolerations: Iterable[Mapping[str, Any]] = DEFAULT_TOLERATIONS
                       ) -> list[str]:
    """Why kube-scheduler will not put a pod with `tolerations` on `node` (empty: it may).

    - NodeUnschedulable: `spec.unschedulable` (cordon) unless the pod tolerates
      node.kubernetes.io/unschedulable:NoSchedule (kubernetes
      pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go:50-65 at 09b2e8f6);
    - TaintToleration: every NoSchedule or NoExecute taint must be tolerated
      (tainttoleration/taint_toleration.go:109-120 at 0f7becbc, plugins/helper/taint.go:21-28 at
      e63752e0; component-helpers scheduling/corev1/helpers.go:75-101 at kubernetes-1.36.3; the
      kubernetes/kubernetes tree is too large to fetch whole, these three were read as the
      source index stores them). That includes the taints the
      node controller puts for conditions (TaintNodesByCondition: memory-pressure, disk-pressure,
      pid-pressure, network-unavailable, not-ready; api core/v1/well_known_taints.go:19-52): a
      BestEffort pod, like verify's, gets no memory-pressure toleration (kubernetes website
      content/en/docs/concepts/scheduling-eviction/taint-and-toleration.md, "Taint Nodes by
      Condition"). PreferNoSchedule only scores.
    """
    wanted = list(tolerations)
    spec = node.get("spec") or {}
    out = []
    if spec.get("unschedulable") and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in wanted):
        out.append("cordoned (spec.unschedulable)")
    for taint in spec.get("taints") or ():
        if not isinstance(taint, dict) or taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in wanted):
            out.append(f"taint {taint_text(taint)} not tolerated")
    return out


def mig_resources(node: Mapping[str, Any]) -> dict[str, str]:
    """MIG devices a node advertises (`nvidia.com/mig-<profile>`: the device plugin's mixed
    strategy, HAMi pkg/device-plugin/nvidiadevice/nvinternal/rm/rm.go:125-154), by name."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {str(k): str(v) for k, v in allocatable.items()
            if str(k).startswith("nvidia.com/mig-") and (o.int_quantity(v) or 0) > 0}


# --------------------------------------------------------------------------- HAMi


def flag_values(args: Sequence[str], flag: str) -> list[str]:
    """Every value of `--flag=value` or `--flag value` in a container's command line, in order."""
    found = []
    for i, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            found.append(arg.split("=", 1)[1])
        elif arg == flag and i + 1 < len(args):
            found.append(args[i + 1])
    return found


def flag_value(args: Sequence[str], flag: str) -> str | None:
    """The value of `--flag=value` or `--flag value` in a container's command line (the last
    one wins, as with pflag's single-valued flags); None when absent."""
    values = flag_values(args, flag)
    return values[-1] if values else None


def label_selector(values: Sequence[str]) -> dict[str, str]:
    """HAMi's `--node-label-selector` (cmd/scheduler/main.go:73 at v2.10.0, a pflag
    StringToString), which the scheduler lists its nodes with (pkg/scheduler/scheduler.go:417,
    459): a node whose labels do not match every pair is never registered, its cards never
    offered. `values`: every occurrence of the flag, in order.

    As pflag v1.0.10 (HAMi's go.mod) reads it, string_to_string.go:25-59: a value with one `=`
    is one pair, commas and all, with `"` trimmed from both ends (:31-32); with more, it is one
    CSV record (:33-39, quotes keep a comma in a field); each pair is cut at its first `=`
    (:44, SplitN 2), nothing is trimmed, a later key wins, and a repeated flag adds its pairs
    to the earlier ones (:50-56). A value pflag refuses (no `=` at all :29-30, a pair without
    one :45-46, bad CSV :37-38) stops the scheduler from starting; it adds no pair here.
    Python's strict CSV reader refuses what Go's encoding/csv refuses but a bare `"` inside an
    unquoted field: such a pair is read, and matches no node (no label holds a `"`)."""
    out: dict[str, str] = {}
    for value in values:
        count = value.count("=")
        try:
            pairs = [value.strip('"')] if count == 1 else next(csv.reader([value], strict=True))
        except csv.Error:
            continue
        cut = [pair.partition("=") for pair in pairs]
        if count and all(sep for _, sep, _ in cut):
            out.update((key, val) for key, _, val in cut)
    return out


def matches_labels(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\Z")  # Go's time.DateTime


def handshake_expired(handshake: str, allocatable_count: int, now: datetime) -> bool:
    """HAMi drops a node's cards when its handshake reads `Requesting_<time>` more than 60 s
    old and the node's allocatable count resource is 0 (pkg/device/devices.go:576-596, called
    through pkg/device/nvidia/device.go:234-258 and scheduler.go:478-505). The time is
    `time.DateTime` in the scheduler's local zone (devices.go:583): taken as UTC here. A value
    HAMi cannot parse counts as healthy (devices.go:579-586)."""
    if "Requesting" not in handshake:
        return False
    _, cut, stamp = handshake.partition("_")
    if not cut or not _DATETIME.match(stamp):
        return False
    try:
        since = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return False
    return now >= since + timedelta(seconds=60) and allocatable_count <= 0


def device_config_resources(text: str | None) -> HamiResources | None:
    """The resource names in HAMi's device config (`nvidia:` resourceCountName & co.,
    pkg/device/nvidia/device.go:97-100, read with yaml.v2 by pkg/scheduler/config/config.go:
    484-496: an absent key is empty, so HAMi counts nothing under it); None when the text is not
    YAML HAMi could read (its scheduler would not start: config.go:287-290)."""
    try:
        data = nesting.yaml_load(text or "")
    except (yaml.YAMLError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    nvidia = data.get("nvidia") or {}
    if not isinstance(nvidia, dict):
        return None

    def name(key: str) -> str:
        value = nvidia.get(key)
        return str(value) if isinstance(value, str) else ""

    return HamiResources(count=name("resourceCountName"), memory=name("resourceMemoryName"),
                         cores=name("resourceCoreName"),
                         memory_percentage=name("resourceMemoryPercentageName"))


# --------------------------------------------------------------------------- KAI


def kai_not_ready(node: Mapping[str, Any]) -> list[str]:
    """Why KAI counts a node as not ready (empty: ready): KAI v0.16.8
    pkg/scheduler/scheduler_util/scheduler_utils.go:12-45 (`spec.unschedulable`, Ready not True,
    MemoryPressure/DiskPressure/PIDPressure/NetworkUnavailable not False), used for the GPUs a
    job may get (pkg/scheduler/actions/utils/action.go:164-170) and the proportion plugin's
    totals (pkg/scheduler/plugins/proportion/proportion.go:266-272)."""
    out = []
    if (node.get("spec") or {}).get("unschedulable"):
        out.append("node is unschedulable")
    for cond in (node.get("status") or {}).get("conditions") or ():
        if not isinstance(cond, dict):
            continue
        kind, status = cond.get("type"), cond.get("status")
        if kind == "Ready" and status != "True":
            out.append("node has NotReady condition")
        elif kind in ("MemoryPressure", "DiskPressure", "PIDPressure",
                      "NetworkUnavailable") and status != "False":
            out.append(f"node has {kind} condition")
    return out
