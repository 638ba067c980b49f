"""Agent SQL on SQLite, as the SQL worker runs it (:mod:`hotdata_retrieval.engines._worker`).

The worker opens the store's database file read-only (``mode=ro``; SQLite lets several
processes read a file while one writes it), or, for an in-memory database, which no other
process can open, a copy the engine writes with SQLite's backup API
(:meth:`~hotdata_retrieval.engines.sqlite.SqliteEngine._agent_worker`), and runs each
statement in a :class:`SqliteClosedSession` (:class:`SqliteAgentOpener`).

This module is what the worker imports: it needs sqlean.py and sqlite-vec, and none of the
store engine's loading code.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.engines._agent_sql import (
    BATCH_ROWS,
    ClosedSession,
    ClosedWorkerSession,
    RefusedStatementError,
    rows_batch,
)
from hotdata_retrieval.engines._worker import SessionOpener, WorkerSession
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimits
from hotdata_retrieval.extras import require_extra

if TYPE_CHECKING:
    import pyarrow as pa


def connect(database: str, *, uri: bool = False, shown: str | None = None) -> Any:
    """A ``sqlean`` connection to ``database`` with sqlite-vec loaded (extension loading on
    only while it loads).

    Raises:
        MissingExtraError: the ``sqlite`` extra is not installed.
        EngineError: the database cannot be opened (named as ``shown``).
    """
    require_extra("sqlite", needed_by="the SQLite engine")
    import sqlean
    import sqlite_vec

    try:
        connection = sqlean.connect(
            database, isolation_level=None, check_same_thread=False, uri=uri
        )
    except sqlean.Error as error:
        raise EngineError(f"cannot open SQLite database {shown or database!r}: {error}") from None
    connection.enable_load_extension(True)
    try:
        sqlite_vec.load(connection)
    finally:
        connection.enable_load_extension(False)
    return connection


SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
"""The schema table: every table's name and definition, as ``information_schema`` elsewhere."""

_TABLE_PRAGMAS = frozenset({"table_info", "table_xinfo"})
"""Pragmas agent SQL may read (as ``pragma_table_info('<table>')``), of a readable table."""

READABLE_FUNCTION_TABLES = frozenset(
    {"pragma_table_info", "pragma_table_xinfo", "json_each", "json_tree"}
)
"""Table-valued functions agent SQL may read; others (``sqlite_dbpage``, which returns the
database's raw pages, ``dbstat``) are refused."""

FTS5_SHADOW_TABLES = ("data", "idx", "config", "docsize", "content")
"""The tables an FTS5 table keeps its index in, read when it is queried (SQLite FTS5
documentation, "Shadow Tables")."""

_CORE = (
    "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if", "ifnull",
    "iif", "instr", "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min",
    "nullif", "octet_length", "printf", "quote", "random", "randomblob", "replace", "round",
    "rtrim", "sign", "substr", "substring", "trim", "typeof", "unhex", "unicode", "unistr",
    "unistr_quote", "unlikely", "upper", "zeroblob",
)  # fmt: skip
"""SQLite documentation, "Built-In Scalar SQL Functions": all but those that read or change
the connection or the build (``changes``, ``last_insert_rowid``, ``total_changes``,
``load_extension``, ``sqlite_compileoption_get``, ``sqlite_compileoption_used``,
``sqlite_log``, ``sqlite_offset``, ``sqlite_source_id``, ``sqlite_version``) and ``subtype``,
which is for extensions."""

_MATH = (
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos",
    "cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow",
    "power", "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
)  # fmt: skip
"""SQLite documentation, "Built-In Mathematical SQL Functions"."""

_TIME = (
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
    "current_date", "current_time", "current_timestamp",
)  # fmt: skip
"""SQLite documentation, "Date And Time Functions"."""

_AGGREGATES = (
    "avg", "count", "group_concat", "string_agg", "sum", "total",
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
)  # fmt: skip
"""SQLite documentation, "Built-in Aggregate Functions" and "Window Functions" (``max`` and
``min`` are listed with the scalar functions, which they also are)."""

_JSON = (
    "json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position",
    "json_extract", "jsonb_extract", "json_insert", "jsonb_insert", "json_object",
    "jsonb_object", "json_patch", "jsonb_patch", "json_pretty", "json_quote", "json_remove",
    "jsonb_remove", "json_replace", "jsonb_replace", "json_set", "jsonb_set", "json_type",
    "json_valid", "json_group_array", "jsonb_group_array", "json_group_object",
    "jsonb_group_object", "->", "->>",
)  # fmt: skip
"""SQLite documentation, "JSON Functions And Operators" (``json_each`` and ``json_tree`` are
table-valued: :data:`READABLE_FUNCTION_TABLES`)."""

