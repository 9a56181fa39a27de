"""Fixtures for the vcluster-kai stack: the built-in profile and the write-up's healthy state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gpulab.profile.load import load_profile
from tests.vcluster_kai.builders import healthy_state

if TYPE_CHECKING:
    from gpulab.checks.kai.state import KaiLabState
    from gpulab.profile.vcluster_kai import VclusterKaiProfile


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
