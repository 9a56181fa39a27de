"""Each Docker engine, from its own `docker info`/`docker version` answers (copied from upstream:
tests/data/pinned/engines/engines.yaml, SOURCES.md): what gpulab calls it, the route it takes
to the lab's APIs, the ports, the SANs, the saved kubeconfig's server and doctor's verdict."""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.adapters.base import RuntimeInfo
from gpulab.adapters.docker_runtime import DockerRuntime
from gpulab.docker_engines import classify, route_text
from gpulab.doctor import HostSnapshot, diagnose
from gpulab.providers.kind import cluster_facts
from gpulab.providers.kind.config import kind_config
from gpulab.stacks.kamaji_hami import api_route, render
from gpulab.stacks.kamaji_hami.steps import build_steps
from tests import upstream_docker

ENGINES_DIR = Path(__file__).resolve().parents[1] / "data" / "pinned" / "engines"


@functools.cache
def _engines() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ENGINES_DIR / "engines.yaml").read_text())
    return data


def _swagger_version() -> dict[str, Any]:
    """`GET /version` as moby's API documents it: every SystemVersion example, and one
    Components entry of the item's examples."""
    props = upstream_docker.swagger()["definitions"]["SystemVersion"]["properties"]
    out = {name: spec["example"] for name, spec in props.items() if "example" in spec}
    item = props["Components"]["items"]["properties"]
    out["Components"] = [{"Name": item["Name"]["example"], "Version": item["Version"]["example"]}]
    return out


def answers(engine: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(info, version) of `engine`, as engines.yaml builds them."""
    spec = _engines()[engine]
    base = {"docker-cli-no-swarm": lambda: json.loads(
                (ENGINES_DIR / "docker-cli_0e741ace_docker-info-no-swarm.json.golden").read_text()),
            "swagger": upstream_docker.system_info,
            "none": dict}[spec["base"]]()
    info = {**copy.deepcopy(base), **spec["info"]}
    version = _swagger_version() if spec["version"] == "swagger" else spec["version"]
    return info, version


class _Api:
    """docker-py's APIClient as far as DockerRuntime.info() asks it."""

    def __init__(self, info: dict[str, Any], version: dict[str, Any]) -> None:
        self._info, self._version = info, version

    def info(self) -> dict[str, Any]:
        return self._info

    def version(self) -> dict[str, Any]:
        return self._version


def runtime_info(engine: str) -> RuntimeInfo:
    """What gpulab's Docker adapter makes of `engine`'s answers."""
    return DockerRuntime(_Api(*answers(engine))).info()


@dataclass(frozen=True)
class Host:
    engine: str  # the fixture
    host_os: str  # sys.platform of the machine gpulab runs on
    kind: str  # what gpulab calls it
    routes_nodes: bool = False


HOSTS = [
    Host("linux-rootful", "linux", "linux", routes_nodes=True),
    Host("rootless", "linux", "rootless"),
    Host("podman", "linux", "podman"),
    Host("docker-desktop", "darwin", "docker-desktop"),
    Host("docker-desktop", "win32", "docker-desktop"),
    Host("docker-desktop", "linux", "docker-desktop"),  # Docker Desktop for Linux: a VM too
    Host("docker-desktop-version", "darwin", "docker-desktop"),
    Host("orbstack", "darwin", "orbstack"),
    Host("colima", "darwin", "colima"),
    Host("colima-profile", "linux", "colima"),
    Host("linux-rootful", "darwin", "unknown"),  # a plain Linux VM's engine seen from a Mac
]


def _snapshot(info: RuntimeInfo, host: Host, **changes: Any) -> HostSnapshot:
    base: dict[str, Any] = {
        "docker": info, "host_os": host.host_os, "docker_local": True,
        "privileged_probe": "", "probe_image": "kindest/node:v1.36.4",
        "disk_free_bytes": 200 * 1024**3, "kind_version": "v0.33.0", "helm_version": "v3.19.2"}
    base.update(changes)
    return HostSnapshot(**base)


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: f"{h.engine}@{h.host_os}")
def test_each_engine_its_route_ports_sans_kubeconfig_and_verdict(host: Host,
                                                                 kamaji_profile: Any) -> None:
    info = runtime_info(host.engine)
    engine = classify(info, local=True, host_os=host.host_os)
    assert engine.kind == host.kind, engine
    # the route: ports published on 127.0.0.1 everywhere; the kind network only on Linux rootful
    assert engine.routes_nodes is host.routes_nodes
    assert route_text(engine).startswith("ports published on 127.0.0.1")
    # the ports kind publishes, the same on every engine
    needs = render.cluster_needs(kamaji_profile)
    mappings = kind_config(kamaji_profile, "lab", needs)["nodes"][0]["extraPortMappings"]
    assert [(m["listenAddress"], m["hostPort"]) for m in mappings] == [
        ("127.0.0.1", 30061), ("127.0.0.1", 30062)]
    # the saved kubeconfig's server and the certificate that covers it
    facts = cluster_facts(kamaji_profile, "lab", needs, None)
    step = next(s for s in build_steps(kamaji_profile, "lab", facts)
                if s.name == "tenant-a/control-plane")
    saved = next(a for a in step.describe() if a.name == "tenant-a.kubeconfig")
    assert saved.body["server"] == "https://127.0.0.1:30061"
    tcp = next(a for a in step.describe() if a.name == "TenantControlPlane/tenant-a").body
    sans = api_route.api_server_sans(kamaji_profile, kamaji_profile.tenants[0], "172.18.255.200",
                                     tcp["spec"]["networkProfile"].get("certSANs", []))
    assert "127.0.0.1" in sans
    # doctor's verdict
    found = {f.check: f for f in diagnose(_snapshot(info, host), kamaji_profile, "lab")}
    verdict = found["engine"]
    if host.kind == "podman":
        assert verdict.status == "fail"
        assert verdict.detail.startswith("Podman") and "not supported" in verdict.detail
        assert "\n" not in verdict.detail and "Docker Desktop, colima or OrbStack" in verdict.fix
    elif host.kind == "unknown":
        assert verdict.status == "unknown" and "does not recognise" in verdict.detail
        assert "docker info" in verdict.fix
    else:
        assert verdict.status == "ok", verdict
        assert verdict.detail.startswith(engine.label)
        assert "127.0.0.1" in verdict.detail
        assert ("route here too" in verdict.detail) is host.routes_nodes


