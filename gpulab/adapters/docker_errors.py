"""Reaching the Docker engine and naming its failures: HostError when the engine is unreachable,
AdapterError when it refused one call, each one line (`docker_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import docker
import docker.errors
import requests

from gpulab.errors import AdapterError, GpulabError, HostError

if TYPE_CHECKING:
    from gpulab.adapters.base import ContainerSpec
    from gpulab.adapters.docker_endpoint import DockerEndpoint


_START_HINT: Final = "start Docker, or set DOCKER_HOST to the engine's address"


def _where(endpoint: DockerEndpoint) -> str:
    """What names the address: DOCKER_HOST, or the context that holds it."""
    return f"Docker context '{endpoint.context}'" if endpoint.from_context else "DOCKER_HOST"


def _start_hint(endpoint: DockerEndpoint) -> str:
    if endpoint.from_context:
        return (f"start the engine of Docker context '{endpoint.context}', or choose another "
                "(docker context use NAME, or set DOCKER_HOST)")
    return _START_HINT


def _fix_address(endpoint: DockerEndpoint) -> str:
    if endpoint.from_context:
        return (f"fix it (docker context inspect {endpoint.context}) or use another context "
                "(docker context use default)")
    return "use e.g. unix:///var/run/docker.sock or tcp://HOST:2375, or unset it"


def _malformed(endpoint: DockerEndpoint, err: BaseException) -> HostError:
    """An address docker-py cannot even parse (a bad port, a broken IPv6 address) or an ssh://
    address without its ssh support (paramiko) installed."""
    host, where = endpoint.host, _where(endpoint)
    if host.startswith("ssh://") and isinstance(err, NameError):
        return HostError(f"{where} '{host}' needs docker-py's ssh support",
                         hint=f"pip install paramiko, or point {where} at a unix:// or "
                              "tcp:// address")
    return HostError(f"{where} '{host}' is not a Docker address ({_one_line(str(err))})",
                     hint=_fix_address(endpoint))


def _unreachable(err: BaseException, endpoint: DockerEndpoint, timeout: float) -> HostError:
    """Why the engine at the endpoint could not be reached, as one line with what to do."""
    text = str(err)
    host = endpoint.describe()
    start = _start_hint(endpoint)
    if "SSHHTTPAdapter" in text or "paramiko" in text:
        return _malformed(endpoint, NameError(text))
    if "Invalid bind address" in text or "Invalid port" in text or "URLSchemeUnknown" in text:
        return HostError(f"{_where(endpoint)} '{endpoint.host}' is not a Docker address",
                         hint=_fix_address(endpoint))
    cause = _root_cause(err)
    if isinstance(cause, PermissionError):
        return HostError(
            f"no permission to use the Docker engine at {host}",
            hint="add your user to the 'docker' group and log in again, or set DOCKER_HOST",
        )
    if isinstance(cause, FileNotFoundError):
        return HostError(f"no Docker engine at {host} (socket not found)", hint=start)
    if isinstance(cause, ConnectionRefusedError):
        return HostError(f"no Docker engine at {host} (connection refused)", hint=start)
    if isinstance(cause, TimeoutError) or isinstance(err, requests.exceptions.Timeout):
        return HostError(
            f"the Docker engine at {host} did not answer within {timeout:g}s", hint=start
        )
    reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return HostError(f"cannot reach the Docker engine at {host}: {reason}", hint=start)


def _root_cause(err: BaseException) -> BaseException:
    """The innermost cause or context (requests/urllib3 nest the OSError several levels deep)."""
    seen: set[int] = set()
    current = err
    while id(current) not in seen:
        seen.add(id(current))
        nested = current.__cause__ or current.__context__
        if nested is None:
            for arg in current.args:  # urllib3 keeps the OSError in args, not as a cause
                if isinstance(arg, BaseException):
                    nested = arg
                    break
        if nested is None:
            break
        current = nested
    return current


def docker_error(
    err: BaseException, what: str, *, host: str, timeout: float, hint: str | None = None
) -> GpulabError:
    """Map a docker-py / requests failure of "trying to `what`" to one user-facing error.

    `hint` is given for the engine refusing the request (a 4xx answer); an engine failure (5xx)
    points to the daemon's log instead.
    """
    if isinstance(err, GpulabError):
        return err
    if isinstance(err, docker.errors.APIError):
        status = err.status_code
        detail = _one_line(err.explanation) or _one_line(str(err))
        if status is None or status >= 500:
            hint = "see the Docker daemon's log"  # the engine failed, not the request
        return AdapterError(f"Docker could not {what}: {detail}", hint=hint)
    if isinstance(err, requests.exceptions.ConnectionError):  # incl. ConnectTimeout
        return HostError(
            f"lost the connection to the Docker engine at {host} while trying to {what}",
            hint="check that Docker is still running",
        )
    if isinstance(err, requests.exceptions.Timeout | TimeoutError):
        return AdapterError(
            f"the Docker engine at {host} did not answer within {timeout:g}s "
            f"while trying to {what}",
            hint="the engine may be overloaded; try again",
        )
    if isinstance(err, docker.errors.DockerException | requests.exceptions.RequestException):
        return AdapterError(f"Docker could not {what}: {_one_line(str(err))}")
    if isinstance(err, OSError):
        return HostError(
            f"lost the connection to the Docker engine at {host} while trying to {what} "
            f"({_one_line(str(err)) or type(err).__name__})",
            hint="check that Docker is still running",
        )
    raise TypeError(f"not a Docker error: {err!r}")  # a bug: keep the traceback


def _one_line(text: object) -> str:
    if text is None:
        return ""
    raw = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return " ".join(raw.split())


def _is_not_found(err: BaseException) -> bool:
    """True for docker-py's NotFound, or a GpulabError mapped from one."""
    return isinstance(
        err.__cause__ if isinstance(err, GpulabError) else err, docker.errors.NotFound
    )


def _status_code(err: GpulabError) -> int | None:
    """The HTTP status of the engine's answer behind a mapped error, if there was one."""
    cause = err.__cause__
    return cause.status_code if isinstance(cause, docker.errors.APIError) else None


def _hint_missing_network(err: GpulabError, spec: ContainerSpec) -> None:
    """The engine reports a missing network at create or at start, depending on its version."""
    if _status_code(err) == 404 and f"network {spec.network} not found" in err.message:
        err.hint = f"network {spec.network} must exist first (kind creates it with the cluster)"
