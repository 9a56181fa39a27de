"""`gpulab verify CHECK --help`, derived from the checks' docs: what each check proves, the
recording fields it reads, how it fails (docs/checks.md for kamaji-hami's TC-0x,
docs/vcluster-kai.md for vcluster-kai's KAI-0x; the sections tests/*/test_contract.py hold to the
code). The docs are not shipped, so the text is kept in gpulab/cli/verify_checks.json;
`python -m tests.check_help` rewrites it, and tests/unit/test_verify_commands.py fails when it
is not what the docs say now.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpulab import stacks
from tests.contracts import DOCS, documented

TARGET = Path(__file__).parents[1] / "gpulab" / "cli" / "verify_checks.json"
DOC_OF_STACK = {"kamaji-hami": "checks.md", "vcluster-kai": "vcluster-kai.md"}


def _plain(markdown: str) -> str:
    """One paragraph of terminal text: no emphasis, no backticks, whitespace collapsed."""
    text = markdown.replace("**", "").replace("`", "")
    text = re.sub(r"(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", text)
    return " ".join(text.split())


def _reads(doc: str, check: str, section: str) -> str:
    contract = documented(doc, check)

    def ordered(row: str, names: set[str]) -> str:
        line = re.search(rf"^\| {row} \|(.*)\|$", section, re.M)
        assert line is not None
        return ", ".join(sorted(names, key=line.group(1).index)) or "none"

    evidence = ordered("evidence", contract["evidence"])
    diagnostics = ordered("diagnostics", contract["diagnostics"])
    more = "nothing else" if diagnostics == "none" else f"and {diagnostics} only to explain a cause"
    return f"Reads the observed fields {evidence} as evidence, {more}."


def check_help(stack: str, check: str) -> dict[str, str]:
    """One check's title, proves, reads and fails text, from its docs section."""
    doc = DOC_OF_STACK[stack]
    text = (DOCS / doc).read_text(encoding="utf-8")
    match = re.search(rf"^### {check} (.*?)$(.*?)(?=^### |^## |\Z)", text, re.S | re.M)
    assert match, f"docs/{doc} has no section ### {check}"
    title, section = match.group(1).strip(), match.group(2)
    prose = section.split("**Contract**")[0]
    proves = prose.find("**Proves**")
    fails = prose.find("**Fails")
    assert 0 <= proves < fails, f"docs/{doc} {check}: no **Proves** ... **Fails** paragraph"
    return {"id": check, "stack": stack, "title": title,
            "proves": _plain(prose[proves:fails]), "reads": _reads(doc, check, section),
            "fails": _plain(prose[fails:])}


def generated() -> str:
    """The file's text: every check of every stack, in the registry's order."""
    rows = [check_help(name, check) for name in stacks.STACKS
            for check in stacks.for_name(name).check_ids()]
    return json.dumps(rows, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    TARGET.write_text(generated(), encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
