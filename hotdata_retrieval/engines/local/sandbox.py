"""Agent SQL in a worker process: limits that hold whatever the statement does.

Some statements cannot be stopped from inside the process that runs them. DataFusion folds
constants and plans long expressions before any batch exists, so a time limit checked between
batches comes too late (``repeat(md5('x'), 50000000)`` in the ``SELECT`` list); a scalar that
allocates gigabytes is invisible to its memory pool, and a failed allocation aborts the process;
a 10,000-term expression overflows the planner's stack. For SQL written by an agent the local
engine therefore runs the statement in a worker process (:class:`SqlWorker`), and from outside:

- the **time limit** kills the worker when the deadline passes — the query stops, whatever it
  was doing;
- the **memory limit** kills it when its resident set grows past its size at rest plus the limit
  (checked every 20 ms on Linux; DataFusion's own pool, set to the same size inside the worker,
  fails sorts, joins and aggregates earlier and more gently);
- a **crash** (a stack overflow, an aborted allocation) ends only the worker.

Each is a one-line :class:`~hotdata_retrieval.engines.limits.SqlLimitError` or
:class:`~hotdata_retrieval.engines.errors.EngineError`, and the next statement starts a fresh
worker. The worker opens the same database directory (read-only use) and follows its catalog
as any engine does; it answers one statement at a time, streaming batches only as the caller
asks for them.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits

__all__ = ["SqlWorker"]

logger = logging.getLogger(__name__)

STARTUP_SECONDS = 300.0
"""How long a new worker may take to open the database (reading every table into memory)."""

_POLL_SECONDS = 0.02


def _resident_bytes(pid: int) -> int | None:
    """Resident set size of process ``pid`` (``None`` where ``/proc`` is missing)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _serve(
    connection: Connection, root: str, catalog: str, schema: str, embedder: bytes | None
) -> None:
    """The worker's loop: open the database, then answer ``run`` / ``next`` / ``stop``."""
    from hotdata_retrieval.engines.local.engine import LocalEngine

    model = None
    if embedder is not None:
        with contextlib.suppress(Exception):  # no embedder: semantic SQL says so itself
            model = pickle.loads(embedder)
    try:
        engine = LocalEngine(root, embedder=model, catalog=catalog, schema=schema)
    except Exception as error:
        connection.send(("failed", f"{type(error).__name__}: {error}"))
        return
    connection.send(("ready",))
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message[0] != "run":
            continue
        _, text, limits = message
        batches = engine._stream_here(text, limits=limits)
        schema_sent = False
        try:
            while True:
                request = connection.recv()
                if request[0] == "stop":
                    break
                try:
                    batch = next(batches)
                except StopIteration:
                    connection.send(("end",))
                    break
                if not schema_sent:
                    connection.send(("schema", batch.schema.serialize().to_pybytes()))
                    schema_sent = True
                connection.send(("batch", batch.serialize().to_pybytes()))
        except SqlLimitError as error:
            connection.send(("limit", str(error), error.limit, error.value))
        except EngineError as error:
            connection.send(("error", str(error)))
        except Exception as error:
            connection.send(("error", f"{type(error).__name__}: {error}"))
        finally:
            batches.close()


@attrs.define
class _Process:
    process: Any
    connection: Connection
    baseline: int | None


