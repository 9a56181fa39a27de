"""Images against the engine's platform (issue #31 item 3): `docker info`'s Architecture mapped as
moby maps `uname -m`, each image of a profile looked up in gpulab's table, and what `plan`,
`doctor` and `up` say on arm64, amd64 and an architecture gpulab does not know, before anything
is created.

Engine answers: moby's GET /info example (docker-v29.7.2 api/swagger.yaml SystemInfo, read by
tests/upstream_docker.py), whose Architecture is "x86_64"; the arm64 answer changes that one
field to "aarch64", the `uname -m` of arm64 Linux that moby reports (daemon/info.go:65,
daemon/internal/platform/platform_linux.go:59-66; its contrib/download-frozen-image-v2.sh:236
names the same value)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab import core, platforms
from gpulab.adapters.base import RuntimeInfo
from gpulab.cli import app
from gpulab.doctor.platforms import platform_findings
from gpulab.stacks import load_profile
from tests.fakes import FakeRuntime, FakeWorld
from tests.upstream_docker import system_info

runner = CliRunner()
AMD64 = str(system_info()["Architecture"])  # "x86_64"
ARM64 = "aarch64"
NODE = "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
COREDNS = "registry.k8s.io/coredns/coredns"  # the one image whose platforms are unconfirmed


def _profile(name: str) -> Any:
    return load_profile(name).profile


def _amd64_only(image: str) -> platforms.Table:
    """The real table with one image published for linux/amd64 only (none is, at the pins)."""
    real = platforms.load_table()
    images = dict(real.images)
    images[image] = dataclasses.replace(images[image], platforms=("linux/amd64",))
    return platforms.Table(images, real.stacks)


def _injected(image: str) -> Any:
    """A `load_table` replacement: the real table, `image` amd64-only (built before patching)."""
    table = _amd64_only(image)
    return lambda: table


# --------------------------------------------------------------------------- the mapping


@pytest.mark.parametrize(("architecture", "arch"), [
    (AMD64, "amd64"), ("aarch64", "arm64"), ("arm64", "arm64"), ("armv7l", "arm"),
    ("s390x", "s390x"), ("ppc64le", "ppc64le"), (" AARCH64 ", "arm64")])
def test_dockers_architecture_maps_to_the_image_platform(architecture: str, arch: str) -> None:
    assert platforms.engine_arch(architecture) == (arch, "")


@pytest.mark.parametrize(("architecture", "why"), [
    ("", "Docker did not report its Architecture"),
    ("mips64", "Docker reports Architecture 'mips64', which gpulab cannot map")])
def test_an_architecture_gpulab_does_not_know_is_unknown_not_amd64(architecture: str,
                                                                  why: str) -> None:
    arch, reason = platforms.engine_arch(architecture)
    assert arch == ""
    assert reason.startswith(why)


# --------------------------------------------------------------------------- the verdict


def test_on_amd64_every_image_of_vcluster_kai_is_published() -> None:
    seen = platforms.verdict(_profile("vcluster-kai"), AMD64)
    assert (seen.arch, seen.missing, seen.unknown) == ("amd64", (), ())
    assert seen.count == len({r for refs in platforms.load_table().stacks["vcluster-kai"].values()
                              for r in refs})


@pytest.mark.parametrize("architecture", [AMD64, ARM64])
def test_kamaji_hami_misses_nothing_and_says_which_image_is_unconfirmed(architecture: str) -> None:
    seen = platforms.verdict(_profile("kamaji-hami"), architecture)
    assert seen.missing == ()
    assert [what for what, _why in seen.unknown] == [COREDNS]
    assert "kubernetes/kubernetes" in seen.unknown[0][1]  # the reason, not a bare "unknown"


def test_on_arm64_an_image_without_arm64_is_named_with_what_to_do() -> None:
    seen = platforms.verdict(_profile("vcluster-kai"), ARM64, _amd64_only(NODE))
    assert seen.missing == ((NODE, "linux/amd64", platforms.ON_AMD64),)
    assert seen.plan_notes() == [
        f"up would refuse: {NODE} is not published for linux/arm64 (upstream builds "
        f"linux/amd64): run the lab on an x86_64 (linux/amd64) Docker host"]


def test_on_s390x_the_node_image_kind_builds_for_amd64_and_arm64_only_is_named() -> None:
    seen = platforms.verdict(_profile("vcluster-kai"), "s390x")
    missing = {image: published for image, published, _fix in seen.missing}
    assert missing[NODE] == "linux/amd64, linux/arm64"
    assert "quay.io/calico/node:v3.31.2" not in missing  # Calico builds s390x (not in this stack)
    kamaji = platforms.verdict(_profile("kamaji-hami"), "s390x")
    names = {image for image, _p, _f in kamaji.missing}
    assert NODE in names and "quay.io/calico/node:v3.31.2" not in names


def test_a_pin_the_profile_changed_is_unknown_not_passed() -> None:
    profile = _profile("kamaji-hami")
    comps = profile.components
    bumped = comps.cert_manager.model_copy(update={"chart": comps.cert_manager.chart.model_copy(
        update={"version": "v1.22.0"})})
    changed = profile.model_copy(update={"components": comps.model_copy(
        update={"cert_manager": bumped})})
    seen = platforms.verdict(changed, ARM64)
    changed_pins = [what for what, why in seen.unknown if "a pin the profile changed" in why]
    assert changed_pins == ["chart cert-manager v1.22.0"]


def test_an_unknown_architecture_is_one_unknown_line_and_no_pass() -> None:
    seen = platforms.verdict(_profile("vcluster-kai"), "")
    assert (seen.arch, seen.missing, seen.count) == ("", (), 0)
    assert seen.plan_notes() == ["image platforms unknown, because Docker did not report its "
                                 "Architecture"]


# --------------------------------------------------------------------------- doctor's findings


def _info(architecture: str) -> RuntimeInfo:
    return RuntimeInfo("29.7.2", "1.52", 8, 32 * 1024**3, "Debian", architecture=architecture)


def test_doctor_passes_amd64_with_one_ok_line() -> None:
    [only] = platform_findings(_info(AMD64), _profile("vcluster-kai"))
    assert (only.check, only.status) == ("image platform", "ok")
    assert "published for linux/amd64" in only.detail


def test_doctor_fails_each_missing_image_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platforms, "load_table", _injected(NODE))
    found = platform_findings(_info(ARM64), _profile("vcluster-kai"))
    assert [(f.status, f.detail, f.fix) for f in found] == [
        ("fail", f"{NODE} is not published for linux/arm64 (upstream builds linux/amd64)",
         platforms.ON_AMD64)]


def test_doctor_says_unknown_and_why_never_ok_for_an_unknown_architecture() -> None:
    found = platform_findings(_info("mips64"), _profile("vcluster-kai"))
    assert [f.status for f in found] == ["warn"]
    assert "unknown, because Docker reports Architecture 'mips64'" in found[0].detail


# --------------------------------------------------------------------------- through the CLI


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> FakeWorld:
    """Docker is a fake engine (what doctor, plan and up's preflight read); tools absent."""
    from gpulab.adapters.docker_endpoint import DockerEndpoint

    world = FakeWorld(images={NODE}, host_images={NODE})
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(core, "docker_endpoint", lambda: DockerEndpoint("unix:///s"))
    monkeypatch.setattr(core, "connect_runtime", lambda *_a, **_k: FakeRuntime(world))
    monkeypatch.setattr(core, "read_docker", lambda *_a, **_k: FakeRuntime(world))
    monkeypatch.setattr("gpulab.tools.find_tool", lambda _name: None)
    return world


def _doctor(profile: str) -> dict[str, list[dict[str, str]]]:
    result = runner.invoke(app, ["doctor", "-p", profile, "--no-pull", "-o", "json"])
    assert result.exit_code in (0, 4), result.stderr
    found: dict[str, list[dict[str, str]]] = {}
    for finding in json.loads(result.stdout):
        found.setdefault(finding["check"], []).append(finding)
    return found


def test_doctor_on_arm64_names_the_missing_image_and_the_fix(
        engine: FakeWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    engine.architecture = ARM64
    monkeypatch.setattr(platforms, "load_table", _injected(NODE))
    [line] = _doctor("vcluster-kai")["image platform"]
    assert line["status"] == "fail"
    assert line["detail"].startswith(f"{NODE} is not published for linux/arm64")
    assert line["fix"] == platforms.ON_AMD64


def test_doctor_on_arm64_with_the_real_table_warns_only_for_the_unconfirmed_image(
        engine: FakeWorld) -> None:
    engine.architecture = ARM64
    lines = _doctor("kamaji-hami")["image platform"]
    assert [(f["status"], f["detail"].split(":")[0]) for f in lines] == [
        ("ok", f"{lines[0]['detail'].split(':')[0]}"), ("warn", COREDNS)]
    assert "published for linux/arm64" in lines[0]["detail"]


def test_doctor_on_amd64_passes(engine: FakeWorld) -> None:
    engine.architecture = AMD64
    [line] = _doctor("vcluster-kai")["image platform"]
    assert line["status"] == "ok"


def test_doctor_on_an_unknown_architecture_says_unknown_because(engine: FakeWorld) -> None:
    engine.architecture = ""
    [line] = _doctor("vcluster-kai")["image platform"]
    assert line["status"] == "warn"
    assert line["detail"] == ("every image of the profile: unknown, because Docker did not "
                              "report its Architecture")


def _plan_notes(profile: str) -> list[str]:
    """plan's notes but its route line (tests/unit/test_engines.py reads that one)."""
    result = runner.invoke(app, ["plan", "-p", profile])
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines()
            if line.startswith("note: ") and not line.startswith("note: route")]


def test_plan_on_arm64_says_up_would_refuse_and_names_the_image(
        engine: FakeWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    engine.architecture = ARM64
    monkeypatch.setattr(platforms, "load_table", _injected(NODE))
    assert _plan_notes("vcluster-kai") == [
        f"note: up would refuse: {NODE} is not published for linux/arm64 (upstream builds "
        f"linux/amd64): {platforms.ON_AMD64}"]


def test_plan_on_amd64_and_arm64_with_the_real_table(engine: FakeWorld) -> None:
    for architecture in (AMD64, ARM64):
        engine.architecture = architecture
        assert _plan_notes("vcluster-kai") == []
        assert [n for n in _plan_notes("kamaji-hami") if "image platform" in n] == [
            f"note: image platform: {COREDNS}: unknown (gpulab doctor says why; docs/images.md)"]


def test_plan_on_an_unknown_architecture_says_unknown_because(engine: FakeWorld) -> None:
    engine.architecture = "sparc64"
    assert _plan_notes("vcluster-kai") == [
        "note: image platforms unknown, because Docker reports Architecture 'sparc64', which "
        "gpulab cannot map to an image platform"]


def test_up_on_arm64_stops_before_creating_anything(
        engine: FakeWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.errors import PreflightError

    engine.architecture = ARM64
    monkeypatch.setattr(platforms, "load_table", _injected(NODE))
    with pytest.raises(PreflightError) as caught:
        core.up(_profile("vcluster-kai"), "arm", lambda _event: None)
    assert any(problem.startswith(f"image platform: {NODE} is not published for linux/arm64")
               for problem in caught.value.problems)
    assert engine.containers == {}  # nothing created


def test_plan_when_dockers_info_cannot_be_read_says_so(
        engine: FakeWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.errors import AdapterError

    class NoInfo(FakeRuntime):
        def architecture(self) -> str:
            raise AdapterError("engine info: Docker answered 500")

    monkeypatch.setattr(core, "read_docker", lambda *_a, **_k: NoInfo(engine))
    assert _plan_notes("vcluster-kai") == [
        "note: image platforms unknown, because Docker's info could not be read (engine info: "
        "Docker answered 500)"]
