"""Every relative link in the user and developer docs points at a file that exists, and every
`#anchor` at a heading of that file (as GitHub makes anchors), so moving a doc cannot leave links
behind. Links inside code (fenced blocks, inline code) are not links. Generated reports
(docs/dev/mutation-report.md and .json, written by `nox -s mutation`) are left to their generator:
neither checked nor required to exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {ROOT / "docs" / "dev" / "mutation-report.md",
             ROOT / "docs" / "dev" / "mutation-report.json"}
DOCS = sorted({ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md",
               *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "dev").glob("*.md"),
               *(ROOT / "docs" / "dev" / "upstream-facts").glob("*.md")} - GENERATED)

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, `_` and
    `-` kept), spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = anchor(heading)
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: x, x-1, x-2
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def test_the_anchor_rule() -> None:
    assert anchor("Which Docker: DOCKER_HOST, DOCKER_CONTEXT, `docker context use`") == (
        "which-docker-docker_host-docker_context-docker-context-use")
    assert anchor("Kamaji's chart from git and its `kamaji-etcd`") == (
        "kamajis-chart-from-git-and-its-kamaji-etcd")
    assert anchor("2. `gpulab up`") == "2-gpulab-up"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, fragment = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if path in GENERATED:
            continue
        if not path.exists():
            broken.append(f"{target}: no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{target}: no heading with anchor #{fragment}")
    assert broken == [], f"{doc.relative_to(ROOT)}: broken links"
