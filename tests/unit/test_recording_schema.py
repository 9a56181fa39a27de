"""The recording format's published JSON Schemas match the reader, and the reader refuses what
they refuse: every committed recording validates; a value of the wrong type at any typed position
is refused by both (one UsageError naming the field, never a traceback)."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from gpulab.errors import UsageError
from gpulab.stacks.kamaji_hami.record import TenantDocument
from gpulab.stacks.kamaji_hami.record import read_recording as read_kamaji
from gpulab.stacks.vcluster_kai.record import KaiManifest, TeamDocument
from gpulab.stacks.vcluster_kai.record import read_recording as read_kai
from gpulab.verify.recording import Manifest, read_document
from tests.recording_schemas import SCHEMA_DIR, derived, render
from tests.recordings import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pydantic import BaseModel

KAI = ("kai-healthy", "kai-writeup-queues")
KAMAJI = ("writeup-healthy", "writeup-webhook-bypassed")


def _stack(recording: str) -> str:
    return "vcluster-kai" if recording in KAI else "kamaji-hami"


def _schema(stack: str, role: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMA_DIR / f"{stack}.{role}.schema.json").read_text())
    return data


def test_the_committed_schemas_are_what_the_code_derives() -> None:
    committed = sorted(p.name for p in SCHEMA_DIR.iterdir())
    assert committed == sorted(derived()), "run python -m tests.recording_schemas"
    for name, schema in derived().items():
        assert (SCHEMA_DIR / name).read_text() == render(schema), \
            f"{name} is stale: run python -m tests.recording_schemas"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_committed_recording_exists_and_validates() -> None:
    assert sorted(p.name for p in RECORDINGS.iterdir()) == sorted(KAI + KAMAJI)
    for recording in KAI + KAMAJI:
        stack = _stack(recording)
        directory = RECORDINGS / recording
        manifest = json.loads((directory / "manifest.json").read_text())
        jsonschema.validate(manifest, _schema(stack, "manifest"),
                            cls=jsonschema.Draft202012Validator)
        for file in manifest["tenants"].values():
            jsonschema.validate(json.loads((directory / file).read_text()),
                                _schema(stack, "member"), cls=jsonschema.Draft202012Validator)
        reader = read_kai if stack == "vcluster-kai" else read_kamaji
        assert reader(directory).state.checks == tuple(manifest["checks"])


# Values of every JSON type; each typed position accepts at most a few of them.
WRONG = (7, 1.5, "x", True, None, [], {})


def _positions(value: Any, path: tuple[str | int, ...] = (), depth: int = 4
               ) -> Iterator[tuple[str | int, ...]]:
    """Paths into `value` down to `depth` (where the format's own types live; below that are
    API objects, typed only as objects)."""
    if len(path) >= depth:
        return
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))[:2]
    for key, child in items:
        yield (*path, key)
        yield from _positions(child, (*path, key), depth)


def _replaced(document: Any, path: tuple[str | int, ...], new: Any) -> Any:
    out = copy.deepcopy(document)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return out


CASES = [(recording, role) for recording in KAI + KAMAJI for role in ("manifest", "member")]


@pytest.mark.slow
@pytest.mark.parametrize(("recording", "role"), CASES)
def test_the_reader_and_the_schema_agree_on_every_wrong_type(recording: str, role: str,
                                                             tmp_path: Path) -> None:
    stack = _stack(recording)
    directory = RECORDINGS / recording
    manifest = json.loads((directory / "manifest.json").read_text())
    if role == "manifest":
        document, name = manifest, "manifest.json"
    else:
        name = sorted(manifest["tenants"].values())[0]
        document = json.loads((directory / name).read_text())
    model: type[BaseModel]
    if role == "manifest":
        model = KaiManifest if stack == "vcluster-kai" else Manifest
    else:
        model = TeamDocument if stack == "vcluster-kai" else TenantDocument
    validator = jsonschema.Draft202012Validator(_schema(stack, role))
    path_file = tmp_path / name
    refused = 0
    for position in _positions(document):
        if position in (("format",), ("version",)):
            continue  # checked before the types, with their own messages
        for new in WRONG:
            variant = _replaced(document, position, new)
            path_file.write_text(json.dumps(variant))
            schema_ok = validator.is_valid(variant)
            try:
                read_document(path_file, model)  # type: ignore[type-var]
            except UsageError as err:
                assert not schema_ok, f"{position}={new!r}: reader refused, schema accepts: {err}"
                assert "does not match the recording format" in str(err)
                refused += 1
            else:
                assert schema_ok, f"{position}={new!r}: reader accepts, schema refuses"
    assert refused > 20, "the walk reached the format's typed fields"
