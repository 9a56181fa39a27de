"""`gpulab doctor` for a lab on a cluster you have (provider existing), through the CLI against
kmock clusters (tests/existing/kmock_cluster.py, kmock_kamaji.py): helm, the state folder, the
kubeconfig, the API within its deadline, then up's own read-only preflight, one line per check
with its fix; Docker only for kamaji-hami's worker containers on this host, never kind.

Docker is this module's FakeRuntime (tests/fakes.py: it records each pull and privileged probe);
`core.connect_runtime` is replaced so a test sees whether doctor asked for Docker at all."""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core
from gpulab.adapters.docker_endpoint import DockerEndpoint
from gpulab.cli import app
from gpulab.stacks import load_profile
from tests.existing.kmock_cluster import ExistingCluster
from tests.existing.test_existing import TEAMS, _up
from tests.fakes import FakeRuntime, FakeWorld

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()
HELM = "v3.19.2"
TENANTS = ["tenant-a", "tenant-b"]
WORKER_IMAGE = ("kindest/node:v1.36.4@sha256:"
                "099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed")


@pytest.fixture(autouse=True)
def _host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A helm that says the pinned version ($GPULAB_HELM), and no user kubeconfig."""
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))
    helm = tmp_path / "bin" / "helm"
    helm.parent.mkdir()
    helm.write_text(f"#!/bin/sh\necho '{HELM}'\n")
    helm.chmod(0o755)
    monkeypatch.setenv("GPULAB_HELM", str(helm))
    monkeypatch.delenv("GPULAB_KIND", raising=False)


@pytest.fixture
def docker(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeWorld, list[str]]:
    """This host's Docker as tests/fakes.py plays it (no worker image on it yet), and every
    time doctor connected to it."""
    world = FakeWorld(images={"busybox:1"})
    connected: list[str] = []

    def connect(timeout: float = 10, endpoint: Any = None) -> FakeRuntime:
        connected.append(str(endpoint.host if endpoint else ""))
        return FakeRuntime(world)

    monkeypatch.setattr(core, "docker_endpoint", lambda: DockerEndpoint("unix:///fake.sock"))
    monkeypatch.setattr(core, "connect_runtime", connect)
    return world, connected


def _doctor(*argv: str) -> tuple[int, dict[str, list[dict[str, str]]], str]:
    """(exit code, findings by check, stderr) of `gpulab doctor ARGV -o json`."""
    result = runner.invoke(app, ["doctor", *argv, "-o", "json"])
    assert result.exit_code in (0, 4), result.output
    by_check: dict[str, list[dict[str, str]]] = {}
    for finding in json.loads(result.stdout):
        by_check.setdefault(finding["check"], []).append(finding)
    return result.exit_code, by_check, result.stderr


def _fails(found: dict[str, list[dict[str, str]]]) -> list[dict[str, str]]:
    return [f for findings in found.values() for f in findings if f["status"] == "fail"]


def _kind_host_checks() -> set[str]:
    """What doctor checks on this host for a kind lab and never for a lab on your cluster."""
    return {"kind", "node image", "privileged", "memory", "cpu", "disk", "inotify watches",
            "inotify instances", "swap", "ports", "subnets", "git", "docker"}


# --------------------------------------------------------------------------- vcluster-kai


def test_a_reachable_cluster_is_all_ok_and_only_read(
        tmp_path: Path, docker: tuple[FakeWorld, list[str]]) -> None:
    world, connected = docker
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        cluster.kubeconfig.chmod(0o600)
        code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig",
                                    str(cluster.kubeconfig))
        writes = cluster.writes()
    assert code == 0, _fails(found)
    assert list(found) == ["helm", "state", "kubeconfig", "api", "version", "access",
                           "storage class", "cluster"]
    assert {f["status"] for fs in found.values() for f in fs} == {"ok"}
    assert found["helm"][0]["detail"] == f"helm {HELM}"
    assert found["kubeconfig"][0]["detail"] == f"{cluster.kubeconfig}, context microk8s"
    assert found["api"][0]["detail"] == (f"{cluster.host.url} (context microk8s) answers: "
                                         "Kubernetes v1.34.2")
    assert found["access"][0]["detail"].startswith("all ")
    assert found["storage class"][0]["detail"] == "default StorageClass microk8s-hostpath"
    # no kind, no Docker: nothing of the kind lab's host checks, and no engine asked
    assert not set(found) & _kind_host_checks()
    assert connected == [] and world.faults.calls == []
    # only reads and access reviews: doctor stores nothing in the cluster
    assert all(path.startswith("/apis/authorization.k8s.io/") for _m, path in writes), writes


def test_an_api_that_does_not_answer_is_one_fail_line_with_its_fix(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = tmp_path / "down.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "down",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "down", "context": {"cluster": "c", "user": "u"}}]}))
    kubeconfig.chmod(0o600)
    result = runner.invoke(app, ["doctor", "-p", "vcluster-kai", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 4, result.output
    fails = [line for line in result.stdout.splitlines() if " fail " in line]
    assert len(fails) == 1 and fails[0].split()[:2] == ["api", "fail"], result.stdout
    assert f"https://127.0.0.1:{port}" in result.stdout
    assert "nothing in the cluster was checked" in result.stdout
    assert "  api: check the kubeconfig's server and the network path to it" in \
        result.stdout.splitlines()
    assert "secret-token" not in result.output


def test_denied_access_reviews_fail_naming_each_verb_and_resource(tmp_path: Path) -> None:
    denied = {("create", "namespaces"), ("delete", "queues")}
    with ExistingCluster(tmp_path, denied=denied).running(TEAMS) as cluster:
        code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig",
                                    str(cluster.kubeconfig))
    assert code == 4
    assert [f["check"] for f in _fails(found)] == ["access"]
    access = found["access"][0]
    assert access["detail"].startswith("2 of ")
    assert "not allowed to create namespaces; delete queues.scheduling.run.ai" in \
        access["detail"]
    assert "RBAC to grant" in access["fix"] and "context microk8s" in access["fix"]


def test_no_default_storage_class_fails_with_the_annotation_to_set(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, storage_class=False).running(TEAMS) as cluster:
        code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig",
                                    str(cluster.kubeconfig))
    assert code == 4
    assert [f["check"] for f in _fails(found)] == ["storage class"]
    storage = found["storage class"][0]
    assert storage["detail"].startswith("no default StorageClass (each vCluster keeps its data")
    assert "storageclass.kubernetes.io/is-default-class=true" in storage["fix"]


def test_a_kubernetes_version_the_pins_do_not_support_fails(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, version="v1.27.3").running(TEAMS) as cluster:
        code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig",
                                    str(cluster.kubeconfig))
    assert code == 4
    assert found["api"][0]["status"] == "ok" and "Kubernetes v1.27.3" in found["api"][0]["detail"]
    versions = found["version"]
    assert {f["status"] for f in versions} == {"fail"}
    pins: Any = load_profile("vcluster-kai").profile.components
    assert [f["detail"] for f in versions] == [
        f"Kubernetes v1.27 is outside KAI Scheduler {pins.kai_scheduler.chart.version}'s tested "
        "hosts (v1.28-v1.36)",
        f"Kubernetes v1.27 is outside vCluster {pins.vcluster.chart.version}'s tested hosts "
        "(v1.34-v1.36)"]
    assert "docs/own-cluster.md" in versions[0]["fix"]


def test_a_kubeconfig_others_can_read_is_a_warning_and_a_missing_one_a_fail(
        tmp_path: Path) -> None:
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        cluster.kubeconfig.chmod(0o644)
        code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig",
                                    str(cluster.kubeconfig))
    assert code == 0
    loose = found["kubeconfig"][0]
    assert loose["status"] == "warn" and "(mode 0644)" in loose["detail"]
    assert loose["fix"] == f"chmod 600 {cluster.kubeconfig}"
    missing = tmp_path / "nowhere.kubeconfig"
    code, found, _err = _doctor("-p", "vcluster-kai", "--kubeconfig", str(missing))
    assert code == 4
    assert [(f["check"], f["status"]) for f in _fails(found)] == [("kubeconfig", "fail")]
    assert str(missing) in found["kubeconfig"][0]["detail"] and "api" not in found


@pytest.mark.slow
def test_a_lab_built_on_the_cluster_is_checked_there_by_its_name(tmp_path: Path) -> None:
    # lab.json says existing: `doctor --name` reaches the cluster it records (as up does), and
    # the lab's own namespaces and queues are not "already there"
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        cluster.kubeconfig.chmod(0o600)
        assert _up(cluster, tmp_path).ok
        code, found, _err = _doctor("--name", "vcluster-kai")
    assert code == 0, _fails(found)
    assert cluster.host.url in found["api"][0]["detail"]
    assert found["cluster"][0]["status"] == "ok"


# --------------------------------------------------------------------------- kamaji-hami


def _kamaji_profile(tmp_path: Path, workers: str) -> Path:
    loaded = load_profile("kamaji-hami")
    document = yaml.safe_load(loaded.source.read_text(encoding="utf-8"))
    document["cluster"] = {"provider": "existing", "workers": workers}
    path = tmp_path / f"kamaji-{workers}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_machines_workers_ask_nothing_of_docker_and_pull_nothing(
        tmp_path: Path, docker: tuple[FakeWorld, list[str]]) -> None:
    from tests.existing.kmock_kamaji import KamajiCluster

    world, connected = docker
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        cluster.kubeconfig.chmod(0o600)
        code, found, err = _doctor("-p", str(_kamaji_profile(tmp_path, "machines")),
                                   "--kubeconfig", str(cluster.kubeconfig))
    assert code == 0, _fails(found)
    assert not set(found) & _kind_host_checks()
    assert connected == [] and world.faults.calls == []  # no engine, no pull, no probe
    assert "Pulling" not in err


def test_container_workers_get_docker_checks_for_the_workers_only(
        tmp_path: Path, docker: tuple[FakeWorld, list[str]]) -> None:
    from tests.existing.kmock_kamaji import KamajiCluster

    world, connected = docker
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        cluster.kubeconfig.chmod(0o600)
        code, found, err = _doctor("-p", str(_kamaji_profile(tmp_path, "containers")),
                                   "--kubeconfig", str(cluster.kubeconfig))
    assert code == 0, _fails(found)
    assert list(found)[-6:] == ["docker", "engine", "privileged", "node image", "memory", "cpu"]
    assert connected == ["unix:///fake.sock"]
    # the workers' kindest/node image pulled (shown as a step), then probed --privileged
    assert world.faults.calls == [f"docker.pull:{WORKER_IMAGE}", f"docker.probe:{WORKER_IMAGE}"]
    assert f"Pulling worker image {WORKER_IMAGE} (about 1 GB, once per host)" in err
    assert found["node image"][0]["detail"].startswith(f"pulled {WORKER_IMAGE}")
    assert found["privileged"][0]["detail"] == (f"rootful Docker runs --privileged containers "
                                                f"(probed with {WORKER_IMAGE})")
    # two tenants, one worker each: the workers' budget alone, not the kind lab's
    assert found["memory"][0]["detail"] == ("32.0 GiB for Docker; the lab's 2 worker "
                                            "containers need about 0.6 GiB")
    assert found["cpu"][0]["detail"] == "8 CPUs (need 1)"
    assert not {"kind", "disk", "inotify watches", "ports", "subnets", "git"} & set(found)


def test_container_workers_on_an_engine_that_refuses_privileged_fail(
        tmp_path: Path, docker: tuple[FakeWorld, list[str]]) -> None:
    from tests.existing.kmock_kamaji import KamajiCluster

    world, _connected = docker
    world.privileged_refused = "unable to apply caps: operation not permitted"
    world.host_images.add("busybox:1")  # an image already on the host to probe with
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        cluster.kubeconfig.chmod(0o600)
        code, found, _err = _doctor("-p", str(_kamaji_profile(tmp_path, "containers")),
                                    "--kubeconfig", str(cluster.kubeconfig), "--no-pull")
    assert code == 4
    assert [f["check"] for f in _fails(found)] == ["privileged"]
    refused = found["privileged"][0]
    assert "unable to apply caps" in refused["detail"]
    assert refused["fix"].startswith("the lab's worker containers (kindest/node, with kind's "
                                     "node options) need --privileged")
    # --no-pull: the worker image was not pulled; the probe used an image already there
    assert not any(c.startswith("docker.pull:") for c in world.faults.calls)
    assert found["node image"][0]["status"] == "warn"


def test_no_load_balancer_is_its_own_line(tmp_path: Path) -> None:
    from tests.existing.kmock_kamaji import KamajiCluster

    with KamajiCluster(tmp_path, load_balancer=False).running(TENANTS) as cluster:
        code, found, _err = _doctor("-p", str(_kamaji_profile(tmp_path, "machines")),
                                    "--kubeconfig", str(cluster.kubeconfig))
    assert code == 4
    assert [f["check"] for f in _fails(found)] == ["load balancer"]
    assert found["load balancer"][0]["detail"].startswith("no LoadBalancer: ")
