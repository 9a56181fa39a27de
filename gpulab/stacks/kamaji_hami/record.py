"""kamaji-hami's recordings: a manifest (gpulab.verify.recording) and one `state-<tenant>.json`
per tenant holding that tenant's `TenantState`. A manifest without `stack` is one of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab import __version__
from gpulab.errors import UsageError
from gpulab.stacks.kamaji_hami.state import LabState, TenantState
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

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

__all__ = ["STACK", "Recording", "read_recording", "recording_schemas", "write_recording"]

STACK = "kamaji-hami"
TenantDocument = MemberDocument[TenantState]


@dataclass(frozen=True)
class Recording:
    """A recording read back: the observed state and the profile it was made with (as JSON)."""

    state: LabState
    profile_data: dict[str, Any]
    gpulab_version: str = ""

    def profile(self) -> KamajiHamiProfile:
        """The recorded profile, validated again (UsageError if this gpulab cannot read it)."""
        from pydantic import ValidationError

        from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

        try:
            return KamajiHamiProfile.model_validate(_migrated(self.profile_data))
        except ValidationError as err:
            raise UsageError(
                f"the recording's profile is not valid for this gpulab: "
                f"{err.error_count()} problem(s), first: {err.errors()[0]['msg']}",
                hint="pass --profile to evaluate the recording against another profile",
            ) from None


def _migrated(data: dict[str, Any]) -> dict[str, Any]:
    """A recorded profile in today's field names (recordings of older gpulab versions):
    `components.hami.node_lock_expire` became `node_lock_timeout`."""
    hami = ((data.get("components") or {}).get("hami")) if isinstance(data, dict) else None
    if not isinstance(hami, dict) or "node_lock_expire" not in hami:
        return data
    renamed = {k: v for k, v in hami.items() if k != "node_lock_expire"}
    renamed.setdefault("node_lock_timeout", hami["node_lock_expire"])
    return {**data, "components": {**data["components"], "hami": renamed}}


def _tenant_file(tenant: str) -> str:
    return f"state-{tenant}.json"


def write_recording(directory: Path, state: LabState, profile: KamajiHamiProfile) -> Path:
    """Save `state` (and the profile) so `read_recording` + `evaluate` reproduce the verdicts.

    Tenant files are written first and the manifest last, so a directory without a manifest is
    an incomplete recording. Returns the manifest's path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, tenant in state.tenants.items():
        files[name] = _tenant_file(name)
        write_json(directory / files[name], {
            "format": MEMBER_FORMAT,
            "version": RECORDING_VERSION,
            "tenant": name,
            "state": tenant.to_dict(),
        })
    manifest = {
        "format": RECORDING_FORMAT,
        "version": RECORDING_VERSION,
        "gpulab_version": __version__,
        "lab": state.lab,
        "observed_at": state.observed_at,
        "seconds": state.seconds,
        "run_id": state.run_id,
        "checks": list(state.checks),
        "tenants": files,
        "profile": profile.model_dump(mode="json"),
    }
    path = directory / MANIFEST
    write_json(path, manifest)
    return path


def read_recording(directory: Path) -> Recording:
    """Read a directory written by `write_recording` (UsageError when it is not one, or when
    any file does not match the recording format's types)."""
    manifest_path = directory / MANIFEST
    manifest = read_document(manifest_path, Manifest)
    if manifest.stack not in (None, STACK):
        raise UsageError(f"{manifest_path} is not a {STACK} recording (stack {manifest.stack})")
    tenants: dict[str, TenantState] = {}
    for name, file_name in manifest.tenants.items():
        path = member_file(directory, manifest_path, file_name)
        document = read_document(path, TenantDocument)
        if document.tenant != name or document.state.tenant != name:
            raise UsageError(f"{path} holds tenant {document.state.tenant!r}, but the manifest "
                             f"lists it for {name!r}")
        tenants[name] = document.state
    return Recording(
        state=LabState(
            lab=manifest.lab,
            tenants=tenants,
            checks=manifest.checks,
            observed_at=manifest.observed_at,
            seconds=manifest.seconds,
            run_id=manifest.run_id,
        ),
        profile_data=manifest.profile,
        gpulab_version=manifest.gpulab_version,
    )


def recording_schemas() -> dict[str, Any]:
    """The JSON Schemas of kamaji-hami's recording files (docs/schemas/recording-v1/)."""
    return schemas(Manifest, TenantState, STACK)
