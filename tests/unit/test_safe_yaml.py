"""The careful profile reader (gpulab/profile/safe_yaml.py), one refusal at a time: the exact line
the user reads and where, and the edges of each limit.

tests/unit/test_hostile_profiles.py runs whole hostile files through a real `gpulab`; these pin
the wording and the boundaries (mutation testing, docs/dev/mutation-testing.md, found them
unpinned)."""

from __future__ import annotations

import pytest

from gpulab.profile import safe_yaml
from gpulab.profile.safe_yaml import MAX_BYTES, MAX_DEPTH, MAX_NODES, check_bytes, compose, decode


def test_the_size_limit_is_inclusive_and_names_both_sizes() -> None:
    assert check_bytes(b"a" * MAX_BYTES) == ""
    assert check_bytes(b"a" * (MAX_BYTES + 1)) == (
        f"is {MAX_BYTES + 1} bytes; a profile is at most {MAX_BYTES} bytes")


@pytest.mark.parametrize(("data", "why"), [
    (b"\xff\xfek\x00i\x00", "is UTF-16 text; save it as UTF-8"),
    (b"\xfe\xff\x00k\x00i", "is UTF-16 text; save it as UTF-8"),
    (b"\xef\xbb\xbfkind: x\n", "starts with a byte-order mark; save it as UTF-8 without BOM"),
    (b"kind: x\n\x00", "is not text (it contains NUL bytes)"),
    (b"kind: \xe9t\xe9\n", "is not UTF-8 text (byte 6 is 0xe9)"),
])
def test_bytes_that_are_not_a_utf8_profile_are_refused_saying_why(data: bytes, why: str) -> None:
    assert decode(data) == ("", why)


def test_utf8_text_is_given_back_as_it_is() -> None:
    text = "name: caf\u00e9 # \u2713\n"
    assert decode(text.encode("utf-8")) == (text, "")
    assert check_bytes(text.encode("utf-8")) == ""


def _problems(text: str) -> list[tuple[int | None, str]]:
    root, problems = compose(text)
    assert (root is None) == bool(problems)
    return problems


@pytest.mark.parametrize(("text", "line", "tag"), [
    ("a: 1\nb: !!str 2\n", 2, "tag:yaml.org,2002:str"),
    ("a:\n  - x\n  - !!python/object:os.system x\n", 3, "tag:yaml.org,2002:python/object:os.system"),
    ("a: !local x\n", 1, "!local"),
    ("!!map\na: 1\n", 1, "tag:yaml.org,2002:map"),
])
def test_an_explicit_tag_is_refused_on_its_line(text: str, line: int, tag: str) -> None:
    assert _problems(text) == [
        (line, f"explicit tag {tag} is not allowed: a profile is plain YAML (remove the tag)")]


def test_the_non_specific_tag_is_plain_yaml() -> None:
    root, problems = compose("a: ! 1\n")
    assert problems == []
    assert root is not None


def _nested(depth: int) -> str:
    return "".join("  " * level + f"k{level}:\n" for level in range(depth)) + "  " * depth + "v\n"


def test_nesting_is_allowed_up_to_the_limit_and_refused_once_past_it() -> None:
    assert _problems(_nested(MAX_DEPTH)) == []  # the root mapping and 31 below it
    assert _problems(_nested(MAX_DEPTH + 1)) == [
        (MAX_DEPTH + 1, f"nested deeper than {MAX_DEPTH} levels")]
    assert _problems("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)) == [
        (1, f"nested deeper than {MAX_DEPTH} levels")]  # reported once, then the scan stops


def test_closing_a_level_gives_the_depth_back() -> None:
    siblings = "\n".join(f"s{i}: {'[' * 20}{']' * 20}" for i in range(5))
    assert _problems(siblings + "\n") == []


def test_an_alias_bomb_is_refused_by_its_expanded_size() -> None:
    # 3 levels of 30 aliases: 27 000 values once expanded
    bomb = ("a: &a [x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, "
            "x, x, x, x, x]\n"
            "b: &b [" + ", ".join(["*a"] * 30) + "]\n"
            "c: &c [" + ", ".join(["*b"] * 30) + "]\n")
    assert _problems(bomb) == [
        (1, f"expands to more than {MAX_NODES} values (YAML aliases?); a profile is small")]


@pytest.mark.slow
def test_a_document_just_under_the_node_limit_is_read() -> None:
    items = ", ".join(["1"] * (MAX_NODES - 1))  # the list itself and MAX_NODES - 1 values
    assert _problems(f"[{items}]\n") == []
    assert _problems(f"[{items}, 1]\n") == [
        (1, f"expands to more than {MAX_NODES} values (YAML aliases?); a profile is small")]


