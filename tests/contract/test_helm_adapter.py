"""Contract tests of `PyHelm3Gateway` against the real helm binary (marker `helm`).

No cluster here: `template` and `show` run on real helm with the local charts in
tests/data/charts; cluster commands go through tests/contract/fakehelm.py, which records the
exact argv and stdin, lets real helm parse that command line, then answers from a release store.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyhelm3.client import mergeconcat

from gpulab.adapters.base import HelmRelease
from gpulab.adapters.helm import PyHelm3Gateway, chart_reference
from gpulab.errors import AdapterError, HostError
from gpulab.stacks.common import deep_merge
from tests import host

from .conftest import CHARTS

if TYPE_CHECKING:
    from gpulab.adapters.base import HelmGateway

FAKEHELM = Path(__file__).with_name("fakehelm.py")
PROBE = CHARTS / "gpulab-probe"
REPO_URL = "https://charts.gpulab.test"


def probe(**changes: Any) -> HelmRelease:
    release = HelmRelease(
        name="probe",
        namespace="gpulab-probe",
        chart="gpulab-probe",
        repo=REPO_URL,
        version="0.3.1",
        values={
            "scheduler": {"kubeScheduler": {"image": {"registry": "registry.k8s.io",
                                                      "repository": "kube-scheduler",
                                                      "tag": "v1.36.4"}}},
            "extraArgs": ["--debug"],
            "resources": None,
            "mockDevicePlugin": {"enabled": True},
        },
    )
    return replace(release, **changes)


def _as_gateway(gateway: PyHelm3Gateway) -> HelmGateway:
    return gateway  # mypy: PyHelm3Gateway implements the HelmGateway protocol


def local_probe(**changes: Any) -> HelmRelease:
    return probe(chart=str(PROBE), repo=None, **changes)


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


@dataclass
class FakeHelm:
    executable: Path
    state: Path

    def calls(self) -> list[dict[str, Any]]:
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def argv(self, *verb: str) -> list[list[str]]:
        return [c["argv"] for c in self.calls() if c["argv"][: len(verb)] == list(verb)]

    def fail_next_upgrade(self, stderr: str) -> None:
        (self.state / "fail-upgrade").write_text(stderr)

    def set_status(self, namespace: str, name: str, status: str) -> None:
        path = self.state / "releases.json"
        releases = json.loads(path.read_text())
        releases[f"{namespace}/{name}"][-1]["info"]["status"] = status
        path.write_text(json.dumps(releases))


@pytest.fixture
def fake_helm(tmp_path: Path, helm_bin: str) -> FakeHelm:
    state = tmp_path / "fakehelm"
    state.mkdir()
    exe = tmp_path / "bin" / "helm"
    exe.parent.mkdir()
    env = {"FAKEHELM_STATE": state, "FAKEHELM_REAL": helm_bin, "FAKEHELM_CHARTS": CHARTS}
    assignments = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())
    exe.write_text(f'#!/bin/sh\n{assignments} exec {shlex.quote(sys.executable)} '
                   f'{shlex.quote(str(FAKEHELM))} "$@"\n')
    exe.chmod(0o755)
    return FakeHelm(exe, state)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    return tmp_path / "management.kubeconfig"  # never read: no cluster is contacted


@pytest.fixture
def gateway(fake_helm: FakeHelm, kubeconfig: Path) -> PyHelm3Gateway:
    return PyHelm3Gateway(kubeconfig, executable=str(fake_helm.executable))


# --------------------------------------------------------------------------- the binary


def test_missing_helm_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "find_helm", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="needs a helm binary: GPULAB_HOST_SETUP=1 "):
        host.require_helm()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="needs a helm binary: GPULAB_HOST_SETUP=1 "):
        host.require_helm()


def test_missing_helm_is_a_host_error(tmp_path: Path) -> None:
    with pytest.raises(HostError) as info:
        PyHelm3Gateway(None, executable=str(tmp_path / "no-helm"))
    assert "helm not found" in str(info.value)
    assert info.value.hint is not None
    assert "gpulab doctor --install-tools" in info.value.hint
    with pytest.raises(HostError):
        PyHelm3Gateway(None, executable="gpulab-no-such-helm")


def test_broken_helm_is_a_host_error(tmp_path: Path) -> None:
    exe = tmp_path / "helm"
    exe.write_text("#!/bin/sh\necho 'exec format error' >&2\nexit 126\n")
    exe.chmod(0o755)
    with pytest.raises(HostError, match="did not answer `helm version`: exec format error"):
        PyHelm3Gateway(None, executable=str(exe))


@pytest.mark.helm
def test_real_helm_is_found_on_path(helm_bin: str) -> None:
    gateway = PyHelm3Gateway(None)
    assert Path(gateway.executable) == Path(helm_bin).resolve()
    assert gateway.version.split(".")[0] in {"3", "4"}


# --------------------------------------------------------------------------- template (real helm)


@pytest.mark.helm
def test_template_reflects_the_merged_values(helm_bin: str) -> None:
    gateway = PyHelm3Gateway(None)

    docs = gateway.template(local_probe(), kube_version="v1.36.4")

    values = json.loads(by_kind(docs, "ConfigMap")["data"]["values.json"])
    container = by_kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.k8s.io/kube-scheduler:v1.36.4"
    # Lists replace the chart's default list; they are not concatenated with it.
    assert container["args"] == ["--node-lock-expire=5m", "--debug"]
    assert values["extraArgs"] == ["--debug"]
    # null removes a chart default (Kamaji's `resources: null`).
    assert "resources" not in container
    assert "resources" not in values
    # Chart defaults for keys gpulab does not set are kept.
    assert values["image"] == {"registry": "docker.io", "repository": "gpulab/probe", "tag": ""}
    assert by_kind(docs, "DaemonSet")["metadata"]["namespace"] == "gpulab-probe"
    annotations = by_kind(docs, "ConfigMap")["metadata"]["annotations"]
    assert annotations["gpulab.dev/kube-version"] == "v1.36.4"


@pytest.mark.helm
def test_one_merged_dict_not_pyhelm3_concatenation(helm_bin: str) -> None:
    """Why the adapter passes ONE dict: pyhelm3 would append profile lists to gpulab's."""
    ours = {"extraArgs": ["-v=4"], "scheduler": {"nodeLockExpire": "5s"}}
    profile = {"extraArgs": ["-v=2"]}
    assert mergeconcat(ours, profile)["extraArgs"] == ["-v=4", "-v=2"]  # pyhelm3 with 2 dicts
    merged = deep_merge(ours, profile)
    assert merged == {"extraArgs": ["-v=2"], "scheduler": {"nodeLockExpire": "5s"}}

    docs = PyHelm3Gateway(None).template(local_probe(values=merged))

    container = by_kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--node-lock-expire=5s", "-v=2"]


