"""Proving, within seconds, that this host reaches an API server gpulab hands the user (the
management cluster's, a tenant's), before the first step that talks to it: a TCP connect, not a
ten-minute timeout deep inside a later step.

`prove` is the rule (retries a refused connect for a few seconds, then one line naming the
engine and the fix); the dial itself comes from the lab's adapters (`LabAdapters.dial`), so the
tests dial nothing.
"""

from __future__ import annotations

import socket
import sys
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gpulab.docker_engines import Engine, classify
from gpulab.errors import GpulabError, HostError

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.adapters.base import ContainerRuntime

    Dial = Callable[[str, int, float], None]

__all__ = ["DIAL_SECONDS", "engine_of", "host_port", "prove", "route_fix", "tcp_dial"]

DIAL_SECONDS = 5.0
_sleep = time.sleep  # module seams: the tests' clock
_clock = time.monotonic


def tcp_dial(host: str, port: int, timeout: float) -> None:
    """A TCP connect to `host:port` within `timeout` seconds (OSError when it fails)."""
    with socket.create_connection((host, port), timeout=timeout):
        pass


def host_port(url: str) -> tuple[str, int]:
    """(host, port) of an https:// server URL (443 when it names none)."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or 443


def engine_of(runtime: ContainerRuntime) -> Engine | None:
    """The engine `runtime` talks to (gpulab.docker_engines), None when it cannot tell."""
    try:
        info = runtime.info()
    except GpulabError:
        return None
    endpoint = getattr(runtime, "endpoint", None)
    local = endpoint is None or getattr(endpoint, "unix_socket", None) is not None
    return classify(info, local=local, host_os=sys.platform)


def route_fix(engine: Engine | None, node: str, port: int) -> str:
    """What to do when this host does not reach `port`, published by the kind node `node`."""
    where = f"docker port {node}" if node else "docker ps"
    check = f"`{where}` must list 127.0.0.1:{port}"
    if engine is not None and engine.kind in ("docker-desktop", "colima", "orbstack"):
        return (f"{check}; {engine.label} forwards the ports its VM's containers publish to "
                f"this host: restart {engine.label}, then gpulab up (it resumes)")
    if engine is not None and engine.kind == "linux":
        return (f"{check}; nothing else may hold that port, and no firewall rule may drop "
                "loopback traffic; then gpulab up (it resumes)")
    return f"{check}; then gpulab up (it resumes)"


def prove(dial: Dial, url: str, what: str, engine: Engine | None, fix: str, *,
          seconds: float = DIAL_SECONDS, sleep: Callable[[float], None] | None = None,
          clock: Callable[[], float] | None = None) -> None:
    """Return once `dial` connects to `url`'s host and port; HostError, one line, when it has
    not within `seconds`."""
    sleep = sleep or _sleep
    clock = clock or _clock
    host, port = host_port(url)
    deadline = clock() + seconds
    reason = "no answer"
    while True:
        try:
            dial(host, port, max(0.1, min(2.0, deadline - clock())))
            return
        except OSError as err:
            reason = err.strerror or str(err) or type(err).__name__
        if clock() >= deadline:
            break
        sleep(0.5)
    on = engine.label if engine is not None else "this Docker engine"
    raise HostError(f"this host does not reach {what} at {host}:{port} (tried {seconds:g} s, "
                    f"{on}): {reason}", hint=fix)
