"""Every module of gpulab imports (`nox -s lowest` runs this against the lowest versions of the
runtime dependencies, with the first test of every other test module: tests/conftest.py's
--one-per-module)."""

from __future__ import annotations

import importlib
import pkgutil

import gpulab


def test_every_gpulab_module_imports() -> None:
    """Each module found on disk (`python -m gpulab`'s __main__ runs the CLI: not imported)."""
    names = sorted(m.name for m in pkgutil.walk_packages(gpulab.__path__, "gpulab.")
                   if not m.name.endswith(".__main__"))
    assert "gpulab.adapters.docker_runtime" in names and "gpulab.cli" in names
    for name in names:
        importlib.import_module(name)
