"""Mutation testing of gpulab's pure-logic modules with mutmut 3 (docs/dev/mutation-testing.md).

    nox -s mutation                          every module below, one at a time
    nox -s mutation -- gpulab/netcalc.py     one module (a path or a glob of MODULES)
    nox -s mutation -- --changed [REF]       the modules `git diff REF` touches (default HEAD)
    nox -s mutation -- MODULE --from-last-run   the report again, from the last run's verdicts
    nox -s mutation -- MODULE --hand         only the module's hand mutants (see below)

Each module runs alone, in a copy of the work tree (`.nox/mutation/work/<module>`, where
`mutmut browse` can be run afterwards), with only the tests listed for it: mutmut changes one
thing in the module at a time (a mutant) and runs the tests that reach the changed function; a
mutant no test notices survives. Tests that fail on the unmutated copy (someone else's work in
progress) are left out of the run and named in the report.

The report, docs/dev/mutation-report.md, is rewritten from docs/dev/mutation-report.json: per
module the first recorded score (`before`), the latest one, each surviving mutant with the
reason it is equivalent (tests/mutation_equivalent.toml, keyed by module, function and the
changed line, not mutmut's numbering) or `no test kills it`, and each mutant that survived once
with the test that kills it now (tests/mutation_kills.py records it).

mutmut 3 mutates the bodies of functions and methods only: never a `@property` body, a class
attribute or module-level code. The hand mutants of tests/mutation_hand.toml stand for those:
each one replaces one line of a module (the same kind of change mutmut makes) in a copy, runs the
module's tests with `-x`, and is reported with the test that killed it, or as surviving.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import difflib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "dev" / "mutation-report.md"
DATA = ROOT / "docs" / "dev" / "mutation-report.json"
EQUIVALENTS = ROOT / "tests" / "mutation_equivalent.toml"
HAND = ROOT / "tests" / "mutation_hand.toml"
WORK = ROOT / ".nox" / "mutation" / "work"

# The pure-logic modules (a glob stands for each file it matches), each with the tests that
# reach it (globs too). mutmut maps every function to the tests that call it and runs only
# those on its mutants; the list stays on the tests that decide outcomes quickly (the slow live
# and HTTP-emulator tests reach the same code through the same checks).
MODULES: dict[str, tuple[str, ...]] = {
    "gpulab/netcalc.py": ("tests/unit/test_netcalc.py", "tests/unit/test_render.py",
                          "tests/unit/test_doctor.py"),
    "gpulab/nesting.py": ("tests/unit/test_hostile_inputs.py",),
    "gpulab/profile/safe_yaml.py": ("tests/unit/test_safe_yaml.py",
                                    "tests/unit/test_hostile_profiles.py",
                                    "tests/unit/test_profile.py"),
    "gpulab/profile/load.py": ("tests/unit/test_profile.py", "tests/unit/test_profile_refusals.py",
                               "tests/unit/test_hostile_profiles.py",
                               "tests/vcluster_kai/test_profile.py"),
    "gpulab/verify/recording.py": ("tests/unit/test_recording.py",
                                   "tests/unit/test_recording_schema.py",
                                   "tests/unit/test_replay_not_recorded.py",
                                   "tests/kamaji_hami/test_report.py",
                                   "tests/vcluster_kai/test_report.py"),
    "gpulab/verify/hami.py": ("tests/unit/test_verify_hami.py", "tests/unit/test_render.py",
                              "tests/kamaji_hami/test_inventory.py",
                              "tests/kamaji_hami/test_hami_wire.py",
                              "tests/kamaji_hami/test_tc0*.py", "tests/cluster/test_cluster.py",
                              "tests/cluster/test_eligibility.py"),
    "gpulab/verify/kai.py": ("tests/unit/test_verify_kai.py", "tests/vcluster_kai/test_checks.py",
                             "tests/vcluster_kai/test_corpus.py",
                             "tests/vcluster_kai/test_kai_wire.py",
                             "tests/cluster/test_cluster.py"),
    "gpulab/cluster/inventory.py": ("tests/cluster/test_cluster.py",
                                    "tests/cluster/test_eligibility.py",
                                    "tests/cluster/test_discovery_deadline.py",
                                    "tests/cluster/test_discovery.py"),
    "gpulab/cluster/rules.py": ("tests/cluster/test_rules.py", "tests/cluster/test_eligibility.py",
                                "tests/cluster/test_discovery.py", "tests/cluster/test_cluster.py"),
    "gpulab/cluster/checks.py": ("tests/cluster/test_run.py", "tests/cluster/test_cluster.py",
                                 "tests/cluster/test_verdict_texts.py"),
    "gpulab/stacks/kamaji_hami/checks/*.py": ("tests/kamaji_hami/test_tc0*.py",
                                              "tests/kamaji_hami/test_corpus.py",
                                              "tests/kamaji_hami/test_contract.py",
                                              "tests/kamaji_hami/test_registry.py"),
    # KAI's probe sizing (ProbeSizes, probe_sizes, sized_for_host) and what verify creates
    "gpulab/stacks/vcluster_kai/render.py": ("tests/vcluster_kai/test_render.py",
                                             "tests/vcluster_kai/test_checks.py",
                                             "tests/vcluster_kai/test_verdict_texts.py",
                                             "tests/vcluster_kai/test_profile.py",
                                             "tests/vcluster_kai/test_chart_values.py",
                                             "tests/vcluster_kai/test_existing_values.py",
                                             "tests/vcluster_kai/test_verify_objects.py",
                                             "tests/unit/test_existing_cluster_facts.py"),
    "gpulab/stacks/vcluster_kai/checks/*.py": ("tests/vcluster_kai/test_checks.py",
                                               "tests/vcluster_kai/test_corpus.py",
                                               "tests/vcluster_kai/test_contract.py",
                                               "tests/vcluster_kai/test_verdict_texts.py"),
}
# Never in a mutation run: they need Docker, build wheels or a real lab.
MARKERS = "not docker and not install and not e2e"
# Mutants whose tests run longer than (their usual time + CONSTANT) x MULTIPLIER x 2 CPU seconds
# count as killed (timeout): the mutant made the tests hang or crawl (a loop that never ends, a
# deadline or a retry count changed). No assertion failed, so the report counts them apart.
TIMEOUT_MULTIPLIER = 5.0
TIMEOUT_CONSTANT = 2.0

KILLED = {"killed", "timeout", "caught by type check"}
NOT_COUNTED = {"skipped"}  # `# pragma: no mutate`


def expand(pattern: str) -> list[str]:
    """The module files a MODULES key stands for (no `__init__.py`: nothing to mutate)."""
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern)
                  if p.name != "__init__.py")


def all_modules() -> dict[str, tuple[str, ...]]:
    """Every module file with its tests, in MODULES order."""
    return {module: tests for pattern, tests in MODULES.items() for module in expand(pattern)}


def select(args: list[str], changed: str | None) -> dict[str, tuple[str, ...]]:
    known = all_modules()
    if changed is not None:
        touched = set(_git("diff", "--name-only", changed, "--").split())
        touched |= set(_git("ls-files", "--others", "--exclude-standard").split())
        return {m: t for m, t in known.items() if m in touched}
    if not args:
        return known
    chosen: dict[str, tuple[str, ...]] = {}
    for arg in args:
        hits = {m: t for m, t in known.items() if fnmatch.fnmatch(m, arg)}
        if not hits:
            raise SystemExit(f"{arg} is not one of the modules tests/mutation.py lists: "
                             + ", ".join(known))
        chosen.update(hits)
    return chosen


def _git(*args: str) -> str:
    """Read-only git (no opportunistic index refresh: others may be committing)."""
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout


@dataclass(frozen=True)
class Mutant:
    """One mutant: mutmut's name (its number changes with the code) and what it changes."""

    name: str
    status: str
    function: str
    before: str  # the original lines it changes, stripped, joined by newlines
    after: str   # the same lines once mutated

    @property
    def key(self) -> tuple[str, str, str]:
        return self.function, self.before, self.after