_FULL_TEXT = ("bm25", "highlight", "snippet", "match", "matchinfo", "offsets")
"""FTS5's auxiliary functions and ``MATCH`` (SQLite FTS5 documentation, "Auxiliary
Functions"), and FTS3's ``matchinfo`` and ``offsets``; not ``fts5()``, which hands out the
module's C interface, nor ``fts3_tokenizer``, which takes a pointer (SQLite documentation,
"Security Considerations" of FTS3)."""

_VECTORS = (
    "vec_add", "vec_bit", "vec_distance_cosine", "vec_distance_hamming", "vec_distance_l1",
    "vec_distance_l2", "vec_f32", "vec_int8", "vec_length", "vec_normalize",
    "vec_quantize_binary", "vec_quantize_int8", "vec_slice", "vec_sub", "vec_to_json",
    "vec_type",
)  # fmt: skip
"""sqlite-vec's scalar functions (sqlite-vec documentation, "API Reference"): all but
``vec_debug`` and ``vec_version``, which describe the build."""

ALLOWED_FUNCTIONS = frozenset(_CORE + _MATH + _TIME + _AGGREGATES + _JSON + _FULL_TEXT + _VECTORS)
"""The functions agent SQL may call on SQLite, lower-cased: an allow-list, checked by the
authorizer for every function the statement calls (``SQLITE_FUNCTION``), so a function an
extension loaded into the process adds (sqlean's ``fileio_read``, were it enabled), a later
SQLite's or sqlite-vec's new function, and the geopoly and R-tree functions are refused until
listed here. Drawn from SQLite 3.50's ``pragma_function_list`` with sqlean.py's bundled
extensions and sqlite-vec loaded, by the SQLite documentation's function pages each group
names. Whatever an allowed function computes is bounded by the worker process (time, resident
set, a crash ends only the worker) and by SQLite's heap limit, not by this list."""

_ACTION_NAMES = (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
    "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE",
    "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
    "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT",
    "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE",
    "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE",
)  # fmt: skip
"""The authorizer's action codes (SQLite C interface, "Authorizer Action Codes")."""


@attrs.frozen(kw_only=True)
class Scope:
    """What one agent statement on SQLite may read
    (:meth:`~hotdata_retrieval.engines.sqlite.SqliteEngine._agent_scope`).

    Attributes:
        tables: the searchable tables.
        readable: every table a statement may read: those, their full-text tables (and their
            shadow tables), the schema table and :data:`READABLE_FUNCTION_TABLES`.
        known: every table and module name of the database, lower-cased: a name read that is
            none of them is a common table expression of the statement.
    """

    tables: frozenset[str]
    readable: frozenset[str]
    known: frozenset[str]


_HEAP_LOCK = threading.Lock()
"""SQLite's heap limit is the process's, not a connection's: agent statements take turns under
it, so one's limit is never left to another."""


@functools.cache
def _heap_limit_setter() -> Callable[[int], int]:
    """``sqlite3_hard_heap_limit64`` of the SQLite that sqlean.py bundles: sets the process's
    heap limit (0: none) and returns the one before. The pragma of that name can only lower
    it (SQLite documentation, "PRAGMA hard_heap_limit"), so a limit set for one statement
    could never be lifted again through it.

    Raises:
        EngineError: the bundled SQLite does not export the function.
    """
    import ctypes
    import importlib

    module = importlib.import_module("sqlean._sqlite3")
    try:
        function = ctypes.CDLL(str(module.__file__)).sqlite3_hard_heap_limit64
    except (OSError, AttributeError) as error:
        raise EngineError(
            f"sqlite: this SQLite build cannot bound a statement's memory ({error}); agent "
            "SQL does not run without that bound"
        ) from None
    function.restype = ctypes.c_int64
    function.argtypes = [ctypes.c_int64]
    return lambda limit: int(function(limit))


@attrs.frozen(kw_only=True)
class SqliteAgentOpener(SessionOpener):
    """What the SQL worker opens for a SQLite store.

    Attributes:
        uri: the database's ``file:`` URI, read-only (``mode=ro``).
        shown: the database as messages name it.
    """

    uri: str
    shown: str

    def open(self) -> WorkerSession:
        return ClosedWorkerSession(
            "sqlite", SqliteClosedSession(connect(self.uri, uri=True, shown=self.shown))
        )

    def describe(self) -> str:
        return f"the SQLite database {self.shown}"


