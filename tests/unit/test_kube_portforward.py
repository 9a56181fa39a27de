"""KubeClient.open_pod_port with the real kubernetes client against a local API server that
speaks the port-forward WebSocket protocol: RFC 6455 framing (server frames unmasked, client
frames masked), the `v4.channel.k8s.io` subprotocol, and the channels the kubernetes client's
`PortForward` expects (kubernetes/stream/ws_client.py: per port a data channel 2*i and an error
channel 2*i+1, each opened by a frame holding the port number, little-endian). The "pod" answers
what it receives upper-cased, so the test sees the bytes went through it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading
from typing import TYPE_CHECKING

import pytest

from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.errors import AdapterError
from tests.local_server import tcp_server

if TYPE_CHECKING:
    from collections.abc import Iterator

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3


def _frame(payload: bytes, opcode: int = 2) -> bytes:
    head = bytes([0x80 | opcode])
    if len(payload) < 126:
        head += bytes([len(payload)])
    elif len(payload) < 65536:
        head += bytes([126]) + struct.pack("!H", len(payload))
    else:
        head += bytes([127]) + struct.pack("!Q", len(payload))
    return head + payload


def _read_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _read_frame(conn: socket.socket) -> tuple[int, bytes]:
    first, second = _read_exact(conn, 2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack("!H", _read_exact(conn, 2))[0]
    elif size == 127:
        size = struct.unpack("!Q", _read_exact(conn, 8))[0]
    mask = _read_exact(conn, 4) if second & 0x80 else b"\0\0\0\0"
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(_read_exact(conn, size)))
    return first & 0x0F, data


@contextlib.contextmanager
def api_server(mode: str = "ok") -> Iterator[tuple[str, list[str]]]:
    """`ok`: port-forward that upper-cases; `silent`: accepts and never answers; `forbidden`:
    answers 403 as an API server denying pods/portforward."""
    paths: list[str] = []
    stop = threading.Event()  # ends a `silent` handler

    def handle(conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            lines = request.decode().split("\r\n")
            paths.append(lines[0].split(" ")[1])
            if mode == "silent":
                stop.wait(10)
                return
            if mode == "forbidden":
                body = b'{"kind":"Status","message":"pods \\"vc-0\\" is forbidden","code":403}'
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                return
            headers = {k.lower(): v.strip() for k, _s, v in
                       (line.partition(":") for line in lines[1:] if line)}
            accept = base64.b64encode(hashlib.sha1(  # RFC 6455 mandates SHA-1
                (headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
            conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n"
                          f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
            port = struct.pack("<H", 8443)
            conn.sendall(_frame(b"\x00" + port) + _frame(b"\x01" + port))
            while True:
                try:
                    opcode, data = _read_frame(conn)
                except (ConnectionError, OSError):
                    return
                if opcode == 8:  # close
                    return
                if opcode == 2 and data[:1] == b"\x00":
                    conn.sendall(_frame(b"\x00" + data[1:].upper()))

    with tcp_server(handle) as port:
        try:
            yield f"http://127.0.0.1:{port}", paths
        finally:
            stop.set()


def _client(url: str) -> KubeClient:
    return KubeClient(host=url, retry=RetryPolicy.disabled(), request_timeout=5)


def test_a_stream_to_the_pods_port_through_the_api_server() -> None:
    with api_server() as (url, paths):
        client = _client(url)
        stream = client.open_pod_port("team-nlp-0", "vcluster-team-nlp", 8443)
        try:
            stream.sendall(b"hello vcluster")
            received = b""
            while len(received) < len(b"HELLO VCLUSTER"):
                received += stream.recv(1024)
            assert received == b"HELLO VCLUSTER"
            assert stream.error() is None
        finally:
            stream.close()
            client.close()
    assert paths == ["/api/v1/namespaces/vcluster-team-nlp/pods/team-nlp-0/portforward"
                     "?ports=8443"]


def test_an_api_server_that_does_not_answer_ends_at_the_deadline() -> None:
    with api_server("silent") as (url, _paths):
        client = _client(url)
        with pytest.raises(AdapterError, match=r"port-forward to Pod ns/vc-0 port 8443 at "
                                               r"http://127.0.0.1:\d+: no answer within 0.5s"):
            client.open_pod_port("vc-0", "ns", 8443, timeout=0.5)
        client.close()


def test_a_refusal_is_one_line_with_what_to_grant() -> None:
    with api_server("forbidden") as (url, _paths):
        client = _client(url)
        with pytest.raises(AdapterError, match="port-forward to Pod ns/vc-0 port 8443") as err:
            client.open_pod_port("vc-0", "ns", 8443)
        client.close()
    assert "403" in err.value.message
    assert err.value.hint is not None and "pods/portforward" in err.value.hint
