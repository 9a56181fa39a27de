"""Edited copies of the committed recordings, read back through the real reader.

The corpora break one fact at a time in a recording's JSON; going through `read_recording` (the
strict, typed reading) proves each broken variant is still a valid recording, i.e. something a
live run could have written.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

RECORDINGS = Path(__file__).parent / "data" / "recordings"
# The examples gpulab ships (`verify --replay example:NAME`, gpulab/verify/examples.py) are these
# test recordings, copied: example name → recording here (tests/unit/test_examples.py).
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "gpulab" / "examples" / "recordings"
EXAMPLES = {"kamaji-hami": "writeup-healthy", "vcluster-kai": "kai-healthy"}

R = TypeVar("R")


def member_states(source: Path) -> dict[str, dict[str, Any]]:
    """Each member's raw `state` object, by the name the manifest gives it."""
    manifest = json.loads((source / "manifest.json").read_text())
    return {name: json.loads((source / file).read_text())["state"]
            for name, file in manifest["tenants"].items()}


def read_edited(source: Path, reader: Callable[[Path], R],
                states: Mapping[str, dict[str, Any]],
                manifest: Callable[[dict[str, Any]], None] | None = None) -> R:
    """`reader` applied to a copy of `source` whose member states are `states` (and whose
    manifest `manifest` edited in place)."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / source.name
        shutil.copytree(source, target)
        files = json.loads((target / "manifest.json").read_text())
        if manifest is not None:
            data = json.loads((target / "manifest.json").read_text())
            manifest(data)
            (target / "manifest.json").write_text(json.dumps(data))
        for name, state in states.items():
            path = target / files["tenants"][name]
            document = json.loads(path.read_text())
            document["state"] = state
            path.write_text(json.dumps(document))
        return reader(target)


def listed_under_another_name(st: dict[str, Any], other: dict[str, Any], uid: str) -> None:
    """Make `st`'s listing show a pod of `other` that only its `uid` gives away: `other` no
    longer lists it, and its name, namespace and labels differ (the isolation checks)."""
    other["listing"]["pods"] = [p for p in other["listing"]["pods"]
                                if p["metadata"]["uid"] != uid]
    st["listing"]["pods"].append({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "renamed", "namespace": "default", "uid": uid, "labels": {}}})


def sync_examples(names: tuple[str, ...] = tuple(EXAMPLES)) -> list[Path]:
    """Copy the test recordings of `names` over gpulab's packaged examples (the builders do, after
    rewriting them)."""
    written = []
    for name in names:
        target = EXAMPLES_DIR / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(RECORDINGS / EXAMPLES[name], target)
        written.append(target)
    return written
