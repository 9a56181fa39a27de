"""Fixtures for the adapter contract tests: a kmock API server and the real helm binary."""

from __future__ import annotations

import asyncio
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kmock
import pytest

from gpulab.adapters.kube import KubeClient, RetryPolicy
from tests.host import CI_BIN, find_helm, helm_on_path, require_helm

__all__ = ["CHARTS", "CI_BIN", "Emulator", "find_helm", "require_helm"]

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "tests" / "data" / "charts"

# Custom resources gpulab writes; kmock only serves what is declared (creating a CRD is not enough).
CUSTOM_RESOURCES = {
    "kamaji.clastix.io/v1alpha1/tenantcontrolplanes": ("TenantControlPlane", True),
    "kamaji.clastix.io/v1alpha1/datastores": ("DataStore", False),
    "metallb.io/v1beta1/ipaddresspools": ("IPAddressPool", True),
    "metallb.io/v1beta1/l2advertisements": ("L2Advertisement", True),
    # Not in gpulab's kind map: reached through discovery.
    "crd.projectcalico.org/v1/ippools": ("IPPool", False),
}
VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}


@dataclass
class Emulator:
    """A running kmock `KubernetesEmulator` served over HTTP from a background event loop."""

    km: kmock.KubernetesEmulator
    url: str

    def client(self, **kwargs: Any) -> KubeClient:
        kwargs.setdefault("retry", RetryPolicy.disabled())
        kwargs.setdefault("request_timeout", 5)
        return KubeClient(host=self.url, **kwargs)

    def seed(self, resource: str, namespace: str | None, name: str, body: dict[str, Any]) -> None:
        self.km.objects[kmock.resource(resource), namespace, name] = body

    def stored(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        raw: dict[str, Any] = self.km.objects[kmock.resource(resource), namespace, name].raw
        return raw

    def exists(self, resource: str, namespace: str | None, name: str) -> bool:
        key = (kmock.resource(resource), namespace, name)
        return key in self.km.objects and not self.km.objects[key].deleted

    def requests(self) -> list[kmock.Request]:
        """Requests the API server received, oldest first (discovery included)."""
        return list(self.km)

    def calls(self) -> list[tuple[str, str, str]]:
        """(METHOD, path?query, Content-Type) of every request, for exact assertions."""
        out = []
        for req in self.requests():
            query = "&".join(f"{k}={v}" for k, v in req.params.items())
            path = req.url.path + (f"?{query}" if query else "")
            out.append((str(req.method.value), path, req.headers.get("Content-Type", "")))
        return out


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """kmock on 127.0.0.1 (random port), driven from a background thread's event loop.

    The sync kubernetes client must never run on the loop's own thread (it would deadlock), so
    the loop lives in a daemon thread and the tests talk to it over real HTTP.
    """
    started = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        box["loop"], box["stop"] = asyncio.get_running_loop(), stop
        async with kmock.KubernetesEmulator() as km, kmock.Server(km) as server:
            with warnings.catch_warnings():  # kmock uses a deprecated importlib.resources call
                warnings.simplefilter("ignore", DeprecationWarning)
                km.resources.load_bundled()
            for key, (kind, namespaced) in CUSTOM_RESOURCES.items():
                km.resources[key] = kmock.ResourceInfo(
                    kind=kind, namespaced=namespaced, verbs=VERBS, subresources={"status"}
                )
            box["emulator"] = Emulator(km, str(server.url).rstrip("/"))
            started.set()
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as err:  # surface start-up failures instead of hanging
            box["error"] = err
            started.set()

    thread = threading.Thread(target=run, name="kmock", daemon=True)
    thread.start()
    if not started.wait(10) or "error" in box:
        pytest.fail(f"kmock did not start: {box.get('error')!r}")
    try:
        yield box["emulator"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(10)


@pytest.fixture
def kube(emulator: Emulator) -> Iterator[KubeClient]:
    with emulator.client() as client:
        yield client


@pytest.fixture
def helm_bin(monkeypatch: pytest.MonkeyPatch) -> str:
    """The real helm binary (tests/host.py), with its folder first on PATH."""
    return helm_on_path(monkeypatch)
