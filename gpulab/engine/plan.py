"""`gpulab plan`: the ordered steps `up` would run and everything they would create.

The plan is built from the same step objects `up` runs (`describe()`), so the two cannot drift.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.engine.runner import order_steps

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpulab.engine.step import Step

__all__ = ["plan_documents", "plan_json", "plan_text", "plan_yaml"]

_PLAN_API = "gpulab.dev/v1alpha1"


def _document(step: Step, artifact_kind: str, name: str, body: Any, cluster: str) -> dict[str, Any]:
    """Kubernetes objects and kind configs are emitted as-is; the rest in a gpulab envelope."""
    if artifact_kind in {"object", "kind-cluster"} and isinstance(body, dict):
        return body
    kinds = {
        "helm-release": "HelmRelease",
        "node-patch": "NodePatch",
        "container": "WorkerContainer",
        "manifest": "Manifest",
        "file": "File",
        "command": "Command",
        "images": "ImagePreload",
    }
    return {
        "apiVersion": _PLAN_API,
        "kind": kinds.get(artifact_kind, artifact_kind),
        "metadata": {"name": name},
        "cluster": cluster,
        "step": step.name,
        "spec": body,
    }


def plan_documents(steps: Sequence[Step]) -> list[tuple[str, dict[str, Any]]]:
    """(comment, document) pairs in `up` order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for step in order_steps(steps):
        for art in step.describe():
            comment = f"step: {step.name}  cluster: {art.cluster}  ({art.kind} {art.name})"
            out.append((comment, _document(step, art.kind, art.name, art.body, art.cluster)))
    return out


class _Dumper(yaml.SafeDumper):
    """Block style; long strings (JSON annotations) stay on one line."""


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def plan_yaml(steps: Sequence[Step]) -> str:
    """A multi-document YAML stream, one document per object, each headed by its step."""
    chunks = []
    for comment, doc in plan_documents(steps):
        body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=1 << 16)
        chunks.append(f"---\n# {comment}\n{body}")
    return "".join(chunks)


def plan_json(steps: Sequence[Step]) -> str:
    """Steps with their artifacts, as one JSON document."""
    payload = [
        {
            "step": step.name,
            "title": step.title,
            "requires": list(step.requires),
            "artifacts": [a.to_dict() for a in step.describe()],
        }
        for step in order_steps(steps)
    ]
    return json.dumps(payload, indent=2, sort_keys=False)


def plan_text(steps: Sequence[Step]) -> list[tuple[str, str, list[str]]]:
    """(step, title, artifact lines) for the human table."""
    rows = []
    for step in order_steps(steps):
        lines = [f"{a.kind}: {a.name}" for a in step.describe()]
        rows.append((step.name, step.title, lines))
    return rows
