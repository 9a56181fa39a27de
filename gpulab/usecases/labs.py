"""`gpulab labs`: every lab on this host, as its folder and its provider say."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError

if TYPE_CHECKING:
    from gpulab.adapters.base import DockerReader

__all__ = ["LAB_RECORD", "cluster_text", "labs", "recorded_profile"]

LAB_RECORD = "lab.json"


def labs(reader: DockerReader | None) -> dict[str, Any]:
    """Every lab on this host, from the state folder and Docker's labels: `labs` (one dict per
    lab with a state folder: profile, stack, state, tenants, age, kubeconfigs, `cluster`: where
    its provider says it is) and `leftovers` (labs with containers but no state folder, each
    with the command that removes them). Each lab's state is its provider's (`lab_state`:
    ready | partial | broken | unreachable | unknown; without Docker, `reader` None, what
    depends on containers is unknown); the providers are asked at once (LABS_AT_ONCE), so N
    unreachable clusters cost one timeout, not N."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from gpulab.naming import LABEL_LAB
    from gpulab.paths import labs_root, unwritable_labs
    from gpulab.providers import container_lab, for_lab

    containers: dict[str, list[Any]] = {}
    if reader is not None:
        for info in reader.containers({}):
            lab = info.labels.get(LABEL_LAB) or container_lab(info.labels)
            if lab:
                containers.setdefault(lab, []).append(info)
    root = labs_root()
    try:  # no folder yet is no lab; a folder that cannot be read is not "no lab"
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except FileNotFoundError:
        folders = []
    except OSError as error:
        raise unwritable_labs(root, error, doing="read") from error
    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=LABS_AT_ONCE, thread_name_prefix="gpulab-labs") as pool:
        for folder in folders:
            lab = folder.name
            members, stack = _recorded_members(lab)
            kubeconfigs = sorted(p.stem for p in folder.glob("*.kubeconfig"))
            found = containers.get(lab, [])
            record = folder / LAB_RECORD
            since = record.stat().st_mtime if record.exists() else folder.stat().st_mtime
            provider = for_lab(lab)
            rows.append({
                "name": lab,
                "profile": recorded_profile(lab) or "",
                "stack": stack,
                "state": pool.submit(provider.lab_state, lab, found, kubeconfigs, members,
                                     observed=reader is not None),
                "tenants": members,
                "age_seconds": int(time.time() - since),
                "containers": sorted(f"{c.name} {c.status}" for c in found),
                "kubeconfigs": [str(folder / f"{name}.kubeconfig") for name in kubeconfigs],
                "cluster": provider.where(lab),
            })
    for row in rows:
        row["state"] = row["state"].result()
    known = {row["name"] for row in rows}
    leftovers = [{"name": lab, "containers": sorted(c.name for c in found),
                  "remove": f"gpulab down --name {lab}"}
                 for lab, found in sorted(containers.items()) if lab not in known]
    return {"labs": rows, "leftovers": leftovers}


def cluster_text(where: dict[str, str]) -> str:
    """`labs`' one line for a lab's `cluster` (its provider's words)."""
    from gpulab.providers import cluster_text as text

    return text(where)


LABS_AT_ONCE = 8  # labs whose providers `labs` asks at once


def _recorded_members(lab: str) -> tuple[list[str], str]:
    """The tenants (teams) and stack of the profile the lab was built from: the recorded
    document, else (an older record) the profile its reference names ([] and '' if unreadable).
    """
    from gpulab import lab_record
    from gpulab.stacks import load_profile

    record = lab_record.read(lab)
    if record is None:
        return [], ""
    try:
        loaded = lab_record.recorded_loaded(record)
        if loaded is None and record.ref is not None:
            loaded = load_profile(record.ref)
    except GpulabError:
        return [], record.stack
    if loaded is None:
        return [], record.stack
    return loaded.profile.member_names(), loaded.profile.stack


def recorded_profile(lab: str) -> str | None:
    """The profile reference (built-in name or file path) `up` recorded for the lab, or None."""
    from gpulab import lab_record

    record = lab_record.read(lab)
    return record.ref if record is not None else None