@dataclass
class Equivalent:
    module: str
    function: str
    before: str
    after: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.function, self.before, self.after


def load_equivalents(path: Path = EQUIVALENTS) -> list[Equivalent]:
    """tests/mutation_equivalent.toml: `[[equivalent]]` tables with module, function, before,
    after (the changed lines, stripped), reason and `pinned_by`: the test that keeps true the
    rule the reason relies on (test_mutation_driver checks every entry has one)."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return [Equivalent(e["module"], e["function"], _norm(e["before"]), _norm(e["after"]),
                       " ".join(e["reason"].split())
                       + (f" (rule pinned by `{e['pinned_by']}`)" if e.get("pinned_by") else ""))
            for e in data.get("equivalent", [])]


def _norm(lines: str) -> str:
    return "\n".join(line.strip() for line in lines.strip().splitlines())


def function_of(mangled: str) -> str:
    """`x_metallb_range` → metallb_range, `xǁKaiReasonǁ__init__` → KaiReason.__init__."""
    if mangled.startswith("xǁ"):
        _, cls, name = mangled.split("ǁ", 2)
        return f"{cls}.{name}"
    return mangled.removeprefix("x_")


def mutant_changes(mutated_file: Path) -> dict[str, tuple[str, str, str]]:
    """Each generated mutant of a mutated file (mutmut's copy with every mutant in it) →
    (function, original lines, mutated lines), diffed against the unmutated copy mutmut keeps
    beside it (`<function>__mutmut_orig`)."""
    source = mutated_file.read_text(encoding="utf-8")
    lines = source.splitlines()
    functions: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            body = lines[start - 1:node.end_lineno]
            functions[node.name] = [line.replace(node.name, "FUNCTION") for line in body]
    out: dict[str, tuple[str, str, str]] = {}
    for name, body in functions.items():
        mangled, _, number = name.rpartition("__mutmut_")
        if number == "orig":
            continue
        orig = functions.get(f"{mangled}__mutmut_orig", [])
        removed, added = [], []
        for line in difflib.unified_diff(orig, body, lineterm="", n=0):
            if line.startswith(("---", "+++", "@@")):
                continue
            (removed if line.startswith("-") else added).append(line[1:].strip())
        out[name] = (function_of(mangled), "\n".join(removed), "\n".join(added))
    return out


@dataclass
class Run:
    module: str
    tests: tuple[str, ...]
    mutants: list[Mutant] = field(default_factory=list)
    kills: dict[str, str] = field(default_factory=dict)  # mutant name → test that failed
    deselected: list[str] = field(default_factory=list)
    stamp: dict[str, Any] = field(default_factory=dict)  # date, commit, working_tree of the run

    @property
    def counted(self) -> list[Mutant]:
        return [m for m in self.mutants if m.status not in NOT_COUNTED]

    @property
    def killed(self) -> int:
        return sum(m.status in KILLED for m in self.counted)

    @property
    def timeouts(self) -> int:
        return sum(m.status == "timeout" for m in self.counted)

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.counted if m.status not in KILLED]


def slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def prepare(module: str, tests: tuple[str, ...], work: Path, deselect: list[str]) -> None:
    """A copy of the sources, tests and docs with mutmut's configuration for `module`."""
    if work.exists():
        shutil.rmtree(work)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for folder in ("gpulab", "profiles", "tests", "docs"):
        shutil.copytree(ROOT / folder, work / folder, ignore=ignore)
    options = {
        "source_paths": ["gpulab"],
        "only_mutate": [module],
        "also_copy": ["docs", "profiles"],
        "pytest_add_cli_args": ["-p", "tests.mutation_kills", "-p", "no:cacheprovider",
                                "-m", MARKERS],
        "pytest_add_cli_args_test_selection": [
            *tests, *(arg for test in deselect for arg in ("--deselect", test))],
        "timeout_multiplier": TIMEOUT_MULTIPLIER,
        "timeout_constant": TIMEOUT_CONSTANT,
        "use_git_change_detection": False,
    }
    table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in options.items())
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (work / "pyproject.toml").write_text(f"{pyproject}\n[tool.mutmut]\n{table}\n",
                                         encoding="utf-8")


