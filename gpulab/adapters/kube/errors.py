"""KubeApiError and the one-line texts of failed calls (status, deadline, connection).
"""


from __future__ import annotations

from typing import TYPE_CHECKING

import urllib3

from gpulab import nesting
from gpulab.errors import AdapterError

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException


_MAX_DETAIL = 300


class KubeApiError(AdapterError):
    """An API call that failed; `status` is the HTTP status, 0 when there was no answer."""

    def __init__(
        self, message: str, *, status: int, reason: str = "", hint: str | None = None,
        output: str = "",
    ) -> None:
        super().__init__(message, hint=hint, output=output)
        self.status = status
        self.reason = reason


def _seconds(value: float) -> str:
    return f"{round(value, 1) if value < 10 else round(value):g}s"


class _DeadlineExceeded(urllib3.exceptions.TimeoutError):
    """A request that did not complete within its deadline: `limit` seconds from sending it.

    `received`: bytes of the body that had arrived (None: no answer at all, not even headers).
    `final`: the total deadline of `KubeClient.bounded` is what ran out, so retrying cannot help.
    """

    def __init__(self, limit: float, *, received: int | None = None, final: bool = False,
                 connecting: bool = False) -> None:
        self.limit, self.received, self.final = limit, received, final
        if final and limit <= 0:
            text = "not sent: the time allowed for these requests had run out"
        elif connecting:
            text = f"could not connect within {_seconds(limit)}"
        elif received is None:
            text = f"no answer within {_seconds(limit)}"
        else:
            text = (f"the answer did not complete within {_seconds(limit)} "
                    f"({received} byte(s) of its body came)")
        super().__init__(text + (", all the time left" if final and limit > 0 else ""))


def _one_line(text: str, limit: int = _MAX_DETAIL) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _status_detail(exc: ApiException) -> tuple[str, str]:
    """(reason, message) from a Kubernetes `Status` body, else the HTTP reason phrase."""
    reason = str(exc.reason or "")
    message = ""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip():
        try:
            status = nesting.json_loads(body)
        except ValueError:
            message = body
        else:
            if isinstance(status, dict) and status.get("kind") == "Status":
                reason = str(status.get("reason") or reason)
                message = str(status.get("message") or "")
    return reason, _one_line(message)


def _connection_reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)  # MaxRetryError wraps the real cause
    cause = inner if isinstance(inner, BaseException) else exc
    return _one_line(f"{type(cause).__name__}: {cause}", 200)
