"""The Docker engine behind `ContainerRuntime`: kind's node provider, narrowed (docker-py 7).

This module and `kind.py` are the only places that talk to Docker. It uses docker-py's low-level
`APIClient` so that every call is one Engine API request whose failure can be named, and it never
pulls an image implicitly (docker-py's `containers.run` would).

Every docker-py / requests failure leaves here as a `GpulabError` with one line for the user:
`HostError` when the engine itself is unreachable or cannot run what gpulab needs, `AdapterError`
when the engine refused or failed one call.

`exec` does not use `exec_run`: that reads the output with the client's socket timeout (60 s by
default, docker-py #2096/#3124), which breaks long silent commands such as `kubeadm join`. Instead
the exec's hijacked socket is read here with a per-call deadline, and `stdin` is written to it and
then half-closed, so the command sees end-of-file.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import os
import posixpath
import re
import shlex
import signal
import socket
import struct
import tarfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

import docker
import docker.errors
import requests
from docker.types import Mount
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from gpulab import children
from gpulab.adapters.base import (
    ContainerInfo,
    ExecResult,
    NetworkInfo,
    PublishedPort,
    RuntimeInfo,
)
from gpulab.adapters.docker_endpoint import DEFAULT_DOCKER_HOST, DockerEndpoint, resolve_endpoint
from gpulab.errors import AdapterError, GpulabError, HostError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from tenacity import RetryCallState

    from gpulab.adapters.base import ContainerSpec

__all__ = [
    "DEFAULT_DOCKER_HOST",
    "DockerRuntime",
    "connect",
    "docker_error",
    "node_host_config_args",
    "parse_restart_policy",
    "probe_host_config_args",
]

SAVE_PLATFORM_API: Final = (1, 48)  # first Engine API whose image export takes `platform`
_START_HINT: Final = "start Docker, or set DOCKER_HOST to the engine's address"
_EXIT_CODE_WAIT: Final = 5.0  # seconds to wait for the engine to record an exec's exit code
_LOG_READER_JOIN: Final = 5.0  # seconds for a log reader to end once its stream is closed
_MAX_CMD_CHARS: Final = 80


def connect(timeout: float = 10, endpoint: DockerEndpoint | None = None) -> DockerRuntime:
    """The Docker engine the docker CLI would use (DOCKER_HOST, else DOCKER_CONTEXT, else the
    current context, else the default socket: `docker_endpoint.resolve_endpoint`), or HostError.

    `endpoint` is given when the caller resolved it already (kind must get the same one);
    `timeout` is the socket timeout of ordinary API calls; `DockerRuntime.exec` sets its own.
    """
    endpoint = endpoint or resolve_endpoint()
    try:
        # DOCKER_HOST is always set in this environment, so docker-py (7.2+) never falls back to
        # a context of its own choosing; TLS comes from the endpoint's DOCKER_* variables.
        client = docker.from_env(timeout=timeout, environment=endpoint.docker_py_env(os.environ))
    except docker.errors.DockerException as err:
        raise _unreachable(err, endpoint, timeout) from err
    except (ValueError, NameError) as err:  # docker-py parses DOCKER_HOST with urllib
        raise _malformed(endpoint, err) from None
    runtime = DockerRuntime(client.api, host=endpoint.describe(), timeout=timeout,
                            endpoint=endpoint)
    try:
        client.api.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as err:
        runtime.close()
        raise _unreachable(err, endpoint, timeout) from err
    except (ValueError, NameError) as err:
        runtime.close()
        raise _malformed(endpoint, err) from None
    return runtime


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


def _namespaced_pid(host_pid: int) -> int:
    """The pid a host process has inside its container (the last `NSpid` field), or 0."""
    try:
        status = Path(f"/proc/{host_pid}/status").read_text(encoding="utf-8")
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            fields = line.split()[1:]
            return int(fields[-1]) if len(fields) > 1 else 0
    return 0


def _api_at_least(version: str, wanted: tuple[int, int]) -> bool:
    """'1.51' >= (1, 48); an unreadable version is too old."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= wanted


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    """`docker info`'s DriverStatus ([[key, value], ...]) as pairs; anything else is dropped."""
    return [(entry[0], entry[1]) for entry in value or ()
            if isinstance(entry, (list, tuple)) and len(entry) == 2]