@pytest.mark.helm
def test_template_errors_carry_helms_last_line(helm_bin: str) -> None:
    with pytest.raises(AdapterError) as info:
        PyHelm3Gateway(None).template(local_probe(), kube_version="v1.29.0")
    message = str(info.value)
    assert message.startswith("helm template probe (")
    assert message.endswith(
        "failed: chart requires kubeVersion: >= 1.30.0-0 which is incompatible with "
        "Kubernetes v1.29.0"
    )
    assert "\n" not in message
    assert info.value.output  # helm's full stderr is kept for `--verbose` / logs


@pytest.mark.helm
def test_sync_facade_inside_a_running_event_loop(helm_bin: str) -> None:
    gateway = PyHelm3Gateway(None)

    async def from_a_coroutine() -> list[dict[str, Any]]:
        return gateway.template(local_probe())  # must not nest asyncio.run in this loop

    docs = asyncio.run(from_a_coroutine())
    assert {d["kind"] for d in docs} == {"ConfigMap", "Deployment", "DaemonSet"}


# --------------------------------------------------------------------------- install (fake cluster)


@pytest.mark.helm
def test_install_runs_exactly_this_helm_command(
    gateway: PyHelm3Gateway, fake_helm: FakeHelm, kubeconfig: Path
) -> None:
    release = probe()

    gateway.install(release, timeout_seconds=420)

    kc = ["--kubeconfig", str(kubeconfig)]
    # pyhelm3 passes the repo as given to `show`, and normalised by pydantic (a trailing slash)
    # to `upgrade`; helm treats both alike.
    assert fake_helm.argv("show") == [
        ["show", "chart", "gpulab-probe", "--repo", REPO_URL, "--version", "0.3.1", *kc],
    ]
    upgrades = [c for c in fake_helm.calls() if c["argv"][0] == "upgrade"]
    assert [c["argv"] for c in upgrades] == [[
        "upgrade", "probe", "gpulab-probe",
        "--history-max", "10", "--install", "--output", "json",
        "--timeout", "420s",
        "--values", "-",
        "--create-namespace",
        "--namespace", "gpulab-probe",
        "--repo", f"{REPO_URL}/",
        "--version", "0.3.1",
        "--wait", "--wait-for-jobs",
        *kc,
    ]]
    # The values travel once, as one JSON document on stdin, exactly as rendered.
    assert json.loads(upgrades[0]["stdin"]) == release.values