def _env(work: Path) -> dict[str, str]:
    kills = work / "kills"
    kills.mkdir(exist_ok=True)
    # No git repository above the copy: mutmut asks git what changed, and must not see ours.
    return {**os.environ, "GPULAB_MUTATION_KILLS": str(kills),
            "GIT_CEILING_DIRECTORIES": str(work.parent)}


def clean_failures(tests: tuple[str, ...], work: Path) -> list[str]:
    """The tests that fail on the unmutated copy (left out of the mutation run)."""
    env = _env(work)
    env.pop("MUTANT_UNDER_TEST", None)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.mutation_kills",
                    "-p", "no:cacheprovider", "-m", MARKERS, *tests],
                   cwd=work, env=env, check=False, stdout=subprocess.DEVNULL)
    failed = work / "kills" / "clean"
    found = sorted(set(failed.read_text(encoding="utf-8").split())) if failed.exists() else []
    if failed.exists():
        failed.unlink()
    return found


def mutmut(work: Path, *args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).parent / "mutmut"
    done = subprocess.run([str(exe), *args], cwd=work, env=_env(work), check=False,
                          text=True, capture_output=capture)
    if done.returncode != 0:
        raise SystemExit(f"mutmut {' '.join(args)} failed in {work} (exit {done.returncode})"
                         + (f":\n{done.stdout}{done.stderr}" if capture else ""))
    return done.stdout or ""