def _containerd_store(info: Mapping[str, Any]) -> bool:
    """Whether images live in containerd's store: its DriverStatus says
    `driver-type io.containerd.snapshotter.v1` (moby daemon/containerd/service.go:160-165)."""
    return any(str(k) == "driver-type" and "io.containerd.snapshotter" in str(v)
               for k, v in _pairs(info.get("DriverStatus")))


def _is_not_found(err: BaseException) -> bool:
    """True for docker-py's NotFound, or a GpulabError mapped from one."""
    return isinstance(
        err.__cause__ if isinstance(err, GpulabError) else err, docker.errors.NotFound
    )


def _status_code(err: GpulabError) -> int | None:
    """The HTTP status of the engine's answer behind a mapped error, if there was one."""
    cause = err.__cause__
    return cause.status_code if isinstance(cause, docker.errors.APIError) else None


def _label_filters(labels: Mapping[str, str] | None) -> dict[str, list[str]] | None:
    if not labels:
        return None
    return {"label": [f"{key}={value}" for key, value in labels.items()]}


def parse_restart_policy(policy: str) -> dict[str, Any]:
    """Docker's `--restart` syntax (`no`, `always`, `unless-stopped`, `on-failure[:N]`)."""
    name, _, count = policy.partition(":")
    if name not in {"no", "always", "unless-stopped", "on-failure"}:
        raise ValueError(f"unknown restart policy '{policy}'")
    if count and name != "on-failure":
        raise ValueError(f"restart policy '{name}' takes no retry count")
    if not count:
        return {"Name": name}
    if not count.isdigit():
        raise ValueError(f"restart policy '{policy}': retry count must be a number")
    return {"Name": name, "MaximumRetryCount": int(count)}


def node_host_config_args(spec: ContainerSpec) -> dict[str, Any]:
    """`create_host_config` arguments for a node container, flag for flag as kind runs nodes.

    kind (providers/docker/provision.go, commonArgs and runArgsForNode): --privileged, unconfined
    seccomp and apparmor, tmpfs on /tmp and /run, an anonymous volume on /var, /lib/modules
    read-only, --cgroupns=private, --init=false, --restart=on-failure:1; and where the host needs
    them (decided by gpulab.node_options.node_host_options as kind's util.go does):
    --volume /dev/mapper, --device /dev/fuse, --userns=host, and the proxy variables.
    """
    return {
        "privileged": spec.privileged,  # kubelet, containerd and kube-proxy need the host's powers
        "security_opt": list(spec.security_opt),
        "tmpfs": dict.fromkeys(spec.tmpfs, ""),  # systemd wants /run and /tmp as tmpfs
        # Anonymous volumes: the node's containerd store must not live on overlayfs; removed with
        # the container (remove(v=True)).
        "mounts": [
            Mount(target=path, source=None, type="volume") for path in spec.anonymous_volumes
        ],
        # `-v` semantics like kind's `--volume /lib/modules:/lib/modules:ro` (a bind Mount would
        # refuse a missing source; kind tolerates hosts without /lib/modules).
        "binds": {
            **{src: {"bind": dst, "mode": "ro"} for src, dst in spec.readonly_binds},
            **{src: {"bind": dst, "mode": "rw"} for src, dst in spec.binds},
        },
        "cgroupns": spec.cgroupns,  # the node runs its own systemd and cgroup tree
        "init": False,  # systemd is PID 1
        "restart_policy": parse_restart_policy(spec.restart_policy),
        "network_mode": spec.network,
        **({"devices": [f"{d}:{d}:rwm" for d in spec.devices]} if spec.devices else {}),
        **({"userns_mode": spec.userns_mode} if spec.userns_mode else {}),
    }


