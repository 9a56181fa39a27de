"""Shared fixtures: an isolated GPULAB_HOME per test, the built-in profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gpulab.stacks import load_profile

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("gpulab-home")
    monkeypatch.setenv("GPULAB_HOME", str(home))
    return home


@pytest.fixture
def kamaji_profile() -> KamajiHamiProfile:
    return load_profile("kamaji-hami").profile
