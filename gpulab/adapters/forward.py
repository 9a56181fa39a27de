"""A local TCP port whose connections are relayed to streams a `dial` function opens: the socket
plumbing of `gpulab kubeconfig TEAM --port-forward` and of `up` on a cluster whose vClusters are
reached by port-forward, kept apart from the Kubernetes client (adapters/kube.py opens the
streams to a pod's port through the API server) so it can be tested against a plain TCP server.

As `kubectl port-forward` does, every accepted connection gets a stream of its own (kubectl:
one SPDY stream pair per connection; the kubernetes Python client: one WebSocket per
`portforward` call, kubernetes/stream/ws_client.py `portforward_call`). Bytes are copied both
ways by two threads per connection; when one side ends, the other is told (half-close) and both
are closed once both directions are done. Stdlib only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import TYPE_CHECKING, Any, Protocol

from gpulab.errors import AdapterError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LocalForwarder", "Stream"]

CHUNK = 64 * 1024


class Stream(Protocol):
    """What `dial` returns: a connected byte stream (a socket, or the kubernetes client's
    port-forward socket)."""

    def recv(self, size: int, /) -> bytes: ...

    def sendall(self, data: bytes, /) -> Any: ...

    def shutdown(self, how: int, /) -> Any: ...

    def close(self) -> Any: ...


class LocalForwarder:
    """Listen on `address:port` (port 0: a free one, see `.port`) and relay each connection to
    a new `dial()` stream. A stream that cannot be opened closes that connection only; its
    error goes to `on_error` (and `.errors`). `close()` stops listening and ends every relay."""

    def __init__(self, dial: Callable[[], Stream], *, address: str = "127.0.0.1",
                 port: int = 0, on_error: Callable[[str], None] | None = None) -> None:
        self.dial = dial
        self.address = address
        self.wanted = port
        self.on_error = on_error
        self.errors: list[str] = []
        self.connections = 0  # accepted so far
        self._server: socket.socket | None = None
        self._open: set[Any] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise AdapterError("the port-forward is not listening")
        return int(self._server.getsockname()[1])

    def start(self) -> LocalForwarder:
        """Bind and listen (AdapterError when the port cannot be had), then accept in a
        thread."""
        server = socket.socket(socket.AF_INET6 if ":" in self.address else socket.AF_INET)
        try:
            server.bind((self.address, self.wanted))
            server.listen(16)
        except OSError as err:
            server.close()
            taken = "in use" if err.errno in (98, 48, 10048) else err.strerror or str(err)
            raise AdapterError(f"cannot listen on {self.address}:{self.wanted}: {taken}",
                               hint="choose another --port (0 for any free one)") from None
        server.settimeout(0.2)  # accept() wakes up to see close()
        self._server = server
        self._thread = threading.Thread(target=self._accept, daemon=True,
                                        name=f"gpulab-forward-{self.port}")
        self._thread.start()
        return self

    def __enter__(self) -> LocalForwarder:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        server = self._server
        assert server is not None
        while not self._closed.is_set():
            try:
                local, _peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            self.connections += 1
            threading.Thread(target=self._relay, args=(local,), daemon=True,
                             name="gpulab-forward-conn").start()

    def _error(self, message: str) -> None:
        self.errors.append(message)
        if self.on_error is not None:
            self.on_error(message)

    def _relay(self, local: socket.socket) -> None:
        local.settimeout(None)
        try:
            remote = self.dial()
        except Exception as err:  # any failure to open the stream ends this connection only
            text = err.message if isinstance(err, AdapterError) else f"{type(err).__name__}: {err}"
            self._error(f"could not open the forwarded stream: {text}")
            local.close()
            return
        with self._lock:
            if self._closed.is_set():
                _close(local, remote)
                return
            self._open.update((local, remote))
        done = threading.Barrier(2, action=lambda: self._finish(local, remote))
        for source, target in ((local, remote), (remote, local)):
            threading.Thread(target=self._pump, args=(source, target, done), daemon=True,
                             name="gpulab-forward-pump").start()

    def _finish(self, local: Any, remote: Any) -> None:
        with self._lock:
            self._open.discard(local)
            self._open.discard(remote)
        _close(local, remote)

    @staticmethod
    def _pump(source: Any, target: Any, done: threading.Barrier) -> None:
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)  # the other side reads its end
            with contextlib.suppress(threading.BrokenBarrierError):
                done.wait()

    def close(self) -> None:
        """Stop listening and end every relay (idempotent)."""
        self._closed.set()
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            open_now, self._open = list(self._open), set()
        _close(*open_now)


def _close(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(OSError):
            stream.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            stream.close()
