"""Pod Security Admission: the level a namespace enforces, and the level a pod needs.

Kubernetes' built-in Pod Security admission (GA since v1.25) refuses, in a namespace, every pod
that breaks the Pod Security Standard the namespace enforces. The namespace says which through
its labels (kubernetes/pod-security-admission v0.36.2 api/constants.go:37-46:
`pod-security.kubernetes.io/enforce`, `-version`, and `audit`/`warn`; docs:
https://kubernetes.io/docs/tasks/configure-pod-container/enforce-standards-namespace-labels/).
A namespace without the label gets the cluster's default (AdmissionConfiguration `defaults`),
which the API does not show: gpulab cannot read it, so an unlabelled namespace's level is
unknown, never "privileged". A label that is not one of the three levels is read as
`restricted` (api/helpers.go:96-106 ParseLevel, used by PolicyToEvaluate :181-197).

`needed(pod_spec)` is the least strict level a pod passes, by the checks of the same package
at v0.36.2 (policy/check_*.go; each names its fields in its header comment): a pod breaking a
baseline check needs `privileged`, one breaking only restricted checks needs `baseline`. Pure
functions over pod specs as plain dicts (a rendered chart's objects, a pod gpulab writes).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ENFORCE_LABEL",
    "LEVELS",
    "PRIVILEGED",
    "allows",
    "baseline_violations",
    "enforced",
    "namespace_labels",
    "needed",
    "pod_specs",
    "restricted_violations",
]

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"  # api/constants.go:40
PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)  # least strict first (api/helpers.go CompareLevels)

# check_capabilities_baseline.go: capabilities a baseline pod may add
_BASELINE_CAPS = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                            "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP",
                            "SETUID", "SYS_CHROOT"})
# check_sysctls.go (1.32+): the sysctls a baseline pod may set
_SAFE_SYSCTLS = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                           "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                           "net.ipv4.ip_unprivileged_port_start",
                           "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
                           "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                           "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem",
                           "net.ipv4.tcp_wmem"})
# check_seLinuxOptions.go: the SELinux types a baseline pod may set
_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
# check_restrictedVolumes.go: the only volume sources a restricted pod may use
_RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                 "persistentVolumeClaim", "projected", "secret", "image"})
_WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
              "ReplicationController")


def namespace_labels(level: str) -> dict[str, str]:
    """The label a namespace gpulab creates carries so that its pods are admitted whatever the
    cluster's default is."""
    assert level in LEVELS, level
    return {ENFORCE_LABEL: level}


def enforced(labels: dict[str, Any] | None) -> str | None:
    """The level a namespace's labels enforce; None when it has no enforce label (then the
    cluster's default applies, which gpulab cannot read). An unknown value is `restricted`, as
    Pod Security admission reads it."""
    value = (labels or {}).get(ENFORCE_LABEL)
    if value is None:
        return None
    return str(value) if value in LEVELS else RESTRICTED


def allows(level: str, need: str) -> bool:
    """Whether a namespace enforcing `level` admits pods that need `need`."""
    return LEVELS.index(level) <= LEVELS.index(need)


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod spec(s) an object makes pods from: a Pod's own, a workload's template, a
    CronJob's job template ([] for anything else)."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return [spec]
    if kind in _WORKLOADS:
        return [((spec.get("template") or {}).get("spec")) or {}]
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        return [((job.get("template") or {}).get("spec")) or {}]
    return []


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or [] if isinstance(c, dict)]


def _seccomp(context: dict[str, Any] | None) -> str | None:
    return ((context or {}).get("seccompProfile") or {}).get("type")


