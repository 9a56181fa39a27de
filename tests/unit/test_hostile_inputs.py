"""Hostile inputs beyond profiles (issue #33), each through the CLI: documents nested thousands
deep (a recording, a kubeconfig, an API server's answer), output paths gpulab cannot write
(`--junit`, `--record`, `logs FOLDER`, GPULAB_HOME). Each is refused in one line on stderr that
names the file, with a stable exit code (2 for a bad argument, 4 for the host), no traceback,
before any work."""

from __future__ import annotations

import errno
import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpulab import nesting
from gpulab.cli import app

if TYPE_CHECKING:
    from collections.abc import Iterator

runner = CliRunner()
RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"
DEEP = 5000  # far past MAX_DEPTH and Python's recursion limit


def _deep_json(depth: int, inner: str = "[]") -> str:
    return '{"a": ' * (depth // 2) + "[" * (depth - depth // 2 - 1) + inner + \
        "]" * (depth - depth // 2 - 1) + "}" * (depth // 2)


def _one_error_line(result: Any, *words: str) -> str:
    """The one `error:` line on stderr; no traceback anywhere."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "RecursionError" not in output, output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- nesting


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(min_value=1, max_value=3 * nesting.MAX_DEPTH),
       kinds=st.lists(st.sampled_from("[{"), min_size=1, max_size=8))
def test_json_is_read_up_to_the_limit_and_refused_past_it(depth: int, kinds: list[str]) -> None:
    opening = "".join(kinds[i % len(kinds)] if kinds[i % len(kinds)] == "[" else '{"k": '
                      for i in range(depth))
    closing = "".join("]" if kinds[i % len(kinds)] == "[" else "}"
                      for i in reversed(range(depth)))
    text = opening + "0" + closing
    if depth <= nesting.MAX_DEPTH:
        assert json.loads(text) == nesting.json_loads(text)
    else:
        with pytest.raises(nesting.TooDeep, match=f"nested deeper than {nesting.MAX_DEPTH}"):
            nesting.json_loads(text)


@pytest.mark.parametrize("depth", [1, nesting.MAX_DEPTH, nesting.MAX_DEPTH + 1])
@pytest.mark.parametrize("kind", ["[", "{"])
def test_json_at_the_limit_is_read_and_one_level_more_is_not(depth: int, kind: str) -> None:
    text = ('{"k": ' * depth + "0" + "}" * depth if kind == "{"
            else "[" * depth + "0" + "]" * depth)
    if depth <= nesting.MAX_DEPTH:
        assert nesting.json_loads(text.encode()) == json.loads(text)
    else:
        with pytest.raises(nesting.TooDeep):
            nesting.json_loads(text)
    assert nesting.json_loads("0") == 0  # a scalar is no level


def test_json_options_are_passed_to_the_decoder() -> None:
    with pytest.raises(ValueError, match="NaN"):
        nesting.json_loads("[NaN]", parse_constant=lambda name: (_ for _ in ()).throw(
            ValueError(name)))


@pytest.mark.parametrize("depth", [nesting.MAX_DEPTH, nesting.MAX_DEPTH + 1, DEEP])
def test_yaml_is_read_up_to_the_limit_and_refused_past_it(depth: int) -> None:
    text = "a: " + "[" * (depth - 1) + "]" * (depth - 1)
    if depth <= nesting.MAX_DEPTH:
        assert nesting.yaml_load(text) == yaml.safe_load(text)
    else:
        with pytest.raises(nesting.TooDeep):
            nesting.yaml_load(text)


def test_closed_siblings_do_not_count_and_do_not_hide_what_follows() -> None:
    """Depth is how deep a value is, not how many containers came before it (YAML events); and a
    scalar met on the walk does not end it (JSON)."""
    siblings = "[" + ", ".join(["[0]"] * (2 * nesting.MAX_DEPTH)) + "]"
    assert len(nesting.yaml_load(siblings)) == 2 * nesting.MAX_DEPTH
    # many closed siblings, then a value deep enough to exhaust PyYAML's recursive composer
    # (600 levels) had closing counted twice: refused before composing, not a RecursionError
    deep = "[" * 600 + "]" * 600
    # what a count short by MAX_DEPTH - 1 could let through, PyYAML still composes
    assert yaml.safe_load("[" * (2 * nesting.MAX_DEPTH - 1) + "]" * (2 * nesting.MAX_DEPTH - 1))
    with pytest.raises(nesting.TooDeep):
        nesting.yaml_load("[" + "[0], " * 600 + deep + "]")
    deep = "[" * (nesting.MAX_DEPTH + 50) + "]" * (nesting.MAX_DEPTH + 50)
    with pytest.raises(nesting.TooDeep):
        nesting.json_loads(f"[{deep}, 0]")


def test_an_alias_chain_that_builds_deep_is_refused() -> None:
    """Each anchor one level deeper than the last: the text is two levels deep, what it builds
    is not."""
    text = "\n".join(["- &a0 [0]", *(f"- &a{i} [*a{i - 1}]"
                                      for i in range(1, nesting.MAX_DEPTH + 5))])
    with pytest.raises(nesting.TooDeep):
        nesting.yaml_load(text)


@pytest.mark.parametrize("member", ["manifest.json", "state-tenant-a.json"])
def test_a_recording_nested_too_deep_is_one_line_exit_2(tmp_path: Path, member: str) -> None:
    recording = tmp_path / "rec"
    shutil.copytree(RECORDINGS / "writeup-healthy", recording)
    path = recording / member
    original = path.read_text(encoding="utf-8").rstrip()
    assert original.endswith("}")
    path.write_text(original[:-1] + f', "deep": {_deep_json(DEEP)}}}', encoding="utf-8")
    result = runner.invoke(app, ["verify", "replay", str(recording)])
    assert result.exit_code == 2, result.output
    _one_error_line(result, str(path), "nested deeper than 200 levels")


def test_a_kubeconfig_nested_too_deep_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: " + "[" * DEEP + "]" * DEEP,
                      encoding="utf-8")
    result = runner.invoke(app, ["verify", "cluster", "--kubeconfig", str(config), "--inspect"])
    assert result.exit_code == 2, result.output
    _one_error_line(result, str(config), "nested deeper than 200 levels")


class _DeepAnswers(BaseHTTPRequestHandler):
    """An API server whose every answer is JSON nested DEEP levels."""

    def do_GET(self) -> None:
        body = _deep_json(DEEP).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def deep_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DeepAnswers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_api_answer_nested_too_deep_is_one_line_exit_4(tmp_path: Path,
                                                           deep_server: str) -> None:
    config = tmp_path / "k.yaml"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "deep",
        "clusters": [{"name": "c", "cluster": {"server": deep_server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "deep", "context": {"cluster": "c", "user": "u"}}]}),
        encoding="utf-8")
    result = runner.invoke(app, ["verify", "cluster", "--kubeconfig", str(config), "--inspect",
                                 "--request-timeout", "5s"])
    assert result.exit_code == 4, result.output
    _one_error_line(result, deep_server, "nested deeper than 200 levels")
    assert result.stdout == ""


# --------------------------------------------------------------------------- output paths


def _replay(*args: str) -> Any:
    return runner.invoke(app, ["verify", "replay", str(RECORDINGS / "writeup-healthy"), *args])


def test_junit_naming_a_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    result = _replay("--junit", str(tmp_path))
    assert result.exit_code == 2, result.output
    _one_error_line(result, f"--junit {tmp_path} is a folder")
    assert "TC-01" not in result.stdout  # refused before anything was judged


def test_junit_under_a_file_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    result = _replay("--junit", str(tmp_path / "file" / "v.xml"))
    assert result.exit_code == 2, result.output
    _one_error_line(result, f"{tmp_path / 'file'} is a file, not a folder")


def test_junit_in_a_folder_to_make_is_written(tmp_path: Path) -> None:
    result = _replay("--junit", str(tmp_path / "new" / "v.xml"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "v.xml").read_text(encoding="utf-8").startswith("<?xml")


def test_junit_where_gpulab_may_not_write_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """root writes anywhere whatever the modes: the refusal os.access gives anyone else is
    stood in for."""
    import gpulab.paths

    real = gpulab.paths.os.access
    monkeypatch.setattr(gpulab.paths.os, "access",
                        lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    result = _replay("--junit", str(tmp_path / "v.xml"))
    assert result.exit_code == 2, result.output
    _one_error_line(result, f"{tmp_path} is not writable")


def test_record_naming_a_file_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["verify", "cluster", "--kubeconfig", str(tmp_path / "none"),
                                 "--record", str(tmp_path / "file")])
    assert result.exit_code == 2, result.output
    _one_error_line(result, f"--record {tmp_path / 'file'} is a file, not a folder")


def test_logs_into_a_file_is_refused_before_collecting(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["logs", str(tmp_path / "file"), "--name", "nosuchlab"])
    assert result.exit_code == 2, result.output
    _one_error_line(result, f"FOLDER {tmp_path / 'file'} is a file, not a folder")


def test_gpulab_home_that_is_a_file_is_a_host_problem_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("GPULAB_HOME", str(home))
    result = runner.invoke(app, ["down", "--name", "blind"])
    assert result.exit_code == 4, result.output
    # not "nothing to remove": whether the lab exists cannot be read
    _one_error_line(result, f"cannot read the lab folder {home / 'labs' / 'blind'}",
                    "Not a directory", f"GPULAB_HOME={home}")
    assert "nothing to remove" not in result.output
    assert home.read_text(encoding="utf-8") == "not a folder"


def test_gpulab_home_that_is_read_only_is_a_host_problem_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """root writes anywhere whatever the modes: the kernel's EACCES is stood in for."""

    home = tmp_path / "home"
    (home / "labs" / "blind").mkdir(parents=True)  # a lab to remove: down takes its lock
    monkeypatch.setenv("GPULAB_HOME", str(home))

    def refused(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refused)
    result = runner.invoke(app, ["down", "--name", "blind"])
    assert result.exit_code == 4, result.output
    _one_error_line(result, f"cannot write the lab folder {home / 'labs' / 'blind'}",
                    "Permission denied")
    assert not any((home / "labs" / "blind").iterdir())


@pytest.mark.parametrize("output", [[], ["-o", "json"]], ids=["text", "json"])
def test_labs_with_gpulab_home_a_file_is_unknown_not_empty(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: list[str]) -> None:
    """A folder of labs that cannot be read is a host problem, not "no labs on this host"."""
    home = tmp_path / "home"
    home.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("GPULAB_HOME", str(home))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["labs", *output])
    assert result.exit_code == 4, result.output
    _one_error_line(result, f"cannot read the lab folder {home / 'labs'}", "Not a directory",
                    f"GPULAB_HOME={home}", "readable")
    assert "no labs" not in result.output and result.stdout == ""


def test_labs_with_no_folder_yet_is_no_lab(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "absent"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["labs"])
    assert result.exit_code == 0, result.output
    assert "no labs on this host" in result.stderr
