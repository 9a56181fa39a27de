"""gpulab's Helm post-renderer: the lab's labels on every object a chart renders.

`add_labels` is the pure part: it takes the YAML stream helm renders and returns it with
`metadata.labels` of every object (each item of a `*List`) holding the given labels, and nothing
else changed. The text is edited in place (the keys are written before the first key of the
mapping they go into), so comments, `---` separators, `# Source:` lines, quoting, key order and
scalars such as `on`, `0755` or very long strings stay byte for byte; only a document whose
metadata or labels are YAML aliases, or that an in-place edit cannot express, is written again
from its parsed nodes (scalars keep their text and style, comments of that document go). Every
result is parsed again and compared with what was asked before it is returned.

Only `metadata.labels`: never selectors nor pod templates (`spec.template.metadata.labels`).
A Job's pod template is immutable once created, and a changed template restarts every pod of a
Deployment, DaemonSet or StatefulSet; a chart's selectors must keep matching those templates.
Pods are reached through their owners, which carry the labels.

`python -m gpulab.helm_labels KEY=VALUE...` (helm runs it as its post-renderer: the adapter
writes the small program helm starts, gpulab.adapters.helm) reads stdin, writes stdout, and on
bad input exits 1 with one line on stderr (and in `--error-file`, since helm 4 does not show a
post-renderer's stderr: internal/plugin/runtime_subprocess.go:171-190 at v4.1.4), so helm stops.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["LabelError", "add_labels", "check_labels", "main"]

STR = "tag:yaml.org,2002:str"
NULL = "tag:yaml.org,2002:null"
MAP = "tag:yaml.org,2002:map"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# Kubernetes label syntax (k8s.io/apimachinery validation: IsQualifiedName, IsValidLabelValue).
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")


class LabelError(ValueError):
    """The stream cannot be labelled (not YAML, not Kubernetes objects); one line."""


class _Unsupported(Exception):
    """An in-place edit cannot express this change; the document is written again instead."""


def check_labels(labels: Mapping[str, str]) -> None:
    """LabelError unless every key and value is a valid Kubernetes label (and there is one)."""
    if not labels:
        raise LabelError("no labels to add")
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if not _KEY.match(key) or len(prefix) > 253 or len(name) > 63:
            raise LabelError(f"{key!r} is not a Kubernetes label key")
        if not _VALUE.match(value) or len(value) > 63:
            raise LabelError(f"{value!r} (label {key}) is not a Kubernetes label value")


# --------------------------------------------------------------------------- nodes


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == NULL


def _where(node: Node) -> str:
    return f"line {node.start_mark.line + 1}"


def _pair(mapping: MappingNode, key: str) -> tuple[Node, Node] | None:
    """The (key, value) nodes of `key` in `mapping`; LabelError when it is there twice."""
    found = [p for p in mapping.value if isinstance(p[0], ScalarNode) and p[0].tag == STR
             and p[0].value == key]
    if len(found) > 1:
        raise LabelError(f"key {key!r} appears twice in the mapping at {_where(mapping)}")
    return found[0] if found else None


def _objects(node: MappingNode) -> list[MappingNode]:
    """The objects a document stands for. Kubernetes decodes a document with a top-level
    `items` key, whatever its kind, as a list of its items (apimachinery
    pkg/apis/meta/v1/unstructured/helpers.go:433-452 at v0.35.1 and v0.34.0, the versions helm
    v4.1.4 and v3.19.2 build with), and helm creates those items; else the document itself."""
    items = _pair(node, "items")
    if items is None:
        return [node]
    if _is_null(items[1]):
        return []
    if not isinstance(items[1], SequenceNode):
        raise LabelError(f"the items of the list at {_where(node)} are not a list")
    for item in items[1].value:
        if not isinstance(item, MappingNode):
            raise LabelError(f"an item of the list at {_where(item)} is not an object")
    return list(items[1].value)


def _has_aliases(root: Node) -> bool:
    """Whether a node is reached twice (a YAML alias): such a document is never canonicalised
    by expansion (an alias bomb stays linear) and its shared nodes are not edited in place."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, MappingNode):
            todo.extend(n for pair in node.value for n in pair)
        elif isinstance(node, SequenceNode):
            todo.extend(node.value)
    return False


def _canon(node: Node) -> Any:
    """What a node means (tag and value; not style, order of keys, comments)."""
    if isinstance(node, ScalarNode):
        return ("s", node.tag, node.value)
    if isinstance(node, SequenceNode):
        return ("q", node.tag, tuple(_canon(n) for n in node.value))
    pairs = [(_canon(k), _canon(v)) for k, v in node.value]
    return ("m", node.tag, tuple(sorted(pairs, key=repr)))


def _scalar(value: str) -> ScalarNode:
    return ScalarNode(STR, value, style='"')


