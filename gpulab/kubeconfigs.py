"""Contexts in the user's own kubeconfig, the way `kind create cluster` adds `kind-<name>`:
`gpulab kubeconfig TENANT --merge` adds `gpulab-<lab>-<tenant>` (cluster, user and context of
that name) and `gpulab down` removes the lab's entries again. The lab folder's own
kubeconfig files stay the source; the merged copy is written with mode 0600."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from gpulab import nesting
from gpulab.errors import UsageError
from gpulab.paths import write_secret

__all__ = ["context_name", "merge", "merge_file", "remove", "remove_file", "remove_names",
           "user_kubeconfig"]

SECTIONS = ("clusters", "users", "contexts")


def context_name(lab: str, member: str) -> str:
    return f"gpulab-{lab}-{member}"


def user_kubeconfig(environ: dict[str, str] | None = None) -> Path:
    """The file kubectl writes to: the first of $KUBECONFIG, else ~/.kube/config."""
    env = os.environ if environ is None else environ
    first = next((p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def _current(config: dict[str, Any], section: str, key: str) -> dict[str, Any]:
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    context = contexts.get(config.get("current-context")) or next(iter(contexts.values()), {})
    entries = config.get(section) or []
    for entry in entries:
        if entry.get("name") == context.get(key):
            return dict(entry)
    if entries:
        return dict(entries[0])
    raise UsageError(f"the lab's kubeconfig has no {section}")


def merge(target: dict[str, Any], source: dict[str, Any], name: str) -> dict[str, Any]:
    """`target` with `source`'s current cluster, user and context added under `name` (entries of
    that name replaced); the current context is left as it was (kind sets it; gpulab does not
    take the user's current context away)."""
    out = copy.deepcopy(target) if target else {}
    out.setdefault("apiVersion", "v1")
    out.setdefault("kind", "Config")
    cluster = _current(source, "clusters", "cluster").get("cluster") or {}
    user = _current(source, "users", "user").get("user") or {}
    entries = {
        "clusters": {"name": name, "cluster": cluster},
        "users": {"name": name, "user": user},
        "contexts": {"name": name, "context": {"cluster": name, "user": name}},
    }
    for section, entry in entries.items():
        kept = [e for e in out.get(section) or [] if e.get("name") != name]
        out[section] = [*kept, entry]
    return out


def remove(target: dict[str, Any], names: set[str]) -> tuple[dict[str, Any], list[str]]:
    """`target` without the entries of these names (exact: lab `a` never takes lab `a-b`'s);
    the context names removed."""
    out = copy.deepcopy(target)
    removed = [str(c.get("name", "")) for c in out.get("contexts") or []
               if c.get("name") in names]
    for section in SECTIONS:
        if section in out:
            out[section] = [e for e in out.get(section) or [] if e.get("name") not in names]
    if out.get("current-context") in names:
        out["current-context"] = ""
    return out, removed


def _read(path: Path) -> dict[str, Any]:
    try:
        data = nesting.yaml_load(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise UsageError(f"cannot read kubeconfig {path}: {err}",
                         hint="fix or move the file, then retry") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a kubeconfig (not a mapping)")
    return data


def merge_file(lab_kubeconfig: Path, target: Path, name: str) -> Path:
    """Merge the lab's kubeconfig into `target` under `name` (0600)."""
    merged = merge(_read(target), _read(lab_kubeconfig), name)
    return write_secret(target, yaml.safe_dump(merged, sort_keys=False).encode())


def remove_file(target: Path, lab: str, members: list[str]) -> list[str]:
    """Remove the lab's `gpulab-<lab>-<member>` entries from `target`; the contexts removed."""
    return remove_names(target, {context_name(lab, member) for member in ["management", *members]})


def remove_names(target: Path, names: set[str]) -> list[str]:
    """Remove the entries (context, cluster, user) of exactly these names from `target`; the
    contexts removed. A missing file has none."""
    if not target.exists():
        return []
    before = _read(target)
    config, removed = remove(before, names)
    if config != before:
        write_secret(target, yaml.safe_dump(config, sort_keys=False).encode())
    return removed
