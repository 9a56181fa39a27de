"""The recording format every stack shares (docs/recording-format.md): a directory with a
`manifest.json` (format, version, stack, lab, checks, the profile used, member → file) and one
state file per member, each a JSON document with `format` and `version`.

The format is typed, not only keyed: `Manifest` and `MemberDocument[<stack state>]` are read with
pydantic in strict JSON mode, so a wrong type anywhere (a string for a number, a number for a
list, an unknown probe outcome) is one UsageError naming the file and the field. The same models
give the published JSON Schemas (docs/schemas/recording-v1/, `schemas()`). Unknown keys are
ignored and missing ones take their defaults, so adding a field keeps the version.

A stack's `record.py` writes and reads its own state files with these helpers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpulab import nesting
from gpulab.errors import UsageError

__all__ = [
    "MANIFEST",
    "MEMBER_FORMAT",
    "RECORDING_FORMAT",
    "RECORDING_VERSION",
    "Document",
    "Manifest",
    "MemberDocument",
    "member_file",
    "read_document",
    "read_json",
    "recording_stack",
    "require_version",
    "schemas",
    "write_json",
]

RECORDING_FORMAT = "gpulab-verify-recording"

MEMBER_FORMAT = f"{RECORDING_FORMAT}/tenant"

RECORDING_VERSION = 1

MANIFEST = "manifest.json"

StateT = TypeVar("StateT")


class Document(BaseModel):
    """A recording file: a JSON object with `format` (FORMAT) and `version`."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")
    FORMAT: ClassVar[str]
    VERSION: ClassVar[int] = RECORDING_VERSION  # a format with its own versions overrides it


DocumentT = TypeVar("DocumentT", bound=Document)


class Manifest(Document):
    """manifest.json: what was observed, for which checks, with which profile, and where each
    member's (tenant's, team's) state file is."""

    FORMAT: ClassVar[str] = RECORDING_FORMAT

    format: Literal["gpulab-verify-recording"]
    version: Literal[1]
    stack: str | None = Field(None, description="the stack that recorded it; absent: kamaji-hami")
    gpulab_version: str = ""
    lab: str = ""
    observed_at: str = Field("", description="ISO 8601 UTC start of the observation")
    seconds: float = Field(0.0, ge=0, description="wall time of the observation")
    run_id: str = Field("", description="the gpulab.dev/run label verify put on its pods")
    checks: tuple[str, ...] = Field((), description="check ids observed, in registry order")
    tenants: dict[str, str] = Field(description="member name -> state file in the directory")
    profile: dict[str, Any] = Field(default_factory=dict,
                                    description="the profile the run used, as JSON")


class MemberDocument(Document, Generic[StateT]):
    """state-<member>.json: one member's observed state (the stack's dataclass)."""

    FORMAT: ClassVar[str] = MEMBER_FORMAT

    format: Literal["gpulab-verify-recording/tenant"]
    version: Literal[1]
    tenant: str
    state: StateT


def schemas(manifest: type[Manifest], state: type[Any], stack: str) -> dict[str, Any]:
    """The JSON Schemas (draft 2020-12) of a stack's recording documents, by file role."""
    base = f"https://gpulab.dev/schemas/recording-v{RECORDING_VERSION}/{stack}"
    out: dict[str, Any] = {}
    for role, model in (("manifest", manifest), ("member", MemberDocument[state])):  # type: ignore[valid-type]
        schema = model.model_json_schema(mode="validation")
        out[role] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                     "$id": f"{base}.{role}.schema.json", **schema}
    return out


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_json(path: Path, data: Any) -> None:
    """Write a recording file atomically (temporary name, then rename)."""
    _write_json(path, data)


def read_document(path: Path, model: type[DocumentT]) -> DocumentT:
    """A recording file read as `model` (its format, its VERSION, every field's type);
    UsageError naming the file and the first wrong field otherwise."""
    text = _read_text(path)
    require_version(path, _parsed(path, text), model.FORMAT, model.VERSION)
    try:
        return model.model_validate_json(text, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(document)"
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        got = json.dumps(first.get("input"), default=str)
        got = got if len(got) <= 60 else got[:57] + "..."
        raise UsageError(
            f"{path} does not match the recording format: {where}: {first['msg']}, "
            f"got {got}{more}",
            hint="was it edited by hand? re-record with gpulab verify --record") from None


def recording_stack(directory: Path) -> str | None:
    """The stack a recording was made by (its manifest's `stack`; None when absent)."""
    return read_document(directory / MANIFEST, Manifest).stack


def read_json(path: Path) -> Any:
    """A recording file's JSON (UsageError when it is missing or not JSON)."""
    return _parsed(path, _read_text(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path} not found",
                         hint="--replay takes a directory written by --record") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"{path} is not readable: {err}") from None


def _parsed(path: Path, text: str) -> Any:
    try:
        return nesting.json_loads(text)
    except ValueError as err:
        raise UsageError(f"{path} is not readable JSON: {err}") from None


def require_version(path: Path, data: Any, fmt: str, expected: int = RECORDING_VERSION
                    ) -> dict[str, Any]:
    """`data` as a document of format `fmt` at version `expected` (UsageError otherwise)."""
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise UsageError(f"{path} is not a gpulab verify recording (format {fmt!r} expected)")
    version = data.get("version")
    if version != expected:
        raise UsageError(
            f"{path} is recording version {version}; this gpulab reads version "
            f"{expected}",
            hint="replay it with the gpulab version that recorded it",
        )
    return data


def member_file(directory: Path, manifest_path: Path, name: object) -> Path:
    """A member's state file named in the manifest: a plain file name whose real path stays
    inside the recording (a symlink may not lead out of it); UsageError otherwise."""
    text = str(name)
    if not isinstance(name, str) or Path(text).name != text or text in ("", ".", ".."):
        raise UsageError(f"{manifest_path}: state file {text!r} must be a plain file name")
    path = directory / text
    root = directory.resolve()
    real = path.resolve()
    if real != root / text and root not in real.parents:
        raise UsageError(f"{manifest_path}: state file {text!r} leads outside the recording "
                         f"({real})", hint="a recording is one self-contained folder")
    if path.exists() and not real.is_file():
        raise UsageError(f"{path} is not a regular file")
    return path
