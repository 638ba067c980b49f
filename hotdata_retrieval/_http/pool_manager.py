"""The bounds of :mod:`hotdata_retrieval._http` on a urllib3 client: the generated ``hotdata``
SDK, which sends every request through ``rest_client.pool_manager.request(...)`` and reads the
body with ``response.data``.

:func:`bound_pool_manager` puts a :class:`BoundedPoolManager` in that place, over the client's
own manager (a ``PoolManager``, ``ProxyManager`` or SOCKS manager, its settings kept):

- each request asks only for the encodings :func:`~hotdata_retrieval._http.bounded_body`
  reads, and is sent with ``preload_content=False, decode_content=False``; its body is read in
  chunks through :func:`~hotdata_retrieval._http.bounded_body` and handed to the client as an
  already-read response, without ``Content-Encoding``. An answer past a limit has its
  connection closed rather than returned to the pool;
- the manager's connections watch their sockets for the running call
  (:meth:`~hotdata_retrieval._http.HttpCall.watch`): when a request is sent, and when a
  connection is opened, so that the call's deadline can shut them down;
- an answer of ``429 Too Many Requests`` or ``503 Service Unavailable`` (RFC 9110 §15.6.4,
  RFC 6585 §4: the request was not served, and may be sent again later) is retried up to
  :data:`MAX_RETRIES` times, after the wait its ``Retry-After`` header asks for (seconds or
  an HTTP date, read by urllib3's ``Retry.parse_retry_after``), else
  :data:`BACKOFF_SECONDS` doubled at each retry; never more than :data:`MAX_RETRY_WAIT`
  seconds, and never past the call's deadline (a call given up stops waiting). The answer's
  body is not read; its connection is closed.
"""

from __future__ import annotations

import contextlib
import functools
import io
import time
from collections.abc import Callable
from typing import Any

from hotdata_retrieval.extras import require_extra

require_extra("hotdata", needed_by="the Hotdata engine (hotdata_retrieval._http.pool_manager)")

import urllib3  # noqa: E402
from urllib3.connection import HTTPConnection  # noqa: E402

from hotdata_retrieval._http import (  # noqa: E402
    CHUNK_BYTES,
    CallAbandoned,
    accept_encoding,
    bounded_body,
    current_call,
)
from hotdata_retrieval.engines.limits import ResponseLimits  # noqa: E402
from hotdata_retrieval.errors import EngineError  # noqa: E402

RETRIED_STATUSES = frozenset({429, 503})
"""The answers that say the request was not served and may be sent again later."""

MAX_RETRIES = 3
"""How many times one request is sent again after such an answer."""

BACKOFF_SECONDS = 0.5
"""The wait before the first retry when the answer names none; doubled at each retry."""

MAX_RETRY_WAIT = 10.0
"""The longest wait before a retry, in seconds, whatever ``Retry-After`` asks."""


def retry_wait(retry_after: str | None, retry: int) -> float:
    """Seconds to wait before retry number ``retry`` (0 for the first): what ``Retry-After``
    asks (delay seconds or an HTTP date, RFC 9110 §10.2.3), else the back-off
    ``BACKOFF_SECONDS * 2**retry``, at most :data:`MAX_RETRY_WAIT`; a malformed header is
    read as no header."""
    wait: float = BACKOFF_SECONDS * 2**retry
    if retry_after is not None:
        with contextlib.suppress(urllib3.exceptions.InvalidHeader):
            wait = max(0.0, float(urllib3.util.Retry().parse_retry_after(retry_after)))
    return min(wait, MAX_RETRY_WAIT)


