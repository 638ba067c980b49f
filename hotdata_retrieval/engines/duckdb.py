"""The DuckDB engine: plans compiled for the ``duckdb`` dialect, run by DuckDB with its
``fts`` extension loaded offline from the ``duckdb-extension-fts`` wheel (the ``duckdb``
extra).

The extension wheels ship the binary for exactly one DuckDB version and an empty module, and a
plain ``LOAD fts`` looks in ``~/.duckdb/extensions`` and downloads; so the engine finds the
file in the wheel (``duckdb_extension_fts/extensions/v<version>/fts.duckdb_extension``) and
loads it by path (``shared/reference/local-engines.md`` §B). A DuckDB of another version than
the wheel's is an :class:`~hotdata_retrieval.engines.errors.EngineError` naming both.

``load_table`` writes the rows (vectors as ``FLOAT[n]``, the array functions' type) under a
staged name (``<table>__hdq_loading``, :data:`STAGED_SUFFIX`) and commits them: rows inserted
in an open transaction have temporary rowids, which the index would keep. Then one transaction
swaps them in: it drops the previous table and its indexes, renames the staged table (its
rowids kept), writes per text column a table of each row's rowid and its terms by the
library's analysis (in the ``hdq_text`` schema,
:func:`~hotdata_retrieval.compile.duckdb.text_index_table`) and an FTS index over it
(``PRAGMA create_fts_index``, keyed by the base rowid, DuckDB's own analyser off), and the
catalog rows. A load that stops anywhere, killed or failing, leaves the previous table (or no
table) searchable as it was, or the new one searchable whole: never a table without its
indexes (``tests/test_store_load_faults.py`` kills a load before each of its statements).
``sql(text)`` runs inside a transaction that is always rolled back, so it cannot change the
database.

Agent SQL (``stream_sql``) runs on a connection of its own to the same database, closed off
as :class:`_DuckdbClosedSession` describes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.analysis import indexed_text
from hotdata_retrieval.compile.duckdb import (
    DUCKDB,
    TEXT_INDEX_SCHEMA,
    create_fts_index,
    create_text_index_table,
    drop_text_index,
    insert_from,
    insert_text_rows,
    load_extension,
    rename_table,
    schema_tables_select,
    set_option,
    set_threads,
    table_columns_select,
    text_index_schema,
    text_indexes_select,
    text_rows_select,
)
from hotdata_retrieval.compile.statements import (
    CATALOG_TABLE,
    catalog_create,
    catalog_delete,
    catalog_insert,
    catalog_select,
    create_table,
    drop_table,
    table_node,
)
from hotdata_retrieval.engines._agent_sql import (
    BATCH_ROWS,
    ClosedSession,
    RefusedStatementError,
    first_line,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimits
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
from hotdata_retrieval.plan.names import TableName, is_bare_identifier

if TYPE_CHECKING:
    import pyarrow as pa

_EXTRA_HINT = "pip install 'hotdata-retrieval[duckdb]'"
_LOADING = "hdq_loading"
"""The name an Arrow table being loaded is registered under, for one INSERT."""

STAGED_SUFFIX = "__hdq_loading"
"""The ending of the name a table's rows are written under before a load swaps them in
(:meth:`DuckdbEngine.load_table`): no search, listing or agent statement reads such a table,
and no table of the user's may be named so."""


def fts_extension_path() -> Path:
    """The fts extension's file in the ``duckdb-extension-fts`` wheel, for the installed
    DuckDB.

    Raises:
        EngineError: the wheel is not installed, or holds no build for this DuckDB version.
    """
    import duckdb

    spec = importlib.util.find_spec("duckdb_extension_fts")
    if spec is None or spec.origin is None:
        raise EngineError(f"the DuckDB engine needs duckdb-extension-fts: {_EXTRA_HINT}")
    root = Path(spec.origin).parent / "extensions"
    version = f"v{duckdb.__version__}"
    path = root / version / "fts.duckdb_extension"
    if not path.is_file():
        built = sorted(child.name for child in root.iterdir()) if root.is_dir() else []
        raise EngineError(
            f"duckdb-extension-fts has no build for DuckDB {duckdb.__version__} "
            f"(it has {', '.join(built) or 'none'}); install matching versions: {_EXTRA_HINT}"
        )
    return path


_COLUMN_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "integer": "BIGINT",
    "floating": "DOUBLE",
    "string": "VARCHAR",
    "binary": "BLOB",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
    "list": "{}[]",
}
"""The store's column type per kind of Arrow type (:func:`store_column_type`)."""


