"""What a lab was built from, kept in its folder as `lab.json`, so its name alone is enough.

`up` records the resolved profile: the whole validated document, not a path (the file may move,
change or be deleted after `up -p FILE`), with the reference it was given by (a built-in name or
the file's absolute path, shown by `gpulab labs`) and what it created in Docker.
`gpulab kubeconfig --merge` records each context it adds and the kubeconfig file it went into,
so `down` removes exactly those, from those files.

A folder written by an older gpulab holds `{"profile": REF, "stack": STACK}` only (no
`document`): its reference is loaded as before, and `down` removes the contexts named after the
profile's tenants from the user's kubeconfig, as before (plus any recorded since).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from gpulab import nesting
from gpulab.paths import lab_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile

__all__ = [
    "RECORD",
    "LabRecord",
    "MergedContext",
    "agrees",
    "document",
    "insert_owned",
    "profile_ref",
    "read",
    "record_cluster",
    "record_context",
    "record_created",
    "record_owned",
    "record_profile",
    "recorded_loaded",
]

RECORD = "lab.json"
VERSION = 2
CREATED_KINDS = ("kind_clusters", "containers", "networks", "volumes")


@dataclass(frozen=True)
class MergedContext:
    """A context `gpulab kubeconfig --merge` added, and the kubeconfig file it went into."""

    context: str
    kubeconfig: Path


@dataclass(frozen=True)
class LabRecord:
    """The lab folder's `lab.json`. `document` is None in a record of an older gpulab."""

    lab: str
    path: Path
    ref: str | None = None
    builtin: bool = False
    stack: str = ""
    document: dict[str, Any] | None = None
    contexts: tuple[MergedContext, ...] = ()
    created: dict[str, list[str]] = field(default_factory=dict)
    # what the lab's provider recorded of its cluster (`provider`: its name, '' before it
    # recorded anything: the registry's default; a cluster gpulab did not make adds server,
    # context, kubeconfig, kube_system_uid) and what gpulab created in it, in creation order
    # (each {"type": "helm-release" | "object", ...}); `down` removes exactly those, reversed.
    cluster: dict[str, Any] = field(default_factory=dict)
    owned: tuple[dict[str, Any], ...] = ()

    @property
    def provider(self) -> str:
        return str(self.cluster.get("provider") or "")

    @property
    def complete(self) -> bool:
        """True when written by `up` of this gpulab: the profile document is there and every
        merged context since the lab was built is in `contexts`."""
        return self.document is not None


_P = ParamSpec("_P")
_R = TypeVar("_R")
# lab.json is read, changed and written whole; `up` runs steps (teams) in threads, and two that
# record at once would each write back what they read, losing the other's entries
_LOCK = threading.RLock()


