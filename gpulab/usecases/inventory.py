"""What this install has: the built-in profiles (`profiles list`), every version gpulab and its
profiles deploy (`version`), and the tools `doctor` installs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError, ProfileError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["builtin_profile_rows", "install_tools", "versions"]


def builtin_profile_rows() -> list[dict[str, Any]]:
    """One row per built-in profile: name, stack, tenants, description, path (or the error
    that makes it invalid); the install's missing profiles are an error (exit 4)."""
    from gpulab.profile.load import builtin_profiles, no_builtin_profiles
    from gpulab.stacks import parse_profile

    builtins = builtin_profiles()
    if not builtins:
        raise no_builtin_profiles()
    rows: list[dict[str, Any]] = []
    for name, path in builtins.items():
        try:
            prof = parse_profile(path.read_text(encoding="utf-8"), str(path))
        except ProfileError as error:
            rows.append({"name": name, "path": str(path), "error": str(error)})
            continue
        rows.append({
            "name": name,
            "stack": prof.stack,
            "tenants": prof.member_names(),
            "description": prof.description,
            "path": str(path),
        })
    return rows


def versions() -> dict[str, Any]:
    """gpulab's version, Python's, the pinned helm, and each built-in profile's pins."""
    import sys

    from gpulab import __version__
    from gpulab.profile.load import builtin_profiles
    from gpulab.stacks import load_profile
    from gpulab.tools import HELM_VERSION

    info: dict[str, Any] = {"gpulab": __version__, "python": sys.version.split()[0],
                            "helm": HELM_VERSION, "profiles": {}}
    for name in builtin_profiles():
        try:
            info["profiles"][name] = load_profile(name).profile.pins()
        except GpulabError as error:
            info["profiles"][name] = {"error": str(error)}
    return info


def install_tools(download: bool, tools: dict[str, tuple[Path | None, str]],
                  say: Callable[[str], None]) -> None:
    """`doctor --install-tools` / `--kind PATH` / `--helm PATH`: a binary given is checked and
    copied into the cache; a binary named by $GPULAB_KIND / $GPULAB_HELM is checked; a missing
    one is downloaded. `say` tells the user what was done."""
    import os

    from gpulab.tools import TOOL_ENV, adopt_tool, check_version, find_tool, install_tool

    for tool, (given, version) in tools.items():
        if given is not None:
            path = adopt_tool(tool, given, version)
            say(f"installed {tool} {version} at {path} (from {given})")
        elif download:
            found = find_tool(tool)
            variable = TOOL_ENV[tool]
            if found is not None and os.environ.get(variable, "").strip():
                check_version(tool, found, version, f"{variable}={found}")
                say(f"using {tool} at {found} ({variable})")
            elif found is None:
                path = install_tool(tool, version)
                say(f"installed {tool} {version} at {path}")
