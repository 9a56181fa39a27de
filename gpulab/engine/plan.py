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

    from gpulab.engine.step import Artifact, Step

__all__ = ["manifest_clusters", "plan_data", "plan_documents", "plan_json", "plan_manifests",
           "plan_text", "plan_yaml"]

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


def plan_data(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """Steps in `up` order with their artifacts: the one document `-o json` and `-o yaml` hold
    (plain JSON types, so both parse to the same value)."""
    payload = [
        {
            "step": step.name,
            "title": step.title,
            "requires": list(step.requires),
            "artifacts": [a.to_dict() for a in step.describe()],
        }
        for step in order_steps(steps)
    ]
    data: list[dict[str, Any]] = json.loads(json.dumps(payload))
    return data


def plan_yaml(steps: Sequence[Step]) -> str:
    """`plan_data` as YAML (long strings on one line, multi-line ones as blocks)."""
    return yaml.dump(plan_data(steps), Dumper=_Dumper, sort_keys=False, width=1 << 16)


def plan_json(steps: Sequence[Step]) -> str:
    """`plan_data` as JSON."""
    return json.dumps(plan_data(steps), indent=2, sort_keys=False)


def _is_object(art: Artifact) -> bool:
    """A Kubernetes object gpulab applies itself (not kind's config, not an envelope)."""
    body = art.body
    return (art.kind != "kind-cluster" and isinstance(body, dict)
            and {"apiVersion", "kind", "metadata"} <= body.keys())


def manifest_clusters(steps: Sequence[Step]) -> list[str]:
    """The clusters `up` applies Kubernetes objects to, in plan order."""
    seen: dict[str, None] = {}
    for step in order_steps(steps):
        for art in step.describe():
            if _is_object(art) or art.kind in ("helm-release", "manifest"):
                seen.setdefault(art.cluster, None)
    return list(seen)


def _comment(step: Step, art: Artifact) -> list[str]:
    """What `up` does in `cluster` that is not an object to apply: Helm releases and pinned
    upstream manifests, as comments in their place in the order."""
    body = art.body if isinstance(art.body, dict) else {}
    if art.kind == "helm-release":
        source = (f" from {body.get('repo')} at git {body['git']['commit'][:12]}:"
                  f"{body['git']['path']}" if body.get("git") else
                  f" from {body['repo']}" if body.get("repo") else "")
        return [f"# helm release {body.get('release', art.name)} (step {step.name}): chart "
                f"{body.get('chart')} {body.get('version')}{source}, namespace "
                f"{body.get('namespace')}; gpulab installs it with helm (`gpulab plan -o yaml` "
                f"has its values)"]
    if art.kind == "manifest":
        extra = "; ".join(f"{k} {json.dumps(v)}" for k, v in body.items() if k != "url")
        return [f"# manifest {art.name} (step {step.name}): {body.get('url')}"
                + (f" ({extra})" if extra else "")]
    if art.kind in ("node-patch", "command"):
        return [f"# step {step.name} also runs {art.kind} {art.name}: not an object to apply "
                f"(`gpulab plan -o yaml` shows it)"]
    return []  # kind's cluster, containers, image preloads, kubeconfig files, waits


def plan_manifests(steps: Sequence[Step], cluster: str) -> str:
    """The Kubernetes objects `up` applies itself to `cluster`, in `up` order, as a multi-document
    YAML stream `kubectl apply -f -` takes; Helm releases and upstream manifests that gpulab
    installs its own way are comments in their place."""
    chunks = [f"# gpulab plan -o manifests --cluster {cluster}: the objects gpulab applies to "
              f"{cluster}, in the order it applies them\n"]
    for step in order_steps(steps):
        for art in step.describe():
            if art.cluster != cluster:
                continue
            if _is_object(art):
                body = yaml.dump(art.body, Dumper=_Dumper, sort_keys=False, width=1 << 16)
                chunks.append(f"---\n# step {step.name}\n{body}")
            else:
                chunks += [f"{line}\n" for line in _comment(step, art)]
    return "".join(chunks)


def plan_text(steps: Sequence[Step]) -> list[tuple[str, str, list[str]]]:
    """(step, title, artifact lines) for the human table."""
    rows = []
    for step in order_steps(steps):
        lines = [f"{a.kind}: {a.name}" for a in step.describe()]
        rows.append((step.name, step.title, lines))
    return rows
