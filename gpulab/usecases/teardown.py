"""`gpulab down`: what the lab's provider made goes, then the lab's files and contexts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from gpulab.lab_record import LabRecord
    from gpulab.providers.base import ClusterProvider, Teardown

__all__ = ["remove_lab"]


def remove_lab(lab: str, provider: ClusterProvider, members: Sequence[str] = ()) -> Teardown:
    """Remove what the lab's provider made for it (kind: everything labelled for the lab, see
    lab_provider), and the contexts `gpulab kubeconfig --merge` added for it (those its record
    lists; for a lab recorded by an older gpulab, also the `gpulab-LAB-MEMBER` contexts of
    `members` in the user's kubeconfig); works on half-built labs and after crashes."""
    from gpulab import lab_record

    record = lab_record.read(lab)  # before the lab's folder goes
    return provider.teardown(lab, record, lambda: _forget(lab, record, members))


def _forget(lab: str, record: LabRecord | None, members: Sequence[str]) -> list[str]:
    """The lab's files and merged contexts, removed after what the provider removed."""
    return _remove_lab_files(lab) + _remove_contexts(lab, record, members)


def _remove_lab_files(lab: str) -> list[str]:
    import shutil

    from gpulab.lock import LOCK_FILE
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    if not folder.exists():
        return []
    files = [p for p in folder.iterdir() if p.name != LOCK_FILE]  # down holds the lock
    for path in files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if not (folder / LOCK_FILE).exists():
        folder.rmdir()  # else the lock's release removes the emptied folder
    return [f"lab files {folder}"] if files else []


def _remove_contexts(lab: str, record: LabRecord | None, members: Sequence[str]
                     ) -> list[str]:
    """Remove the lab's merged contexts: exactly the recorded ones (each from the file it went
    into) when the record is complete; else also the ones named after `members` in the user's
    kubeconfig, as before the record kept them."""
    from gpulab import kubeconfigs

    wanted: dict[Path, set[str]] = {}
    for merged in record.contexts if record is not None else ():
        wanted.setdefault(merged.kubeconfig, set()).add(merged.context)
    if record is None or not record.complete:
        names = {kubeconfigs.context_name(lab, m) for m in ["management", *members]}
        wanted.setdefault(kubeconfigs.user_kubeconfig(), set()).update(names)
    return [f"context {context} from {target}" for target, names in wanted.items()
            for context in kubeconfigs.remove_names(target, names)]


