"""The options several commands take (-p, --name, a cluster's kubeconfig), their completions,
and what a command holding a lab needs: its lock, the stop signals, the flags to repeat."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpulab.cli.common import err
from gpulab.errors import GpulabError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["ClusterContextOpt", "ClusterKubeconfigOpt", "FakeGpuNodeOpt", "NameOpt",
           "ProfileOpt", "complete_checks", "complete_labs", "complete_members",
           "complete_profiles", "flags", "locked", "stop_signals"]


def complete_profiles(incomplete: str) -> list[str]:
    from gpulab.profile.load import builtin_profiles

    return [name for name in builtin_profiles() if name.startswith(incomplete)]


def complete_labs(incomplete: str) -> list[str]:
    from gpulab.paths import labs_root

    root = labs_root()
    names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return [name for name in names if name.startswith(incomplete)]


def complete_members(ctx: typer.Context, incomplete: str) -> list[str]:
    """Tenants (teams) of the lab named by --name, else of the profile given or the default."""
    from gpulab import core

    try:
        loaded, _ = core.resolve_lab(ctx.params.get("profile"), ctx.params.get("name"))
    except GpulabError:
        return []
    members = ["management", *loaded.profile.member_names()]
    return [m for m in members if m.startswith(incomplete)]


def complete_checks(ctx: typer.Context, incomplete: str) -> list[str]:
    """The check ids of the lab's stack (for `--tc`)."""
    from gpulab import core

    try:
        loaded, _ = core.resolve_lab(ctx.params.get("profile"), ctx.params.get("name"))
        ids = core.check_ids(loaded.profile.stack)
    except GpulabError:
        return []
    return [i for i in ids if i.lower().startswith(incomplete.lower())]


def _not_blank(value: str | None) -> str | None:
    """`--name ''` or `-p "$UNSET"` must not quietly mean the default lab or profile."""
    if value is not None and not value.strip():
        raise typer.BadParameter("must not be empty (leave the option out for the default)")
    return value


ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", "-p",
        help="Built-in profile name (see `gpulab profiles list`) or a path to a profile file. "
        "Default: kamaji-hami.",
        autocompletion=complete_profiles,
        callback=_not_blank,
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", help="Lab name; defaults to the profile's `name`.",
                 autocompletion=complete_labs, callback=_not_blank),
]
ClusterKubeconfigOpt = Annotated[
    Path | None, typer.Option("--kubeconfig", metavar="<path>",
                              help="Build the lab in this existing cluster (provider existing) "
                                   "instead of a new kind cluster; see docs/own-cluster.md.")
]
ClusterContextOpt = Annotated[
    str | None, typer.Option("--context", metavar="<str>",
                             help="With an existing cluster: the kubeconfig's context (default: "
                                  "its current context).")
]
FakeGpuNodeOpt = Annotated[
    list[str] | None, typer.Option("--fake-gpu-node", metavar="<node>",
                                   help="With an existing cluster (vcluster-kai): a node that "
                                        "gets fake GPUs from fake-gpu-operator, as "
                                        "cluster.fake_gpu_nodes; repeat for more. Recorded in "
                                        "lab.json; `down` removes the labels it set.")
]


@contextlib.contextmanager
def stop_signals() -> Iterator[list[int]]:
    """SIGTERM and SIGHUP end `up` the way Ctrl-C does (no new step starts, the lab's state is
    what exists, so `up` resumes), and stop the tools it runs (kind, git) with their process
    groups, which a terminal's Ctrl-C reaches by itself. Yields the signals received."""
    import signal
    import threading

    from gpulab import children

    received: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        received.append(signum)
        children.terminate_all()
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield received
        return
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def locked(lab: str, command: str) -> Any:
    """The lab's one-writer lock for this command (gpulab.lock)."""
    from gpulab.lock import lab_lock
    from gpulab.paths import lab_dir

    return lab_lock(lab, lab_dir(lab), command,
                    note=lambda message: err.print(f"note: {message}", markup=False))


def flags(profile: str | None, name: str | None) -> str:
    """The -p/--name the user gave, for hints that must work when pasted."""
    import shlex

    parts = []
    if profile:
        parts.append(f"-p {shlex.quote(profile)}")
    if name:
        parts.append(f"--name {shlex.quote(name)}")
    return (" " + " ".join(parts)) if parts else ""
