"""The layout's rules (docs/architecture.md), enforced on the source with `ast`.

- the framework (`engine/`, `adapters/`, `profile/`, `verify/`) imports nothing from
  `gpulab.stacks`, and no module outside `gpulab/stacks/` imports a stack package directly:
  `gpulab.cli`, `gpulab.core` and `gpulab.usecases` reach stacks through the registry
  (`gpulab.stacks.for_name`);
- only the adapters import docker, kubernetes, pyhelm3 (or run kind/helm);
- every stack package has the same inner names;
- providers (`gpulab/providers/`) import no stack, and no stack imports the kind provider
  (of the others, only `providers.base`: what it asks and what it is told);
- outside `gpulab/providers/` no module names a provider: none imports a provider's package,
  asks which provider a lab or cluster is (`.provider`, a "provider" key) or compares with a
  provider's name; they ask the provider what it can (its facts, `LabCluster`, refusals);
- one module per command under `gpulab/cli/`, each under 300 lines; no module over 700 (the
  exceptions only shrink);
- no import cycle anywhere in `gpulab/` (lazy imports inside functions count too: a cycle through
  them is still a knot a reader has to untie).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from gpulab import stacks

ROOT = Path(__file__).resolve().parents[2] / "gpulab"
FRAMEWORK = ("gpulab.engine", "gpulab.adapters", "gpulab.profile", "gpulab.verify")
THIRD_PARTY_ADAPTED = ("docker", "kubernetes", "pyhelm3")
STACK_FILES = ("__init__.py", "profile.py", "render.py", "steps.py", "status.py", "observe.py",
               "state.py", "objects.py", "run.py", "record.py", "checks/__init__.py",
               "checks/registry.py", "checks/common.py")
# A stack's inner module may be a package instead (steps.py or steps/__init__.py).
MAY_BE_PACKAGE = ("steps.py",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """Every gpulab or third-party module `module` imports (top level, in functions, and under
    TYPE_CHECKING), resolved to a module where `from X import Y` names a submodule."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return found


GRAPH = {module: {i for i in _imports(module) if i in MODULES} for module in MODULES}


def _third_party(module: str) -> set[str]:
    return {i.split(".")[0] for i in _imports(module)} & set(THIRD_PARTY_ADAPTED)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(FRAMEWORK)))
def test_the_framework_imports_no_stack(module: str) -> None:
    assert not {i for i in GRAPH[module] if i.startswith("gpulab.stacks")}, module


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("gpulab.stacks")))
def test_only_the_registry_is_imported_from_outside_the_stacks(module: str) -> None:
    """cli, core, doctor... may use `gpulab.stacks` (the registry), never a stack's package."""
    direct = {i for i in GRAPH[module] if i.startswith("gpulab.stacks.")}
    assert not direct, f"{module} imports {sorted(direct)}; go through gpulab.stacks.for_name"


def test_stacks_do_not_import_each_other() -> None:
    for name, package in stacks.STACKS.items():
        others = [p for p in stacks.STACKS.values() if p != package]
        for module in (m for m in MODULES if m == package or m.startswith(package + ".")):
            leaks = {i for i in GRAPH[module] for other in others
                     if i == other or i.startswith(other + ".")}
            assert not leaks, f"{module} ({name}) imports {sorted(leaks)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("gpulab.providers")))
def test_providers_import_no_stack(module: str) -> None:
    """Where the cluster comes from knows nothing of what goes into it: a provider asks the
    stack through `providers.base.StackSide`, handed in by core."""
    assert not {i for i in GRAPH[module] if i.startswith("gpulab.stacks")}, module


def _kind_provider(module: str) -> bool:
    """The kind provider's modules: the package providers.kind and its modules."""
    return module == "gpulab.providers.kind" or module.startswith("gpulab.providers.kind.")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("gpulab.stacks")))
def test_stacks_do_not_import_the_kind_provider(module: str) -> None:
    """A stack's plan starts after `management/cluster`, whoever makes the cluster; what it
    needs of the cluster it says in `providers.base`'s words (ClusterNeeds)."""
    assert not {i for i in GRAPH[module] if _kind_provider(i)}, module


