"""doctor and `up`'s preflight (issue #20 items 3, 4, 6d): the privileged probe asks the engine for
what a kind node asks for on that host, a fresh host gets the node image (and is probed with it),
and the host ports a profile publishes are free or held by the same lab.

Engine answers are the Engine API's own examples (moby docker-v29.7.2 api/swagger.yaml, read by
tests/upstream_docker.py)."""

from __future__ import annotations

import socket
from typing import Any

import docker
import pytest

from gpulab.adapters.base import ContainerInfo, PublishedPort
from gpulab.adapters.docker_runtime import DockerRuntime
from gpulab.doctor import HostSnapshot, ImageState, diagnose, observe_host
from gpulab.profile.base import HostPort
from gpulab.providers import kind as kind_provider
from tests.fakes import FakeRuntime, FakeWorld
from tests.upstream_docker import example, system_info

NODE = "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"


def _by_check(findings: list[Any]) -> dict[str, Any]:
    return {f.check: f for f in findings}


# --------------------------------------------------------------------------- item 3: the probe


class EngineAPI:
    """The APIClient calls doctor makes, answered with the API's examples; `create_host_config`
    is docker-py's own (a fixed API version needs no engine), so `created` holds the HostConfig
    the engine would receive."""

    def __init__(self, info: dict[str, Any]) -> None:
        self._info = info
        self._real = docker.APIClient(base_url="unix:///nonexistent", version="1.41")
        self.created: list[dict[str, Any]] = []
        self.removed: list[str] = []

    def info(self) -> dict[str, Any]:
        return self._info

    def version(self) -> dict[str, Any]:
        return {"Version": self._info.get("ServerVersion", ""), "ApiVersion": "1.41"}

    def containers(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def networks(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def images(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def inspect_image(self, image: str) -> dict[str, Any]:
        return {"Id": "sha256:" + "0" * 64, "RepoTags": [image]}

    def create_host_config(self, **kwargs: Any) -> dict[str, Any]:
        config: dict[str, Any] = self._real.create_host_config(**kwargs)
        return config

    def create_container(self, image: str, **kwargs: Any) -> dict[str, Any]:
        self.created.append({"Image": image, **kwargs})
        return {"Id": "c" * 64}

    def start(self, container: str) -> None:
        pass

    def wait(self, container: str, timeout: float | None = None) -> dict[str, Any]:
        return {"StatusCode": 0}

    def remove_container(self, container: str, **_: Any) -> None:
        self.removed.append(container)


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                 "no_proxy", "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))


def test_the_probe_runs_as_a_node_would_on_a_userns_remap_daemon(no_proxy: None) -> None:
    """moby refuses --privileged with a remapped root unless the container keeps the host's user
    namespace (daemon/daemon_unix.go:682-685 at docker-v29.7.2); kind adds --userns=host on such
    a daemon (provision.go:192-195) and so do gpulab's workers. The probe must too, or doctor
    refuses `up` on a host where kind runs."""
    info = system_info()  # SecurityOptions example: apparmor, seccomp, selinux, userns, rootless
    assert "name=userns" in info["SecurityOptions"]
    api = EngineAPI(info)
    snapshot = observe_host(DockerRuntime(api), probe_images=(NODE,))
    assert snapshot.privileged_probe == "" and snapshot.probe_image == NODE
    (created,) = api.created
    host_config = created["host_config"]
    assert host_config["UsernsMode"] == "host"
    # the node's own options, from the function that builds the workers' (node_host_config_args)
    assert host_config["Privileged"] is True
    assert host_config["CgroupnsMode"] == "private"
    assert host_config["SecurityOpt"] == ["seccomp=unconfined", "apparmor=unconfined"]
    assert host_config["Tmpfs"] == {"/tmp": "", "/run": ""}
    assert host_config["Binds"] == ["/lib/modules:/lib/modules:ro"]
    assert host_config["Init"] is False
    # the example also says rootless: kind's --device /dev/fuse (provision.go:203-207)
    assert host_config["Devices"] == [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse",
                                       "CgroupPermissions": "rwm"}]
    # what a throw-away probe leaves out: kind's network (may not exist yet), the restart policy,
    # the /var volume (a copy of the image's /var)
    assert host_config["NetworkMode"] == "default"  # docker-py's default: the bridge
    assert "RestartPolicy" not in host_config
    assert "Mounts" not in host_config
    assert created["labels"] == {"gpulab.dev/probe": "privileged"}
    assert api.removed == ["c" * 64]


def test_without_userns_remap_the_probe_keeps_the_default_user_namespace(no_proxy: None) -> None:
    info = system_info()
    info["SecurityOptions"] = [o for o in info["SecurityOptions"]
                               if o not in ("name=userns", "name=rootless")]
    api = EngineAPI(info)
    observe_host(DockerRuntime(api), probe_images=(NODE,))
    host_config = api.created[0]["host_config"]
    assert "UsernsMode" not in host_config and "Devices" not in host_config
    assert host_config["Privileged"] is True


# --------------------------------------------------------------------------- item 4: the pull


def _fresh_host() -> FakeRuntime:
    """A host with one unrelated image and no kindest/node (a newcomer's)."""
    return FakeRuntime(FakeWorld(images={"busybox:1"}, host_images={"busybox:1"}))


def test_a_fresh_host_gets_the_node_image_and_is_probed_with_it() -> None:
    runtime = _fresh_host()
    pulled: list[str] = []

    def pull(image: str) -> None:
        pulled.append(image)
        runtime.pull(image)

    snapshot = observe_host(runtime, probe_images=(NODE,), pull=pull)
    assert pulled == [NODE]
    assert [s.image for s in runtime.world.probed] == [NODE]
    assert snapshot.probe_image == NODE and snapshot.privileged_probe == ""
    (state,) = snapshot.node_images
    assert (state.image, state.state) == (NODE, "pulled")


def test_an_image_already_there_is_not_pulled_again() -> None:
    runtime = _fresh_host()
    runtime.world.host_images.add(NODE)
    snapshot = observe_host(runtime, probe_images=(NODE,), pull=pytest.fail)
    assert snapshot.node_images == (ImageState(NODE, "present"),)


def test_an_image_that_cannot_be_pulled_says_so_in_one_line_and_fails(kamaji_profile) -> None:
    runtime = _fresh_host()
    runtime.world.faults.fail_once.add(f"docker.pull:{NODE}")
    snapshot = observe_host(runtime, probe_images=(NODE,), pull=runtime.pull)
    (state,) = snapshot.node_images
    assert state.state == "failed" and state.detail == f"injected fault: docker.pull:{NODE}"
    # the probe still answers with an image that is on the host
    assert snapshot.probe_image == "busybox:1"
    found = _by_check(diagnose(snapshot, kamaji_profile, "x"))["node image"]
    assert found.status == "fail"
    assert found.detail == f"cannot pull {NODE}: injected fault: docker.pull:{NODE}"
    assert "\n" not in found.detail and "docker load" in found.fix


def test_no_pull_is_a_warning_that_says_what_was_probed(kamaji_profile) -> None:
    runtime = _fresh_host()
    snapshot = observe_host(runtime, probe_images=(NODE,), pull=None)
    assert snapshot.node_images == (ImageState(NODE, "skipped"),)
    assert NODE not in runtime.world.host_images
    found = _by_check(diagnose(snapshot, kamaji_profile, "x"))
    assert found["node image"].status == "warn"
    assert "the privileged probe used busybox:1" in found["node image"].detail
    assert "about 1 GB" in found["node image"].fix
    assert "probed with busybox:1" in found["privileged"].detail


def test_preflight_pulls_as_a_step_of_its_own(kamaji_profile, monkeypatch) -> None:
    """`up` shows the pull like its steps (started with the size to expect, then done)."""
    from gpulab.adapters.docker_endpoint import DockerEndpoint

    monkeypatch.setattr("gpulab.tools.find_tool", lambda name: None)
    runtime = _fresh_host()
    events: list[Any] = []
    findings = kind_provider.preflight(kamaji_profile, "x", runtime, endpoint=DockerEndpoint("unix:///s"),
                              pull=True, report=events.append)
    assert [(e.step, e.kind) for e in events] == [("preflight/node-image", "started"),
                                                  ("preflight/node-image", "done")]
    assert "about 1 GB" in events[0].title and kamaji_profile.management.node_image in \
        events[0].title
    assert _by_check(findings)["node image"].status == "ok"
    assert runtime.world.probed[0].image == kamaji_profile.management.node_image


def test_up_stops_with_one_line_when_the_node_image_cannot_be_pulled(kamaji_profile,
                                                                     monkeypatch) -> None:
    from gpulab import core
    from gpulab.adapters.docker_endpoint import DockerEndpoint
    from gpulab.errors import ExitCode, HostError

    runtime = _fresh_host()
    image = kamaji_profile.management.node_image
    runtime.world.faults.fail_once.add(f"docker.pull:{image}")
    monkeypatch.setattr(core, "docker_endpoint", lambda: DockerEndpoint("unix:///s"))
    monkeypatch.setattr(core, "connect_runtime", lambda **_: runtime)
    monkeypatch.setattr("gpulab.tools.find_tool", lambda name: None)
    events: list[Any] = []
    with pytest.raises(HostError) as caught:
        core.up(kamaji_profile, "x", events.append)
    assert caught.value.exit_code == ExitCode.HOST
    assert caught.value.problems[0].startswith(
        f"node image: cannot pull {image}: injected fault: docker.pull:{image}")
    assert [e.kind for e in events] == ["started", "failed"]
    assert runtime.world.containers == {}  # nothing created


# --------------------------------------------------------------------------- item 6d: ports


@pytest.fixture
def kai_profile():
    from gpulab.stacks import load_profile

    return load_profile("vcluster-kai").profile


def _with_host_port(profile: Any, port: int) -> Any:
    teams = list(profile.teams)
    teams[0] = teams[0].model_copy(update={"api_host_port": port})
    return profile.model_copy(update={"teams": teams})


def test_every_team_port_is_a_host_port_kind_publishes(kai_profile) -> None:
    """The neutral accessor doctor reads is exactly what the kind config publishes."""
    from gpulab.providers.kind.config import kind_config
    from gpulab.stacks.vcluster_kai.render import cluster_needs

    published = kind_config(kai_profile, "x", cluster_needs(kai_profile))["nodes"][0]
    assert [(p.address, p.port, p.protocol.upper()) for p in kai_profile.host_ports()] == [
        (m["listenAddress"], m["hostPort"], m["protocol"])
        for m in published["extraPortMappings"]]
    assert all(p.what.startswith("team ") for p in kai_profile.host_ports())


def test_kamaji_hami_publishes_each_tenant_api_on_loopback(kamaji_profile) -> None:
    """Each tenant's API port doctor checks is exactly what the kind config publishes."""
    from gpulab.providers.kind.config import kind_config
    from gpulab.stacks.kamaji_hami.render import cluster_needs

    published = kind_config(kamaji_profile, "x", cluster_needs(kamaji_profile))["nodes"][0]
    assert [(p.address, p.port, p.protocol.upper()) for p in kamaji_profile.host_ports()] == [
        (m["listenAddress"], m["hostPort"], m["protocol"])
        for m in published["extraPortMappings"]] == [("127.0.0.1", 30061, "TCP"),
                                                      ("127.0.0.1", 30062, "TCP")]
    found = _by_check(diagnose(HostSnapshot(docker=_info()), kamaji_profile, "x"))
    assert found["ports"].status == "ok"
    assert "127.0.0.1:30061" in found["ports"].detail


def _info() -> Any:
    from gpulab.adapters.base import RuntimeInfo

    return RuntimeInfo("28.2.2", "1.50", 8, 64 * 1024**3, "Debian")


def test_a_port_bound_by_another_process_fails_doctor_with_that_port(kai_profile) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        profile = _with_host_port(kai_profile, port)
        snapshot = observe_host(None, host_ports=profile.host_ports())
        found = _by_check(diagnose(HostSnapshot(docker=_info(), busy_ports=snapshot.busy_ports),
                                   profile, "x"))["ports"]
    assert found.status == "fail"
    assert f"127.0.0.1:{port} (team team-nlp's vCluster API (teams[0].api_host_port)) is in " \
           f"use by another process" in found.detail
    assert "\n" not in found.detail


def test_a_free_port_passes(kai_profile) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    profile = _with_host_port(kai_profile, port)
    snapshot = observe_host(None, host_ports=[p for p in profile.host_ports() if p.port == port])
    assert snapshot.busy_ports == {}
    found = _by_check(diagnose(HostSnapshot(docker=_info(), busy_ports={}), profile, "x"))
    assert found["ports"].status == "ok" and f"127.0.0.1:{port}" in found["ports"].detail


def _published(labels: dict[str, str], name: str) -> ContainerInfo:
    """A running container publishing the PortMap example of the Engine API (its 443/tcp is
    published on 127.0.0.1:4443; swagger.yaml `PortMap.example`)."""
    ports = PublishedPort.from_port_map(example("PortMap"))
    return ContainerInfo("id", name, "kindest/node", "running", labels, {}, ports)


def test_the_port_map_example_parses() -> None:
    ports = PublishedPort.from_port_map(example("PortMap"))
    assert PublishedPort("127.0.0.1", 4443, "tcp") in ports
    assert PublishedPort("0.0.0.0", 53, "udp") in ports
    assert all(p.port != 2377 for p in ports)  # "2377/tcp": null is exposed, not published
    summary = PublishedPort.from_summary(example("PortSummary"))  # IP omitted: every address
    assert summary == PublishedPort("", 80, "tcp")


def test_a_port_of_another_lab_names_that_lab(kai_profile) -> None:
    profile = _with_host_port(kai_profile, 4443)
    other = _published({"io.x-k8s.kind.cluster": "gpulab-other", "io.x-k8s.kind.role":
                        "control-plane"}, "gpulab-other-control-plane")
    found = _by_check(diagnose(HostSnapshot(docker=_info(), containers=(other,)), profile,
                               "mine"))["ports"]
    assert found.status == "fail"
    assert "127.0.0.1:4443 (team team-nlp's vCluster API (teams[0].api_host_port)) is " \
           "published by lab 'other' (container gpulab-other-control-plane)" in found.detail
    assert "gpulab down --name" in found.fix
    foreign = _published({"io.x-k8s.kind.cluster": "dev"}, "dev-control-plane")
    named = _by_check(diagnose(HostSnapshot(docker=_info(), containers=(foreign,)), profile,
                               "mine"))["ports"]
    assert "published by kind cluster 'dev' (container dev-control-plane)" in named.detail
    plain = _published({}, "web")
    assert "published by container web" in _by_check(diagnose(
        HostSnapshot(docker=_info(), containers=(plain,)), profile, "mine"))["ports"].detail


def test_a_port_held_by_the_same_lab_is_fine(kai_profile) -> None:
    """Re-running `up`: the lab's own control plane publishes the port (and the bind test on the
    host finds it taken, by Docker's proxy)."""
    profile = _with_host_port(kai_profile, 4443)
    mine = _published({"io.x-k8s.kind.cluster": "gpulab-mine"}, "gpulab-mine-control-plane")
    busy = {("127.0.0.1", 4443, "tcp"): "another process"}
    found = _by_check(diagnose(HostSnapshot(docker=_info(), containers=(mine,), busy_ports=busy),
                               profile, "mine"))["ports"]
    assert found.status == "ok" and "127.0.0.1:4443 published by this lab already" in \
        found.detail


def test_a_wildcard_binding_takes_the_loopback_port_too(kai_profile) -> None:
    profile = _with_host_port(kai_profile, 80)
    web = ContainerInfo("id", "web", "nginx", "running", {}, {},
                        (PublishedPort.from_summary(example("PortSummary")),))  # type: ignore[arg-type]
    found = _by_check(diagnose(HostSnapshot(docker=_info(), containers=(web,)), profile,
                               "x"))["ports"]
    assert found.status == "fail" and "127.0.0.1:80" in found.detail
    stopped = ContainerInfo("id", "web", "nginx", "exited", {}, {}, web.ports)
    assert _by_check(diagnose(HostSnapshot(docker=_info(), containers=(stopped,)), profile,
                              "x"))["ports"].status == "ok"


def test_a_remote_engine_is_not_bind_tested(kai_profile) -> None:
    from gpulab.adapters.docker_endpoint import DockerEndpoint

    snapshot = observe_host(None, host_ports=kai_profile.host_ports(),
                            endpoint=DockerEndpoint("tcp://10.0.0.9:2376"))
    assert snapshot.busy_ports is None
    found = _by_check(diagnose(HostSnapshot(docker=_info(), busy_ports=None), kai_profile,
                               "x"))["ports"]
    assert found.status == "ok" and "only its containers were checked" in found.detail


def test_host_port_text() -> None:
    assert HostPort("127.0.0.1", 31443).text == "127.0.0.1:31443"
    assert HostPort("::1", 53, "udp").text == "[::1]:53/udp"
