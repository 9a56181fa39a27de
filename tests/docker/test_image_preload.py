"""Image preload plumbing against the real engine: docker save streamed into a node's importer.

The node is the local busybox image with a stand-in `ctr` (this host cannot run kindest/node);
the archive it receives is the real `docker save` output of an image on this host.
"""

from __future__ import annotations

import io
import json
import tarfile

from gpulab.engine.step import StepContext
from gpulab.stacks.common import CTR_IMPORT, LabAdapters, PreloadImages
from tests.docker.conftest import TEST_IMAGE

FAKE_CTR = """#!/bin/sh
# ctr stand-in: `images ls -q` lists /tmp/ctr-images; `images import ... -` stores stdin.
case "$3" in
  ls) cat /tmp/ctr-images 2>/dev/null || true ;;
  import) cat > /tmp/imported.tar && echo "docker.io/gpulab-test/busybox:1" >> /tmp/ctr-images ;;
  *) echo "unexpected $*" >&2; exit 2 ;;
esac
"""


def test_preload_streams_docker_save_into_the_node(runtime, node_spec, tmp_path) -> None:
    spec = node_spec()
    runtime.run_node(spec)
    runtime.copy_in(spec.name, "/usr/local/bin/ctr", FAKE_CTR.encode(), mode=0o755)
    step = PreloadImages(name="n/images", title="t", requires=(), nodes=[spec.name],
                         sources=lambda _ctx: [TEST_IMAGE], described=[TEST_IMAGE])
    adapters = LabAdapters(runtime=runtime, kind=None, kube=None, helm=None,  # type: ignore[arg-type]
                           fetch=None, lab_dir=tmp_path)  # type: ignore[arg-type]
    ctx = StepContext("lab", adapters)
    assert step.satisfied(ctx) is False
    step.apply(ctx)
    assert step.satisfied(ctx) is True
    # What arrived in the node is the image's `docker save` archive, byte for byte.
    copied = runtime.exec(spec.name, ["cat", "/tmp/imported.tar"], timeout=60)
    assert copied.ok
    archive = runtime.save_image(TEST_IMAGE)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert manifest[0]["RepoTags"] == [TEST_IMAGE]
    size = runtime.exec(spec.name, ["wc", "-c", "/tmp/imported.tar"], timeout=60)
    assert int(size.stdout.split()[0]) == len(archive)
    assert CTR_IMPORT[-1] == "-"  # the archive goes through stdin, as `kind load` does


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
