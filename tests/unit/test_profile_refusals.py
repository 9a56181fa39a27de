"""The exact refusal a user reads for each way a profile reference, file or text can be wrong
(gpulab/profile/load.py): the one line `error: ...` (message and hint) and the `file:line: path:
message` lines under it, as the CLI prints them. Every refusal names the file it is about."""

from __future__ import annotations

import os
import socket
import stat
import zipfile
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import AfterValidator, Field, model_validator

from gpulab.errors import ExitCode, HostError, ProfileError, UsageError
from gpulab.profile import load, safe_yaml
from gpulab.profile.base import LabProfile
from gpulab.stacks import load_profile, parse_profile, profile_models

BUILTINS = load.builtin_profiles()
KAMAJI = BUILTINS["kamaji-hami"]
TEXT = KAMAJI.read_text(encoding="utf-8")
SRC = "bad.yaml"
REINSTALL = ("reinstall gpulab: `pip install --force-reinstall WHEEL-OR-DIR` or `pipx reinstall "
             "gpulab`; or pass a profile file with --profile")


def _line_of(needle: str, text: str = TEXT) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


def _file_problems(path: Path) -> list[str]:
    """The problem lines of the ProfileError that loading the profile file `path` raises."""
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    return caught.value.problems


def _refusal(text: str, source: str = SRC, **models: type[LabProfile]) -> list[str]:
    """The problem lines under the refusal; the refusal line itself names the source and counts
    them."""
    with pytest.raises(ProfileError) as caught:
        if models:
            load.parse_profile(text, {**profile_models(), **models}, source)
        else:
            parse_profile(text, source)
    problems = caught.value.problems
    noun = "problem" if len(problems) == 1 else "problems"
    assert str(caught.value) == f"{source}: {len(problems)} {noun} in profile, nothing was created"
    assert caught.value.exit_code == ExitCode.USAGE
    return problems


# --------------------------------------------------------------------------- the text


def test_a_nul_byte_is_refused_before_any_parsing() -> None:
    assert _refusal("name: a\x00b\n") == [f"{SRC}: is not text (it contains NUL bytes)"]


def test_a_text_over_the_size_limit_is_refused() -> None:
    text = "#" + "x" * safe_yaml.MAX_BYTES + "\n"
    assert _refusal(text) == [f"{SRC}: is {len(text)} bytes; a profile is at most "
                              f"{safe_yaml.MAX_BYTES} bytes"]


def test_a_syntax_error_names_its_line_and_what_yaml_expected() -> None:
    assert _refusal("name: [unclosed\nstack: kamaji-hami\n") == [
        f"{SRC}:2: not valid YAML: expected ',' or ']', but got ':'"]


@pytest.mark.parametrize(("char", "code"), [("\x07", "0007"), ("\x1b", "001b"),
                                            ("\ud800", "d800")])
def test_a_control_character_or_lone_surrogate_is_one_line_with_its_line(char: str,
                                                                         code: str) -> None:
    """The YAML reader's own message has a second line ('in "<unicode string>", position 8')
    and no line number; the user gets one line that says where. A lone surrogate (text that came
    through surrogateescape) is refused the same way, not with a UnicodeEncodeError."""
    assert _refusal(f"name: lab\nstack: kamaji-hami\ndescription: a{char}b\n") == [
        f"{SRC}:3: not valid YAML: unacceptable character #x{code}: special characters are not "
        "allowed"]


def test_unsafe_yaml_names_each_line() -> None:
    text = TEXT.replace("name: tenant-a", "name: yes", 1).replace("count: 2", "count: 0002", 1)
    assert sorted(_refusal(text)) == [
        f"{SRC}:{_line_of('count: 0002', text)}: '0002' is an octal number in YAML 1.1 (write "
        "the number without the leading 0, or quote it)",
        f"{SRC}:{_line_of('- name: yes', text)}: 'yes' is a boolean in YAML 1.1 (write "
        "true/false, or quote it)"]


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_file_says_so(text: str) -> None:
    assert _refusal(text) == [f"{SRC}: the file is empty"]


