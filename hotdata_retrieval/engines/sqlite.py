"""The SQLite engine: plans compiled for the ``sqlite`` dialect, run by SQLite with FTS5 and
sqlite-vec (the ``sqlite`` extra: ``sqlean.py`` and ``sqlite-vec``).

Python's standard ``sqlite3`` module may be built without extension loading (the one
measured had no ``enable_load_extension``, ``shared/reference/local-engines.md`` §C), so the
engine connects through ``sqlean.py``, a drop-in ``sqlite3`` that bundles SQLite 3.50 with
extension loading, and loads sqlite-vec into each connection. The dialect profile follows the
library's SQLite version (:func:`~hotdata_retrieval.compile.sqlite.sqlite_profile`).

The database is a file (or ``:memory:``). ``load_table`` writes a table, an external-content
FTS5 table per text column (:func:`~hotdata_retrieval.compile.sqlite.fts_table_name`) and the
catalog rows (key, vector columns) in one transaction; vectors are stored as float32 BLOBs
(``vector_storage="blob"``, sqlite-vec's own format) or as JSON text (``"json"``). A table the
library did not write can be searched too: full-text indexes are found by name, a vector
column may hold BLOBs or JSON text, and rows whose vectors are unusable are left out and
counted in ``SearchResult.vector_scans``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.compile.sqlite import (
    create_fts_index,
    fts_table_name,
    rebuild_fts_index,
    schema_tables_select,
    sqlite_profile,
    sqlite_schema,
    table_columns_select,
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
    table_node,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.results import SearchResult, VectorScan
from hotdata_retrieval.engines.store import (
    SqlStoreEngine,
    StoreColumn,
    StoreTable,
    catalog_rows,
    read_catalog,
    store_column_type,
)
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["VECTOR_STORAGES", "SqliteEngine"]

VECTOR_STORAGES = ("blob", "json")
"""How ``load_table`` may store vectors: float32 BLOBs (sqlite-vec's format) or JSON text."""


def _connect(database: str) -> Any:
    require_extra("sqlite", needed_by="the SQLite engine")
    import sqlean
    import sqlite_vec

    try:
        connection = sqlean.connect(database, isolation_level=None, check_same_thread=False)
    except sqlean.Error as error:
        raise EngineError(f"cannot open SQLite database {database!r}: {error}") from None
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

    def __init__(self, database: str | Path = ":memory:", *, embedder: Any = None) -> None:
        self.database = str(database)
        self._connection = _connect(self.database)
        import sqlean

        super().__init__(sqlite_profile(sqlean.sqlite_version_info), embedder=embedder)

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()

    # -- the driver ------------------------------------------------------------------------

    def _query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        import sqlean

        try:
            cursor = self._connection.execute(statement)
            rows = cursor.fetchall()
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

    def _names(self, schema: str) -> set[str]:
        return {row[0] for row in self._query(schema_tables_select(schema))[1]}

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
        import numpy as np

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

        convert = {
            column: as_blob if kind == "blob" else as_json for column, kind in storage.items()
        }
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
                self._execute(rebuild_fts_index(table, column))
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

    # -- what SQLite reports beside the hits -----------------------------------------------

    def _finish(self, plan: SearchPlan, result: SearchResult) -> SearchResult:
        """Count, per nearest branch, the rows its filter kept, those without a vector and
        those whose vector has no distance (:class:`VectorScan`)."""
        import attrs

        scans = []
        for name, branch in zip(plan.branch_names, plan.branches):
            if not isinstance(branch, NearestNeighborSearch):
                continue
            _, rows = self._query(vector_scan_sql(plan, branch))
            scanned, without_vector, skipped = rows[0]
            scans.append(
                VectorScan(
                    branch=name,
                    column=branch.column,
                    scanned=int(scanned),
                    without_vector=int(without_vector or 0),
                    skipped=int(skipped or 0),
                )
            )
        return attrs.evolve(result, vector_scans=tuple(scans)) if scans else result