@pytest.mark.parametrize(("text", "problem"), [
    ("a: 1\n2: b\n", (2, "key '2' must be a name (quote it)")),
    ("a: 1\nnull: b\n", (2, "key 'null' must be a name (quote it)")),
    ("? [a, b]\n: c\n", (1, "a mapping key must be a plain name, not a mapping or a list")),
    ("? {a: 1}\n: c\n", (1, "a mapping key must be a plain name, not a mapping or a list")),
    ("a:\n  when: 2024-01-01\n", (2, "'2024-01-01' is read as tag:yaml.org,2002:timestamp; only "
                                    "plain strings, numbers, booleans and null")),
])
def test_keys_and_values_that_are_not_plain(text: str, problem: tuple[int, str]) -> None:
    assert _problems(text) == [problem]


def test_every_problem_is_reported_not_only_the_first() -> None:
    assert sorted(_problems("a: yes\nb: 0644\n3: x\nc:\n  - 1_000\n  - 1:30\n")) == [
        (1, "'yes' is a boolean in YAML 1.1 (write true/false, or quote it)"),
        (2, "'0644' is an octal number in YAML 1.1 (write the number without the leading 0, "
            "or quote it)"),
        (3, "key '3' must be a name (quote it)"),
        (5, "'1_000' is a number with `_` separators (write it without them, or quote it)"),
        (6, "'1:30' is a base-60 number in YAML 1.1 (quote it)"),
    ]


@pytest.mark.parametrize("word", ["y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                                  "on", "On", "ON", "off", "Off", "OFF"])
def test_every_yaml11_boolean_spelling_is_a_trap(word: str) -> None:
    assert _problems(f"flag: {word}\n") == [
        (1, f"{word!r} is a boolean in YAML 1.1 (write true/false, or quote it)")]


@pytest.mark.parametrize("value", ["00", "0777", "-0644", "+012", "0_7"])
def test_leading_zero_numbers_are_octal_traps(value: str) -> None:
    problems = _problems(f"mode: {value}\n")
    assert problems == [(1, f"{value!r} is an octal number in YAML 1.1 (write the number "
                            "without the leading 0, or quote it)")]


@pytest.mark.parametrize("value", ["1_000", "-1_000", "1_0.5", "1__0"])
def test_underscore_numbers_are_traps(value: str) -> None:
    assert _problems(f"n: {value}\n") == [
        (1, f"{value!r} is a number with `_` separators (write it without them, or quote it)")]


@pytest.mark.parametrize("value", ["1:30", "-1:30", "190:20:30", "1:05.5"])
def test_base60_numbers_are_traps(value: str) -> None:
    assert _problems(f"t: {value}\n") == [
        (1, f"{value!r} is a base-60 number in YAML 1.1 (quote it)")]


@pytest.mark.parametrize("text", [
    "a: 0\n", "a: -0\n", "a: 10\n", "a: 1.5\n", "a: true\n", "a: null\n", "a: ~\n",
    "a: 'yes'\n", 'a: "0644"\n', "a: '1:30'\n", "a: 1:60\n", "a: yesterday\n", "a: 8080\n",
    "a: |\n  yes\n", "a: >\n  no\n",
])
def test_plain_values_and_quoted_traps_are_what_they_look_like(text: str) -> None:
    assert _problems(text) == []


def test_an_empty_document_has_no_tree_and_no_problem() -> None:
    assert compose("") == (None, [])
    assert compose("# only a comment\n") == (None, [])


def test_a_clean_document_gives_its_tree() -> None:
    root, problems = compose("stack: kamaji-hami\nlist: [1, two]\n")
    assert problems == []
    assert root is not None
    assert [key.value for key, _ in root.value] == ["stack", "list"]


def test_the_limits_are_what_the_docs_say() -> None:
    assert (safe_yaml.MAX_BYTES, safe_yaml.MAX_DEPTH, safe_yaml.MAX_NODES) == (
        256 * 1024, 32, 20_000)


def test_a_complex_key_does_not_stop_the_check_of_the_other_keys() -> None:
    assert _problems("? [a, b]\n: c\nd: yes\n") == [
        (1, "a mapping key must be a plain name, not a mapping or a list"),
        (3, "'yes' is a boolean in YAML 1.1 (write true/false, or quote it)"),
    ]


def test_closed_siblings_do_not_hide_how_deep_the_rest_goes() -> None:
    """Each level holds a closed empty list before the next level: the depth still counts every
    open level (a closed list gives back exactly its own level)."""
    def levels(depth: int) -> str:
        return "".join("  " * level + f"x{level}: []\n" + "  " * level + f"k{level}:\n"
                       for level in range(depth)) + "  " * depth + "v\n"
    assert _problems(levels(MAX_DEPTH - 1)) == []
    assert _problems(levels(MAX_DEPTH + 1)) == [
        (2 * MAX_DEPTH - 1, f"nested deeper than {MAX_DEPTH} levels")]  # x31: [] is level 33
