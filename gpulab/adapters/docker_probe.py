"""A read-only Docker Engine API reader over the local unix socket, with the standard library only.

`gpulab plan` needs two host facts (the kind network's IPAM config, the kind nodes' addresses);
importing docker-py for them costs more than the rest of `plan` together. This reader answers
those two questions for the common case, an engine on a unix socket (DOCKER_HOST unset or
`unix://…`, which is also how Docker Desktop, colima and rootless Docker are reached). The engine
is the one the docker CLI (and so kind) would use, contexts included (`docker_endpoint`). For any
other address (tcp, ssh, TLS) `open_reader` returns None and callers use docker-py's adapter.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import TYPE_CHECKING, Any

from gpulab.adapters.base import ContainerInfo, NetworkInfo, RuntimeInfo
from gpulab.adapters.docker_endpoint import resolve_endpoint
from gpulab.errors import AdapterError, HostError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpulab.adapters.docker_endpoint import DockerEndpoint

__all__ = ["UnixSocketReader", "open_reader", "unix_socket_path"]

DEFAULT_SOCKET = "/var/run/docker.sock"


def unix_socket_path(docker_host: str | None) -> str | None:
    """The socket path DOCKER_HOST names, the default when unset, None for any non-unix form."""
    if not docker_host:
        return DEFAULT_SOCKET
    if docker_host.startswith("unix://"):
        path = docker_host[len("unix://"):]
        return path or None
    return None


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class UnixSocketReader:
    """`DockerReader` over `GET` requests on the engine's unix socket."""

    def __init__(self, path: str, timeout: float = 3) -> None:
        self.path = path
        self.timeout = timeout

    def _get(self, url: str) -> tuple[int, Any]:
        connection = _UnixConnection(self.path, self.timeout)
        try:
            connection.request("GET", url, headers={"Host": "docker"})
            response = connection.getresponse()
            body = response.read()
        except OSError as err:
            raise AdapterError(f"Docker engine at unix://{self.path}: GET {url}: {err}") from None
        finally:
            connection.close()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            raise AdapterError(f"Docker engine at unix://{self.path}: GET {url}: "
                               "the answer is not JSON") from None
        return response.status, data

    def ping(self) -> None:
        """HostError when no engine answers on the socket."""
        connection = _UnixConnection(self.path, self.timeout)
        try:
            connection.request("GET", "/_ping", headers={"Host": "docker"})
            status = connection.getresponse().status
        except (FileNotFoundError, ConnectionRefusedError):
            raise HostError(f"no Docker engine at unix://{self.path}",
                            hint="start Docker (or set DOCKER_HOST), then retry") from None
        except PermissionError:
            raise HostError(f"no permission to use the Docker engine at unix://{self.path}",
                            hint="add your user to the 'docker' group and log in again") from None
        except OSError as err:
            raise HostError(f"the Docker engine at unix://{self.path} did not answer: {err}",
                            hint="start Docker (or set DOCKER_HOST), then retry") from None
        finally:
            connection.close()
        if status != 200:
            raise HostError(f"unix://{self.path} answered {status} to a ping; is it Docker?")

    def engine(self) -> RuntimeInfo:
        """The engine's GET /info and GET /version answers (gpulab.docker_engines reads
        them)."""
        from gpulab.adapters.docker_inspect import runtime_info

        answers = []
        for url in ("/info", "/version"):
            status, data = self._get(url)
            if status != 200 or not isinstance(data, dict):
                raise AdapterError(f"GET {url}: Docker answered {status}")
            answers.append(data)
        return runtime_info(answers[0], answers[1])

    def architecture(self) -> str:
        """`GET /info`'s Architecture (moby daemon/info.go:65: the host's `uname -m`)."""
        status, data = self._get("/info")
        if status != 200 or not isinstance(data, dict):
            raise AdapterError(f"engine info: Docker answered {status}")
        return str(data.get("Architecture") or "")

    def network(self, name: str) -> NetworkInfo | None:
        status, data = self._get(f"/networks/{urllib.parse.quote(name, safe='')}")
        if status == 404:
            return None
        if status != 200 or not isinstance(data, dict):
            raise AdapterError(f"inspect network {name}: Docker answered {status}")
        if data.get("Name") != name and data.get("Id") != name:
            return None
        return NetworkInfo.from_inspect(data)

    def containers(self, labels: Mapping[str, str]) -> list[ContainerInfo]:
        query = {"all": "1"}
        if labels:
            query["filters"] = json.dumps({"label": [f"{k}={v}" for k, v in labels.items()]})
        status, data = self._get(f"/containers/json?{urllib.parse.urlencode(query)}")
        if status != 200 or not isinstance(data, list):
            raise AdapterError(f"list containers: Docker answered {status}")
        return [ContainerInfo.from_summary(entry) for entry in data if isinstance(entry, dict)]


def open_reader(timeout: float = 3, endpoint: DockerEndpoint | None = None
                ) -> UnixSocketReader | None:
    """A reader for the engine on this host's unix socket (pinged), or None when the endpoint
    (`endpoint`, else the one the docker CLI would use) is another kind of address; HostError when
    nothing answers on the socket, or for a Docker context that cannot be used."""
    endpoint = endpoint or resolve_endpoint()
    path = unix_socket_path(endpoint.host)
    if path is None:
        return None
    reader = UnixSocketReader(path, timeout)
    reader.ping()
    return reader
