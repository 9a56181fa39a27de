"""`gpulab kubeconfig`: a tenant's kubeconfig (its path, merged, or through a port-forward)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from gpulab.cli.common import err, guard
from gpulab.cli.options import NameOpt, ProfileOpt, complete_members, flags, stop_signals
from gpulab.errors import ExitCode, HostError, UsageError

if TYPE_CHECKING:
    from gpulab.profile.base import LabProfile

__all__ = ["register"]


def kubeconfig_command(
    tenant: Annotated[str, typer.Argument(help="Tenant (or team) name, or 'management'.",
                                          autocompletion=complete_members)],
    profile: ProfileOpt = None,
    name: NameOpt = None,
    export: Annotated[
        bool, typer.Option("--export", help="Print `export KUBECONFIG=...` for eval.")
    ] = False,
    merge: Annotated[
        bool, typer.Option("--merge", help="Add context gpulab-LAB-TENANT to your kubeconfig "
                                           "($KUBECONFIG or ~/.kube/config), as kind does; "
                                           "`gpulab down` removes it.")
    ] = False,
    port_forward: Annotated[
        bool, typer.Option("--port-forward",
                           help="A lab in an existing cluster: forward a local port through "
                                "the cluster's API to the team's vCluster (as `vcluster "
                                "connect` does), print the path of a kubeconfig for it and "
                                "wait until Ctrl-C.")
    ] = False,
    port: Annotated[
        int | None, typer.Option("--port", min=0, max=65535, metavar="<int>",
                                 help="With --port-forward: the local port on 127.0.0.1 "
                                      "(default: the team's api_host_port, the port its saved "
                                      "kubeconfig names; 0: any free port).")
    ] = None,
) -> None:
    """Print the path of a tenant's (or team's) saved kubeconfig (never its contents). With
    --port-forward: the path of a temporary kubeconfig reaching the team's vCluster through a
    port-forward, kept open until Ctrl-C (exit 130; only that file is removed)."""

    def body() -> int:
        from gpulab import core

        if port is not None and not port_forward:
            raise UsageError("--port goes with --port-forward")
        if port_forward and merge:
            raise UsageError("--port-forward and --merge cannot be combined: the forwarded "
                             "kubeconfig lasts only while the command runs")
        loaded, lab = core.resolve_lab(profile, name)
        folder = core.require_lab(lab, flags(profile, name))
        known = ["management", *loaded.profile.member_names()]
        if tenant not in known:
            raise UsageError(f"unknown tenant '{tenant}'", hint=f"choose from {', '.join(known)}")
        if port_forward:
            return _port_forward(lab, loaded.profile, tenant, port, export=export)
        path = folder / f"{tenant}.kubeconfig"
        if not path.is_file():
            again = flags(profile, name) or f" --name {lab}"
            raise HostError(f"lab '{lab}' is not up: no kubeconfig saved for {tenant} in "
                            f"{folder}", hint=f"run gpulab up{again}")
        if tenant != "management" and core.lab_forwarded(lab):
            err.print(f"note: {tenant}'s vCluster is reached by port-forward: its kubeconfig "
                      f"answers only while `gpulab kubeconfig {tenant} --name {lab} "
                      "--port-forward` runs", markup=False, highlight=False)
        if merge:
            from gpulab import kubeconfigs, lab_record

            target = kubeconfigs.user_kubeconfig()
            context = kubeconfigs.context_name(lab, tenant)
            lab_record.record_context(lab, context, target)  # first: `down` removes it
            kubeconfigs.merge_file(path, target, context)
            err.print(f"added context {context} to {target} (mode 0600); use it with "
                      f"kubectl --context {context} or kubectl config use-context {context}",
                      markup=False)
            typer.echo(context)
            return 0
        typer.echo(f"export KUBECONFIG={path}" if export else str(path))
        return 0

    guard(body)


def _port_forward(lab: str, profile: LabProfile, tenant: str, port: int | None, *,
                  export: bool) -> int:
    """`kubeconfig --port-forward`: open it, print the kubeconfig's path, wait for Ctrl-C (or
    SIGTERM/SIGHUP), then close it and remove that file only."""
    import sys
    import time

    from gpulab import core

    def problem(message: str) -> None:
        err.print(f"port-forward: {message}", markup=False, highlight=False)

    with stop_signals() as received:
        forward = None
        try:
            forward = core.port_forward(lab, profile, tenant, port=port, on_error=problem)
            typer.echo(f"export KUBECONFIG={forward.kubeconfig}" if export
                       else str(forward.kubeconfig))
            sys.stdout.flush()
            err.print(f"forwarding {forward.server} to pod {forward.namespace}/{forward.pod} "
                      f"port 8443 through the cluster's API; {tenant}'s vCluster answers "
                      f"{forward.version}. Use it: KUBECONFIG={forward.kubeconfig} kubectl get "
                      "namespaces. Ctrl-C stops the forward and removes that file.",
                      markup=False, highlight=False)
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            what = "stopped" if not received else "terminated"
            err.print(f"{what}: port-forward to {tenant}'s vCluster closed"
                      + (f"; removed {forward.kubeconfig}" if forward else ""), markup=False)
            return 128 + received[0] if received else int(ExitCode.INTERRUPTED)
        finally:
            if forward is not None:
                forward.close()


def register(app: typer.Typer) -> None:
    app.command("kubeconfig", short_help="Print the path of a tenant's kubeconfig.")(
        kubeconfig_command)
