"""DockerRuntime without Docker: error mapping, node flags and the exec stream, on a fake client."""

from __future__ import annotations

import errno
import socket
import struct
import threading
import time
from typing import Any

import docker
import docker.errors
import pytest
import requests

from gpulab.adapters import docker_runtime
from gpulab.adapters.base import ContainerSpec
from gpulab.adapters.docker_runtime import (
    DockerRuntime,
    connect,
    docker_error,
    node_host_config_args,
    parse_restart_policy,
)
from gpulab.errors import AdapterError, ExitCode, GpulabError, HostError
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from gpulab.stacks.kamaji_hami.render import worker_container

HOST = "unix:///var/run/docker.sock"


def api_error(status: int, explanation: str, cls: type[docker.errors.APIError] | None = None) -> docker.errors.APIError:
    """An error as docker-py raises it for an engine answer with this status."""
    response = requests.Response()
    response.status_code = status
    response.reason = "Reason"
    response.url = "http+docker://localhost/v1.41/x"
    if cls is None:
        cls = docker.errors.NotFound if status == 404 else docker.errors.APIError
    return cls("engine said no", response=response, explanation=explanation)


class FakeAPI:
    """The few APIClient methods DockerRuntime calls; `fail[method]` raises instead of answering."""

    def __init__(self, **fail: BaseException) -> None:
        self.fail = fail
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.images: set[str] = {"node:1"}
        self.containers_by_name: dict[str, dict[str, Any]] = {}
        self.exec_states: list[dict[str, Any]] = [{"Running": False, "ExitCode": 0}]
        self.exec_socket: Any = None
        self.network_attrs: dict[str, Any] = {}

    def _call(self, method: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((method, args, kwargs))
        if method in self.fail:
            raise self.fail[method]

    def called(self, method: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        return [(a, k) for m, a, k in self.calls if m == method]

    # engine
    def info(self) -> dict[str, Any]:
        self._call("info")
        return {"NCPU": 8, "MemTotal": 1 << 34, "OperatingSystem": "Debian", "CgroupVersion": "2",
                "Driver": "overlay2", "Warnings": ["WARNING: no swap limit support"]}

    def version(self) -> dict[str, Any]:
        self._call("version")
        return {"Version": "28.2.2", "ApiVersion": "1.50"}

    def inspect_image(self, image: str) -> dict[str, Any]:
        self._call("inspect_image", image)
        if image not in self.images:
            raise api_error(404, f"No such image: {image}", docker.errors.ImageNotFound)
        return {"Id": "sha256:abc"}

    # containers
    def create_host_config(self, **kwargs: Any) -> dict[str, Any]:
        self._call("create_host_config", **kwargs)
        return {"host_config": kwargs}

    def create_endpoint_config(self) -> dict[str, Any]:
        return {}

    def create_networking_config(self, endpoints: dict[str, Any]) -> dict[str, Any]:
        return {"EndpointsConfig": endpoints}

    def create_container(self, image: str, **kwargs: Any) -> dict[str, Any]:
        self._call("create_container", image, **kwargs)
        cid = "c" * 64
        self.containers_by_name[kwargs["name"]] = {
            "Id": cid, "Name": "/" + kwargs["name"], "Config": {"Image": image, "Labels": kwargs["labels"]},
            "State": {"Status": "created"}, "HostConfig": {}, "Mounts": [],
        }
        return {"Id": cid}

    def start(self, container: str) -> None:
        self._call("start", container)

    def inspect_container(self, name: str) -> dict[str, Any]:
        self._call("inspect_container", name)
        for attrs in self.containers_by_name.values():
            if name in (attrs["Id"], attrs["Name"].lstrip("/")):
                return attrs
        raise api_error(404, f"No such container: {name}")

    def remove_container(self, container: str, **kwargs: Any) -> None:
        self._call("remove_container", container, **kwargs)

    def containers(self, **kwargs: Any) -> list[dict[str, Any]]:
        self._call("containers", **kwargs)
        return []

    def exec_create(self, container: str, cmd: list[str], **kwargs: Any) -> dict[str, Any]:
        self._call("exec_create", container, cmd, **kwargs)
        return {"Id": "e1"}

    def exec_start(self, exec_id: str, **kwargs: Any) -> Any:
        self._call("exec_start", exec_id, **kwargs)
        return self.exec_socket

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        self._call("exec_inspect", exec_id)
        return self.exec_states.pop(0) if len(self.exec_states) > 1 else self.exec_states[0]

    def put_archive(self, container: str, path: str, data: bytes) -> bool:
        self._call("put_archive", container, path, data)
        return True

    # networks and volumes
    def inspect_network(self, name: str) -> dict[str, Any]:
        self._call("inspect_network", name)
        if name in (self.network_attrs.get("Name"), self.network_attrs.get("Id")):
            return self.network_attrs
        raise api_error(404, f"network {name} not found")

    def networks(self, **kwargs: Any) -> list[dict[str, Any]]:
        self._call("networks", **kwargs)
        return [{"Id": self.network_attrs["Id"], "Name": self.network_attrs["Name"]}] if self.network_attrs else []

    def remove_network(self, net_id: str) -> None:
        self._call("remove_network", net_id)

    def volumes(self, **kwargs: Any) -> dict[str, Any]:
        self._call("volumes", **kwargs)
        return {"Volumes": None}  # what the engine answers when there are none

    def remove_volume(self, name: str) -> None:
        self._call("remove_volume", name)


def runtime(api: FakeAPI) -> DockerRuntime:
    return DockerRuntime(api, host=HOST, timeout=10)


def spec(**overrides: Any) -> ContainerSpec:
    values: dict[str, Any] = {"name": "gpulab-t-w", "image": "node:1", "network": "kind",
                              "labels": {"gpulab.dev/lab": "t"}}
    values.update(overrides)
    return ContainerSpec(**values)


# --- docker_error: one line, the right class ----------------------------------------------------


@pytest.mark.parametrize(
    ("err", "cls", "message", "hint"),
    [
        (api_error(409, "Conflict. The name is in use."), AdapterError,
         "Docker could not create container x: Conflict. The name is in use.", "the given hint"),
        (api_error(500, "OCI runtime create failed:\nunable to apply caps"), AdapterError,
         "Docker could not create container x: OCI runtime create failed: unable to apply caps",
         "see the Docker daemon's log"),
        (requests.exceptions.ConnectionError("('Connection aborted.', ConnectionResetError(104))"),
         HostError, f"lost the connection to the Docker engine at {HOST} while trying to create container x",
         "check that Docker is still running"),
        (requests.exceptions.ConnectTimeout("connect timed out"), HostError,
         f"lost the connection to the Docker engine at {HOST} while trying to create container x",
         "check that Docker is still running"),
        (requests.exceptions.ReadTimeout("read timed out"), AdapterError,
         f"the Docker engine at {HOST} did not answer within 10s while trying to create container x",
         "the engine may be overloaded; try again"),
        (docker.errors.DockerException("something odd"), AdapterError,
         "Docker could not create container x: something odd", None),
        (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), HostError,
         f"lost the connection to the Docker engine at {HOST} while trying to create container x "
         "([Errno 104] Connection reset by peer)", "check that Docker is still running"),
    ],
)
def test_docker_error_mapping(err: BaseException, cls: type[GpulabError], message: str, hint: str | None) -> None:
    mapped = docker_error(err, "create container x", host=HOST, timeout=10, hint="the given hint")
    assert type(mapped) is cls
    assert mapped.message == message
    assert mapped.hint == hint
    assert "\n" not in str(mapped)


def test_docker_error_exit_codes() -> None:
    lost = docker_error(requests.exceptions.ConnectionError("x"), "list containers", host=HOST, timeout=1)
    refused = docker_error(api_error(400, "bad"), "list containers", host=HOST, timeout=1)
    assert lost.exit_code == ExitCode.HOST
    assert refused.exit_code == ExitCode.FAILED


def test_docker_error_passes_gpulab_errors_and_rejects_bugs() -> None:
    mine = AdapterError("already mapped")
    assert docker_error(mine, "x", host=HOST, timeout=1) is mine
    with pytest.raises(TypeError):
        docker_error(KeyError("bug"), "x", host=HOST, timeout=1)


# --- connect: unreachable engines are HostErrors with what to do --------------------------------


def test_connect_without_a_socket(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    with pytest.raises(HostError) as caught:
        connect(timeout=2)
    assert str(caught.value) == (
        f"no Docker engine at unix://{tmp_path}/docker.sock (socket not found) "
        "(start Docker, or set DOCKER_HOST to the engine's address)"
    )
    assert caught.value.exit_code == ExitCode.HOST


def test_connect_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    with pytest.raises(HostError, match=r"^no Docker engine at tcp://127.0.0.1:1 \(connection refused\)"):
        connect(timeout=2)


def test_connect_bad_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "bogus://x")
    with pytest.raises(HostError, match=r"^DOCKER_HOST 'bogus://x' is not a Docker address"):
        connect(timeout=2)


@pytest.mark.parametrize(
    ("cause", "message", "hint"),
    [
        (PermissionError(errno.EACCES, "Permission denied"), f"no permission to use the Docker engine at {HOST}",
         "add your user to the 'docker' group and log in again, or set DOCKER_HOST"),
        (TimeoutError("timed out"), f"the Docker engine at {HOST} did not answer within 3s",
         "start Docker, or set DOCKER_HOST to the engine's address"),
        (OSError("weird\nthing"), f"cannot reach the Docker engine at {HOST}: weird",
         "start Docker, or set DOCKER_HOST to the engine's address"),
    ],
)
def test_connect_failure_reasons(monkeypatch: pytest.MonkeyPatch, cause: BaseException, message: str, hint: str) -> None:
    """docker-py wraps the OSError a few levels deep; the root cause picks the message."""

    def from_env(**_: Any) -> None:
        try:
            try:
                raise cause
            except OSError as inner:
                raise requests.exceptions.ConnectionError(("Connection aborted.", inner)) from None
        except requests.exceptions.ConnectionError as outer:
            raise docker.errors.DockerException(f"Error while fetching server API version: {outer}") from outer

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(docker_runtime.docker, "from_env", from_env)
    with pytest.raises(HostError) as caught:
        connect(timeout=3)
    assert caught.value.message == message
    assert caught.value.hint == hint


# --- node flags -----------------------------------------------------------------------------------


def test_worker_flags_are_kinds_node_flags(kamaji_profile: KamajiHamiProfile) -> None:
    worker = worker_container(kamaji_profile, "lab1", kamaji_profile.tenants[0], 0)
    args = node_host_config_args(worker)
    assert args["privileged"] is True
    assert args["security_opt"] == ["seccomp=unconfined", "apparmor=unconfined"]
    assert args["tmpfs"] == {"/tmp": "", "/run": ""}
    assert args["mounts"] == [{"Target": "/var", "Source": None, "Type": "volume", "ReadOnly": False}]
    assert args["binds"] == {"/lib/modules": {"bind": "/lib/modules", "mode": "ro"}}
    assert args["cgroupns"] == "private"
    assert args["init"] is False
    assert args["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 1}
    assert args["network_mode"] == worker.network
    # docker-py turns them into this HostConfig (no engine needed with a fixed API version).
    host_config = docker.APIClient(base_url="unix:///nonexistent", version="1.41").create_host_config(**args)
    assert host_config["Binds"] == ["/lib/modules:/lib/modules:ro"]
    assert host_config["Mounts"] == [{"Target": "/var", "Source": None, "Type": "volume", "ReadOnly": False}]
    assert host_config["Tmpfs"] == {"/tmp": "", "/run": ""}
    assert host_config["CgroupnsMode"] == "private"
    assert host_config["RestartPolicy"] == {"Name": "on-failure", "MaximumRetryCount": 1}
    assert host_config["Privileged"] is True
    assert host_config["Init"] is False


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("on-failure:1", {"Name": "on-failure", "MaximumRetryCount": 1}),
        ("on-failure", {"Name": "on-failure"}),
        ("no", {"Name": "no"}),
        ("always", {"Name": "always"}),
        ("unless-stopped", {"Name": "unless-stopped"}),
    ],
)
def test_restart_policy(policy: str, expected: dict[str, Any]) -> None:
    assert parse_restart_policy(policy) == expected


