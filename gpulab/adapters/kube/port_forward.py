"""A forwarded pod port as a socket (the kubernetes client's port-forward stream).
"""


from __future__ import annotations

from typing import Any


class _PortStream:
    """The kubernetes client's port-forward socket for one port, kept with its PortForward (whose
    proxy thread relays it over the WebSocket); reading it at its end also surfaces what the
    pod's side reported on the port's error channel."""

    def __init__(self, forward: Any, port: int) -> None:
        self.forward, self.port = forward, port
        self.socket = forward.socket(port)
        self.socket.setblocking(True)

    def recv(self, size: int, /) -> bytes:
        return bytes(self.socket.recv(size))

    def sendall(self, data: bytes, /) -> None:
        self.socket.sendall(data)

    def shutdown(self, how: int, /) -> None:
        self.socket.shutdown(how)

    def error(self) -> str | None:
        """What the pod's side said on the port's error channel (None: nothing)."""
        value = self.forward.error(self.port)
        return None if value is None else str(value)

    def close(self) -> None:
        self.socket.close()
