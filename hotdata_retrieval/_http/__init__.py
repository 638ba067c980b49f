"""Bounds on every HTTP answer the remote engines read, and a deadline that closes the
connection.

The remote engines talk to their services through other libraries' clients: the Hotdata engine
through the generated ``hotdata`` SDK (urllib3), the turbopuffer engine through the
``turbopuffer`` client (httpx2). Left to themselves, both read a whole body into memory,
decompressing whatever ``Content-Encoding`` the server names, and a call given up at its
deadline went on reading on its thread: against a server sending an endless body the process
grew by 1.5-1.7 GB in the minute after the call had returned, and a gzip bomb added 1.1 GB.

This package is the one place that bounds them. Each client is configured through its own
extension point, never patched: the SDK's pool manager is wrapped
(:func:`hotdata_retrieval._http.pool_manager.bound_pool_manager`), the turbopuffer client is
given a transport (:class:`hotdata_retrieval._http.transport.BoundedTransport`). Both apply:

- **A streamed body, counted.** The body is read in chunks and its bytes as sent are counted
  against :attr:`~hotdata_retrieval.engines.limits.ResponseLimits.max_response_bytes`; it is
  decompressed here (:func:`bounded_body`: ``gzip`` and ``deflate``, each step producing at
  most :data:`CHUNK_BYTES`), never by the client, and its decompressed bytes are counted
  against :attr:`~hotdata_retrieval.engines.limits.ResponseLimits.max_decompressed_bytes`. The
  first limit passed stops the request with a
  :class:`~hotdata_retrieval.errors.ResponseLimitError` and closes its connection. A request
  asks only for the encodings read here; an answer in another one is refused.
- **A deadline that closes the connection.** :func:`call_within` runs one call (one request,
  or a few: a client's retries, a query's polling) on a thread of its own under an
  :class:`HttpCall`, and waits at most its deadline. Each socket a request of the call sends or
  reads on is watched; at the deadline every watched socket is shut down, so a read in
  progress ends at once, and any later request of the call fails before it is sent: the
  thread ends, and nothing is read after the call has returned.
"""

from __future__ import annotations

import socket
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hotdata_retrieval._deadline import Pending, run_within
from hotdata_retrieval.engines.limits import ResponseLimits
from hotdata_retrieval.errors import EngineError, HotdataRetrievalError

__all__ = [
    "ACCEPTED_ENCODINGS",
    "CHUNK_BYTES",
    "CallAbandoned",
    "HttpCall",
    "accept_encoding",
    "bounded_body",
    "call_within",
    "current_call",
]

CHUNK_BYTES = 64 * 1024
"""Bytes read from a body at a time, and the most one decompression step produces."""

ACCEPTED_ENCODINGS = ("gzip", "deflate")
"""The content encodings :func:`bounded_body` decompresses (``x-gzip`` is read as ``gzip``);
``br`` and ``zstd`` are neither asked for nor read."""

_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around a deflate stream
_ZLIB_WINDOW = zlib.MAX_WBITS  # a zlib header and trailer (RFC 1950)
_RAW_WINDOW = -zlib.MAX_WBITS  # a bare deflate stream, as some servers send "deflate"


class CallAbandoned(HotdataRetrievalError):
    """The call's deadline passed and it was given up: its requests stop. Raised on the call's
    own thread, which nobody waits for any more; never shown to a caller."""