@pytest.mark.parametrize("policy", ["sometimes", "always:3", "on-failure:x", ""])
def test_bad_restart_policy(policy: str) -> None:
    with pytest.raises(ValueError, match="restart policy"):
        parse_restart_policy(policy)


# --- the runtime on the fake client ---------------------------------------------------------------


def test_info() -> None:
    info = runtime(FakeAPI()).info()
    assert (info.version, info.api_version, info.cpus, info.cgroup_version) == ("28.2.2", "1.50", 8, "2")
    assert info.warnings == ("WARNING: no swap limit support",)


def test_run_node_never_pulls() -> None:
    api = FakeAPI()
    with pytest.raises(HostError) as caught:
        runtime(api).run_node(spec(image="kindest/node:v1.35.0"))
    assert caught.value.hint == "docker pull kindest/node:v1.35.0"
    assert api.called("create_container") == []


def test_run_node_name_in_use() -> None:
    api = FakeAPI(create_container=api_error(409, 'Conflict. The container name "/gpulab-t-w" is already in use'))
    with pytest.raises(AdapterError) as caught:
        runtime(api).run_node(spec())
    assert caught.value.message.startswith("Docker could not create container gpulab-t-w: Conflict.")
    assert caught.value.hint == "remove the old one: gpulab down, or docker rm -f -v gpulab-t-w"


