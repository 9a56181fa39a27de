"""The core operations behind the commands; the CLI only parses and renders."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.errors import GpulabError
from gpulab.profile.model import _dns_label

if TYPE_CHECKING:
    from gpulab.adapters.base import ContainerRuntime
    from gpulab.engine.step import Step
    from gpulab.profile.model import Profile

__all__ = ["connect_runtime", "lab_name", "plan_steps"]


def lab_name(profile: Profile, override: str | None) -> str:
    """The lab's name: `--name`, else the profile's; must be a DNS-1123 label."""
    from gpulab.errors import UsageError

    name = override or profile.name
    try:
        return _dns_label(name)
    except ValueError as err:
        raise UsageError(f"--name: {err}") from None


def connect_runtime(timeout: float = 10) -> ContainerRuntime:
    """The Docker engine, or HostError with what to do."""
    from gpulab.adapters.docker_runtime import connect

    return connect(timeout=timeout)


def plan_steps(
    profile: Profile, name: str | None, *, probe_host: bool
) -> tuple[list[Step], str]:
    """The steps `up` would run, and a note on host facts that could not be observed."""
    from gpulab.stacks import kamaji_hami

    lab = lab_name(profile, name)
    runtime: ContainerRuntime | None = None
    note = ""
    if probe_host:
        try:
            runtime = connect_runtime(timeout=3)
        except GpulabError as err:
            note = f"Docker not reachable ({err}); host-dependent values are shown as pending"
    facts = kamaji_hami.observe_host_facts(profile, runtime)
    if runtime is not None and facts.pool_error:
        note = f"MetalLB range pending: {facts.pool_error}"
    return kamaji_hami.build_steps(profile, lab, facts), note
