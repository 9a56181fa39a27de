"""Decode YAML into Go types read from Go source, with gopkg.in/yaml.v2's rules: what a Go program
at a pinned tag would make of a document gpulab (or a chart) hands it.

It reads the `type X struct {...}` and `type X Y` declarations of the given files (only the
forms the pinned sources use: named, pointer, slice, map and package-qualified types; fields with
a `yaml:"..."` tag, `,inline` embedding), then walks a document the way yaml.v2 v2.4.0's
`Unmarshal` (non-strict) does (decode.go, `d.unmarshal` → `scalar`/`sequence`/`mapping`):
- unknown mapping keys are ignored; a null leaves the zero value;
- a string field takes any scalar (yaml.v2 sets the node's text), but not a mapping or sequence;
- an integer field takes an integer that fits its width (a float or a string is refused); a
  float field takes an integer or a float; a bool field takes a YAML 1.1 bool;
- a slice needs a sequence, a struct or map needs a mapping.
Every mismatch is collected as yaml.v2 words it ("cannot unmarshal !!map into
[]ascend.VNPUConfig"), as its `*yaml.TypeError` does, and the first is what the program sees.

Nothing here imports gpulab: the point is a decoder that does not share gpulab's assumptions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\n(.*?)^\}", re.S | re.M)
_ALIAS = re.compile(r"^type\s+(\w+)\s+([\w.\[\]*]+)\s*$", re.M)
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([\w.\[\]*]+)\s*`[^`]*yaml:\"([^\"]*)\"[^`]*`", re.M)

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "int": (-(2**63), 2**63 - 1), "uint": (0, 2**64 - 1),
    "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_BUILTIN = {"string", "bool", "float32", "float64", "any", "interface{}", *_INT_RANGES}


@dataclass(frozen=True)
class GoField:
    name: str
    go_type: str
    key: str
    inline: bool


@dataclass
class GoTypes:
    """Struct and named types of a set of Go files, keyed `package.Type`."""

    structs: dict[str, list[GoField]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, files: list[Path]) -> GoTypes:
        types = cls()
        for path in files:
            text = path.read_text(encoding="utf-8")
            package = re.search(r"^package\s+(\w+)", text, re.M)
            assert package, f"{path}: no package clause"
            pkg = package.group(1)
            for match in _STRUCT.finditer(text):
                fields = []
                for line in match.group(2).splitlines():
                    found = _FIELD.match(line)
                    if not found:
                        continue
                    name, go_type, tag = found.groups()
                    key, _, options = tag.partition(",")
                    fields.append(GoField(name or go_type, _qualify(go_type, pkg), key.strip(),
                                          "inline" in options.split(",")))
                types.structs[f"{pkg}.{match.group(1)}"] = fields
            for match in _ALIAS.finditer(text):
                if match.group(2) != "struct":
                    types.aliases[f"{pkg}.{match.group(1)}"] = _qualify(match.group(2), pkg)
        return types

    def decode(self, document: Any, go_type: str) -> list[str]:
        """yaml.v2's type errors for `document` decoded into `go_type` (empty: it decodes)."""
        errors: list[str] = []
        self._value(document, go_type, errors)
        return errors

    def _value(self, value: Any, go_type: str, errors: list[str]) -> None:
        if value is None:
            return  # a null leaves the zero value
        if go_type.startswith("*"):
            self._value(value, go_type[1:], errors)
            return
        if go_type.startswith("[]"):
            if not isinstance(value, list):
                errors.append(_refused(value, go_type))
                return
            for item in value:
                self._value(item, go_type[2:], errors)
            return
        if go_type.startswith("map["):
            element = go_type[go_type.index("]") + 1:]
            if not isinstance(value, dict):
                errors.append(_refused(value, go_type))
                return
            for item in value.values():
                self._value(item, element, errors)
            return
        if go_type in self.aliases:
            self._value(value, self.aliases[go_type], errors)
            return
        if go_type in self.structs:
            if not isinstance(value, dict):
                errors.append(_refused(value, go_type))
                return
            self._struct(value, go_type, errors)
            return
        self._scalar(value, go_type, errors)

    def _struct(self, value: dict[Any, Any], go_type: str, errors: list[str]) -> None:
        for go_field in self.structs[go_type]:
            if go_field.inline:
                self._struct(value, go_field.go_type, errors)
                continue
            key = go_field.key or go_field.name.lower()  # yaml.v2: the lowercased field name
            if key in value:
                self._value(value[key], go_field.go_type, errors)

    def _scalar(self, value: Any, go_type: str, errors: list[str]) -> None:
        if go_type not in _BUILTIN:
            raise AssertionError(f"type {go_type} is not declared in the files read")
        if isinstance(value, (dict, list)):
            if go_type not in ("any", "interface{}"):
                errors.append(_refused(value, go_type))
            return
        if go_type == "string":
            return  # yaml.v2 decode.go scalar(): a resolved scalar sets the node's text
        if go_type == "bool":
            if not isinstance(value, bool):
                errors.append(_refused(value, go_type))
            return
        if go_type.startswith("float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                errors.append(_refused(value, go_type))
            return
        if go_type in _INT_RANGES:
            low, high = _INT_RANGES[go_type]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                errors.append(_refused(value, go_type))


def _qualify(go_type: str, package: str) -> str:
    """`Foo` in package p → `p.Foo`; `[]*bar.Baz` stays qualified; builtins stay bare."""
    prefix = re.match(r"^((?:\*|\[\]|map\[\w+\])*)", go_type)
    assert prefix is not None
    head, rest = prefix.group(1), go_type[len(prefix.group(1)):]
    if rest in _BUILTIN or "." in rest:
        return head + rest
    return f"{head}{package}.{rest}"


def _tag(value: Any) -> str:
    if isinstance(value, dict):
        return "!!map"
    if isinstance(value, list):
        return "!!seq"
    if isinstance(value, bool):
        return "!!bool"
    if isinstance(value, int):
        return "!!int"
    if isinstance(value, float):
        return "!!float"
    return "!!str"


def _refused(value: Any, go_type: str) -> str:
    shown = go_type.rsplit("/", 1)[-1]
    if _tag(value) in ("!!map", "!!seq"):
        return f"cannot unmarshal {_tag(value)} into {shown}"
    return f"cannot unmarshal {_tag(value)} `{value}` into {shown}"
