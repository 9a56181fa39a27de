"""A TCP server on 127.0.0.1 for tests: one thread per client, each handled by the test's own
function, stopped and closed when the `with` block ends."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@contextlib.contextmanager
def tcp_server(handle: Callable[[socket.socket], None],
               accepted: list[socket.socket] | None = None) -> Iterator[int]:
    """Serve each connection with `handle` in its own thread; yields the port. Accepted
    connections are appended to `accepted` when given."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if accepted is not None:
                accepted.append(conn)
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()
