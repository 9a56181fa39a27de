"""The eight acceptance checks in TC order, and what each needs observed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from gpulab.checks import (
    tc01_control_planes,
    tc02_workers,
    tc03_gpu_admission,
    tc04_gpu_inventory,
    tc05_sharing,
    tc06_core_overcommit,
    tc07_memory_overcommit,
    tc08_isolation,
)
from gpulab.errors import UsageError

if TYPE_CHECKING:
    from gpulab.checks.result import CheckResult
    from gpulab.checks.state import LabState
    from gpulab.profile.model import KamajiHamiProfile

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "Check",
    "CheckFn",
    "parse_ids",
    "parse_tc",
    "pods_needed",
    "select",
    "select_from",
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


_SHARE = ("gpu-share-1", "gpu-share-2", "gpu-share-3")

CHECKS: tuple[Check, ...] = (
    Check("TC-01", "control planes", tc01_control_planes.check),
    Check("TC-02", "workers", tc02_workers.check),
    Check("TC-03", "GPU admission path", tc03_gpu_admission.check, ("gpu-share-1",)),
    Check("TC-04", "GPU inventory", tc04_gpu_inventory.check),
    Check("TC-05", "sharing", tc05_sharing.check, _SHARE),
    Check("TC-06", "core over-commit", tc06_core_overcommit.check, (*_SHARE, "gpu-share-4")),
    Check("TC-07", "memory over-commit", tc07_memory_overcommit.check, ("gpu-mem-big",)),
    Check("TC-08", "isolation", tc08_isolation.check, ("gpu-share-1",)),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


C = TypeVar("C", bound=_Identified)


def select_from(
    checks: tuple[C, ...], ids: Iterable[str] | None, where: str = ""
) -> tuple[C, ...]:
    """The `checks` with these ids in their order (all when None); unknown ids or an empty
    selection are a UsageError naming the known ids (`where` says for which stack)."""
    if ids is None:
        return checks
    known = [c.id for c in checks]
    wanted = {i.strip().upper() for i in ids if i.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise UsageError(f"unknown check(s) {', '.join(unknown)}{where}",
                         hint=f"known: {', '.join(known)}")
    if not wanted:
        raise UsageError("no check selected", hint=f"known: {', '.join(known)}")
    return tuple(c for c in checks if c.id in wanted)


def parse_ids(
    value: str | None, prefix: str, checks: tuple[C, ...], where: str = ""
) -> tuple[str, ...] | None:
    """`--tc` text → check ids in order: `PREFIX-05,prefix-06`, and `5`/`05` for PREFIX-05;
    None (all checks) when the flag is absent."""
    if value is None:
        return None
    ids = []
    for raw in value.split(","):
        item = raw.strip().upper()
        if item.isdigit():
            item = f"{prefix}-{int(item):02d}"
        if item:
            ids.append(item)
    return tuple(c.id for c in select_from(checks, ids, where))


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
