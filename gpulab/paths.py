"""Where a lab's files live: one folder per lab under the user's data directory (XDG)."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_path, user_data_path

__all__ = ["HELM_POST_RENDER", "cache_dir", "lab_dir", "labs_root", "write_secret"]

ENV_HOME = "GPULAB_HOME"
# In a lab's folder: the Helm post-renderer that labels what charts create for the lab
# (gpulab.adapters.helm.post_renderer writes it; `down` removes it with the folder).
HELM_POST_RENDER = "helm-post-render"


def labs_root() -> Path:
    """$GPULAB_HOME/labs, else the XDG data dir (~/.local/share/gpulab/labs)."""
    home = os.environ.get(ENV_HOME)
    base = Path(home) if home else user_data_path("gpulab", appauthor=False)
    return base / "labs"


def lab_dir(lab: str) -> Path:
    """The folder holding one lab's kubeconfigs and records."""
    return labs_root() / lab


def cache_dir() -> Path:
    """Downloaded tools (kind, helm) live here, per user."""
    home = os.environ.get(ENV_HOME)
    return (Path(home) / "cache") if home else user_cache_path("gpulab", appauthor=False)


def write_secret(path: Path, data: bytes) -> Path:
    """Write credentials with mode 0600 from the first byte (never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    return path
