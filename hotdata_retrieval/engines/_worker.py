"""SQL from an untrusted author in a worker process: limits that hold whatever the statement does.

Some statements cannot be stopped, or survived, from inside the process that runs them: an
engine that checks its interrupt only between batches of rows runs one long call of a function
to its end (DataFusion folding ``repeat(md5('x'), 50000000)`` while it plans, DuckDB's
``replace`` or ``GLOB`` over a long text); a value one expression computes is invisible to
the engine's memory pool (DataFusion's, DuckDB's buffer manager); a failed allocation aborts
the process, and a stack overflow (a 10,000-term expression in DataFusion's planner, a JSON
text nested 100,000 deep in DuckDB's ``json_structure``) crashes it. Every engine that runs
agent SQL in the library's own process (the local engine, SQLite, DuckDB) therefore runs it
in a worker process (:class:`SqlWorker`), and bounds it from outside:

- the **time limit** kills the worker when the deadline passes — the query stops, whatever it
  was doing;
- the **memory limit** kills it when its resident set grows past its size at rest plus the limit
  (checked every 20 ms on Linux; the engine's own limit, set to the same size inside the
  worker, fails sorts, joins and aggregates earlier and more gently);
- a **crash** ends only the worker.

Each is a one-line :class:`~hotdata_retrieval.engines.limits.SqlLimitError` or
:class:`~hotdata_retrieval.engines.errors.EngineError`, and the next statement starts a fresh
worker, on its own call's clock. What the worker opens is the engine's to say: a
:class:`SessionOpener` (pickled to the worker once) opens a :class:`WorkerSession` there — the
local engine's database directory, a store's closed session — which answers one statement at a
time, streaming batches only as the caller asks for them. A worker is kept between calls (it
answers the next statement at once) and replaced when the engine's opener changes (a DuckDB
store's snapshot made again after a load, another memory limit).

The worker is a new interpreter running the module :mod:`hotdata_retrieval.engines._sql_worker`
(:data:`_BOOTSTRAP`: never from the caller's directory), not a ``multiprocessing`` child:
``spawn`` imports the caller's ``__main__`` again in the child, so a script without an ``if
__name__ == "__main__":`` guard ran its whole top level twice. It talks to its owner over a
socket pair, with stdin and stdout closed (its owner's stdout may be a protocol channel, as
``hdq mcp``'s is). It cannot outlive its owner: on Linux it asks the kernel to kill it when its
owner dies (``PR_SET_PDEATHSIG``; the "parent" is the thread that started it, prctl(2), so
every worker is started from one thread that lives as long as the process), and everywhere a
thread of it waits on a pipe only its owner holds, and exits when that pipe closes.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.errors import RefusedStatementError

if TYPE_CHECKING:
    import pyarrow as pa

logger = logging.getLogger(__name__)

STARTUP_SECONDS = 300.0
"""How long a new worker may take to open what it serves (the local engine reads every table
into memory)."""

_POLL_SECONDS = 0.02


class WorkerSession(abc.ABC):
    """What a worker runs statements with, opened there by a :class:`SessionOpener`."""

    @abc.abstractmethod
    def stream(
        self, text: str, limits: SqlLimits, context: Any
    ) -> Generator[pa.RecordBatch, None, None]:
        """Run ``text`` under ``limits`` and yield its batches; closing the generator ends
        the statement. ``context`` is what the owner read for this statement
        (:meth:`SqlWorker.stream`).

        Raises:
            SqlLimitError: a limit the engine enforces itself.
            RefusedStatementError: the statement does what agent SQL may not.
            EngineError: the engine's own message, on one line.
        """

    def warm_up(self) -> None:  # noqa: B027 - a session may have nothing to start
        """Do, once after opening, what the engine does lazily on its first statement (start
        its runtime, load its kernels), so that the worker's size at rest, which the memory
        limit is counted from, holds it and the first statement is charged for what it adds
        only. Called before the worker reports it is ready.

        Raises:
            Exception: anything; its message is the opening's error.
        """

    @property
    def broken(self) -> bool:
        """Whether the session cannot run another statement (the worker then exits, and the
        next call starts a fresh one)."""
        return False

    def close(self) -> None:  # noqa: B027 - a session may hold nothing to release
        """Release what the session holds."""


class SessionOpener(abc.ABC):
    """What a worker opens, sent to it once by pickling: so a subclass holds plain values
    (paths, names, limits) and is compared by value (``attrs`` frozen classes): a worker
    opened by an equal opener is reused."""

    @abc.abstractmethod
    def open(self) -> WorkerSession:
        """Open the session, in the worker process.

        Raises:
            Exception: anything; its message is the call's error.
        """

    @abc.abstractmethod
    def describe(self) -> str:
        """What the worker opens, for messages (``the database /path/db``)."""


def _resident_bytes(pid: int) -> int | None:
    """Resident set size of process ``pid`` (``None`` where ``/proc`` is missing)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


_PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the process gets when its parent thread dies."""


def worker_main(arguments: list[str]) -> None:
    """The worker process's entry point (:data:`_BOOTSTRAP`, with the arguments ``<socket fd>
    <lifeline fd> <owner pid>``): tie its life to its owner's, then answer statements over the
    socket until it closes."""
    channel, lifeline, owner = (int(argument) for argument in arguments)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # no libc to call: the lifeline alone holds
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != owner:  # the owner died before the signal was asked for
        os._exit(1)

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(lifeline, 1):  # the owner never writes: this returns at its death
                pass
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="hdq-sql-lifeline").start()
    connection = Connection(channel)
    try:
        opener = connection.recv()
    except Exception:  # the owner went away, or sent what this interpreter cannot read
        return
    _serve(connection, opener)


def _serve(connection: Connection, opener: SessionOpener) -> None:
    """The worker's loop: open the session, then answer ``run`` / ``next`` / ``stop``."""
    # Every answer is Arrow: loaded before the size at rest is taken, so the first
    # statement's memory limit is not spent on it (building the first array loads its kernels
    # and NumPy: about 60 MB, measured with pyarrow 26).
    import pyarrow as pa

    pa.RecordBatch.from_arrays([pa.array([1, None])], names=["x"]).serialize()

    try:
        session = opener.open()
        session.warm_up()
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
        _, text, limits, context = message
        _answer(connection, session.stream(text, limits, context))
        if session.broken:
            with contextlib.suppress(Exception):
                session.close()
            return


def _answer(connection: Connection, batches: Generator[pa.RecordBatch, None, None]) -> None:
    """Send one statement's batches as the owner asks for them (``next``), until its end, an
    error or ``stop``."""
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
    except RefusedStatementError as error:
        connection.send(("refused", str(error)))
    except EngineError as error:
        connection.send(("error", str(error)))
    except Exception as error:
        connection.send(("error", f"{type(error).__name__}: {error}"))
    finally:
        batches.close()


class _Spawner:
    """Starts worker processes from one thread that lives as long as the process, so that
    the kernel's parent-death signal, which follows the thread that started a process, fires
    only when the whole owner dies (module docstring)."""

    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self) -> None:
        while True:
            start, answer = self._requests.get()
            try:
                answer.put((True, start()))
            except BaseException as error:  # handed back to the caller's thread
                answer.put((False, error))

    def start(self, start: Callable[[], Any]) -> Any:
        """``start()``, called on the spawning thread; its result or its exception."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name="hdq-sql-spawner"
                )
                self._thread.start()
        answer: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._requests.put((start, answer))
        succeeded, value = answer.get()
        if not succeeded:
            raise value
        return value


_SPAWNER = _Spawner()


@attrs.define
class _Process:
    """One worker: its process, the socket to it, the pipe it watches and what it opened."""

    process: subprocess.Popen[bytes]
    connection: Connection
    lifeline: int
    opener: SessionOpener
    baseline: int | None = None
    ready: bool = False
    started: float = attrs.field(factory=time.monotonic)

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.close(self.lifeline)


_BOOTSTRAP = (
    "import sys; sys.path[:] = [entry for entry in sys.path if entry]; import runpy; "
    "runpy.run_module('hotdata_retrieval.engines._sql_worker', run_name='__main__')"
)
"""How the worker interpreter starts: ``python -c``, which puts the current directory first on
``sys.path`` as ``-m`` does (an empty entry: Python documentation, "sys.path"), takes it off
before its first import (``sys`` is built in), so a ``pyarrow.py``, a ``contextlib.py``
(which ``runpy`` imports) or a ``hotdata_retrieval/`` in the directory the caller runs from
is never the worker's. On Python 3.11 and later ``-P`` keeps it off the path from the start (Python
documentation, "Command line and environment")."""


def _worker_command(arguments: Sequence[str]) -> list[str]:
    """The worker's command line (:data:`_BOOTSTRAP`, with ``-P`` where Python has it)."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe_path, "-c", _BOOTSTRAP, *arguments]


