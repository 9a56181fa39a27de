"""Profiles as a careless or hostile user writes them: each is refused with exit 2 and a line
that names the file (and line), never a traceback, never a hang, nothing created. A corpus made
here, then property-based mutations of the built-in profiles (fixed seed, bounded examples)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from gpulab.errors import ProfileError
from gpulab.profile import safe_yaml
from gpulab.stacks import parse_profile
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from tests.schemas import validate_object

REPO = Path(__file__).resolve().parents[2]
BUILTIN = (REPO / "profiles" / "kamaji-hami.yaml").read_text(encoding="utf-8")

BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x, x]"]
                 + [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, "
                    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
                    for i in range(9)]) + "\n"


def _swap(old: str, new: str) -> bytes:
    assert old in BUILTIN, old
    return BUILTIN.replace(old, new, 1).encode()


CORPUS: dict[str, tuple[bytes, str]] = {
    "alias-bomb": (BOMB.encode(), "expands to more than"),
    "huge": (b"# " + b"x" * (33 * 1024 * 1024) + b"\n", "a profile is at most"),
    "deep": (("a: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nested deeper than"),
    "utf16": (BUILTIN.encode("utf-16"), "is UTF-16 text"),
    "bom": (b"\xef\xbb\xbf" + BUILTIN.encode(), "byte-order mark"),
    "binary": (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "is not text"),
    "control-char": (b"name: lab\x1b[2J\n", ".yaml:1: not valid YAML: unacceptable character #x001b"),
    "latin1": ("name: caf\xe9\n".encode("latin-1"), "is not UTF-8 text"),
    "python-tag": (b"name: !!python/object/apply:os.system ['true']\n", "explicit tag"),
    "int-tag-garbage": (_swap("  port: 6443", "  port: !!int garbage")
                        if "  port: 6443" in BUILTIN else
                        b"stack: kamaji-hami\nx: !!int garbage\n", "explicit tag"),
    "binary-tag": (b"name: !!binary aGVsbG8=\n", "explicit tag"),
    "complex-key": (b"? [a, b]\n: x\nstack: kamaji-hami\n", "a mapping key must be a plain name"),
    "number-key": (_swap("apiVersion:", "1: x\napiVersion:"), "key '1' must be a name"),
    "yes-as-name": (_swap("name: tenant-a", "name: yes"), "'yes' is a boolean in YAML 1.1"),
    "octal": (_swap("count: 2", "count: 0002"), "an octal number in YAML 1.1"),
    "underscores": (_swap("memory_mib: 24576", "memory_mib: 24_576"), "`_` separators"),
    "sexagesimal": (_swap("count: 2", "count: 1:30"), "base-60"),
    "on-as-value": (_swap("split: 10", "split: on"), "a boolean in YAML 1.1"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_hostile_files_are_refused_with_one_clean_line(case: str, tmp_path: Path) -> None:
    data, expected = CORPUS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(data)
    home = tmp_path / "home"
    # A subprocess: a hang or a crash shows as such, not as a stuck test run (10 s is a guard,
    # not a speed target).
    done = subprocess.run([sys.executable, "-m", "gpulab", "plan", "-p", str(path)],
                          capture_output=True, text=True, timeout=10, check=False,
                          env={**os.environ, "GPULAB_HOME": str(home),
                               "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert expected in done.stderr, done.stderr
    assert str(path) in done.stderr
    assert not home.exists()  # nothing created


def test_problems_name_the_line(tmp_path: Path) -> None:
    text = _swap("name: tenant-a", "name: yes").decode()
    with pytest.raises(ProfileError) as caught:
        parse_profile(text, "mine.yaml")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip() == "- name: yes")
    assert any(p.startswith(f"mine.yaml:{line}: ") for p in caught.value.problems)


def test_quoted_values_are_what_they_look_like() -> None:
    """The fix the messages suggest works: a quoted 'yes' is the string it looks like."""
    profile = parse_profile(_swap("name: tenant-a", "name: 'yes'").decode(), "mine.yaml")
    assert isinstance(profile, KamajiHamiProfile)
    assert profile.tenants[0].name == "yes"


# --------------------------------------------------------------------------- property-based

_BASE = yaml.safe_load(BUILTIN)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
    st.sampled_from(["", " ", "yes", "0644", "1_000", "1:30", "v0.1.0", "10.0.0.0/8",
                     "127.0.0.0/8", "169.254.0.0/16", "x" * 80, "NVIDIA-L4", "-1", "∞"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


_ALL_PATHS = [p for p in _paths(_BASE) if p]


def _set(data: object, path: tuple, value: object) -> object:
    import copy

    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    return out


@pytest.mark.slow
@seed(20261203)
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(_ALL_PATHS), value=_VALUES)
def test_any_single_change_is_refused_cleanly_or_renders_valid_objects(path: tuple,
                                                                       value: object) -> None:
    text = yaml.safe_dump(_set(_BASE, path, value), sort_keys=False, allow_unicode=True)
    try:
        profile = parse_profile(text, "fuzz.yaml")
    except ProfileError as err:
        assert err.problems and all(p.startswith("fuzz.yaml") for p in err.problems)
        return
    assert isinstance(profile, KamajiHamiProfile)
    for tenant in profile.tenants:
        validate_object(render.tenant_control_plane(profile, tenant))
        for obj in render.kube_proxy_objects(tenant, "https://10.0.0.1:6443"):
            validate_object(obj)


def test_the_safe_reader_limits_are_documented() -> None:
    text = (REPO / "docs" / "profile-reference.md").read_text(encoding="utf-8")
    for limit in (str(safe_yaml.MAX_BYTES // 1024), str(safe_yaml.MAX_DEPTH),
                  f"{safe_yaml.MAX_NODES:,}".replace(",", " ")):
        assert limit in text, limit
