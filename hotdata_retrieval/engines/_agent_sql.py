"""SQL from an untrusted author on a SQL store: one closed session, one statement at a time.

The agent SQL tool (``docs/adapters.md``, "Security model") runs text the library did not
write. On a store (SQLite, DuckDB, PostgreSQL) that text runs through a :class:`ClosedSession`:
a connection that the store itself keeps from reading the machine's files, changing settings
or data, loading extensions and reading tables other than the searchable ones, each by the
store's own mechanism (its authorizer, its configuration, its privileges), never by a second
parser. :func:`stream_closed` is the part every store shares:

- one statement at a time per engine (a second caller waits; each is bounded by its time
  limit);
- a watchdog that cancels the statement through the store's own interrupt when
  ``SqlLimits.timeout_seconds`` has passed, whether it is computing or waiting for the reader;
- the store's failures turned into the same one-line errors the local engine gives
  (:meth:`~hotdata_retrieval.engines.limits.SqlLimits.timeout_error` and friends), and a session
  the statement broke (a connection it killed) replaced for the next call.

Batches are read from the store only as the caller asks for them, so the row and byte ceilings
of :func:`~hotdata_retrieval.adapters.bounded.read_bounded` stop the reading, not only the
reply.
"""

from __future__ import annotations

import abc
import contextlib
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from hotdata_retrieval._deadline import Pending, run_within
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.errors import RefusedStatementError as RefusedStatementError

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 1024
"""Rows fetched from a store per batch of agent SQL."""


class ClosedSession(abc.ABC):
    """One store connection that runs agent SQL closed off from the machine (module
    docstring). A subclass opens it and says how its store runs, cancels and fails."""

    @abc.abstractmethod
    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        """Run ``text`` (one read-only query) under ``limits`` and yield its rows batch by
        batch; closing the iterator ends the statement and its transaction.

        Raises:
            RefusedStatementError: the store refused what the statement does.
            Exception: the driver's own error, read by :meth:`limit_of`.
        """

    @abc.abstractmethod
    def cancel(self) -> None:
        """Interrupt the running statement; called from the watchdog's thread."""

    def limit_of(self, error: BaseException) -> str | None:
        """The limit the driver's ``error`` reports: ``"memory_bytes"``, ``"timeout_seconds"``
        (the store's own clock stopped it), or ``None`` for an ordinary failure. (A statement
        the watchdog cancelled is recognised by the watchdog itself.)"""
        return None

    def refusal_of(self, error: BaseException, text: str) -> str | None:
        """The reason to give when the driver's ``error`` is the store refusing what
        ``text`` does (a privilege, a statement kind), or ``None``."""
        return None

    @property
    def broken(self) -> bool:
        """Whether the connection is unusable, so the next call must open a new session."""
        return False

    def fits(self, limits: SqlLimits) -> bool:
        """Whether this session can run a statement under ``limits`` (default: yes); a session
        that set a limit when it opened and cannot change it says no to others."""
        return True

    def close(self) -> None:  # noqa: B027 - a session may hold nothing to release
        """Release the connection."""


def first_line(message: str) -> str:
    """A store's message on one line: its first line (stores add the statement's text, a
    caret and hints on the lines after it)."""
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    return lines[0] if lines else str(message).strip()


def rows_batch(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """Driver rows as one Arrow record batch. A column Arrow cannot hold as one type (values
    of mixed types, as SQLite's dynamic typing allows, or of a type Arrow does not know, such
    as an IP address) becomes text, each value as Python writes it."""
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [()] * len(names)
    arrays = []
    for values in columns:
        try:
            arrays.append(pa.array(list(values)))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=list(names))


GRACE_SECONDS = 2.0
"""How long after its time limit a cancelled statement may take to stop before the call
returns without it (:class:`ClosedSql`)."""


