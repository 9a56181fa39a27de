"""Rewrite the broken-fact tables of docs/checks.md and docs/vcluster-kai.md from the corpora.

    python -m tests.contract_docs

Only the tables between a check's `| broken fact |` header and the next blank line are
rewritten; the evidence and diagnostics rows are written by hand (the contract tests check
them against what the checks read).
"""

from __future__ import annotations

import re
from typing import Any

from tests.contracts import DOCS


def broken_table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| broken fact | verdict | the reason says |", "| --- | --- | --- |"]
    lines += [f"| {name} | {verdict} | `{phrase.replace('|', chr(92) + '|')}` |"
              for name, verdict, phrase in sorted(rows)]
    return "\n".join(lines) + "\n"


def rewrite(doc: str, variants: list[tuple[Any, ...]], checks: tuple[str, ...]) -> None:
    """Each variant is (name, ..., {check: verdict}, phrase)."""
    path = DOCS / doc
    text = path.read_text(encoding="utf-8")
    for check in checks:
        rows = [(v[0], v[-2][check], v[-1]) for v in variants if check in v[-2]]
        section = re.search(rf"^### {check}\b.*?(?=^### |^## |\Z)", text, re.S | re.M)
        assert section, f"docs/{doc} has no section ### {check}"
        table = re.search(r"^\| broken fact \|.*?\n(?=\n|\Z)", section.group(0), re.S | re.M)
        assert table, f"docs/{doc} {check}: no broken-fact table"
        start = section.start() + table.start()
        end = section.start() + table.end()
        text = text[:start] + broken_table(rows) + text[end:]
    path.write_text(text, encoding="utf-8")


def main() -> None:
    from gpulab.stacks.kamaji_hami.checks.registry import CHECK_IDS
    from tests.kamaji_hami.test_contract import _variants

    rewrite("checks.md", _variants(), CHECK_IDS)
    from gpulab.stacks.vcluster_kai.checks.registry import CHECK_IDS as KAI_IDS
    from tests.vcluster_kai.test_contract import _variants as kai_variants

    rewrite("vcluster-kai.md", kai_variants(), KAI_IDS)


if __name__ == "__main__":
    main()
