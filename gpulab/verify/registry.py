"""Selecting a stack's checks by id (`verify --tc`): shared by every stack's registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["parse_ids", "select_from"]


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
