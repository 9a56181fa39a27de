"""The step interface: observe (`satisfied`) before acting (`apply`); describe for `plan`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Artifact", "Step", "StepContext"]


@dataclass(frozen=True)
class Artifact:
    """One thing a step creates or changes, as `plan` shows it.

    kind: kind-cluster | helm-release | object | node-patch | container | file | manifest
    """

    kind: str
    name: str
    body: Any = None
    cluster: str = "management"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "cluster": self.cluster, "body": self.body}


@dataclass
class StepContext:
    """What every step receives: the lab's identity, adapters and a place to say what it does.

    `adapters` is whatever the plan's steps need (see gpulab.stacks); `note` reports a detail
    (shown with --verbose, kept in --json events); `waiting` says what a step waits for and
    for how long at most (shown without --verbose: a long wait is not a hang); `last_seen`
    records the latest observation of something being waited for, so a timeout can say what
    it last saw.
    """

    lab: str
    adapters: Any
    note: Callable[[str], None] = field(default=lambda _msg: None)
    waiting: Callable[[str, float], None] = field(default=lambda _what, _seconds: None)
    last_seen: dict[str, str] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep
    timeout_scale: float = 1.0  # tests shrink every wait; slow hosts may stretch them

    def observe(self, step: str, what: str) -> None:
        self.last_seen[step] = what


class Step(Protocol):
    """A small, idempotent unit of `up`.

    name: stable id, `management/cert-manager` or `<tenant>/join`;
    title: the status line; requires: names of steps that must finish first.
    """

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def requires(self) -> tuple[str, ...]: ...

    def describe(self) -> list[Artifact]:
        """What the step creates, for `gpulab plan` (no I/O)."""
        ...

    def satisfied(self, ctx: StepContext) -> bool:
        """Observe: True when what `apply` would produce already exists and is healthy."""
        ...

    def apply(self, ctx: StepContext) -> None:
        """Act: create or repair; raise GpulabError subclasses with context on failure."""
        ...
