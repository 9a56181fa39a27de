"""The recording format's helpers (gpulab/verify/recording.py), one refusal at a time: the line
the user reads for each kind of bad recording, and what a good one reads back as.

tests/unit/test_recording_schema.py and tests/*/test_report.py run whole recordings; these pin
the wording and the edges (mutation testing, docs/dev/mutation-testing.md, found them
unpinned)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from gpulab.errors import UsageError
from gpulab.verify import recording
from gpulab.verify.recording import (
    MANIFEST,
    Manifest,
    MemberDocument,
    member_file,
    read_document,
    read_json,
    recording_stack,
    require_version,
    schemas,
    write_json,
)

if TYPE_CHECKING:
    from pathlib import Path


def _manifest(**fields: object) -> dict[str, object]:
    return {"format": "gpulab-verify-recording", "version": 1, "tenants": {"a": "state-a.json"},
            **fields}


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_format_names() -> None:
    assert (recording.RECORDING_FORMAT, recording.MEMBER_FORMAT, recording.RECORDING_VERSION,
            MANIFEST) == ("gpulab-verify-recording", "gpulab-verify-recording/tenant", 1,
                          "manifest.json")


def test_a_manifest_reads_back_with_its_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path / MANIFEST, _manifest(stack="vcluster-kai", seconds=2.5,
                                                 checks=["TC-01"], unknown="ignored"))
    manifest = read_document(path, Manifest)
    assert (manifest.stack, manifest.seconds, manifest.checks, manifest.tenants) == (
        "vcluster-kai", 2.5, ("TC-01",), {"a": "state-a.json"})
    assert (manifest.lab, manifest.run_id, manifest.profile) == ("", "", {})
    assert recording_stack(tmp_path) == "vcluster-kai"
    _write(path, _manifest())
    assert recording_stack(tmp_path) is None  # absent: kamaji-hami's recordings before stacks


def test_a_wrong_type_names_the_file_the_field_and_what_was_there(tmp_path: Path) -> None:
    path = _write(tmp_path / MANIFEST, _manifest(seconds="2"))
    with pytest.raises(UsageError) as err:
        read_document(path, Manifest)
    assert err.value.message == (f"{path} does not match the recording format: seconds: Input "
                                 f"should be a valid number, got \"2\"")
    assert err.value.hint == "was it edited by hand? re-record with gpulab verify --record"


def test_more_than_one_wrong_field_says_how_many_more(tmp_path: Path) -> None:
    path = _write(tmp_path / MANIFEST, _manifest(seconds="2", lab=3, run_id=[]))
    with pytest.raises(UsageError) as err:
        read_document(path, Manifest)
    assert err.value.message.endswith(": lab: Input should be a valid string, got 3 (and 2 more)")
    _write(path, _manifest(lab=3))
    with pytest.raises(UsageError) as one:
        read_document(path, Manifest)
    assert one.value.message.endswith(": lab: Input should be a valid string, got 3")


def test_a_long_wrong_value_is_cut_to_sixty_characters(tmp_path: Path) -> None:
    long = "x" * 100
    path = _write(tmp_path / MANIFEST, _manifest(seconds=long))
    with pytest.raises(UsageError) as err:
        read_document(path, Manifest)
    shown = err.value.message.rsplit("got ", 1)[1]
    assert shown == json.dumps(long)[:57] + "..."
    assert len(shown) == 60
    exact = "y" * 58  # with its quotes: 60 characters, shown whole
    _write(path, _manifest(seconds=exact))
    with pytest.raises(UsageError) as whole:
        read_document(path, Manifest)
    assert whole.value.message.endswith(f"got {json.dumps(exact)}")
    over = "y" * 59  # with its quotes: 61 characters, one too many
    _write(path, _manifest(seconds=over))
    with pytest.raises(UsageError) as cut:
        read_document(path, Manifest)
    assert cut.value.message.endswith(f"got {json.dumps(over)[:57]}...")


def test_a_missing_field_shows_the_document_it_is_missing_from(tmp_path: Path) -> None:
    path = _write(tmp_path / "state-a.json",
                  {"format": "gpulab-verify-recording/tenant", "version": 1})
    with pytest.raises(UsageError) as err:
        read_document(path, MemberDocument[dict])
    assert err.value.message == (
        f"{path} does not match the recording format: tenant: Field required, got "
        '{"format": "gpulab-verify-recording/tenant", "version": 1} (and 1 more)')


@dataclass
class _State:
    count: int


def test_a_member_document_reads_its_stack_state(tmp_path: Path) -> None:
    path = _write(tmp_path / "state-a.json", {"format": "gpulab-verify-recording/tenant",
                                               "version": 1, "tenant": "a",
                                               "state": {"count": 3}})
    document = read_document(path, MemberDocument[_State])
    assert (document.tenant, document.state) == ("a", _State(3))


@pytest.mark.parametrize(("data", "message"), [
    ([], "is not a gpulab verify recording (format 'gpulab-verify-recording' expected)"),
    ({"format": "other"}, "is not a gpulab verify recording (format 'gpulab-verify-recording' "
                          "expected)"),
    ({"format": "gpulab-verify-recording"}, "is recording version None; this gpulab reads "
                                            "version 1"),
    ({"format": "gpulab-verify-recording", "version": 2}, "is recording version 2; this gpulab "
                                                          "reads version 1"),
])
def test_format_and_version_are_checked_first(tmp_path: Path, data: object, message: str) -> None:
    path = tmp_path / MANIFEST
    with pytest.raises(UsageError) as err:
        require_version(path, data, recording.RECORDING_FORMAT)
    assert err.value.message == f"{path} {message}"
    _write(path, data)
    with pytest.raises(UsageError) as read:
        read_document(path, Manifest)
    assert read.value.message == f"{path} {message}"


def test_a_newer_version_says_which_gpulab_can_replay_it(tmp_path: Path) -> None:
    data = {"format": "x", "version": 3}
    assert require_version(tmp_path, data, "x", 3) is data
    with pytest.raises(UsageError) as err:
        require_version(tmp_path, data, "x")
    assert err.value.hint == "replay it with the gpulab version that recorded it"


def test_missing_unreadable_and_not_json_files(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.json"
    with pytest.raises(UsageError) as err:
        read_json(missing)
    assert (err.value.message, err.value.hint) == (
        f"{missing} not found", "--replay takes a directory written by --record")
    with pytest.raises(UsageError) as folder:
        read_json(tmp_path)
    assert folder.value.message.startswith(f"{tmp_path} is not readable: ")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(UsageError, match=r"latin.json is not readable: 'utf-8' codec"):
        read_json(latin)
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ', encoding="utf-8")
    with pytest.raises(UsageError) as not_json:
        read_json(broken)
    assert not_json.value.message.startswith(f"{broken} is not readable JSON: Expecting value")
    assert read_json(_write(tmp_path / "ok.json", {"a": [1]})) == {"a": [1]}


def test_write_json_is_indented_ends_with_a_newline_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json(path, {"b": 1, "a": [2]})
    assert path.read_text(encoding="utf-8") == '{\n  "b": 1,\n  "a": [\n    2\n  ]\n}\n'
    write_json(path, {"c": 3})  # replaced whole
    assert json.loads(path.read_text(encoding="utf-8")) == {"c": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_schemas_are_draft_2020_12_with_an_id_per_stack_and_role() -> None:
    out = schemas(Manifest, _State, "my-stack")
    assert sorted(out) == ["manifest", "member"]
    for role in ("manifest", "member"):
        assert out[role]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert out[role]["$id"] == (
            f"https://gpulab.dev/schemas/recording-v1/my-stack.{role}.schema.json")
    assert "tenants" in out["manifest"]["required"]
    assert out["member"]["properties"]["state"] == {"$ref": "#/$defs/_State"}


@pytest.mark.parametrize("name", ["", ".", "..", "sub/state.json", "../state.json",
                                  "/etc/passwd", 3, None])
def test_a_state_file_must_be_a_plain_name(tmp_path: Path, name: object) -> None:
    manifest = tmp_path / MANIFEST
    with pytest.raises(UsageError) as err:
        member_file(tmp_path, manifest, name)
    assert err.value.message == (f"{manifest}: state file {str(name)!r} must be a plain file "
                                 "name")


def test_a_state_file_may_not_lead_out_of_the_recording(tmp_path: Path) -> None:
    recording_dir = tmp_path / "rec"
    recording_dir.mkdir()
    outside = _write(tmp_path / "outside.json", {})
    (recording_dir / "state-a.json").symlink_to(outside)
    with pytest.raises(UsageError) as err:
        member_file(recording_dir, recording_dir / MANIFEST, "state-a.json")
    assert err.value.message == (f"{recording_dir / MANIFEST}: state file 'state-a.json' leads "
                                 f"outside the recording ({outside})")
    assert err.value.hint == "a recording is one self-contained folder"


def test_a_state_file_may_link_inside_the_recording_and_may_be_missing(tmp_path: Path) -> None:
    real = _write(tmp_path / "state-real.json", {})
    (tmp_path / "state-a.json").symlink_to(real)
    assert member_file(tmp_path, tmp_path / MANIFEST, "state-a.json") == tmp_path / "state-a.json"
    assert member_file(tmp_path, tmp_path / MANIFEST, "state-b.json") == tmp_path / "state-b.json"


def test_a_state_file_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state-a.json").mkdir()
    with pytest.raises(UsageError) as err:
        member_file(tmp_path, tmp_path / MANIFEST, "state-a.json")
    assert err.value.message == f"{tmp_path / 'state-a.json'} is not a regular file"


class _Versioned(recording.Document):
    """A format with versions of its own (Document.VERSION overridden)."""

    FORMAT = "my-format"
    VERSION = 2
    format: str
    version: int


def test_a_format_with_its_own_version_is_read_at_that_version(tmp_path: Path) -> None:
    path = _write(tmp_path / "doc.json", {"format": "my-format", "version": 2})
    assert read_document(path, _Versioned).version == 2
    _write(path, {"format": "my-format", "version": 1})
    with pytest.raises(UsageError, match=r"is recording version 1; this gpulab reads version 2"):
        read_document(path, _Versioned)


def test_a_document_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / MANIFEST
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(UsageError) as err:
        read_document(path, Manifest)
    assert err.value.message.startswith(f"{path} is not readable JSON: ")
