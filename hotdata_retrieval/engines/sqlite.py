"""The SQLite engine: plans compiled for the ``sqlite`` dialect, run by SQLite with FTS5 and
sqlite-vec (the ``sqlite`` extra: ``sqlean.py`` and ``sqlite-vec``).

Python's standard ``sqlite3`` module may be built without extension loading (the one
measured had no ``enable_load_extension``, ``shared/reference/local-engines.md`` §C), so the
engine connects through ``sqlean.py``, a drop-in ``sqlite3`` that bundles SQLite 3.50 with
extension loading, and loads sqlite-vec into each connection. The dialect profile follows the
library's SQLite version (:func:`~hotdata_retrieval.compile.sqlite.sqlite_profile`).

The database is a file (or ``:memory:``). ``load_table`` writes a table, a contentless FTS5
table per text column holding each row's terms by the library's analysis
(:func:`~hotdata_retrieval.compile.sqlite.fts_table_name`, :mod:`hotdata_retrieval.analysis`)
and the catalog rows (key, vector columns) in one transaction; vectors are stored as float32
BLOBs (``vector_storage="blob"``, sqlite-vec's own format) or as JSON text (``"json"``). A table the
library did not write can be searched too: full-text indexes are found by name (and must hold
analysed terms, as the engine writes them, for its queries to match), a vector
column may hold BLOBs or JSON text, and rows whose vectors are unusable are left out and
counted in ``SearchResult.vector_scans``.
"""

from __future__ import annotations

import datetime
import functools
import json
import threading
import uuid
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import attrs
from sqlglot import exp

from hotdata_retrieval.analysis import indexed_text
from hotdata_retrieval.compile.sqlite import (
    create_fts_index,
    fts_table_name,
    insert_fts_rows,
    schema_tables_select,
    sqlite_profile,
    sqlite_schema,
    table_columns_select,
    text_rows_select,
    vector_scan_sql,
)
from hotdata_retrieval.compile.statements import (
    CATALOG_TABLE,
    catalog_create,
    catalog_delete,
    catalog_insert,
    catalog_select,
    create_table,
    drop_table,
    insert_rows,
    readable_sql,
    table_node,
)
from hotdata_retrieval.engines._agent_sql import (
    BATCH_ROWS,
    ClosedSession,
    RefusedStatementError,
    rows_batch,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimits
from hotdata_retrieval.engines.results import SearchResult, VectorScan
from hotdata_retrieval.engines.store import (
    SqlStoreEngine,
    StoreColumn,
    StoreTable,
    catalog_rows,
    check_rowid_column,
    read_catalog,
    store_column_type,
)
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan

if TYPE_CHECKING:
    import pyarrow as pa

VECTOR_STORAGES = ("blob", "json")
"""How ``load_table`` may store vectors: float32 BLOBs (sqlite-vec's format) or JSON text."""


def _connect(database: str, *, uri: bool = False, shown: str | None = None) -> Any:
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


_COLUMN_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "integer": "INTEGER",
    "floating": "REAL",
    "string": "TEXT",
    "binary": "BLOB",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
}
"""The store's column type per kind of Arrow type (:func:`store_column_type`)."""


