"""Hostile answers the fake HTTP servers (``tests/hotdata_api.py``,
``tests/turbopuffer_api.py``) can give in place of a request's real one: a body that never
ends, gzip and deflate bombs, a body or headers sent one byte at a time.

Each :class:`HostileAnswer` is written by the server's handler thread straight to the
connection. It counts the bytes it sent and notes when the client closed the connection (a
write failed, or the connection reads as ended), so a test can tell that the client stopped
reading without timing anything. The bombs are generated as they are sent: one flushed deflate
block of :data:`ZEROS_PER_BLOCK` zeros, independent of what came before it, repeated; the test
file holds no bomb.
"""

from __future__ import annotations

import select
import socket
import threading
import time
import zlib
from pathlib import Path
from typing import Any

KINDS = ("endless", "gzip", "deflate", "br", "drip", "drip-headers")
"""The hostile answers: an identity body that never ends (chunked); gzip and deflate bombs of
:data:`BOMB_BYTES` zeros once decompressed (chunked); a body in an encoding no client asks
for (``br``); a body of one byte every :data:`DRIP_INTERVAL` seconds; headers likewise."""

ENDLESS_CAP = 1 << 30
"""Bytes an ``endless`` body stops at, so that a client that reads it all still ends."""

ZEROS_PER_BLOCK = 1 << 20
BOMB_BYTES = 1 << 30
"""Bytes a bomb holds once decompressed (about 1 MB as sent)."""

DRIP_INTERVAL = 0.05
"""Seconds between the bytes of a dripped answer."""

_FRAME = 64 * 1024


def resident_bytes() -> int:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class PeakResidentMemory:
    """The highest resident memory of this process while the ``with`` block runs, sampled
    every 5 ms by a thread of its own (a buffer freed before the block ends still shows)."""

    def __init__(self) -> None:
        self.before = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def growth(self) -> int:
        """How far the peak rose above the memory at the block's start."""
        return self.peak - self.before

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, resident_bytes())
            self._stop.wait(0.005)

    def __enter__(self) -> PeakResidentMemory:
        self.before = self.peak = resident_bytes()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, resident_bytes())


def _bomb_blocks(wbits: int) -> tuple[bytes, bytes]:
    """The start of a compressed stream (its header and a first block), and a block that can
    follow any number of times: each one :data:`ZEROS_PER_BLOCK` zeros, flushed so that it
    refers to nothing before it."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(ZEROS_PER_BLOCK)
    start = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return start, block


class HostileAnswer:
    """One hostile answer of kind ``kind`` (:data:`KINDS`) and what became of it.

    Attributes:
        sent: bytes of body written (for a bomb, compressed bytes).
        expanded: for a bomb, the bytes its written blocks hold decompressed.
        closed: set once the client has closed the connection.
        finished: set once the whole answer was written (a client that read it all).
        sent_when_closed: ``sent`` once ``closed`` was seen.
    """

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown hostile answer {kind!r}; known: {', '.join(KINDS)}")
        self.kind = kind
        self.sent = 0
        self.expanded = 0
        self.closed = threading.Event()
        self.finished = threading.Event()
        self.sent_when_closed: int | None = None

    def serve(self, connection: socket.socket) -> None:
        """Write the answer to ``connection`` (after the request was read), then wait for the
        client to close it."""
        try:
            getattr(self, "_" + self.kind.replace("-", "_"))(connection)
            self.finished.set()
            self._await_close(connection)
        except OSError:
            self._saw_close()

    def _saw_close(self) -> None:
        if not self.closed.is_set():
            self.sent_when_closed = self.sent
            self.closed.set()

    def _await_close(self, connection: socket.socket) -> None:
        """Wait (at most 60 s) until the client closes the connection."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            readable, _, _ = select.select([connection], [], [], 0.05)
            if readable and not connection.recv(65536):
                self._saw_close()
                return

    @staticmethod
    def _head(connection: socket.socket, *headers: str) -> None:
        lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers, "", ""]
        connection.sendall("\r\n".join(lines).encode())

    def _chunk(self, connection: socket.socket, data: bytes) -> None:
        connection.sendall(b"%x\r\n%b\r\n" % (len(data), data))
        self.sent += len(data)

    def _endless(self, connection: socket.socket) -> None:
        self._head(connection, "Transfer-Encoding: chunked")
        frame = b" " * _FRAME
        while self.sent < ENDLESS_CAP:
            self._chunk(connection, frame)

    def _bomb(self, connection: socket.socket, coding: str, wbits: int) -> None:
        self._head(connection, f"Content-Encoding: {coding}", "Transfer-Encoding: chunked")
        start, block = _bomb_blocks(wbits)
        self._chunk(connection, start)
        self.expanded = ZEROS_PER_BLOCK
        while self.expanded < BOMB_BYTES:
            self._chunk(connection, block)
            self.expanded += ZEROS_PER_BLOCK

    def _gzip(self, connection: socket.socket) -> None:
        self._bomb(connection, "gzip", 16 + zlib.MAX_WBITS)

    def _deflate(self, connection: socket.socket) -> None:
        self._bomb(connection, "deflate", zlib.MAX_WBITS)

    def _br(self, connection: socket.socket) -> None:
        self._head(connection, "Content-Encoding: br", "Content-Length: 4")
        connection.sendall(b"\x8b\x00\x80\x03")
        self.sent += 4

    def _drip(self, connection: socket.socket) -> None:
        self._head(connection, "Content-Length: 100000")
        for _ in range(100000):
            connection.sendall(b" ")
            self.sent += 1
            time.sleep(DRIP_INTERVAL)

    def _drip_headers(self, connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(100000):
            connection.sendall(b"X")
            self.sent += 1
            time.sleep(DRIP_INTERVAL)


def serve_hostile(handler: Any, answer: HostileAnswer) -> None:
    """Give ``answer`` on the connection of ``handler`` (an ``http.server`` request handler
    whose request has been read), and close that connection afterwards."""
    handler.close_connection = True
    connection: socket.socket = handler.connection
    connection.settimeout(None)
    answer.serve(connection)