class ClosedSql:
    """The closed session of one engine, opened on first use and replaced when broken.

    The statement runs on a thread of its own, so the call returns at its time limit even
    when the store cannot stop it: a store checks for interruption between batches of rows,
    and one call of a function that computes without bound may not reach the next check. Such
    a statement is abandoned with its session; until it ends, the next call is refused
    (one-line, naming why) rather than piling a second one beside it.

    Args:
        engine_name: the store's name in messages (``sqlite``, ``duckdb``, ``postgres``).
        open_session: opens a new :class:`ClosedSession` for the given limits.
    """

    def __init__(self, engine_name: str, open_session: Callable[[SqlLimits], ClosedSession]):
        self.engine_name = engine_name
        self._open = open_session
        self._session: ClosedSession | None = None
        self._lock = threading.Lock()
        self._abandoned: Pending | None = None

    def close(self) -> None:
        """Close the session, if one is open."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):  # a killed connection may fail to close
                session.close()

    def _session_for(self, limits: SqlLimits, text: str) -> ClosedSession:
        if self._abandoned is not None:
            if not self._abandoned.done():
                raise EngineError(
                    f"{self.engine_name}: the previous query is still running: the store could "
                    f"not stop it at its time limit, so no other query runs until it ends",
                    sql=text,
                )
            self._abandoned = None
        if self._session is not None and (self._session.broken or not self._session.fits(limits)):
            self._drop()
        if self._session is None:
            self._session = self._open(limits)
        return self._session

    def stream(self, text: str, limits: SqlLimits) -> Iterator[pa.RecordBatch]:
        """Run ``text`` in the closed session under ``limits``, batch by batch (module
        docstring).

        Raises:
            SqlLimitError: the time or memory limit was passed; ``limit`` names which.
            RefusedStatementError: the store refused what the statement does.
            EngineError: the store's own message, on one line.
        """
        with self._lock:
            session = self._session_for(limits, text)
            deadline = time.monotonic() + limits.timeout_seconds
            fired = threading.Event()
            ended = threading.Event()
            guard = threading.Lock()

            def expire() -> None:
                with guard:  # never cancels once the statement has ended
                    if ended.is_set():
                        return
                    fired.set()
                    with contextlib.suppress(Exception):
                        session.cancel()

            watchdog = threading.Timer(limits.timeout_seconds, expire)
            watchdog.daemon = True
            watchdog.start()
            batches = session.batches(text, limits)
            abandoned = False
            try:
                while True:
                    if fired.is_set():
                        raise limits.timeout_error(text)
                    ended_in_time, pending = run_within(
                        lambda: next(batches, None),
                        deadline - time.monotonic() + GRACE_SECONDS,
                        name=f"hdq-{self.engine_name}-sql",
                    )
                    if not ended_in_time:
                        abandoned = True
                        self._abandoned = pending
                        raise limits.timeout_error(text)
                    batch = pending.result()
                    if batch is None:
                        return
                    yield batch
            except SqlLimitError:
                raise
            except HotdataRetrievalError as error:
                if fired.is_set():
                    raise limits.timeout_error(text) from None
                if isinstance(error, EngineError) and error.sql is None:
                    error.sql = text
                raise
            except Exception as error:
                if fired.is_set():
                    raise limits.timeout_error(text) from None
                reason = session.refusal_of(error, text)
                if reason is not None:
                    raise RefusedStatementError(reason, sql=text) from None
                limit = session.limit_of(error)
                if limit == "timeout_seconds":
                    raise limits.timeout_error(text) from None
                if limit == "memory_bytes":
                    raise limits.memory_error(text, detail=first_line(str(error))) from None
                message = first_line(str(error)) or type(error).__name__
                if session.broken:
                    message += "; the session is opened again for the next query"
                raise EngineError(f"{self.engine_name}: {message}", sql=text) from None
            finally:
                with guard:
                    ended.set()
                watchdog.cancel()
                if abandoned:
                    # The statement still runs on its thread: leave the session to it.
                    self._session = None
                else:
                    batches.close()
                    if session.broken:
                        self._drop()
