"""Fixtures for the verify checks: the built-in profile, the write-up's healthy lab state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.kamaji_hami.builders import healthy_state

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState


@pytest.fixture
def profile(kamaji_profile: KamajiHamiProfile) -> KamajiHamiProfile:
    return kamaji_profile


@pytest.fixture
def healthy(profile: KamajiHamiProfile) -> LabState:
    return healthy_state(profile)
