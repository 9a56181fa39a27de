"""JSON and YAML read with a bound on nesting: what gpulab reads from files and answers.

Python's JSON decoder and PyYAML's composer recurse once per level, so a document nested a few
thousand levels deep (`[[[[...`) ends in a RecursionError, and one nested a few hundred deep
passes them only to reach gpulab's own recursive code. Every file gpulab reads back (a
recording, a lab's record, a kubeconfig) and every answer it parses (the Kubernetes API, HAMi's
annotations) goes through here: past MAX_DEPTH levels it is refused with `TooDeep`, a
ValueError, which each reader already turns into one line naming the file or the server.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "TooDeep", "json_loads", "yaml_load"]

# Kubernetes objects, recordings and kubeconfigs nest well under 100 levels (a CRD's
# openAPIV3Schema, the deepest gpulab reads, about 40); far below Python's recursion limit of 1000.
MAX_DEPTH = 200


class TooDeep(ValueError):
    """A document nested deeper than MAX_DEPTH levels."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def json_loads(text: str | bytes, **options: Any) -> Any:
    """`json.loads` (with its `options`), refusing more than MAX_DEPTH levels of arrays and
    objects (TooDeep)."""
    try:
        data = json.loads(text, **options)
    except RecursionError:
        raise TooDeep from None
    _check(data)
    return data


def _check(data: Any) -> None:
    """TooDeep when `data` holds containers nested deeper than MAX_DEPTH (no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise TooDeep
        stack.extend((child, depth + 1) for child in children)


def yaml_load(text: str) -> Any:
    """`yaml.safe_load`, refusing more than MAX_DEPTH levels of mappings and sequences
    (TooDeep) before anything is built; YAML errors are yaml.YAMLError as usual."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise TooDeep
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    data = yaml.safe_load(text)
    _check(data)  # an alias chain nests what it builds deeper than the text shows
    return data
