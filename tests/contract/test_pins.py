"""The pins are a set: where one pinned part reads what another writes, the pair is tested on
upstream's own output (tests/data/pinned, each file's source in SOURCES.md), never on what gpulab
expects it to be.

- HAMi's chart v2.10.0 → mock-device-plugin v1.0.1: what the mock decodes at start, checked
  against the mock's own Go field types with yaml.v2's rules (tests/goyaml.py);
- Kamaji 26.8.2-edge → the preload lists: the Konnectivity images Kamaji derives;
- kindest/node's containerd → verify's pod image: the sandbox (pause) image the node ships;
- KAI v0.16.8 → fake-gpu-operator: the version KAI's own e2e installs;
- containerd's own output → gpulab's parser (tests/unit/test_images.py, tests/unit/test_preload.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.engine.step import StepContext
from gpulab.stacks import common, load_profile
from gpulab.stacks.kamaji_hami import render, steps
from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from tests.fakes import FakeWorld, fake_adapters, hami_scheduler_device_configmap
from tests.goyaml import GoTypes
from tests.rendered import find
from tests.rendered import render as helm_template
from tests.schemas import pinned_data
from tests.upstream import UPSTREAM, kind_containerd_config, mock_device_plugin_go_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MOCK_CONFIG_TYPE = "config.Config"  # internal/pkg/config/config.go:39-51 at v1.0.1


@pytest.fixture(scope="module")
def kamaji() -> KamajiHamiProfile:
    loaded = load_profile("kamaji-hami").profile
    assert isinstance(loaded, KamajiHamiProfile)
    return loaded


@pytest.fixture(scope="module")
def mock_types() -> GoTypes:
    return GoTypes.read(mock_device_plugin_go_files())


def _hami(profile: KamajiHamiProfile, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    release = render.hami_release(profile, profile.tenants[0])
    return helm_template("hami", release.name, release.namespace,
                         common.deep_merge(release.values, values or {}),
                         profile.tenants[0].kubernetes_version)


def _device_config(objects: list[dict[str, Any]], name: str) -> str:
    return str(find(objects, "ConfigMap", name)["data"]["device-config.yaml"])


# --------------------------------------------------------------------------- HAMi → mock plugin


def test_the_decoder_reads_the_mocks_own_types(mock_types: GoTypes) -> None:
    """The Go declarations the mock decodes into, as its source has them at v1.0.1."""
    config = {f.key: f.go_type for f in mock_types.structs[MOCK_CONFIG_TYPE]}
    assert config["vnpus"] == "[]ascend.VNPUConfig"  # config.go:51
    assert config["nvidia"] == "nvidia.NvidiaConfig"
    assert mock_types.decode({"vnpus": [{"chipName": "910A", "aiCore": 30}]}, MOCK_CONFIG_TYPE) == []
    assert mock_types.decode({"nvidia": {"memoryFactor": "one"}}, MOCK_CONFIG_TYPE) == [
        "cannot unmarshal !!str `one` into int32"]
    assert mock_types.decode({"nvidia": {"deviceSplitCount": -1}}, MOCK_CONFIG_TYPE) == [
        "cannot unmarshal !!int `-1` into uint"]  # an inline NodeDefaultConfig field


@pytest.mark.helm
def test_the_charts_own_device_config_stops_the_mock(kamaji: KamajiHamiProfile,
                                                     mock_types: GoTypes) -> None:
    """The upstream fact behind gpulab's own mock: HAMi v2.10.0's chart renders `vnpus:` as a
    mapping, which the mock's yaml.v2 decode refuses; config.go:117-120 then calls klog.Fatalf.
    The chart's own mock DaemonSet mounts exactly this ConfigMap
    (templates/device-plugin/daemonsetmock.yaml: configMap `<scheduler>-device`)."""
    objects = _hami(kamaji, {"mockDevicePlugin": {"enabled": True}})
    mounted = find(objects, "DaemonSet", "hami-mock-device-plugin")["spec"]["template"]["spec"][
        "volumes"]
    assert {"name": "device-config", "configMap": {"name": render.SCHEDULER_DEVICE_CONFIG}} in mounted
    document = yaml.safe_load(_device_config(objects, render.SCHEDULER_DEVICE_CONFIG))
    assert mock_types.decode(document, MOCK_CONFIG_TYPE) == [
        "cannot unmarshal !!map into []ascend.VNPUConfig"]


@pytest.mark.helm
def test_the_mock_decodes_the_config_gpulab_mounts(kamaji: KamajiHamiProfile,
                                                   mock_types: GoTypes) -> None:
    """The pair as a lab runs it: HAMi's chart with gpulab's values writes the scheduler's device
    config; gpulab copies what the mock reads into its own ConfigMap, which its mock DaemonSet
    mounts; the mock's decoder takes it, and sees the scheduler's resource names and factors."""
    objects = _hami(kamaji)
    scheduler_config = _device_config(objects, render.SCHEDULER_DEVICE_CONFIG)
    release = render.hami_release(kamaji, kamaji.tenants[0])
    config_map, daemonset = render.hami_mock_plugin(kamaji, release,
                                                    render.mock_device_config(scheduler_config))
    volumes = daemonset["spec"]["template"]["spec"]["volumes"]
    assert {"name": "device-config",
            "configMap": {"name": config_map["metadata"]["name"]}} in volumes
    mounted = yaml.safe_load(config_map["data"]["device-config.yaml"])
    assert mock_types.decode(mounted, MOCK_CONFIG_TYPE) == []
    scheduler = yaml.safe_load(scheduler_config)
    assert mounted["nvidia"] == scheduler["nvidia"]  # the scheduler's names, factor and split
    assert mounted["nvidia"]["memoryFactor"] == 1  # the mock divides Σdevmem by it
    assert set(mounted) == {"nvidia", "hygon"}
    # the chart itself runs no mock and no mock RBAC: gpulab's objects have no owner to fight
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert not {k for k in kinds if k[1] == render.MOCK_PLUGIN}


@pytest.mark.helm
def test_gpulabs_mock_daemonset_is_the_charts_but_for_the_config_it_mounts(
        kamaji: KamajiHamiProfile) -> None:
    """Same image, command, mounts, account and tolerations as the chart's daemonsetmock.yaml
    at v2.10.0 would run; the one difference is the ConfigMap behind /device-config.yaml."""
    charts = find(_hami(kamaji, {"mockDevicePlugin": {
        "enabled": True, "image": {"tag": kamaji.components.hami.mock_device_plugin_tag}}}),
        "DaemonSet", render.MOCK_PLUGIN)
    release = render.hami_release(kamaji, kamaji.tenants[0])
    ours = render.hami_mock_plugin(kamaji, release, "x")[1]
    assert ours["spec"]["template"]["spec"]["volumes"][-1] == {
        "name": "device-config", "configMap": {"name": render.MOCK_DEVICE_CONFIG}}
    ours["spec"]["template"]["spec"]["volumes"][-1]["configMap"]["name"] = (
        render.SCHEDULER_DEVICE_CONFIG)
    assert ours["spec"] == charts["spec"]
    assert ours["metadata"]["name"] == charts["metadata"]["name"]
    assert ours["metadata"]["namespace"] == charts["metadata"]["namespace"]


@pytest.mark.helm
def test_the_fakes_scheduler_configmap_is_a_current_render(kamaji: KamajiHamiProfile) -> None:
    """tests/data/rendered holds what the fakes' helm install leaves: a real render, kept so."""
    fresh = find(_hami(kamaji), "ConfigMap", render.SCHEDULER_DEVICE_CONFIG)
    assert hami_scheduler_device_configmap() == fresh, (
        "regenerate tests/data/rendered/hami-2.10.0_configmap_hami-scheduler-device.yaml")


