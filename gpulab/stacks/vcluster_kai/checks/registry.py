"""vcluster-kai's eight checks in order, and the finding verify reports next to them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.stacks.vcluster_kai.checks import isolation
from gpulab.stacks.vcluster_kai.checks import scheduling as c
from gpulab.verify.registry import parse_ids, select_from

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState
    from gpulab.verify.result import CheckResult

__all__ = ["CHECKS", "CHECK_IDS", "FINDING_ID", "Check", "parse_tc", "pods_needed", "select"]

CheckFn = Callable[["KaiLabState", "VclusterKaiProfile", str], "CheckResult"]
FINDING_ID = isolation.FINDING_ID


@dataclass(frozen=True)
class Check:
    """One check; `pods` are the verify pods (stacks.vcluster_kai_render.VERIFY_PODS) it needs."""

    id: str
    title: str
    run: CheckFn
    pods: tuple[str, ...] = ()
    look: str = ""  # where to look further when it fails (next_step fills it in)

    def next_step(self, lab: str, team: str, profile: VclusterKaiProfile) -> str:
        """`look` for this lab and team: commands a user can paste."""
        return self.look.format(
            team=f'kubectl --kubeconfig "$(gpulab kubeconfig {team} --name {lab})"',
            host=f'kubectl --kubeconfig "$(gpulab kubeconfig management --name {lab})"',
            keep=f"gpulab verify --name {lab} --tc {self.id} --keep",
            ns=profile.team(team).namespace)


CHECKS: tuple[Check, ...] = (
    Check("KAI-01", "vCluster API", c.check_api, look="{host} -n {ns} get pods,services"),
    Check("KAI-02", "GPU node visible", c.check_gpu_node, look="{team} get nodes -o wide"),
    Check("KAI-03", "queue tree", c.check_queue_tree,
          look="{host} get queues.scheduling.run.ai -o yaml"),
    Check("KAI-04", "pod via KAI", c.check_pod_via_kai, ("gpu-share",),
          look="{keep}, then {host} -n {ns} get pods,podgroups.scheduling.run.ai -o yaml"),
    Check("KAI-05", "GPU sharing", c.check_sharing, ("gpu-share",),
          look="{keep}, then {host} -n {ns} get pods -o wide"),
    Check("KAI-06", "over queue limit", c.check_over_limit, ("gpu-over-limit",),
          look="{keep}, then {host} -n {ns} describe podgroups.scheduling.run.ai"),
    Check("KAI-07", "over GPU capacity", c.check_over_capacity,
          ("gpu-share", "gpu-over-capacity"),
          look="{keep}, then {host} -n {ns} describe podgroups.scheduling.run.ai"),
    Check("KAI-08", "isolation", isolation.check, ("gpu-share", "queue-foreign"),
          look="{team} get pods -A -o wide"),
)
CHECK_IDS: tuple[str, ...] = tuple(check.id for check in CHECKS)
_WHERE = " for the vcluster-kai stack"


def select(ids: Iterable[str] | None = None) -> tuple[Check, ...]:
    """The checks with these ids in order (all when None); unknown ids are a UsageError."""
    return select_from(CHECKS, ids, _WHERE)


def parse_tc(value: str | None) -> tuple[str, ...] | None:
    """`--tc KAI-05,kai-06` (or `5,6`) → ('KAI-05', 'KAI-06'); None when the flag is absent."""
    return parse_ids(value, "KAI", CHECKS, _WHERE)


def pods_needed(checks: Iterable[Check]) -> frozenset[str]:
    return frozenset(p for check in checks for p in check.pods)
