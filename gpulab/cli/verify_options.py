"""The options of `gpulab verify` and its subcommands (gpulab.cli.verify)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpulab.cli.options import complete_checks
from gpulab.cli.verify_lab import replay_source

__all__ = ["ContextsOpt", "DiscoveryTimeoutOpt", "DryRunOpt", "InspectOpt", "JunitOpt",
           "KeepOpt", "KubeconfigsOpt", "NamespaceOpt", "RecordOpt", "ReplayOpt",
           "RequestTimeoutOpt", "TcOpt"]

TcOpt = Annotated[
    str | None, typer.Option("--tc", help="Only these checks, e.g. TC-05,TC-06 or KAI-05 "
                                           "(or 5,6).", autocompletion=complete_checks)
]
KeepOpt = Annotated[
    bool, typer.Option("--keep", help="Leave verify's namespace and pods in the tenants "
                                      "(teams).")
]
JunitOpt = Annotated[
    Path | None, typer.Option("--junit", help="Write JUnit XML (one testcase per check and "
                                               "tenant) to this file.")
]
RecordOpt = Annotated[
    Path | None,
    typer.Option("--record", help="Save the API objects the checks looked at into this "
                                  "folder (see docs/recording-format.md)."),
]
ReplayOpt = Annotated[
    Path | None, typer.Option("--replay", callback=replay_source,
                              help="Re-evaluate a recording offline; no cluster is "
                                   "contacted. Judged against the profile it was recorded "
                                   "with, or --profile. example:kamaji-hami and "
                                   "example:vcluster-kai replay the examples shipped with "
                                   "gpulab.")
]
KubeconfigsOpt = Annotated[
    list[Path] | None,
    typer.Option("--kubeconfig", metavar="<path>",
                 help="A cluster gpulab did not build (repeat for several tenants); "
                      "without it, --context, --inspect and --dry-run use $KUBECONFIG or "
                      "~/.kube/config, as kubectl does. See docs/verify-any-cluster.md.")
]
ContextsOpt = Annotated[
    list[str] | None,
    typer.Option("--context", metavar="<str>",
                 help="The kubeconfig context: once for all, or once per --kubeconfig; "
                      "without --kubeconfig, one cluster per --context.")
]
RequestTimeoutOpt = Annotated[
    str, typer.Option("--request-timeout", metavar="<duration>",
                      help="How long to wait for each API request of a --kubeconfig "
                           "cluster, as kubectl's flag: 30s, 1m, 500ms; 0 for no limit.")
]
DiscoveryTimeoutOpt = Annotated[
    str, typer.Option("--discovery-timeout", metavar="<duration>",
                      help="How long reading each --kubeconfig cluster may take in all; "
                           "what is not read by then is shown as unknown. 0 for no limit.")
]
InspectOpt = Annotated[
    bool, typer.Option("--inspect", help="A cluster gpulab did not build: show what is "
                                         "installed and the GPU cards; read-only, creates "
                                         "nothing.")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="A cluster gpulab did not build: also show the "
                                         "pods verify would create, sized from the cards "
                                         "found.")
]
NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", help="With --kubeconfig: the namespace for "
                                                 "verify's pods (default "
                                                 "gpulab-verify-RUNID).")
]
