"""Which lab a command is about: its name, its profile (given, or as `up` recorded it), its
folder, and the cluster `up` builds it in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.errors import NoLabError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.profile.base import LabProfile
    from gpulab.profile.load import LoadedProfile

__all__ = ["lab_name", "load", "no_lab", "require_lab", "resolve_lab", "up_cluster",
           "with_fake_gpu_nodes"]


def lab_name(profile: LabProfile, override: str | None) -> str:
    """The lab's name: `--name`, else the profile's; must be a DNS-1123 label."""
    from gpulab.profile.base import dns_label

    name = override or profile.name
    try:
        lab = dns_label(name)
    except ValueError as err:
        raise UsageError(f"--name: {err}") from None
    problems = profile.name_problems(lab)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"lab name '{lab}' is too long: {problems[0]}{more}",
                         hint="choose a shorter --name (or shorter tenant names)")
    return lab


def no_lab(lab: str, selects: str | None = None) -> NoLabError:
    """The one line for a lab that does not exist on this host (exit 6). `selects`: the
    options that chose the lab as the user gave them (` -p vcluster-kai`, ` --name x`; the
    CLI's `flags`), so the `up` it suggests builds the lab asked for, from its profile; None:
    `--name LAB`."""
    again = f" --name {lab}" if selects is None else selects
    return NoLabError(f"no lab named '{lab}' on this host",
                      hint=f"gpulab labs lists the labs here; gpulab up{again} builds it")


def require_lab(lab: str, selects: str | None = None) -> Path:
    """The lab's folder; NoLabError (its hint with `selects`, see no_lab) when it has none
    (the commands that use only the folder: `kubeconfig`, `verify`, `join`)."""
    from gpulab.paths import lab_dir

    folder = lab_dir(lab)
    if not folder.is_dir():
        raise no_lab(lab, selects)
    return folder


def load(profile: str | None) -> LoadedProfile:
    """A profile by built-in name or path (None: the default), validated."""
    from gpulab.stacks import load_profile

    return load_profile(profile)


def resolve_lab(profile: str | None, name: str | None, *, for_up: bool = False
                ) -> tuple[LoadedProfile, str]:
    """The profile and lab name (`--name`, else the profile's). A lab `up` built is described
    by its record (gpulab.lab_record): without -p, the profile document it was built from is
    used, wherever its file went; a -p must agree with it (the same profile, or the same
    document) or is refused. `up` builds from the -p given, the other commands from the
    record. A lab recorded by an older gpulab (a reference, no document) resolves as before."""
    from gpulab import lab_record
    from gpulab.profile.base import dns_label

    given = load(profile) if profile is not None or name is None else None
    if name is None:
        assert given is not None
        lab = given.profile.name
    else:
        try:
            lab = dns_label(name)
        except ValueError as error:
            raise UsageError(f"--name: {error}") from None
    record = lab_record.read(lab)
    recorded = lab_record.recorded_loaded(record) if record is not None else None
    if record is None or recorded is None:  # no record, or an older gpulab's: as before
        if profile is None:
            if name is not None:
                given = load(record.ref if record is not None else None)
        elif for_up and name is not None and record is not None and record.ref is not None \
                and given is not None and lab_record.profile_ref(given) != record.ref:
            raise _disagrees(lab, record.ref, profile, for_up=True)
        assert given is not None
        return given, lab_name(given.profile, lab)
    if profile is not None and given is not None:
        if not lab_record.agrees(record, given):
            raise _disagrees(lab, record.ref or str(record.path), profile, for_up=for_up)
        if for_up:
            return given, lab_name(given.profile, lab)
    return recorded, lab_name(recorded.profile, lab)


def _disagrees(lab: str, recorded: str, profile: str, *, for_up: bool) -> UsageError:
    """A -p that is not the profile the lab was built from (neither its name nor its document)."""
    if for_up:
        hint = (f"gpulab up --name {lab} continues it; gpulab down --name {lab} first to build "
                f"it from '{profile}'")
    else:
        hint = f"leave out -p: --name {lab} alone uses the profile the lab was built from"
    return UsageError(f"lab '{lab}' was built from profile '{recorded}', not '{profile}'",
                      hint=hint)


def with_fake_gpu_nodes(loaded: LoadedProfile, lab: str, nodes: list[str] | None,
                        kubeconfig: Path | None, context: str | None) -> LoadedProfile:
    """The profile with `--fake-gpu-node`s (for a lab in an existing cluster)."""
    from gpulab.providers import with_fake_gpu_nodes as fake_gpu_nodes

    return fake_gpu_nodes(loaded, lab, nodes,
                          existing=kubeconfig is not None or context is not None)


def up_cluster(profile: LabProfile, lab: str, kubeconfig: Path | None, context: str | None
               ) -> Any:
    """The cluster `up` builds in: `--kubeconfig/--context`; else, for a lab already built, the
    one its record names; else the profile's."""
    from gpulab.providers import choose

    return choose(profile, kubeconfig, context, lab=lab)
