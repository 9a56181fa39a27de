"""Every `KubeClient` call is bounded, as kubectl's `--request-timeout` bounds its requests.

A raw-socket API server on 127.0.0.1 that (a) accepts and never answers, or (b) sends its
headers and then trickles the body one byte every 0.5 s: each call must fail within its deadline
(plus a little slack) with one line, and the server must see exactly one connection per call
(no retries hidden in urllib3's default `Retry(3)`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING

import pytest
from urllib3.util.retry import Retry

from gpulab.adapters.kube import KubeApiError, KubeClient, RetryPolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DEADLINE = 1.0
SLACK = 0.6  # thread scheduling on a busy 2-core CI runner; the old code took 4x or never ended
TRICKLE_EVERY = 0.5
GIVE_UP = 6.0  # the server's own bound, so a client that waits for the whole body fails, not hangs


class RawServer:
    """Accepts connections on 127.0.0.1 (counting them) and serves each with `behave`."""

    def __init__(self, behave: Callable[[socket.socket, threading.Event], None]) -> None:
        self._behave = behave
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._accepted = 0
        self._threads: list[threading.Thread] = []
        self._loop = threading.Thread(target=self._accept, daemon=True)
        self._loop.start()

    @property
    def connections(self) -> int:
        with self._lock:
            return self._accepted

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._accepted += 1
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the client hung up: what a bounded one does
            self._behave(conn, self.stop)

    def close(self) -> None:
        self.stop.set()
        self._loop.join(2)
        self._listener.close()
        for worker in self._threads:
            worker.join(2)


def _read_request(conn: socket.socket, stop: threading.Event) -> None:
    conn.settimeout(0.1)
    data = b""
    while b"\r\n\r\n" not in data and not stop.is_set():
        try:
            chunk = conn.recv(4096)
        except TimeoutError:
            continue
        if not chunk:
            return
        data += chunk


def never_answer(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn, stop)
    stop.wait(GIVE_UP)


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn, stop)
    body = b'{"gitVersion": "v1.31.0", "kind": "NodeList", "items": []}' + b" " * 200
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body))
    started = time.monotonic()
    for byte in body:
        if stop.wait(TRICKLE_EVERY) or time.monotonic() - started > GIVE_UP:
            return
        conn.sendall(bytes([byte]))


@pytest.fixture(params=[never_answer, trickle], ids=["never-answers", "trickles-its-body"])
def server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    raw = RawServer(request.param)
    yield raw
    raw.close()


CALLS: dict[str, Callable[[KubeClient], object]] = {
    "version": lambda kube: kube.server_version(),
    "list": lambda kube: kube.list_objects("v1", "Node"),
    "get": lambda kube: kube.get("v1", "Pod", "p", "default"),
    "apply": lambda kube: kube.apply({"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": "gpulab-verify-x"}}),
}


@pytest.mark.slow
@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_call_ends_at_its_deadline_after_one_connection(server: RawServer,
                                                             call: str) -> None:
    kube = KubeClient(host=server.url, request_timeout=DEADLINE, retry=RetryPolicy.disabled())
    started = time.monotonic()

    with pytest.raises(KubeApiError) as info:
        CALLS[call](kube)

    elapsed = time.monotonic() - started
    time.sleep(0.2)  # a retry would connect again now
    assert DEADLINE - 0.05 <= elapsed <= DEADLINE + SLACK, f"took {elapsed:.2f}s"
    assert server.connections == 1
    message = str(info.value)
    assert "\n" not in message
    assert f"at {server.url}: " in message
    assert "within 1s" in message, message
    assert info.value.status == 0
    kube.close()


def test_the_client_keeps_no_retry_policy_of_its_own(server: RawServer) -> None:
    """kubernetes' RESTClientObject hands `Configuration.retries` to urllib3's PoolManager, and
    None there means urllib3's `Retry.DEFAULT` (three more attempts); gpulab sets False."""
    kube = KubeClient(host=server.url, request_timeout=DEADLINE, retry=RetryPolicy.disabled())

    pool = kube._api.rest_client.pool_manager.connection_from_url(server.url)

    assert kube._api.configuration.retries is False
    assert isinstance(pool.retries, Retry)
    assert pool.retries.total is False
    kube.close()


def hang_up_after_a_while(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn, stop)
    stop.wait(1.0)  # then close without an answer (the connection is closed on return)


def test_without_a_request_timeout_a_dropped_connection_is_not_retried() -> None:
    """kubectl's `--request-timeout=0`: the call waits as long as the server holds it, and when
    the server hangs up without answering that is the answer (urllib3 would reconnect)."""
    raw = RawServer(hang_up_after_a_while)
    kube = KubeClient(host=raw.url, request_timeout=None, retry=RetryPolicy.disabled())
    started = time.monotonic()

    with pytest.raises(KubeApiError) as info:
        kube.server_version()

    elapsed = time.monotonic() - started
    time.sleep(0.2)
    assert 0.9 <= elapsed <= 1.0 + SLACK, f"took {elapsed:.2f}s"
    assert raw.connections == 1
    assert "\n" not in str(info.value)
    kube.close()
    raw.close()


def chunked_in_time(conn: socket.socket, stop: threading.Event) -> None:
    """A list as API servers send big ones (chunked), in pieces 0.2 s apart, done in 0.6 s."""
    _read_request(conn, stop)
    items = ",".join(f'{{"metadata": {{"name": "n{i}"}}}}' for i in range(300)).encode()
    parts = [b'{"kind": "NodeList", "items": [', items, b"]}"]
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    for part in parts:
        stop.wait(0.2)
        conn.sendall(b"%x\r\n%s\r\n" % (len(part), part))
    conn.sendall(b"0\r\n\r\n")
    stop.wait(GIVE_UP)  # keep-alive: the client must not wait for the connection to close


def test_an_answer_that_completes_in_time_is_read_whole() -> None:
    raw = RawServer(chunked_in_time)
    kube = KubeClient(host=raw.url, request_timeout=DEADLINE, retry=RetryPolicy.disabled())
    started = time.monotonic()

    nodes = kube.list_objects("v1", "Node")

    assert time.monotonic() - started < DEADLINE
    assert [n["metadata"]["name"] for n in nodes] == [f"n{i}" for i in range(300)]
    kube.close()
    raw.close()
