"""Fixtures for the tests that use the real Docker engine.

Every test here needs a reachable engine and the local image `gpulab-test/busybox:1` that
`.ci/setup-host.sh` builds (nothing is pulled); they use what is there and never start or build
anything. Without them the suite skips locally with one line saying how to get them
(tests/host.py: GPULAB_HOST_SETUP=1) but FAILS in CI (CI=true): there the host setup must
provide both.

Everything a test creates is named `gpulab-test-<random>` and labelled with this session's id, so
fixture finalizers (and a session-wide sweep) remove it even when a test fails half-way.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors
import pytest
from docker.types import IPAMConfig, IPAMPool

from gpulab.adapters.base import ContainerSpec
from gpulab.adapters.docker_runtime import DockerRuntime, connect
from gpulab.errors import GpulabError
from tests.host import TEST_IMAGE, unavailable

SESSION_LABEL = "gpulab-test.session"
SESSION_ID = uuid.uuid4().hex[:12]


def unique(kind: str = "") -> str:
    """A fresh resource name with the `gpulab-test-` prefix."""
    return f"gpulab-test-{kind + '-' if kind else ''}{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def runtime() -> Iterator[DockerRuntime]:
    """The adapter under test, connected the way gpulab connects."""
    try:
        rt = connect(timeout=10)
    except GpulabError as err:
        unavailable(f"needs a Docker engine (unreachable: {str(err).splitlines()[0]})")
    if not rt.image_present(TEST_IMAGE):
        rt.close()
        unavailable(f"needs the image {TEST_IMAGE} in the Docker engine")
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def client(runtime: DockerRuntime) -> Iterator[docker.DockerClient]:
    """A plain docker-py client for arranging and checking, independent of the adapter."""
    raw = docker.from_env(timeout=30)
    yield raw
    _sweep(raw)
    raw.close()


def _sweep(raw: docker.DockerClient) -> None:
    """Remove everything this session labelled (containers, then networks and volumes)."""
    label = {"label": f"{SESSION_LABEL}={SESSION_ID}"}
    for container in raw.containers.list(all=True, filters=label):
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True, v=True)
    for network in raw.networks.list(filters=label):
        with contextlib.suppress(docker.errors.NotFound):
            network.remove()
    for volume in raw.volumes.list(filters=label):
        with contextlib.suppress(docker.errors.NotFound):
            volume.remove(force=True)


def privileged_run_allowed(client: docker.DockerClient) -> bool:
    """Whether a plain `docker run --privileged TEST_IMAGE true` works on this engine. The
    container is labelled for the session and always removed: docker-py's `run(remove=True)`
    leaves a container in `Created` when the engine refuses to start it."""
    container = client.containers.create(TEST_IMAGE, ["true"], privileged=True,
                                         labels={SESSION_LABEL: SESSION_ID})
    try:
        container.start()
        return int(container.wait(timeout=60).get("StatusCode", 1)) == 0
    except docker.errors.DockerException:
        return False
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True, v=True)


@pytest.fixture(autouse=True)
def _engine(runtime: DockerRuntime, client: docker.DockerClient) -> None:
    """Every test in this folder needs the engine (skip locally / fail in CI without it)."""


@dataclass
class Cleanup:
    """Names to force-remove after the test, whatever happened in it."""

    client: docker.DockerClient
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def run(self) -> None:
        for name in self.containers:
            with contextlib.suppress(docker.errors.NotFound):
                self.client.api.remove_container(name, force=True, v=True)
        for name in self.networks:
            with contextlib.suppress(docker.errors.NotFound):
                self.client.api.remove_network(name)
        for name in self.volumes:
            with contextlib.suppress(docker.errors.NotFound):
                self.client.api.remove_volume(name, force=True)


@pytest.fixture
def cleanup(client: docker.DockerClient) -> Iterator[Cleanup]:
    tracker = Cleanup(client)
    yield tracker
    tracker.run()


@dataclass(frozen=True)
class DualStackNetwork:
    name: str
    ipv4: ipaddress.IPv4Network
    ipv6: ipaddress.IPv6Network
    labels: dict[str, str]


@pytest.fixture
def lab() -> str:
    """A lab name unique to the test (the `gpulab.dev/lab` label value)."""
    return unique("lab")


@pytest.fixture
def dual_stack_network(
    client: docker.DockerClient, cleanup: Cleanup, lab: str
) -> DualStackNetwork:
    """A labelled bridge network with an IPv4 /24 and an IPv6 ULA /64, like kind's."""
    labels = {SESSION_LABEL: SESSION_ID, "gpulab.dev/lab": lab}
    name = unique("net")
    cleanup.networks.append(name)
    last_error: Exception | None = None
    for _ in range(8):  # random subnets; retry when another network already has one
        n = random.randrange(256)
        ipv4 = ipaddress.IPv4Network(f"10.213.{n}.0/24")
        ipv6 = ipaddress.IPv6Network(f"fd00:6a7b:{n:x}:{random.randrange(1 << 16):x}::/64")
        try:
            client.networks.create(
                name,
                driver="bridge",
                enable_ipv6=True,
                ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(ipv4)), IPAMPool(subnet=str(ipv6))]),
                labels=labels,
            )
        except docker.errors.APIError as err:
            if "overlap" not in str(err).lower():
                raise
            last_error = err
            continue
        return DualStackNetwork(name, ipv4, ipv6, labels)
    raise RuntimeError(f"no free test subnet: {last_error}")


@pytest.fixture
def node_spec(lab: str, cleanup: Cleanup) -> Callable[..., ContainerSpec]:
    """ContainerSpec factory: kind's node flags minus what this kind of host cannot do.

    `privileged` is off (the CI host cannot grant it); the rest (unconfined seccomp/apparmor,
    tmpfs, anonymous /var, cgroupns, restart policy) is what gpulab uses for real workers.
    """

    def make(
        network: str = "bridge", *, labels: dict[str, str] | None = None, **overrides: Any
    ) -> ContainerSpec:
        name = str(overrides.pop("name", unique("node")))
        cleanup.containers.append(name)
        values: dict[str, Any] = {
            "name": name,
            "image": TEST_IMAGE,
            "network": network,
            "labels": {
                SESSION_LABEL: SESSION_ID,
                "gpulab.dev/lab": lab,
                "gpulab.dev/role": "worker",
                **(labels or {}),
            },
            "privileged": False,
            "readonly_binds": (),
        }
        values.update(overrides)
        return ContainerSpec(**values)

    return make
