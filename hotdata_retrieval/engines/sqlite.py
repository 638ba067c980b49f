"""The SQLite engine: plans compiled for the ``sqlite`` dialect, run by SQLite with FTS5 and
sqlite-vec (the ``sqlite`` extra: ``sqlean.py`` and ``sqlite-vec``).

Python's standard ``sqlite3`` module may be built without extension loading (the one
measured had no ``enable_load_extension``, ``shared/reference/local-engines.md`` §C), so the
engine connects through ``sqlean.py``, a drop-in ``sqlite3`` that bundles SQLite 3.50 with
extension loading, and loads sqlite-vec into each connection. The dialect profile follows the
library's SQLite version (:func:`~hotdata_retrieval.compile.sqlite.sqlite_profile`).

The database is a file (or ``:memory:``). ``load_table`` writes a table; per text column,
a contentless FTS5 table holding each row's terms by the library's analysis
(:func:`~hotdata_retrieval.compile.sqlite.fts_table_name`, :mod:`hotdata_retrieval.analysis`)
and the BM25 statistics the text search computes tantivy's BM25 from (each row's terms with
their frequencies and the row's length, and the rows with text and their total length:
:func:`~hotdata_retrieval.compile.sqlite.terms_table_name`,
:func:`~hotdata_retrieval.compile.sqlite.corpus_table_name`), kept in step by
``upsert_rows`` and ``delete_rows``; and the catalog rows (key, vector columns), in one
transaction; vectors are stored as float32 BLOBs (``vector_storage="blob"``, sqlite-vec's own
format) or as JSON text (``"json"``). A table the library did not write can be searched too:
full-text indexes are found by name (and must hold analysed terms and their statistics, as
the engine writes them; a table loaded by a release that wrote no statistics is searched by
text once it is loaded again), a vector column may hold BLOBs or JSON text, and rows whose
vectors are unusable are left out and counted in ``SearchResult.vector_scans``.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

import attrs
from sqlglot import exp

from hotdata_retrieval.analysis import analyze_text
from hotdata_retrieval.compile.sqlite import (
    change_corpus,
    create_fts_index,
    create_terms_tables,
    delete_fts_rows,
    delete_postings,
    fts_table_name,
    insert_fts_rows,
    insert_postings,
    schema_tables_select,
    sqlite_profile,
    sqlite_schema,
    table_columns_select,
    terms_table_name,
    terms_tables,
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
    delete_rows,
    drop_table,
    insert_rows,
    readable_sql,
    select_rows,
    table_node,
)
from hotdata_retrieval.engines import checks
from hotdata_retrieval.engines._agent_sql import (
    RefusedStatementError,
    SnapshotDirectory,
    WorkerSql,
)
from hotdata_retrieval.engines._sqlite_agent import (
    FTS5_SHADOW_TABLES,
    READABLE_FUNCTION_TABLES,
    SCHEMA_TABLES,
    Scope,
    SqliteAgentOpener,
)
from hotdata_retrieval.engines._sqlite_agent import connect as _connect
from hotdata_retrieval.engines._worker import SessionOpener
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
)
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

_SNAPSHOT_FILE = "snapshot.sqlite"
"""The in-memory database's copy agent SQL reads, in its snapshot directory."""

VECTOR_STORAGES = ("blob", "json")
"""How ``load_table`` may store vectors: float32 BLOBs (sqlite-vec's format) or JSON text."""


_COLUMN_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "integer": "INTEGER",
    "float32": "FLOAT32",
    "floating": "REAL",
    "string": "TEXT",
    "binary": "BLOB",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
}
"""The store's column type per kind of Arrow type (:func:`store_column_type`)."""


