"""What a check reads, found by running it: the state it is given records every field accessed.

docs/checks.md and docs/vcluster-kai.md list, per check, the recording fields its verdict rests
on and those it reads only to explain a cause; the contract tests compare those lists with what
the checks really read over the whole adversarial corpus, and require a corpus variant breaking
each evidence field.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, TypeVar

DOCS = Path(__file__).parents[1] / "docs"

T = TypeVar("T")

# Read by every check through `prepare` (a crashed observation is `error` for all) or only to
# find the member, or the lab's shape every check reads to know its workers (`lab` names the
# profile's; kamaji-hami's `workers` "machines": the nodes a tenant lists): not part of any one
# check's contract.
GENERIC = frozenset({"internal_error", "tenant", "team", "tenants", "teams", "lab", "checks", "host",
                     "observed_at", "seconds", "workers"})


def tracking(obj: T, seen: set[str], prefix: str = "") -> T:
    """A copy of the frozen dataclass `obj` that adds `prefix + field` to `seen` on every read
    of one of its fields."""
    cls = type(obj)
    names = {f.name for f in dataclasses.fields(obj)}  # type: ignore[arg-type]

    class Tracking(cls):  # type: ignore[valid-type,misc]
        def __getattribute__(self, name: str) -> Any:
            if name in names:
                seen.add(prefix + name)
            return super().__getattribute__(name)

    Tracking.__name__ = cls.__name__
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]
    return Tracking(**values)  # type: ignore[no-any-return]


def breaks_alone(field: str, variant: str, changed: set[str],
                 relations: dict[str, set[str]]) -> bool:
    """`variant` breaks `field` alone: it changed that field only, or it is a failed read (the
    `..._error` field set, the data it would have filled missing), or it breaks a relation
    between a manifest field and the member state (`relations`: field -> variant names)."""
    if variant in relations.get(field, ()):
        return True
    return field in changed and (changed == {field} or field.endswith("_error"))


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Top-level keys whose values differ (a variant's broken fields)."""
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def documented(doc: str, check: str) -> dict[str, Any]:
    """The contract of `check` in docs/`doc`: its evidence and diagnostics fields (the
    backticked names of those table rows) and its broken-fact rows (name, verdict, phrase)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    match = re.search(rf"^### {check}\b.*?(?=^### |^## |\Z)", text, re.S | re.M)
    assert match, f"docs/{doc} has no section ### {check}"
    section = match.group(0)

    def names(row: str) -> set[str]:
        line = re.search(rf"^\| {row} \|(.*)\|$", section, re.M)
        assert line, f"docs/{doc} {check}: no '| {row} |' row"
        return set(re.findall(r"`([a-z_.]+)`", line.group(1)))

    broken = [tuple(cell.strip().strip("`").replace("\\|", "|") for cell in m.groups())
              for m in re.finditer(r"^\| (?!broken fact)(?!---)([^|`][^|]*?) \| (fail|error) \| "
                                   r"(.+?) \|$", section, re.M)]
    return {"evidence": names("evidence"), "diagnostics": names("diagnostics"),
            "broken": sorted(broken)}
