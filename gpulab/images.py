"""Image references: which images a node needs and whether it already has them.

Pure helpers for the preload steps (`stacks.common.PreloadImages`): Docker-style normalisation so
that `busybox:1.37`, `docker.io/library/busybox:1.37` and containerd's listing compare equal.
"""

from __future__ import annotations

from typing import Any

__all__ = ["images_in_objects", "normalize", "parse_ctr_listing", "present_in"]

DEFAULT_REGISTRY = "docker.io"


def normalize(image: str) -> str:
    """`busybox` → `docker.io/library/busybox:latest`; digests and registries kept as given."""
    name, _, digest = image.partition("@")
    first, _, rest = name.partition("/")
    has_registry = bool(rest) and ("." in first or ":" in first or first == "localhost")
    if not has_registry:
        name = f"{DEFAULT_REGISTRY}/{name if rest else 'library/' + name}"
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not digest:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def images_in_objects(objects: list[dict[str, Any]]) -> list[str]:
    """Every container image a list of manifests would run (pod templates, pods, jobs)."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("containers", "initContainers"):
                for container in node.get(key) or []:
                    image = container.get("image") if isinstance(container, dict) else None
                    if isinstance(image, str) and image and image not in found:
                        found.append(image)
            for value in node.values():
                if isinstance(value, dict | list):
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(objects)
    return found


def parse_ctr_listing(text: str) -> set[str]:
    """`ctr -n k8s.io images ls -q` output → normalised references present in the node."""
    return {normalize(line.strip()) for line in text.splitlines()
            if line.strip() and not line.startswith("sha256:")}


def present_in(image: str, listing: set[str]) -> bool:
    """Whether a node's normalised listing holds `image`: by digest when the reference pins one
    (a tag may have moved), else by tag."""
    ref = normalize(image)
    if "@" in ref:
        name, digest = ref.split("@", 1)
        repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
        return f"{repo}@{digest}" in listing or ref in listing
    return ref in listing
