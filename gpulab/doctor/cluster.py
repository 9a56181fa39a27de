"""doctor on a cluster you have: the existing cluster's preflight as findings (`cluster_findings`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpulab.doctor.facts import Finding

if TYPE_CHECKING:
    from collections.abc import Sequence



OWN_CLUSTER_DOCS = "docs/own-cluster.md"
# Each line of an existing cluster's preflight (the stack's existing_problems, word for word as
# `up` refuses with it) under the check it is about, with what to do; the first match wins.
_CLUSTER_CHECKS: tuple[tuple[str, str, str], ...] = (
    (r"Kubernetes ", "version",
     f"use a cluster at a Kubernetes version the profile's pins support ({OWN_CLUSTER_DOCS}, "
     "'Before anything is created')"),
    (r"no default StorageClass", "storage class",
     "mark one default: kubectl annotate storageclass NAME "
     "storageclass.kubernetes.io/is-default-class=true"),
    (r"no node advertises", "gpus",
     "install the NVIDIA GPU Operator or device plugin, or name nodes for fake GPUs "
     "(--fake-gpu-node NODE, or cluster.fake_gpu_nodes)"),
    (r"no GPU node takes", "gpus",
     f"as the line says ({OWN_CLUSTER_DOCS}, 'Clusters as they come')"),
    (r"whether RuntimeClass", "runtime class",
     "allow the user to list runtimeclasses.node.k8s.io, so gpulab can tell which RuntimeClass "
     "KAI may set"),
    (r"NodePort \d+", "node ports",
     "give the team another api_node_port in a copy of the profile, or set cluster.expose: "
     "port-forward"),
    (r"namespace \S+ enforces Pod Security", "pod security",
     "as the line says (kubectl label namespace ... --overwrite), or gpulab down and up again"),
    (r"(namespace|queue|TenantControlPlane) \S+ already exists", "names",
     "gpulab never adopts what it did not create: remove it, or choose other names in a copy "
     "of the profile"),
    (r".*(fake_gpu_nodes|fake-gpu-operator)", "fake gpus",
     f"as the line says ({OWN_CLUSTER_DOCS}, 'Fake GPUs on nodes you name')"),
    (r"KAI Scheduler", "kai scheduler",
     f"as the line says; gpulab never upgrades, reconfigures or removes it ({OWN_CLUSTER_DOCS})"),
    (r"cert-manager", "cert-manager",
     f"as the line says; gpulab never changes a cert-manager it found ({OWN_CLUSTER_DOCS})"),
    (r"Kamaji", "kamaji",
     f"as the line says; gpulab never upgrades or removes a Kamaji it found "
     f"({OWN_CLUSTER_DOCS})"),
    (r"no LoadBalancer|cluster\.metallb|cluster\.expose", "load balancer",
     f"as the line says ({OWN_CLUSTER_DOCS}, kamaji-hami's 'Before anything is created')"),
    (r"no node address", "node address",
     "set cluster.node_address to an address of a node this machine reaches"),
)
DENIED_PREFIX = "not allowed to "


def cluster_findings(version: str, denied: Sequence[str], asked: int,
                     storage_class: str | None, problems: Sequence[str], context: str
                     ) -> list[Finding]:
    """An existing cluster's read-only preflight as doctor lines: its Kubernetes `version`,
    the access reviews (`asked`, those `denied` each named), the default StorageClass, and each
    of `problems` (why `up` would refuse, as it says it) under its check with the fix."""
    out: list[Finding] = []
    by_check: dict[str, list[Finding]] = {}
    for problem in problems:
        if problem.startswith(DENIED_PREFIX):
            continue  # the access line below names every denied review, not the first
        check, fix = next(((c, f) for pattern, c, f in _CLUSTER_CHECKS
                           if re.match(pattern, problem)),
                          ("cluster", f"see {OWN_CLUSTER_DOCS} ('Before anything is created')"))
        by_check.setdefault(check, []).append(Finding(check, "fail", problem, fix))
    out.extend(by_check.pop("version", [])
               or [Finding("version", "ok", f"Kubernetes {version}: the profile's pins support "
                                            "it")])
    if denied:
        out.append(Finding(
            "access", "fail",
            f"{len(denied)} of {asked} access reviews denied: not allowed to "
            f"{'; '.join(denied)}",
            f"grant them to the user of context {context} ({OWN_CLUSTER_DOCS}, 'RBAC to grant'; "
            "a cluster-admin binding is what works in practice), or use a context that has "
            "them"))
    else:
        out.append(Finding("access", "ok", f"all {asked} access reviews allowed (what up "
                                           "creates and removes)"))
    classes = by_check.pop("storage class", [])
    if classes:
        out.extend(classes)
    elif storage_class is not None:
        out.append(Finding("storage class", "ok", f"default StorageClass {storage_class}"))
    for findings in by_check.values():
        out.extend(findings)
    if not any(f.status == "fail" for f in out):
        out.append(Finding("cluster", "ok", "nothing up would refuse here (gpulab plan lists "
                                            "what it would create)"))
    return out
