"""DockerRuntime against the real Docker engine (no privileged containers, nothing pulled)."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from gpulab.adapters.base import ContainerSpec
from gpulab.adapters.docker_runtime import DockerRuntime, connect
from gpulab.errors import AdapterError, GpulabError, HostError
from gpulab.netcalc import metallb_range

from .conftest import (
    SESSION_ID,
    SESSION_LABEL,
    TEST_IMAGE,
    Cleanup,
    DualStackNetwork,
    privileged_run_allowed,
    unique,
)

pytestmark = pytest.mark.docker

SpecFactory = Callable[..., ContainerSpec]


def _volume_names(client: docker.DockerClient) -> set[str]:
    return {str(v.name) for v in client.volumes.list()}


# --- engine and images ---------------------------------------------------------------------------


def test_info_describes_the_engine(runtime: DockerRuntime) -> None:
    info = runtime.info()
    assert info.version
    assert info.api_version.startswith("1.")
    assert info.cpus >= 1
    assert info.memory_bytes > 0
    assert info.os
    assert info.storage_driver
    assert info.cgroup_version in {"1", "2"}


def test_image_present(runtime: DockerRuntime) -> None:
    assert runtime.image_present(TEST_IMAGE)
    assert not runtime.image_present("gpulab-test/absent:0")


def test_run_node_never_pulls_a_missing_image(runtime: DockerRuntime, node_spec: SpecFactory) -> None:
    spec = node_spec(image="gpulab-test/absent:0")
    with pytest.raises(HostError) as caught:
        runtime.run_node(spec)
    assert caught.value.hint == "docker pull gpulab-test/absent:0"
    assert runtime.get(spec.name) is None
    assert not runtime.image_present("gpulab-test/absent:0")


# --- networks ------------------------------------------------------------------------------------


def test_dual_stack_network_inspect_and_metallb_range(
    runtime: DockerRuntime, dual_stack_network: DualStackNetwork
) -> None:
    net = runtime.network(dual_stack_network.name)
    assert net is not None
    assert net.name == dual_stack_network.name
    assert net.labels == dual_stack_network.labels
    subnets = {ipaddress.ip_network(entry["Subnet"]) for entry in net.ipam_config}
    assert subnets == {dual_stack_network.ipv4, dual_stack_network.ipv6}
    # The write-up's bug: the IPv6 entry must not be glued into the IPv4 pool.
    pool = metallb_range(net.ipam_config, network=net.name)
    assert pool.subnet == dual_stack_network.ipv4
    v4 = dual_stack_network.ipv4
    assert str(pool) == f"{v4.network_address + 200}-{v4.network_address + 250}"
    # The same network found by label; unrelated labels find nothing.
    found = runtime.networks({"gpulab.dev/lab": dual_stack_network.labels["gpulab.dev/lab"]})
    assert [n.name for n in found] == [dual_stack_network.name]
    assert found[0].ipam_config == net.ipam_config
    assert runtime.networks({"gpulab.dev/lab": unique("nobody")}) == []
    by_id = runtime.network(net.id)
    assert by_id is not None
    assert by_id.name == net.name


def test_network_lookup_is_exact(runtime: DockerRuntime, dual_stack_network: DualStackNetwork) -> None:
    """The engine resolves ID prefixes; network() must not answer for a mere prefix."""
    net = runtime.network(dual_stack_network.name)
    assert net is not None
    assert runtime.network(net.id[:12]) is None
    assert runtime.network(unique("net")) is None


def test_remove_network_refuses_while_in_use_then_removes(
    runtime: DockerRuntime, dual_stack_network: DualStackNetwork, node_spec: SpecFactory
) -> None:
    node = runtime.run_node(node_spec(dual_stack_network.name))
    attached = runtime.network(dual_stack_network.name)
    assert attached is not None
    assert attached.containers == (node.name,)
    with pytest.raises(AdapterError) as caught:
        runtime.remove_network(dual_stack_network.name)
    assert node.name in (caught.value.hint or "")
    assert "\n" not in str(caught.value)
    assert runtime.remove(node.name)
    assert runtime.remove_network(dual_stack_network.name) is True
    assert runtime.network(dual_stack_network.name) is None
    assert runtime.remove_network(dual_stack_network.name) is False


# --- node containers -----------------------------------------------------------------------------


def test_run_node_labels_get_and_filter(
    runtime: DockerRuntime,
    client: docker.DockerClient,
    dual_stack_network: DualStackNetwork,
    node_spec: SpecFactory,
    tmp_path: Path,
) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "marker").write_text("host modules\n")
    spec_a = node_spec(
        dual_stack_network.name,
        labels={"gpulab.dev/tenant": "alpha"},
        readonly_binds=((str(modules), "/lib/modules"),),
    )
    spec_b = node_spec(dual_stack_network.name, labels={"gpulab.dev/tenant": "beta"})
    a = runtime.run_node(spec_a)
    b = runtime.run_node(spec_b)

    assert a.name == spec_a.name
    assert a.running
    assert a.image == TEST_IMAGE
    assert a.labels == spec_a.labels
    address = ipaddress.ip_address(a.networks[dual_stack_network.name])
    assert address in dual_stack_network.ipv4

    got = runtime.get(spec_a.name)
    assert got == a
    assert runtime.get(unique("missing")) is None
    assert runtime.get(a.id[:12]) is None  # an ID prefix is not a name
    by_id = runtime.get(a.id)
    assert by_id is not None
    assert by_id.name == a.name

    lab = spec_a.labels["gpulab.dev/lab"]
    lab_wide = runtime.containers({"gpulab.dev/lab": lab})
    assert sorted(c.name for c in lab_wide) == sorted([a.name, b.name])
    alpha = runtime.containers({"gpulab.dev/lab": lab, "gpulab.dev/tenant": "alpha"})
    assert [c.name for c in alpha] == [a.name]
    assert alpha[0].labels == a.labels
    assert alpha[0].networks == a.networks
    assert runtime.containers({"gpulab.dev/lab": unique("other")}) == []

    # kind's node flags, as the engine recorded them.
    attrs = client.api.inspect_container(a.id)
    host = attrs["HostConfig"]
    assert attrs["Config"]["Hostname"] == spec_a.name
    assert attrs["Config"]["Tty"] is True
    assert host["Privileged"] is False
    assert set(host["SecurityOpt"]) == {"seccomp=unconfined", "apparmor=unconfined"}
    assert set(host["Tmpfs"]) == {"/tmp", "/run"}
    assert host["CgroupnsMode"] == "private"
    assert host["Init"] is False
    assert host["RestartPolicy"] == {"Name": "on-failure", "MaximumRetryCount": 1}
    mounts = {m["Destination"]: m for m in attrs["Mounts"]}
    assert mounts["/var"]["Type"] == "volume"
    assert mounts["/lib/modules"]["Type"] == "bind"
    assert mounts["/lib/modules"]["RW"] is False

    # The read-only bind is visible and read-only inside the node.
    seen = runtime.exec(a.name, ["cat", "/lib/modules/marker"], timeout=30)
    assert seen.stdout == "host modules\n"
    write = runtime.exec(a.name, ["touch", "/lib/modules/x"], timeout=30)
    assert not write.ok
    assert "Read-only" in write.stderr


def test_run_node_name_conflict(runtime: DockerRuntime, node_spec: SpecFactory) -> None:
    spec = node_spec()
    runtime.run_node(spec)
    with pytest.raises(AdapterError) as caught:
        runtime.run_node(spec)
    assert f"docker rm -f -v {spec.name}" in (caught.value.hint or "")
    info = runtime.get(spec.name)
    assert info is not None
    assert info.running  # the first one is untouched


def test_run_node_on_a_missing_network(runtime: DockerRuntime, node_spec: SpecFactory) -> None:
    spec = node_spec(unique("nonet"))
    with pytest.raises(AdapterError) as caught:
        runtime.run_node(spec)
    assert "must exist first" in (caught.value.hint or "")
    assert runtime.get(spec.name) is None


def test_run_node_that_cannot_start_leaves_nothing_behind(
    runtime: DockerRuntime, client: docker.DockerClient, node_spec: SpecFactory
) -> None:
    before = _volume_names(client)
    spec = node_spec(tmpfs=("/bin/busybox",))  # a tmpfs over a file: runc refuses at start
    with pytest.raises(AdapterError) as caught:
        runtime.run_node(spec)
    assert str(caught.value).startswith(f"Docker could not start container {spec.name}: ")
    assert "\n" not in str(caught.value)
    assert runtime.get(spec.name) is None
    assert not (_volume_names(client) - before) & _anonymous_of(client, spec.name)


def _anonymous_of(client: docker.DockerClient, name: str) -> set[str]:
    try:
        attrs = client.api.inspect_container(name)
    except docker.errors.NotFound:
        return set()
    return {m["Name"] for m in attrs["Mounts"] if m["Type"] == "volume"}


def test_privileged_node(runtime: DockerRuntime, node_spec: SpecFactory) -> None:
    """Runs where the engine grants --privileged; elsewhere it must say so and leave nothing."""
    spec = node_spec(privileged=True)
    try:
        info = runtime.run_node(spec)
    except HostError as err:
        assert "cannot run privileged containers" in str(err)
        assert runtime.get(spec.name) is None
        return
    assert info.running


# --- exec ----------------------------------------------------------------------------------------


@pytest.fixture
def node(runtime: DockerRuntime, node_spec: SpecFactory) -> str:
    return runtime.run_node(node_spec()).name


def test_exec_output_and_exit_code(runtime: DockerRuntime, node: str) -> None:
    result = runtime.exec(node, ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert result.exit_code == 3
    assert not result.ok
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    empty = runtime.exec(node, ["true"], timeout=30)
    assert empty.ok
    assert (empty.stdout, empty.stderr) == ("", "")


def test_exec_passes_argv_verbatim(runtime: DockerRuntime, node: str) -> None:
    argv = ["printf", "%s|", "a b", "$HOME", "it's", ""]
    assert runtime.exec(node, argv, timeout=30).stdout == "a b|$HOME|it's||"


def test_exec_stdin(runtime: DockerRuntime, node: str) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    result = runtime.exec(node, ["sh", "-c", "cat > /tmp/in; wc -c < /tmp/in"], stdin=data)
    assert result.ok, result
    assert result.stdout.strip() == str(len(data))
    assert runtime.exec(node, ["sh", "-c", "cat | wc -c"], stdin=b"").stdout.strip() == "0"


@pytest.mark.slow
def test_exec_survives_silence_longer_than_the_client_socket_timeout(
    runtime: DockerRuntime, node: str
) -> None:
    """Like `kubeadm join`: silent for longer than the client's socket timeout (here 1 s)."""
    impatient = connect(timeout=1)
    try:
        started = time.monotonic()
        result = impatient.exec(node, ["sh", "-c", "sleep 2.5; echo joined"], timeout=30)
        assert time.monotonic() - started >= 2.5
        assert result.ok
        assert result.stdout == "joined\n"
    finally:
        impatient.close()


