"""Clusters that enforce Pod Security's restricted level by default (issue #35: Rancher's
`rancher-restricted`, RKE2's CIS profile): verify's pods are restricted-compliant, so the API
server admits them in the run's own namespace, which carries no Pod Security label.

The fake API server here refuses, as Pod Security admission does, a pod that breaks one of the
restricted checks a pause container can break (kubernetes/pod-security-admission v0.36.2
policy/check_allowPrivilegeEscalation.go, check_capabilities_restricted.go,
check_runAsNonRoot.go, check_seccompProfile_restricted.go), with its own reading of them, and
answers 403 `violates PodSecurity "restricted:latest"` (the form of admission.go's
`forbidden` message). Against main's gpulab the HAMi and KAI runs error on the first create.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import pod_security
from gpulab.errors import AdapterError
from tests.cluster import builders as b
from tests.cluster.test_eligibility import HAMI_PASS, KAI_PASS, RUN, SERVER, _run


def _breaks_restricted(spec: dict[str, Any]) -> list[str]:
    pod_ctx = spec.get("securityContext") or {}
    out = []
    for c in spec.get("containers") or []:
        ctx = c.get("securityContext") or {}
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append("allowPrivilegeEscalation != false")
        if "ALL" not in ((ctx.get("capabilities") or {}).get("drop") or []):
            out.append("unrestricted capabilities")
        if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
            out.append("runAsNonRoot != true")
        seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append("seccompProfile")
    return out


class RestrictedApi(b.ClusterApi):
    """An API server whose default Pod Security level is restricted (no namespace label)."""

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        if obj.get("kind") == "Pod":
            broken = _breaks_restricted(obj.get("spec") or {})
            if broken:
                raise AdapterError(
                    f"create Pod at https://x: 403 Forbidden: pods \"{obj['metadata']['name']}\" "
                    f"is forbidden: violates PodSecurity \"restricted:latest\": "
                    f"{', '.join(dict.fromkeys(broken))}")
        return super().apply(obj, dry_run=dry_run)


def _restricted(shape: b.ClusterApi) -> RestrictedApi:
    api = RestrictedApi("cluster", shape.version)
    api.put(*shape.objects.values())
    return api


@pytest.mark.parametrize("scheduler", ["hami", "kai"])
def test_verify_pods_pass_a_restricted_default(scheduler: str) -> None:
    shape = b.shape_hami_eligibility() if scheduler == "hami" else b.shape_kai_eligibility()
    api = _restricted(shape)
    assert _run(api, kai=scheduler == "kai") == (HAMI_PASS if scheduler == "hami" else KAI_PASS)


def test_every_planned_pod_needs_no_more_than_restricted() -> None:
    from gpulab.cluster.inventory import inventory
    from gpulab.cluster.observe import read_cluster
    from gpulab.cluster.plan import plan

    for shape in (b.shape_hami_eligibility(), b.shape_kai_eligibility()):
        planned = plan(inventory(read_cluster(shape, "prod", SERVER)), RUN)
        pods = planned.objects()[1:]
        assert pods and all(pod_security.needed(p["spec"]) == pod_security.RESTRICTED
                            for p in pods)