@pytest.mark.helm
def test_install_refuses_a_chart_that_is_not_the_pin(
    gateway: PyHelm3Gateway, fake_helm: FakeHelm
) -> None:
    # helm ignores --version for a local chart directory: the adapter checks the pin itself.
    with pytest.raises(AdapterError, match=r"resolved to version 0\.3\.1, .* pins 9\.9\.9"):
        gateway.install(local_probe(version="9.9.9"))
    assert fake_helm.argv("show") != []
    assert fake_helm.argv("upgrade") == []


@pytest.mark.helm
def test_installed_compares_status_chart_version_and_values(
    gateway: PyHelm3Gateway, fake_helm: FakeHelm
) -> None:
    release = probe()
    assert gateway.installed(release) is False

    gateway.install(release)

    assert gateway.installed(release) is True
    assert gateway.installed(replace(release, values={**release.values, "extraArgs": []})) is False
    assert gateway.installed(replace(release, version="0.3.2")) is False
    assert gateway.installed(replace(release, chart="other-chart")) is False
    fake_helm.set_status("gpulab-probe", "probe", "failed")
    assert gateway.installed(release) is False

    assert fake_helm.argv("status")[0][:5] == ["status", "probe", "--output", "json",
                                               "--namespace"]
    assert fake_helm.argv("get", "values")[0][:5] == ["get", "values", "probe", "--output", "json"]


@pytest.mark.helm
def test_reinstall_is_an_upgrade(gateway: PyHelm3Gateway, fake_helm: FakeHelm) -> None:
    gateway.install(probe())
    gateway.install(probe(values={"extraArgs": ["-v=2"]}))

    assert gateway.installed(probe(values={"extraArgs": ["-v=2"]})) is True
    assert len(fake_helm.argv("upgrade")) == 2


@pytest.mark.helm
def test_uninstall_is_idempotent(
    gateway: PyHelm3Gateway, fake_helm: FakeHelm, kubeconfig: Path
) -> None:
    gateway.install(probe())

    gateway.uninstall("probe", "gpulab-probe")
    gateway.uninstall("probe", "gpulab-probe")

    assert gateway.installed(probe()) is False
    assert fake_helm.argv("uninstall") == [
        ["uninstall", "probe", "--timeout", "5m", "--namespace", "gpulab-probe", "--wait",
         "--kubeconfig", str(kubeconfig)],
    ] * 2


