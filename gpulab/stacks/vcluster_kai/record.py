"""Recordings of the vcluster-kai `verify` (docs/vcluster-kai.md, "Recordings").

Same layout and versioning as kamaji-hami's (gpulab.checks.report): `manifest.json`, written last,
now with `stack: vcluster-kai` and the host's observation, plus one `state-<team>.json` per team
holding its `TeamState`. `gpulab verify --replay DIR` reads `stack` to pick these checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab import __version__
from gpulab.errors import UsageError
from gpulab.stacks.vcluster_kai.state import HostState, KaiLabState, TeamState
from gpulab.verify.recording import (
    MANIFEST,
    RECORDING_FORMAT,
    RECORDING_VERSION,
    decoding,
    load_document,
    member_file,
    write_json,
)

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

__all__ = ["STACK", "KaiRecording", "read_recording", "write_recording"]

STACK = "vcluster-kai"
TEAM_FORMAT = f"{RECORDING_FORMAT}/tenant"


@dataclass(frozen=True)
class KaiRecording:
    state: KaiLabState
    profile_data: dict[str, Any]
    gpulab_version: str = ""

    def profile(self) -> VclusterKaiProfile:
        """The recorded profile, validated again (UsageError if this gpulab cannot read it)."""
        from pydantic import ValidationError

        from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

        try:
            return VclusterKaiProfile.model_validate(self.profile_data)
        except ValidationError as err:
            raise UsageError(
                f"the recording's profile is not valid for this gpulab: "
                f"{err.error_count()} problem(s), first: {err.errors()[0]['msg']}"
            ) from None


def write_recording(directory: Path, state: KaiLabState, profile: VclusterKaiProfile) -> Path:
    """Save `state` and the profile; team files first, the manifest last. Returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, team in state.teams.items():
        files[name] = f"state-{name}.json"
        write_json(directory / files[name], {
            "format": TEAM_FORMAT,
            "version": RECORDING_VERSION,
            "tenant": name,
            "state": team.to_dict(),
        })
    manifest = {
        "format": RECORDING_FORMAT,
        "version": RECORDING_VERSION,
        "stack": STACK,
        "gpulab_version": __version__,
        "lab": state.lab,
        "observed_at": state.observed_at,
        "seconds": state.seconds,
        "checks": list(state.checks),
        "host": state.host.to_dict(),
        "tenants": files,
        "profile": profile.model_dump(mode="json"),
    }
    path = directory / MANIFEST
    write_json(path, manifest)
    return path


def read_recording(directory: Path) -> KaiRecording:
    """Read a directory written by `write_recording` (UsageError when it is not one)."""
    manifest_path = directory / MANIFEST
    manifest = load_document(manifest_path, RECORDING_FORMAT)
    if manifest.get("stack") != STACK:
        raise UsageError(f"{manifest_path} is not a {STACK} recording "
                         f"(stack {manifest.get('stack') or 'kamaji-hami'})")
    files = manifest.get("tenants")
    if not isinstance(files, dict):
        raise UsageError(f"{manifest_path} has no 'tenants' mapping")
    teams: dict[str, TeamState] = {}
    for name, file_name in files.items():
        path = member_file(directory, manifest_path, file_name)
        state = load_document(path, TEAM_FORMAT).get("state")
        if not isinstance(state, dict):
            raise UsageError(f"{path} has no 'state' object")
        with decoding(path):
            teams[str(name)] = TeamState.from_dict(state)
    host = manifest.get("host")
    profile = manifest.get("profile")
    with decoding(manifest_path):
        return _recording(manifest, teams, host, profile)


def _recording(manifest: dict[str, Any], teams: dict[str, TeamState], host: Any, profile: Any
               ) -> KaiRecording:
    return KaiRecording(
        state=KaiLabState(
            lab=str(manifest.get("lab") or ""),
            host=HostState.from_dict(host if isinstance(host, dict) else {}),
            teams=teams,
            checks=tuple(str(c) for c in manifest.get("checks") or ()),
            observed_at=str(manifest.get("observed_at") or ""),
            seconds=float(manifest.get("seconds") or 0.0),
        ),
        profile_data=profile if isinstance(profile, dict) else {},
        gpulab_version=str(manifest.get("gpulab_version") or ""),
    )
