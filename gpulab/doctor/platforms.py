"""doctor's `image platform` findings: each image the profile pulls, against the engine's
platform (gpulab.platforms, the table in docs/images.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.doctor.facts import Finding

if TYPE_CHECKING:
    from gpulab.adapters.base import RuntimeInfo
    from gpulab.profile.base import LabProfile

CHECK = "image platform"


def platform_findings(info: RuntimeInfo, profile: LabProfile) -> list[Finding]:
    """`fail` per image not published for the engine's platform (with what to do), `warn` per
    image or pin whose platforms are unknown (and why), else one `ok`."""
    from gpulab.platforms import DOCS, verdict

    seen = verdict(profile, info.architecture)
    out = [Finding(CHECK, "fail", f"{image} is not published for linux/{seen.arch} (upstream "
                                  f"builds {platforms})", fix)
           for image, platforms, fix in seen.missing]
    out += [Finding(CHECK, "warn", f"{what}: unknown, because {why}",
                    f"check that it runs on this engine's platform ({DOCS})")
            for what, why in seen.unknown]
    if seen.arch and not out:
        out.append(Finding(CHECK, "ok", f"all {seen.count} images of the profile are published "
                                        f"for linux/{seen.arch} ({DOCS})"))
    elif seen.arch and not seen.missing:
        out.insert(0, Finding(CHECK, "ok", f"{seen.count} images of the profile are published "
                                           f"for linux/{seen.arch}"))
    return out
