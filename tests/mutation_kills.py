"""pytest plugin for `nox -s mutation` (tests/mutation.py): which test killed which mutant.

mutmut runs each mutant's tests with `-x` and keeps only the exit code. With
`GPULAB_MUTATION_KILLS=<folder>` set, this plugin writes the failing test's node id to
`<folder>/<mutant>` (mutmut names the mutant in `MUTANT_UNDER_TEST`), so the report can say which
test kills a mutant that once survived. Outside a mutant (the driver's clean run before mutmut
starts) failures go to `<folder>/clean`, and those tests are left out of the mutation run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    folder = os.environ.get("GPULAB_MUTATION_KILLS")
    if not folder or not report.failed:
        return
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant and "__mutmut_" not in mutant:
        return  # mutmut's own runs (stats, the forced failure): not a verdict on a mutant
    with (Path(folder) / (mutant or "clean")).open("a", encoding="utf-8") as out:
        out.write(report.nodeid + "\n")
