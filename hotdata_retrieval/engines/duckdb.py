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
A change of a document table's rows (``upsert_rows``, ``delete_rows``) on a table with a text
index runs the same two steps: the rows it keeps and the new rows written and committed under
the staged name, then swapped in with their indexes, so it is atomic with its text index too,
and its rowids run from 0 without a gap (what the agent SQL snapshot needs).
``sql(text)`` runs inside a transaction that is always rolled back, so it cannot change the
database.

Agent SQL (``stream_sql``) runs in the SQL worker process
(:mod:`hotdata_retrieval.engines._worker`), on a snapshot of the searchable tables: DuckDB
locks a database file to the one process that opened it for writing ("Concurrency" in the
DuckDB documentation), and an in-memory database is no file at all, so the worker cannot open
the store's own database. The engine writes the snapshot into a private temporary directory
(:meth:`DuckdbEngine._agent_snapshot`) when agent SQL first runs and again after a load; the
worker opens it read-only, closed off as :class:`~hotdata_retrieval.engines._duckdb_agent.
DuckdbClosedSession` describes.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from hotdata_retrieval.analysis import indexed_text
from hotdata_retrieval.compile.duckdb import (
    DUCKDB,
    TEXT_INDEX_SCHEMA,
    attach_database,
    catalog_objects_select,
    copy_database_schema,
    copy_kept_rows,
    copy_rows,
    create_fts_index,
    create_text_index_table,
    detach_database,
    drop_macro,
    drop_text_index,
    drop_view,
    insert_from,
    insert_text_rows,
    keyed_count,
    load_extension,
    rename_table,
    rowid_span_select,
    schema_tables_select,
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
    delete_rows_from,
    drop_table,
    insert_rows_from,
    table_node,
)
from hotdata_retrieval.engines import checks
from hotdata_retrieval.engines._agent_sql import (
    RefusedStatementError,
    SnapshotDirectory,
    WorkerSql,
    first_line,
)
from hotdata_retrieval.engines._duckdb_agent import DuckdbAgentOpener
from hotdata_retrieval.engines._worker import SessionOpener
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimits
from hotdata_retrieval.engines.store import (
    SqlStoreEngine,
    StoreColumn,
    StoreTable,
    catalog_rows,
    check_rowid_column,
    read_catalog,
)
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.plan.names import TableName

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


def session_prelude() -> list[str]:
    """The statements a plain DuckDB session runs before the library's SQL: ``LOAD`` of the
    fts extension's file (:func:`fts_extension_path`), whose ``match_bm25`` the text
    branches call. A plain ``LOAD fts`` would look in ``~/.duckdb/extensions`` and download.

    Raises:
        EngineError: the ``duckdb`` extra is missing or holds no build for this DuckDB.
    """
    require_extra("duckdb", needed_by="the DuckDB session prelude")
    return [load_extension(str(fts_extension_path()))]


