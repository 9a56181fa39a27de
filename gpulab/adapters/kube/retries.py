"""Retries (RetryPolicy: transient failures, a bounded number of times) and the request
deadline: the body read one `read1` at a time within it, urllib3's own retries turned off.
"""


from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTClientObject
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from gpulab.adapters.kube.errors import _DeadlineExceeded, _one_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from kubernetes import client as k8s_client
    from tenacity.stop import StopBaseT
    from tenacity.wait import WaitBaseT

log = logging.getLogger("gpulab.adapters.kube")  # cli shows its retries


_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


def _is_transient(method: str) -> Callable[[BaseException], bool]:
    def check(exc: BaseException) -> bool:
        if isinstance(exc, _DeadlineExceeded) and exc.final:
            return False
        if isinstance(exc, ApiException):
            status = int(exc.status or 0)
            # A 409 on create means "already exists": retrying cannot change that.
            return status in _TRANSIENT_STATUS or (status == 409 and method != "POST")
        return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError)

    return check


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    log.warning("kube API call failed (attempt %d), retrying: %s", state.attempt_number,
                _one_line(str(exc)) if exc else "?")


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried; tests pass `RetryPolicy.disabled()`."""

    stop: StopBaseT = field(default_factory=lambda: stop_after_attempt(6) | stop_after_delay(60))
    wait: WaitBaseT = field(default_factory=lambda: wait_exponential(multiplier=0.5, max=10))
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def disabled(cls) -> RetryPolicy:
        return cls(stop=stop_after_attempt(1))

    def retrying(self, method: str) -> Retrying:
        return Retrying(
            stop=self.stop,
            wait=self.wait,
            sleep=self.sleep,
            retry=retry_if_exception(_is_transient(method)),
            before_sleep=_log_retry,
            reraise=True,
        )


_CHUNK = 64 * 1024


def _no_hidden_retries(api: k8s_client.ApiClient) -> None:
    """Make the client's urllib3 PoolManager retry nothing (see the module docstring): gpulab's
    `RetryPolicy` is the only retry, and it is visible. `client_go_retries` (kubernetes 37,
    configuration.py:368, off by default) would retry GETs on Retry-After answers: kept off."""
    config = api.configuration
    config.retries = False  # urllib3: Retry(False), errors raised as they are (retry.py:483-485)
    config.client_go_retries = False
    api.rest_client.close()
    api.rest_client = RESTClientObject(config)  # its PoolManager reads `retries` when built


def _read_body(response: Any, limit: float | None, until: float | None, *,
               final: bool = False) -> bytes:
    """The whole body of a urllib3 response by `until` (time.monotonic()), else
    `_DeadlineExceeded`. Each `read1` does at most one socket read (http.client), and that read
    may wait only for what is left; the clock is looked at between reads."""
    chunks: list[bytes] = []
    received = 0
    while True:
        if until is not None and limit is not None:
            left = until - time.monotonic()
            if left <= 0:
                response.close()  # the rest of the body must not reach the next request
                raise _DeadlineExceeded(limit, received=received, final=final)
            sock = getattr(response.connection, "sock", None)
            if sock is not None:
                sock.settimeout(left)  # urllib3 sets it again for the connection's next request
        try:
            chunk = response.read1(_CHUNK)
        except urllib3.exceptions.ReadTimeoutError as err:  # the connection is closed already
            if limit is None:
                raise
            raise _DeadlineExceeded(limit, received=received, final=final) from err
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        received += len(chunk)
