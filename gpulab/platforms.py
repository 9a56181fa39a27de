"""Which platforms the images a profile pulls are published for, against the Docker engine's.

Pure: the facts are gpulab/image_platforms.json (each image's platforms, read from upstream's
build files at the pin, with the file:line; docs/images.md is the same table for people), the
profile's pins and the engine's `Architecture`. `plan`, `doctor` and `up`'s preflight name each
image missing for this engine's platform, before anything is created.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile

__all__ = ["ImageFacts", "PlatformVerdict", "engine_arch", "image_pins", "load_table",
           "verdict"]

TABLE = "image_platforms.json"
DOCS = "docs/images.md"

# `docker info`'s Architecture is the daemon host's `uname -m` (moby docker-v29.7.2
# daemon/info.go:65 → daemon/internal/platform/platform.go:23-32 → platform_linux.go:59-66,
# utsname.Machine; the API documents it as "the output of `uname -m` on Linux": swagger.yaml
# SystemInfo.Architecture, tests/data/pinned/upstream). So an arm64 Linux engine (Docker
# Desktop's VM on Apple silicon included) says "aarch64", not "arm64"; moby's own
# contrib/download-frozen-image-v2.sh:226-239 maps uname's x86_64 → amd64, aarch64 → arm64,
# arm/armv* → arm, as kind's hack/ci/init-vm.sh:53 does (fed26882). "" when moby could not read
# uname (platform.go:27-29 logs and leaves it empty).
_ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "armv7l": "arm", "armv6l": "arm", "arm": "arm", "ppc64le": "ppc64le",
           "s390x": "s390x", "riscv64": "riscv64"}

# What the user can do when an image lacks the engine's platform (facts only: the lab's images
# are published for amd64, docs/images.md).
ON_AMD64 = "run the lab on an x86_64 (linux/amd64) Docker host"


def engine_arch(architecture: str) -> tuple[str, str]:
    """(OCI architecture, '') for `docker info`'s Architecture, or ('', why it is unknown)."""
    value = architecture.strip()
    if not value:
        return "", "Docker did not report its Architecture"
    arch = _ARCHES.get(value.lower())
    if arch is None:
        return "", f"Docker reports Architecture '{value}', which gpulab cannot map to an " \
                   "image platform"
    return arch, ""


@dataclass(frozen=True)
class ImageFacts:
    """One image of the table: the platforms upstream publishes (None: unconfirmed) and why."""

    image: str
    platforms: tuple[str, ...] | None
    source: str = ""
    why: str = ""
    how: str = ""  # profile | rendered | code | runtime: where gpulab finds it is pulled

    def arches(self) -> set[str]:
        """The OCI architectures of `platforms` (`linux/arm64/v8` → `arm64`)."""
        return {p.split("/")[1] for p in self.platforms or () if p.count("/") >= 1}


@dataclass(frozen=True)
class Table:
    images: dict[str, ImageFacts]
    stacks: dict[str, dict[str, tuple[str, ...]]]  # stack → pin → images


def parse_table(data: dict[str, Any]) -> Table:
    """The JSON document as a Table."""
    images = {ref: ImageFacts(ref, tuple(f["platforms"]) if f.get("platforms") else None,
                              f.get("source", ""), f.get("why", ""), f.get("how", ""))
              for ref, f in data["images"].items()}
    stacks = {stack: {pin: tuple(refs) for pin, refs in pins.items()}
              for stack, pins in data["stacks"].items()}
    return Table(images, stacks)


@cache
def load_table() -> Table:
    """gpulab's image table (package data)."""
    text = resources.files("gpulab").joinpath(TABLE).read_text(encoding="utf-8")
    return parse_table(json.loads(text))


def image_pins(profile: LabProfile) -> list[str]:
    """The profile's pins that decide which images it pulls, as the table names them: `gpulab`
    (images in gpulab's code), each node image, chart, manifest and image tag field, and each
    Kubernetes version a member runs."""
    pins = profile.pins()
    found = ["gpulab", f"node image {pins['node_image']}"]
    found += [f"node image {v}" for k, v in pins["images"].items() if k.endswith(".image")]
    found += [f"chart {c['chart']} {c['version']}" for c in pins["charts"]]
    found += [f"manifest {m['component']} {m['version']}" for m in pins["manifests"]]
    found += [f"{k} {v}" for k, v in pins["images"].items() if k.endswith("_tag")]
    found += [f"kubernetes {v}" for v in _kubernetes_versions(profile)]
    return list(dict.fromkeys(found))


def _kubernetes_versions(profile: LabProfile) -> list[str]:
    """Every `kubernetes_version` field of the profile (its members' control planes)."""
    from pydantic import BaseModel

    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, BaseModel):
            for name in type(value).model_fields:
                field = getattr(value, name)
                if name == "kubernetes_version" and isinstance(field, str):
                    found.append(field)
                walk(field)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(profile)
    return found


@dataclass(frozen=True)
class PlatformVerdict:
    """What the table says of a profile's images on one engine: `missing` (image, published
    platforms, what to do), `unknown` (image or pin, why), `arch` ('' when unknown), `count`
    (images confirmed for it)."""

    arch: str
    missing: tuple[tuple[str, str, str], ...] = ()
    unknown: tuple[tuple[str, str], ...] = ()
    count: int = 0

    def plan_notes(self) -> list[str]:
        """`plan`'s notes, one per image: those `up` would refuse (with what to do), then those
        whose platforms nobody confirmed (doctor says why)."""
        out = [f"up would refuse: {image} is not published for linux/{self.arch} (upstream "
               f"builds {platforms}): {fix}" for image, platforms, fix in self.missing]
        if not self.arch:
            return [f"image platforms unknown, because {why}" for _what, why in self.unknown]
        out += [f"image platform: {what}: unknown (gpulab doctor says why; {DOCS})"
                for what, _why in self.unknown]
        return out


def verdict(profile: LabProfile, architecture: str, table: Table | None = None
            ) -> PlatformVerdict:
    """The profile's images against the engine's `docker info` Architecture."""
    arch, why = engine_arch(architecture)
    if not arch:
        return PlatformVerdict("", unknown=(("every image of the profile", why),))
    table = table or load_table()
    pins = table.stacks.get(profile.stack, {})
    missing: list[tuple[str, str, str]] = []
    unknown: list[tuple[str, str]] = []
    seen: set[str] = set()
    count = 0
    for pin in image_pins(profile):
        refs = pins.get(pin)
        if refs is None:
            unknown.append((pin, f"gpulab's image table ({DOCS}) does not list it for "
                                 f"{profile.stack}: a pin the profile changed"))
            continue
        for ref in refs:
            if ref in seen:
                continue
            seen.add(ref)
            facts = table.images.get(ref)
            if facts is None or facts.platforms is None:
                unknown.append((ref, facts.why if facts and facts.why
                                else f"gpulab's image table ({DOCS}) has no platforms for it"))
            elif arch in facts.arches():
                count += 1
            else:
                missing.append((ref, ", ".join(facts.platforms), ON_AMD64
                                if "amd64" in facts.arches() else "no platform of this "
                                "host is published; see " + DOCS))
    return PlatformVerdict(arch, tuple(missing), tuple(unknown), count)
