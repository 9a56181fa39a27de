"""`nox -s mutation`'s driver (tests/mutation.py): the module table, the equivalences file, how
a mutant's change is read and how the report is written (docs/dev/mutation-testing.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests import mutation

if TYPE_CHECKING:
    from pathlib import Path

# The modules issue #24 puts under mutation testing.
REQUIRED = ["gpulab/verify/hami.py", "gpulab/verify/kai.py", "gpulab/cluster/inventory.py",
            "gpulab/cluster/checks.py", "gpulab/profile/safe_yaml.py", "gpulab/profile/load.py",
            "gpulab/verify/recording.py", "gpulab/netcalc.py",
            "gpulab/stacks/kamaji_hami/checks/tc05_sharing.py",
            "gpulab/stacks/vcluster_kai/checks/scheduling.py"]


def test_every_module_is_listed_and_has_tests() -> None:
    modules = mutation.all_modules()
    assert set(REQUIRED) <= set(modules)
    assert not [m for m in modules if m.endswith("__init__.py")]
    for module, tests in modules.items():
        assert (mutation.ROOT / module).is_file()
        assert any(list(mutation.ROOT.glob(t)) for t in tests), module


def test_one_module_a_glob_or_an_unknown_one() -> None:
    assert list(mutation.select(["gpulab/netcalc.py"], None)) == ["gpulab/netcalc.py"]
    checks = mutation.select(["gpulab/stacks/kamaji_hami/checks/tc0*.py"], None)
    assert "gpulab/stacks/kamaji_hami/checks/tc06_core_overcommit.py" in checks
    with pytest.raises(SystemExit, match=r"gpulab/nothing\.py is not one of the modules"):
        mutation.select(["gpulab/nothing.py"], None)


def test_the_equivalences_name_listed_modules_and_say_why() -> None:
    modules = mutation.all_modules()
    equivalents = mutation.load_equivalents()
    assert equivalents
    for entry in equivalents:
        assert entry.module in modules
        assert entry.before != entry.after
        assert len(entry.reason) > 20


def test_every_equivalent_names_the_test_that_pins_its_rule_and_a_line_that_exists() -> None:
    """An equivalent holds only while the rule its reason relies on does: each entry names, as
    `pinned_by`, a test (`tests/path.py::test_name`, a parametrized id allowed) that fails when
    that rule breaks; and its mutated line is still in its module (else the entry is stale)."""
    import re

    import tomllib

    entries = tomllib.loads(mutation.EQUIVALENTS.read_text(encoding="utf-8"))["equivalent"]
    assert entries
    defined: dict[str, set[str]] = {}
    for entry in entries:
        where = f"{entry['module']} {entry['function']}: {entry['before']!r}"
        pinned = entry.get("pinned_by", "")
        match = re.fullmatch(r"(tests/[\w/]+\.py)::(test_\w+)(\[.*\])?", pinned)
        assert match, f"{where}: pinned_by {pinned!r} is no tests/path.py::test_name"
        path, name = match.group(1), match.group(2)
        if path not in defined:
            source = mutation.ROOT / path
            assert source.is_file(), f"{where}: {path} does not exist"
            defined[path] = set(re.findall(r"^def (test_\w+)\(", source.read_text(
                encoding="utf-8"), re.MULTILINE))
        assert name in defined[path], f"{where}: {path} defines no {name}"
        code = {line.strip() for line in
                (mutation.ROOT / entry["module"]).read_text(encoding="utf-8").splitlines()}
        function = entry["function"].rsplit(".", 1)[-1]
        for line in entry["before"].strip().splitlines():
            assert line.strip().replace("FUNCTION", function) in code, f"{where}: stale"


def test_a_mutants_change_is_read_against_the_unmutated_copy(tmp_path: Path) -> None:
    mutated = tmp_path / "m.py"
    mutated.write_text(
        "def x_size__mutmut_orig(a):\n    first = a - 1\n    return first\n"
        "def x_size__mutmut_1(a):\n    first = a + 1\n    return first\n"
        "class K:\n"
        "    def xǁKǁrun__mutmut_orig(self):\n        return 'ok'\n"
        "    def xǁKǁrun__mutmut_2(self):\n        return 'XXokXX'\n", encoding="utf-8")
    assert mutation.mutant_changes(mutated) == {
        "x_size__mutmut_1": ("size", "first = a - 1", "first = a + 1"),
        "xǁKǁrun__mutmut_2": ("K.run", "return 'ok'", "return 'XXokXX'"),
    }


def test_the_report_lists_scores_survivors_and_their_killers() -> None:
    run = mutation.Run("gpulab/netcalc.py", ("tests/unit/test_netcalc.py",), mutants=[
        mutation.Mutant("x_f__mutmut_1", "killed", "f", "a = 1", "a = 2"),
        mutation.Mutant("x_f__mutmut_2", "survived", "f", "b = x", "b = None"),
        mutation.Mutant("x_f__mutmut_3", "survived", "f", "c = y", "c = None"),
        mutation.Mutant("x_f__mutmut_4", "skipped", "f", "d", "e"),
    ], kills={"x_f__mutmut_1": "tests/unit/test_netcalc.py::test_one"})
    equivalent = mutation.Equivalent("gpulab/netcalc.py", "f", "c = y", "c = None", "y is None")
    data = {"gpulab/netcalc.py": {"ever_survived": [
        {"function": "f", "before": "a = 1", "after": "a = 2"}]}}
    entry = mutation.record(data, run, [equivalent])
    assert (entry["now"]["killed"], entry["now"]["total"], entry["now"]["equivalent"]) == (1, 3, 1)
    assert entry["before"]["killed"] == 1  # the first run recorded is the "before"
    report = mutation.render(data)
    assert "| `gpulab/netcalc.py` | 1/3 (" in report
    assert "| 33.3 % | 50.0 % | 2 (1) |" in report
    assert "| 2 | `f` | `b = x` | `b = None` | survived: no test kills it |" in report
    assert "| 3 | `f` | `c = y` | `c = None` | equivalent: y is None |" in report
    assert "| `f` | `a = 1` | `a = 2` | `tests/unit/test_netcalc.py::test_one` |" in report


def test_timeouts_are_counted_apart_and_unknown_for_older_runs() -> None:
    run = mutation.Run("gpulab/netcalc.py", ("tests/unit/test_netcalc.py",), mutants=[
        mutation.Mutant("x_f__mutmut_1", "killed", "f", "a = 1", "a = 2"),
        mutation.Mutant("x_f__mutmut_2", "timeout", "f", "b = 1", "b = 2"),
        mutation.Mutant("x_f__mutmut_3", "survived", "f", "c = 1", "c = 2"),
    ])
    data: dict[str, Any] = {}
    entry = mutation.record(data, run, [])
    assert (entry["now"]["killed"], entry["now"]["timeouts"], entry["now"]["total"]) == (2, 1, 3)
    assert "| 66.7 % | 66.7 % | 1 (0) | 1 | - |" in mutation.render(data)
    del data["gpulab/netcalc.py"]["now"]["timeouts"]  # a run from before they were counted
    assert "| 1 (0) | ? | - |" in mutation.render(data)


def test_a_hand_mutant_replaces_exactly_one_line_at_its_indentation() -> None:
    hand = mutation.Hand("m.py", "K.p", "return a and b", "return a or b", "a @property body")
    source = "class K:\n    @property\n    def p(self):\n        return a and b\n"
    assert mutation.apply_hand(source, hand) == (
        "class K:\n    @property\n    def p(self):\n        return a or b\n")
    with pytest.raises(SystemExit, match="0 lines read"):
        mutation.apply_hand("x = 1\n", hand)
    with pytest.raises(SystemExit, match="2 lines read"):
        mutation.apply_hand(source + "    return a and b\n", hand)


def test_every_hand_mutant_names_a_listed_module_and_one_of_its_lines() -> None:
    modules = mutation.all_modules()
    hands = mutation.load_hand()
    assert {"ProbeSizes.capacity_within_limit", "Card.idle"} <= {h.function for h in hands}
    for hand in hands:
        assert hand.module in modules
        assert hand.before != hand.after and hand.why
        source = (mutation.ROOT / hand.module).read_text(encoding="utf-8")
        assert mutation.apply_hand(source, hand) != source


def test_the_report_lists_hand_mutants_with_their_verdicts() -> None:
    run = mutation.Run("gpulab/netcalc.py", ("tests/unit/test_netcalc.py",), mutants=[
        mutation.Mutant("x_f__mutmut_1", "killed", "f", "a = 1", "a = 2")])
    data: dict[str, Any] = {"gpulab/netcalc.py": {"hand": {
        "date": "2026-12-04", "commit": "abc", "working_tree": False, "mutants": [
            {"function": "R.size", "before": "x + 1", "after": "x", "why": "a @property body",
             "status": "killed", "test": "tests/t.py::t", "equivalent": ""},
            {"function": "R.text", "before": "y", "after": "z", "why": "a @property body",
             "status": "survived", "test": "", "equivalent": "same text"},
            {"function": "R.big", "before": "u", "after": "v", "why": "module-level code",
             "status": "survived", "test": "", "equivalent": ""}]}}}
    mutation.record(data, run, [])
    report = mutation.render(data)
    assert "| 0 (0) | 0 | 1/3 (1 equivalent) |" in report
    assert "| `R.size` | `x + 1` | `x` | a @property body | killed by `tests/t.py::t` |" in report
    assert "| `R.text` | `y` | `z` | a @property body | equivalent: same text |" in report
    assert "| `R.big` | `u` | `v` | module-level code | survived |" in report


def test_relabel_matches_the_recorded_survivors_against_the_equivalents_again() -> None:
    data: dict[str, Any] = {"gpulab/netcalc.py": {"now": {"equivalent": 1, "survivors": [
        {"function": "f", "before": "c = y", "after": "c = None", "equivalent": "old reason"},
        {"function": "f", "before": "d = 1", "after": "d = 2", "equivalent": ""}]}},
        "gpulab/other.py": {"before": {}}}
    now = mutation.relabel(data, [
        mutation.Equivalent("gpulab/netcalc.py", "f", "d = 1", "d = 2", "one is two here"),
        mutation.Equivalent("gpulab/other.py", "f", "c = y", "c = None", "elsewhere")],
    )["gpulab/netcalc.py"]["now"]
    assert [s["equivalent"] for s in now["survivors"]] == ["", "one is two here"]
    assert now["equivalent"] == 1