SESSION_TIME_ZONE = "SET TimeZone = 'UTC'"
"""Set on the engine's connection: a filter's timestamps are UTC instants, and DuckDB casts a
timestamp without a zone compared with a ``TIMESTAMPTZ`` column in the session's
``TimeZone`` (DuckDB documentation, "Timestamp with Time Zone Functions" / "Time Zones": the
setting the ICU extension, built into the Python package, reads); in UTC the instant is the
one the filter names whatever the machine's zone."""


class DuckdbEngine(SqlStoreEngine):
    """DuckDB + its fts extension behind the engine contract (module docstring).

    Args:
        database: the database file (created if missing), or ``":memory:"``.
        embedder: embeds query text for ``plan_search`` routes that need a vector.
        threads: DuckDB's thread count (``SET threads``); ``None`` keeps DuckDB's default
            (one per core). Default 1: ``match_bm25`` sums a row's term scores in parallel, in
            an order that varies between runs, so the same row's score differs in its last
            bit from one run to the next and rows with equal scores trade places (measured
            with DuckDB 1.5.5 on the parity corpus); with one thread every run gives the same
            ranking.

    Raises:
        EngineError: the ``duckdb`` extra is missing or of mismatched versions, or the file
            cannot be opened.
    """

    engine_name = "duckdb"
    own_schemas = frozenset({TEXT_INDEX_SCHEMA})
    own_suffixes = (STAGED_SUFFIX,)

    def __init__(
        self, database: str | Path = ":memory:", *, embedder: Any = None, threads: int | None = 1
    ) -> None:
        require_extra("duckdb", needed_by="the DuckDB engine")
        import duckdb

        extension = fts_extension_path()
        self.database = str(database)
        try:
            self._connection = duckdb.connect(self.database)
        except duckdb.Error as error:
            raise EngineError(f"cannot open DuckDB database {self.database!r}: {error}") from None
        super().__init__(DUCKDB, embedder=embedder)
        self._execute(SESSION_TIME_ZONE)
        self._execute(load_extension(str(extension)))
        if threads is not None:
            self._execute(set_threads(threads))

    def close(self) -> None:
        """Close the connections."""
        super().close()
        self._connection.close()

    def _table_names(self) -> list[str]:
        return [
            row[0]
            for row in self._query(schema_tables_select("main"))[1]
            if not row[0].endswith(STAGED_SUFFIX)
        ]

    def _open_closed_session(self, limits: SqlLimits) -> ClosedSession:
        if not self._closed_off:
            # The options are the database's, not one connection's: set once, then locked.
            self._execute(set_option("memory_limit", f"{int(limits.memory_bytes)}B"))
            # What spills to disk is held to the same size (PostgreSQL's temp_file_limit).
            self._execute(set_option("max_temp_directory_size", f"{int(limits.memory_bytes)}B"))
            for option in _CLOSED_OPTIONS:
                self._execute(set_option(option, False))
            self._execute(set_option("lock_configuration", True))
            self._closed_off = True
        database = str(self._query("SELECT current_database()")[1][0][0])
        return _DuckdbClosedSession(
            self._connection.cursor(),
            tables=lambda: frozenset(table.name for table in self.searchable_tables()),
            index_schemas=self._index_schemas,
            database=database,
        )

    _closed_off = False

    def _index_schemas(self) -> frozenset[str]:
        """The FTS schemas of the searchable tables' text columns (agent SQL reads them
        through ``match_bm25``)."""
        schemas = set()
        for table in self.searchable_tables():
            described = self._describe(table)
            for column in described.text_indexes if described is not None else ():
                schemas.add(text_index_schema("main", table.name, column))
        return frozenset(schemas)

    # -- the driver ------------------------------------------------------------------------

    def _query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        import duckdb

        try:
            cursor = self._connection.execute(statement)
            rows = cursor.fetchall()
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {error}", sql=statement) from None
        names = [column[0] for column in cursor.description or ()]
        return names, rows

    def _execute(self, statement: str) -> None:
        import duckdb

        try:
            self._connection.execute(statement)
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {error}", sql=statement) from None

    def _read_only_query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        import duckdb

        # one statement only: a second could end the transaction (COMMIT) and write
        try:
            count = len(self._connection.extract_statements(statement))
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {first_line(str(error))}", sql=statement) from None
        if count != 1:
            raise RefusedStatementError(
                f"send one query at a time, got {count} statements", sql=statement
            )
        self._execute("BEGIN TRANSACTION")
        try:
            return self._query(statement)
        finally:
            self._execute("ROLLBACK")

    def _describe(self, table: TableName) -> StoreTable | None:
        if table.catalog != self.default_catalog:
            raise EngineError(
                f"table '{table}': the DuckDB engine reads the current database only "
                "(tables are <schema>.<table>)"
            )
        listed = self._query(table_columns_select(table))[1]
        columns = tuple(row[0].lower() for row in listed)
        if not columns:
            return None
        schema = "main" if table.schema == "public" else table.schema
        built = {row[0] for row in self._query(text_indexes_select(table, columns))[1]}
        text_indexes = tuple(
            column for column in columns if text_index_schema(schema, table.name, column) in built
        )
        catalog = table_columns_select(TableName.parse(CATALOG_TABLE))
        key: str | None = None
        vectors: tuple[StoreColumn, ...] = ()
        if self._query(catalog)[1]:
            key, vectors = read_catalog(
                self._query(catalog_select(self.profile, "main", table.name))[1]
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
        check_rowid_column(data.column_names, text_columns, "DuckDB")
        if text_columns:
            _check_full_text_names(table, text_columns)
        dimensions = {vector.name: vector.dimensions for vector in vectors}
        for name, size in dimensions.items():
            if size == 0:
                raise EngineError(
                    f"vector column '{name}' holds no vector, so its length (FLOAT[n]) is "
                    "unknown; load at least one row with a vector"
                )
        columns = [
            (
                field.name,
                f"FLOAT[{dimensions[field.name]}]"
                if field.name in dimensions
                else store_column_type(field.type, _COLUMN_TYPES, "the DuckDB engine"),
            )
            for field in data.schema
        ]
        schema = "main" if table.schema == "public" else table.schema
        target = table_node(table, schema)
        staged = attrs.evolve(table, name=table.name + STAGED_SUFFIX)
        previous = self._describe(table)
        # The rows first, under a name no search reads, committed: rows inserted in an open
        # transaction carry temporary rowids, and the index would key them by those
        # (observed with DuckDB 1.5.5). A load killed after this commit leaves the staged
        # rows behind, unread, until the next load of this table replaces them.
        self._execute("BEGIN TRANSACTION")
        try:
            self._execute(drop_table(self.profile, table_node(staged, schema)))
            self._execute(create_table(self.profile, table_node(staged, schema), columns))
            self._connection.register(_LOADING, data)
            try:
                self._execute(insert_from(staged, _LOADING))
            finally:
                self._connection.unregister(_LOADING)
            self._execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise
        # Then the swap, in one transaction: the previous table and its indexes out, the staged
        # rows renamed in (their rowids kept), their indexes and catalog rows written.
        self._execute("BEGIN TRANSACTION")
        try:
            for column in previous.text_indexes if previous is not None else ():
                for statement in drop_text_index(table, column):
                    self._execute(statement)
            self._execute(drop_table(self.profile, target.copy()))
            self._execute(rename_table(staged, table.name))
            for column in text_columns:
                self._index_text(table, column)
            self._execute(catalog_create(self.profile, "main"))
            self._execute(catalog_delete(self.profile, "main", table.name))
            rows = catalog_rows(table.name, key_column, vectors, "array")
            if rows:
                self._execute(catalog_insert(self.profile, "main", rows))
            self._execute("COMMIT")
        except BaseException:
            self._roll_back()
            with contextlib.suppress(EngineError):
                self._execute(drop_table(self.profile, table_node(staged, schema)))
            raise

    def _roll_back(self) -> None:
        """End the open transaction, keeping what the failure that ended it said."""
        with contextlib.suppress(EngineError):
            self._execute("ROLLBACK")

    def _index_text(self, table: TableName, column: str) -> None:
        """Build the column's BM25 index in the open transaction: its terms table (each
        non-NULL row's rowid and :func:`~hotdata_retrieval.analysis.indexed_text`) and the FTS
        index over it."""
        import pyarrow as pa

        rows = self._query(text_rows_select(table, column))[1]
        terms = pa.table(
            {
                "base_rowid": pa.array([row[0] for row in rows], pa.int64()),
                column: pa.array([indexed_text(row[1]) for row in rows], pa.string()),
            }
        )
        for statement in create_text_index_table(table, column):
            self._execute(statement)
        self._connection.register(_LOADING, terms)
        try:
            self._execute(insert_text_rows(table, column, _LOADING))
        finally:
            self._connection.unregister(_LOADING)
        self._execute(create_fts_index(table, column))


def _check_full_text_names(table: TableName, text_columns: Sequence[str]) -> None:
    """Refuse, before anything is written, a full-text index DuckDB cannot build: its fts
    extension writes the table's and the columns' names into the SQL it generates unquoted
    (``PRAGMA create_fts_index('main."my docs"', ...)`` fails with ``syntax error at or near
    "docs"``, measured with DuckDB 1.5.5), so each must be a bare identifier.

    Raises:
        EngineError: naming the first name that is not, and what to do.
    """
    for label, name in (
        ("schema", table.schema),
        ("table", table.name),
        *(("text column", column) for column in text_columns),
    ):
        if not is_bare_identifier(name):
            raise EngineError(
                f"duckdb: cannot build a full-text index over {label} {name!r}: DuckDB's fts "
                "extension needs bare names (letters, digits and underscores, not starting "
                "with a digit); rename it, or load the table without text_columns"
            )


_CLOSED_OPTIONS = (
    "enable_external_access",
    "autoload_known_extensions",
    "autoinstall_known_extensions",
    "allow_community_extensions",
)
"""DuckDB options turned off before agent SQL first runs (DuckDB documentation,
"Configuration" and "Securing DuckDB"): no file, URL or environment access (``read_csv``,
``read_text``, ``COPY``, ``ATTACH`` of a file, ``getenv``, installing or loading an
extension), no extension loaded behind a function's back."""

_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
"""The table functions agent SQL may call: they compute rows and read nothing. Every other one
(the file readers, ``query``, ``duckdb_settings()``, ``duckdb_databases()`` and the other
catalog functions, which show paths and settings) is refused."""

_CATALOG_FUNCTIONS = frozenset(
    {"duckdb_tables", "duckdb_views", "duckdb_columns", "duckdb_schemas", "duckdb_constraints"}
)
"""The table functions ``information_schema``'s views read (names, columns, constraints),
allowed in a statement's bound plan, never called by name: ``pg_settings`` and
``pg_database`` read ``duckdb_settings`` and ``duckdb_databases``, which show paths."""

_REFUSED_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getenv",
        "which_secret",
        "setseed",
        "json_serialize_sql",
        "json_serialize_plan",
        "json_deserialize_sql",
        "json_execute_serialized_sql",
        "levenshtein",
        "damerau_levenshtein",
        "editdist3",
        "jaro_similarity",
        "jaro_winkler_similarity",
        "printf",
        "format",
        "error",
    }
)
"""Scalar functions agent SQL may not call: they read the configuration or the environment
(``current_setting``, ``getenv``), change the session (``setseed``), plan or run SQL given as
text, whose plan shows settings and column statistics (``json_serialize_plan``), or cost the
square of their input's length in one call, which DuckDB does not interrupt (its interrupt
is checked between batches of rows: ``levenshtein`` of two 120,000-character texts ran 44 s
past a 2 s limit), or build a text as wide as their format string says, which the memory
limit does not see (``printf('%1000000000d', 1)`` built 1 GB past a 95 MiB limit; ``||``
and ``concat`` join texts), or raise an error of the statement's own text (``error``), which
would put stored text in the tool's error unquoted."""