# What a stack may take from a provider besides providers.base (ClusterNeeds, ClusterFacts, and
# ExistingNeeds with its Access questions for provider existing's preflight): nothing any more.
# The list only shrinks (it held providers.existing for both stacks' preflight questions and
# providers.existing.forward for vcluster-kai's verify, which now gets the provider's `reach`).
STACK_PROVIDER_IMPORTS: set[tuple[str, str]] = set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("gpulab.stacks")))
def test_stacks_import_only_the_providers_base(module: str) -> None:
    """A stack says what it needs (`cluster_needs`) and builds on what it is told
    (`ClusterFacts`), both in providers.base; it asks no provider how."""
    used = {i for i in GRAPH[module] if i.startswith("gpulab.providers.")
            and i != "gpulab.providers.base"}
    assert not {(module, i) for i in used} - STACK_PROVIDER_IMPORTS, module


def test_the_stack_provider_exceptions_are_still_needed() -> None:
    """An exception no stack uses any more leaves the list (it only shrinks)."""
    assert {(m, i) for m, i in STACK_PROVIDER_IMPORTS if i not in GRAPH[m]} == set()


# Modules outside gpulab/providers/ that may still name a provider, and why. The list only
# shrinks (the two stacks' second plan builders, chosen by the provider's name, left it when
# each stack got one builder on the cluster's facts, providers.base.ClusterFacts).
PROVIDER_NAMING: dict[str, str] = {
    "gpulab.adapters.kind": "the kind binary, a tool ('kind vX.Y.Z' is its version line)",
    "gpulab.tools": "the kind binary, a tool gpulab installs",
    "gpulab.lab_record": "lab.json keeps the provider's name for the registry (LabRecord.provider)",
    "gpulab.profile.base": "the profile's cluster.provider field, checked against the registry",
    "gpulab.stacks.vcluster_kai.state": "recordings of an older gpulab say `provider` (read only)",
    "gpulab.stacks.vcluster_kai.record": "reads an older recording's `provider` as `gpus`",
}


def _names_a_provider(module: str) -> list[str]:
    """Where `module` names a provider: imports a provider's package, reads `.provider` or a
    "provider" key (asks which one a lab is), or compares with a registered provider's name (a
    comparison that reads a Kubernetes object's "kind" key is not one)."""
    from gpulab.providers import registry

    names = set(registry.names())
    path = MODULES[module]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"{line}: imports {m}" for m in imported for n in names
                      if m == f"gpulab.providers.{n}" or m.startswith(f"gpulab.providers.{n}.")]
        elif isinstance(node, ast.Attribute) and node.attr == "provider":
            found.append(f"{line}: reads .provider")
        elif isinstance(node, ast.Constant) and node.value == "provider":
            found.append(f"{line}: the key 'provider'")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s.value for s in sides if isinstance(s, ast.Constant) and s.value in names]
            kind_key = any(isinstance(c, ast.Constant) and c.value == "kind"
                           for s in sides if not isinstance(s, ast.Constant) for c in ast.walk(s))
            if named and not kind_key:
                found.append(f"{line}: compares with {named[0]!r}")
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if not m.startswith("gpulab.providers")))
def test_no_module_outside_the_providers_names_one(module: str) -> None:
    """core, cli, the stacks, doctor, diagnostics... ask a provider what it can, never which
    one it is: a new provider is a folder under gpulab/providers/ and a line in its registry."""
    if module in PROVIDER_NAMING:
        return
    assert not _names_a_provider(module), f"{module}: {_names_a_provider(module)}"


def test_the_provider_naming_exceptions_are_still_needed() -> None:
    """An exception that names no provider any more leaves the list (it only shrinks)."""
    assert [m for m in PROVIDER_NAMING if not _names_a_provider(m)] == []


def test_the_provider_naming_rule_catches_each_way_of_naming_one(tmp_path: Path) -> None:
    """The checker itself, on a module that names a provider each way it can, and one that
    reads a Kubernetes object's kind."""
    cases = {
        "from gpulab.providers.existing import choice_of\n": "imports",
        "import gpulab.providers.kind.config\n": "imports",
        "def f(r):\n    return r.provider\n": ".provider",
        "def f(r):\n    return r.cluster.get('provider')\n": "'provider'",
        "def f(x):\n    return x == 'existing'\n": "compares",
        "def f(x):\n    return 'kind' != x.name\n": "compares",
    }
    for number, (source, what) in enumerate(cases.items()):
        path = tmp_path / f"case{number}.py"
        path.write_text(source, encoding="utf-8")
        MODULES[f"case{number}"] = path
        try:
            assert any(what in f for f in _names_a_provider(f"case{number}")), source
        finally:
            del MODULES[f"case{number}"]
    path = tmp_path / "objects.py"
    path.write_text("def f(o):\n    return o.get('kind') == 'kind' or o['kind'] == 'Pod'\n",
                    encoding="utf-8")
    MODULES["objects"] = path
    try:
        assert _names_a_provider("objects") == []
    finally:
        del MODULES["objects"]