def test_run_node_start_failure_removes_the_container() -> None:
    api = FakeAPI(start=api_error(500, "failed to create shim task: OCI runtime create failed"))
    with pytest.raises(AdapterError) as caught:
        runtime(api).run_node(spec(privileged=False))
    assert caught.value.hint == "see the Docker daemon's log"
    assert api.called("remove_container") == [(("c" * 64,), {"v": True, "force": True})]


def test_run_node_privileged_refused_is_a_host_problem() -> None:
    api = FakeAPI(start=api_error(500, "OCI runtime create failed: unable to apply caps: operation not permitted"))
    with pytest.raises(HostError, match="cannot run privileged containers"):
        runtime(api).run_node(spec())
    assert len(api.called("remove_container")) == 1


def test_run_node_missing_network() -> None:
    api = FakeAPI(start=api_error(404, "network kind not found"))
    with pytest.raises(AdapterError) as caught:
        runtime(api).run_node(spec())
    assert caught.value.hint == "network kind must exist first (kind creates it with the cluster)"


def test_run_node_passes_kind_flags() -> None:
    api = FakeAPI()
    info = runtime(api).run_node(spec())
    assert info.name == "gpulab-t-w"
    ((image,), create) = api.called("create_container")[0]
    assert image == "node:1"
    assert create["hostname"] == "gpulab-t-w"
    assert create["tty"] is True
    assert create["labels"] == {"gpulab.dev/lab": "t"}
    assert create["networking_config"] == {"EndpointsConfig": {"kind": {}}}
    assert api.called("create_host_config")[0][1] == node_host_config_args(spec())