@pytest.mark.helm
def test_helm_failures_are_one_line_adapter_errors(
    gateway: PyHelm3Gateway, fake_helm: FakeHelm
) -> None:
    fake_helm.fail_next_upgrade(
        "level=WARN msg=\"waiting for resources\"\n"
        "Error: UPGRADE FAILED: resource Deployment/gpulab-probe/probe-scheduler not ready: "
        "context deadline exceeded\n\nUse --debug flag to render out invalid YAML\n"
    )
    with pytest.raises(AdapterError) as info:
        gateway.install(probe())

    assert str(info.value) == (
        "helm upgrade --install probe (gpulab-probe 0.3.1) in namespace gpulab-probe failed: "
        "UPGRADE FAILED: resource Deployment/gpulab-probe/probe-scheduler not ready: "
        "context deadline exceeded"
    )
    assert "waiting for resources" in info.value.output


# --------------------------------------------------------------------------- chart references


@pytest.mark.parametrize(("chart", "repo", "expected"), [
    ("hami", "https://project-hami.github.io/HAMi/", ("hami", "https://project-hami.github.io/HAMi/")),
    ("oci://ghcr.io/nvidia/gpu-operator", None, ("oci://ghcr.io/nvidia/gpu-operator", None)),
    ("kai-scheduler", "oci://ghcr.io/nvidia/kai-scheduler/",
     ("oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler", None)),
])
def test_chart_reference_forms(chart: str, repo: str | None, expected: tuple[str, str | None]) -> None:
    assert chart_reference(probe(chart=chart, repo=repo)) == expected


def test_chart_reference_refuses_repo_aliases() -> None:
    with pytest.raises(AdapterError, match="bare name"):
        chart_reference(probe(chart="nvidia/gpu-operator", repo="https://helm.ngc.nvidia.com/nvidia"))
    with pytest.raises(AdapterError, match="neither a name with a repo URL"):
        chart_reference(probe(chart="nvidia/gpu-operator", repo=None))
    assert chart_reference(local_probe()) == (PROBE.resolve(), None)


def test_null_values_do_not_make_a_release_look_changed() -> None:
    from gpulab.adapters.helm import _normalized

    assert _normalized({"resources": None, "image": {"tag": "x"}}) == _normalized(
        {"image": {"tag": "x"}})
    assert _normalized({"resources": {"limits": {}}}) != _normalized({"resources": None})


@pytest.mark.helm
def test_releases_lists_every_namespace(gateway: PyHelm3Gateway, fake_helm: FakeHelm) -> None:
    assert gateway.releases() == []
    gateway.install(probe())
    [release] = gateway.releases()
    assert release["name"] == "probe" and release["namespace"] == "gpulab-probe"
    assert (release["chart"], release["version"], release["status"]) == (
        "gpulab-probe", "0.3.1", "deployed")
    listed = fake_helm.argv("list")[0]
    assert "--all-namespaces" in listed and "--failed" in listed and "--pending" in listed


def test_a_helm_that_never_answers_is_a_host_error_within_its_deadline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyhelm3 asks `helm version` with no deadline; gpulab asks it with one."""
    import time

    from gpulab.adapters import helm as helm_adapter

    exe = tmp_path / "helm"
    exe.write_text("#!/bin/sh\nsleep 30\n")
    exe.chmod(0o755)
    monkeypatch.setattr(helm_adapter, "_ENV_TIMEOUT", 1)
    started = time.monotonic()
    with pytest.raises(HostError) as info:
        PyHelm3Gateway(None, executable=str(exe))
    assert time.monotonic() - started < 10
    assert info.value.hint is not None and "gpulab doctor --install-tools" in info.value.hint
    assert str(info.value) == (f"helm at {exe} did not answer `helm version` within 1s "
                               f"({info.value.hint})")


def test_the_helm_version_is_read_as_pyhelm3_reads_it(tmp_path: Path) -> None:
    exe = tmp_path / "helm"
    exe.write_text("#!/bin/sh\n[ \"$1 $2 $3\" = 'version --template {{ .Version }}' ] || exit 3\n"
                   "printf 'v4.1.4'\n")
    exe.chmod(0o755)
    gateway = PyHelm3Gateway(None, executable=str(exe))
    assert gateway.version == "4.1.4"