def test_exec_timeout_reports_output_so_far(runtime: DockerRuntime, node: str) -> None:
    started = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        runtime.exec(node, ["sh", "-c", "echo begun; sleep 30"], timeout=1)
    assert time.monotonic() - started < 10
    assert "did not finish within 1s" in str(caught.value)
    assert caught.value.output == "begun\n"


def test_exec_in_missing_or_stopped_container(
    runtime: DockerRuntime, client: docker.DockerClient, node: str
) -> None:
    missing = unique("missing")
    with pytest.raises(AdapterError) as caught:
        runtime.exec(missing, ["true"])
    assert str(caught.value) == f"Docker could not run `true` in container {missing}: No such container: {missing}"
    client.api.stop(node, timeout=0)
    with pytest.raises(AdapterError) as caught:
        runtime.exec(node, ["true"])
    assert "is not running" in str(caught.value)


# --- copy_in -------------------------------------------------------------------------------------


def test_copy_in_creates_parents_and_honours_mode(runtime: DockerRuntime, node: str) -> None:
    runtime.copy_in(node, "/etc/gpulab/deep/er/join.conf", b"token: abc\n", mode=0o640)
    stat = runtime.exec(node, ["stat", "-c", "%a %u %g %s", "/etc/gpulab/deep/er/join.conf"])
    assert stat.stdout.split() == ["640", "0", "0", "11"]
    assert runtime.exec(node, ["cat", "/etc/gpulab/deep/er/join.conf"]).stdout == "token: abc\n"

    runtime.copy_in(node, "/usr/local/bin/hello", b"#!/bin/sh\necho hi\n", mode=0o755)
    assert runtime.exec(node, ["/usr/local/bin/hello"]).stdout == "hi\n"

    # Overwrites, with the new mode; the default mode is 0600.
    runtime.copy_in(node, "/etc/gpulab/deep/er/join.conf", b"second")
    stat = runtime.exec(node, ["stat", "-c", "%a %s", "/etc/gpulab/deep/er/join.conf"])
    assert stat.stdout.split() == ["600", "6"]


