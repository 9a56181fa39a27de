"""Image preload into nodes (`kind load`'s job): the node's platform and snapshotter, and what
happens when an import fails (Docker 29's containerd image store): pull inside the node."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.engine.step import StepContext
from gpulab.stacks.common import LEFT_TO_NODE, PreloadImages
from tests.fakes import FakeWorld, fake_adapters

NODE = "gpulab-lab-control-plane"
IMAGES = ["quay.io/jetstack/cert-manager-controller:v1.21.2", "registry.k8s.io/pause:3.10"]


@pytest.fixture
def world() -> FakeWorld:
    from gpulab.adapters.base import ContainerInfo

    w = FakeWorld()
    w.containers[NODE] = ContainerInfo(NODE, NODE, "kindest/node", "running", {}, {})
    w.host_images.update(IMAGES)
    w.images.update(IMAGES)
    return w


def _step() -> PreloadImages:
    return PreloadImages(name="management/images", title="images", requires=(), nodes=[NODE],
                         sources=lambda _ctx: list(IMAGES), described=list(IMAGES))


def _ctx(world: FakeWorld, tmp_path: Path) -> tuple[StepContext, list[str]]:
    notes: list[str] = []
    ctx = StepContext("lab", fake_adapters(world, tmp_path / "lab"))
    ctx.note = notes.append  # type: ignore[method-assign]
    return ctx, notes


def test_saved_and_imported_for_the_nodes_platform_with_its_snapshotter(
        world: FakeWorld, tmp_path: Path) -> None:
    world.architecture = "aarch64"
    ctx, _ = _ctx(world, tmp_path)
    step = _step()
    assert not step.satisfied(ctx)
    step.apply(ctx)
    assert step.satisfied(ctx)
    assert world.saved == [(image, "linux/arm64") for image in IMAGES]
    for node, argv in world.imports:
        assert node == NODE
        assert "--platform=linux/arm64" in argv and "--all-platforms" not in argv
        assert "--snapshotter=overlayfs" in argv  # read from the node's containerd config


def test_a_failed_import_is_a_note_and_the_node_pulls_the_image(
        world: FakeWorld, tmp_path: Path) -> None:
    world.import_fails.add(IMAGES[0])
    ctx, notes = _ctx(world, tmp_path)
    step = _step()
    step.apply(ctx)  # no exception: the step succeeds
    assert any(f"could not load {IMAGES[0]} into {NODE}" in n and "content digest" in n
               and "pulling it inside the node" in n for n in notes), notes
    assert f"crictl.pull:{NODE}" in world.faults.calls
    assert step.satisfied(ctx)


def test_when_the_node_cannot_pull_either_it_is_left_to_the_kubelet_once(
        world: FakeWorld, tmp_path: Path) -> None:
    world.import_fails.add(IMAGES[0])
    world.node_pull_fails.add(IMAGES[0])
    ctx, notes = _ctx(world, tmp_path)
    step = _step()
    step.apply(ctx)
    assert any(f"{IMAGES[0]}: left for the kubelet of {NODE} to pull" in n for n in notes)
    marker = tmp_path / "lab" / "preloaded" / "management_images"
    assert f"{LEFT_TO_NODE} {NODE} {IMAGES[0]}" in marker.read_text().splitlines()
    # A re-run does not try again: the image is the node's now, the rest is loaded.
    assert step.satisfied(ctx)
    calls = list(world.faults.calls)
    assert _step().satisfied(ctx)
    assert not [c for c in world.faults.calls[len(calls):] if "import" in c or "pull" in c]


@pytest.mark.parametrize("dump", [None, "version = 3\n"])
def test_an_unknown_snapshotter_has_the_node_pull_instead_of_a_guessed_import(
        world: FakeWorld, tmp_path: Path, dump: str | None) -> None:
    """An import into a snapshotter the CRI does not use is invisible to the kubelet: when the
    node's `containerd config dump` fails or names none, nothing is imported and the node's own
    containerd pulls (crictl), with a note saying why."""
    world.containerd_config = dump
    ctx, notes = _ctx(world, tmp_path)
    step = _step()
    step.apply(ctx)
    assert world.imports == []
    assert any(f"containerd snapshotter of {NODE} unknown" in n for n in notes), notes
    assert world.faults.calls.count(f"crictl.pull:{NODE}") == len(IMAGES)
    assert step.satisfied(ctx)