def test_get_and_remove_when_absent() -> None:
    api = FakeAPI()
    rt = runtime(api)
    assert rt.get("nope") is None
    assert rt.remove("nope") is False
    assert api.called("remove_container") == []


def test_get_ignores_id_prefix_matches() -> None:
    api = FakeAPI()
    rt = runtime(api)
    rt.run_node(spec())
    assert rt.get("c" * 64) is not None
    api.containers_by_name["gpulab-t-w"]["Name"] = "/someone-else"
    assert rt.get("gpulab-t-w") is None  # the engine matched something else (e.g. an ID prefix)


def test_remove_already_in_progress_counts_as_removed() -> None:
    api = FakeAPI(remove_container=api_error(409, "removal of container x is already in progress"))
    rt = runtime(api)
    rt.run_node(spec())
    assert rt.remove("gpulab-t-w") is True


def test_remove_cleans_anonymous_volumes_the_engine_kept() -> None:
    api = FakeAPI()
    rt = runtime(api)
    rt.run_node(spec())
    api.containers_by_name["gpulab-t-w"].update(
        HostConfig={"Mounts": [{"Type": "volume", "Target": "/var"},
                               {"Type": "volume", "Source": "named", "Target": "/data"}],
                    "Binds": ["other:/other"]},
        Mounts=[{"Type": "volume", "Name": "anon1", "Destination": "/var"},
                {"Type": "volume", "Name": "named", "Destination": "/data"},
                {"Type": "volume", "Name": "other", "Destination": "/other"}],
    )
    assert rt.remove("gpulab-t-w") is True
    assert api.called("remove_volume") == [(("anon1",), {})]


