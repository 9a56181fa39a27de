"""Recordings of `verify --kubeconfig --inspect` (docs/verify-any-cluster.md, "Recordings").

`DIR/manifest.json` (format `gpulab-cluster-recording`, version 1, member → file) and one
`snapshot-<member>.json` per cluster holding its `ClusterSnapshot`. Read strictly, as verify's
recordings are (gpulab.verify.recording): a wrong type is one UsageError naming file and field.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from gpulab import __version__, nesting
from gpulab.cluster.state import (  # noqa: TC001 - pydantic reads them at run time
    ClusterRun,
    ClusterSnapshot,
)
from gpulab.errors import UsageError
from gpulab.verify.recording import Document, member_file, read_document, write_json

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["is_cluster_recording", "read_recording", "read_snapshots", "write_snapshots"]

FORMAT = "gpulab-cluster-recording"
VERSION = 1
MANIFEST = "manifest.json"


class ClusterManifest(Document):
    FORMAT: ClassVar[str] = FORMAT
    VERSION: ClassVar[int] = VERSION

    format: Literal["gpulab-cluster-recording"]
    version: Literal[1]
    gpulab_version: str = ""
    members: dict[str, str] = Field(description="member name -> snapshot file in the directory")


class ClusterMember(Document):
    FORMAT: ClassVar[str] = f"{FORMAT}/member"
    VERSION: ClassVar[int] = VERSION

    format: Literal["gpulab-cluster-recording/member"]
    version: Literal[1]
    member: str
    snapshot: ClusterSnapshot
    run: ClusterRun | None = None


def _file(name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    return f"snapshot-{safe}.json"


def write_snapshots(directory: Path, snapshots: Sequence[ClusterSnapshot],
                    runs: Sequence[ClusterRun] = ()) -> Path:
    """Save the snapshots (and what verify did in each cluster); members first, the manifest
    last. Returns the manifest's path."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    by_member = {run.member: run for run in runs}
    for snapshot in snapshots:
        files[snapshot.name] = _file(snapshot.name)
        run = by_member.get(snapshot.name)
        write_json(directory / files[snapshot.name], {
            "format": ClusterMember.FORMAT, "version": VERSION, "member": snapshot.name,
            "snapshot": snapshot.to_dict(), "run": None if run is None else asdict(run)})
    path = directory / MANIFEST
    write_json(path, {"format": FORMAT, "version": VERSION, "gpulab_version": __version__,
                      "members": files})
    return path


def read_snapshots(directory: Path) -> list[ClusterSnapshot]:
    """The snapshots of a directory written by `write_snapshots` (UsageError otherwise)."""
    return [snapshot for snapshot, _run in read_recording(directory)]


def read_recording(directory: Path) -> list[tuple[ClusterSnapshot, ClusterRun | None]]:
    """Each cluster's snapshot and run (None: inspected only), as `write_snapshots` saved them
    (UsageError otherwise)."""
    manifest_path = directory / MANIFEST
    manifest = read_document(manifest_path, ClusterManifest)
    out = []
    for name, file_name in manifest.members.items():
        path = member_file(directory, manifest_path, file_name)
        member = read_document(path, ClusterMember)
        if member.member != name or member.snapshot.name != name or (
                member.run is not None and member.run.member != name):
            raise UsageError(f"{path} holds cluster {member.snapshot.name!r}, but the manifest "
                             f"lists it for {name!r}")
        out.append((member.snapshot, member.run))
    if not out:
        raise UsageError(f"{manifest_path} lists no cluster")
    return out


def is_cluster_recording(directory: Path) -> bool:
    """Whether `directory` holds a recording of `verify --kubeconfig` (not of a lab)."""
    try:
        data = nesting.json_loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT
