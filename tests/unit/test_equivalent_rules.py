"""The rules the equivalent mutants of tests/mutation_equivalent.toml rely on.

A mutant listed as equivalent behaves like the code only while some rule holds: a library's
behaviour (`ip_network` reads `strict` for truth, codec names are case-insensitive) or a fact
other code keeps (every recording Document is strict). Each test here keeps one such rule true,
and the entry names it as `pinned_by`: an upgrade or a change that breaks the rule fails here,
and the mutant becomes killable again.
"""

from __future__ import annotations

import codecs
import inspect
import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpulab.profile import safe_yaml
from gpulab.verify import recording

# --- library facts ---------------------------------------------------------------------------


def test_codec_names_are_case_insensitive() -> None:
    assert codecs.lookup("UTF-8") is codecs.lookup("utf-8")
    assert "é".encode("UTF-8", "surrogatepass") == "é".encode("utf-8", "surrogatepass")
    assert b"\xc3\xa9".decode("UTF-8") == b"\xc3\xa9".decode("utf-8") == "é"


def test_ip_network_reads_strict_for_truth() -> None:
    assert ipaddress.ip_network("10.0.0.1/24", strict=None) == ipaddress.ip_network("10.0.0.0/24")
    with pytest.raises(ValueError, match="host bits set"):
        ipaddress.ip_network("10.0.0.1/24", strict=1)  # type: ignore[arg-type]


_YAML_SAMPLES = ["a: 1\nb: [x, {c: !!str 2}]\n", "- &a {k: v}\n- *a\n- !custom x\n",
                 "on: yes\nport: 0755\nt: 2001-12-14\n", "? [a]\n: b\n"]


def _events(text: str, **loader: type) -> list[str]:
    return [repr(event) for event in yaml.parse(text, **loader)]  # type: ignore[arg-type]