class HttpCall:
    """The requests of one call: their limits, who answers them (for messages) and the sockets
    they are using, shut down by :meth:`abandon`.

    Args:
        limits: what each answer may cost.
        answer: whose answer to what, for messages (``"the Hotdata API's answer to the
            query"``).
    """

    def __init__(self, limits: ResponseLimits, *, answer: str) -> None:
        self.limits = limits
        self.answer = answer
        self.failure: EngineError | None = None
        """Why an answer of this call could not be read (a limit it passed, an encoding not
        asked for): a later request of the call (a client's retry) fails with it again
        before it is sent."""
        self._abandoned = False
        self._sockets: list[Any] = []
        self._lock = threading.Lock()

    @property
    def abandoned(self) -> bool:
        """Whether the call was given up at its deadline."""
        return self._abandoned

    def watch(self, connection: Any) -> None:
        """Note that a request of this call uses ``connection`` (a socket; ``None``, not yet
        connected, is ignored); shut it down at once if the call was already given up.

        Raises:
            CallAbandoned: the call was given up.
        """
        if connection is None:
            return
        with self._lock:
            if not self._abandoned:
                if not any(known is connection for known in self._sockets):
                    self._sockets.append(connection)
                return
        _shut_down(connection)
        raise CallAbandoned

    def release(self) -> None:
        """Forget the sockets watched so far: their answers were read whole, and the client
        may hand the connections to another call."""
        with self._lock:
            self._sockets.clear()

    def check(self) -> None:
        """Before a request is sent: fail it if the call was given up, or an earlier answer of
        the call passed a limit.

        Raises:
            CallAbandoned: the call was given up.
            EngineError: an earlier answer of the call could not be read (:attr:`failure`;
                a :class:`~hotdata_retrieval.errors.ResponseLimitError` for a limit).
        """
        if self._abandoned:
            raise CallAbandoned
        if self.failure is not None:
            raise self.failure

    def abandon(self) -> None:
        """Give the call up: shut down every socket it is using (a read in progress on another
        thread ends at once) and fail its later requests."""
        with self._lock:
            self._abandoned = True
            sockets, self._sockets = self._sockets, []
        for connection in sockets:
            _shut_down(connection)


def _shut_down(connection: Any) -> None:
    """Shut a socket down for reading and writing without closing its descriptor (the thread
    reading it may still hold it); the blocked read returns at once. Through the plain socket's
    method even for a TLS socket, whose own would drop its TLS state under the reader."""
    try:
        if isinstance(connection, socket.socket):
            socket.socket.shutdown(connection, socket.SHUT_RDWR)
        else:
            connection.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, AttributeError):
        pass  # already closed, or never connected


_current = threading.local()


def current_call() -> HttpCall | None:
    """The call the running thread's requests belong to (:func:`call_within`), if any."""
    call: HttpCall | None = getattr(_current, "call", None)
    return call


def call_within(
    function: Callable[[], Any], deadline: float, *, call: HttpCall, name: str
) -> tuple[bool, Pending]:
    """Run ``function()`` (a call's requests) on a daemon thread called ``name`` under ``call``
    and wait for it at most ``deadline`` seconds; past that, give ``call`` up
    (:meth:`HttpCall.abandon`: its sockets are shut down and the thread ends).

    Returns:
        ``(True, pending)`` when it ended in time (``pending.result()`` is its value or raises
        its exception), ``(False, pending)`` when it did not.
    """

    def run() -> Any:
        _current.call = call
        try:
            return function()
        finally:
            _current.call = None

    ended, pending = run_within(run, deadline, name=name)
    if not ended:
        call.abandon()
    return ended, pending


def accept_encoding(asked: str | None) -> str:
    """The ``Accept-Encoding`` to send for a client that asked for ``asked``: the encodings it
    named that :func:`bounded_body` reads (all of them when it named none), else ``identity``.

    >>> accept_encoding("gzip,deflate,br,zstd")
    'gzip, deflate'
    >>> accept_encoding("identity")
    'identity'
    """
    if asked is None:
        return ", ".join(ACCEPTED_ENCODINGS)
    named = [part.split(";")[0].strip().lower() for part in asked.split(",")]
    kept = [coding for coding in ACCEPTED_ENCODINGS if coding in named]
    return ", ".join(kept) if kept else "identity"


