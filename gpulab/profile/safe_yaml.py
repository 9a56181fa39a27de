"""Reading a profile file as a careful parser would: bounded, plain YAML, no surprises.

A profile is small, plain YAML. Everything else is refused before a value is built, each problem
with its line:

- files over MAX_BYTES, not UTF-8 (a byte-order mark, UTF-16, binary);
- nesting deeper than MAX_DEPTH, documents that expand (through aliases) to more than MAX_NODES
  values (an alias bomb would hang the parser's consumers, not PyYAML itself);
- explicit tags (`!!python/...`, `!!binary`, `!!int "x"`, ...): only the plain types;
- complex or non-string mapping keys, duplicate keys;
- YAML 1.1 spellings that read differently from what they look like: `yes`/`no`/`on`/`off`
  (booleans), `0644` (octal), `1_000`, `1:30` (sexagesimal). Quote them, or write the plain form.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Problem", "check_bytes", "compose", "decode"]

MAX_BYTES = 256 * 1024
MAX_DEPTH = 32
MAX_NODES = 20_000

Problem = tuple[int | None, str]  # (1-based line or None, message)

_YAML11_BOOL = re.compile(r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
_OCTAL = re.compile(r"^[-+]?0[0-9_]+$")
_UNDERSCORE_NUMBER = re.compile(r"^[-+]?[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?$")
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$")
_PLAIN_TAGS = {"tag:yaml.org,2002:" + name
               for name in ("str", "int", "float", "bool", "null", "map", "seq")}


def check_bytes(data: bytes) -> str:
    """'' when `data` may be a profile, else why not."""
    if len(data) > MAX_BYTES:
        return f"is {len(data)} bytes; a profile is at most {MAX_BYTES} bytes"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "is UTF-16 text; save it as UTF-8"
    if data.startswith(b"\xef\xbb\xbf"):
        return "starts with a byte-order mark; save it as UTF-8 without BOM"
    if b"\x00" in data:
        return "is not text (it contains NUL bytes)"
    return ""


def decode(data: bytes) -> tuple[str, str]:
    """(text, '') or ('', why not)."""
    problem = check_bytes(data)
    if problem:
        return "", problem
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as err:
        return "", f"is not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x})"


def _line(node_or_event: Any) -> int:
    return int(node_or_event.start_mark.line) + 1


def _scan_events(text: str) -> list[Problem]:
    """Depth, explicit tags and aliases, from the event stream (iterative: no recursion, so a
    deeply nested file cannot crash the check itself)."""
    problems: list[Problem] = []
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and not isinstance(event, yaml.DocumentStartEvent):
            problems.append((_line(event), f"explicit tag {tag} is not allowed: a profile is "
                                           "plain YAML (remove the tag)"))
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                problems.append((_line(event), f"nested deeper than {MAX_DEPTH} levels"))
                return problems
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return problems


def _trap(value: str) -> str:
    """The YAML 1.1 reading of a plain scalar that looks like something else, or ''."""
    if _YAML11_BOOL.match(value):
        return "a boolean in YAML 1.1 (write true/false, or quote it)"
    if _OCTAL.match(value) and value.strip("+-") not in ("0",):
        return "an octal number in YAML 1.1 (write the number without the leading 0, or quote it)"
    if _UNDERSCORE_NUMBER.match(value):
        return "a number with `_` separators (write it without them, or quote it)"
    if _SEXAGESIMAL.match(value):
        return "a base-60 number in YAML 1.1 (quote it)"
    return ""


def _walk(root: yaml.Node) -> list[Problem]:
    """Keys, YAML 1.1 traps and the expanded size, over the composed tree (iteratively)."""
    problems: list[Problem] = []
    visited = 0
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            problems.append((_line(root), f"expands to more than {MAX_NODES} values (YAML "
                                          "aliases?); a profile is small"))
            return problems
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    problems.append((_line(key), "a mapping key must be a plain name, not a "
                                                 "mapping or a list"))
                    continue
                if key.tag != "tag:yaml.org,2002:str":
                    problems.append((_line(key), f"key {key.value!r} must be a name (quote it)"))
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.ScalarNode):
            if node.tag not in _PLAIN_TAGS:
                problems.append((_line(node), f"{node.value!r} is read as {node.tag}; only "
                                              "plain strings, numbers, booleans and null"))
            elif not node.style:  # plain (unquoted) scalars only
                trap = _trap(str(node.value))
                if trap:
                    problems.append((_line(node), f"{node.value!r} is {trap}"))
    return problems


def compose(text: str) -> tuple[yaml.Node | None, list[Problem]]:
    """The document's node tree and every problem found; (None, problems) when it is unsafe to
    go further. YAML syntax errors are left to the caller (yaml.YAMLError)."""
    problems = _scan_events(text)
    if problems:
        return None, problems
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None:
        return None, []
    problems = _walk(root)
    return (None if problems else root), problems
