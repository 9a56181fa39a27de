"""The port-forward's socket plumbing (gpulab.adapters.forward) against a real local TCP echo
server: bytes go both ways, each connection gets its own stream, a stream that cannot be opened
ends only its connection, a taken port is one clear error, and close() ends every relay."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import TYPE_CHECKING

import pytest

from gpulab.adapters.forward import LocalForwarder
from gpulab.errors import AdapterError
from tests.local_server import tcp_server

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def echo_server() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP server on 127.0.0.1 that sends back what it receives, one thread per client."""
    accepted: list[socket.socket] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    with tcp_server(serve, accepted) as port:
        yield port, accepted


def _roundtrip(port: int, payload: bytes) -> bytes:
    """What comes back for `payload` ('' when the forward closed the connection at once)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        try:
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            while chunk := conn.recv(65536):
                received += chunk
        except (ConnectionResetError, BrokenPipeError, OSError) as err:
            if received or getattr(err, "errno", None) not in (104, 107, 32):
                raise
    return received


def test_bytes_go_both_ways_each_connection_on_its_own_stream() -> None:
    with echo_server() as (echo, accepted):
        dials: list[int] = []

        def dial() -> socket.socket:
            dials.append(1)
            return socket.create_connection(("127.0.0.1", echo), timeout=5)

        with LocalForwarder(dial) as forward:
            assert forward.port != echo
            big = bytes(range(256)) * 4096  # 1 MiB: many reads and writes
            results: dict[int, bytes] = {}
            threads = [threading.Thread(target=lambda i=i: results.__setitem__(
                i, _roundtrip(forward.port, big[i:]))) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(20)
            assert {i: len(r) for i, r in results.items()} == {i: len(big) - i for i in range(4)}
            assert all(results[i] == big[i:] for i in range(4))
            assert len(dials) == 4 and forward.connections == 4 and len(accepted) == 4
            assert forward.errors == []


def test_a_stream_that_cannot_be_opened_ends_only_its_connection() -> None:
    with echo_server() as (echo, _accepted):
        failures = iter([True, False])
        said: list[str] = []

        def dial() -> socket.socket:
            if next(failures):
                raise AdapterError("port-forward to Pod ns/vc-0 port 8443: 403 Forbidden")
            return socket.create_connection(("127.0.0.1", echo), timeout=5)

        with LocalForwarder(dial, on_error=said.append) as forward:
            assert _roundtrip(forward.port, b"first") == b""  # closed at once, nothing relayed
            assert _roundtrip(forward.port, b"second") == b"second"
        assert said == ["could not open the forwarded stream: port-forward to Pod ns/vc-0 "
                        "port 8443: 403 Forbidden"]


def test_a_port_in_use_is_one_clear_error() -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        with pytest.raises(AdapterError, match=rf"cannot listen on 127.0.0.1:{port}: in use"):
            LocalForwarder(lambda: taken, port=port).start()  # type: ignore[arg-type,return-value]
    finally:
        taken.close()


def test_close_ends_open_relays_and_stops_listening() -> None:
    with echo_server() as (echo, _accepted):
        forward = LocalForwarder(lambda: socket.create_connection(("127.0.0.1", echo))).start()
        port = forward.port
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn.sendall(b"ping")
        assert conn.recv(4) == b"ping"
        forward.close()
        conn.settimeout(5)
        assert conn.recv(4) == b""  # the relay was ended: end of stream, not a hang
        conn.close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