def test_copy_in_rejects_relative_paths(runtime: DockerRuntime, node: str) -> None:
    with pytest.raises(ValueError, match="absolute"):
        runtime.copy_in(node, "etc/x", b"")


# --- remove and volumes --------------------------------------------------------------------------


def test_remove_leaves_no_container_and_no_anonymous_volume(
    runtime: DockerRuntime, client: docker.DockerClient, node_spec: SpecFactory, lab: str
) -> None:
    before = _volume_names(client)
    spec = node_spec(anonymous_volumes=("/var", "/data"))
    info = runtime.run_node(spec)
    anonymous = _anonymous_of(client, spec.name)
    assert len(anonymous) == 2
    assert anonymous <= _volume_names(client) - before
    runtime.exec(info.name, ["sh", "-c", "echo state > /var/state"])

    assert runtime.remove(spec.name) is True

    assert runtime.get(spec.name) is None
    assert runtime.containers({"gpulab.dev/lab": lab}) == []
    assert not anonymous & _volume_names(client)
    assert runtime.remove(spec.name) is False


def test_remove_stopped_container(runtime: DockerRuntime, client: docker.DockerClient, node: str) -> None:
    client.api.stop(node, timeout=0)
    stopped = runtime.get(node)
    assert stopped is not None
    assert stopped.status == "exited"
    assert not stopped.running
    assert runtime.remove(node) is True
    assert runtime.get(node) is None