class SqlWorker:
    """A worker process that runs SQL over one database directory under hard limits.

    Args:
        root: the database directory.
        catalog: the catalog three-part names use.
        schema: the schema.
        embedder: the embedder for ``vector_search`` and ``vector_distance`` in the worker's
            SQL; passed by pickling (one that cannot be pickled is left out, and semantic SQL
            then reports that the engine has no embedder).
    """

    def __init__(self, root: Path, *, catalog: str, schema: str, embedder: Any = None) -> None:
        self.root = root
        self.catalog = catalog
        self.schema = schema
        try:
            self._embedder = None if embedder is None else pickle.dumps(embedder)
        except Exception:
            logger.debug("the embedder cannot be pickled; the SQL worker runs without it")
            self._embedder = None
        self._worker: _Process | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker process, if one runs."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        with contextlib.suppress(Exception):
            worker.connection.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5)

    def _start(self) -> _Process:
        if self._worker is not None and self._worker.process.is_alive():
            return self._worker
        self._stop()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child, str(self.root), self.catalog, self.schema, self._embedder),
            daemon=True,
            name="hdq-sql-worker",
        )
        process.start()
        child.close()
        if not parent.poll(STARTUP_SECONDS):
            process.kill()
            raise EngineError(
                f"the SQL worker did not open the database {self.root} within "
                f"{STARTUP_SECONDS:g} seconds"
            )
        try:
            reply = parent.recv()
        except EOFError:
            raise EngineError(
                f"the SQL worker stopped while opening the database (exit code {process.exitcode})"
            ) from None
        if reply[0] != "ready":
            process.join(timeout=5)
            raise EngineError(f"the SQL worker cannot open the database: {reply[1]}")
        assert process.pid is not None  # started
        self._worker = _Process(
            process=process, connection=parent, baseline=_resident_bytes(process.pid)
        )
        return self._worker

    def stream(self, text: str, limits: SqlLimits) -> Iterator[pa.RecordBatch]:
        """Run ``text`` in the worker and yield its batches as the caller asks for them.

        One statement at a time per worker: a second caller waits for the first to finish
        (each is bounded by its time limit). Closing the iterator stops the query.

        Raises:
            SqlLimitError: the time or memory limit was passed (the worker was stopped), or a
                limit DataFusion enforces inside the worker (its memory pool, recursion).
            EngineError: the engine's own message, or the worker stopped (a crash).
        """
        with self._lock:
            worker = self._start()
            deadline = time.monotonic() + limits.timeout_seconds
            # The size at rest, caches included: the limit is on what this statement adds.
            worker.baseline = _resident_bytes(int(worker.process.pid))
            watch = _MemoryWatch(worker, limits.memory_bytes)
            finished = False
            try:
                worker.connection.send(("run", text, limits))
                schema: pa.Schema | None = None
                while True:
                    worker.connection.send(("next",))
                    reply = self._receive(worker, deadline, limits, watch, text)
                    kind = reply[0]
                    if kind == "end":
                        finished = True
                        return
                    if kind == "schema":
                        schema = pa.ipc.read_schema(pa.py_buffer(reply[1]))
                        reply = self._receive(worker, deadline, limits, watch, text)
                        kind = reply[0]
                    if kind == "batch":
                        assert schema is not None
                        yield pa.ipc.read_record_batch(pa.py_buffer(reply[1]), schema)
                        continue
                    finished = True
                    if kind == "limit":
                        raise SqlLimitError(reply[1], limit=reply[2], value=reply[3], sql=text)
                    raise EngineError(reply[1], sql=text)
            finally:
                watch.stop()
                if not finished and self._worker is worker:
                    try:
                        worker.connection.send(("stop",))
                    except (OSError, ValueError):
                        self._stop()

    def _receive(
        self,
        worker: _Process,
        deadline: float,
        limits: SqlLimits,
        watch: _MemoryWatch,
        text: str,
    ) -> tuple[Any, ...]:
        remaining = deadline - time.monotonic()
        ready = remaining > 0 and worker.connection.poll(remaining)
        reply: tuple[Any, ...] | None = None
        if ready and not watch.exceeded:
            try:
                reply = worker.connection.recv()
            except (EOFError, OSError):
                reply = None
        if reply is not None:
            return reply
        code = worker.process.exitcode
        self._stop()
        if watch.exceeded:
            raise limits.memory_error(text)
        if not ready:
            raise limits.timeout_error(text)
        raise EngineError(
            f"the query stopped the SQL worker process (exit code {code}); it starts again "
            "for the next query",
            sql=text,
        )


class _MemoryWatch:
    """Kills the worker when its resident set passes its size at rest plus ``limit`` bytes."""

    def __init__(self, worker: _Process, limit: int) -> None:
        self.exceeded = False
        self._worker = worker
        self._limit = limit
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        if worker.baseline is not None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="hdq-sql-memory")
            self._thread.start()

    def _run(self) -> None:
        pid = self._worker.process.pid
        ceiling = (self._worker.baseline or 0) + self._limit
        while not self._done.wait(_POLL_SECONDS):
            resident = _resident_bytes(pid)
            if resident is None:
                return
            if resident > ceiling:
                self.exceeded = True
                with contextlib.suppress(Exception):
                    self._worker.process.kill()
                return

    def stop(self) -> None:
        self._done.set()
