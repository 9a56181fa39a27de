"""Validate rendered objects against the upstream schemas in tests/data/pinned, strictly.

CRD schemas are structural OpenAPI v3: unknown fields are pruned by the API server, not refused.
To catch misspelt keys, every object schema with `properties` is closed here unless it says
`x-kubernetes-preserve-unknown-fields` or gives `additionalProperties` itself.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

PINNED_DATA = Path(__file__).resolve().parent / "data" / "pinned"  # SOURCES.md there

CRD_FILES = {
    ("kamaji.clastix.io/v1alpha1", "TenantControlPlane"): "kamaji_crd_tenantcontrolplanes.yaml",
    ("metallb.io/v1beta1", "IPAddressPool"): "kamaji_metallb_crd_ipaddresspools_v0.16.1.yaml",
    ("metallb.io/v1beta1", "L2Advertisement"): "kamaji_metallb_crd_l2advertisements_v0.16.1.yaml",
    ("scheduling.run.ai/v2", "Queue"): "kai_v0.16.8_crd_scheduling.run.ai_queues.yaml",
    ("scheduling.run.ai/v2alpha2", "PodGroup"): "kai_v0.16.8_crd_scheduling.run.ai_podgroups.yaml",
}


def pinned_data() -> Path:
    """Upstream files copied at their pins (tests/data/pinned/SOURCES.md: source, pin, licence)."""
    return PINNED_DATA


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((pinned_data() / CRD_FILES[(api_version, kind)]).read_text())
    version = api_version.split("/")[1]
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema = copy.deepcopy(entry["schema"]["openAPIV3Schema"])
            # metadata is validated by the API server's ObjectMeta, not the CRD schema.
            schema.setdefault("properties", {})["metadata"] = {"type": "object"}
            return _strict(schema)  # type: ignore[no-any-return]
    raise KeyError(f"{kind} {api_version} not served by its CRD")


def validate_object(obj: dict[str, Any], kube_version: str = "1.36.0") -> None:
    """Raise on any schema violation; CRs against their CRD, core objects against Kubernetes."""
    key = (obj["apiVersion"], obj["kind"])
    if key in CRD_FILES:
        jsonschema.validate(obj, crd_schema(*key), cls=jsonschema.Draft7Validator)
        return
    import kubernetes_validate

    kubernetes_validate.validate(obj, kube_version, strict=True)
