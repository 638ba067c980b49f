"""The local engine's DataFusion sessions: the SQL surface every statement runs on.

One session runs the library's own statements (``LocalEngine.sql``, ``search``); agent SQL runs
in sessions of its own, one per memory limit and recursion setting, each with a memory pool and
no disk manager. Every session has the engine's functions registered (what
:class:`SessionFunctions` gives: the distance functions, ``bm25_search``, ``vector_search``,
``nearest_scan``, ``vector_distance``, ``hybrid_search``) and the engine's schema, whose
tables are the catalog's: a table is opened when a statement first names it, and its rows are
served from memory (:class:`_CatalogSchema`).

SQL is read-only on every path: statements are planned with DataFusion's ``SQLOptions``
refusing DDL, DML and other statements (:data:`READ_ONLY`), and a session reads no file by
path (URL tables are off, no external tables).
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pyarrow as pa
from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext, SQLOptions, udf, udtf
from datafusion.catalog import SchemaProvider, Table

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.errors import HotdataRetrievalError

if TYPE_CHECKING:
    from hotdata_retrieval.engines.local.tables import LoadedTable

READ_ONLY = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
"""Every statement the engine runs is planned with these options: DataFusion refuses DDL
(``CREATE``/``DROP``, external tables, views), DML (``INSERT``, ``COPY ... TO``) and other
statements (``SET``, ``PREPARE``, transactions) at planning time, before anything executes."""

_REFUSED_STATEMENT = re.compile(r"\b(DDL|DML|Statement) not supported\b")

_PYERR_VALUE = re.compile(r'value: \w+\((?P<quote>["\'])(?P<message>.*?)(?P=quote)\)', re.DOTALL)


def engine_message(error: BaseException) -> str:
    """The readable message inside a DataFusion error (which wraps Python errors as PyErr)."""
    text = str(error)
    match = _PYERR_VALUE.search(text)
    if match is not None:
        return match.group("message").replace("\\'", "'").replace('\\"', '"')
    return text


def literal_arguments(
    name: str, arguments: Sequence[Any], *, minimum: int, maximum: int
) -> list[Any]:
    """A table function's arguments as Python values.

    Raises:
        ValueError: too few or too many, or one that is not a literal (DataFusion reports it
            as the function's error).
    """
    if not minimum <= len(arguments) <= maximum:
        shape = f"{name}('catalog.schema.table', 'column', 'query'" + (
            ", k)" if minimum == 4 else "[, k])"
        )
        raise ValueError(f"{name} takes {minimum} to {maximum} arguments: {shape}")
    values = []
    for argument in arguments:
        try:
            values.append(argument.python_value().as_py())
        except Exception:  # a column or expression, not a literal
            raise ValueError(f"{name}: every argument must be a literal, got {argument}") from None
    return values


def limit_error(error: BaseException, limits: SqlLimits, text: str) -> SqlLimitError | None:
    """The limit a DataFusion failure reports, if it is one."""
    message = engine_message(error)
    if "Resources exhausted" in message:
        return limits.memory_error(text, detail=message)
    if "Recursive CTEs are not enabled" in message:
        return limits.recursion_error(text)
    return None


@attrs.frozen
class ScalarFunction:
    """One scalar function a session registers (DataFusion's ``udf`` arguments)."""

    name: str
    function: Callable[..., pa.Array]
    arguments: Sequence[pa.DataType]
    result: pa.DataType
    volatility: str


class SessionFunctions(Protocol):
    """What every session registers: the engine's scalar and table functions."""

    def scalar_functions(self) -> Iterable[ScalarFunction]: ...

    def table_functions(self) -> Mapping[str, Callable[..., Table]]: ...


class CatalogTables(Protocol):
    """What the sessions read of the database's tables (``_catalog.OpenTables`` meets it)."""

    @property
    def entries(self) -> Mapping[str, object]:
        """The catalog's tables, by name."""
        ...

    @property
    def damaged(self) -> Mapping[str, str]:
        """The tables found damaged, with the reason."""
        ...

    def find(self, name: str) -> LoadedTable | None:
        """The open table ``name``, opened on first use; ``None`` when there is none or it is
        damaged."""
        ...


class Sessions:
    """The engine's DataFusion sessions (module docstring).

    Args:
        catalog: the default catalog three-part names use.
        schema: the default schema.
        functions: the functions each session registers.
        tables: the catalog's tables (the schema's), each opened on first use; the damaged
            ones, and why, are named in a failure that mentions one.
    """

    def __init__(
        self,
        *,
        catalog: str,
        schema: str,
        functions: SessionFunctions,
        tables: CatalogTables,
    ) -> None:
        self._catalog = catalog
        self._schema = schema
        self._functions = functions
        self._catalog_tables = tables
        self._lock = threading.RLock()
        self._tables = _CatalogSchema(tables)
        self.main = self._new(SessionConfig())
        self._sandboxes: dict[tuple[int, bool], SessionContext] = {}

    def _new(
        self, config: SessionConfig, runtime: RuntimeEnvBuilder | None = None
    ) -> SessionContext:
        config = config.with_default_catalog_and_schema(self._catalog, self._schema)
        context = SessionContext(config.with_information_schema(True), runtime)
        for scalar in self._functions.scalar_functions():
            context.register_udf(
                udf(
                    scalar.function,
                    list(scalar.arguments),
                    scalar.result,
                    scalar.volatility,
                    scalar.name,
                )
            )
        for name, function in self._functions.table_functions().items():
            # DataFusion looks a table function up by its name as written, and compilers
            # that upper-case function names (ibis's PostgreSQL one) write BM25_SEARCH
            for spelling in dict.fromkeys((name, name.upper())):
                context.register_udtf(udtf(function, spelling))
        context.catalog(self._catalog).register_schema(self._schema, self._tables)
        return context

    def sandbox(self, limits: SqlLimits) -> SessionContext:
        """The session agent SQL runs in: ``limits.memory_bytes`` of memory pool shared by its
        statements, no disk manager (nothing spills to disk), recursive queries only when the
        limits allow them. One per distinct pair of those settings."""
        key = (limits.memory_bytes, limits.allow_recursive_queries)
        with self._lock:
            context = self._sandboxes.get(key)
            if context is None:
                runtime = (
                    RuntimeEnvBuilder()
                    .with_greedy_memory_pool(limits.memory_bytes)
                    .with_disk_manager_disabled()
                )
                config = SessionConfig().set(
                    "datafusion.execution.enable_recursive_ctes",
                    "true" if limits.allow_recursive_queries else "false",
                )
                context = self._sandboxes[key] = self._new(config, runtime)
            return context

    def register(self, loaded: LoadedTable) -> None:
        """Serve ``loaded`` to every session from now on (replacing its previous version)."""
        self._tables.forget(loaded.entry.name)

    def forget(self, name: str) -> None:
        """Stop serving table ``name``'s open version (dropped, damaged or replaced)."""
        self._tables.forget(name)

    def close(self) -> None:
        """Drop the agent SQL sessions."""
        with self._lock:
            self._sandboxes.clear()

    def run(self, statement: str, reported: str) -> pa.Table:
        """``statement``'s rows, from the main session.

        Raises:
            EngineError: the engine's message (:meth:`explain_failure`), with ``reported`` as
                its SQL.
        """
        try:
            return self.main.sql_with_options(statement, READ_ONLY).to_arrow_table()
        except HotdataRetrievalError:
            raise
        except Exception as error:
            raise EngineError(self.explain_failure(error), sql=reported) from None

    def stream(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        """``text``'s batches from the agent session for ``limits``; the time limit is checked
        between batches (the SQL worker's owner enforces it fully).

        Raises:
            SqlLimitError: a limit the statement passed.
            EngineError: the engine's own message.
        """
        deadline = time.monotonic() + limits.timeout_seconds
        context = self.sandbox(limits)
        try:
            for batch in context.sql_with_options(text, READ_ONLY).execute_stream():
                yield batch.to_pyarrow()
                if time.monotonic() > deadline:
                    raise limits.timeout_error(text)
        except HotdataRetrievalError:
            raise
        except Exception as error:
            raise limit_error(error, limits, text) or EngineError(
                self.explain_failure(error), sql=text
            ) from None

    def explain_failure(self, error: BaseException) -> str:
        """The engine's message, saying why when it refuses a statement kind or names a
        damaged table."""
        message = engine_message(error)
        if _REFUSED_STATEMENT.search(message):
            return f"only read-only queries run here; the engine refused: {message}"
        for name, reason in self._catalog_tables.damaged.items():
            if f"'{name}'" in message or f".{name}'" in message:
                return f"{message} (table '{name}' cannot be read: {reason})"
        return message


class _CatalogSchema(SchemaProvider):
    """The engine's schema as DataFusion sees it, in every session: its tables are the
    catalog's, and a table is opened when a statement first names it (``information_schema``
    names them all). Its rows are served from memory, one DataFusion table per open version
    shared by every session. Registering the Parquet file instead would make DataFusion 55
    decode every vector on every scan (about 0.8 s for 100,000 x 384 floats) and keep roughly
    the column's size of resident memory per scan (measured, ``docs/benchmarks.md``).

    Args:
        tables: the catalog's tables.
    """

    def __init__(self, tables: CatalogTables) -> None:
        self._tables = tables
        self._lock = threading.Lock()
        self._served: dict[str, tuple[LoadedTable, Table]] = {}

    # DataFusion 55 reads ``table_names`` as an attribute, not by calling it.
    @property
    def table_names(self) -> list[str]:  # type: ignore[override]
        """The catalog's tables."""
        return list(self._tables.entries)

    def table_exist(self, name: str) -> bool:
        """Whether the catalog has table ``name``."""
        return name in self._tables.entries

    def table(self, name: str) -> Table | None:
        """Table ``name``'s rows as a DataFusion table, the table opened first if it is not
        open yet; ``None`` when there is none or it is damaged (the statement then fails
        naming it). Called by DataFusion while it plans a statement."""
        loaded = self._tables.find(name)
        if loaded is None:
            return None
        with self._lock:
            served = self._served.get(name)
            if served is not None and served[0] is loaded:
                return served[1]
        # DataFusion's runtime blocks while the statement is planned: a table is made on the
        # helper thread, as a table function's relation is (see :func:`relation`).
        table = _frame_maker().submit(_memory_provider, name, loaded.data).result()
        with self._lock:
            self._served[name] = (loaded, table)
        return table

    def forget(self, name: str) -> None:
        """Drop the DataFusion table of ``name``'s open version (made again when used)."""
        with self._lock:
            self._served.pop(name, None)


def _memory_provider(name: str, data: pa.Table) -> Table:
    """``data`` as a DataFusion in-memory table (on the helper thread): registered in the
    scratch session under a fresh name, taken out of it, and the name forgotten."""
    assert _FRAME_MAKER is not None
    scratch = _FRAME_MAKER[2]
    scratch_name = f"table_{uuid.uuid4().hex}"
    register_data(scratch, scratch_name, data)
    try:
        return scratch.catalog().schema().table(scratch_name)
    finally:
        scratch.deregister_table(scratch_name)


def register_data(context: SessionContext, name: str, data: pa.Table) -> None:
    """Register ``data`` as table ``name`` of ``context`` (replacing one of that name)."""
    if context.table_exist(name):
        context.deregister_table(name)
    batches = data.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=data.schema)
    ]
    context.register_record_batches(name, [batches])


def check_registrable(tables: Iterable[tuple[str, pa.Table]]) -> None:
    """Register each ``(name, rows)`` in a scratch session first: a table DataFusion cannot
    hold is refused before a load commits it.

    Raises:
        EngineError: naming the table and DataFusion's reason.
    """
    scratch = SessionContext()
    for name, data in tables:
        try:
            register_data(scratch, name, data)
        except Exception as error:
            raise EngineError(f"cannot register table {name!r}: {engine_message(error)}") from None


def relation(rows: pa.Table) -> Table:
    """A table function's result, as an in-memory table DataFusion filters itself.

    Not a pyarrow dataset: DataFusion 55 pushes a ``WHERE`` over a pyarrow dataset into pyarrow
    as an exact filter, and pyarrow's semantics are not SQL's — ``NOT (c IN ('a', 'b', 'c',
    'd'))`` keeps a row whose ``c`` is NULL (pyarrow's ``is_in`` is false for NULL, not
    unknown; DataFusion writes an IN list of four values or more that way) and ``x > 5`` drops
    a NaN that DataFusion's own comparison keeps — so one ``WHERE`` over ``bm25_search`` and
    over the base table kept different rows. A DataFrame over the rows is a view DataFusion
    plans and filters like any table. It is built on a helper thread: building it blocks on
    DataFusion's runtime, which panics on the thread that is planning the statement.
    """
    return _frame_maker().submit(_memory_table, rows).result()


_FRAME_MAKER: tuple[int, concurrent.futures.ThreadPoolExecutor, SessionContext] | None = None
_FRAME_MAKER_LOCK = threading.Lock()


def _frame_maker() -> concurrent.futures.ThreadPoolExecutor:
    """This process's helper thread for :func:`_memory_table` (made on first use)."""
    global _FRAME_MAKER
    with _FRAME_MAKER_LOCK:
        if _FRAME_MAKER is None or _FRAME_MAKER[0] != os.getpid():
            executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="hdq-relation"
            )
            _FRAME_MAKER = (os.getpid(), executor, SessionContext())
        return _FRAME_MAKER[1]


def _memory_table(rows: pa.Table) -> Table:
    """``rows`` as a DataFusion view over an in-memory table (on the helper thread). The
    scratch session registers the rows under a fresh name to make the frame and forgets the
    name at once; the frame keeps the rows."""
    assert _FRAME_MAKER is not None
    scratch = _FRAME_MAKER[2]
    name = f"relation_{uuid.uuid4().hex}"
    batches = rows.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=rows.schema)
    ]
    frame = scratch.create_dataframe([batches], name=name, schema=rows.schema)
    scratch.deregister_table(name)
    return Table(frame)