def run_module(module: str, tests: tuple[str, ...], max_children: int) -> Run:
    work = WORK / slug(module)
    tests = tuple(str(p.relative_to(ROOT)) for pattern in tests
                  for p in sorted(ROOT.glob(pattern)))  # files that exist (new tests may not)
    prepare(module, tests, work, [])
    deselect = clean_failures(tests, work)
    if deselect:
        print(f"{module}: {len(deselect)} test(s) fail without any mutant, left out: "
              + ", ".join(deselect), flush=True)
        prepare(module, tests, work, deselect)
    dirty = bool(_git("status", "--porcelain", "--", module).strip())
    (work / "selection.json").write_text(json.dumps({
        "tests": tests, "deselected": deselect, **_stamp(), "working_tree": dirty}),
        encoding="utf-8")
    mutmut(work, "run", "--max-children", str(max_children))
    return last_run(module)


def last_run(module: str) -> Run:
    """The verdicts of the module's last run, read back from its work folder."""
    work = WORK / slug(module)
    if not (work / "selection.json").exists():
        raise SystemExit(f"{module} has no finished run in {work}")
    selection = json.loads((work / "selection.json").read_text(encoding="utf-8"))
    statuses: dict[str, str] = {}
    for line in mutmut(work, "results", "--all", "true", capture=True).splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            statuses[name] = status
    changes = mutant_changes(work / "mutants" / module)
    run = Run(module, tuple(selection["tests"]), deselected=selection["deselected"],
              stamp={k: selection[k] for k in ("date", "commit", "working_tree")
                     if k in selection})
    for name, status in sorted(statuses.items(), key=lambda kv: _number(kv[0])):
        short = name.rpartition(".")[2]
        function, before, after = changes.get(short, (function_of(short.rpartition(
            "__mutmut_")[0]), "", ""))
        run.mutants.append(Mutant(short, status, function, before, after))
    for path in (work / "kills").iterdir():
        lines = path.read_text(encoding="utf-8").split()
        if lines and "__mutmut_" in path.name:
            run.kills[path.name.rpartition(".")[2]] = lines[0]
    return run


