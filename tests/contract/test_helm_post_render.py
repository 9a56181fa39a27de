"""gpulab's post-renderer run by the REAL helm 3 and helm 4 (marker `helm`): every object of
gpulab's releases of the pinned charts (tests/data/pinned/charts) carries the lab's label, and
nothing else of what `helm template` renders changes (compared, parsed, with a render without
it). Installs go through tests/contract/fakehelm.py: the real helm parses the exact command
line (helm 4 resolves the plugin while parsing flags) and renders the stored manifest with the
same post-renderer.

helm 4 is .cache/ci-bin/helm (v4.1.4); helm 3 is .cache/ci-bin/helm3, v3.19.0 from a PyPI
wheel (.ci/setup-host.sh), the newest helm 3 there: its pkg/postrender, cmd/helm/flags.go and
pkg/action are those of gpulab's pin v3.19.2 (`git diff v3.19.0 v3.19.2` is empty for them).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from gpulab.adapters.base import HelmRelease
from gpulab.adapters.helm import POST_RENDERER, PyHelm3Gateway
from gpulab.errors import AdapterError, HostError
from gpulab.naming import LABEL_LAB, chart_labels
from gpulab.stacks import common, load_profile
from gpulab.stacks.kamaji_hami import render as kamaji_render
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from gpulab.stacks.vcluster_kai import render as kai_render
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests import host
from tests.rendered import chart_dir

from .conftest import CHARTS
from .test_helm_adapter import FAKEHELM, FakeHelm

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.helm

KUBE = "v1.35.0"
LAB = "demo-lab"
LABELS = chart_labels(LAB)
HOOK = "helm.sh/hook"


def _major(binary: str) -> int | None:
    done = subprocess.run([binary, "version", "--template", "{{.Version}}"], capture_output=True,
                          text=True, timeout=20, check=False)
    return int(done.stdout.strip().lstrip("v").split(".")[0]) if done.returncode == 0 else None


def helm_of_major(major: int) -> str:
    """A real helm of that major: $GPULAB_TEST_HELM3, .cache/ci-bin/helm3 or `helm3` on PATH for
    3, the CI's helm for 4. Missing skips locally but fails in CI, where .ci/setup-host.sh
    provides both (tests/host.py)."""
    path = host.find_helm3() if major == 3 else host.find_helm()
    if not path or _major(path) != major:
        host.unavailable(f"needs a helm {major} binary")
    return path


@pytest.fixture(params=[3, 4], ids=["helm3", "helm4"])
def helm(request: pytest.FixtureRequest) -> str:
    return helm_of_major(request.param)


def labelled_gateway(helm: str, folder: Path) -> PyHelm3Gateway:
    return PyHelm3Gateway(None, executable=helm, labels=LABELS, folder=folder)


def _local(release: HelmRelease) -> HelmRelease:
    chart = "kai-scheduler" if release.chart.endswith("/kai-scheduler") else release.chart
    return replace(release, chart=chart_dir(chart), repo=None, git_commit=None, git_path="")


def releases() -> Iterator[HelmRelease]:
    """gpulab's releases of every pinned chart, with gpulab's values."""
    kh = load_profile("kamaji-hami").profile
    vk = load_profile("vcluster-kai").profile
    assert isinstance(kh, KamajiHamiProfile) and isinstance(vk, VclusterKaiProfile)
    yield common.helm_release(kh.components.cert_manager)
    yield kamaji_render.kamaji_release(kh)
    yield kamaji_render.hami_release(kh, kh.tenants[0])
    yield kai_render.fake_gpu_operator_release(vk)
    yield kai_render.kai_scheduler_release(vk)
    yield kai_render.vcluster_release(vk, vk.teams[0])


RELEASES = {r.chart.rsplit("/", 1)[-1]: _local(r) for r in releases()}


def _with_labels(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **LABELS}
    return out


def _is_hook(obj: dict[str, Any]) -> bool:
    return HOOK in ((obj.get("metadata") or {}).get("annotations") or {})


def render(helm: str, release: HelmRelease, *flags: str, plugins: Path | None = None
           ) -> list[dict[str, Any]]:
    """`helm template` of the release as the gateway runs it, with `flags`."""
    env = dict(os.environ, **({"HELM_PLUGINS": str(plugins)} if plugins else {}))
    done = subprocess.run([helm, "template", release.name, release.chart, "--namespace",
                           release.namespace, "--skip-crds", "--values", "-", "--kube-version",
                           KUBE, *flags], input=json.dumps(release.values), capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict)]


def identity(helm: str, release: HelmRelease, tmp_path: Path) -> list[dict[str, Any]]:
    """The render through a post-renderer that changes nothing (`cat`), helm 3's way or helm
    4's: what helm itself does to a stream it post-renders, without gpulab's part."""
    plugin = tmp_path / "identity" / "cat"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "run").write_text("#!/bin/sh\nexec cat\n")
    (plugin / "run").chmod(0o755)
    (plugin / "plugin.yaml").write_text(
        'name: cat\nversion: 0.1.0\ntype: postrenderer/v1\napiVersion: v1\nruntime: '
        'subprocess\nruntimeConfig:\n  platformCommand:\n  - command: "${HELM_PLUGIN_DIR}/run"\n')
    if _major(helm) == 3:
        return render(helm, release, "--post-renderer", str(plugin / "run"))
    return render(helm, release, "--post-renderer", "cat", plugins=plugin.parent)


@pytest.mark.slow
@pytest.mark.parametrize("chart", sorted(RELEASES))
def test_every_object_of_a_pinned_chart_carries_the_lab_label_and_nothing_else_changes(
        helm: str, chart: str, tmp_path: Path) -> None:
    release = RELEASES[chart]
    before = identity(helm, release, tmp_path)
    docs = labelled_gateway(helm, tmp_path / "helm-post-render").template(
        release, kube_version=KUBE)

    assert before, f"{chart} rendered nothing"
    assert len(docs) == len(before)
    major = _major(helm)
    for got, was in zip(docs, before, strict=True):
        # helm 3 runs the post-renderer on the manifests only, after splitting the hooks off
        # (pkg/action/action.go:172 vs :229 at v3.19.2); helm 4 on every rendered file, hooks
        # included (pkg/action/action.go:325-350 at v4.1.4).
        if major == 3 and _is_hook(was):
            assert got == was
        else:
            assert got == _with_labels(was), (got["kind"], got["metadata"].get("name"))


@pytest.mark.slow
def test_helm4_rewrites_what_any_post_renderer_gets(tmp_path: Path) -> None:
    """helm 4 parses every template file and writes it again (kio) before a post-renderer
    sees it (pkg/action/action.go:180-219, 325-350 at v4.1.4): a block scalar at the very end
    of a template file then has no final newline. Of gpulab's charts only fake-gpu-operator's
    hostpath-init script is so; helm 3 hands the text over as rendered."""
    changed = {}
    for major in (3, 4):
        helm = helm_of_major(major)
        changed[major] = sorted(
            f"{chart}: {a['kind']} {a['metadata']['name']}"
            for chart, release in RELEASES.items()
            for a, b in zip(render(helm, release), identity(helm, release, tmp_path),
                            strict=True) if a != b)
    assert changed == {3: [], 4: ["fake-gpu-operator: ConfigMap hostpath-init"]}
    release = RELEASES["fake-gpu-operator"]
    helm = helm_of_major(4)
    script = [d["data"]["init.sh"] for d in identity(helm, release, tmp_path)
              if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "hostpath-init"]
    plain = [d["data"]["init.sh"] for d in render(helm, release)
             if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "hostpath-init"]
    assert [s + "\n" for s in script] == plain


@pytest.mark.slow
def test_the_hooks_that_stay_are_known(tmp_path: Path) -> None:
    """What helm 3 leaves unlabelled are the charts' hooks; all but one are deleted once they
    succeed (`hook-succeeded`), so only kamaji-etcd's ServiceAccount stays (docs/own-cluster.md
    names it)."""
    helm = helm_of_major(4)
    hooks = [(chart, d) for chart, release in RELEASES.items() for d in render(helm, release)
             if _is_hook(d)]
    assert sorted({chart for chart, _ in hooks}) == ["cert-manager", "hami", "kai-scheduler",
                                                     "kamaji"]
    staying = sorted(
        f"{chart}: {d['kind']} {d['metadata']['name']}" for chart, d in hooks
        if "hook-succeeded" not in d["metadata"]["annotations"].get(
            "helm.sh/hook-delete-policy", "before-hook-creation"))
    assert staying == ["kamaji: ServiceAccount kamaji-etcd"]


def test_helm3_runs_the_program_helm4_the_plugin(tmp_path: Path) -> None:
    folder = tmp_path / "a folder with spaces" / "helm-post-render"
    for major in (3, 4):
        helm = helm_of_major(major)
        g = labelled_gateway(helm, folder)
        plugin = folder / POST_RENDERER
        assert g.version.startswith(f"{major}.")
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
        assert oct(plugin.stat().st_mode & 0o777) == "0o700"
        if major == 3:  # pkg/postrender/exec.go:37-43: the executable's path
            assert g._command.post_render == [
                "--post-renderer", str(plugin / "post-render"),
                f"--post-renderer-args={LABEL_LAB}={LAB}"]
        else:  # pkg/cmd/flags.go:194-208: a postrenderer/v1 plugin's name, from $HELM_PLUGINS
            assert g._command.post_render == [
                "--post-renderer", POST_RENDERER, f"--post-renderer-args={LABEL_LAB}={LAB}"]
            theirs = subprocess.run([helm, "env", "HELM_PLUGINS"], capture_output=True,
                                    text=True, timeout=20, check=True).stdout.strip()
            assert (folder / "helm").read_text() == (
                f"#!/bin/sh\nHELM_PLUGINS={shlex.quote(f'{folder}:{theirs}')}\n"
                f"export HELM_PLUGINS\nexec {shlex.quote(helm)} \"$@\"\n")
        # The program helm starts labels, run from anywhere.
        done = subprocess.run([str(plugin / "post-render"), f"{LABEL_LAB}={LAB}"],
                              input=b"kind: A\n", capture_output=True, cwd="/", timeout=60,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f'metadata:\n  labels:\n    {LABEL_LAB}: "{LAB}"\nkind: A\n'.encode()


def test_a_bad_render_stops_helm_with_the_post_renderers_line(helm: str, tmp_path: Path) -> None:
    bad = HelmRelease(name="bad", namespace="default", chart=str(CHARTS / "gpulab-bad-labels"),
                      repo=None, version="0.1.0", values={})
    with pytest.raises(AdapterError) as info:
        labelled_gateway(helm, tmp_path / "pr").template(bad)
    # the line in what helm hands over: helm 3's text (`---`, `# Source:` first), helm 4's kyaml
    line = 7 if _major(helm) == 3 else 5
    assert str(info.value) == (
        f"helm template bad ({CHARTS / 'gpulab-bad-labels'} 0.1.0) in namespace default failed: "
        f"gpulab post-renderer: labels at line {line} are not a mapping")
    assert not list((tmp_path / "pr" / POST_RENDERER / "errors").iterdir())  # cleaned up


def test_an_install_passes_the_post_renderer_and_stores_labelled_objects(
        helm: str, tmp_path: Path) -> None:
    fake = _fake_helm(tmp_path, helm)
    g = PyHelm3Gateway(tmp_path / "management.kubeconfig", executable=str(fake.executable),
                       labels=LABELS, folder=tmp_path / "helm-post-render")
    release = HelmRelease(name="probe", namespace="gpulab-probe", chart="gpulab-probe",
                          repo="https://charts.gpulab.test", version="0.3.1", values={})

    g.install(release)

    [upgrade] = fake.argv("upgrade")
    flags = [a for a in upgrade if a.startswith("--post-renderer")]
    name = POST_RENDERER if _major(helm) == 4 else \
        str(tmp_path / "helm-post-render" / POST_RENDERER / "post-render")
    assert upgrade[upgrade.index("--post-renderer") + 1] == name
    assert flags[1] == f"--post-renderer-args={LABEL_LAB}={LAB}"
    assert flags[2].startswith("--post-renderer-args=--error-file=")
    stored = json.loads((fake.state / "releases.json").read_text())
    manifest = stored["gpulab-probe/probe"][-1]["manifest"]
    objects = [d for d in yaml.safe_load_all(manifest) if d]
    assert {o["kind"] for o in objects} == {"ConfigMap", "Deployment"}
    assert all(o["metadata"]["labels"][LABEL_LAB] == LAB for o in objects)
    # the pod templates and selectors are the chart's own
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert LABEL_LAB not in deployment["spec"]["template"]["metadata"].get("labels", {})
    assert LABEL_LAB not in deployment["spec"]["selector"]["matchLabels"]


def _fake_helm(tmp_path: Path, real: str) -> FakeHelm:
    state = tmp_path / "fakehelm"
    state.mkdir()
    exe = tmp_path / "bin" / "helm"
    exe.parent.mkdir()
    env = {"FAKEHELM_STATE": state, "FAKEHELM_REAL": real, "FAKEHELM_CHARTS": CHARTS}
    assignments = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())
    exe.write_text(f'#!/bin/sh\n{assignments} exec {shlex.quote(sys.executable)} '
                   f'{shlex.quote(str(FAKEHELM))} "$@"\n')
    exe.chmod(0o755)
    return FakeHelm(exe, state)


def test_a_helm_gpulab_does_not_know_is_refused_with_one_line(tmp_path: Path) -> None:
    for version in ("v3.8.2", "v5.0.0"):
        exe = tmp_path / f"helm-{version}"
        exe.write_text(f"#!/bin/sh\nprintf '{version}'\n")
        exe.chmod(0o755)
        plain = PyHelm3Gateway(None, executable=str(exe))  # no labels: uninstall, logs
        assert plain.version == version.lstrip("v")
        with pytest.raises(HostError) as info:
            labelled_gateway(str(exe), tmp_path / "pr")
        assert info.value.message == (
            f"helm {version.lstrip('v')} at {exe} cannot run gpulab's post-renderer (which "
            "labels what charts create): gpulab knows helm 3.9+ and helm 4")