def probe_host_config_args(spec: ContainerSpec) -> dict[str, Any]:
    """A node's `create_host_config` arguments (`node_host_config_args`) for doctor's throw-away
    probe: every option that asks the engine for privileges or namespaces is the node's
    (--privileged, seccomp/apparmor, --userns=host, --cgroupns=private, /dev/fuse, the binds,
    the tmpfs mounts, --init=false). Left out: the network (kind creates its network with the
    cluster, so it may not exist yet: the probe uses the default bridge), the restart policy
    (the probe is removed at once) and the anonymous /var volume (the engine would copy the
    image's /var into it, and a kindest/node keeps there the Kubernetes images its build
    imported into containerd: kind fed26882 pkg/build/nodeimage/buildcontext.go:256,
    imageimporter.go:80)."""
    args = node_host_config_args(spec)
    for dropped in ("network_mode", "restart_policy", "mounts"):
        args.pop(dropped, None)
    return args


class _ExecTimeout(Exception):
    def __init__(self, stdout: bytes, stderr: bytes) -> None:
        super().__init__("exec timed out")
        self.stdout = stdout
        self.stderr = stderr


class _Demuxer:
    """Docker's multiplexed stream: frames of an 8-byte header (stream, size) and a payload."""

    def __init__(self) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while len(self._buffer) >= 8:
            stream = self._buffer[0]
            (size,) = struct.unpack(">I", self._buffer[4:8])
            if len(self._buffer) < 8 + size:
                return
            payload = bytes(self._buffer[8 : 8 + size])
            del self._buffer[: 8 + size]
            if stream == 1:
                self.stdout += payload
            else:  # 2 = stderr, 3 = the engine's own error
                self.stderr += payload

    def close(self) -> None:
        """At end of stream: keep a truncated or unframed rest rather than dropping it."""
        self.stderr += self._buffer
        self._buffer.clear()


def _read_exec_stream(raw: Any, deadline: float) -> tuple[bytes, bytes]:
    """Read the exec's stream until the engine closes it; `_ExecTimeout` at `deadline`."""
    demux = _Demuxer()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _ExecTimeout(bytes(demux.stdout), bytes(demux.stderr))
        raw.settimeout(remaining)
        try:
            chunk = raw.recv(65536)
        except TimeoutError:
            raise _ExecTimeout(bytes(demux.stdout), bytes(demux.stderr)) from None
        if not chunk:
            demux.close()
            return bytes(demux.stdout), bytes(demux.stderr)
        demux.feed(chunk)


def _feed_stdin(raw: Any, data: bytes, errors: list[BaseException]) -> None:
    try:
        if data:
            raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)  # end-of-file for the command's stdin
    except OSError as err:  # the command exited without reading all of it
        errors.append(err)