_BUILDERS = frozenset(
    {"repeat", "lpad", "rpad", "list_resize", "array_resize", "range", "generate_series"}
)
"""Scalar functions one call of which builds as much as its arguments say, which DuckDB's
memory limit does not see: it "only applies to the buffer manager" (DuckDB documentation,
"Limits"), not to the values a statement computes (``repeat('x', 1500000000)`` built 3 GB
past a 95 MiB limit, ``list_resize([1], 300000000)`` 16 GB). Agent SQL may call them only as
:func:`_check_builder` allows."""

_MAX_BUILT = 1_000_000
"""The most one call of :data:`_BUILDERS` with literal arguments may build: a million
characters (``repeat``'s text times its count) or list elements (``range``)."""

_MAX_PADDED = 10_000
"""The largest length ``lpad``, ``rpad``, ``list_resize`` and ``array_resize`` may be given
when they pad a row's value: each of a batch's 2,048 rows builds that many characters or
elements."""


class _DuckdbClosedSession(ClosedSession):
    """Agent SQL on DuckDB: a connection of its own (a cursor of the database) whose
    database has :data:`_CLOSED_OPTIONS` off, ``memory_limit`` set to the first agent call's
    ``SqlLimits.memory_bytes`` and its configuration locked (``lock_configuration``: no
    statement may change an option again). Before it runs, DuckDB reads the statement twice:
    its parser (``extract_statements``, ``json_serialize_sql``) checks that it is one
    ``SELECT`` that calls no table function but :data:`_TABLE_FUNCTIONS`, none of
    :data:`_REFUSED_FUNCTIONS`, :data:`_BUILDERS` only within their bounds, and
    no recursive query unless ``SqlLimits.allow_recursive_queries``; its binder
    (``json_serialize_plan``, unoptimised, whose output the agent never sees) resolves every
    table the statement reads, through common table expressions, subqueries and views, and
    each must be a searchable table (read again for each statement), one of their full-text
    index tables, or a table function of ``information_schema``. The time limit interrupts
    the statement (``DuckDBPyConnection.interrupt``)."""

    def __init__(
        self,
        cursor: Any,
        *,
        tables: Callable[[], frozenset[str]],
        index_schemas: Callable[[], frozenset[str]],
        database: str,
    ) -> None:
        self._cursor = cursor
        self._tables = tables
        self._index_schemas = index_schemas
        self._database = database.lower()

    def _serialized(self, function: str, query: str, text: str) -> Any:
        serialized = self._cursor.execute(f"SELECT {function}(?)", [query]).fetchone()[0]
        tree = json.loads(serialized)
        if tree.get("error"):
            message = str(tree.get("error_message", "cannot read the statement"))
            if "Cannot plan statement of type" in message:
                message = f"this kind of query cannot be checked, so it does not run ({message})"
            raise EngineError(f"duckdb: {first_line(message)}", sql=text)
        return tree

    def _check(self, text: str, limits: SqlLimits) -> str:
        """The one statement of ``text`` as DuckDB reads it, checked (class docstring)."""
        import duckdb

        try:
            statements = self._cursor.extract_statements(text)
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {first_line(str(error))}", sql=text) from None
        if len(statements) != 1:
            raise RefusedStatementError(
                f"send one query at a time, got {len(statements)} statements", sql=text
            )
        statement = statements[0]
        if statement.type != duckdb.StatementType.SELECT:
            kind = statement.type.name.replace("_", " ")
            raise RefusedStatementError(
                f"{kind} is not allowed here: only read-only queries (SELECT) run", sql=text
            )
        query = str(statement.query)
        nodes = list(_nodes(self._serialized("json_serialize_sql", query, text)))
        # A table function's call is checked as a table function, not as a scalar one.
        table_calls = {
            id(node.get("function")) for node in nodes if node.get("type") == "TABLE_FUNCTION"
        }
        for node in nodes:
            if id(node) not in table_calls:
                self._check_node(node, limits, text)
        try:
            plan = self._serialized("json_serialize_plan", query, text)
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {first_line(str(error))}", sql=text) from None
        tables = self._tables()
        for node in _nodes(plan):
            if node.get("type") == "LOGICAL_GET":
                self._check_read(node, tables, text)
        return query

    def _check_node(self, node: dict[str, Any], limits: SqlLimits, text: str) -> None:
        kind = node.get("type")
        if kind == "RECURSIVE_CTE_NODE" and not limits.allow_recursive_queries:
            raise limits.recursion_error(text)
        if node.get("class") == "LAMBDA":
            raise RefusedStatementError(
                "lambda functions (x -> ..., list comprehensions) are not allowed here: each "
                "runs once per list element, building what the memory limit does not see",
                sql=text,
            )
        if kind == "TABLE_FUNCTION":
            name = str(node.get("function", {}).get("function_name", "")).lower()
            if name not in _TABLE_FUNCTIONS:
                raise RefusedStatementError(
                    f"the table function {name}() is not allowed here", sql=text
                )
        elif node.get("class") == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if name in _REFUSED_FUNCTIONS:
                raise RefusedStatementError(f"the function {name}() is not allowed here", sql=text)
            if name in _BUILDERS:
                _check_builder(name, node.get("children") or [], text)

    def _check_read(self, node: dict[str, Any], tables: frozenset[str], text: str) -> None:
        name = str(node.get("name", ""))
        if name in _TABLE_FUNCTIONS or name in _CATALOG_FUNCTIONS:
            return
        data = node.get("function_data") or {}
        catalog = str(data.get("catalog", "")).lower()
        schema = str(data.get("schema", ""))
        table = str(data.get("table", ""))
        if name == "seq_scan" and catalog == self._database:
            if schema == "main" and table in tables:
                return
            if schema in self._index_schemas():
                return  # a full-text index's own tables, read by match_bm25
        shown = ".".join(part for part in (schema, table) if part) or f"{name}()"
        listed = f" (the tables it may read: {', '.join(sorted(tables))})" if tables else ""
        raise RefusedStatementError(f"reading '{shown}' is not allowed here{listed}", sql=text)

    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        import pyarrow as pa

        query = self._check(text, limits)
        cursor = self._cursor
        cursor.execute("BEGIN TRANSACTION")
        try:
            result = cursor.execute(query)
            reader = (
                result.to_arrow_reader(BATCH_ROWS)
                if hasattr(result, "to_arrow_reader")
                else result.fetch_record_batch(BATCH_ROWS)
            )
            count = 0
            for batch in reader:
                count += 1
                yield batch
            if not count:
                yield pa.RecordBatch.from_pylist([], schema=reader.schema)
        finally:
            with contextlib.suppress(Exception):  # an interrupted statement ended it
                cursor.execute("ROLLBACK")

    def cancel(self) -> None:
        self._cursor.interrupt()

    def limit_of(self, error: BaseException) -> str | None:
        import duckdb

        return "memory_bytes" if isinstance(error, duckdb.OutOfMemoryException) else None

    def close(self) -> None:
        self._cursor.close()


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object of a serialized statement or plan, depth first."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            yield node
            pending.extend(node.values())