_SCAN_COUNTS_KEPT = 256
"""How many filters' vector-scan counts a SQLite engine keeps while its database is
unchanged (:meth:`SqliteEngine._scan_counts`)."""


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
    holds_nan = False  # a NaN REAL is stored as NULL
    column_types = _COLUMN_TYPES
    store_label = "the SQLite engine"
    timestamp_unit = "us"
    """SQLite holds a timestamp as ISO text and it reads back as microseconds
    (:func:`~hotdata_retrieval.engines.store.as_loaded`): a key of nanoseconds would be text
    that reads back as no timestamp."""
    float32_type = _COLUMN_TYPES["float32"]
    read_types: ClassVar[Mapping[str, str]] = {
        "INTEGER": "int64",
        "TEXT": "string",
        "REAL": "double",
        "FLOAT32": "double",
        "BOOLEAN": "int64",
        "TIMESTAMP": "string",
        "DATE": "string",
        "BLOB": "binary",
    }
    """SQLite's own types as its driver returns them: booleans are integers and dates and
    timestamps text (SQLite documentation, "Datatypes In SQLite", §2.1 and §2.2); for a
    column no value types (:attr:`SqlStoreEngine.read_types`)."""
    own_suffixes = ("__fts", "__fts_terms", "__fts_corpus")
    names_fold_case = True

    def __init__(self, database: str | Path = ":memory:", *, embedder: Any = None) -> None:
        self.database = str(database)
        if self.database == ":memory:":
            # A private in-memory database (SQLite documentation, "In-Memory Databases"):
            # agent SQL reads a copy of it (:meth:`_agent_worker`).
            self._uri = f"file:hdq-memory-{uuid.uuid4().hex}?mode=memory"
        else:
            self._uri = f"file:{quote(str(Path(self.database).resolve()))}?mode=rwc"
        self._connection = _connect(self._uri, uri=True, shown=self.database)
        self._scan_state: tuple[int, int, int] | None = None
        self._scan_cache: dict[str, tuple[int, int, int]] = {}
        import sqlean

        super().__init__(sqlite_profile(sqlean.sqlite_version_info), embedder=embedder)

    def close(self) -> None:
        """Close the connections, stop the agent SQL worker and delete its copy of an
        in-memory database."""
        super().close()
        self._drop_snapshot()
        self._connection.close()

    # -- the driver ------------------------------------------------------------------------

    def _query(
        self, statement: str, parameters: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        import sqlean

        try:
            cursor = self._connection.execute(statement, parameters)
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

    _agent_sql: WorkerSql

    def _agent_sql_runner(self) -> WorkerSql:
        return WorkerSql(self._agent_worker)

    _snapshot: tuple[SnapshotDirectory, tuple[int, int]] | None = None

    def _agent_worker(self, limits: SqlLimits) -> tuple[SessionOpener, Any]:
        """What the SQL worker opens, and what the statement may read
        (:meth:`_agent_scope`, read again for every statement). The worker opens a database
        file itself, read-only (``mode=ro``); an in-memory database, which no other process
        can open, it reads from a copy this engine writes with SQLite's backup API (an exact
        copy, page by page: SQLite C interface, "Online Backup API") into a private temporary
        directory when agent SQL first runs, and again once the engine has changed a row or
        loaded a table since (``total_changes``, :attr:`generation`)."""
        if self.database != ":memory:":
            uri = self._uri.replace("?mode=rwc", "?mode=ro")
            return SqliteAgentOpener(uri=uri, shown=self.database), self._agent_scope()
        state = (self.generation, int(self._connection.total_changes))
        if self._snapshot is None or self._snapshot[1] != state:
            self._drop_snapshot()
            directory = SnapshotDirectory(self)
            try:
                target = _connect(str(directory.path / _SNAPSHOT_FILE))
                try:
                    self._connection.backup(target)
                finally:
                    target.close()
            except BaseException:
                directory.remove()
                raise
            self._snapshot = (directory, state)
        uri = f"file:{quote(str(self._snapshot[0].path / _SNAPSHOT_FILE))}?mode=ro"
        return SqliteAgentOpener(uri=uri, shown=self.database), self._agent_scope()

    def _drop_snapshot(self) -> None:
        """Stop the worker that reads the in-memory database's copy, and delete the copy."""
        if self._snapshot is not None:
            self._agent_sql.stop_worker()
            self._snapshot[0].remove()
            self._snapshot = None

    def _agent_scope(self) -> Scope:
        """What agent SQL may read now: the searchable tables, their full-text tables and the
        schema table; and every table or module name a read could mean (read again for each
        statement, so a table that stopped being searchable is not read)."""
        tables: set[str] = set()
        readable = set(SCHEMA_TABLES | READABLE_FUNCTION_TABLES)
        for table in self.searchable_tables():
            tables.add(table.name)
            described = self._describe(table)
            for column in described.text_indexes if described is not None else ():
                index = fts_table_name(table.name, column)
                readable.add(index)
                readable.update(f"{index}_{shadow}" for shadow in FTS5_SHADOW_TABLES)
        readable |= tables
        modules = {row[0].lower() for row in self._query("SELECT name FROM pragma_module_list")[1]}
        known = {name.lower() for name in self._names("main")} | modules
        return Scope(tables=frozenset(tables), readable=frozenset(readable), known=frozenset(known))

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
        # a column is searchable once it has its FTS5 table and its BM25 statistics (a table
        # loaded by a release that wrote no statistics asks to be loaded again)
        text_indexes = tuple(
            column
            for column in columns
            if fts_table_name(table.name, column) in names
            and terms_table_name(table.name, column) in names
        )
        # an FTS5 table without statistics: an earlier release's index, neither searched
        # nor kept
        outdated = tuple(
            column
            for column in columns
            if fts_table_name(table.name, column) in names and column not in text_indexes
        )
        key: str | None = None
        vectors: tuple[StoreColumn, ...] = ()
        loaded: tuple[tuple[str, pa.DataType], ...] = ()
        if CATALOG_TABLE in names:
            key, vectors, loaded = read_catalog(
                self._query(catalog_select(self.profile, schema, table.name))[1]
            )
        return StoreTable(
            name=table,
            columns=columns,
            column_types=tuple(row[1] for row in listed),
            key_column=key,
            text_indexes=text_indexes,
            vectors=vectors,
            outdated_text_indexes=outdated,
            loaded_types=loaded,
        )

    def _check_index_names(
        self, table: TableName, columns: Sequence[str], text_columns: Sequence[str]
    ) -> None:
        """Refuse a load whose full-text tables would be another table's: a column's index
        tables are named ``<table>__<column>__fts...``
        (:func:`~hotdata_retrieval.compile.sqlite.fts_table_name`), so table ``x`` with
        column ``y__z`` and table ``x__y`` with column ``z`` would share them. A column that
        is text-indexed on either side shares them; two columns without an index do not
        (but a column is taken as indexed when tables of its name exist, so a column beside
        another's index is refused too).

        Raises:
            EngineError: naming both tables and columns and the shared name.
        """
        texts = {column.lower() for column in text_columns}
        for column, other, other_column in self._index_name_sharers(table, columns):
            if column.lower() in texts or other_column in other.text_indexes:
                raise EngineError(
                    f"column '{column}' of table '{table.name}' and column "
                    f"'{other_column}' of table '{other.name.name}' would share the full-text "
                    f"tables '{fts_table_name(table.name, column)}...' (SQLite names them "
                    "<table>__<column>__fts); rename one of the tables or columns"
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
                else self.store_column_type(field),
            )
            for field in data.schema
        ]

        self._check_index_names(table, data.column_names, text_columns)
        convert = _conversions(data.schema, storage)
        previous = self._describe(table)
        target = table_node(table, schema)
        self._execute("BEGIN IMMEDIATE")
        try:
            for column in previous.columns if previous is not None else ():
                self._execute(
                    drop_table(self.profile, table_node(fts_table_name(table.name, column), schema))
                )
                for statistics in terms_tables(table, column):
                    self._execute(drop_table(self.profile, statistics))
            self._execute(drop_table(self.profile, target.copy()))
            # The key's index: the search's last join, upserts and deletes find a row by it
            # (without it SQLite builds an automatic index of the whole table per search).
            self._execute(create_table(self.profile, target.copy(), columns, unique=key_column))
            statement = insert_rows(self.profile, target.copy(), data.column_names, None)
            try:
                self._connection.executemany(statement, self.rows_of(data, convert))
            except Exception as error:
                raise EngineError(f"sqlite: {error}", sql=statement) from None
            for column in text_columns:
                self._execute(create_fts_index(table, column))
                for statement in create_terms_tables(table, column):
                    self._execute(statement)
                self._index_text(table, column)
            self._execute(catalog_create(self.profile, schema))
            self._execute(catalog_delete(self.profile, schema, table.name))
            vectors = [attrs.evolve(v, storage=storage[v.name]) for v in vectors]
            rows = catalog_rows(table.name, key_column, vectors, "blob", data.schema)
            if rows:
                self._execute(catalog_insert(self.profile, schema, rows))
            self._execute("COMMIT")
        except BaseException:
            self._execute("ROLLBACK")
            raise

    def _replace_rows(
        self, described: StoreTable, rows: pa.Table, norms: Sequence[Sequence[Any]] | None
    ) -> None:
        """Delete the rows of the keys ``rows`` holds and their FTS5 entries, insert ``rows``
        and index their text, and write ``norms`` to the catalog, in one transaction
        (``BEGIN IMMEDIATE``)."""
        key = self._key_of(described)
        storage = {vector.name: vector.storage or "blob" for vector in described.vectors}
        convert = _conversions(rows.schema, storage)
        keys = self._stored_keys(described, rows.column(key).to_pylist())
        target = self.store_table(described.name)
        statement = insert_rows(self.profile, target.copy(), rows.column_names, None)
        self._execute("BEGIN IMMEDIATE")
        try:
            self._delete_keyed(described, keys)
            try:
                self._connection.executemany(statement, self.rows_of(rows, convert))
            except Exception as error:
                raise EngineError(f"sqlite: {error}", sql=statement) from None
            for column in described.text_indexes:
                self._index_keyed(described, column, keys)
            for statement in self._norms_statements(
                described.name, sqlite_schema(described.name), norms
            ):
                self._execute(statement)
            self._execute("COMMIT")
        except BaseException:
            self._execute("ROLLBACK")
            raise

    def _remove_rows(
        self, described: StoreTable, keys: Sequence[Any], norms: Sequence[Sequence[Any]] | None
    ) -> int:
        """Delete the rows of ``keys`` and their FTS5 entries, and write ``norms`` to the
        catalog, in one transaction."""
        self._execute("BEGIN IMMEDIATE")
        try:
            removed = self._delete_keyed(described, keys)
            for statement in self._norms_statements(
                described.name, sqlite_schema(described.name), norms
            ):
                self._execute(statement)
            self._execute("COMMIT")
        except BaseException:
            self._execute("ROLLBACK")
            raise
        return removed

    def _keyed_text(
        self, described: StoreTable, keys: Sequence[Any]
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each row of ``keys``: its rowid and its indexed columns' texts."""
        key = self._key_of(described)
        texts = list(described.text_indexes)
        for chunk in self._key_chunks(keys):
            statement = select_rows(
                self.profile,
                self.store_table(described.name),
                ["rowid", *texts],
                key_column=key,
                key_count=len(chunk),
            )
            for row in self._query(statement, chunk)[1]:
                yield int(row[0]), dict(zip(texts, row[1:]))

    def _delete_keyed(self, described: StoreTable, keys: Sequence[Any]) -> int:
        """Delete the rows of ``keys``, each indexed text first removed from its contentless
        FTS5 table with the terms it was indexed with (the ``delete`` command), in the open
        transaction; how many rows there were."""
        import sqlean

        table = described.name
        if described.text_indexes:
            removals: dict[str, list[tuple[int, tuple[str, ...]]]] = {
                c: [] for c in described.text_indexes
            }
            for rowid, texts in self._keyed_text(described, keys):
                for column, text in texts.items():
                    if text is not None:
                        removals[column].append((rowid, analyze_text(str(text))))
            for column, entries in removals.items():
                self._change_terms(table, column, entries, added=False)
        removed = 0
        key = self._key_of(described)
        for chunk in self._key_chunks(keys):
            statement = delete_rows(self.profile, self.store_table(table), key, len(chunk))
            try:
                removed += int(self._connection.execute(statement, chunk).rowcount)
            except sqlean.Error as error:
                raise EngineError(f"sqlite: {error}", sql=statement) from None
        return removed

    def _index_keyed(self, described: StoreTable, column: str, keys: Sequence[Any]) -> None:
        """Index the text of ``column`` of the rows of ``keys`` (just inserted)."""
        entries = [
            (rowid, analyze_text(str(texts[column])))
            for rowid, texts in self._keyed_text(described, keys)
            if texts[column] is not None
        ]
        self._change_terms(described.name, column, entries, added=True)

    def _index_text(self, table: TableName, column: str) -> None:
        """Fill the column's contentless FTS5 table and its BM25 statistics from each
        non-NULL row's rowid and its terms by the library's analysis
        (:func:`~hotdata_retrieval.analysis.analyze_text`), read and indexed
        :data:`~hotdata_retrieval.engines.checks.LOAD_BATCH_ROWS` rows at a time."""
        import sqlean

        statement = text_rows_select(table, column)
        try:
            cursor = self._connection.execute(statement)
            while rows := cursor.fetchmany(checks.LOAD_BATCH_ROWS):
                entries = [(int(rowid), analyze_text(str(text))) for rowid, text in rows]
                self._change_terms(table, column, entries, added=True)
        except sqlean.Error as error:
            raise EngineError(f"sqlite: {error}", sql=statement) from None

    def _change_terms(
        self,
        table: TableName,
        column: str,
        entries: Sequence[tuple[int, tuple[str, ...]]],
        *,
        added: bool,
    ) -> None:
        """Add (or remove) rows' terms, ``(rowid, analysed terms)``, to (or from) the
        column's contentless FTS5 table (whose ``delete`` command takes the very terms a row
        was indexed with, FTS5 documentation §4.4.2), its postings (each distinct term's
        frequency and the row's length) and its corpus row (the rows with text and their
        terms in all), in the open transaction."""
        fts_rows = [(rowid, " ".join(terms)) for rowid, terms in entries]
        if added:
            postings: list[tuple[Any, ...]] = [
                (term, rowid, frequency, len(terms))
                for rowid, terms in entries
                for term, frequency in Counter(terms).items()
            ]
            statements = [
                (insert_fts_rows(table, column), fts_rows),
                (insert_postings(table, column), postings),
            ]
        else:
            postings = [(term, rowid) for rowid, terms in entries for term in set(terms)]
            statements = [
                (delete_fts_rows(table, column), fts_rows),
                (delete_postings(table, column), postings),
            ]
        sign = 1 if added else -1
        total = sum(len(terms) for _, terms in entries)
        change = [(sign * len(entries), sign * total)]
        for statement, parameters in [*statements, (change_corpus(table, column), change)]:
            try:
                self._connection.executemany(statement, parameters)
            except Exception as error:
                raise EngineError(f"sqlite: {error}", sql=statement) from None

    # -- what SQLite reports beside the hits -----------------------------------------------

    def _stored_keys(self, described: StoreTable, keys: list[Any]) -> list[Any]:
        """``keys`` of a date or timestamp key column as the ISO text SQLite holds its values
        in (:func:`_iso_text`: a zoned timestamp as its UTC instant, a timestamp of
        nanoseconds as a ``datetime`` subclass), so that a statement finds their rows: the
        driver's own adapter wrote a zoned key with its offset (``+00:00``), which no stored
        text equals, and had none for pandas' ``Timestamp``; other keys as they are."""
        dates, timestamps = self.text_temporal_columns(described)
        if self._key_of(described) not in dates | timestamps:
            return keys
        return [_iso_text(key) if hasattr(key, "isoformat") else key for key in keys]

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

    def _scan_counts(self, statement: str) -> tuple[int, int, int]:
        """The rows :func:`vector_scan_sql`'s ``statement`` counts (scanned, without a
        vector, skipped), kept while the database is unchanged: a second full scan of the
        table would cost most of what the search's own scan costs (about 150 ms of 430 at
        100,000 rows of 384 floats; ``docs/benchmarks.md``). The statement holds the filter
        and the query's dimension, not its values, so the searches of one filter share it.
        Unchanged means: no table loaded or dropped by this engine (:attr:`generation`), no
        row changed by its connection (``total_changes``) and no change committed by
        another connection to the file (``PRAGMA data_version``: SQLite documentation,
        "Pragma statements")."""
        state = (
            self.generation,
            int(self._connection.total_changes),
            int(self._query("PRAGMA data_version")[1][0][0]),
        )
        if state != self._scan_state:
            self._scan_state, self._scan_cache = state, {}
        counts = self._scan_cache.get(statement)
        if counts is None:
            row = self._query(statement)[1][0]
            counts = (int(row[0]), int(row[1] or 0), int(row[2] or 0))
            if len(self._scan_cache) >= _SCAN_COUNTS_KEPT:
                del self._scan_cache[next(iter(self._scan_cache))]  # the oldest
            self._scan_cache[statement] = counts
        return counts

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
                counts = self._scan_counts(
                    vector_scan_sql(plan, attrs.evolve(branch, table=member))
                )
                scanned += counts[0]
                without_vector += counts[1]
                skipped += counts[2]
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


def _vector_rows(column: pa.Array) -> tuple[np.ndarray, list[int]]:
    """A list column's components, flat, as float64 (widened exactly from any float type),
    and where each row's begin: row ``i`` spans ``[starts[i], starts[i + 1])`` (a NULL row
    spans nothing)."""
    import numpy as np
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    starts = [0, *np.cumsum(lengths, dtype=np.int64).tolist()]
    flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return flat, starts


def _as_blobs(column: pa.Array) -> list[bytes | None]:
    """Each row's vector as float32 bytes (``NULL`` as ``None``), a column at a time: what
    sqlite-vec reads as a ``float[N]`` BLOB. The components go through Arrow's buffers and
    one NumPy cast, not Python floats one by one."""
    import numpy as np

    flat, starts = _vector_rows(column)
    data = flat.astype(np.float32).tobytes()
    valid = column.is_valid().to_pylist()
    return [
        data[4 * begin : 4 * end] if present else None
        for present, begin, end in zip(valid, starts, starts[1:])
    ]


def _as_json_texts(column: pa.Array) -> list[str | None]:
    """Each row's vector as JSON text of its components (``NULL`` as ``None``)."""
    flat, starts = _vector_rows(column)
    values = flat.tolist()
    valid = column.is_valid().to_pylist()
    return [
        json.dumps(values[begin:end]) if present else None
        for present, begin, end in zip(valid, starts, starts[1:])
    ]


def _iso_texts(column: pa.Array) -> list[str | None]:
    """Each date or timestamp as the ISO text :func:`_iso_text` writes (``NULL`` as
    ``None``)."""
    return [None if value is None else _iso_text(value) for value in column.to_pylist()]


def _iso_text(value: Any) -> str:
    """A date or timestamp as the ISO text SQLite holds it (a timestamp in UTC, with a space
    before the time: what the compiler writes its literals as)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return str(value.isoformat(sep=" "))
    return str(value.isoformat())


def _conversions(
    schema: pa.Schema, storage: Mapping[str, str]
) -> dict[str, Callable[[pa.Array], list[Any]]]:
    """How each column's values are written, a column at a time (for
    :meth:`~hotdata_retrieval.engines.store.SqlStoreEngine.rows_of`): a vector column as
    float32 BLOBs or JSON text (its ``storage``), a date or timestamp as ISO text."""
    import pyarrow as pa

    convert: dict[str, Callable[[pa.Array], list[Any]]] = {
        column: _as_blobs if kind == "blob" else _as_json_texts for column, kind in storage.items()
    }
    for field in schema:
        if field.name in convert:
            continue
        if pa.types.is_timestamp(field.type) or pa.types.is_date(field.type):
            convert[field.name] = _iso_texts
    return convert