def test_server_errors_are_not_mistaken_for_absence() -> None:
    api = FakeAPI(inspect_container=api_error(500, "internal"))
    with pytest.raises(AdapterError, match=r"^Docker could not inspect container x: internal \(see the Docker daemon.s log\)$"):
        runtime(api).get("x")


def test_lost_engine_mid_session_is_a_host_error() -> None:
    api = FakeAPI(containers=requests.exceptions.ConnectionError("aborted"))
    with pytest.raises(HostError) as caught:
        runtime(api).containers({"gpulab.dev/lab": "t"})
    assert caught.value.message == f"lost the connection to the Docker engine at {HOST} while trying to list containers"


def test_label_filters() -> None:
    api = FakeAPI()
    rt = runtime(api)
    rt.containers({"gpulab.dev/lab": "t", "gpulab.dev/tenant": "a"})
    assert api.called("containers")[0][1] == {
        "all": True, "filters": {"label": ["gpulab.dev/lab=t", "gpulab.dev/tenant=a"]}}
    assert rt.volumes({"gpulab.dev/lab": "t"}) == []
    assert rt.networks() == []
    assert api.called("networks")[0][1] == {"filters": None}


def test_image_present_timeout() -> None:
    api = FakeAPI(inspect_image=requests.exceptions.ReadTimeout("read timed out"))
    with pytest.raises(AdapterError, match="did not answer within 10s while trying to inspect image node:1"):
        runtime(api).image_present("node:1")


def test_network_views_and_refusal_to_remove_in_use() -> None:
    api = FakeAPI(remove_network=api_error(403, "error while removing network: network kind id abc has active endpoints"))
    api.network_attrs = {
        "Id": "abc", "Name": "kind", "Labels": None,
        "IPAM": {"Config": [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}, {"Subnet": "fc00:f853:ccd:e793::/64"}]},
        "Containers": {"1": {"Name": "n2"}, "2": {"Name": "n1"}},
    }
    rt = runtime(api)
    net = rt.network("kind")
    assert net is not None
    assert net.ipam_config[1] == {"Subnet": "fc00:f853:ccd:e793::/64"}
    assert net.containers == ("n1", "n2")
    assert [n.name for n in rt.networks()] == ["kind"]
    assert rt.network("kin") is None
    with pytest.raises(AdapterError) as caught:
        rt.remove_network("kind")
    assert caught.value.hint == "remove n1, n2 first, then try again"
    assert rt.remove_network("absent") is False


