"""Shared fixtures: an isolated GPULAB_HOME per test, the built-in profile; xdist workers see
the terminal size the pytest command saw; skips for want of the host setup fold into one line
each; --one-per-module selects the first test of each module (nox -s lowest)."""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.stacks import load_profile
from tests import host

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("gpulab-home")
    monkeypatch.setenv("GPULAB_HOME", str(home))
    return home


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread during the test, as in a shell.

    Tests that play Ctrl-C with `_thread.interrupt_main()` rely on Python's own SIGINT handler,
    which Python installs only when it starts with SIGINT at its default: a suite started from a
    shell that ignores it (`nohup pytest &`, a non-interactive `cmd &`) inherits SIG_IGN and
    interrupt_main() does nothing. This sets the handler and puts back what was there.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def kamaji_profile() -> KamajiHamiProfile:
    return load_profile("kamaji-hami").profile


# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment (GNU readline
# exports the size it assumes when it is initialised there), which the CLI's tables read as the
# width of a pipe: the width tests would pass alone and fail on a worker. Each worker gets the
# values the pytest command itself had, or none.
_TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: hand each worker this process's COLUMNS and LINES."""
    node.workerinput["gpulab_terminal_size"] = {name: os.environ.get(name)
                                                for name in _TERMINAL_SIZE}


def pytest_configure(config: pytest.Config) -> None:
    sizes = getattr(config, "workerinput", {}).get("gpulab_terminal_size")
    for name, value in (sizes or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test skipped for want of the host setup (tests/host.py) is reported at host.unavailable,
    not at the test, so `-ra` folds them into one line for each thing missing."""
    report = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and host.HINT in str(longrepr[2]):
        report.longrepr = (host.__file__, host.unavailable.__code__.co_firstlineno, longrepr[2])
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--one-per-module", action="store_true",
        help="run only the first test of each test module (nox -s lowest: every module of "
             "tests/, so every adapter and every import, without the whole suite again)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--one-per-module: keep the first collected test of each module, deselect the rest. The
    rule follows the files, so a new test module is in the subset the day it is added."""
    if not config.getoption("one_per_module"):
        return
    seen: set[object] = set()
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (dropped if item.path in seen else kept).append(item)
        seen.add(item.path)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