def _number(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("__mutmut_")
    return head, int(number) if number.isdigit() else -1


def _stamp() -> dict[str, str]:
    return {"date": datetime.date.today().isoformat(),
            "commit": _git("rev-parse", "--short", "HEAD").strip()}


def _as_dict(m: Mutant) -> dict[str, str]:
    return {"function": m.function, "before": m.before, "after": m.after}


def record(data: dict[str, Any], run: Run, equivalents: list[Equivalent]) -> dict[str, Any]:
    """Fold one run into the module's entry of the report data."""
    entry = data.setdefault(run.module, {})
    mine = {e.key: e.reason for e in equivalents if e.module == run.module}
    stamp = run.stamp or {**_stamp(), "working_tree": bool(
        _git("status", "--porcelain", "--", run.module).strip())}
    score = {**stamp, "killed": run.killed, "total": len(run.counted), "timeouts": run.timeouts}
    entry.setdefault("before", score)
    survivors = []
    for m in run.survivors:
        survivors.append({"mutant": m.name, "status": m.status, **_as_dict(m),
                          "equivalent": mine.get(m.key, "")})
    by_key = {m.key: m for m in run.mutants}
    ever = {(e["function"], e["before"], e["after"]) for e in entry.get("ever_survived", [])}
    ever |= {m.key for m in run.survivors}
    killed_now = []
    for key in sorted(ever):
        m = by_key.get(key)
        if m is not None and m.status in KILLED:
            killed_now.append({**_as_dict(m), "test": run.kills.get(m.name, "(timeout)")})
    entry["ever_survived"] = [dict(zip(("function", "before", "after"), key, strict=True))
                              for key in sorted(ever) if key in by_key]
    entry["tests"] = list(run.tests)
    entry["now"] = {**score, "equivalent": sum(bool(s["equivalent"]) for s in survivors),
                    "survivors": survivors, "killed_former": killed_now,
                    "deselected": run.deselected}
    return entry


@dataclass(frozen=True)
class Hand:
    """A hand mutant (tests/mutation_hand.toml): one line of `module` replaced by another."""

    module: str
    function: str
    before: str  # the line as it is in the module, stripped
    after: str   # what it becomes (same indentation)
    why: str     # why mutmut does not make it (a @property body, module level, ...)
    equivalent: str = ""  # why it cannot change behaviour, when it cannot


def load_hand(path: Path = HAND) -> list[Hand]:
    """tests/mutation_hand.toml: `[[hand]]` tables with module, function, before, after, why."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return [Hand(h["module"], h["function"], h["before"].strip(), h["after"].strip(),
                 " ".join(h["why"].split()), " ".join(h.get("equivalent", "").split()))
            for h in data.get("hand", [])]


def apply_hand(source: str, hand: Hand) -> str:
    """`source` with the one line that reads `hand.before` (stripped) replaced by `hand.after`
    at the same indentation (SystemExit when no line or several lines read so)."""
    lines = source.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if line.strip() == hand.before]
    if len(found) != 1:
        raise SystemExit(f"{hand.module}: {len(found)} lines read {hand.before!r} "
                         "(tests/mutation_hand.toml wants exactly one)")
    line = lines[found[0]]
    indent = line[:len(line) - len(line.lstrip())]
    lines[found[0]] = f"{indent}{hand.after}\n"
    return "".join(lines)


def run_hand(module: str, tests: tuple[str, ...], hands: list[Hand]) -> dict[str, Any]:
    """Each hand mutant of `module`, one at a time in a copy, against the module's tests (`-x`);
    a mutant whose tests run 5 x the clean run's time + 30 s is a timeout."""
    work = WORK / f"{slug(module)}.hand"
    tests = tuple(str(p.relative_to(ROOT)) for pattern in tests
                  for p in sorted(ROOT.glob(pattern)))
    prepare(module, tests, work, [])
    started = datetime.datetime.now()
    deselect = clean_failures(tests, work)
    limit = 5 * (datetime.datetime.now() - started).total_seconds() + 30
    target = work / module
    original = target.read_text(encoding="utf-8")
    env = _env(work)
    out = []
    try:
        for number, hand in enumerate(hands, 1):
            target.write_text(apply_hand(original, hand), encoding="utf-8")
            name = f"hand{number}__mutmut_hand"
            command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "tests.mutation_kills",
                       "-p", "no:cacheprovider", "-m", MARKERS, *tests,
                       *(arg for test in deselect for arg in ("--deselect", test))]
            try:
                done = subprocess.run(command, cwd=work, env={**env, "MUTANT_UNDER_TEST": name},
                                      check=False, stdout=subprocess.DEVNULL, timeout=limit)
                status = {0: "survived", 1: "killed"}.get(done.returncode,
                                                          f"error (pytest exit {done.returncode})")
            except subprocess.TimeoutExpired:
                status = "timeout"
            killer = work / "kills" / name
            test = killer.read_text(encoding="utf-8").split()[0] if killer.exists() else ""
            out.append({"function": hand.function, "before": hand.before, "after": hand.after,
                        "why": hand.why, "status": status, "test": test,
                        "equivalent": hand.equivalent})
            print(f"  hand {hand.function}: {status} {test}", flush=True)
    finally:
        target.write_text(original, encoding="utf-8")
    return {**_stamp(), "working_tree": bool(_git("status", "--porcelain", "--", module).strip()),
            "mutants": out}