def test_remove_volume_absent() -> None:
    api = FakeAPI(remove_volume=api_error(404, "get v: no such volume"))
    assert runtime(api).remove_volume("v") is False


# --- exec over a socket pair (the fake engine speaks Docker's multiplexed stream) -----------------


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def fake_engine(sock: socket.socket, reply: list[bytes], received: list[bytes], delay: float = 0) -> threading.Thread:
    """Reads stdin to EOF, then sends `reply` in awkward pieces and closes."""

    def serve() -> None:
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        received.append(data)
        time.sleep(delay)
        stream = b"".join(reply)
        for i in range(0, len(stream), 3):  # frames split across reads
            sock.sendall(stream[i : i + 3])
        sock.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_exec_demuxes_feeds_stdin_and_waits_for_the_exit_code() -> None:
    ours, theirs = socket.socketpair()
    received: list[bytes] = []
    engine = fake_engine(theirs, [frame(1, b"hello "), frame(2, b"warn\n"), frame(1, b"world\n")], received)
    api = FakeAPI()
    api.exec_socket = ours
    api.exec_states = [{"Running": True, "ExitCode": None}, {"Running": False, "ExitCode": 7}]
    result = runtime(api).exec("n1", ["kubeadm", "join"], stdin=b"config", timeout=5)
    engine.join(5)
    assert (result.exit_code, result.stdout, result.stderr) == (7, "hello world\n", "warn\n")
    assert received == [b"config"]
    assert api.called("exec_create") == [(("n1", ["kubeadm", "join"]), {"stdin": True})]
    assert api.called("exec_start") == [(("e1",), {"socket": True})]


def test_exec_deadline_with_partial_output() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(frame(1, b"phase 1\n"))
    api = FakeAPI()
    api.exec_socket = ours
    started = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        runtime(api).exec("n1", ["sleep", "99"], timeout=0.3)
    assert time.monotonic() - started < 3
    assert caught.value.message == "`sleep 99` in container n1 did not finish within 0.3s"
    assert caught.value.output == "phase 1\n"
    assert ours.fileno() == -1  # the socket was closed
    theirs.close()


def test_exec_in_a_missing_container() -> None:
    api = FakeAPI(exec_create=api_error(404, "No such container: n9"))
    with pytest.raises(AdapterError, match=r"^Docker could not run `true` in container n9: No such container: n9$"):
        runtime(api).exec("n9", ["true"])


def test_copy_in_makes_the_parent_then_puts_a_tar() -> None:
    import io
    import tarfile

    ours, theirs = socket.socketpair()
    theirs.close()  # mkdir -p: no output
    api = FakeAPI()
    api.exec_socket = ours
    runtime(api).copy_in("n1", "/etc/kubernetes/../gpulab/join.yaml", b"abc", mode=0o640)
    assert api.called("exec_create")[0][0] == ("n1", ["mkdir", "-p", "/etc/gpulab"])
    ((container, parent, data), _) = api.called("put_archive")[0]
    assert (container, parent) == ("n1", "/etc/gpulab")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        (member,) = tar.getmembers()
        assert (member.name, member.mode, member.uid, member.size) == ("join.yaml", 0o640, 0, 3)


def test_exec_keeps_an_unframed_rest() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(frame(1, b"ok\n") + b"\x02\x00\x00\x00\x00\x00\x00\x09cut")  # stream ends mid-frame
    theirs.close()
    api = FakeAPI()
    api.exec_socket = ours
    result = runtime(api).exec("n1", ["x"], timeout=5)
    assert result.stdout == "ok\n"
    assert result.stderr.endswith("cut")


# --------------------------------------------------------------------------- image export