def _command_text(argv: list[str]) -> str:
    text = shlex.join(argv)
    return text if len(text) <= _MAX_CMD_CHARS else text[: _MAX_CMD_CHARS - 1] + "…"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _first_match(chunks: Iterable[bytes], regex: re.Pattern[str]) -> bool:
    """Whether a line of the output `chunks` (split anywhere, even inside a character) matches;
    reads only as far as the first matching line."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + decoder.decode(chunk)).split("\n")
        if any(regex.search(line) for line in lines):
            return True
    rest += decoder.decode(b"", final=True)
    return any(regex.search(line) for line in rest.splitlines())


class DockerRuntime:
    """`ContainerRuntime` on a docker-py `APIClient` (anything with the same methods works)."""

    def __init__(self, api: Any, *, host: str = DEFAULT_DOCKER_HOST, timeout: float = 10,
                 endpoint: DockerEndpoint | None = None) -> None:
        self._api = api
        self.host = host  # as error messages name the engine
        self.endpoint = endpoint or DockerEndpoint(host=host)  # what kind must be told
        self.timeout = timeout
        self._server_api: str | None = None
        self._execs: dict[str, str] = {}  # running exec id → container
        self._execs_lock = threading.Lock()
        self._stopper = children.add_stopper(self.stop_execs)

    def close(self) -> None:
        """Release the client's connections (the runtime must not be used afterwards)."""
        children.remove_stopper(self._stopper)
        close = getattr(self._api, "close", None)
        if callable(close):
            close()

    @contextlib.contextmanager
    def _mapped(self, what: str, *, hint: str | None = None) -> Iterator[None]:
        """Turn any docker-py / requests failure inside the block into a GpulabError."""
        try:
            yield
        except (
            docker.errors.DockerException,
            requests.exceptions.RequestException,
            OSError,
        ) as err:
            raise docker_error(err, what, host=self.host, timeout=self.timeout, hint=hint) from err

    # --- engine -------------------------------------------------------------------------------

    def info(self) -> RuntimeInfo:
        with self._mapped("read the engine's info"):
            info = self._api.info()
            version = self._api.version()
        return RuntimeInfo(
            version=str(version.get("Version") or info.get("ServerVersion") or ""),
            api_version=str(version.get("ApiVersion") or ""),
            cpus=int(info.get("NCPU") or 0),
            memory_bytes=int(info.get("MemTotal") or 0),
            os=str(info.get("OperatingSystem") or ""),
            cgroup_version=str(info.get("CgroupVersion") or ""),
            storage_driver=str(info.get("Driver") or ""),
            warnings=tuple(str(w) for w in info.get("Warnings") or ()),
            architecture=str(info.get("Architecture") or ""),
            containerd_store=_containerd_store(info),
            security_options=tuple(str(o) for o in info.get("SecurityOptions") or ()),
            memory_limit=bool(info.get("MemoryLimit", True)) and info.get("CgroupDriver") != "none",
            pids_limit=bool(info.get("PidsLimit", True)) and info.get("CgroupDriver") != "none",
            cpu_shares=bool(info.get("CPUShares", True)) and info.get("CgroupDriver") != "none",
            authorization_plugins=tuple(
                str(p) for p in ((info.get("Plugins") or {}).get("Authorization") or ())),
            driver_status=tuple((str(k), str(v)) for k, v in _pairs(info.get("DriverStatus"))),
        )

    def image_present(self, image: str) -> bool:
        try:
            with self._mapped(f"inspect image {image}"):
                self._api.inspect_image(image)
        except AdapterError as err:
            if _is_not_found(err):
                return False
            raise
        return True

    def pull(self, image: str) -> None:
        """Pull `image` onto the host (tag, digest or both; with both, the digest decides)."""
        name, _, digest = image.partition("@")
        if digest:
            last = name.rsplit("/", 1)[-1]
            repo = name.rsplit(":", 1)[0] if ":" in last else name
            repository, tag = repo, digest
        else:
            repository, tag = docker.utils.parse_repository_tag(name)
        with self._mapped(f"pull image {image}", hint="check the registry is reachable"):
            for event in self._api.pull(repository, tag=tag or "latest", stream=True,
                                        decode=True):
                if isinstance(event, dict) and event.get("error"):
                    raise AdapterError(f"pull image {image}: {_one_line(event['error'])}",
                                       hint="check the image name and the registry")

    def save_image(self, image: str, platform: str | None = None) -> bytes:
        """The image as a `docker save` tar archive.

        With `platform`, on engines whose API takes it (1.48+: `GET /images/{name}/get?platform=`,
        docs.docker.com/reference/api/engine/version/v1.48/#tag/Image/operation/ImageGet), only
        that platform's content is saved. Docker 29's containerd image store otherwise writes the
        whole multi-platform index while only the pulled platform's blobs exist, and the node's
        import fails with `content digest ... not found` (kind issues 3795, 4224).
        """
        with self._mapped(f"save image {image}"):
            if platform and _api_at_least(self._server_api_version(), SAVE_PLATFORM_API):
                os_name, _, arch = platform.partition("/")
                arch, _, variant = arch.partition("/")
                wanted = {"os": os_name, "architecture": arch, **({"variant": variant}
                                                                 if variant else {})}
                url = self._api._url("/images/{0}/get", image, versioned_api=False)
                response = self._api._get(url, params={"platform": json.dumps(wanted)},
                                          stream=True)
                return b"".join(self._api._stream_raw_result(response, 2 * 1024 * 1024, False))
            return b"".join(self._api.get_image(image))

    def _server_api_version(self) -> str:
        if self._server_api is None:
            self._server_api = str(self._api.version().get("ApiVersion") or "")
        return self._server_api

    # --- containers ---------------------------------------------------------------------------

    def run_node(self, spec: ContainerSpec) -> ContainerInfo:
        """Create and start a node container; the image must be present (never pulled here).

        If the container was created but cannot start, it is removed again (with its volumes),
        so a retry does not trip over a dead container of the same name.
        """
        if not self.image_present(spec.image):
            raise HostError(
                f"image {spec.image} is not on this Docker host (gpulab does not pull implicitly)",
                hint=f"docker pull {spec.image}",
            )
        api = self._api
        try:
            with self._mapped(f"create container {spec.name}"):
                host_config = api.create_host_config(**node_host_config_args(spec))
                networking = api.create_networking_config(
                    {spec.network: api.create_endpoint_config()}
                )
                created = api.create_container(
                    spec.image,
                    name=spec.name,
                    hostname=spec.hostname,
                    labels=dict(spec.labels),
                    tty=True,  # like kind: the entrypoint logs to a TTY; keeps /bin/sh images up
                    environment=dict(spec.env) or None,
                    host_config=host_config,
                    networking_config=networking,
                )
        except AdapterError as err:
            status = _status_code(err)
            if status == 409:
                err.hint = f"remove the old one: gpulab down, or docker rm -f -v {spec.name}"
            _hint_missing_network(err, spec)
            raise
        container_id = str(created["Id"])
        try:
            with self._mapped(f"start container {spec.name}"):
                api.start(container_id)
        except GpulabError as err:
            with contextlib.suppress(GpulabError):
                self.remove(container_id)
            cause = _one_line(getattr(err.__cause__, "explanation", "")) or str(err)
            if spec.privileged and "unable to apply caps" in cause:
                raise HostError(
                    f"this Docker host cannot run privileged containers ({spec.name}: "
                    "unable to apply caps)",
                    hint="kind needs a rootful engine that grants --privileged; see gpulab doctor",
                ) from err
            _hint_missing_network(err, spec)
            raise
        info = self.get(container_id)
        if info is None:  # removed between start and inspect (restart policy cannot do that)
            raise AdapterError(f"container {spec.name} vanished right after it was started")
        return info

    def local_images(self, limit: int = 20) -> list[str]:
        with self._mapped("list images"):
            found = self._api.images() or []
        found = sorted(found, key=lambda i: int(i.get("Created") or 0), reverse=True)
        tags = [t for image in found for t in (image.get("RepoTags") or [])
                if t and t != "<none>:<none>"]
        return tags[:limit]

    def probe_privileged(self, spec: ContainerSpec) -> str:
        """'' when a container with the node options of `spec` (its image is on the host) runs
        `true`, else why not (one line). The options are the node's own
        (`probe_host_config_args`), so a daemon that refuses a node refuses the probe too."""
        api = self._api
        name = f"gpulab-privileged-probe-{os.getpid()}-{threading.get_ident()}"
        try:
            created = api.create_container(
                spec.image, name=name, entrypoint=["/bin/sh", "-c", "true"],
                host_config=api.create_host_config(**probe_host_config_args(spec)),
                labels=dict(spec.labels) or {"gpulab.dev/probe": "privileged"})
        except (docker.errors.DockerException, requests.exceptions.RequestException) as err:
            return _one_line(getattr(err, "explanation", "") or str(err))
        try:
            api.start(created["Id"])
            status = api.wait(created["Id"], timeout=60)
            code = int((status or {}).get("StatusCode", 1))
            return "" if code == 0 else f"the probe container exited with {code}"
        except (docker.errors.DockerException, requests.exceptions.RequestException) as err:
            return _one_line(getattr(err, "explanation", "") or str(err))
        finally:
            with contextlib.suppress(docker.errors.DockerException,
                                     requests.exceptions.RequestException):
                api.remove_container(created["Id"], v=True, force=True)

    def wait_for_log(self, name: str, pattern: str, timeout: float) -> bool:
        """Follow the container's output from its start until a line matches `pattern`, as kind
        follows `docker logs -f` (common/cgroups.go WaitUntilLogRegexpMatches); False after
        `timeout` seconds or when the output ends (the container stopped).

        The stream is read by a helper thread, so the deadline holds however long the container
        stays silent; the stream is closed (its socket shut down) when this returns."""
        regex = re.compile(pattern)
        what = f"read the logs of container {name}"
        with self._mapped(what):
            stream = self._api.logs(name, stdout=True, stderr=True, stream=True, follow=True)
        matched, ended = threading.Event(), threading.Event()
        failed: list[BaseException] = []

        def follow() -> None:
            try:
                if _first_match(stream, regex):
                    matched.set()
            except BaseException as err:  # handed to the caller below
                failed.append(err)
            finally:
                ended.set()

        reader = threading.Thread(target=follow, name=f"gpulab-logs-{name}", daemon=True)
        reader.start()
        try:
            ended.wait(timeout)
        finally:
            # Not over SSH (docker-py cannot cancel there): that reader ends with the container.
            with contextlib.suppress(docker.errors.DockerException, OSError):
                stream.close()
            reader.join(timeout=_LOG_READER_JOIN)
        if failed and not matched.is_set():
            with self._mapped(what):
                raise failed[0]
        return matched.is_set()

    def _inspect_container(self, name: str) -> dict[str, Any] | None:
        try:
            with self._mapped(f"inspect container {name}"):
                attrs: dict[str, Any] = self._api.inspect_container(name)
        except AdapterError as err:
            if _is_not_found(err):
                return None
            raise
        # The engine also resolves ID prefixes; only the exact name or the full ID count.
        if attrs.get("Name", "").lstrip("/") != name and attrs.get("Id") != name:
            return None
        return attrs

    def get(self, name: str) -> ContainerInfo | None:
        attrs = self._inspect_container(name)
        return _container_from_inspect(attrs) if attrs is not None else None

    def containers(self, labels: Mapping[str, str]) -> list[ContainerInfo]:
        """Containers (running or not) carrying all of `labels`; empty `labels` means all."""
        with self._mapped("list containers"):
            found = self._api.containers(all=True, filters=_label_filters(labels))
        return [ContainerInfo.from_summary(entry) for entry in found or []]

    def exec(
        self, name: str, argv: list[str], *, stdin: bytes | None = None, timeout: float = 600
    ) -> ExecResult:
        """Run `argv` in the container and wait up to `timeout` seconds for it to finish.

        The command may stay silent for the whole `timeout` (the client's own socket timeout does
        not apply). `stdin` is written to the command's stdin, then closed. A non-zero exit is a
        result, not an error; not finishing in time raises AdapterError with the output so far
        (the command may still be running inside the container).
        """
        command = _command_text(argv)
        what = f"run `{command}` in container {name}"
        deadline = time.monotonic() + timeout
        with self._mapped(what):
            exec_id = str(self._api.exec_create(name, argv, stdin=stdin is not None)["Id"])
            sock = self._api.exec_start(exec_id, socket=True)
        with self._execs_lock:
            self._execs[exec_id] = name
        raw = getattr(sock, "_sock", sock)  # SocketIO on unix/tcp; the socket itself over TLS
        feeder: threading.Thread | None = None
        feed_errors: list[BaseException] = []
        try:
            if stdin is not None:
                feeder = threading.Thread(
                    target=_feed_stdin, args=(raw, stdin, feed_errors), daemon=True
                )
                feeder.start()
            try:
                out, err = _read_exec_stream(raw, deadline)
            except _ExecTimeout as late:
                raise AdapterError(
                    f"`{command}` in container {name} did not finish within {timeout:g}s",
                    hint=f"it may still be running there: docker exec {name} ps",
                    output=_decode(late.stdout + late.stderr)[-4000:],
                ) from None
            except OSError as lost:
                raise docker_error(lost, what, host=self.host, timeout=timeout) from lost
        finally:
            with self._execs_lock:
                self._execs.pop(exec_id, None)
            if feeder is not None:
                feeder.join(timeout=1)
            for closable in (sock, raw):
                with contextlib.suppress(OSError):
                    closable.close()
        return ExecResult(self._exit_code(exec_id, what), _decode(out), _decode(err))

    def stop_execs(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` to the commands this runtime is running in containers (registered with
        gpulab.children, so SIGTERM to `up` ends a `kubeadm join` too); how many.

        The engine reports each exec's host pid: signalled directly when gpulab may (root, or
        the same user), else inside its container by its pid there (the host's
        /proc/<pid>/status `NSpid` line), through one more exec."""
        with self._execs_lock:
            running = dict(self._execs)
        stopped = 0
        for exec_id, container in running.items():
            try:
                pid = int(self._api.exec_inspect(exec_id).get("Pid") or 0)
            except (docker.errors.DockerException, requests.exceptions.RequestException):
                continue
            if pid <= 0:
                continue
            try:
                os.kill(pid, sig)
                stopped += 1
                continue
            except ProcessLookupError:
                continue  # ended meanwhile, or the engine runs elsewhere (a VM, a remote host)
            except PermissionError:
                pass
            inner = _namespaced_pid(pid)
            if inner:
                with contextlib.suppress(docker.errors.DockerException,
                                         requests.exceptions.RequestException):
                    kill = self._api.exec_create(container, ["kill", f"-{int(sig)}", str(inner)])
                    self._api.exec_start(kill["Id"])
                    stopped += 1
        return stopped

    def _exit_code(self, exec_id: str, what: str) -> int:
        """The exec's exit code; the engine may record it a moment after closing the stream."""

        def inspect() -> int | None:
            with self._mapped(what):
                state = self._api.exec_inspect(exec_id)
            code = state.get("ExitCode")
            return None if state.get("Running") or code is None else int(code)

        def never(_state: RetryCallState) -> NoReturn:
            raise AdapterError(f"Docker did not report an exit code after trying to {what}")

        code = Retrying(retry=retry_if_result(lambda code: code is None),
                        stop=stop_after_delay(_EXIT_CODE_WAIT), wait=wait_fixed(0.05),
                        retry_error_callback=never)(inspect)
        if code is None:  # pragma: no cover
            raise AssertionError("unreachable: tenacity returns a code or `never` raises")
        return code

    def copy_in(self, name: str, path: str, data: bytes, mode: int = 0o600) -> None:
        """Write `data` to the file `path` (absolute) in the container, creating parent folders.

        The file is owned by root with exactly `mode`.
        """
        if not posixpath.isabs(path) or path.endswith("/"):
            raise ValueError(f"copy_in needs an absolute file path, not '{path}'")
        parent, filename = posixpath.split(posixpath.normpath(path))
        made = self.exec(name, ["mkdir", "-p", parent], timeout=max(self.timeout, 30))
        if not made.ok:
            raise AdapterError(
                f"could not create {parent} in container {name}: "
                f"{_one_line(made.stderr or made.stdout) or f'exit code {made.exit_code}'}"
            )
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            entry = tarfile.TarInfo(filename)
            entry.size = len(data)
            entry.mode = mode
            entry.mtime = int(time.time())
            entry.uid = entry.gid = 0
            entry.uname = entry.gname = "root"
            tar.addfile(entry, io.BytesIO(data))
        with self._mapped(f"copy {path} into container {name}"):
            accepted = self._api.put_archive(name, parent, archive.getvalue())
        if not accepted:
            raise AdapterError(f"Docker did not accept {path} for container {name}")

    def remove(self, name: str) -> bool:
        """Force-remove a container and its anonymous volumes; False if it did not exist."""
        attrs = self._inspect_container(name)
        if attrs is None:
            return False
        anonymous = _anonymous_volumes(attrs)
        try:
            with self._mapped(f"remove container {name}"):
                self._api.remove_container(attrs["Id"], v=True, force=True)
        except AdapterError as err:
            if _is_not_found(err):
                return False
            if "already in progress" not in str(err):
                raise
        # Engines that keep `--mount type=volume` anonymous volumes on `rm -v`: remove them too.
        for volume in anonymous:
            with contextlib.suppress(GpulabError):
                self.remove_volume(volume)
        return True

    # --- networks and volumes -----------------------------------------------------------------

    def network(self, name: str) -> NetworkInfo | None:
        try:
            with self._mapped(
                f"inspect network {name}",
                hint=f"if several networks are named {name}, remove the extra ones: "
                f"docker network ls --filter name={name}",
            ):
                attrs: dict[str, Any] = self._api.inspect_network(name)
        except AdapterError as err:
            if _is_not_found(err):
                return None
            raise
        if attrs.get("Name") != name and attrs.get("Id") != name:
            return None
        return NetworkInfo.from_inspect(attrs)

    def networks(self, labels: Mapping[str, str] | None = None) -> list[NetworkInfo]:
        with self._mapped("list networks"):
            found = self._api.networks(filters=_label_filters(labels))
        result: list[NetworkInfo] = []
        for summary in found or []:  # the list leaves `Containers` empty: inspect each
            try:
                with self._mapped(f"inspect network {summary.get('Name')}"):
                    result.append(NetworkInfo.from_inspect(self._api.inspect_network(summary["Id"])))
            except AdapterError as err:
                if not _is_not_found(err):  # removed meanwhile: skip
                    raise
        return result

    def remove_network(self, name: str) -> bool:
        info = self.network(name)
        if info is None:
            return False
        attached = ", ".join(info.containers) or "its containers"
        try:
            with self._mapped(
                f"remove network {name}", hint=f"remove {attached} first, then try again"
            ):
                self._api.remove_network(info.id)
        except AdapterError as err:
            if _is_not_found(err):
                return False
            raise
        return True

    def volumes(self, labels: Mapping[str, str]) -> list[str]:
        """Names of the volumes carrying all of `labels`; empty `labels` means all."""
        with self._mapped("list volumes"):
            found = self._api.volumes(filters=_label_filters(labels))
        return [str(v["Name"]) for v in (found or {}).get("Volumes") or []]

    def remove_volume(self, name: str) -> bool:
        try:
            with self._mapped(
                f"remove volume {name}", hint="a container still uses it; remove that first"
            ):
                self._api.remove_volume(name)
        except AdapterError as err:
            if _is_not_found(err):
                return False
            raise
        return True


def _hint_missing_network(err: GpulabError, spec: ContainerSpec) -> None:
    """The engine reports a missing network at create or at start, depending on its version."""
    if _status_code(err) == 404 and f"network {spec.network} not found" in err.message:
        err.hint = f"network {spec.network} must exist first (kind creates it with the cluster)"


def _container_from_inspect(attrs: Mapping[str, Any]) -> ContainerInfo:
    config = attrs.get("Config") or {}
    networks = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return ContainerInfo(
        id=str(attrs.get("Id", "")),
        name=str(attrs.get("Name", "")).lstrip("/"),
        image=str(config.get("Image") or attrs.get("Image") or ""),
        status=str((attrs.get("State") or {}).get("Status", "")),
        labels={str(k): str(v) for k, v in (config.get("Labels") or {}).items()},
        networks={str(n): str((e or {}).get("IPAddress") or "") for n, e in networks.items()},
        ports=PublishedPort.from_port_map((attrs.get("NetworkSettings") or {}).get("Ports")),
    )


def _anonymous_volumes(attrs: Mapping[str, Any]) -> list[str]:
    """Names of the volumes mounted without a source (created for this container alone)."""
    host_config = attrs.get("HostConfig") or {}
    targets = {
        m.get("Target")
        for m in host_config.get("Mounts") or []
        if m.get("Type") == "volume" and not m.get("Source")
    }
    targets |= set((attrs.get("Config") or {}).get("Volumes") or {})  # `-v /path` style
    named = {m.get("Source") for m in host_config.get("Mounts") or [] if m.get("Source")}
    named |= {str(b).split(":", 1)[0] for b in host_config.get("Binds") or []}
    return [
        str(m["Name"])
        for m in attrs.get("Mounts") or []
        if m.get("Type") == "volume"
        and m.get("Destination") in targets
        and m.get("Name")
        and m.get("Name") not in named
    ]