def baseline_violations(spec: dict[str, Any]) -> list[str]:
    """What in the pod spec the baseline standard forbids, one phrase each ([]: it passes)."""
    out: list[str] = []
    pod_ctx = spec.get("securityContext") or {}
    user_ns = spec.get("hostUsers") is False
    out += [f"{key}: true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    out += [f"hostPath volume {v.get('name')}" for v in spec.get("volumes") or []
            if isinstance(v, dict) and "hostPath" in v]
    out += [f"sysctl {s.get('name')}" for s in pod_ctx.get("sysctls") or []
            if s.get("name") not in _SAFE_SYSCTLS]
    if _seccomp(pod_ctx) == "Unconfined":
        out.append("seccompProfile Unconfined")
    if ((pod_ctx.get("appArmorProfile") or {}).get("type")) == "Unconfined":
        out.append("appArmorProfile Unconfined")
    if (pod_ctx.get("windowsOptions") or {}).get("hostProcess"):
        out.append("windows hostProcess")
    out += _selinux(pod_ctx, "pod")
    for container in _containers(spec):
        name = container.get("name")
        ctx = container.get("securityContext") or {}
        if ctx.get("privileged"):
            out.append(f"container {name} privileged")
        added = [str(c) for c in (ctx.get("capabilities") or {}).get("add") or []
                 if str(c) not in _BASELINE_CAPS]
        if added:
            out.append(f"container {name} adds capabilities {', '.join(added)}")
        ports = [str(p.get("hostPort")) for p in container.get("ports") or []
                 if p.get("hostPort")]
        if ports:
            out.append(f"container {name} hostPort {', '.join(ports)}")
        if ctx.get("procMount", "Default") != "Default" and not user_ns:
            out.append(f"container {name} procMount {ctx['procMount']}")
        if _seccomp(ctx) == "Unconfined":
            out.append(f"container {name} seccompProfile Unconfined")
        if ((ctx.get("appArmorProfile") or {}).get("type")) == "Unconfined":
            out.append(f"container {name} appArmorProfile Unconfined")
        if (ctx.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"container {name} windows hostProcess")
        out += _selinux(ctx, f"container {name}")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            handler = container.get(probe) or {}
            if any((handler.get(k) or {}).get("host") for k in ("httpGet", "tcpSocket")):
                out.append(f"container {name} {probe} host")
    return out


def _selinux(ctx: dict[str, Any], where: str) -> list[str]:
    options = ctx.get("seLinuxOptions") or {}
    bad = [f"{k} {options[k]}" for k in ("user", "role") if options.get(k)]
    if options.get("type", "") not in _SELINUX_TYPES:
        bad.append(f"type {options['type']}")
    return [f"{where} seLinuxOptions {b}" for b in bad]


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """What the restricted standard forbids beyond baseline, one phrase each ([]: it passes)."""
    out: list[str] = []
    pod_ctx = spec.get("securityContext") or {}
    user_ns = spec.get("hostUsers") is False
    out += [f"volume {v.get('name')} ({k})" for v in spec.get("volumes") or []
            if isinstance(v, dict) for k in v if k != "name" and k not in _RESTRICTED_VOLUMES]
    if not user_ns and pod_ctx.get("runAsUser") == 0:
        out.append("runAsUser 0")
    if not user_ns and pod_ctx.get("runAsNonRoot") is False:
        out.append("runAsNonRoot false")
    for container in _containers(spec):
        name = container.get("name")
        ctx = container.get("securityContext") or {}
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append(f"container {name} allowPrivilegeEscalation not false")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in [str(c) for c in caps.get("drop") or []]:
            out.append(f"container {name} does not drop ALL capabilities")
        added = [str(c) for c in caps.get("add") or [] if str(c) != "NET_BIND_SERVICE"]
        if added:
            out.append(f"container {name} adds capabilities {', '.join(added)}")
        if not user_ns:
            non_root = ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot"))
            if non_root is not True:
                out.append(f"container {name} runAsNonRoot not true")
            if ctx.get("runAsUser") == 0:
                out.append(f"container {name} runAsUser 0")
        if (_seccomp(ctx) or _seccomp(pod_ctx)) not in ("RuntimeDefault", "Localhost"):
            out.append(f"container {name} seccompProfile not RuntimeDefault or Localhost")
    return out


def needed(spec: dict[str, Any]) -> str:
    """The least strict level that admits a pod of this spec."""
    if baseline_violations(spec):
        return PRIVILEGED
    if restricted_violations(spec):
        return BASELINE
    return RESTRICTED
