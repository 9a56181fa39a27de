"""Image preload plumbing against the real engine: docker save streamed into a node's importer.

The node is the local busybox image with a stand-in `ctr` (this host cannot run kindest/node);
the archive it receives is the real `docker save` output of an image on this host.
"""

from __future__ import annotations

import io
import json
import tarfile

from gpulab.adapters.base import LabAdapters
from gpulab.engine.step import StepContext
from gpulab.stacks.common import PreloadImages, ctr_import
from tests.docker.conftest import TEST_IMAGE

FAKE_CTR = """#!/bin/sh
# ctr stand-in: `images ls -q` lists /tmp/ctr-images; `images import ... -` stores stdin and
# its arguments; with /tmp/import-fails it fails as Docker 29's index makes it fail.
case "$3" in
  ls) cat /tmp/ctr-images 2>/dev/null || true ;;
  import)
    echo "$@" > /tmp/import-args
    cat > /tmp/imported.tar
    if [ -e /tmp/import-fails ]; then echo "ctr: content digest sha256:0: not found" >&2; exit 1; fi
    echo "docker.io/gpulab-test/busybox:1" >> /tmp/ctr-images ;;
  *) echo "unexpected $*" >&2; exit 2 ;;
esac
"""
# containerd stand-in: `config dump` prints a kindest/node-like config (version 3)
FAKE_CONTAINERD = """#!/bin/sh
printf 'version = 3\n[plugins."io.containerd.cri.v1.images"]\n  snapshotter = "native"\n'
"""
# crictl stand-in: `pull IMAGE` records it as present (the node's own pull)
FAKE_CRICTL = """#!/bin/sh
[ "$1" = pull ] && echo "docker.io/gpulab-test/busybox:1" >> /tmp/ctr-images && echo "$2" > /tmp/pulled
"""


def _node(runtime, node_spec) -> str:
    spec = node_spec()
    runtime.run_node(spec)
    for path, text in (("/usr/local/bin/ctr", FAKE_CTR), ("/usr/local/bin/containerd",
                       FAKE_CONTAINERD), ("/usr/local/bin/crictl", FAKE_CRICTL)):
        runtime.copy_in(spec.name, path, text.encode(), mode=0o755)
    return spec.name


def test_preload_streams_docker_save_into_the_node(runtime, node_spec, tmp_path) -> None:
    name = _node(runtime, node_spec)
    step = PreloadImages(name="n/images", title="t", requires=(), nodes=[name],
                         sources=lambda _ctx: [TEST_IMAGE], described=[TEST_IMAGE])
    adapters = LabAdapters(runtime=runtime, kind=None, kube=None, helm=None,  # type: ignore[arg-type]
                           fetch=None, lab_dir=tmp_path)  # type: ignore[arg-type]
    ctx = StepContext("lab", adapters)
    assert step.satisfied(ctx) is False
    step.apply(ctx)
    assert step.satisfied(ctx) is True
    # What arrived in the node is the image's `docker save` archive, byte for byte.
    copied = runtime.exec(name, ["cat", "/tmp/imported.tar"], timeout=60)
    assert copied.ok
    platform = runtime.info().platform
    archive = runtime.save_image(TEST_IMAGE, platform=platform)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert manifest[0]["RepoTags"] == [TEST_IMAGE]
    size = runtime.exec(name, ["wc", "-c", "/tmp/imported.tar"], timeout=60)
    assert int(size.stdout.split()[0]) == len(archive)
    args = runtime.exec(name, ["cat", "/tmp/import-args"], timeout=60).stdout.split()
    # the node's platform and the snapshotter its containerd names; stdin, as `kind load` does
    assert args == ctr_import(platform, "native")[1:]


def test_a_failing_import_falls_back_to_pulling_inside_the_node(
        runtime, node_spec, tmp_path) -> None:
    name = _node(runtime, node_spec)
    runtime.exec(name, ["touch", "/tmp/import-fails"], timeout=60)
    step = PreloadImages(name="n/images", title="t", requires=(), nodes=[name],
                         sources=lambda _ctx: [TEST_IMAGE], described=[TEST_IMAGE])
    adapters = LabAdapters(runtime=runtime, kind=None, kube=None, helm=None,  # type: ignore[arg-type]
                           fetch=None, lab_dir=tmp_path)  # type: ignore[arg-type]
    notes: list[str] = []
    ctx = StepContext("lab", adapters)
    ctx.note = notes.append  # type: ignore[method-assign]
    step.apply(ctx)
    assert any("content digest" in n and "pulling it inside the node" in n for n in notes), notes
    assert runtime.exec(name, ["cat", "/tmp/pulled"], timeout=60).stdout.strip() == TEST_IMAGE
    assert step.satisfied(ctx)


def test_save_for_a_platform_on_this_engine(runtime) -> None:
    """Engines with API 1.48+ take `platform` on export; older ones save as before. Either way
    the archive is a loadable image of this host's platform."""
    archive = runtime.save_image(TEST_IMAGE, platform=runtime.info().platform)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert "manifest.json" in tar.getnames()


def test_pull_and_save_errors_are_one_line(runtime) -> None:
    import pytest

    from gpulab.errors import GpulabError

    with pytest.raises(GpulabError) as pulled:
        runtime.pull("gpulab-test/never-published:0")  # no registry has it (and none is reachable)
    assert "gpulab-test/never-published:0" in str(pulled.value)
    assert "\n" not in str(pulled.value)
    with pytest.raises(GpulabError) as saved:
        runtime.save_image("gpulab-test/not-here:0")
    assert "gpulab-test/not-here:0" in str(saved.value)
