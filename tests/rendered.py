"""The real pinned charts (tests/data/pinned/charts), rendered by the real `helm template`, offline.

Tests use this to assert on the objects a cluster would receive with gpulab's values, not only
on gpulab's values dict: a value a chart accepts can still change nothing in what it renders.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from typing import Any

import yaml

from tests.contract.conftest import require_helm
from tests.schemas import pinned_data

# chart name (gpulab's HelmRelease.chart) → vendored chart directory
PINNED_CHARTS = {
    "hami": "hami-2.10.0",
    "kamaji": "kamaji-0.0.0+latest",
    "cert-manager": "cert-manager-v1.21.1",  # stands in for v1.21.2 (SOURCES.md: not reproducible)
    "fake-gpu-operator": "fake-gpu-operator-0.0.74",
    "oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator": "fake-gpu-operator-0.0.74",
    "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler": "kai-scheduler-v0.16.8",
    "kai-scheduler": "kai-scheduler-v0.16.8",
    "vcluster": "vcluster-0.35.3",
}


def chart_dir(chart: str) -> str:
    return str(pinned_data() / "charts" / PINNED_CHARTS[chart])


@cache
def _render(chart: str, release: str, namespace: str, values_json: str,
            kube_version: str) -> tuple[dict[str, Any], ...]:
    proc = subprocess.run(
        [require_helm(), "template", release, chart_dir(chart), "-n", namespace,
         "--kube-version", kube_version.lstrip("v"), "-f", "-"],
        input=values_json, capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode:
        raise AssertionError(f"helm template {chart} failed: {proc.stderr.strip()}")
    return tuple(d for d in yaml.safe_load_all(proc.stdout) if isinstance(d, dict))


def render(chart: str, release: str, namespace: str, values: dict[str, Any],
           kube_version: str = "v1.36.4") -> list[dict[str, Any]]:
    """Every object `helm template` renders for these values (JSON values in on stdin)."""
    return [dict(o) for o in _render(chart, release, namespace, json.dumps(values, sort_keys=True),
                                     kube_version)]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind and (obj.get("metadata") or {}).get("name") == name:
            return obj
    names = sorted(f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}" for o in objects)
    raise AssertionError(f"no {kind}/{name} rendered; got {names}")


def container(workload: dict[str, Any], name: str) -> dict[str, Any]:
    for item in workload["spec"]["template"]["spec"]["containers"]:
        if item["name"] == name:
            return dict(item)
    raise AssertionError(f"no container {name} in {workload['metadata']['name']}")