def _copy(node: Node) -> Node:
    """A scalar copied (so a rewritten document does not anchor it); other nodes as they are."""
    if isinstance(node, ScalarNode):
        return ScalarNode(node.tag, node.value, style=node.style)
    return node


def _mapping_of(parent: MappingNode, key: str) -> MappingNode:
    """A fresh copy of the mapping under `key` (created when absent or null) put in `parent`'s
    place, so a node an alias shares elsewhere is never changed there."""
    pair = _pair(parent, key)
    if pair is None:
        fresh = MappingNode(MAP, [], flow_style=False)
        parent.value.append((_scalar(key), fresh))
        return fresh
    if _is_null(pair[1]):
        fresh = MappingNode(MAP, [], flow_style=False)
    elif isinstance(pair[1], MappingNode):
        fresh = MappingNode(pair[1].tag, [(_copy(k), _copy(v)) for k, v in pair[1].value],
                            flow_style=pair[1].flow_style)
    else:
        raise LabelError(f"{key} at {_where(pair[1])} is not a mapping")
    parent.value[parent.value.index(pair)] = (pair[0], fresh)
    return fresh


def _label_nodes(obj: MappingNode, labels: Mapping[str, str]) -> None:
    """The labels set on the object's nodes (what the text must mean once edited)."""
    mapping = _mapping_of(_mapping_of(obj, "metadata"), "labels")
    for key, value in labels.items():
        pair = _pair(mapping, key)
        if pair is None:
            mapping.value.append((_scalar(key), _scalar(value)))
        else:
            mapping.value[mapping.value.index(pair)] = (pair[0], _scalar(value))


# --------------------------------------------------------------------------- text edits

Edit = tuple[int, int, str]  # replace text[start:end] with the string


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


_PLAIN_KEY = re.compile(r"^[A-Za-z][-A-Za-z0-9_./]*$")
_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _key(text: str) -> str:
    """A key as written: plain when every YAML reader takes it as that string (a label key such
    as `gpulab.dev/lab`), else double-quoted."""
    plain = _PLAIN_KEY.match(text) and text.lower() not in _YAML11_WORDS
    return text if plain else _quoted(text)


def _flow(entries: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{_key(k)}: {_flow(v) if isinstance(v, Mapping) else _quoted(v)}"
                           for k, v in entries.items()) + "}"


def _block(entries: Mapping[str, Any], column: int) -> str:
    """Lines to write where a block mapping's first key starts (at `column`): the new keys, then
    that column's indentation again for the key that was there."""
    out = []
    for key, value in entries.items():
        if isinstance(value, Mapping):
            out.append(f"{_key(key)}:\n" + " " * (column + 2)
                       + _block(value, column + 2).rstrip(" ").removesuffix("\n"))
        else:
            out.append(f"{_key(key)}: {_quoted(value)}")
    return "".join(line + "\n" + " " * column for line in out)


def _insert(text: str, mapping: MappingNode, entries: Mapping[str, Any]) -> Edit:
    """An edit adding `entries` to `mapping` (flow: after its `{`; block: before its first
    key, at that key's column)."""
    start = mapping.start_mark.index
    if mapping.flow_style:
        if text[start:start + 1] != "{":
            raise _Unsupported
        rest = ", " if mapping.value else ""
        return (start + 1, start + 1, _flow(entries)[1:-1] + rest)
    if not mapping.value:
        raise _Unsupported
    return (start, start, _block(entries, mapping.start_mark.column))


def _replace_null(text: str, node: Node, entries: Mapping[str, Any]) -> Edit:
    start, end = node.start_mark.index, node.end_mark.index
    if start == end and text[start - 1:start] != ":":  # an empty value not right after `key:`
        raise _Unsupported
    return (start, end, (" " if start == end else "") + _flow(entries))


def _edits(text: str, obj: MappingNode, labels: Mapping[str, str]) -> list[Edit]:
    """The in-place edits that give `obj` the labels (its nodes are not changed)."""
    meta = _pair(obj, "metadata")
    if meta is None:
        return [_insert(text, obj, {"metadata": {"labels": dict(labels)}})]
    if _is_null(meta[1]):
        return [_replace_null(text, meta[1], {"labels": dict(labels)})]
    if not isinstance(meta[1], MappingNode):
        raise LabelError(f"metadata at {_where(meta[1])} is not a mapping")
    found = _pair(meta[1], "labels")
    if found is None:
        return [_insert(text, meta[1], {"labels": dict(labels)})]
    if _is_null(found[1]):
        return [_replace_null(text, found[1], dict(labels))]
    if not isinstance(found[1], MappingNode):
        raise LabelError(f"labels at {_where(found[1])} are not a mapping")
    edits: list[Edit] = []
    missing: dict[str, str] = {}
    for key, value in labels.items():
        pair = _pair(found[1], key)
        if pair is None:
            missing[key] = value
            continue
        have = pair[1]
        if isinstance(have, ScalarNode) and have.tag == STR and have.value == value:
            continue
        if not isinstance(have, ScalarNode) or have.style not in (None, "'", '"') \
                or have.start_mark.line != have.end_mark.line:
            raise _Unsupported
        edits.append((have.start_mark.index, have.end_mark.index, _quoted(value)))
    if missing:
        edits.append(_insert(text, found[1], missing))
    return edits


