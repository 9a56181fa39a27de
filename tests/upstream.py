"""Upstream output the tests feed to gpulab, read from the copies in tests/data/pinned (each file's
source and pin: tests/data/pinned/SOURCES.md). Nothing here is typed from memory: each helper
cuts its text out of an upstream file, so a new pin brings new text."""

from __future__ import annotations

import re
from pathlib import Path

UPSTREAM = Path(__file__).parent / "data" / "pinned" / "upstream"
MOCK_DEVICE_PLUGIN = UPSTREAM / "mock-device-plugin_v1.0.1"


def containerd_full_config() -> str:
    """containerd v2.3.4's full CRI configuration as containerd 2.x prints it (go-toml v2: literal
    keys `[plugins.'io.containerd.cri.v1.images']`, `snapshotter = 'overlayfs'`): the first toml
    block under "## Full configuration" of docs/cri/config.md, containerd's own rendering of
    `containerd config default`, which `config dump` prints merged with the node's file."""
    text = (UPSTREAM / "containerd_v2.3.4_docs_cri_config.md").read_text(encoding="utf-8")
    section = text[text.index("## Full configuration"):]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block, "docs/cri/config.md has no toml block under 'Full configuration'"
    return block.group(1)


def kind_snapshotter_cases() -> list[tuple[str, str]]:
    """(config, snapshotter) of kind's own TestParseSnapshotter (pkg/cluster/nodeutils/
    util_test.go at fed26882): the raw-string configs it parses and the snapshotter each expects;
    the invalid one it expects to fail is left out (the caller tests refusals itself)."""
    source = (UPSTREAM / "kind_fed26882_pkg_cluster_nodeutils_util_test.go").read_text(
        encoding="utf-8")
    cases = []
    pattern = r"(\w+) := `(.*?)`\n\s*snapshotter, err :?= parseSnapshotter\(\1\).*?expected \"(\w[\w-]*)\""
    for match in re.finditer(pattern, source, re.S):
        cases.append((match.group(2), match.group(3)))
    return cases


def kind_containerd_config() -> str:
    """kindest/node's /etc/containerd/config.toml (kind images/base/files/etc/containerd/
    config.toml at fed26882)."""
    return (UPSTREAM / "kind_fed26882_images_base_files_etc_containerd_config.toml").read_text(
        encoding="utf-8")


def mock_device_plugin_go_files() -> list[Path]:
    """mock-device-plugin v1.0.1's config and device type declarations."""
    return sorted(MOCK_DEVICE_PLUGIN.rglob("*.go"))


def hami_mig_register_annotation() -> str:
    """A node's `hami.io/node-nvidia-register` with one card in MIG mode, as HAMi v2.10.0's own
    TestGetNodeDevices_MigProfilesFromNode (pkg/device/nvidia/device_test.go) writes it: an
    A100-SXM4-40GB, `mode: "mig"`, its MIG profile 1g.5gb."""
    source = (UPSTREAM / "hami_v2.10.0_pkg_device_nvidia_device_test.go").read_text(
        encoding="utf-8")
    test = source[source.index("func TestGetNodeDevices_MigProfilesFromNode"):]
    found = re.search(r"RegisterAnnos: `(.*?)`", test)
    assert found, "TestGetNodeDevices_MigProfilesFromNode has no RegisterAnnos literal"
    return found.group(1)
