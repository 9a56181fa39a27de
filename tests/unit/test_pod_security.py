"""gpulab.pod_security: a namespace's enforced level as Pod Security admission reads its labels,
and the level a pod spec needs, rule by rule as kubernetes/pod-security-admission v0.36.2
policy/check_*.go states them (each check's header comment names its fields and values)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import pod_security as ps


@pytest.mark.parametrize(("labels", "level"), [
    (None, None), ({}, None), ({"other": "x"}, None),  # the cluster's default: unknown here
    ({ps.ENFORCE_LABEL: "privileged"}, "privileged"),
    ({ps.ENFORCE_LABEL: "baseline"}, "baseline"),
    ({ps.ENFORCE_LABEL: "restricted"}, "restricted"),
    ({ps.ENFORCE_LABEL: "Privileged"}, "restricted"),  # api/helpers.go ParseLevel: else restricted
    ({ps.ENFORCE_LABEL: ""}, "restricted"),
    ({"pod-security.kubernetes.io/warn": "privileged"}, None),  # warn does not enforce
])
def test_enforced_level_as_admission_reads_the_labels(labels: Any, level: str | None) -> None:
    assert ps.enforced(labels) == level


def test_levels_admit_what_is_no_stricter() -> None:
    assert ps.allows("privileged", "privileged") and ps.allows("baseline", "restricted")
    assert not ps.allows("baseline", "privileged")
    assert not ps.allows("restricted", "baseline")
    assert ps.namespace_labels("privileged") == {
        "pod-security.kubernetes.io/enforce": "privileged"}


RESTRICTED_CONTAINER = {"name": "c", "securityContext": {
    "allowPrivilegeEscalation": False, "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}


def _pod(**spec: Any) -> dict[str, Any]:
    return {"containers": [RESTRICTED_CONTAINER], **spec}


def _with(**context: Any) -> dict[str, Any]:
    container = {**RESTRICTED_CONTAINER, "securityContext": {
        **RESTRICTED_CONTAINER["securityContext"], **context}}  # type: ignore[dict-item]
    return {"containers": [container]}


@pytest.mark.parametrize(("spec", "why"), [
    (_pod(hostNetwork=True), "hostNetwork: true"),  # check_hostNamespaces.go
    (_pod(hostPID=True), "hostPID: true"),
    (_pod(volumes=[{"name": "dev", "hostPath": {"path": "/dev"}}]), "hostPath volume dev"),
    (_with(privileged=True), "container c privileged"),  # check_privileged.go
    (_with(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]}),
     "container c adds capabilities SYS_ADMIN"),  # check_capabilities_baseline.go
    ({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]},
     "container c hostPort 80"),  # check_hostPorts.go
    (_with(seccompProfile={"type": "Unconfined"}), "container c seccompProfile Unconfined"),
    (_with(procMount="Unmasked"), "container c procMount Unmasked"),
    (_pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
     "sysctl kernel.msgmax"),  # check_sysctls.go
    (_with(seLinuxOptions={"type": "spc_t"}), "container c seLinuxOptions type spc_t"),
])
def test_a_baseline_rule_broken_needs_privileged(spec: dict[str, Any], why: str) -> None:
    assert why in ps.baseline_violations(spec)
    assert ps.needed(spec) == "privileged"


@pytest.mark.parametrize(("spec", "why"), [
    ({"containers": [{"name": "c"}]}, "container c allowPrivilegeEscalation not false"),
    (_with(capabilities={"drop": ["all"]}),  # "ALL" is compared as written
     "container c does not drop ALL capabilities"),
    (_with(capabilities={"drop": ["ALL"], "add": ["CHOWN"]}), "container c adds capabilities "
     "CHOWN"),  # baseline allows it, restricted only NET_BIND_SERVICE
    (_with(runAsNonRoot=False), "container c runAsNonRoot not true"),
    (_with(runAsUser=0), "container c runAsUser 0"),
    (_with(seccompProfile=None), "container c seccompProfile not RuntimeDefault or Localhost"),
    (_pod(volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}}]), "volume n (nfs)"),
])
def test_a_restricted_rule_broken_needs_baseline(spec: dict[str, Any], why: str) -> None:
    assert ps.baseline_violations(spec) == []
    assert why in ps.restricted_violations(spec)
    assert ps.needed(spec) == "baseline"


def test_a_hardened_pod_passes_restricted_and_pod_level_settings_count() -> None:
    assert ps.needed(_pod()) == "restricted"
    pod_level = {"securityContext": {"runAsNonRoot": True,
                                     "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [{"name": "c", "securityContext": {
                     "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
                 "volumes": [{"name": "s", "secret": {"secretName": "x"}},
                             {"name": "p", "projected": {"sources": []}}]}
    assert ps.needed(pod_level) == "restricted"
    # a user namespace (hostUsers: false) relaxes runAsNonRoot / runAsUser (1.35 checks)
    assert ps.needed({**pod_level, "hostUsers": False, "securityContext": {
        "seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 0}}) == "restricted"


def test_pod_specs_of_each_workload_kind() -> None:
    spec = {"containers": [{"name": "c"}]}
    template = {"template": {"spec": spec}}
    assert ps.pod_specs({"kind": "Pod", "spec": spec}) == [spec]
    for kind in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        assert ps.pod_specs({"kind": kind, "spec": template}) == [spec]
    assert ps.pod_specs({"kind": "CronJob", "spec": {"jobTemplate": {"spec": template}}}) == [spec]
    assert ps.pod_specs({"kind": "ConfigMap"}) == []