def _tags(node: yaml.Node | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    stack = [node] if node is not None else []
    while stack:
        item = stack.pop()
        out.append((item.tag, type(item).__name__))
        if isinstance(item, yaml.MappingNode):
            stack.extend(n for pair in item.value for n in pair)
        elif isinstance(item, yaml.SequenceNode):
            stack.extend(item.value)
    return out


def test_yaml_parse_and_compose_read_alike_with_the_default_and_the_safe_loader() -> None:
    """safe_yaml._scan_events, safe_yaml.compose and nesting.yaml_load name SafeLoader; the
    default Loader (yaml.Loader) differs only in its constructor, which parse and compose never
    call: the same events and the same node tags."""
    for call in (yaml.parse, yaml.compose):
        assert inspect.signature(call).parameters["Loader"].default is yaml.Loader
    differ = set(yaml.Loader.__mro__) ^ set(yaml.SafeLoader.__mro__)
    assert all(issubclass(cls, yaml.constructor.BaseConstructor) or cls in
               (yaml.Loader, yaml.SafeLoader) for cls in differ)
    for text in _YAML_SAMPLES:
        assert _events(text) == _events(text, Loader=yaml.SafeLoader)
        assert _tags(yaml.compose(text)) == _tags(yaml.compose(text, Loader=yaml.SafeLoader))


def test_json_dumps_writes_ascii_and_keeps_key_order_by_default() -> None:
    data = {"b": "é ✓", "a": ["\U0001f600"]}
    text = json.dumps(data, indent=2)
    assert text.isascii()
    assert text == json.dumps(data, indent=2, sort_keys=False)
    assert text == json.dumps(data, indent=2, sort_keys=None)  # type: ignore[arg-type]
    assert text.index('"b"') < text.index('"a"')


def test_a_dot_has_no_path_name() -> None:
    """recording.member_file refuses "." by `Path(text).name != text` before its tuple."""
    dot, dots = ".", ".."
    assert Path(dot).name == ""
    assert Path(dots).name == dots


def test_pydantic_reports_the_input_of_a_json_document_as_json() -> None:
    """read_document quotes `input` with json.dumps: read from JSON text, it is JSON already."""
    path_text = json.dumps({"format": recording.RECORDING_FORMAT, "version": 1,
                            "profile": {"x": [1.5, None, True]}, "stack": 3})
    with pytest.raises(Exception) as err:
        recording.Manifest.model_validate_json(path_text, strict=True)
    for error in err.value.errors():  # type: ignore[attr-defined]
        assert json.loads(json.dumps(error.get("input"))) == error.get("input")
        assert error["loc"]


def test_every_recording_document_is_strict() -> None:
    """read_document's `strict=True` repeats what every Document's model_config says."""
    from gpulab.cluster.record import ClusterManifest, ClusterMember
    for model in (recording.Document, recording.Manifest, recording.MemberDocument,
                  ClusterManifest, ClusterMember):
        assert model.model_config.get("strict") is True


# --- recording --------------------------------------------------------------------------------


def test_a_recording_with_non_ascii_text_reads_on_a_host_without_a_utf8_locale(
        tmp_path: Path) -> None:
    """Not the locale's encoding: UTF-8 always (a C locale without coercion reads ASCII)."""
    path = tmp_path / "note.json"
    path.write_bytes('{"who": "Zoë"}'.encode())
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0",
           "PYTHONUTF8": "0"}
    code = ("import sys; from pathlib import Path; from gpulab.verify.recording import read_json;"
            " print(ascii(read_json(Path(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, ascii({"who": "Zoë"})), done.stderr


# --- safe_yaml, load ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "+0", "-0", "00x", "1_0"])
def test_the_octal_trap_matches_only_a_zero_with_more_digits(value: str) -> None:
    """_trap's `value.strip("+-") not in ("0",)` never decides: what _OCTAL matches is a 0 and
    at least one more digit, so stripped of its sign it is never "0"."""
    assert not safe_yaml._OCTAL.match(value)


def test_every_unsafe_profile_problem_has_a_line() -> None:
    """load.parse_profile writes `source:line` and falls back to `source` without a line; compose
    gives every problem its line (at least 1)."""
    texts = ["a: !!python/name:os.system x\n", "a: 0755\n", "a: yes\n",
             "? [k]\n: v\n", "a: 1_000\n", "a: 1:30\n", "n: " + "[" * 40 + "]" * 40 + "\n",
             "\n\nb: !!binary aGk=\n", "1: x\n"]
    for text in texts:
        root, problems = safe_yaml.compose(text)
        assert root is None and problems, text
        assert all(isinstance(line, int) and line >= 1 for line, _ in problems), text


def test_a_profile_error_line_falls_back_at_the_root() -> None:
    """load._line looks for the error's location and then its parents; the root's location ()
    is always indexed (by _index_lines, first), so the search ends there."""
    from gpulab.profile import load
    root, problems = safe_yaml.compose("a:\n  b: 1\n")
    assert root is not None and not problems
    lines: dict[tuple[str | int, ...], int] = {}
    load._index_lines(root, (), lines, [], "p.yaml")
    assert next(iter(lines)) == () and lines[()] == 1
    assert load._line("p.yaml", lines, ("zz", 3)) == "p.yaml:1: "


@pytest.mark.parametrize("text", ["a: [1\n", "a: b: c\n", "a:\n- x\n b: 1\n", "a: *nothing\n",
                                  "a: 'x\n", "{a: 1\n", "- a\nb: 1\n", "a: @x\n"])
def test_every_yaml_error_names_its_line(text: str) -> None:
    """load._not_yaml writes `:line` from the error's problem_mark; PyYAML's scanner, parser and
    composer give every error one."""
    with pytest.raises(yaml.MarkedYAMLError) as err:
        safe_yaml.compose(text)
    assert err.value.problem_mark is not None


def test_a_path_made_again_from_its_text_is_the_same_path() -> None:
    """load.profiles_dir turns what importlib gives into `Path(str(folder))`; for a Path it is
    the same path of the same class."""
    for folder in (Path("/a/b"), Path("rel/x"), Path.cwd()):
        again = Path(str(folder))
        assert again == folder and type(again) is type(folder)


@pytest.mark.parametrize("text", ["", "a", "a:b", "a:b:c:d", ":x:", "v1.2.3+k3s1+x", "p Running (x y)",
                                  "reg:5000/a/b:c"])
def test_the_first_piece_of_a_split_and_the_last_of_an_rsplit_do_not_depend_on_maxsplit(
        text: str) -> None:
    for sep in (":", "+", " ", "/"):
        firsts = {text.split(sep, n)[0] for n in (-1, 1, 2, 3)}
        lasts = {text.rsplit(sep, n)[-1] for n in (-1, 1, 2, 3)}
        assert len(firsts) == 1 and len(lasts) == 1
        assert sep not in next(iter(firsts)) and sep not in next(iter(lasts))


def test_check_ids_are_compared_upper_cased() -> None:
    """parse_tc builds `TC-05` (kamaji-hami) or `KAI-05` (vcluster-kai) from `5`; select_from
    upper-cases every id before it compares, so the prefix's case decides nothing."""
    from gpulab.stacks.kamaji_hami.checks.registry import CHECKS as TC
    from gpulab.stacks.vcluster_kai.checks.registry import CHECKS as KAI
    from gpulab.verify.registry import select_from
    for checks, prefix in ((TC, "tc"), (KAI, "kai")):
        first = checks[0].id
        assert first.startswith(prefix.upper() + "-")
        assert [c.id for c in select_from(checks, [f" {first.lower()} "])] == [first]
        assert [c.id for c in select_from(checks, [f"{prefix}-{first[-2:]}"])] == [first]


def test_no_pod_has_no_container_problems() -> None:
    """KAI-05 asks container_problems only of a host pod it has; without one it takes [],
    which is what container_problems(None) answers too."""
    from gpulab.verify import objects as vo
    assert vo.container_problems(None) == []  # type: ignore[arg-type]
    assert vo.container_problems({}) == []


def test_a_helm_release_is_installed_into_the_management_cluster_by_default() -> None:
    """vcluster_release names kubeconfig_of="management", HelmRelease's default."""
    import dataclasses

    from gpulab.adapters.base import HelmRelease
    [field] = [f for f in dataclasses.fields(HelmRelease) if f.name == "kubeconfig_of"]
    assert field.default == "management"