class SqliteEngine(SqlStoreEngine):
    """SQLite + FTS5 + sqlite-vec behind the engine contract (module docstring).

    Args:
        database: the database file (created if missing), or ``":memory:"``.
        embedder: embeds query text for ``plan_search`` routes that need a vector.

    Raises:
        MissingExtraError: the ``sqlite`` extra is not installed.
        EngineError: the file cannot be opened.
    """

    engine_name = "sqlite"
    own_suffixes = ("__fts",)

    def __init__(self, database: str | Path = ":memory:", *, embedder: Any = None) -> None:
        self.database = str(database)
        if self.database == ":memory:":
            # A named in-memory database, so that the agent SQL session (a connection of its
            # own) sees the same tables (SQLite documentation, "In-Memory Databases And
            # Shared Cache").
            self._uri = f"file:hdq-memory-{uuid.uuid4().hex}?mode=memory&cache=shared"
        else:
            self._uri = f"file:{quote(str(Path(self.database).resolve()))}?mode=rwc"
        self._connection = _connect(self._uri, uri=True, shown=self.database)
        import sqlean

        super().__init__(sqlite_profile(sqlean.sqlite_version_info), embedder=embedder)

    def close(self) -> None:
        """Close the connections."""
        super().close()
        self._connection.close()

    # -- the driver ------------------------------------------------------------------------

    def _query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        import sqlean

        try:
            cursor = self._connection.execute(statement)
            rows = cursor.fetchall()
        except sqlean.Warning as warning:  # "You can only execute one statement at a time."
            raise RefusedStatementError(f"sqlite: {warning}", sql=statement) from None
        except sqlean.Error as error:
            raise EngineError(f"sqlite: {error}", sql=statement) from None
        names = [column[0] for column in cursor.description or ()]
        return names, rows

    def _execute(self, statement: str, parameters: Sequence[Any] = ()) -> None:
        import sqlean

        try:
            self._connection.execute(statement, parameters)
        except sqlean.Error as error:
            raise EngineError(f"sqlite: {error}", sql=statement) from None

    def _read_only_query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        self._execute("PRAGMA query_only = ON")
        try:
            return self._query(statement)
        finally:
            self._execute("PRAGMA query_only = OFF")

    def columns_sql(self, table: str | TableName) -> str:
        """``SELECT name, type FROM pragma_table_info('<table>')``: SQLite has no
        ``information_schema``."""
        name = self.table_name(table)
        tree = exp.select("name", "type").from_(
            exp.Table(
                this=exp.Anonymous(
                    this="pragma_table_info", expressions=[exp.Literal.string(name.name)]
                )
            )
        )
        return readable_sql(self.profile, tree)

    def _names(self, schema: str) -> set[str]:
        return {row[0] for row in self._query(schema_tables_select(schema))[1]}

    def _table_names(self) -> list[str]:
        return sorted(self._names("main"))

    def _open_closed_session(self, limits: SqlLimits) -> ClosedSession:
        if self.database == ":memory:":
            uri = self._uri
        else:
            uri = self._uri.replace("?mode=rwc", "?mode=ro")
        connection = _connect(uri, uri=True, shown=self.database)
        return _SqliteClosedSession(connection, self._agent_scope)

    def _agent_scope(self) -> _Scope:
        """What agent SQL may read now: the searchable tables, their full-text tables and the
        schema table; and every table or module name a read could mean (read again for each
        statement, so a table that stopped being searchable is not read)."""
        tables: set[str] = set()
        readable = set(_SCHEMA_TABLES | _READABLE_FUNCTION_TABLES)
        for table in self.searchable_tables():
            tables.add(table.name)
            described = self._describe(table)
            for column in described.text_indexes if described is not None else ():
                index = fts_table_name(table.name, column)
                readable.add(index)
                readable.update(f"{index}_{shadow}" for shadow in _FTS5_SHADOW_TABLES)
        readable |= tables
        modules = {row[0].lower() for row in self._query("SELECT name FROM pragma_module_list")[1]}
        known = {name.lower() for name in self._names("main")} | modules
        return _Scope(
            tables=frozenset(tables), readable=frozenset(readable), known=frozenset(known)
        )

    def _describe(self, table: TableName) -> StoreTable | None:
        if table.catalog != self.default_catalog:
            raise EngineError(
                f"table '{table}': SQLite has no catalogs (only schemas: main, temp and "
                "attached databases)"
            )
        listed = self._query(table_columns_select(table))[1]
        columns = tuple(row[0].lower() for row in listed)
        if not columns:
            return None
        schema = sqlite_schema(table)
        names = self._names(schema)
        text_indexes = tuple(
            column for column in columns if fts_table_name(table.name, column) in names
        )
        key: str | None = None
        vectors: tuple[StoreColumn, ...] = ()
        if CATALOG_TABLE in names:
            key, vectors = read_catalog(
                self._query(catalog_select(self.profile, schema, table.name))[1]
            )
        return StoreTable(
            name=table,
            columns=columns,
            column_types=tuple(row[1] for row in listed),
            key_column=key,
            text_indexes=text_indexes,
            vectors=vectors,
        )

    def _write_table(
        self,
        table: TableName,
        data: pa.Table,
        *,
        key_column: str | None,
        text_columns: Sequence[str],
        vectors: Sequence[StoreColumn],
    ) -> None:
        check_rowid_column(data.column_names, text_columns, "SQLite")
        import numpy as np
        import pyarrow as pa

        schema = sqlite_schema(table)
        storage = {vector.name: vector.storage or "blob" for vector in vectors}
        for column, kind in storage.items():
            if kind not in VECTOR_STORAGES:
                raise EngineError(
                    f"vector storage {kind!r} of column '{column}' is not one of "
                    f"{', '.join(VECTOR_STORAGES)}"
                )
        columns = [
            (
                field.name,
                ("BLOB" if storage[field.name] == "blob" else "TEXT")
                if field.name in storage
                else store_column_type(field.type, _COLUMN_TYPES, "the SQLite engine"),
            )
            for field in data.schema
        ]

        def as_blob(vector: Any) -> bytes:
            return np.asarray(vector, dtype=np.float32).tobytes()

        def as_json(vector: Any) -> str:
            return json.dumps([float(x) for x in vector])

        def iso_text(value: Any) -> str:
            """A date or timestamp as the ISO text SQLite holds it (a timestamp in UTC, with a
            space before the time: what the compiler writes its literals as)."""
            if isinstance(value, datetime.datetime):
                if value.tzinfo is not None:
                    value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
                return str(value.isoformat(sep=" "))
            return str(value.isoformat())

        convert: dict[str, Any] = {
            column: as_blob if kind == "blob" else as_json for column, kind in storage.items()
        }
        for field in data.schema:
            if pa.types.is_timestamp(field.type) or pa.types.is_date(field.type):
                convert[field.name] = iso_text
        previous = self._describe(table)
        target = table_node(table, schema)
        self._execute("BEGIN IMMEDIATE")
        try:
            for column in previous.text_indexes if previous is not None else ():
                self._execute(
                    drop_table(self.profile, table_node(fts_table_name(table.name, column), schema))
                )
            self._execute(drop_table(self.profile, target.copy()))
            self._execute(create_table(self.profile, target.copy(), columns))
            statement = insert_rows(self.profile, target.copy(), data.column_names, None)
            try:
                self._connection.executemany(statement, self.rows_of(data, convert))
            except Exception as error:
                raise EngineError(f"sqlite: {error}", sql=statement) from None
            for column in text_columns:
                self._execute(create_fts_index(table, column))
                self._index_text(table, column)
            self._execute(catalog_create(self.profile, schema))
            self._execute(catalog_delete(self.profile, schema, table.name))
            vectors = [attrs.evolve(v, storage=storage[v.name]) for v in vectors]
            rows = catalog_rows(table.name, key_column, vectors, "blob")
            if rows:
                self._execute(catalog_insert(self.profile, schema, rows))
            self._execute("COMMIT")
        except BaseException:
            self._execute("ROLLBACK")
            raise

    def _index_text(self, table: TableName, column: str) -> None:
        """Fill the column's contentless FTS5 table: each non-NULL row's rowid and its terms
        by the library's analysis (:func:`~hotdata_retrieval.analysis.indexed_text`)."""
        rows = self._query(text_rows_select(table, column))[1]
        statement = insert_fts_rows(table, column)
        try:
            self._connection.executemany(
                statement, ((rowid, indexed_text(text)) for rowid, text in rows)
            )
        except Exception as error:
            raise EngineError(f"sqlite: {error}", sql=statement) from None

    # -- what SQLite reports beside the hits -----------------------------------------------

    def text_temporal_columns(self, described: StoreTable) -> tuple[frozenset[str], frozenset[str]]:
        """SQLite holds dates and timestamps as ISO text (``YYYY-MM-DD``, ``YYYY-MM-DD
        HH:MM:SS[.ffffff]``, as the loader writes them) and compares them as text: the
        columns declared ``DATE``, and those declared ``TIMESTAMP`` or ``DATETIME``."""
        dates, timestamps = set(), set()
        for name, declared in zip(described.columns, described.column_types):
            spelled = (declared or "").strip().upper()
            if spelled == "DATE":
                dates.add(name)
            elif spelled in ("TIMESTAMP", "DATETIME"):
                timestamps.add(name)
        return frozenset(dates), frozenset(timestamps)

    def _finish(self, plan: SearchPlan, result: SearchResult) -> SearchResult:
        """Count, per nearest branch, the rows its filter kept, those without a vector and
        those whose vector has no distance (:class:`VectorScan`)."""
        import attrs

        scans = []
        for name, branch in zip(plan.branch_names, plan.branches):
            if not isinstance(branch, NearestNeighborSearch):
                continue
            scanned = without_vector = skipped = 0
            for member in branch.table.members:  # a union's counts add up its members'
                _, rows = self._query(vector_scan_sql(plan, attrs.evolve(branch, table=member)))
                scanned += int(rows[0][0])
                without_vector += int(rows[0][1] or 0)
                skipped += int(rows[0][2] or 0)
            scans.append(
                VectorScan(
                    branch=name,
                    column=branch.column,
                    scanned=scanned,
                    without_vector=without_vector,
                    skipped=skipped,
                )
            )
        return attrs.evolve(result, vector_scans=tuple(scans)) if scans else result