def _apply(text: str, edits: Sequence[Edit]) -> str:
    out, last = [], len(text)
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            raise _Unsupported  # overlapping edits
        out.append(text[end:last])
        out.append(new)
        last = start
    out.append(text[:last])
    return "".join(reversed(out))


def _rewritten(text: str, doc: Node) -> Edit:
    """The whole document written again from its (already labelled) nodes, over its span."""
    body = yaml.serialize(doc, Dumper=_Dumper, allow_unicode=True, width=1 << 30)
    start, end = doc.start_mark.index, doc.end_mark.index
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip():  # e.g. `--- {` on the separator's line
        return (start, end, "\n" + body)
    return (line_start, end, body)


# --------------------------------------------------------------------------- the stream


def _compose(text: str) -> list[Node]:
    try:
        return list(yaml.compose_all(text, Loader=_Loader))
    except yaml.YAMLError as err:
        raise LabelError("not YAML: " + " ".join(str(err).split())) from None
    except RecursionError:
        raise LabelError("not YAML gpulab can read: nested too deeply") from None


def add_labels(text: str, labels: Mapping[str, str]) -> str:
    """`text` (a YAML stream of Kubernetes objects, as helm renders it) with `labels` in the
    `metadata.labels` of each object; LabelError (one line) when it is not such a stream."""
    check_labels(labels)
    try:
        return _labelled(text, labels)
    except RecursionError:  # libyaml may compose deeper than Python walks the nodes
        raise LabelError("not YAML gpulab can read: nested too deeply") from None


def _labelled(text: str, labels: Mapping[str, str]) -> str:
    docs = _compose(text)
    edits: list[Edit] = []
    whole: list[Node] = []  # documents written again from their nodes
    checked: list[tuple[int, Any]] = []  # (document number, what it must mean)
    for number, doc in enumerate(docs):
        if _is_null(doc):
            continue
        if not isinstance(doc, MappingNode):
            raise LabelError(f"document {number + 1} ({_where(doc)}) is not a Kubernetes "
                             "object but a " + ("list" if isinstance(doc, SequenceNode)
                                                else "scalar"))
        objects = _objects(doc)
        aliased = _has_aliases(doc)
        try:
            if aliased:
                raise _Unsupported
            edits.extend(e for obj in objects for e in _edits(text, obj, labels))
        except _Unsupported:
            whole.append(doc)
        for obj in objects:
            _label_nodes(obj, labels)
        if not aliased:
            checked.append((number, _canon(doc)))
    try:
        out = _apply(text, edits + [_rewritten(text, doc) for doc in whole])
    except _Unsupported:
        raise LabelError("overlapping edits (please report this document)") from None
    again = _compose(out)
    if len(again) != len(docs) or any(_canon(again[number]) != meaning
                                      for number, meaning in checked):
        raise LabelError("the labelled text does not read back as the input plus the labels "
                         "(please report this document)")
    return out


# --------------------------------------------------------------------------- the program


def _parse(argv: Sequence[str]) -> tuple[dict[str, str], str | None]:
    labels: dict[str, str] = {}
    error_file = None
    for arg in argv:
        if arg.startswith("--error-file="):
            error_file = arg.removeprefix("--error-file=")
        elif "=" in arg and not arg.startswith("-"):
            key, _, value = arg.partition("=")
            labels[key] = value
        else:
            raise LabelError(f"unexpected argument {arg!r} (usage: python -m gpulab.helm_labels "
                             "[--error-file=PATH] KEY=VALUE...)")
    return labels, error_file


def main(argv: Sequence[str] | None = None) -> int:
    """Label stdin to stdout; 1 and one line on stderr (and in --error-file) on bad input."""
    args = sys.argv[1:] if argv is None else list(argv)
    error_file = None
    try:
        labels, error_file = _parse(args)
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as err:
            raise LabelError(f"input is not UTF-8 (byte {err.start})") from None
        out = add_labels(text, labels)
    except LabelError as err:
        message = f"gpulab post-renderer: {err}"
        sys.stderr.write(message + "\n")
        if error_file:
            with contextlib.suppress(OSError):  # stderr has it; helm 3 shows it
                Path(error_file).write_text(message + "\n", encoding="utf-8")
        return 1
    if not out.strip():
        # helm 4 refuses a post-renderer's empty output (pkg/postrenderer/postrenderer.go:77-81
        # at v4.1.4); a chart that renders no object is not an error.
        out = text + "# gpulab: no objects to label\n"
    sys.stdout.buffer.write(out.encode("utf-8"))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
