"""Recordings of the vcluster-kai `verify` (docs/vcluster-kai.md, "Recordings").

Same layout and versioning as kamaji-hami's (gpulab.checks.report): `manifest.json`, written last,
now with `stack: vcluster-kai` and the host's observation, plus one `state-<team>.json` per team
holding its `TeamState`. `gpulab verify --replay DIR` reads `stack` to pick these checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from gpulab import __version__
from gpulab.errors import UsageError
from gpulab.stacks.vcluster_kai.state import HostState, KaiLabState, TeamState
from gpulab.verify.recording import (
    MANIFEST,
    MEMBER_FORMAT,
    RECORDING_FORMAT,
    RECORDING_VERSION,
    Manifest,
    MemberDocument,
    member_file,
    read_document,
    schemas,
    write_json,
)

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

__all__ = ["STACK", "KaiManifest", "KaiRecording", "read_recording", "recording_schemas",
           "write_recording"]

STACK = "vcluster-kai"
TeamDocument = MemberDocument[TeamState]


class KaiManifest(Manifest):
    """vcluster-kai's manifest: the common one plus what verify read on the host cluster."""

    host: HostState = Field(default_factory=HostState,
                            description="the host cluster's GPU nodes, GPU users and queues")


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
            "format": MEMBER_FORMAT,
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
        "run_id": state.run_id,
        "checks": list(state.checks),
        "host": state.host.to_dict(),
        "tenants": files,
        "profile": profile.model_dump(mode="json"),
    }
    path = directory / MANIFEST
    write_json(path, manifest)
    return path


def read_recording(directory: Path) -> KaiRecording:
    """Read a directory written by `write_recording` (UsageError when it is not one, or when
    any file does not match the recording format's types)."""
    manifest_path = directory / MANIFEST
    manifest = read_document(manifest_path, KaiManifest)
    if manifest.stack != STACK:
        raise UsageError(f"{manifest_path} is not a {STACK} recording "
                         f"(stack {manifest.stack or 'kamaji-hami'})")
    teams: dict[str, TeamState] = {}
    for name, file_name in manifest.tenants.items():
        path = member_file(directory, manifest_path, file_name)
        document = read_document(path, TeamDocument)
        if document.tenant != name or document.state.team != name:
            raise UsageError(f"{path} holds team {document.state.team!r}, but the manifest "
                             f"lists it for {name!r}")
        teams[name] = document.state
    return KaiRecording(
        state=KaiLabState(
            lab=manifest.lab,
            host=_current(manifest.host),
            teams=teams,
            checks=manifest.checks,
            observed_at=manifest.observed_at,
            seconds=manifest.seconds,
            run_id=manifest.run_id,
        ),
        profile_data=manifest.profile,
        gpulab_version=manifest.gpulab_version,
    )


def _current(host: HostState) -> HostState:
    """A recording of an older gpulab says `provider` where this one says `gpus`: '' (the lab's
    own pool) or the name of the provider whose GPUs were those found."""
    from dataclasses import replace

    if host.provider and host.gpus == "pool":
        return replace(host, gpus="found", provider="")
    return host


def recording_schemas() -> dict[str, Any]:
    """The JSON Schemas of vcluster-kai's recording files (docs/schemas/recording-v1/)."""
    return schemas(KaiManifest, TeamState, STACK)