_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
"""The schema table: every table's name and definition, as ``information_schema`` elsewhere."""

_TABLE_PRAGMAS = frozenset({"table_info", "table_xinfo"})
"""Pragmas agent SQL may read (as ``pragma_table_info('<table>')``), of a readable table."""

_READABLE_FUNCTION_TABLES = frozenset(
    {"pragma_table_info", "pragma_table_xinfo", "json_each", "json_tree"}
)
"""Table-valued functions agent SQL may read; others (``sqlite_dbpage``, which returns the
database's raw pages, ``dbstat``) are refused."""

_FTS5_SHADOW_TABLES = ("data", "idx", "config", "docsize", "content")
"""The tables an FTS5 table keeps its index in, read when it is queried (SQLite FTS5
documentation, "Shadow Tables")."""

_REFUSED_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_offset"}
)
"""Functions agent SQL may not call: extension loading, file access (the CLI's and sqlean's
file functions, were they ever loaded), and FTS3's tokenizer pointer (SQLite documentation,
"Security Considerations" of FTS3)."""

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
class _Scope:
    """What one agent statement on SQLite may read (:meth:`SqliteEngine._agent_scope`)."""

    tables: frozenset[str]
    readable: frozenset[str]
    known: frozenset[str]


_HEAP_LOCK = threading.Lock()
"""SQLite's heap limit is the process's, not a connection's: agent statements of every SQLite
engine in the process take turns under it, so one's limit is never left to another."""


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


