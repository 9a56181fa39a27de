"""The fakes stand apart from what they test: no module under tests/ that plays a component
(a scheduler, an API server, a device plugin: a `Fake*` or `*Player` class, or a subclass of
one) imports gpulab's parsing modules. A fake that decoded HAMi's annotations or KAI's answers
with gpulab's own code would agree with any bug in it; the fakes decode with their own code,
written from upstream's source (e.g. tests/kamaji_hami/hami_wire.py), and tests such as
tests/kamaji_hami/test_hami_wire.py hold the two readings together on upstream's examples.

Direct imports count, lazy ones (inside functions) included; the tests themselves (`test_*.py`)
may of course import what they test.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# gpulab's readers of what the components write: annotations, conditions, events, reasons.
PARSING_MODULES = {
    "gpulab.verify.hami": "HAMi's register and allocation annotations, usage",
    "gpulab.verify.kai": "KAI Scheduler's reasons",
    "gpulab.verify.objects": "readers of Kubernetes objects (phases, conditions, events)",
    "gpulab.stacks.kamaji_hami.objects": "kamaji-hami's facts in API objects (allocations, cards)",
    "gpulab.stacks.vcluster_kai.objects": "vcluster-kai's facts in API objects",
    "gpulab.cluster.inventory": "discovery of a cluster's GPUs and schedulers",
    "gpulab.cluster.rules": "where the schedulers may place a pod",
}


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def _bases(cls: ast.ClassDef) -> list[str]:
    return [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
            for b in cls.bases]


def _plays_a_component(cls: ast.ClassDef) -> bool:
    names = [cls.name, *_bases(cls)]
    return any(n.startswith("Fake") or n.endswith("Player") for n in names)


def fake_modules() -> dict[Path, ast.Module]:
    out = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py" or "data" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(_plays_a_component(cls) for cls in _classes(tree)):
            out[path] = tree
    return out


def imported(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_the_known_fakes_are_found() -> None:
    found = {str(p.relative_to(TESTS)) for p in fake_modules()}
    assert {"kamaji_hami/fakes.py", "kamaji_hami/kmock_lab.py", "vcluster_kai/live_fakes.py",
            "fakes.py"} <= found


def test_no_fake_imports_gpulabs_parsers() -> None:
    offenders = {
        str(path.relative_to(TESTS)): sorted(imported(tree) & set(PARSING_MODULES))
        for path, tree in fake_modules().items()}
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_the_rule_sees_lazy_and_from_imports() -> None:
    tree = ast.parse("from gpulab.verify import hami\n"
                     "def f():\n    from gpulab.stacks.kamaji_hami.objects import allocations\n"
                     "class FakeX:\n    pass\n")
    assert {"gpulab.verify.hami", "gpulab.stacks.kamaji_hami.objects"} <= imported(tree)
    assert _plays_a_component(_classes(tree)[0])
