"""A check's verdict is a value (nox's `Result`), never an exception."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["LOOKS_FURTHER", "STATUSES", "CheckResult", "Status", "summarize_problems"]

Status = Literal["pass", "fail", "error", "skip"]

# A reason that already says where to look: a command, or the check that explains it.
LOOKS_FURTHER = re.compile(
    r"kubectl |docker |gpulab |journalctl|helm |\b(see )?(TC|KAI)-0\d\)|see (TC|KAI)-0\d")
STATUSES: tuple[Status, ...] = ("pass", "fail", "error", "skip")


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check for one tenant.

    status: pass | fail (the lab lacks the property) | error (verify could not find out: the
      observation is missing or broke) | skip (the check does not apply, e.g. no GPUs).
    evidence: what was seen, for every status (what a pass rests on, or the facts of a failure).
    reason: for fail/error/skip, what is wrong and what to do about it; empty on pass.
    seconds: time spent observing for this check (recorded, so a replay reports the same).
    """

    id: str
    tenant: str
    status: Status
    evidence: str = ""
    reason: str = ""
    seconds: float = 0.0
    title: str = ""

    def __bool__(self) -> bool:
        """True for pass and skip, as nox's `Result`."""
        return self.status in ("pass", "skip")

    @property
    def detail(self) -> str:
        """The one text a table shows: the evidence of a pass, else the reason."""
        return self.evidence if self.status == "pass" else (self.reason or self.evidence)

    def with_meta(self, *, title: str, seconds: float) -> CheckResult:
        return replace(self, title=title, seconds=seconds)

    def with_next_step(self, command: str) -> CheckResult:
        """A failure whose reason gives no command to look further gets `command` appended
        (the check's own `kubectl ...`); other results are unchanged."""
        if self.status != "fail" or not command or LOOKS_FURTHER.search(self.reason):
            return self
        return replace(self, reason=f"{self.reason}; to look further: {command}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "tenant": self.tenant,
            "status": self.status,
            "evidence": self.evidence,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
        }


def summarize_problems(problems: list[str], limit: int = 3) -> str:
    """Join the first `limit` problems; say how many more there were."""
    shown = "; ".join(problems[:limit])
    more = len(problems) - limit
    return f"{shown} (+{more} more)" if more > 0 else shown