def test_labelled_volumes(runtime: DockerRuntime, client: docker.DockerClient, cleanup: Cleanup, lab: str) -> None:
    name = unique("vol")
    cleanup.volumes.append(name)
    client.volumes.create(name, labels={SESSION_LABEL: SESSION_ID, "gpulab.dev/lab": lab})
    assert runtime.volumes({"gpulab.dev/lab": lab}) == [name]
    assert runtime.volumes({"gpulab.dev/lab": unique("other")}) == []
    assert runtime.remove_volume(name) is True
    assert runtime.volumes({"gpulab.dev/lab": lab}) == []
    assert runtime.remove_volume(name) is False


def test_remove_volume_in_use(
    runtime: DockerRuntime, client: docker.DockerClient, node_spec: SpecFactory
) -> None:
    spec = node_spec()
    runtime.run_node(spec)
    (volume,) = _anonymous_of(client, spec.name)
    with pytest.raises(AdapterError) as caught:
        runtime.remove_volume(volume)
    assert caught.value.hint == "a container still uses it; remove that first"


def test_removes_of_missing_things_return_false(runtime: DockerRuntime) -> None:
    assert runtime.remove(unique("gone")) is False
    assert runtime.remove_network(unique("gone")) is False
    assert runtime.remove_volume(unique("gone")) is False


def test_errors_are_gpulab_errors(runtime: DockerRuntime) -> None:
    with pytest.raises(GpulabError) as caught:
        runtime.image_present("Not A Valid Reference")
    assert "\n" not in str(caught.value)


# --- kind's host-dependent node options and its systemd wait -----------------------------------


def test_node_env_rw_bind_and_userns_host_reach_the_container(
    runtime: DockerRuntime, node_spec: SpecFactory, tmp_path: Path
) -> None:
    shared = tmp_path / "mapper"
    shared.mkdir()
    spec = node_spec(binds=((str(shared), "/dev/mapper"),), userns_mode="host",
                     env={"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.244.0.0/16,.svc"})
    runtime.run_node(spec)
    env = runtime.exec(spec.name, ["env"], timeout=60).stdout.splitlines()
    assert "HTTPS_PROXY=http://proxy:3128" in env and "NO_PROXY=10.244.0.0/16,.svc" in env
    wrote = runtime.exec(spec.name, ["sh", "-c", "echo x > /dev/mapper/probe"], timeout=60)
    assert wrote.ok  # read-write, unlike /lib/modules
    assert (shared / "probe").read_text() == "x\n"


def test_wait_for_log_sees_the_nodes_own_output(runtime: DockerRuntime,
                                                node_spec: SpecFactory) -> None:
    from gpulab.stacks.common import NODE_READY_LOG

    spec = node_spec()
    runtime.run_node(spec)
    assert runtime.wait_for_log(spec.name, NODE_READY_LOG, timeout=1) is False  # bounded
    # what systemd prints on PID 1's console in a kindest/node, written the same way here
    runtime.exec(spec.name, ["sh", "-c", "echo '[  OK  ] Reached target "
                                         "\x1b[0;1;39mMulti-User System\x1b[0m.' > /proc/1/fd/1"],
                 timeout=60)
    assert runtime.wait_for_log(spec.name, NODE_READY_LOG, timeout=10) is True