class ExportAPI(FakeAPI):
    """Image export as docker-py's APIClient does it: `get_image`, or `_get` on a URL."""

    def __init__(self, api_version: str) -> None:
        super().__init__()
        self.api_version = api_version

    def version(self) -> dict[str, Any]:
        self._call("version")
        return {"Version": "29.1.0", "ApiVersion": self.api_version}

    def info(self) -> dict[str, Any]:
        return {"NCPU": 8, "MemTotal": 1 << 34, "Architecture": "aarch64",
                "DriverStatus": [["driver-type", "io.containerd.snapshotter.v1"]],
                "SecurityOptions": ["name=seccomp,profile=builtin", "name=rootless"]}

    def get_image(self, image: str) -> list[bytes]:
        self._call("get_image", image)
        return [b"whole-index"]

    def _url(self, fmt: str, *args: str, versioned_api: bool = True) -> str:
        return ("/v1.45" if versioned_api else "") + fmt.format(*args)

    def _get(self, url: str, **kwargs: Any) -> str:
        self._call("_get", url, **kwargs)
        return "response"

    def _stream_raw_result(self, response: Any, chunk: int, decode: bool) -> list[bytes]:
        return [b"one-platform"]


def test_export_for_a_platform_on_api_1_48_and_later() -> None:
    """Docker 29 (containerd store): `GET /images/{name}/get?platform=...` on the engine's own API
    version (unversioned URL; docker-py's default 1.45 would drop the parameter)."""
    api = ExportAPI("1.52")
    runtime = DockerRuntime(api, host=HOST)
    assert runtime.save_image("kindest/node:v1", platform="linux/arm64") == b"one-platform"
    [(args, kwargs)] = api.called("_get")
    assert args == ("/images/kindest/node:v1/get",)
    assert kwargs == {"params": {"platform": '{"os": "linux", "architecture": "arm64"}'},
                      "stream": True}
    assert api.called("get_image") == []
    assert runtime.save_image("x", platform="linux/arm/v7") == b"one-platform"
    assert '"variant": "v7"' in api.called("_get")[1][1]["params"]["platform"]


@pytest.mark.parametrize("version", ["1.41", "1.47", ""])
def test_export_on_older_engines_saves_as_before(version: str) -> None:
    api = ExportAPI(version)
    assert DockerRuntime(api, host=HOST).save_image("img", platform="linux/amd64") == b"whole-index"
    assert api.called("_get") == []


def test_engine_facts_for_doctor_and_preload() -> None:
    info = DockerRuntime(ExportAPI("1.52"), host=HOST).info()
    assert info.platform == "linux/arm64"
    assert info.containerd_store is True
    assert info.rootless is True and info.userns_remap is False


def test_exit_code_never_recorded_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine keeps saying the exec runs after its stream closed: an error once the wait for
    the exit code is over (no wait here: it is set to nothing)."""
    monkeypatch.setattr(docker_runtime, "_EXIT_CODE_WAIT", 0)
    ours, theirs = socket.socketpair()
    theirs.close()  # the stream ends at once
    api = FakeAPI()
    api.exec_socket = ours
    api.exec_states = [{"Running": True, "ExitCode": None}]
    with pytest.raises(AdapterError, match="Docker did not report an exit code after trying to "
                                           "run `true` in container n1"):
        runtime(api).exec("n1", ["true"], timeout=5)
    assert len(api.called("exec_inspect")) == 1


@pytest.mark.parametrize(("chunks", "found"), [
    ([b"[  OK  ] Reached target Multi", b"-User System.\nmore\n"], True),  # a line in two reads
    ([b"caf\xc3", b"\xa9 ready\n"], True),  # a character in two reads
    ([b"no newline at the end", b": Multi-User System"], True),
    ([b"ready", b"\n", b"and more"], True),
    ([b"re", b"\nady\n"], False),  # never on one line
    ([], False),
])
def test_log_lines_are_matched_across_reads(chunks: list[bytes], found: bool) -> None:
    import re

    pattern = re.compile(r"Multi-User System|café ready|^ready")
    assert docker_runtime._first_match(iter(chunks), pattern) is found