def _launch(opener: SessionOpener) -> _Process:
    """Start a worker interpreter (module docstring) and send it what to open."""
    ours, theirs = socket.socketpair()
    watched, lifeline = os.pipe()
    try:
        arguments = [str(theirs.fileno()), str(watched), str(os.getpid())]
        process = subprocess.Popen(
            _worker_command(arguments),
            pass_fds=(theirs.fileno(), watched),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            close_fds=True,
        )
    except BaseException:
        ours.close()
        os.close(lifeline)
        raise
    finally:
        theirs.close()
        os.close(watched)
    connection = Connection(ours.detach())
    connection.send(opener)
    return _Process(process=process, connection=connection, lifeline=lifeline, opener=opener)


class SqlWorker:
    """A worker process that runs SQL under hard limits (module docstring).

    Args:
        opener: what the worker opens; :meth:`stream` may name another one, which replaces
            the running worker.
    """

    def __init__(self, opener: SessionOpener | None = None) -> None:
        self.opener = opener
        self._worker: _Process | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The running worker's process id, or ``None``."""
        worker = self._worker
        return worker.pid if worker is not None else None

    def close(self) -> None:
        """Stop the worker process, if one runs."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()

    def _start(
        self, opener: SessionOpener, deadline: float, limits: SqlLimits, text: str
    ) -> _Process:
        """The worker, started if none runs (or the running one opened something else) and
        waited for until it has opened its session, within the call's time limit (a restart
        after a crash counts against the call that needs it). A worker still opening at the
        deadline is kept for the next call, until :data:`STARTUP_SECONDS` have passed in all.

        Raises:
            SqlLimitError: the worker was not ready within the time limit.
            EngineError: it stopped while opening, or could not open, its session.
        """
        worker = self._worker
        if worker is not None and (not worker.alive() or worker.opener != opener):
            self._stop()
            worker = None
        if worker is None:
            worker = _SPAWNER.start(lambda: _launch(opener))
            self._worker = worker
        if worker.ready:
            return worker
        give_up = worker.started + STARTUP_SECONDS
        remaining = min(deadline, give_up) - time.monotonic()
        if remaining <= 0 or not worker.connection.poll(remaining):
            if time.monotonic() >= give_up:
                self._stop()
                raise EngineError(
                    f"the SQL worker did not open {opener.describe()} within "
                    f"{STARTUP_SECONDS:g} seconds"
                )
            error = limits.timeout_error(text)
            error.args = (
                f"{error} (the SQL worker was still opening {opener.describe()}; the query did "
                "not run, and the next call finds the worker further along)",
            )
            raise error
        try:
            reply = worker.connection.recv()
        except (EOFError, OSError):
            code = worker.process.wait(timeout=5)
            self._stop()
            raise EngineError(
                f"the SQL worker stopped while opening {opener.describe()} (exit code {code})"
            ) from None
        if reply[0] != "ready":
            self._stop()
            raise EngineError(f"the SQL worker cannot open {opener.describe()}: {reply[1]}")
        worker.ready = True
        return worker

    def stream(
        self,
        text: str,
        limits: SqlLimits | None = None,
        *,
        opener: SessionOpener | None = None,
        context: Any = None,
    ) -> Iterator[pa.RecordBatch]:
        """Run ``text`` in the worker under ``limits`` (default
        :class:`~hotdata_retrieval.engines.limits.SqlLimits`) and yield its batches as the
        caller asks for them.

        One statement at a time per worker: a second caller waits for the first to finish
        (each is bounded by its time limit). Closing the iterator stops the query.

        Args:
            text: the statement.
            limits: its bounds.
            opener: what the worker must have opened (default: the one given at
                construction); a running worker that opened something else is stopped and a
                new one started, on this call's clock.
            context: what the session needs for this statement, read by the owner (pickled).

        Raises:
            SqlLimitError: the time or memory limit was passed (the worker was stopped), or a
                limit the engine enforces inside the worker.
            RefusedStatementError: the session refused the statement.
            EngineError: the engine's own message, or the worker stopped (a crash).
        """
        import pyarrow as pa

        limits = SqlLimits() if limits is None else limits
        with self._lock:
            if opener is not None:
                self.opener = opener
            if self.opener is None:
                raise EngineError("the SQL worker has nothing to open")
            deadline = time.monotonic() + limits.timeout_seconds
            worker = self._start(self.opener, deadline, limits, text)
            # The size at rest, caches included: the limit is on what this statement adds.
            worker.baseline = _resident_bytes(worker.pid)
            watch = _MemoryWatch(worker, limits.memory_bytes)
            finished = False
            try:
                worker.connection.send(("run", text, limits, context))
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
                    if kind == "refused":
                        raise RefusedStatementError(reply[1], sql=text)
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
        code = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = worker.process.wait(timeout=0 if not ready else 5)
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
        pid = self._worker.pid
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
