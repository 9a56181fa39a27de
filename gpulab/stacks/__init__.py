"""The stack registry: the one place that lists gpulab's stacks.

A stack is a package `gpulab/stacks/<name>/` whose `__init__` offers the `Stack` interface below:
`PROFILE` (its profile model), `cluster_needs`, `build_steps`, `verify_previews`, the live
`run_checks`, `parse_checks`/`replay`/`write_recording` for `verify --tc/--replay/--record`, and
`lab_status`/`status_tables` for `gpulab status`. The CLI and core dispatch through `for_name` /
`for_profile`; adding a stack is one package plus one line in `STACKS`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, cast

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from rich.table import Table

    from gpulab.adapters.base import ContainerRuntime, KubeGateway
    from gpulab.engine.step import Step
    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile
    from gpulab.providers.base import ClusterNeeds, ExistingNeeds, LabCluster, ManagementRow
    from gpulab.verify.report import VerifyReport

__all__ = [
    "INTERFACE",
    "RECORDING_DEFAULT_STACK",
    "STACKS",
    "Stack",
    "for_name",
    "for_profile",
    "lazy_interface",
    "load_profile",
    "names",
    "parse_profile",
    "profile_models",
]

# stack name (a profile's `stack` field) → its package
STACKS: dict[str, str] = {
    "kamaji-hami": "gpulab.stacks.kamaji_hami",
    "vcluster-kai": "gpulab.stacks.vcluster_kai",
}
# Recordings whose manifest names no stack were made by the first stack, before there were two.
RECORDING_DEFAULT_STACK = "kamaji-hami"


class Stack(Protocol):
    """What a stack package offers; its functions take that stack's own profile type."""

    PROFILE: type[LabProfile]

    def build_steps(self, profile: Any, lab: str, facts: Any) -> list[Step]: ...

    def verify_previews(self, profile: Any) -> list[Step]: ...

    def cluster_needs(self, profile: Any) -> ClusterNeeds: ...

    def existing_needs(self, profile: Any, lab: str, owned_before: Any) -> ExistingNeeds: ...

    def existing_problems(self, profile: Any, facts: Any) -> list[str]: ...

    def join_commands(self, profile: Any, lab: str, member: str, *, node: str | None,
                      ttl_seconds: int, kube: Any) -> str: ...

    def run_checks(
        self,
        profile: Any,
        lab: str,
        folder: Path,
        *,
        checks: list[str] | None,
        keep: bool,
        progress: Callable[[str, str], None] | None,
        reach: Callable[[Path], Path] | None = None,
        cluster: LabCluster | None = None,
    ) -> VerifyReport: ...

    def parse_checks(self, value: str | None) -> list[str] | None: ...

    def check_ids(self) -> list[str]: ...

    def replay(self, directory: Path, checks: list[str] | None, profile: Any | None = None
               ) -> tuple[VerifyReport, Any]: ...

    def write_recording(self, directory: Path, report: VerifyReport, profile: Any) -> Path: ...

    def lab_status(
        self, lab: str, runtime: ContainerRuntime | None, profile: Any,
        kube: Callable[[Path], KubeGateway], management: ManagementRow,
    ) -> dict[str, Any]: ...

    def status_tables(self, info: dict[str, Any]) -> list[Table]: ...


# Where a stack package finds each interface name: (its module, attribute); PROFILE is per stack.
INTERFACE: dict[str, tuple[str, str]] = {
    "build_steps": ("steps", "build_steps"),
    "verify_previews": ("steps", "verify_previews"),
    "cluster_needs": ("render", "cluster_needs"),
    "existing_needs": ("steps", "existing_needs"),
    "existing_problems": ("steps", "existing_problems"),
    "join_commands": ("steps", "join_commands"),
    "run_checks": ("run", "run_checks"),
    "parse_checks": ("run", "parse_checks"),
    "check_ids": ("run", "check_ids"),
    "replay": ("run", "replay"),
    "write_recording": ("run", "write_recording"),
    "lab_status": ("status", "lab_status"),
    "status_tables": ("status", "status_tables"),
}


def lazy_interface(package: str, profile_class: str) -> Callable[[str], Any]:
    """A stack package's module `__getattr__`: each interface name is imported from the
    package's module on first use, so loading a profile imports only `profile.py`."""
    table = {"PROFILE": ("profile", profile_class), **INTERFACE}

    def resolve(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = table[name]
        return getattr(importlib.import_module(f"{package}.{module}"), attribute)

    return resolve


def names() -> list[str]:
    """The stacks a profile can name."""
    return list(STACKS)


def for_name(stack: str) -> Stack:
    """The package of a stack name such as `kamaji-hami` (UsageError for an unknown one)."""
    package = STACKS.get(stack)
    if package is None:
        raise UsageError(f"unknown stack '{stack}'", hint=f"known: {', '.join(STACKS)}")
    return cast("Stack", importlib.import_module(package))


def for_profile(profile: LabProfile) -> Stack:
    """The stack package named by the profile's `stack` field (validated by the loader)."""
    return for_name(profile.stack)


def profile_models() -> dict[str, type[LabProfile]]:
    """Stack name → its profile model, for the loader."""
    return {name: for_name(name).PROFILE for name in STACKS}


def load_profile(ref: str | None) -> LoadedProfile:
    """A built-in profile name or a file path, validated against its stack's model."""
    from gpulab.profile.load import load_profile as load

    return load(ref, profile_models())


def parse_profile(text: str, source: str = "<profile>") -> LabProfile:
    """Profile YAML text validated against its stack's model (ProfileError with every problem)."""
    from gpulab.profile.load import parse_profile as parse

    return parse(text, profile_models(), source)
