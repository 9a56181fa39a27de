"""An exec's hijacked stream read under a deadline (stdout and stderr demultiplexed), its stdin fed
and half-closed, and the container pid of a host process (`stop_execs`).
"""

from __future__ import annotations

import codecs
import shlex
import socket
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import re
    from collections.abc import Iterable




_MAX_CMD_CHARS: Final = 80


def _namespaced_pid(host_pid: int) -> int:
    """The pid a host process has inside its container (the last `NSpid` field), or 0."""
    try:
        status = Path(f"/proc/{host_pid}/status").read_text(encoding="utf-8")
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            fields = line.split()[1:]
            return int(fields[-1]) if len(fields) > 1 else 0
    return 0


class _ExecTimeout(Exception):
    def __init__(self, stdout: bytes, stderr: bytes) -> None:
        super().__init__("exec timed out")
        self.stdout = stdout
        self.stderr = stderr


class _Demuxer:
    """Docker's multiplexed stream: frames of an 8-byte header (stream, size) and a payload."""

    def __init__(self) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while len(self._buffer) >= 8:
            stream = self._buffer[0]
            (size,) = struct.unpack(">I", self._buffer[4:8])
            if len(self._buffer) < 8 + size:
                return
            payload = bytes(self._buffer[8 : 8 + size])
            del self._buffer[: 8 + size]
            if stream == 1:
                self.stdout += payload
            else:  # 2 = stderr, 3 = the engine's own error
                self.stderr += payload

    def close(self) -> None:
        """At end of stream: keep a truncated or unframed rest rather than dropping it."""
        self.stderr += self._buffer
        self._buffer.clear()


def _read_exec_stream(raw: Any, deadline: float) -> tuple[bytes, bytes]:
    """Read the exec's stream until the engine closes it; `_ExecTimeout` at `deadline`."""
    demux = _Demuxer()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _ExecTimeout(bytes(demux.stdout), bytes(demux.stderr))
        raw.settimeout(remaining)
        try:
            chunk = raw.recv(65536)
        except TimeoutError:
            raise _ExecTimeout(bytes(demux.stdout), bytes(demux.stderr)) from None
        if not chunk:
            demux.close()
            return bytes(demux.stdout), bytes(demux.stderr)
        demux.feed(chunk)


def _feed_stdin(raw: Any, data: bytes, errors: list[BaseException]) -> None:
    try:
        if data:
            raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)  # end-of-file for the command's stdin
    except OSError as err:  # the command exited without reading all of it
        errors.append(err)


def _command_text(argv: list[str]) -> str:
    text = shlex.join(argv)
    return text if len(text) <= _MAX_CMD_CHARS else text[: _MAX_CMD_CHARS - 1] + "…"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _first_match(chunks: Iterable[bytes], regex: re.Pattern[str]) -> bool:
    """Whether a line of the output `chunks` (split anywhere, even inside a character) matches;
    reads only as far as the first matching line."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + decoder.decode(chunk)).split("\n")
        if any(regex.search(line) for line in lines):
            return True
    rest += decoder.decode(b"", final=True)
    return any(regex.search(line) for line in rest.splitlines())
