"""The provider registry: a provider's name → the package that implements it.

The one place that knows which providers there are (kwok's `Registry` and kind's
`DetectNodeProvider` are the models). Everything else asks it: the profile's `cluster.provider`
is checked against `names()`, and gpulab.providers finds a provider's package here, for a
profile (`claims`) or for a lab by what its lab.json recorded (`restore`).

A provider package offers, at module level (gpulab.providers.base.ProviderPackage):
`claims(profile, kubeconfig, context)`, `restore(record, kubeconfig, context, profile)`,
`make(choice, host, **given)`, `container_lab(labels)` and `cluster_text(where)`.

Imports nothing of gpulab, so the profile schema can ask it without a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["DEFAULT", "names", "package", "register", "unregister"]

# name → package; a profile or flags are offered to each in this order (first claim wins)
_PACKAGES: dict[str, str] = {
    "existing": "gpulab.providers.existing",
    "kind": "gpulab.providers.kind",
}
DEFAULT = "kind"  # a profile without `cluster:`, and a lab.json that records no provider


def names() -> tuple[str, ...]:
    """Every registered provider's name, in the order they are asked."""
    return tuple(_PACKAGES)


def register(name: str, module: str) -> None:
    """Add a provider (its package's import path) ahead of the others, e.g. a test's fake."""
    others = {k: v for k, v in _PACKAGES.items() if k != name}
    _PACKAGES.clear()
    _PACKAGES.update({name: module, **others})


def unregister(name: str) -> None:
    """Remove a provider added by `register`."""
    _PACKAGES.pop(name, None)


def package(name: str) -> ModuleType:
    """The package of provider `name` ('' means the default); KeyError for an unknown one."""
    return importlib.import_module(_PACKAGES[name or DEFAULT])
