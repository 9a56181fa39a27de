"""Docker adapter: placeholder replaced by the real docker-py adapter (issue 3)."""

from __future__ import annotations

from typing import NoReturn

from gpulab.errors import HostError


def connect(timeout: float = 10) -> NoReturn:
    raise HostError("Docker adapter not available yet")