CLI_MODULE_LINES = 300  # a command's module: parse, call one use case, render
MODULE_LINES = 700
# Modules over MODULE_LINES, to be split; the list only shrinks (empty since the steps, kube,
# docker_runtime and doctor splits of #34).
OVERSIZED: set[str] = set()


def _lines(module: str) -> int:
    return len(MODULES[module].read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module: str) -> None:
    """One module per command under `gpulab.cli`, each short; no gpulab module over 700 lines."""
    if module.startswith("gpulab.cli"):
        assert _lines(module) < CLI_MODULE_LINES, module
    if module not in OVERSIZED:
        assert _lines(module) <= MODULE_LINES, f"{module}: {_lines(module)} lines"


def test_the_oversized_exceptions_are_still_needed() -> None:
    """A module split below the limit leaves the list (it only shrinks)."""
    assert {m for m in OVERSIZED if _lines(m) <= MODULE_LINES} == set()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_adapters_import_docker_kubernetes_pyhelm3(module: str) -> None:
    if module.startswith("gpulab.adapters."):
        return
    assert not _third_party(module), f"{module} imports {sorted(_third_party(module))}"


@pytest.mark.parametrize("package", sorted(stacks.STACKS.values()))
def test_every_stack_has_the_same_inner_names(package: str) -> None:
    folder = ROOT.parent / package.replace(".", "/")
    def present(name: str) -> bool:
        package_form = folder / name.removesuffix(".py") / "__init__.py"
        return (folder / name).is_file() or (name in MAY_BE_PACKAGE and package_form.is_file())

    missing = [name for name in STACK_FILES if not present(name)]
    assert not missing, f"{package} lacks {missing}"


@pytest.mark.parametrize("name", sorted(stacks.STACKS))
def test_every_stack_offers_the_registry_interface(name: str) -> None:
    stack = stacks.for_name(name)
    wanted = list(stacks.Stack.__annotations__) + [
        n for n, v in vars(stacks.Stack).items() if callable(v) and not n.startswith("_")]
    assert not [n for n in wanted if not hasattr(stack, n)]
    assert stack.PROFILE.model_fields["stack"].annotation.__args__ == (name,)


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(GRAPH[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in GRAPH[node]:
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_the_rules_catch_what_they_forbid() -> None:
    """The checker itself: a cycle and a framework → stack import are found when present."""
    saved = {k: set(v) for k, v in GRAPH.items()}
    try:
        GRAPH["gpulab.engine.step"].add("gpulab.engine.runner")
        assert any("gpulab.engine.step" in c for c in _cycles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
    assert "gpulab.stacks.kamaji_hami.render" in _imports(
        "gpulab.stacks.kamaji_hami.steps.control_plane")
    GRAPH["gpulab.stacks.vcluster_kai.run"].add("gpulab.providers.existing.forward")
    try:
        with pytest.raises(AssertionError):
            test_stacks_import_only_the_providers_base("gpulab.stacks.vcluster_kai.run")
    finally:
        GRAPH["gpulab.stacks.vcluster_kai.run"].discard("gpulab.providers.existing.forward")
    assert "gpulab.providers.existing.forward" in GRAPH["gpulab.providers.existing"]  # lazy, seen
    assert not _kind_provider("gpulab.providers.kindred")
    assert not {i for i in GRAPH["gpulab.core"] if _kind_provider(i)}
    assert _kind_provider("gpulab.providers.kind.config")
    assert "gpulab.providers.base" in GRAPH["gpulab.stacks.vcluster_kai.render"]


def test_the_project_stands_alone() -> None:
    """A fresh clone has no ../shared beside it: nothing in the repository may read or cite a file
    outside it (the upstream copies the tests need are in tests/data/pinned, with their pins)."""
    root = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             check=False).stdout.split()
    files = [root / name for name in tracked] or [p for p in root.rglob("*") if p.is_file()]
    outside = re.compile(r"\.\./shared\b|(?<![\w/])shared/(data|docs|reference)\b")
    offenders = []
    for path in files:
        if "tests/data/pinned" in path.as_posix() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        offenders += [f"{path.relative_to(root)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if outside.search(line) and path.name != "test_layout.py"]
    assert offenders == []
