"""The recording format every stack shares (docs/recording-format.md): a directory with a
`manifest.json` (format, version, stack, lab, checks, the profile used, member → file) and one
state file per member, each a JSON document with `format` and `version`.

A stack's `record.py` writes and reads its own state files with these helpers.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "MANIFEST",
    "RECORDING_FORMAT",
    "RECORDING_VERSION",
    "decoding",
    "load_document",
    "member_file",
    "read_json",
    "recording_stack",
    "require_version",
    "write_json",
]

RECORDING_FORMAT = "gpulab-verify-recording"

RECORDING_VERSION = 1

MANIFEST = "manifest.json"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_json(path: Path, data: Any) -> None:
    """Write a recording file atomically (temporary name, then rename)."""
    _write_json(path, data)


def load_document(path: Path, fmt: str) -> dict[str, Any]:
    """A recording file of format `fmt` at this RECORDING_VERSION (UsageError otherwise)."""
    return require_version(path, read_json(path), fmt)


def recording_stack(directory: Path) -> str | None:
    """The stack a recording was made by (its manifest's `stack`; None when absent)."""
    manifest = load_document(directory / MANIFEST, RECORDING_FORMAT)
    stack = manifest.get("stack")
    if stack is None:
        return None
    if not isinstance(stack, str):
        raise UsageError(f"{directory / MANIFEST}: 'stack' must be a string")
    return stack


def read_json(path: Path) -> Any:
    """A recording file's JSON (UsageError when it is missing or not JSON)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} not found",
                         hint="--replay takes a directory written by --record") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"{path} is not readable JSON: {err}") from None


def require_version(path: Path, data: Any, fmt: str) -> dict[str, Any]:
    """`data` as a document of format `fmt` at this RECORDING_VERSION (UsageError otherwise)."""
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise UsageError(f"{path} is not a gpulab verify recording (format {fmt!r} expected)")
    version = data.get("version")
    if version != RECORDING_VERSION:
        raise UsageError(
            f"{path} is recording version {version}; this gpulab reads version "
            f"{RECORDING_VERSION}",
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


@contextmanager
def decoding(path: Path) -> Iterator[None]:
    """Values of the wrong type in a recording file become one UsageError naming the file,
    never a traceback."""
    try:
        yield
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        raise UsageError(f"{path} does not match the recording format: "
                         f"{type(err).__name__}: {err}",
                         hint="was it edited by hand? re-record with gpulab verify --record") \
            from None