def _hand_score(entry: dict[str, Any]) -> str:
    hand = entry.get("hand")
    if not hand:
        return "-"
    killed = sum(h["status"] == "killed" for h in hand["mutants"])
    equivalent = sum(bool(h.get("equivalent")) and h["status"] == "survived"
                     for h in hand["mutants"])
    return f"{killed}/{len(hand['mutants'])}" + (f" ({equivalent} equivalent)" if equivalent
                                                  else "")


def percent(killed: int, total: int) -> str:
    return f"{100 * killed / total:.1f} %" if total else "-"


def _code(text: str) -> str:
    text = text.replace("\n", " ⏎ ").replace("|", "\\|")
    return f"`{text}`" if text else "(nothing)"


def _when(score: dict[str, Any]) -> str:
    return f"{score['date']}, {score['commit']}" + ("+" if score.get("working_tree") else "")


def render(data: dict[str, Any]) -> str:
    out = [
        "# Mutation report",
        "",
        "Written by `nox -s mutation` (tests/mutation.py) from `mutation-report.json`; do not "
        "edit by hand. [mutation-testing.md](mutation-testing.md) says how to run it and read it.",
        "Score: killed mutants (a test failed, or the tests timed out) over all mutants. "
        "*Without equivalents*: the same with the mutants tests/mutation_equivalent.toml "
        "explains left out. A `+` after the commit: the module had uncommitted changes when it ran.",
        "*Timeouts*: kills of the latest run that are timeouts (the mutant's tests ran past "
        "(usual time + 2 s) x 5 x 2 CPU seconds: an endless loop, a deadline or a retry count "
        "changed); no test failed, so they are counted as killed but weaker evidence; `?`: a run "
        "from before timeouts were counted apart.",
        "*Hand mutants*: killed over all of tests/mutation_hand.toml's mutants of the module, "
        "the code mutmut does not mutate (`@property` bodies, class attributes, module level); "
        "`-`: none listed.",
        "",
        "| module | before | score before | now | score now | without equivalents | "
        "survivors (equivalent) | timeouts | hand mutants |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    modules = [m for m in all_modules() if m in data] + sorted(set(data) - set(all_modules()))
    for module in modules:
        entry = data[module]
        before, now = entry["before"], entry["now"]
        survivors = len(now["survivors"])
        out.append(
            f"| `{module}` | {before['killed']}/{before['total']} ({_when(before)}) | "
            f"{percent(before['killed'], before['total'])} | "
            f"{now['killed']}/{now['total']} ({_when(now)}) | "
            f"{percent(now['killed'], now['total'])} | "
            f"{percent(now['killed'], now['total'] - now['equivalent'])} | "
            f"{survivors} ({now['equivalent']}) | {now.get('timeouts', '?')} | "
            f"{_hand_score(entry)} |")
    missing = [m for m in all_modules() if m not in data]
    if missing:
        out += ["", "Not run yet: " + ", ".join(f"`{m}`" for m in missing) + "."]
    for module in modules:
        entry = data[module]
        now = entry["now"]
        tree = ", working tree" if now.get("working_tree") else ""
        out += ["", f"## `{module}`", "",
                f"Run {now['date']} at {now['commit']}{tree} with "
                + ", ".join(f"`{t}`" for t in entry["tests"]) + "."]
        if now["deselected"]:
            out += ["", "Left out (failing without any mutant): "
                    + ", ".join(f"`{t}`" for t in now["deselected"]) + "."]
        if now["survivors"]:
            out += ["", "| survivor | function | line | mutated to | why it lives |",
                    "| --- | --- | --- | --- | --- |"]
            for s in now["survivors"]:
                why = (f"equivalent: {' '.join(s['equivalent'].split())}" if s["equivalent"]
                       else f"{s['status']}: no test kills it")
                out.append(f"| {s['mutant'].rpartition('__mutmut_')[2]} | `{s['function']}` | "
                           f"{_code(s['before'])} | {_code(s['after'])} | {why} |")
        hand = entry.get("hand")
        if hand:
            out += ["", f"Hand mutants (run {_when(hand)}):", "",
                    "| function | line | mutated to | why mutmut misses it | verdict |",
                    "| --- | --- | --- | --- | --- |"]
            for h in hand["mutants"]:
                verdict = (f"killed by `{h['test']}`" if h["status"] == "killed"
                           else f"equivalent: {h['equivalent']}" if h.get("equivalent")
                           and h["status"] == "survived" else h["status"])
                out.append(f"| `{h['function']}` | {_code(h['before'])} | {_code(h['after'])} "
                           f"| {h['why']} | {verdict} |")
        if now["killed_former"]:
            out += ["", "Survived once, killed now:", "",
                    "| function | line | mutated to | killed by |", "| --- | --- | --- | --- |"]
            for k in now["killed_former"]:
                out.append(f"| `{k['function']}` | {_code(k['before'])} | {_code(k['after'])} "
                           f"| `{k['test']}` |")
    return "\n".join(out) + "\n"


def summary(run: Run, entry: dict[str, Any]) -> str:
    now = entry["now"]
    lines = [f"{run.module}: {run.killed}/{len(run.counted)} killed, "
             f"{percent(run.killed, len(run.counted))} (without equivalents "
             f"{percent(run.killed, len(run.counted) - now['equivalent'])})"]
    for s in now["survivors"]:
        tag = "equivalent" if s["equivalent"] else s["status"]
        lines.append(f"  {tag:10} {s['mutant']}")
        lines += [f"      - {line}" for line in s["before"].splitlines()]
        lines += [f"      + {line}" for line in s["after"].splitlines()]
    return "\n".join(lines)


def relabel(data: dict[str, Any], equivalents: list[Equivalent]) -> dict[str, Any]:
    """Match every module's recorded survivors against `equivalents` again, as a run would
    (after tests/mutation_equivalent.toml was edited): each survivor's reason and the count."""
    for module, entry in data.items():
        now = entry.get("now")
        if not now:
            continue
        mine = {e.key: e.reason for e in equivalents if e.module == module}
        for survivor in now["survivors"]:
            survivor["equivalent"] = mine.get(
                (survivor["function"], survivor["before"], survivor["after"]), "")
        now["equivalent"] = sum(bool(s["equivalent"]) for s in now["survivors"])
    return data


def _write(data: dict[str, Any]) -> None:
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    REPORT.write_text(render(data), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nox -s mutation --", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="module paths or globs (default: all)")
    parser.add_argument("--changed", nargs="?", const="HEAD", metavar="REF",
                        help="the modules `git diff REF` touches (default REF: HEAD)")
    parser.add_argument("--from-last-run", action="store_true",
                        help="report the modules' last runs again (after editing "
                             "tests/mutation_equivalent.toml) without running mutmut")
    parser.add_argument("--relabel", action="store_true",
                        help="match the recorded survivors against "
                             "tests/mutation_equivalent.toml again and rewrite the report, "
                             "without mutmut or a work folder")
    parser.add_argument("--hand", action="store_true",
                        help="run only the modules' hand mutants (tests/mutation_hand.toml)")
    parser.add_argument("--max-children", type=int,
                        default=max(1, (os.cpu_count() or 2) // 2),
                        help="mutants tested at once (default: half the CPUs)")
    args = parser.parse_args(argv)
    if args.relabel:
        _write(relabel(json.loads(DATA.read_text(encoding="utf-8")), load_equivalents()))
        print(f"report: {REPORT.relative_to(ROOT)}")
        return 0
    chosen = select(args.modules, args.changed)
    if not chosen:
        print("no module of tests/mutation.py to run")
        return 0
    equivalents = load_equivalents()
    hands = load_hand()
    summaries = []
    for module, tests in chosen.items():
        print(f"== {module}: {' '.join(tests)}", flush=True)
        mine = [h for h in hands if h.module == module]
        if args.hand:
            if not mine:
                continue
            data = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
            data.setdefault(module, {})["hand"] = run_hand(module, tests, mine)
            if "now" in data[module]:
                _write(data)
            summaries.append(f"{module}: hand mutants {_hand_score(data[module])} killed")
            continue
        run = (last_run(module) if args.from_last_run
               else run_module(module, tests, args.max_children))
        hand = run_hand(module, tests, mine) if mine and not args.from_last_run else None
        # read again: another run may have written other modules meanwhile
        data = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
        if hand is not None:
            data.setdefault(module, {})["hand"] = hand
        entry = record(data, run, equivalents)
        _write(data)
        summaries.append(summary(run, entry))
        print(summaries[-1], flush=True)
    print("\n".join(["", "== mutation scores", *summaries]))
    print(f"report: {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