@pytest.mark.parametrize("host", [h for h in HOSTS if h.kind != "podman"],
                         ids=lambda h: f"{h.engine}@{h.host_os}")
def test_a_privileged_refusal_says_what_fits_the_engine(host: Host, kamaji_profile: Any) -> None:
    info = runtime_info(host.engine)
    found = {f.check: f for f in diagnose(
        _snapshot(info, host, privileged_probe="operation not permitted"), kamaji_profile, "x")}
    fix = found["privileged"].fix
    assert found["privileged"].status == "fail"
    if host.kind in ("docker-desktop", "orbstack", "colima", "linux"):
        assert "use rootful Docker" not in fix, fix
    if host.kind in ("docker-desktop", "orbstack", "colima"):
        assert classify(info, local=True, host_os=host.host_os).label in fix
    if host.kind == "rootless":
        assert "kind.sigs.k8s.io/docs/user/rootless" in fix  # kind's own words first


def test_podman_is_refused_before_anything_else_in_one_line(kamaji_profile: Any) -> None:
    info = runtime_info("podman")
    host = next(h for h in HOSTS if h.engine == "podman")
    failed = [f for f in diagnose(_snapshot(info, host), kamaji_profile, "x")
              if f.status == "fail"]
    assert failed[0].check == "engine"
    assert "kind runs Podman through its podman provider" in failed[0].detail


def test_an_engine_reached_over_the_network_is_not_taken_for_this_host() -> None:
    info = runtime_info("linux-rootful")
    assert classify(info, local=False, host_os="linux").kind == "unknown"
    assert classify(info, local=True, host_os="linux").kind == "linux"


def test_each_fact_alone_tells_its_engine() -> None:
    """One fact at a time, on an otherwise plain Linux engine's answers."""
    plain = runtime_info("linux-rootful")
    from dataclasses import replace

    def kind(**change: Any) -> str:
        return classify(replace(plain, **change), local=True, host_os="linux").kind

    assert kind() == "linux"
    assert kind(os="Docker Desktop") == "docker-desktop"
    assert kind(name="docker-desktop") == "docker-desktop"
    assert kind(product="Docker Desktop 4.33.0 (160616)") == "docker-desktop"
    assert kind(os="OrbStack") == "orbstack"
    assert kind(name="orbstack") == "orbstack"
    assert kind(kernel="6.1.23-orbstack-00113-g6614aaccb205-dirty") == "orbstack"
    assert kind(name="colima") == "colima"
    assert kind(name="colima-dev") == "colima"
    assert kind(name="colimator") == "linux"
    assert kind(security_options=("name=rootless",)) == "rootless"
    assert kind(components=("Podman Engine",)) == "podman"
    assert kind(components=("Universal Control Plane",)) == "unknown"


@pytest.mark.parametrize(("engine", "says"), [
    ("linux-rootful", "route on Docker Engine (rootful) on this Linux host: tenant-a "
                      "https://127.0.0.1:30061, tenant-b https://127.0.0.1:30062, ports published "
                      "on 127.0.0.1 (the kind network's addresses route here too"),
    ("docker-desktop", "route on Docker Desktop: tenant-a https://127.0.0.1:30061, tenant-b "
                       "https://127.0.0.1:30062, ports published on 127.0.0.1 (the kind "
                       "network's addresses do not reach this host)"),
])
def test_plan_says_which_route_on_this_engine(engine: str, says: str, kamaji_profile: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.providers import kind

    monkeypatch.setattr("sys.platform", "linux")

    class Reader:
        def engine(self) -> RuntimeInfo:
            return runtime_info(engine)

    assert kind._route_note(Reader(), render.cluster_needs(kamaji_profile)).startswith(says)


def test_plan_without_the_engines_answers_says_so(kamaji_profile: Any) -> None:
    from gpulab.providers import kind

    class Reader:  # no engine(): an older reader, or a failed GET
        pass

    note = kind._route_note(Reader(), render.cluster_needs(kamaji_profile))  # type: ignore[arg-type]
    assert note.endswith("ports published on 127.0.0.1 (engine not known)")
