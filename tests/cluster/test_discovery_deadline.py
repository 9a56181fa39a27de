"""Discovery of one cluster has one total deadline: what it did not read is unknown, not absent.

Over HTTP, an API server that answers every request, each well within `--request-timeout`, but
slowly: discovery stops at its deadline (the request in flight is cut there too, and nothing is
sent after it), keeps what it read, and says "unknown, because the API server did not answer
within Ns" for the rest, in the inspection and in the plan's refusal.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import UNANSWERED, read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.report import inspection_lines
from tests.cluster import builders as b

if TYPE_CHECKING:
    from collections.abc import Iterator

DELAY = 0.4  # each answer
DEADLINE = 1.5  # discovery's: version, Node and Pod fit, Deployment is cut
SLACK = 0.5
LATE = f"{UNANSWERED} within 1.5s (discovery's total deadline, --discovery-timeout)"


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up on a cut request: expected


class SlowApi:
    """Answers every GET after DELAY: /version, empty lists, 404 for custom groups."""

    def __init__(self) -> None:
        seen: list[tuple[float, str]] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((time.monotonic(), self.path))
                time.sleep(DELAY)
                custom = self.path.startswith("/apis/") and self.path.count("/") == 3
                body = (b"" if custom else json.dumps(
                    {"gitVersion": "v1.31.4"} if self.path == "/version" else {"items": []}
                ).encode())
                self.send_response(404 if custom else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = _Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def slow() -> Iterator[SlowApi]:
    api = SlowApi()
    yield api
    api.close()


@pytest.mark.slow
def test_discovery_stops_at_its_deadline_and_says_what_is_unknown(slow: SlowApi) -> None:
    kube = KubeClient(host=slow.url, request_timeout=5, retry=RetryPolicy.disabled())
    started = time.monotonic()

    snapshot = read_cluster(kube, "slow", slow.url, deadline=DEADLINE)

    took = time.monotonic() - started
    time.sleep(DELAY)  # anything sent late would have arrived by now
    assert DEADLINE - 0.05 <= took <= DEADLINE + SLACK, f"took {took:.2f}s"
    assert [path for _t, path in slow.seen] == [
        "/version", "/api/v1/nodes", "/api/v1/pods", "/apis/apps/v1/deployments"]
    assert all(t - started < DEADLINE for t, _p in slow.seen)
    assert snapshot.version == "v1.31.4" and snapshot.error == ""
    assert snapshot.nodes == () and snapshot.pods == ()  # read: there are none
    assert snapshot.workloads is None and snapshot.webhooks is None and snapshot.queues is None
    assert snapshot.read_errors == dict.fromkeys(
        ("Deployment", "DaemonSet", "StatefulSet", "MutatingWebhookConfiguration", "Queue",
         "Config", "TenantControlPlane"), LATE)

    found = inventory(snapshot)
    lines = inspection_lines(found)
    unknown = f"{UNANSWERED} within 1.5s"
    for what in ("HAMi scheduler:", "HAMi webhook:", "HAMi device plugin:", "KAI scheduler:",
                 "tenancy:"):
        assert f"  {what:<20} {unknown}" in lines, lines
    assert not [line for line in lines if "not found" in line or "none found" in line], lines
    # Nodes were read, and there are none: that "none" is true
    assert f"  {'GPU nodes:':<20} none (no node advertises nvidia.com/gpu)" in lines
    refusal = plan(found, "0a1b2c3d4e5f").refusals
    assert refusal and refusal[0].startswith("discovery did not finish: Config: " + LATE)
    kube.close()


def test_a_request_timeout_during_discovery_is_unknown_too(slow: SlowApi) -> None:
    """Each request's own deadline (0.2s here) ends that read; the rest are still tried."""
    kube = KubeClient(host=slow.url, request_timeout=0.2, retry=RetryPolicy.disabled())

    snapshot = read_cluster(kube, "slow", slow.url, deadline=None)

    assert snapshot.error == f"get server version at {slow.url}: no answer within 0.2s"
    assert "did not answer: get server version" in inspection_lines(inventory(snapshot))[0]


def test_reads_left_when_the_deadline_passes_are_not_asked_for() -> None:
    """The same with a gateway that cannot cut a request (a fake, on a fake clock): each read
    takes 10 s; the one that ends past 25 s is kept, and nothing more is asked."""
    api = b.SHAPES["eight-cards-one-node"]()
    now = [0.0]

    def server_version() -> str:
        now[0] += 10
        return "v1.31.4"

    def list_objects(api_version: str, kind: str, *_a: Any, **_k: Any) -> list[Any]:
        now[0] += 10
        api.calls.append(("list_objects", kind))
        return []

    api.server_version = server_version  # type: ignore[method-assign]
    api.list_objects = list_objects  # type: ignore[method-assign]
    snapshot = read_cluster(api, "fake", "https://x", deadline=25, clock=lambda: now[0])

    assert api.calls == [("list_objects", "Node"), ("list_objects", "Pod")]
    assert snapshot.nodes == () and snapshot.pods == ()
    late = f"{UNANSWERED} within 25s (discovery's total deadline, --discovery-timeout)"
    assert set(snapshot.read_errors) == {"Deployment", "DaemonSet", "StatefulSet",
                                         "MutatingWebhookConfiguration", "Queue", "Config",
                                         "TenantControlPlane"}
    assert set(snapshot.read_errors.values()) == {late}
    assert f"  {'HAMi scheduler:':<20} {UNANSWERED} within 25s" in (
        inspection_lines(inventory(snapshot)))