def _literal(argument: Any) -> tuple[bool, Any]:
    """``(True, value)`` when a serialized argument is a literal, else ``(False, None)``."""
    if isinstance(argument, dict) and argument.get("class") == "CONSTANT":
        return True, (argument.get("value") or {}).get("value")
    return False, None


def _integer(value: Any) -> int | None:
    """``value`` when it is an integer (not a boolean), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _built(name: str, values: list[Any]) -> int | None:
    """What a call of ``name`` on the literal ``values`` builds, in characters or elements
    (``None`` when the arguments are not what the function takes)."""
    if name == "repeat" and len(values) == 2:
        count = _integer(values[1])
        unit = len(values[0]) if isinstance(values[0], (str, bytes, list)) else 1
        return None if count is None else unit * max(0, count)
    bounds = [_integer(value) for value in values]
    if not 1 <= len(bounds) <= 3 or any(bound is None for bound in bounds):
        return None
    numbers = [bound for bound in bounds if bound is not None]
    start, stop, step = [0, *numbers, 1] if len(numbers) == 1 else [*numbers, 1][:3]
    span, stride = abs(stop - start), max(1, abs(step))
    if name == "generate_series":  # its stop is included
        return span // stride + 1
    return -(-span // stride)


def _check_builder(name: str, arguments: list[Any], text: str) -> None:
    """Refuse a :data:`_BUILDERS` call that could build more than its bound.

    ``repeat``, ``range`` and ``generate_series`` take literal arguments only (DuckDB computes
    a call of literals once per statement, not once per row) that build at most
    :data:`_MAX_BUILT` characters or elements; ``lpad``, ``rpad``, ``list_resize`` and
    ``array_resize`` take a literal length of at most :data:`_MAX_PADDED` and a literal fill.

    Raises:
        RefusedStatementError: naming the function and its bound.
    """
    literals = [_literal(argument) for argument in arguments]
    if name in ("lpad", "rpad", "list_resize", "array_resize"):
        length = _integer(literals[1][1]) if len(literals) > 1 else None
        fill_is_literal = all(known for known, _ in literals[2:])
        if length is None or abs(length) > _MAX_PADDED or not fill_is_literal:
            raise RefusedStatementError(
                f"{name}() is allowed here only with a literal length of at most "
                f"{_MAX_PADDED:,} and a literal fill: each row builds that much, beyond what "
                "the memory limit sees",
                sql=text,
            )
        return
    built = None
    if literals and all(known for known, _ in literals):
        built = _built(name, [value for _, value in literals])
    if built is None or built > _MAX_BUILT:
        raise RefusedStatementError(
            f"{name}() is allowed here only with literal arguments that build at most "
            f"{_MAX_BUILT:,} characters or elements: one call builds that much at once, "
            "beyond what the memory limit sees",
            sql=text,
        )
