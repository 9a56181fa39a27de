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
    RECORDING_FORMAT,
    RECORDING_VERSION,
    decoding,
    member_file,
    read_json,
    require_version,
    write_json,
)

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile

__all__ = ["Recording", "read_recording", "write_recording"]


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
            "format": f"{RECORDING_FORMAT}/tenant",
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
    """Read a directory written by `write_recording` (UsageError when it is not one)."""
    manifest_path = directory / MANIFEST
    manifest = require_version(manifest_path, read_json(manifest_path), RECORDING_FORMAT)
    tenants: dict[str, TenantState] = {}
    files = manifest.get("tenants")
    if not isinstance(files, dict):
        raise UsageError(f"{manifest_path} has no 'tenants' mapping")
    for name, file_name in files.items():
        path = member_file(directory, manifest_path, file_name)
        data = require_version(path, read_json(path), f"{RECORDING_FORMAT}/tenant")
        state = data.get("state")
        if not isinstance(state, dict):
            raise UsageError(f"{path} has no 'state' object")
        with decoding(path):
            tenants[str(name)] = TenantState.from_dict(state)
    profile = manifest.get("profile")
    with decoding(manifest_path):
        return _recording(manifest, tenants, profile)


def _recording(manifest: dict[str, Any], tenants: dict[str, TenantState], profile: Any
               ) -> Recording:
    return Recording(
        state=LabState(
            lab=str(manifest.get("lab") or ""),
            tenants=tenants,
            checks=tuple(str(c) for c in manifest.get("checks") or ()),
            observed_at=str(manifest.get("observed_at") or ""),
            seconds=float(manifest.get("seconds") or 0.0),
            run_id=str(manifest.get("run_id") or ""),
        ),
        profile_data=profile if isinstance(profile, dict) else {},
        gpulab_version=str(manifest.get("gpulab_version") or ""),
    )
