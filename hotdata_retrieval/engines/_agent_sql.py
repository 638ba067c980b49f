"""SQL from an untrusted author on a SQL store: one closed session, one statement at a time.

The agent SQL tool (``docs/adapters.md``, "Security model") runs text the library did not
write. On a store (SQLite, DuckDB, PostgreSQL) that text runs through a :class:`ClosedSession`:
a connection that the store itself keeps from reading the machine's files, changing settings
or data, loading extensions and reading tables other than the searchable ones, each by the
store's own mechanism (its authorizer, its configuration, its privileges), never by a second
parser. Where the session runs depends on where the store computes:

- **SQLite and DuckDB** compute in the process that calls them, where a crash or a runaway
  statement would take the caller with it. Their sessions run in the SQL worker process
  (:mod:`hotdata_retrieval.engines._worker`, :class:`WorkerSql`): killed at the time limit or
  the memory limit, a crash ending only the worker, the next call starting a fresh one;
- **PostgreSQL** computes in its own server process, which stops a statement at its
  ``statement_timeout``; its session runs here (:class:`ClosedSql`): one statement at a time
  per engine, a watchdog that cancels the statement through the store's own interrupt when
  ``SqlLimits.timeout_seconds`` has passed, whether it is computing or waiting for the reader,
  and a session the statement broke (a connection it killed) replaced for the next call.

Either way the store's failures become the same one-line errors the local engine gives
(:meth:`~hotdata_retrieval.engines.limits.SqlLimits.timeout_error` and friends,
:func:`driver_error`), and batches are read from the store only as the caller asks for
them, so the row and byte ceilings of :func:`~hotdata_retrieval.adapters.bounded.read_bounded`
stop the reading, not only the reply.
"""

from __future__ import annotations

import abc
import contextlib
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotdata_retrieval._deadline import Pending, run_within
from hotdata_retrieval.engines._worker import SessionOpener, SqlWorker, WorkerSession
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

    def use(self, context: Any) -> None:  # noqa: B027 - most sessions need nothing per call
        """Take what the owner read for the next statement (:class:`WorkerSql`: SQLite's
        tables it may read, read again for every statement)."""

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


def driver_error(
    session: ClosedSession, error: BaseException, text: str, limits: SqlLimits, engine_name: str
) -> EngineError:
    """The one-line error for a driver's ``error`` while ``session`` ran ``text``: the store's
    refusal, the limit it reports, or its own message's first line."""
    reason = session.refusal_of(error, text)
    if reason is not None:
        return RefusedStatementError(reason, sql=text)
    limit = session.limit_of(error)
    if limit == "timeout_seconds":
        return limits.timeout_error(text)
    if limit == "memory_bytes":
        return limits.memory_error(text, detail=first_line(str(error)))
    message = first_line(str(error)) or type(error).__name__
    if session.broken:
        message += "; the session is opened again for the next query"
    return EngineError(f"{engine_name}: {message}", sql=text)


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
                raise driver_error(session, error, text, limits, self.engine_name) from None
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


class ClosedWorkerSession(WorkerSession):
    """A store's :class:`ClosedSession` as the SQL worker runs it: each statement's batches,
    the driver's failures turned into one-line errors (:func:`driver_error`). The worker itself
    enforces the time and memory limits, from outside.

    Args:
        engine_name: the store's name in messages.
        session: the closed session, opened in the worker.
    """

    def __init__(self, engine_name: str, session: ClosedSession) -> None:
        self.engine_name = engine_name
        self.session = session

    def stream(
        self, text: str, limits: SqlLimits, context: Any
    ) -> Generator[pa.RecordBatch, None, None]:
        self.session.use(context)
        batches = self.session.batches(text, limits)
        try:
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except HotdataRetrievalError as error:
                    if isinstance(error, EngineError) and error.sql is None:
                        error.sql = text
                    raise
                except Exception as error:
                    raise driver_error(
                        self.session, error, text, limits, self.engine_name
                    ) from None
                yield batch
        finally:
            batches.close()

    @property
    def broken(self) -> bool:
        return self.session.broken

    def close(self) -> None:
        self.session.close()


class WorkerSql:
    """The agent SQL of one store engine, run in a SQL worker process (module docstring).

    Args:
        prepare: called before each statement, under the lock that keeps statements one at a
            time: what the worker must have opened (an equal opener keeps the running worker)
            and what the session needs for this statement (:meth:`ClosedSession.use`).
    """

    def __init__(self, prepare: Callable[[SqlLimits], tuple[SessionOpener, Any]]) -> None:
        self._prepare = prepare
        self.worker = SqlWorker()
        self._lock = threading.Lock()

    def stream(self, text: str, limits: SqlLimits) -> Iterator[pa.RecordBatch]:
        """Run ``text`` in the worker under ``limits``, batch by batch
        (:meth:`~hotdata_retrieval.engines._worker.SqlWorker.stream`).

        Raises:
            SqlLimitError: the time or memory limit was passed; ``limit`` names which.
            RefusedStatementError: the store refused what the statement does.
            EngineError: the store's own message, or the worker stopped; on one line.
        """
        with self._lock:
            opener, context = self._prepare(limits)
            yield from self.worker.stream(text, limits, opener=opener, context=context)

    def stop_worker(self) -> None:
        """Stop the worker process (its snapshot is about to go); the next call starts one."""
        self.worker.close()

    def close(self) -> None:
        """Stop the worker process."""
        self.worker.close()


SNAPSHOT_PREFIX = "hdq-agent-sql-"
"""How the directories of agent SQL snapshots begin: ``hdq-agent-sql-<owner pid>-<random>``,
in the system's temporary directory (``TMPDIR``)."""


def snapshot_directory() -> Path:
    """A new private directory (mode 0700) for a store's agent SQL snapshot, named after this
    process; the directories of processes that are gone (killed before they could delete
    theirs) are deleted first."""
    base = Path(tempfile.gettempdir())
    for stale in base.glob(f"{SNAPSHOT_PREFIX}*"):
        pid = stale.name[len(SNAPSHOT_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            continue  # another user's process: alive, and not ours to judge
    return Path(tempfile.mkdtemp(prefix=f"{SNAPSHOT_PREFIX}{os.getpid()}-"))


class SnapshotDirectory:
    """The directory of one agent SQL snapshot (:func:`snapshot_directory`), deleted by
    :meth:`remove`, or at the latest when ``owner`` (the engine) is collected or the
    interpreter exits.

    Attributes:
        path: the directory.
    """

    def __init__(self, owner: object) -> None:
        self.path = snapshot_directory()
        self._remove = weakref.finalize(owner, shutil.rmtree, str(self.path), True)

    def remove(self) -> None:
        """Delete the directory and all it holds (once)."""
        self._remove()