def bounded_body(
    chunks: Iterable[bytes],
    content_encoding: str | None,
    limits: ResponseLimits,
    *,
    answer: str = "the server's answer",
) -> Iterator[bytes]:
    """The body whose chunks as sent are ``chunks``, decompressed as ``content_encoding``
    says (codings applied in the order named), in pieces of at most :data:`CHUNK_BYTES` (an
    identity body: as it came). ``answer`` names it in messages.

    Raises:
        ResponseLimitError: the bytes as sent passed ``limits.max_response_bytes``, or the
            bytes decompressed passed ``limits.max_decompressed_bytes`` (each checked before a
            piece past it is handed on).
        EngineError: an encoding other than ``gzip``, ``deflate`` and ``identity``, or a body
            that is not valid in its encoding.
    """
    decoders = [_Decoder(coding, answer) for coding in _codings(content_encoding, answer)]
    sent = 0
    decompressed = 0
    for chunk in chunks:
        sent += len(chunk)
        if sent > limits.max_response_bytes:
            raise limits.size_error("max_response_bytes", answer=answer)
        for piece in _through(decoders, chunk):
            decompressed += len(piece)
            if decompressed > limits.max_decompressed_bytes:
                raise limits.size_error("max_decompressed_bytes", answer=answer)
            yield piece


def _codings(content_encoding: str | None, answer: str) -> list[str]:
    codings = []
    for part in (content_encoding or "").split(","):
        coding = part.strip().lower()
        if coding in ("", "identity"):
            continue
        if coding == "x-gzip":
            coding = "gzip"
        if coding not in ACCEPTED_ENCODINGS:
            raise EngineError(
                f"{answer} came in content encoding {coding!r}, which was not asked for "
                f"(a request accepts {', '.join(ACCEPTED_ENCODINGS)} or identity)"
            )
        codings.append(coding)
    return codings


def _through(decoders: list[_Decoder], chunk: bytes) -> Iterator[bytes]:
    """``chunk`` undone by each decoder, the last applied first."""
    pieces: Iterable[bytes] = [chunk]
    for decoder in reversed(decoders):
        pieces = _each(decoder, pieces)
    return iter(pieces)


def _each(decoder: _Decoder, pieces: Iterable[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from decoder.decode(piece)


class _Decoder:
    """One content coding undone incrementally, each step producing at most
    :data:`CHUNK_BYTES`: ``gzip`` (members one after another), or ``deflate``, which is a
    zlib stream (RFC 9110 §8.4.1.2) but sent bare by some servers: the first two bytes tell."""

    def __init__(self, coding: str, answer: str) -> None:
        self._coding = coding
        self._answer = answer
        self._head = b""
        self._members = 0
        self._done = False
        self._inflater: Any = None
        if coding == "gzip":
            self._inflater = zlib.decompressobj(_GZIP_WINDOW)

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._done:
            return
        if self._inflater is None:  # deflate, its framing not yet known
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            first, second = data[0], data[1]
            framed = first & 0x0F == zlib.DEFLATED and (first << 8 | second) % 31 == 0
            self._inflater = zlib.decompressobj(_ZLIB_WINDOW if framed else _RAW_WINDOW)
        try:
            yield from self._inflate(data)
        except zlib.error as error:
            if self._members:  # what follows a whole gzip member is not one: left unread
                self._done = True
                return
            raise EngineError(f"{self._answer} is not valid {self._coding} data: {error}") from None

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            piece = self._inflater.decompress(data, CHUNK_BYTES)
            if piece:
                yield piece
            data = self._inflater.unconsumed_tail
            if self._inflater.eof:
                self._members += 1
                rest = self._inflater.unused_data
                if self._coding != "gzip":
                    self._done = True  # what follows a deflate stream is not read
                    return
                if not rest:
                    return
                self._inflater = zlib.decompressobj(_GZIP_WINDOW)  # the next gzip member
                data = rest
                continue
            if not data and len(piece) < CHUNK_BYTES:
                return  # every byte given was read, and nothing is held back
