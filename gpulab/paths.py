"""Where a lab's files live: one folder per lab under the user's data directory (XDG)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from platformdirs import user_cache_path, user_data_path

from gpulab.errors import HostError, UsageError

__all__ = ["HELM_POST_RENDER", "cache_dir", "check_output_file", "check_output_folder",
           "lab_dir", "lab_folder_exists", "labs_root", "unwritable_labs", "write_secret"]

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


def lab_folder_exists(lab: str) -> bool:
    """Whether the lab has a folder. A folder of labs that cannot be read (GPULAB_HOME a file,
    a folder gpulab may not enter) is a host problem naming it, not "no such lab"."""
    folder = lab_dir(lab)
    try:
        return stat.S_ISDIR(folder.stat().st_mode)
    except FileNotFoundError:
        return False
    except OSError as error:
        raise unwritable_labs(folder, error, doing="read") from error


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


def unwritable_labs(folder: Path, error: OSError, doing: str = "write") -> HostError:
    """A lab's folder that cannot be made, written or read (`doing`; GPULAB_HOME a file,
    read-only, ...): a host problem, naming the folder and where it comes from."""
    home = os.environ.get(ENV_HOME)
    where = f"GPULAB_HOME={home}" if home else "the XDG data dir"
    able = "writable" if doing == "write" else "readable"
    return HostError(f"cannot {doing} the lab folder {folder}: {error.strerror or error}",
                     hint=f"labs live under {where}: set GPULAB_HOME to a {able} folder")


def _nearest(path: Path) -> Path:
    """`path`, or its closest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_file(path: Path | None, flag: str) -> None:
    """Refuse (UsageError, before any work) a file gpulab is asked to write and could not: a
    folder, under a file, or where it may not write. Missing folders above it are made."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder", hint=f"give a file path, such as "
                                                           f"{path / 'verify.xml'}")
    _check_writable(path, flag)


def check_output_folder(path: Path | None, flag: str) -> None:
    """Refuse (UsageError, before any work) a folder gpulab is asked to write into and could
    not: an existing file, under a file, or where it may not write."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a folder",
                         hint="give a folder path; it is made if missing")
    _check_writable(path, flag)


def _check_writable(path: Path, flag: str) -> None:
    existing = _nearest(path)
    if existing != path and not existing.is_dir():
        raise UsageError(f"{flag} {path}: {existing} is a file, not a folder",
                         hint="give a path under a folder")
    if not os.access(existing, os.W_OK):
        raise UsageError(f"{flag} {path}: {existing} is not writable",
                         hint="give a path where you may write")