class SqliteClosedSession(ClosedSession):
    """Agent SQL on SQLite, in the worker: a connection opened read-only (``mode=ro``) and
    ``PRAGMA query_only``, with an authorizer that SQLite consults for every action while it
    prepares the statement (SQLite C interface, ``sqlite3_set_authorizer``): it allows
    ``SELECT``, reads of the tables the owner read for this statement (:meth:`use`: the
    searchable tables, their full-text tables and the schema table), ``pragma_table_info`` of
    those, and calls of :data:`ALLOWED_FUNCTIONS`; it denies everything else — writes,
    ``ATTACH``, ``PRAGMA``, transactions, other functions, and recursive queries unless
    ``SqlLimits.allow_recursive_queries``. The memory limit is also SQLite's hard heap limit
    (``sqlite3_hard_heap_limit64``: past it every allocation fails, so the statement stops),
    set for each statement and restored after."""

    def __init__(self, connection: Any) -> None:
        import sqlean

        self._connection = connection
        self._scope = Scope(tables=frozenset(), readable=frozenset(), known=frozenset())
        self._codes = {getattr(sqlean, f"SQLITE_{name}"): name for name in _ACTION_NAMES}
        self._refusal: str | None = None
        connection.execute("PRAGMA query_only = ON")

    def use(self, context: Any) -> None:
        if isinstance(context, Scope):
            self._scope = context

    def _authorize(self, limits: SqlLimits, scope: Scope) -> Any:
        import sqlean

        readable = scope.readable

        def authorize(action: int, first: Any, second: Any, database: Any, _inner: Any) -> int:
            name = self._codes.get(action, str(action))
            reason = None
            if name == "SELECT":
                return int(sqlean.SQLITE_OK)
            if name == "READ":
                table = (first or "").lower()
                if database in (None, "main") and table in readable:
                    return int(sqlean.SQLITE_OK)
                if database is None and table not in scope.known:
                    return int(sqlean.SQLITE_OK)  # a common table expression of the query
                reason = f"reading table '{first}' is not allowed here" + _tables_note(scope.tables)
            elif name == "FUNCTION":
                if (second or "").lower() in ALLOWED_FUNCTIONS:
                    return int(sqlean.SQLITE_OK)
                reason = f"the function {second}() is not allowed here"
            elif name == "PRAGMA":
                pragma = (first or "").lower()
                if pragma in _TABLE_PRAGMAS and (second or "").lower() in readable:
                    return int(sqlean.SQLITE_OK)
                if pragma == "data_version" and second is None:
                    return int(sqlean.SQLITE_OK)  # read by FTS5 itself, to see new writes
                reason = "PRAGMA is not allowed here: only read-only queries (SELECT) run"
            elif name == "RECURSIVE":
                if limits.allow_recursive_queries:
                    return int(sqlean.SQLITE_OK)
                self._refusal = "recursive"  # the reason, whatever was refused first
                return int(sqlean.SQLITE_DENY)
            else:
                words = name.replace("_", " ")
                reason = f"{words} is not allowed here: only read-only queries (SELECT) run"
            if self._refusal is None:
                self._refusal = reason
            return int(sqlean.SQLITE_DENY)

        return authorize

    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        scope = self._scope
        connection = self._connection
        set_heap_limit = _heap_limit_setter()
        with _HEAP_LOCK:
            previous = set_heap_limit(int(limits.memory_bytes))
            self._refusal = None
            connection.set_authorizer(self._authorize(limits, scope))
            cursor = None
            try:
                try:
                    cursor = connection.execute(text)
                except Exception:
                    if self._refusal is not None:
                        refusal = self._refusal
                        if refusal == "recursive":
                            raise limits.recursion_error(text) from None
                        raise RefusedStatementError(refusal, sql=text) from None
                    raise
                names = [column[0] for column in cursor.description or ()]
                rows = cursor.fetchmany(BATCH_ROWS)
                yield rows_batch(names, rows)  # an empty result still has its columns
                while rows:
                    rows = cursor.fetchmany(BATCH_ROWS)
                    if rows:
                        yield rows_batch(names, rows)
            finally:
                if cursor is not None:
                    cursor.close()
                connection.set_authorizer(None)
                set_heap_limit(previous)

    def cancel(self) -> None:
        self._connection.interrupt()

    def limit_of(self, error: BaseException) -> str | None:
        return "memory_bytes" if isinstance(error, MemoryError) else None

    def close(self) -> None:
        self._connection.close()


def _tables_note(tables: frozenset[str]) -> str:
    return f" (the tables it may read: {', '.join(sorted(tables))})" if tables else ""
