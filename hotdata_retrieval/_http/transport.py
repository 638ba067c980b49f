"""The bounds of :mod:`hotdata_retrieval._http` on an httpx2 client (the ``turbopuffer``
client's): :class:`BoundedTransport`, given to the client as its transport, the extension point
httpx2 offers for it (httpx2 documentation, "Transports").

It sends requests through httpcore2's connection pool (the pool httpx2's own
``HTTPTransport`` uses) over a network backend whose streams show their socket to the running
call on every read and write (:meth:`~hotdata_retrieval._http.HttpCall.watch`), so that the
call's deadline can shut it down, whether the connection is new or pooled. Each request asks
only for the encodings :func:`~hotdata_retrieval._http.bounded_body` reads; each answer's body
streams through it and reaches the client decompressed, without ``Content-Encoding`` (so the
client decompresses nothing). An answer past a limit has its connection closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from hotdata_retrieval.extras import require_extra

require_extra("turbopuffer", needed_by="the turbopuffer engine (hotdata_retrieval._http.transport)")

import httpcore2  # noqa: E402
import httpx2  # noqa: E402

from hotdata_retrieval._http import (  # noqa: E402
    HttpCall,
    accept_encoding,
    bounded_body,
    current_call,
)
from hotdata_retrieval.engines.limits import ResponseLimits  # noqa: E402
from hotdata_retrieval.errors import EngineError  # noqa: E402

_DECODED_AWAY = (b"content-encoding", b"content-length")


class BoundedTransport(httpx2.BaseTransport):
    """An httpx2 transport whose answers are read within limits (module docstring).

    Args:
        limits: the limits of a request made outside any call; a call's own limits
            (:class:`~hotdata_retrieval._http.HttpCall`) come first.
        connection_limits: how many connections are kept (httpx2's ``Limits``; default its
            own: 100 at once, 20 kept alive for 5 s).
        verify: check the server's certificate (httpx2's ``verify``: ``True``, ``False``, or
            an ``ssl.SSLContext``).
    """

    def __init__(
        self,
        limits: ResponseLimits,
        *,
        connection_limits: httpx2.Limits | None = None,
        verify: Any = True,
    ) -> None:
        pool_limits = connection_limits or httpx2.Limits(
            max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0
        )
        self.limits = limits
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify),
            max_connections=pool_limits.max_connections,
            max_keepalive_connections=pool_limits.max_keepalive_connections,
            keepalive_expiry=pool_limits.keepalive_expiry,
            network_backend=_WatchedBackend(httpcore2.SyncBackend()),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request``; the answer's body is read within the limits as it is iterated.

        Raises:
            EngineError: an earlier answer of the running call could not be read (the client
                retries; a :class:`~hotdata_retrieval.errors.ResponseLimitError` for a limit),
                or, while the body is read, this one cannot.
            httpx2.TransportError: the request could not be sent or answered (httpcore2's
                errors, as httpx2's own transport raises them).
        """
        call = current_call()
        if call is not None:
            call.check()
        request.headers["Accept-Encoding"] = accept_encoding(request.headers.get("Accept-Encoding"))
        sent = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=_stream_of(request),
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(sent)
        encoding = ", ".join(
            value.decode("latin-1")
            for name, value in answer.headers
            if name.lower() == b"content-encoding"
        )
        return httpx2.Response(
            status_code=answer.status,
            headers=[
                (name, value) for name, value in answer.headers if name.lower() not in _DECODED_AWAY
            ],
            stream=_BoundedStream(answer, encoding or None, self.limits, call),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()


def _stream_of(request: httpx2.Request) -> Iterable[bytes]:
    stream = request.stream
    if not isinstance(stream, httpx2.SyncByteStream):
        raise TypeError("a synchronous transport sends a synchronous request body")
    return stream


class _BoundedStream(httpx2.SyncByteStream):
    """An answer's body, decompressed and counted as it is read."""

    def __init__(
        self,
        answer: httpcore2.Response,
        encoding: str | None,
        limits: ResponseLimits,
        call: HttpCall | None,
    ) -> None:
        self._answer = answer
        self._encoding = encoding
        self._limits = limits if call is None else call.limits
        self._call = call

    def __iter__(self) -> Iterator[bytes]:
        call = self._call
        chunks = self._answer.stream
        if not isinstance(chunks, Iterable):
            raise TypeError("a synchronous transport reads a synchronous answer")
        try:
            with _as_httpx_errors():
                yield from bounded_body(
                    chunks,
                    self._encoding,
                    self._limits,
                    answer="the server's answer" if call is None else call.answer,
                )
        except EngineError as error:
            if call is not None:
                call.failure = error
            self.close()  # a partly read answer: httpcore2 closes its connection
            raise
        if call is not None:
            call.release()

    def close(self) -> None:
        self._answer.close()


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore2's errors raised as the httpx2 errors of the same name, as httpx2's own
    transport raises them (a client tells a timeout from a refused connection by them)."""
    try:
        yield
    except Exception as error:
        if not type(error).__module__.startswith("httpcore2"):
            raise
        kind = getattr(httpx2, type(error).__name__, None)
        if not (isinstance(kind, type) and issubclass(kind, httpx2.TransportError)):
            kind = httpx2.TransportError
        raise kind(str(error)) from error


class _WatchedBackend(httpcore2.NetworkBackend):
    """A network backend whose streams are watched by the running call."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        _check()
        stream = self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _WatchedStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        _check()
        stream = self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )
        return _WatchedStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _WatchedStream(httpcore2.NetworkStream):
    """A connection that shows its socket to the running call before each read and write."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def _watch(self) -> None:
        call = current_call()
        if call is not None:
            call.watch(self._inner.get_extra_info("socket"))

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._watch()
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._watch()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        self._watch()
        upgraded = self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _WatchedStream(upgraded)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _check() -> None:
    call = current_call()
    if call is not None:
        call.check()