def _wait(seconds: float) -> None:
    """Sleep ``seconds``, ending early (``CallAbandoned``) when the running call is given up."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        _check_call()
        time.sleep(min(left, 0.05))
    _check_call()


class BoundedPoolManager:
    """A urllib3 pool manager whose answers are read within limits (module docstring).

    Args:
        inner: the manager that sends the requests; its pools are cleared, and it makes its
            connections watched from then on.
        limits: the limits of a request made outside any call; a call's own limits
            (:class:`~hotdata_retrieval._http.HttpCall`) come first.

    Everything but :meth:`request` and :meth:`urlopen` is ``inner``'s.
    """

    def __init__(self, inner: Any, limits: ResponseLimits) -> None:
        inner.clear()
        inner.pool_classes_by_scheme = {
            scheme: _watched_pool(pool) for scheme, pool in inner.pool_classes_by_scheme.items()
        }
        self.inner = inner
        self.limits = limits

    def request(
        self, method: str, url: str, headers: Any = None, **options: Any
    ) -> urllib3.BaseHTTPResponse:
        """``inner.request(method, url, ...)``, its body read within the limits.

        Raises:
            ResponseLimitError: the body passed a limit (its connection is closed).
            EngineError: the body came in an encoding that was not asked for, or is not valid
                in its encoding.
        """
        headers = self._headers(headers)
        return self._retried(
            lambda: self.inner.request(method, url, headers=headers, **_unread(options)),
            method,
            url,
        )

    def urlopen(self, method: str, url: str, **options: Any) -> urllib3.BaseHTTPResponse:
        """``inner.urlopen(method, url, ...)``, its body read within the limits (as
        :meth:`request`)."""
        options["headers"] = self._headers(options.get("headers"))
        return self._retried(
            lambda: self.inner.urlopen(method, url, **_unread(options)), method, url
        )

    def _retried(
        self, send: Callable[[], urllib3.BaseHTTPResponse], method: str, url: str
    ) -> urllib3.BaseHTTPResponse:
        """``send()``'s answer, read within the limits; sent again after an answer of
        :data:`RETRIED_STATUSES` (module docstring)."""
        for retry in range(MAX_RETRIES + 1):
            _check_call()
            answer = send()
            if answer.status not in RETRIED_STATUSES or retry == MAX_RETRIES:
                break
            wait = retry_wait(answer.headers.get("Retry-After"), retry)
            answer.close()  # the body is never read: the connection goes with it
            _wait(wait)
        return self._read(answer, method, url)

    def clear(self) -> None:
        """Close every pooled connection."""
        self.inner.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _headers(self, headers: Any) -> dict[str, Any]:
        given = dict(self.inner.headers if headers is None else headers)
        asked = [key for key in given if key.lower() == "accept-encoding"]
        wanted = accept_encoding(given.pop(asked[0]) if asked else None)
        for key in asked[1:]:
            del given[key]
        given["Accept-Encoding"] = wanted
        return given

    def _read(
        self, response: urllib3.BaseHTTPResponse, method: str, url: str
    ) -> urllib3.BaseHTTPResponse:
        call = current_call()
        limits = self.limits if call is None else call.limits
        answer = "the server's answer" if call is None else call.answer
        body = io.BytesIO()
        try:
            for piece in bounded_body(
                response.stream(CHUNK_BYTES, decode_content=False),
                response.headers.get("Content-Encoding"),
                limits,
                answer=answer,
            ):
                body.write(piece)
        except BaseException as error:
            response.close()  # the connection too: the rest of the body is never read
            if call is not None:
                if call.abandoned:
                    raise CallAbandoned from None
                if isinstance(error, EngineError):
                    call.failure = error
            raise
        if call is not None:
            call.release()
        response.release_conn()
        headers = urllib3.HTTPHeaderDict(response.headers)
        headers.discard("Content-Encoding")
        headers.discard("Transfer-Encoding")
        headers["Content-Length"] = str(body.tell())
        body.seek(0)
        return urllib3.HTTPResponse(
            body=body,
            headers=headers,
            status=response.status,
            version=response.version,
            reason=response.reason,
            preload_content=False,
            decode_content=False,
            retries=response.retries,
            request_method=method,
            request_url=url,
        )


def bound_pool_manager(client: Any, limits: ResponseLimits) -> BoundedPoolManager:
    """Bound every answer ``client`` (a generated SDK's ``ApiClient``) reads: its REST
    client's pool manager becomes a :class:`BoundedPoolManager` over the one it had (once:
    a manager already bounded is kept, and answers ``limits`` outside a call from then on)."""
    rest = client.rest_client
    manager = rest.pool_manager
    if isinstance(manager, BoundedPoolManager):
        manager.limits = limits
        return manager
    bounded = BoundedPoolManager(manager, limits)
    rest.pool_manager = bounded
    return bounded


def _check_call() -> None:
    call = current_call()
    if call is not None:
        call.check()


def _unread(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for a request whose body is left unread and undecoded."""
    return {**options, "preload_content": False, "decode_content": False}


class _WatchedConnection(HTTPConnection):
    """A connection that shows its socket to the running call before every request and once
    it is opened."""

    def _new_conn(self) -> Any:
        connection = super()._new_conn()
        _watch(connection)
        return connection

    def connect(self) -> None:
        super().connect()
        _watch(self.sock)

    def request(self, *arguments: Any, **options: Any) -> None:
        call = current_call()
        if call is not None:
            call.check()  # a client's retry of a call given up, or of an answer refused
            call.watch(self.sock)
        super().request(*arguments, **options)


def _watch(connection: Any) -> None:
    call = current_call()
    if call is not None:
        call.watch(connection)


@functools.cache
def _watched_pool(pool: type[Any]) -> type[Any]:
    """``pool``, a urllib3 connection pool class, making watched connections of its own
    kind."""
    connection = pool.ConnectionCls
    if not issubclass(connection, HTTPConnection):
        return pool  # urllib3's stand-in when the ssl module is missing: it never connects
    watched = type(f"Watched{connection.__name__}", (_WatchedConnection, connection), {})
    return type(f"Watched{pool.__name__}", (pool,), {"ConnectionCls": watched})