def _printing(client: docker.DockerClient, cleanup: Cleanup, script: str) -> str:
    """A running busybox container whose output is `script`'s."""
    name = unique("logs")
    cleanup.containers.append(name)
    client.containers.run(TEST_IMAGE, ["sh", "-c", script], name=name, detach=True,
                          labels={SESSION_LABEL: SESSION_ID})
    return name


class _Streams:
    """Wraps the runtime's `logs` to keep the streams it opened, and whether each was closed."""

    def __init__(self, runtime: DockerRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[Any] = []
        self.closed: list[Any] = []
        real = runtime._api.logs

        def logs(*args: Any, **kwargs: Any) -> Any:
            stream = real(*args, **kwargs)
            self.opened.append((stream, kwargs))
            close = stream.close

            def closing() -> None:
                self.closed.append(stream)
                close()

            stream.close = closing
            return stream

        monkeypatch.setattr(runtime._api, "logs", logs)


def _log_readers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("gpulab-logs-")]


@pytest.mark.slow
def test_wait_for_log_follows_a_line_printed_later(runtime: DockerRuntime, client: docker.DockerClient,
                                                   cleanup: Cleanup,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    streams = _Streams(runtime, monkeypatch)
    name = _printing(client, cleanup, "echo booting; sleep 2; "
                                      "echo '[  OK  ] Reached target Multi-User System.'; "
                                      "exec sleep 300")
    from gpulab.stacks.common import NODE_READY_LOG

    assert runtime.wait_for_log(name, NODE_READY_LOG, timeout=60) is True
    assert len(streams.opened) == 1  # one followed stream, not a re-read every half second
    stream, kwargs = streams.opened[0]
    assert kwargs == {"stdout": True, "stderr": True, "stream": True, "follow": True}
    assert streams.closed == [stream]
    assert _log_readers() == []


def test_wait_for_log_never_printed_is_false_by_the_deadline(
        runtime: DockerRuntime, client: docker.DockerClient, cleanup: Cleanup,
        monkeypatch: pytest.MonkeyPatch) -> None:
    streams = _Streams(runtime, monkeypatch)
    name = _printing(client, cleanup, "echo booting; exec sleep 300")
    started = time.monotonic()
    assert runtime.wait_for_log(name, "Reached target", timeout=1) is False
    assert time.monotonic() - started < 30  # the silent container did not hold it
    assert [s for s, _ in streams.opened] == streams.closed  # the stream was closed
    assert _log_readers() == []  # and its reader ended with it
    assert runtime.get(name).running  # the container itself is left alone


def test_wait_for_log_ends_when_the_container_stops(runtime: DockerRuntime,
                                                    client: docker.DockerClient,
                                                    cleanup: Cleanup) -> None:
    name = _printing(client, cleanup, "echo booting; sleep 1; echo bye")
    started = time.monotonic()
    assert runtime.wait_for_log(name, "Reached target", timeout=120) is False
    assert time.monotonic() - started < 60  # it returned because the output ended
    assert not runtime.get(name).running
    assert runtime.wait_for_log(name, "^bye$", timeout=120) is True  # a stopped one's lines
    with pytest.raises(AdapterError):
        runtime.wait_for_log(unique("gone"), "x", timeout=1)


def test_privileged_probe_tells_what_the_engine_does(runtime: DockerRuntime,
                                                     client: docker.DockerClient,
                                                     kamaji_profile) -> None:
    """The probe agrees with a plain privileged `docker run` on this engine (this CI host
    refuses --privileged; a kind-capable host allows it), and leaves nothing behind."""
    import os

    from gpulab.doctor import diagnose, observe_host
    from gpulab.node_options import probe_node

    probe = runtime.probe_privileged(probe_node(TEST_IMAGE, runtime.info(), os.environ))
    allowed = privileged_run_allowed(client)
    assert (probe == "") is allowed
    assert "\n" not in probe
    assert client.containers.list(all=True, filters={"label": "gpulab.dev/probe"}) == []
    snapshot = observe_host(runtime, probe_images=("gpulab-test/absent:0", TEST_IMAGE))
    assert snapshot.probe_image == TEST_IMAGE and snapshot.privileged_probe == probe
    found = {f.check: f for f in diagnose(snapshot, kamaji_profile, "x")}["privileged"]
    assert found.status == ("ok" if allowed else "fail")
