"""Stacks: one module per lab kind, each turning a profile into a plan of steps.

A stack module provides `observe_host_facts(profile, runtime)`, `build_steps(profile, lab,
facts)`, `verify_previews(profile)` (what `verify` creates, listed by `plan`),
`run_checks(profile, lab, folder, *, checks, keep, progress)` (the live `verify`), and for
`verify --tc/--record/--replay` `parse_checks`, `write_recording` and `replay`; optionally
`lab_status` (else `core.status` describes the lab). The profile's `stack` field picks the module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime
    from gpulab.checks.report import VerifyReport
    from gpulab.engine.step import Step

__all__ = ["Stack", "for_name", "for_profile"]


class Stack(Protocol):
    def observe_host_facts(self, profile: Any, runtime: ContainerRuntime | None) -> Any: ...

    def build_steps(self, profile: Any, lab: str, facts: Any) -> list[Step]: ...

    def verify_previews(self, profile: Any) -> list[Step]: ...

    def run_checks(
        self,
        profile: Any,
        lab: str,
        folder: Path,
        *,
        checks: list[str] | None,
        keep: bool,
        progress: Callable[[str, str], None] | None,
    ) -> VerifyReport: ...

    def parse_checks(self, value: str | None) -> list[str] | None: ...

    def replay(self, directory: Path, checks: list[str] | None) -> tuple[VerifyReport, Any]: ...

    def write_recording(self, directory: Path, report: VerifyReport, profile: Any) -> Path: ...


def for_name(stack: str) -> Stack:
    """The stack module of a stack name such as `kamaji-hami`."""
    module = importlib.import_module(f"gpulab.stacks.{stack.replace('-', '_')}")
    return cast("Stack", module)


def for_profile(profile: Any) -> Stack:
    """The stack module named by the profile's `stack` field (validated by the loader)."""
    return for_name(profile.stack)
