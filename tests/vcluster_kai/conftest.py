"""Fixtures for the vcluster-kai stack: the built-in profile and the write-up's healthy state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gpulab.stacks import load_profile
from tests.vcluster_kai.builders import healthy_state

if TYPE_CHECKING:
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
    from gpulab.stacks.vcluster_kai.state import KaiLabState


@pytest.fixture
def kai_profile() -> VclusterKaiProfile:
    profile = load_profile("vcluster-kai").profile
    assert profile.stack == "vcluster-kai"
    return profile  # type: ignore[return-value]


@pytest.fixture
def healthy(kai_profile: VclusterKaiProfile) -> KaiLabState:
    return healthy_state(kai_profile)


# The real-Docker fixtures (skip locally without an engine, fail in CI), for test_docker.py.
from tests.docker.conftest import client, runtime  # noqa: E402, F401