# --------------------------------------------------------------------------- Kamaji → preload


def test_konnectivity_images_are_the_ones_kamaji_derives(kamaji: KamajiHamiProfile,
                                                         tmp_path: Path) -> None:
    """Kamaji's CRD defaults the images (tenantcontrolplane_types.go:401,421; the CRD copy in
    tests/data/pinned) and, with no `version`, tags them `v0.<tenant minor>.0`
    (konnectivity_server.go:48, agent.go:50 at ddbabd87): both preload lists carry exactly that."""
    crd = yaml.safe_load((pinned_data() / "kamaji_crd_tenantcontrolplanes.yaml").read_text())
    addons = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["addons"]["properties"]["konnectivity"]["properties"]
    server_image = addons["server"]["default"]["image"]
    agent_image = addons["agent"]["default"]["image"]
    sources = [UPSTREAM / "kamaji_ddbabd87/internal/builders/controlplane/konnectivity_server.go",
               UPSTREAM / "kamaji_ddbabd87/internal/resources/konnectivity/agent.go"]
    for source in sources:
        assert 'return fmt.Sprintf("v0.%d.0", version.Minor)' in source.read_text()
    ctx = StepContext("lab", fake_adapters(FakeWorld(), tmp_path / "lab"))
    management = steps.management_images(kamaji, ["gpulab-lab-control-plane"]).sources(ctx)
    for tenant in kamaji.tenants:
        tcp = render.tenant_control_plane(kamaji, tenant)
        konnectivity = tcp["spec"]["addons"]["konnectivity"]
        assert not {"version", "image"} & (set(konnectivity["server"]) | set(konnectivity["agent"]))
        minor = int(tenant.kubernetes_version.lstrip("v").split(".")[1])
        server, agent = f"{server_image}:v0.{minor}.0", f"{agent_image}:v0.{minor}.0"
        assert render.konnectivity_images(tenant) == (server, agent)
        assert server in management  # a container of the tenant's control-plane pod
        assert agent in steps.tenant_images(kamaji, "lab", tenant).sources(ctx)


# --------------------------------------------------------------------------- kindest/node → verify


def test_verify_runs_the_sandbox_image_kindest_node_ships() -> None:
    """kind's node image fixes containerd's sandbox image (images/base/files/etc/containerd/
    config.toml) and its build keeps exactly that pause image in the node
    (pkg/build/nodeimage/buildcontext.go "replace pause image with our own"): verify's pods run
    it, so they need nothing pulled."""
    config = tomllib.loads(kind_containerd_config())
    sandbox = config["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"]
    assert sandbox == common.KIND_SANDBOX_IMAGE
    assert sandbox == common.VERIFY_IMAGE


# --------------------------------------------------------------------------- KAI → fake-gpu-operator


def test_fake_gpu_operator_is_the_version_kais_e2e_installs() -> None:
    """KAI v0.16.8's hack/setup-e2e-cluster.sh installs fake-gpu-operator `--version 0.0.74` with
    hack/fake-gpu-operator-values.yaml: the pair KAI is tested with."""
    script = (UPSTREAM / "kai_v0.16.8_hack_setup-e2e-cluster.sh").read_text()
    found = re.search(r"fake-gpu-operator --namespace.*?--version (\S+)", script, re.S)
    assert found
    loaded = load_profile("vcluster-kai").profile
    assert isinstance(loaded, VclusterKaiProfile)
    assert loaded.components.fake_gpu_operator.chart.version == found.group(1)
    assert loaded.components.kai_scheduler.chart.version == "v0.16.8"