@pytest.mark.parametrize("text", ["- a list\n", "just a string\n", "42\n", "---\n"])
def test_a_document_that_is_not_a_mapping_says_so(text: str) -> None:
    assert _refusal(text) == [f"{SRC}:1: a profile must be a mapping of fields"]


def test_an_unknown_stack_is_named_on_its_line_with_the_known_ones() -> None:
    text = TEXT.replace("stack: kamaji-hami", "stack: kamaji-gpu", 1)
    assert _refusal(text) == [
        f"{SRC}:{_line_of('stack: kamaji-gpu', text)}: stack: must be one of kamaji-hami, "
        "vcluster-kai (got 'kamaji-gpu')"]


def test_a_missing_stack_is_reported_where_the_profile_starts() -> None:
    text = TEXT.replace("stack: kamaji-hami\n", "", 1)
    assert _refusal(text) == [
        f"{SRC}:{_line_of('apiVersion:', text)}: stack: must be one of kamaji-hami, "
        "vcluster-kai (got None)"]


def test_a_bad_list_item_is_reported_on_the_items_own_line() -> None:
    text = TEXT.rstrip("\n") + "\n  - tenant-c\n"
    assert _refusal(text) == [
        f"{SRC}:{_line_of('- tenant-c', text)}: tenants[2]: must be a mapping of fields"]


def test_an_empty_string_is_refused_as_empty() -> None:
    text = TEXT.replace("model: NVIDIA-L4", "model: ''", 1)
    line = _line_of("model: ''", text)
    assert _refusal(text) == [f"{SRC}:{line}: tenants[1].gpus[0].model: must not be empty"]


def test_semantic_problems_name_their_field() -> None:
    text = TEXT.replace("konnectivity_port: 8132", "konnectivity_port: 6443", 1)
    assert _refusal(text) == [
        f"{SRC}:{_line_of('konnectivity_port: 6443', text)}: "
        "tenants[0].control_plane.konnectivity_port: must differ from control_plane.port (6443)"]


# A stack model with what the built-in stacks do not use yet: `lt`, a union (pydantic tags each
# member in the error's location), a constraint with no message of gpulab's own, a rule on the
# whole profile. The loader takes any stack's model (gpulab.stacks passes them).
def _same(value: str) -> str:
    return value


class _Probe(LabProfile):
    stack: Literal["probe"]
    below_ten: int = Field(default=1, lt=10)
    either: Annotated[int, Field(gt=0)] | Annotated[str, AfterValidator(_same)] = 1
    ratio: float = Field(default=1.0, multiple_of=0.5)

    @model_validator(mode="after")
    def _whole(self) -> _Probe:
        if self.description == "refused":
            raise ValueError("the whole profile is refused")
        return self


PROBE = TEXT[:TEXT.index("components:")].replace("stack: kamaji-hami", "stack: probe")


def _probe(extra: str) -> list[str]:
    return _refusal(PROBE + extra, "probe.yaml", probe=_Probe)


def test_a_less_than_bound_is_shown_as_a_comparison() -> None:
    assert _probe("below_ten: 10\n") == [
        f"probe.yaml:{_line_of('below_ten', PROBE + 'below_ten')}: below_ten: must be < 10"]


def test_a_union_field_is_named_without_pydantics_member_tags() -> None:
    line = _line_of("either", PROBE + "either")
    assert _probe("either: [1]\n") == [f"probe.yaml:{line}: either: must be a whole number",
                                       f"probe.yaml:{line}: either: must be a string"]
    assert _probe("either: 0\n")[0] == f"probe.yaml:{line}: either: must be > 0"