def _locked(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    @wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _LOCK:
            return fn(*args, **kwargs)

    return run


def _raw(lab: str) -> dict[str, Any]:
    try:
        data = nesting.json_loads((lab_dir(lab) / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(lab: str, data: dict[str, Any]) -> None:
    """Replace `lab.json` at once (a reader never sees half a file)."""
    folder = lab_dir(lab)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".lab.json.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2) + "\n")
        Path(tmp).replace(folder / RECORD)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(lab: str) -> LabRecord | None:
    """The lab's record, or None when its folder has none (or an unreadable one)."""
    data = _raw(lab)
    if not data:
        return None
    ref = data.get("profile")
    doc = data.get("document")
    contexts = tuple(
        MergedContext(str(c["context"]), Path(str(c["kubeconfig"])))
        for c in data.get("contexts") or []
        if isinstance(c, dict) and c.get("context") and c.get("kubeconfig"))
    raw_created = data.get("created")
    created: dict[str, Any] = raw_created if isinstance(raw_created, dict) else {}
    return LabRecord(
        lab=lab,
        path=lab_dir(lab) / RECORD,
        ref=ref if isinstance(ref, str) and ref else None,
        builtin=bool(data.get("builtin", False)),
        stack=str(data.get("stack") or ""),
        document=doc if isinstance(doc, dict) else None,
        contexts=contexts,
        created={k: [str(n) for n in created.get(k) or []] for k in CREATED_KINDS},
        cluster=data["cluster"] if isinstance(data.get("cluster"), dict) else {},
        owned=tuple(o for o in data.get("owned") or [] if isinstance(o, dict)),
    )


def profile_ref(loaded: LoadedProfile) -> str:
    """How a profile is named in the record: a built-in's name, else the file's absolute path."""
    return loaded.source.stem if loaded.builtin else str(loaded.source.resolve())


def document(profile: LabProfile) -> dict[str, Any]:
    """The validated profile as a document that validates again to the same profile."""
    return profile.model_dump(mode="json", by_alias=True)


def recorded_loaded(record: LabRecord) -> LoadedProfile | None:
    """The recorded profile document, validated again (None for an older record). Its `source`
    is the reference it was built from, which may no longer exist."""
    if record.document is None:
        return None
    from gpulab.profile.load import LoadedProfile
    from gpulab.stacks import parse_profile

    profile = parse_profile(json.dumps(record.document, indent=1),
                            f"{record.path} (the profile lab '{record.lab}' was built from)")
    return LoadedProfile(profile, Path(record.ref) if record.ref else record.path,
                         record.builtin)


def agrees(record: LabRecord, given: LoadedProfile) -> bool:
    """A `-p` agrees with the record when it names the same profile (the same built-in, the
    same file, perhaps edited since) or holds the same document (a moved copy)."""
    if record.ref is not None and profile_ref(given) == record.ref:
        return True
    return record.document is not None and document(given.profile) == record.document


@_locked
def record_profile(lab: str, loaded: LoadedProfile) -> None:
    """After `up` built something: the profile it was built from. A record without a document
    (an older gpulab's) adopts the lab's contexts already merged into the user's kubeconfig,
    so that from now on `contexts` lists them all."""
    data = _raw(lab)
    adopt = not isinstance(data.get("document"), dict)
    data.update(version=VERSION, profile=profile_ref(loaded), builtin=loaded.builtin,
                stack=loaded.profile.stack, document=document(loaded.profile))
    contexts = [c for c in data.get("contexts") or [] if isinstance(c, dict)]
    if adopt:
        contexts += _merged_before(lab, ["management", *loaded.profile.member_names()])
    data["contexts"] = _unique(contexts)
    data.setdefault("created", {})
    _write(lab, data)


def _merged_before(lab: str, members: list[str]) -> list[dict[str, str]]:
    """The lab's `gpulab-LAB-MEMBER` contexts in the user's kubeconfig (an older gpulab merged
    them without recording them)."""
    import yaml

    from gpulab import kubeconfigs

    target = kubeconfigs.user_kubeconfig()
    try:
        config = nesting.yaml_load(target.read_text(encoding="utf-8")) if target.is_file() else {}
    except (OSError, ValueError, yaml.YAMLError):
        return []
    names = {kubeconfigs.context_name(lab, m) for m in members}
    present = [str(c.get("name")) for c in (config or {}).get("contexts") or []
               if isinstance(c, dict) and c.get("name") in names] if isinstance(config, dict) \
        else []
    return [{"context": n, "kubeconfig": str(target.absolute())} for n in present]


def _unique(contexts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[str, str]] = set()
    out = []
    for entry in contexts:
        key = (str(entry.get("context")), str(entry.get("kubeconfig")))
        if key not in seen:
            seen.add(key)
            out.append({"context": key[0], "kubeconfig": key[1]})
    return out


@_locked
def record_context(lab: str, context: str, kubeconfig: Path) -> None:
    """`gpulab kubeconfig --merge` added `context` to `kubeconfig`."""
    data = _raw(lab)
    contexts = [c for c in data.get("contexts") or [] if isinstance(c, dict)]
    contexts.append({"context": context, "kubeconfig": str(kubeconfig.expanduser().absolute())})
    data["contexts"] = _unique(contexts)
    _write(lab, data)


@_locked
def record_created(lab: str, created: dict[str, list[str]]) -> None:
    """What `up` found in Docker for the lab after a run (added to what earlier runs found)."""
    data = _raw(lab)
    raw = data.get("created")
    before: dict[str, Any] = raw if isinstance(raw, dict) else {}
    data["created"] = {kind: sorted({*(before.get(kind) or []), *created.get(kind, [])})
                       for kind in CREATED_KINDS}
    _write(lab, data)


@_locked
def record_cluster(lab: str, cluster: dict[str, Any]) -> None:
    """Provider existing: the cluster the lab is in (its identity; `down` refuses another)."""
    data = _raw(lab)
    data["cluster"] = dict(cluster)
    _write(lab, data)


@_locked
def record_owned(lab: str, entries: list[dict[str, Any]]) -> None:
    """Provider existing: `entries` were (or are about to be) created by gpulab; appended in
    order, each once."""
    data = _raw(lab)
    owned = [o for o in data.get("owned") or [] if isinstance(o, dict)]
    for entry in entries:
        if entry not in owned:
            owned.append(dict(entry))
    data["owned"] = owned
    _write(lab, data)


@_locked
def insert_owned(lab: str, entries: list[dict[str, Any]], before: list[dict[str, Any]]) -> None:
    """Provider existing: `entries` (what a step turned out to bring, such as a chart's CRDs)
    inserted ahead of the first of `before` (the step's own entries), in one locked update;
    each is kept once, at the earliest of the places it was recorded at."""
    data = _raw(lab)
    owned = [o for o in data.get("owned") or [] if isinstance(o, dict)]
    at = next((i for i, o in enumerate(owned) if o in before), len(owned))
    # each once, at the earlier of the two places: a step running alongside may have recorded
    # some already (CRDs a chart or manifest brought while this step's chart installed); `down`
    # goes newest first, so the earlier place removes it after both steps' releases
    moved = [dict(e) for e in entries if e not in owned[:at]]
    data["owned"] = [*owned[:at], *moved, *(o for o in owned[at:] if o not in moved)]
    _write(lab, data)