_COLUMN_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "integer": "BIGINT",
    "float32": "FLOAT",
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
    column_types = _COLUMN_TYPES
    store_label = "the DuckDB engine"
    timestamp_unit = "us"
    """DuckDB's ``TIMESTAMP`` holds microseconds (DuckDB documentation, "Timestamp Types":
    ``TIMESTAMP`` is "time of day with microsecond precision"); a nanosecond key is rounded."""
    float32_type = _COLUMN_TYPES["float32"]
    read_types: ClassVar[Mapping[str, str]] = {
        "BIGINT": "int64",
        "VARCHAR": "string",
        "DOUBLE": "double",
        "FLOAT": "double",
        "BOOLEAN": "bool",
        "TIMESTAMP": "timestamp[us]",
        "DATE": "date32",
        "BLOB": "binary",
    }
    """DuckDB's types as its Arrow result gives them; for a column no value types
    (:attr:`SqlStoreEngine.read_types`)."""
    own_schemas = frozenset({TEXT_INDEX_SCHEMA})
    own_suffixes = (STAGED_SUFFIX,)

    def __init__(
        self, database: str | Path = ":memory:", *, embedder: Any = None, threads: int | None = 1
    ) -> None:
        require_extra("duckdb", needed_by="the DuckDB engine")
        import duckdb

        extension = fts_extension_path()
        self._extension = extension
        self._threads = threads
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
        """Close the connections, stop the agent SQL worker and delete its snapshot."""
        super().close()
        self._connection.close()
        if self._snapshot is not None:
            self._snapshot.directory.remove()
            self._snapshot = None

    def _table_names(self) -> list[str]:
        return [
            row[0]
            for row in self._query(schema_tables_select("main"))[1]
            if not row[0].endswith(STAGED_SUFFIX)
        ]

    _agent_sql: WorkerSql

    def _agent_sql_runner(self) -> WorkerSql:
        return WorkerSql(self._agent_worker)

    def _agent_worker(self, limits: SqlLimits) -> tuple[SessionOpener, Any]:
        """What the SQL worker opens for a statement under ``limits``: the current snapshot
        (made again when a table was loaded since), with DuckDB's memory limit set to
        ``limits.memory_bytes`` (another memory limit starts another worker)."""
        snapshot = self._agent_snapshot()
        opener = DuckdbAgentOpener(
            snapshot=str(snapshot.path),
            extension=str(self._extension),
            tables=snapshot.tables,
            index_schemas=snapshot.index_schemas,
            memory_bytes=int(limits.memory_bytes),
            threads=self._threads,
            temporary_directory=str(snapshot.directory.path / "spill"),
        )
        return opener, None

    _snapshot: _Snapshot | None = None

    def _agent_snapshot(self) -> _Snapshot:
        """The snapshot agent SQL reads, made now if there is none or a table was loaded
        since (:attr:`generation`): a DuckDB file in a new private temporary directory
        (:func:`~hotdata_retrieval.engines._agent_sql.snapshot_directory`) holding the whole
        database's schema (``COPY FROM DATABASE ... (SCHEMA)``) with rows in the searchable
        tables and their full-text indexes only — every other table is empty — and without the
        database's views and macros (a macro may take a built-in function's name, and a view's
        functions are not the statement's). Its rows are read in one transaction, on a cursor
        of their own. The previous snapshot's worker is stopped and its directory deleted.

        Raises:
            EngineError: a searchable table with a full-text index whose rowids have gaps
                (the index is keyed by rowid, and a copy numbers its rows from 0 again): rows
                deleted by other means than the engine's, whose changes leave no gap.
        """
        current = self._snapshot
        if current is not None and current.generation == self.generation:
            return current
        if current is not None:
            self._agent_sql.stop_worker()
            current.directory.remove()
            self._snapshot = None
        generation = self.generation
        tables = frozenset(table.name for table in self.searchable_tables())
        indexed, index_schemas = self._text_indexed()
        directory = SnapshotDirectory(self)
        path = directory.path / "snapshot.duckdb"
        alias = f"hdq_agent_snapshot_{directory.path.name.rsplit('-', 1)[-1]}"
        cursor = self._connection.cursor()
        try:
            source = str(cursor.execute("SELECT current_database()").fetchall()[0][0])
            self._snapshot_statement(cursor, attach_database(str(path), alias))
            try:
                self._copy_into(cursor, source, alias, tables, indexed, index_schemas)
            finally:
                self._snapshot_statement(cursor, detach_database(alias))
        except BaseException:
            directory.remove()
            raise
        finally:
            cursor.close()
        self._snapshot = _Snapshot(
            directory=directory,
            path=path,
            generation=generation,
            tables=tables,
            index_schemas=index_schemas,
        )
        return self._snapshot

    def _copy_into(
        self,
        cursor: Any,
        source: str,
        target: str,
        tables: frozenset[str],
        indexed: frozenset[str],
        index_schemas: frozenset[str],
    ) -> None:
        """Fill the attached snapshot ``target`` from ``source`` (:meth:`_agent_snapshot`);
        ``indexed``: the tables of ``tables`` with a text index, whose rowids the copy must
        keep."""
        self._snapshot_statement(cursor, "BEGIN TRANSACTION")
        try:
            self._snapshot_statement(cursor, copy_database_schema(source, target))
            views = cursor.execute(catalog_objects_select(target, "duckdb_views", "view_name"))
            for schema, view in views.fetchall():
                self._snapshot_statement(cursor, drop_view(target, schema, view))
            macros = cursor.execute(
                catalog_objects_select(target, "duckdb_functions", "function_name")
            ).fetchall()
            for schema, macro, kind in macros:
                if schema not in index_schemas:
                    self._snapshot_statement(
                        cursor, drop_macro(target, schema, macro, table_macro=kind != "macro")
                    )
            copied = [("main", table) for table in sorted(tables)]
            listed = cursor.execute(catalog_objects_select(source, "duckdb_tables", "table_name"))
            copied += sorted(row for row in listed.fetchall() if row[0] in index_schemas)
            for name in sorted(indexed):
                count, last = cursor.execute(rowid_span_select(source, name)).fetchall()[0]
                if count and last + 1 != count:
                    raise EngineError(
                        f"duckdb: table 'main.{name}' has rows deleted since its full-text "
                        "index was built, so a copy of it would not match the index; load it "
                        "again for agent SQL to read it"
                    )
            for table in copied:
                self._snapshot_statement(cursor, copy_rows(table, source, target))
            self._snapshot_statement(cursor, "COMMIT")
        except BaseException:
            self._snapshot_statement(cursor, "ROLLBACK")
            raise

    @staticmethod
    def _snapshot_statement(cursor: Any, statement: str) -> None:
        import duckdb

        try:
            cursor.execute(statement)
        except duckdb.Error as error:
            raise EngineError(
                f"duckdb: cannot snapshot the database for agent SQL: {first_line(str(error))}",
                sql=statement,
            ) from None

    def _text_indexed(self) -> tuple[frozenset[str], frozenset[str]]:
        """The searchable tables that have a text index, and the FTS schemas of their text
        columns (agent SQL reads them through ``match_bm25``)."""
        tables = set()
        schemas = set()
        for table in self.searchable_tables():
            described = self._describe(table)
            for column in described.text_indexes if described is not None else ():
                tables.add(table.name)
                schemas.add(text_index_schema("main", table.name, column))
        return frozenset(tables), frozenset(schemas)

    # -- the driver ------------------------------------------------------------------------

    def _query(
        self, statement: str, parameters: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        import duckdb

        try:
            cursor = self._connection.execute(statement, parameters or None)
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
        loaded: tuple[tuple[str, pa.DataType], ...] = ()
        if self._query(catalog)[1]:
            key, vectors, loaded = read_catalog(
                self._query(catalog_select(self.profile, "main", table.name))[1]
            )
        return StoreTable(
            name=table,
            columns=columns,
            column_types=tuple(row[1] for row in listed),
            key_column=key,
            text_indexes=text_indexes,
            vectors=vectors,
            loaded_types=loaded,
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
        dimensions = {vector.name: vector.dimensions for vector in vectors}
        columns = [
            (
                field.name,
                f"FLOAT[{dimensions[field.name]}]"
                if field.name in dimensions
                else self.store_column_type(field),
            )
            for field in data.schema
        ]
        schema = "main" if table.schema == "public" else table.schema
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
            # Registered as a stream of record batches (read once, a batch at a time) rather
            # than as the table: DuckDB's scan of it then holds one batch at once.
            self._connection.register(_LOADING, _batch_reader(data))
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
        rows = catalog_rows(table.name, key_column, vectors, "array", data.schema)
        self._swap_in(table, previous, text_columns, catalog=rows)

    def _swap_in(
        self,
        table: TableName,
        previous: StoreTable | None,
        text_columns: Sequence[str],
        *,
        catalog: Sequence[Any] | None,
        norms: Sequence[Sequence[Any]] | None = None,
    ) -> None:
        """In one transaction: drop ``previous`` (the table now named ``table``, if any) and
        its text indexes, rename the committed staged table (``<table>__hdq_loading``) to
        ``table`` (its rowids kept), build the text indexes of ``text_columns`` over it and,
        unless ``catalog`` is ``None`` (the catalog rows unchanged), write ``catalog`` as the
        table's catalog rows, and ``norms`` as its rows of role ``vector_norms``
        (:meth:`_norms_statements`). On any failure the transaction is rolled back and the
        staged table dropped: ``previous`` stays as it was."""
        schema = "main" if table.schema == "public" else table.schema
        staged = attrs.evolve(table, name=table.name + STAGED_SUFFIX)
        self._execute("BEGIN TRANSACTION")
        try:
            for column in previous.text_indexes if previous is not None else ():
                for statement in drop_text_index(table, column):
                    self._execute(statement)
            self._execute(drop_table(self.profile, table_node(table, schema)))
            self._execute(rename_table(staged, table.name))
            for column in text_columns:
                self._index_text(table, column)
            if catalog is not None:
                self._execute(catalog_create(self.profile, "main"))
                self._execute(catalog_delete(self.profile, "main", table.name))
                if catalog:
                    self._execute(catalog_insert(self.profile, "main", catalog))
            for statement in self._norms_statements(table, "main", norms):
                self._execute(statement)
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

    def _replace_rows(
        self, described: StoreTable, rows: pa.Table, norms: Sequence[Sequence[Any]] | None
    ) -> None:
        """Replace the rows of the keys ``rows`` holds with ``rows`` (registered as an Arrow
        table) and add the others. A table without a text index changes in place, in one
        transaction. A table with one changes as a load does (module docstring): the rows it
        keeps and ``rows`` are written under the staged name and committed, then one
        transaction swaps them in with their text indexes built again (:meth:`_swap_in`), so
        a change stopped anywhere leaves the old rows with their index or the new rows with
        theirs, and the rowids run from 0 without a gap (what the agent SQL snapshot needs,
        :meth:`_agent_snapshot`). ``norms`` is written to the catalog in the transaction
        that makes the change seen."""
        key = self._key_of(described)
        target = self.store_table(described.name)
        staged = described.name.name + STAGED_SUFFIX
        self._connection.register(_LOADING, _without_half_floats(rows))
        try:
            self._execute("BEGIN TRANSACTION")
            try:
                if described.text_indexes:
                    self._execute(drop_table(self.profile, self._staged_node(described.name)))
                    self._execute(copy_kept_rows(described.name, staged, key, _LOADING))
                    target = self._staged_node(described.name)
                else:
                    self._execute(delete_rows_from(self.profile, target.copy(), key, _LOADING))
                self._execute(
                    insert_rows_from(self.profile, target.copy(), rows.column_names, _LOADING)
                )
                if not described.text_indexes:
                    for statement in self._norms_statements(described.name, "main", norms):
                        self._execute(statement)
                self._execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
        finally:
            self._connection.unregister(_LOADING)
        if described.text_indexes:
            self._swap_in(
                described.name, described, described.text_indexes, catalog=None, norms=norms
            )

    def _remove_rows(
        self, described: StoreTable, keys: Sequence[Any], norms: Sequence[Sequence[Any]] | None
    ) -> int:
        """Delete the rows of ``keys`` (registered as an Arrow table): in place, in one
        transaction, from a table without a text index; from a table with one, as
        :meth:`_replace_rows` does, its kept rows staged and swapped in with their indexes.
        ``norms`` is written to the catalog in the transaction that makes the change seen."""
        import pyarrow as pa

        key = self._key_of(described)
        staged = described.name.name + STAGED_SUFFIX
        self._connection.register(_LOADING, pa.table({key: pa.array(list(keys))}))
        try:
            removed = int(self._query(keyed_count(described.name, key, _LOADING))[1][0][0])
            if not removed:
                return 0
            self._execute("BEGIN TRANSACTION")
            try:
                if described.text_indexes:
                    self._execute(drop_table(self.profile, self._staged_node(described.name)))
                    self._execute(copy_kept_rows(described.name, staged, key, _LOADING))
                else:
                    self._execute(
                        delete_rows_from(
                            self.profile, self.store_table(described.name), key, _LOADING
                        )
                    )
                    for statement in self._norms_statements(described.name, "main", norms):
                        self._execute(statement)
                self._execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
        finally:
            self._connection.unregister(_LOADING)
        if described.text_indexes:
            self._swap_in(
                described.name, described, described.text_indexes, catalog=None, norms=norms
            )
        return removed

    def _staged_node(self, table: TableName) -> Any:
        """The staged table of ``table`` (``<table>__hdq_loading``) as a sqlglot table."""
        return self.store_table(attrs.evolve(table, name=table.name + STAGED_SUFFIX))

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


def _batch_reader(data: pa.Table) -> pa.RecordBatchReader:
    """``data`` as a reader of record batches of at most
    :data:`~hotdata_retrieval.engines.checks.LOAD_BATCH_ROWS` rows (one pass), half floats
    widened (:func:`_without_half_floats`)."""
    import pyarrow as pa

    data = _without_half_floats(data)
    return pa.RecordBatchReader.from_batches(data.schema, checks.record_batches(data))


def _without_half_floats(data: pa.Table) -> pa.Table:
    """``data`` with every half-precision float (a column, or a list's elements) widened to
    float32, exactly: DuckDB's Arrow scan has no half-precision type (DuckDB 1.5.5 fails with
    "Unsupported Internal Arrow Type e"), and its column is declared ``FLOAT``
    (:data:`_COLUMN_TYPES`)."""
    import pyarrow as pa

    def widened(kind: pa.DataType) -> pa.DataType:
        if pa.types.is_float16(kind):
            return pa.float32()
        if pa.types.is_fixed_size_list(kind):
            return pa.list_(widened(kind.value_type), kind.list_size)
        if pa.types.is_list(kind):
            return pa.list_(widened(kind.value_type))
        if pa.types.is_large_list(kind):
            return pa.large_list(widened(kind.value_type))
        return kind

    schema = pa.schema(
        [field.with_type(widened(field.type)) for field in data.schema],
        metadata=data.schema.metadata,
    )
    return data if schema.equals(data.schema) else data.cast(schema)


@attrs.frozen(kw_only=True)
class _Snapshot:
    """A snapshot agent SQL reads (:meth:`DuckdbEngine._agent_snapshot`).

    Attributes:
        directory: its directory, with the worker's temporary files (``spill``).
        path: its database file.
        generation: the engine's :attr:`~hotdata_retrieval.engines.store.SqlStoreEngine.
            generation` it was made at.
        tables: the searchable tables it holds rows of.
        index_schemas: the schemas of their full-text indexes.
    """

    directory: SnapshotDirectory
    path: Path
    generation: int
    tables: frozenset[str]
    index_schemas: frozenset[str]
