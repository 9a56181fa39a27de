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

Its parts: `docker_errors` (reaching the engine and naming its failures), `docker_host_config`
(a ContainerSpec as Engine API host config), `docker_exec` (an exec's output stream) and
`docker_inspect` (readers of the engine's inspect answers); the runtime itself and `connect` are
here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import posixpath
import re
import signal
import tarfile
import threading
import time
from typing import TYPE_CHECKING, Any, Final, NoReturn

import docker
import docker.errors
import requests
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from gpulab import children
from gpulab.adapters.base import ContainerInfo, ExecResult, NetworkInfo, RuntimeInfo
from gpulab.adapters.docker_endpoint import DEFAULT_DOCKER_HOST, DockerEndpoint, resolve_endpoint
from gpulab.adapters.docker_errors import (
    _hint_missing_network,
    _is_not_found,
    _malformed,
    _one_line,
    _status_code,
    _unreachable,
    docker_error,
)
from gpulab.adapters.docker_exec import (
    _command_text,
    _decode,
    _ExecTimeout,
    _feed_stdin,
    _first_match,
    _namespaced_pid,
    _read_exec_stream,
)
from gpulab.adapters.docker_host_config import (
    _label_filters,
    node_host_config_args,
    parse_restart_policy,
    probe_host_config_args,
)
from gpulab.adapters.docker_inspect import (
    _anonymous_volumes,
    _api_at_least,
    _container_from_inspect,
    runtime_info,
)
from gpulab.errors import AdapterError, GpulabError, HostError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

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
_EXIT_CODE_WAIT: Final = 5.0  # seconds to wait for the engine to record an exec's exit code
_LOG_READER_JOIN: Final = 5.0  # seconds for a log reader to end once its stream is closed


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

    def architecture(self) -> str:
        """`docker info`'s Architecture (the DockerReader view of `info`)."""
        return self.info().architecture

    def info(self) -> RuntimeInfo:
        with self._mapped("read the engine's info"):
            info = self._api.info()
            version = self._api.version()
        return runtime_info(info, version)

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
