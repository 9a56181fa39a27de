"""Label selectors (equality and set-based), matched against an object's labels.
"""


from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping




_REQUIREMENT = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<nkey>[^\s,!=()]+)"
    r"|(?P<skey>[^\s,!=()]+)\s*(?P<setop>in|notin)\s*\((?P<values>[^)]*)\)"
    r"|(?P<key>[^\s,!=()]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,!=()]*))?)\s*(?:,|$)"
)


def label_selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Kubernetes label-selector semantics (=, ==, !=, in, notin, key, !key).

    Used to filter list results client-side as well: kmock ignores selectors, and filtering twice
    is harmless against a real API server. A selector this parser cannot read matches everything
    (the server has already filtered, or refused it).
    """
    pos, text = 0, selector.strip()
    while pos < len(text):
        match = _REQUIREMENT.match(text, pos)
        if match is None or match.end() == pos:
            return True
        pos = match.end()
        if match["nkey"]:
            if match["nkey"] in labels:
                return False
        elif match["skey"]:
            values = {v.strip() for v in match["values"].split(",") if v.strip()}
            present = match["skey"] in labels and labels[match["skey"]] in values
            if present != (match["setop"] == "in"):
                return False
        elif match["op"] in ("=", "=="):
            if labels.get(match["key"]) != match["value"]:
                return False
        elif match["op"] == "!=":
            if labels.get(match["key"]) == match["value"]:
                return False
        elif match["key"] not in labels:
            return False
    return True
