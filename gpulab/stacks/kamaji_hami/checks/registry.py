"""kamaji-hami's eight acceptance checks in TC order, and what each needs observed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.stacks.kamaji_hami.checks import (
    tc01_control_planes,
    tc02_workers,
    tc03_gpu_admission,
    tc04_gpu_inventory,
    tc05_sharing,
    tc06_core_overcommit,
    tc07_memory_overcommit,
    tc08_isolation,
)
from gpulab.verify.registry import parse_ids, select_from

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState
    from gpulab.verify.result import CheckResult

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "Check",
    "CheckFn",
    "parse_tc",
    "pods_needed",
    "select",
]

CheckFn = Callable[["LabState", "KamajiHamiProfile", str], "CheckResult"]


@dataclass(frozen=True)
class Check:
    """One acceptance check.

    pods: the verify pods (names from render.verify_objects) the check needs created; the live
    run creates the union for the selected checks, in render's order.
    """

    id: str
    title: str
    run: CheckFn
    pods: tuple[str, ...] = ()
    look: str = ""  # where to look further when it fails (next_step fills it in)

    def next_step(self, lab: str, tenant: str, profile: KamajiHamiProfile) -> str:
        """`look` for this lab and tenant: commands a user can paste."""
        return self.look.format(
            tenant=f'kubectl --kubeconfig "$(gpulab kubeconfig {tenant} --name {lab})"',
            management=f'kubectl --kubeconfig "$(gpulab kubeconfig management --name {lab})"',
            keep=f"gpulab verify --name {lab} --tc {self.id} --keep",
            name=tenant, ns=profile.components.kamaji.tenant_namespace)


_SHARE = ("gpu-share-1", "gpu-share-2", "gpu-share-3")

CHECKS: tuple[Check, ...] = (
    Check("TC-01", "control planes", tc01_control_planes.check,
          look="{management} -n {ns} describe tenantcontrolplane {name}"),
    Check("TC-02", "workers", tc02_workers.check,
          look="{tenant} get nodes -o wide; {tenant} -n kube-system get pods -o wide"),
    Check("TC-03", "GPU admission path", tc03_gpu_admission.check, ("gpu-share-1",),
          look="{keep}, then {tenant} -n gpulab-verify describe pod gpu-share-1"),
    Check("TC-04", "GPU inventory", tc04_gpu_inventory.check,
          look="{tenant} get nodes -o yaml (hami.io/* annotations, allocatable)"),
    Check("TC-05", "sharing", tc05_sharing.check, _SHARE,
          look="{keep}, then {tenant} -n gpulab-verify get pods -o yaml"),
    Check("TC-06", "core over-commit", tc06_core_overcommit.check, (*_SHARE, "gpu-share-4"),
          look="{keep}, then {tenant} -n gpulab-verify describe pod gpu-share-4"),
    Check("TC-07", "memory over-commit", tc07_memory_overcommit.check, ("gpu-mem-big",),
          look="{keep}, then {tenant} -n gpulab-verify describe pod gpu-mem-big"),
    Check("TC-08", "isolation", tc08_isolation.check, ("gpu-share-1",),
          look="{tenant} get nodes,pods -A -o wide"),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)


def select(ids: Iterable[str] | None = None) -> tuple[Check, ...]:
    """The checks with these ids in TC order (all when None); unknown ids are a UsageError."""
    return select_from(CHECKS, ids)


def parse_tc(value: str | None) -> tuple[str, ...] | None:
    """`--tc TC-05,tc-06` → ('TC-05', 'TC-06'); None (all checks) when the flag is absent.

    Accepts `5` and `05` for TC-05 too.
    """
    return parse_ids(value, "TC", CHECKS)


def pods_needed(checks: Iterable[Check]) -> frozenset[str]:
    return frozenset(p for c in checks for p in c.pods)