def test_a_constraint_without_a_message_of_its_own_keeps_pydantics() -> None:
    assert _probe("ratio: 0.3\n") == [
        f"probe.yaml:{_line_of('ratio', PROBE + 'ratio')}: ratio: Input should be a multiple of "
        "0.5"]


def test_a_rule_on_the_whole_profile_is_reported_at_its_first_line() -> None:
    text = PROBE.replace("description: Kamaji tenants sharing mock NVIDIA GPUs through HAMi",
                         "description: refused")
    assert _refusal(text, "probe.yaml", probe=_Probe) == [
        f"probe.yaml:{_line_of('apiVersion:', text)}: <top>: the whole profile is refused"]


# --------------------------------------------------------------------------- the reference


def test_a_builtin_name_loads_the_builtin_file() -> None:
    loaded = load_profile("kamaji-hami")
    assert (loaded.source, loaded.builtin) == (KAMAJI, True)
    assert loaded.profile.name == "kamaji-hami"


def test_a_file_loads_as_not_builtin_from_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "mine"
    path.write_text(TEXT.replace("name: kamaji-hami", "name: mine", 1))
    loaded = load_profile(str(path))
    assert (loaded.source, loaded.builtin, loaded.profile.name) == (path, False, "mine")


@pytest.mark.parametrize("ref", ["absent.yaml", "absent.yml"])
def test_a_yaml_name_is_a_file_even_when_it_does_not_exist(
        ref: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        load_profile(ref)
    assert str(caught.value) == f"profile file not found: {ref} (check the --profile path)"


def test_a_file_in_the_current_folder_is_found_without_a_suffix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("kamaji-hami").write_text(TEXT.replace("name: kamaji-hami", "name: here", 1))
    loaded = load_profile("kamaji-hami")  # the file, not the built-in of that name
    assert (loaded.source, loaded.builtin, loaded.profile.name) == (Path("kamaji-hami"), False,
                                                                   "here")


def test_an_unknown_name_lists_the_builtins() -> None:
    with pytest.raises(UsageError) as caught:
        load_profile("nope")
    assert str(caught.value) == ("unknown profile 'nope' (built-in profiles: "
                                 f"{', '.join(BUILTINS)}; or pass a file path to --profile)")
    assert list(BUILTINS) == ["kamaji-hami", "vcluster-kai"]


def test_a_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    assert str(caught.value) == f"{path}: 1 problem in profile, nothing was created"
    assert caught.value.problems == [
        f"{path}: starts with a byte-order mark; save it as UTF-8 without BOM"]


def test_problems_in_a_file_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(TEXT.replace("pool_size: 51", "pool_size: 0", 1))
    assert _file_problems(path) == [
        f"{path}:{_line_of('pool_size')}: components.metallb.pool_size: must be >= 1"]


# --------------------------------------------------------------------------- the built-ins


def test_the_profiles_folder_can_be_pointed_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.yaml").write_text(TEXT)
    monkeypatch.setenv(load.PROFILES_ENV, str(tmp_path))
    assert load.builtin_profiles() == {"mine": tmp_path / "mine.yaml"}
    assert load_profile("mine").builtin


def test_an_empty_profiles_folder_names_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(load.PROFILES_ENV, str(tmp_path))
    with pytest.raises(HostError) as caught:
        load_profile("kamaji-hami")
    assert str(caught.value) == (
        f"no built-in profiles: ${load.PROFILES_ENV} is {tmp_path}, which holds no *.yaml file "
        f"(unset {load.PROFILES_ENV}, or point it at a folder of profiles)")
    assert caught.value.exit_code == ExitCode.HOST


def test_an_install_without_its_profiles_says_how_to_reinstall(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zipped import (never what pip or pipx make) has no folder of profiles: said, named."""
    archive = tmp_path / "gpulab.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("gpulab/profiles/kamaji-hami.yaml", TEXT)
    monkeypatch.delenv(load.PROFILES_ENV, raising=False)
    monkeypatch.setattr(load.resources, "files",
                        lambda package: zipfile.Path(archive, package.replace(".", "/") + "/"))
    folder = load.profiles_dir()
    assert type(folder) is type(Path()) and folder == archive / "gpulab" / "profiles"
    assert load.builtin_profiles() == {}
    with pytest.raises(HostError) as caught:
        load_profile("kamaji-hami")
    assert str(caught.value) == (f"no built-in profiles in {folder}: this gpulab install lacks "
                                 f"its package data ({REINSTALL})")


def _without_the_profiles_package(monkeypatch: pytest.MonkeyPatch, package: Path | None) -> None:
    """importlib.resources as where no install maps `gpulab.profiles` (and `gpulab` is `package`,
    when given)."""
    real = load.resources.files

    def files(name: str) -> object:
        if name == "gpulab.profiles":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return package if package is not None and name == "gpulab" else real(name)

    monkeypatch.delenv(load.PROFILES_ENV, raising=False)
    monkeypatch.setattr(load.resources, "files", files)


def test_a_checkout_nothing_maps_reads_its_top_level_profiles(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """gpulab imported from a checkout by PYTHONPATH, or an editable install in compat mode: the
    checkout's profiles/, beside gpulab/ and pyproject.toml."""
    _without_the_profiles_package(monkeypatch, None)
    checkout = Path(__file__).resolve().parents[2]
    assert load.profiles_dir().resolve() == checkout / "profiles"
    assert list(load.builtin_profiles()) == ["kamaji-hami", "vcluster-kai"]


def test_an_install_without_the_profiles_package_is_not_read_from_its_neighbours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An install (no pyproject.toml beside the package) lacking gpulab.profiles: another
    distribution's top-level `profiles` folder in site-packages is not taken for ours."""
    package = tmp_path / "site-packages" / "gpulab"
    package.mkdir(parents=True)
    (tmp_path / "site-packages" / "profiles").mkdir()
    (tmp_path / "site-packages" / "profiles" / "kamaji-hami.yaml").write_text(TEXT)
    _without_the_profiles_package(monkeypatch, package)
    assert load.profiles_dir() == package / "profiles"
    assert load.builtin_profiles() == {}
    with pytest.raises(HostError) as caught:
        load_profile("kamaji-hami")
    assert str(caught.value) == (f"no built-in profiles in {package / 'profiles'}: this gpulab "
                                 f"install lacks its package data ({REINSTALL})")


# --------------------------------------------------------------------------- the file


def _refused(path: Path | str) -> str:
    with pytest.raises(UsageError) as caught:
        load_profile(str(path))
    assert caught.value.exit_code == ExitCode.USAGE
    return str(caught.value)


def test_a_directory(tmp_path: Path) -> None:
    assert _refused(tmp_path) == (f"profile {tmp_path} is a directory, not a file (give the "
                                  "YAML file inside it, e.g. --profile DIR/lab.yaml)")


def test_a_named_pipe_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    assert _refused(path) == f"profile {path} is a named pipe (FIFO) (give a regular YAML file)"


def test_a_device() -> None:
    assert _refused("/dev/null") == "profile /dev/null is a device (give a regular YAML file)"


def test_a_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative name: socket paths are short
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("lab.yaml")
        path = tmp_path / "lab.yaml"
        assert _refused(path) == f"profile {path} is a socket (give a regular YAML file)"


def test_a_file_type_this_system_does_not_have() -> None:
    """A BSD/macOS whiteout (S_IFWHT, 0o160000) has no stat.S_IS* test on Linux: a stand-in path
    whose stat says so."""

    class Whiteout(type(Path())):  # type: ignore[misc]
        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            return os.stat_result((0o160000, 0, 0, 1, 0, 0, 0, 0, 0, 0))

    path = Whiteout("/nowhere/lab.yaml")
    assert not stat.S_ISREG(path.stat().st_mode)
    with pytest.raises(UsageError) as caught:
        load.read_profile_file(path)
    assert str(caught.value) == ("profile /nowhere/lab.yaml is not a regular file (give a "
                                 "regular YAML file)")


def test_a_name_too_long_for_the_system(tmp_path: Path) -> None:
    path = tmp_path / ("x" * 300 + ".yaml")
    assert _refused(path) == (f"profile path is too long for this system ({len(str(path))} "
                              "characters) (move the file, or use a shorter path)")


def test_a_path_through_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "lab.yaml"
    assert _refused(path) == f"cannot read profile {path}: Not a directory"


def _unreadable(tmp_path: Path) -> Path:
    """A regular file this process may not read: mode 0 for a user; for root (which reads any
    file) a write-only /proc/sys entry, whose permission root does not override."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        path = tmp_path / "locked.yaml"
        path.write_text(TEXT)
        path.chmod(0)
        return path
    for candidate in ("/proc/sys/vm/compact_memory", "/proc/sys/net/ipv4/route/flush"):
        path = Path(candidate)
        try:
            with path.open("rb"):
                pass
        except PermissionError:
            return path
        except OSError:
            continue
    pytest.skip("root here reads every file and no write-only /proc/sys entry is there")


def test_a_file_without_read_permission(tmp_path: Path) -> None:
    path = _unreadable(tmp_path)
    assert _refused(path) == (f"no permission to read profile {path} (check the file's "
                              "permissions)")


def test_a_file_that_fails_to_read() -> None:
    """/proc/self/mem is a regular file whose first page is not mapped: the read fails (EIO)."""
    assert _refused("/proc/self/mem") == "cannot read profile /proc/self/mem: Input/output error"


def test_a_huge_file_is_read_only_up_to_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (safe_yaml.MAX_BYTES * 2))
    assert len(load.read_profile_file(path)) == safe_yaml.MAX_BYTES + 1
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"#" * safe_yaml.MAX_BYTES)
    assert load.read_profile_file(exact) == b"#" * safe_yaml.MAX_BYTES


def test_a_huge_file_is_refused_with_its_own_size_not_the_bytes_read(tmp_path: Path) -> None:
    """Only MAX_BYTES + 1 bytes are read; the refusal still tells the file's real size."""
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (safe_yaml.MAX_BYTES * 2))
    assert _file_problems(path) == [f"{path}: is {safe_yaml.MAX_BYTES * 2} bytes; a profile is "
                                    f"at most {safe_yaml.MAX_BYTES} bytes"]
    just_over = tmp_path / "over.yaml"
    just_over.write_bytes(b"#" * (safe_yaml.MAX_BYTES + 1))
    assert _file_problems(just_over) == [
        f"{just_over}: is {safe_yaml.MAX_BYTES + 1} bytes; a profile is at most "
        f"{safe_yaml.MAX_BYTES} bytes"]


def test_a_file_of_exactly_the_limit_is_refused_for_what_is_wrong_with_it(
        tmp_path: Path) -> None:
    """At MAX_BYTES a file is not too big: a byte that is not UTF-8 is what it is refused for."""
    path = tmp_path / "exact.yaml"
    data = b"#" * (safe_yaml.MAX_BYTES - 1) + b"\xff"
    path.write_bytes(data)
    assert _file_problems(path) == [
        f"{path}: is not UTF-8 text (byte {safe_yaml.MAX_BYTES - 1} is 0xff)"]


def test_a_huge_file_gone_before_its_size_is_asked_keeps_the_bytes_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file was read (one byte past the limit) and deleted before its size was asked."""
    path = tmp_path / "gone.yaml"
    monkeypatch.setattr(load, "read_profile_file",
                        lambda _: b"#" * (safe_yaml.MAX_BYTES + 1))
    assert _file_problems(path) == [f"{path}: is {safe_yaml.MAX_BYTES + 1} bytes; a profile "
                                    f"is at most {safe_yaml.MAX_BYTES} bytes"]