_FULL_TEXT_FUNCTIONS = frozenset({"bm25", "highlight", "snippet", "match", "matchinfo", "offsets"})
"""FTS5's functions, which SQLite does not list as built in."""


class _SqliteClosedSession(ClosedSession):
    """Agent SQL on SQLite: a connection of its own, opened read-only (``mode=ro``; the
    named in-memory database cannot be, so there ``PRAGMA query_only`` holds), with an
    authorizer that SQLite consults for every action while it prepares the statement (SQLite
    C interface, ``sqlite3_set_authorizer``): it allows ``SELECT``, reads of the searchable
    tables (their full-text tables and the schema table included), ``pragma_table_info`` of
    those, and the functions SQLite lists as built in, sqlite-vec's and FTS5's — none an
    extension loaded into the process added (sqlean's file functions, were they enabled);
    it denies everything else — writes, ``ATTACH``, ``PRAGMA``, transactions, and recursive
    queries unless ``SqlLimits.allow_recursive_queries``. What may be read is read again for
    every statement. The memory limit is SQLite's hard heap limit (``sqlite3_hard_heap_limit64``:
    past it every allocation fails, so the statement stops), the process's own, so agent
    statements of all SQLite engines take turns (:data:`_HEAP_LOCK`) and each restores it;
    the time limit interrupts the statement (``sqlite3_interrupt``)."""

    def __init__(self, connection: Any, scope: Callable[[], _Scope]) -> None:
        import sqlean

        self._connection = connection
        self._scope = scope
        self._codes = {getattr(sqlean, f"SQLITE_{name}"): name for name in _ACTION_NAMES}
        self._refusal: str | None = None
        connection.execute("PRAGMA query_only = ON")
        listed = connection.execute("SELECT name, builtin FROM pragma_function_list").fetchall()
        self._functions = (
            frozenset(
                name.lower()
                for name, builtin in listed
                if builtin
                or name.lower().startswith("vec_")
                or name.lower() in _FULL_TEXT_FUNCTIONS
            )
            - _REFUSED_FUNCTIONS
        )

    def _authorize(self, limits: SqlLimits, scope: _Scope) -> Any:
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
                if (second or "").lower() in self._functions:
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
        scope = self._scope()
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
