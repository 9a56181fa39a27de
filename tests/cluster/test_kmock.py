"""`gpulab verify --kubeconfig FILE --inspect` over HTTP: a kmock API server holding a cluster
shape, read by the real KubeClient (discovery, lists, gets) through the CLI. Only GETs reach the
server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import warnings
from typing import TYPE_CHECKING, Any

import kmock
from typer.testing import CliRunner

from gpulab.cli import app
from tests.cluster import builders as b

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

_VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}
_EXTRA = {  # kinds kmock does not bundle: (resource, kind, namespaced)
    "scheduling.run.ai/v2/queues": ("Queue", False),
    "kai.scheduler/v1/configs": ("Config", False),
    "kamaji.clastix.io/v1alpha1/tenantcontrolplanes": ("TenantControlPlane", True),
}
_PLURAL = {"Node": "nodes", "Pod": "pods", "Deployment": "deployments",
           "DaemonSet": "daemonsets", "StatefulSet": "statefulsets",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations", "Queue": "queues",
           "Config": "configs", "TenantControlPlane": "tenantcontrolplanes",
           "ConfigMap": "configmaps"}


@contextlib.contextmanager
def served(objects: list[dict[str, Any]]) -> Iterator[tuple[str, kmock.KubernetesEmulator]]:
    """A kmock API server holding `objects`, on a loop in a daemon thread; yields its URL."""
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        box["loop"] = asyncio.get_running_loop()
        box["stop"] = asyncio.Event()
        async with kmock.KubernetesEmulator() as km, kmock.Server(km) as server:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                km.resources.load_bundled()
            for path, (kind, namespaced) in _EXTRA.items():
                km.resources[kmock.resource(path)] = kmock.ResourceInfo(
                    kind=kind, namespaced=namespaced, verbs=_VERBS)
            for obj in objects:
                group_version = obj["apiVersion"]
                resource = kmock.resource(f"{group_version}/{_PLURAL[obj['kind']]}")
                meta = obj["metadata"]
                km.objects[resource, meta.get("namespace"), meta["name"]] = obj
            box["km"], box["url"] = km, str(server.url).rstrip("/")
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(10), "kmock did not start"
    try:
        yield box["url"], box["km"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(10)


def dry_run_plan(api: Any, tmp_path: Path) -> dict[str, Any]:
    """The one plan `verify --kubeconfig --dry-run -o json` makes of `api`'s objects, read over
    HTTP from a kmock server holding them."""
    with served([dict(o) for o in api.objects.values()]) as (url, _km):
        config = b.kubeconfig_file(tmp_path / "prod.kubeconfig", url)
        result = CliRunner().invoke(app, ["verify", "--kubeconfig", str(config), "--dry-run",
                                          "-o", "json"])
    assert result.exit_code == 0, result.output
    (planned,) = json.loads(result.stdout)["plans"]
    return dict(planned)


def test_inspect_and_dry_run_over_http_only_read(tmp_path: Path) -> None:
    api = b.shape_one_card_per_node()
    with served([dict(o) for o in api.objects.values()]) as (url, km):
        config = b.kubeconfig_file(tmp_path / "prod.kubeconfig", url)
        result = CliRunner().invoke(app, ["verify", "--kubeconfig", str(config), "--dry-run",
                                          "-o", "json", "--record", str(tmp_path / "rec")])
        methods = {str(request.method.value) for request in km}
    assert result.exit_code == 0, result.output
    assert methods == {"GET"}, "discovery never writes"
    data = json.loads(result.stdout)
    (found,) = data["clusters"]
    assert found["member"] == "prod" and found["hami_device_plugin"]["detail"].startswith("mock")
    assert [c["device_id"] for c in found["cards"]] == ["GPU-l4-1", "GPU-l4-2", "GPU-l4-3"]
    (planned,) = data["plans"]
    assert planned["card"]["device_id"] == "GPU-l4-3"
    replay = CliRunner().invoke(app, ["verify", "--replay", str(tmp_path / "rec"), "--dry-run",
                                      "-o", "json"])
    assert json.loads(replay.stdout)["clusters"] == data["clusters"]
