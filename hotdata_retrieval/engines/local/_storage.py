"""How the local engine writes: a load embeds and writes each table into a staging directory of
its own, builds its indexes there, and commits every table of the load at once under the
database's writer lock (:func:`~hotdata_retrieval.engines.local.database.commit`); a drop is a
commit without the table. Nothing a failed write touched is ever visible."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hotdata_retrieval.engines._repeated_keys import key_in, positive_zero
from hotdata_retrieval.engines.checks import (
    check_cosine_norms,
    check_key_column,
    check_keys_kept,
    check_temporal_values_kept,
    check_values_held,
    check_vector_rows_type,
    check_written_vectors,
    column_names,
    is_vector_type,
    rows_table,
    table_load,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local._catalog import OpenTables, key_array
from hotdata_retrieval.engines.local._embedding_cache import (
    embed_column,
    embedded_vectors,
)
from hotdata_retrieval.engines.local._prepare import (
    Prepared,
    TableLoad,
    check_vector_column,
    check_vector_lengths,
    prepare,
)
from hotdata_retrieval.engines.local._session import check_registrable
from hotdata_retrieval.engines.local.bm25 import (
    TEXT_ANALYSIS,
    build_bm25_index,
    filter_columns,
)
from hotdata_retrieval.engines.local.database import (
    AnnIndex,
    DatabaseError,
    TableEntry,
    VectorColumn,
)
from hotdata_retrieval.engines.local.distance import COSINE_DISTANCE
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, build_hnsw
from hotdata_retrieval.engines.local.tables import open_table, read_rows, recorded_vector_norms


def load_tables(
    tables: OpenTables,
    loads: Sequence[TableLoad],
    *,
    embedder: Any,
    lock_timeout: float | None,
    progress: bool,
    batch_size: int,
) -> list[TableEntry]:
    """Write ``loads`` in one commit and hold the new versions open in ``tables``
    (``LocalEngine.load_tables`` documents the behaviour).

    Raises:
        EngineError: a table that fails its checks, or two loads of one name.
        DatabaseError: the database cannot be written, or another process holds the writer
            lock past ``lock_timeout``; nothing was committed.
    """
    prepared = [prepare(load, embedder) for load in loads]
    for item in prepared:
        check_vector_lengths(item)
    names = [item.name for item in prepared]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise EngineError(f"a load names table {repeated!r} twice")
    with database.writer_lock(tables.root, timeout=lock_timeout):
        current = database.read_catalog(tables.root)
        expected = {n: current[n].version if n in current else None for n in names}
        return _commit_versions(tables, prepared, expected, embedder, progress, batch_size)


def _commit_versions(
    tables: OpenTables,
    prepared: Sequence[Prepared],
    expected: dict[str, str | None],
    embedder: Any,
    progress: bool,
    batch_size: int,
) -> list[TableEntry]:
    """Write each of ``prepared`` into a staging directory and commit them all, the catalog
    still holding the ``expected`` versions; the caller holds the writer lock."""
    root = tables.root
    staged: dict[str, tuple[TableEntry, Path, pa.Table]] = {}
    try:
        for item in prepared:
            staged[item.name] = _write_version(root, item, embedder, progress, batch_size)
        check_registrable([(entry.name, data) for entry, _, data in staged.values()])
        database.commit(
            root,
            expected,
            {name: (entry, path) for name, (entry, path, _) in staged.items()},
        )
    except BaseException:
        for _, path, _ in staged.values():
            shutil.rmtree(path, ignore_errors=True)
        raise
    with tables.lock:
        for entry, _, data in staged.values():
            tables.install(open_table(root, entry, data))
        tables.refresh(again=True)  # read the committed catalog
    return [staged[item.name][0] for item in prepared]


def change_rows(
    tables: OpenTables,
    name: str,
    *,
    upsert: pa.Table | None,
    delete: Sequence[Any],
    embedder: Any,
    lock_timeout: float | None,
    create: TableLoad | None = None,
) -> tuple[TableEntry, int]:
    """Replace or add the rows of ``upsert`` and remove the rows keyed by ``delete`` in table
    ``name``, in one commit (``LocalEngine.upsert_rows`` and ``delete_rows`` document the
    behaviour). The current version is read, changed and written again under the writer lock,
    so no concurrent writer's rows are lost; texts embedded before are not embedded again.
    A missing table is loaded from ``upsert`` as ``create`` describes, when it is given:
    under the same lock, so of two first writers the second changes the first's table.

    Returns:
        The new catalog entry, and how many of ``delete``'s keys named a row.

    Raises:
        EngineError: no such table, a table without a key column, rows whose columns or
            values the table cannot hold, a repeated or NULL key among them.
        DatabaseError: the database cannot be written; nothing was committed.
    """
    if isinstance(delete, (str, bytes)) or not hasattr(delete, "__len__"):
        raise EngineError(f"keys must be a list of keys, not {type(delete).__name__}")
    if upsert is not None:
        upsert = rows_table(upsert)
        create = table_load(create)
    tables.refresh()
    table = tables.table_name(name)
    with database.writer_lock(tables.root, timeout=lock_timeout):
        current = database.read_catalog(tables.root)
        entry = current.get(table.name)
        here = (table.catalog, table.schema) == (tables.catalog, tables.schema)
        if here and entry is None and create is not None and upsert is not None:
            load = TableLoad(
                name=table.name,
                data=upsert,
                key_column=create.key_column,
                text_columns=create.text_columns,
                embed_columns=create.embed_columns,
                vector_index=create.vector_index,
                vector_metric=create.vector_metric,
                hnsw_settings=create.hnsw_settings,
            )
            prepared = prepare(load, embedder)
            check_vector_lengths(prepared)
            created = _commit_versions(tables, [prepared], {table.name: None}, embedder, False, 64)
            return created[0], 0
        if not here or entry is None:
            raise EngineError(f"table '{table}' not found; create it with load_table first")
        key = entry.key_column
        if key is None:
            raise EngineError(
                f"table '{table}' has no key column: rows are replaced and deleted by key"
            )
        if upsert is None and not len(delete):
            return entry, 0  # nothing to change: no new version
        data = read_rows(database.version_directory(tables.root, entry) / "data.parquet")
        derived = [vector.name for vector in entry.vector_columns]
        data = data.drop_columns([column for column in derived if column in data.column_names])
        removed = key_array(delete, data.schema.field(key).type, key)
        present = key_in(data.column(key), removed) if len(removed) else None
        deleted = int(pc.sum(present).as_py() or 0) if present is not None else 0
        added = []
        if upsert is not None:
            added.append(_rows_for(upsert, data.schema, key, derived, str(table)))
            for field in added[0].schema:  # named by their place among the rows given
                if is_vector_type(field.type):
                    check_cosine_norms(added[0], field.name, entry.caller_metric)
            replaced = key_in(data.column(key), added[0].column(key))
            present = replaced if present is None else pc.or_(present, replaced)
        kept = data if present is None else data.filter(pc.invert(present))
        load = TableLoad(
            name=table.name,
            data=pa.concat_tables([kept, *added]),
            key_column=key,
            text_columns=entry.text_indexes,
            embed_columns=tuple(vector.source_column for vector in entry.vector_columns),
            vector_index="hnsw" if entry.ann_indexes else None,
            vector_metric=entry.caller_metric,
            hnsw_settings=entry.hnsw_settings if entry.ann_indexes else None,
        )
        prepared = prepare(load, embedder)
        written = _commit_versions(
            tables, [prepared], {table.name: entry.version}, embedder, False, 64
        )
    return written[0], deleted


def _rows_for(
    rows: pa.Table, schema: pa.Schema, key: str, derived: Sequence[str], table: str
) -> pa.Table:
    """``rows`` in the table's ``schema``: columns matched by name (lower-cased), a column
    the rows lack is NULL, values cast to the column's type.

    Raises:
        EngineError: a column the table lacks or derives (an embedding), a value the column's
            type cannot hold, a missing, NULL or repeated key.
    """
    names = column_names(rows.schema)
    rows = rows.rename_columns(names)
    for column in names:
        if column in derived:
            raise EngineError(
                f"column '{column}' of table '{table}' is computed from its text when rows "
                "are written; leave it out"
            )
        if column not in schema.names:
            raise EngineError(
                f"table '{table}' has no column '{column}'; its columns: {', '.join(schema.names)}"
            )
    if key not in names:
        raise EngineError(f"rows written to table '{table}' need its key column '{key}'")
    check_values_held(
        rows, {field.name: field.type for field in schema if field.name != key}, table
    )
    columns = []
    for field in schema:
        if field.name not in names:
            columns.append(pa.nulls(rows.num_rows, type=field.type))
            continue
        given = rows.schema.field(field.name).type
        if pa.types.is_null(given):  # every value NULL, no type: NULLs of the table's type
            columns.append(pa.nulls(rows.num_rows, type=field.type))
            continue
        if pa.types.is_dictionary(given):
            given = given.value_type
        size = getattr(field.type, "list_size", None)
        if is_vector_type(field.type) and size is not None:
            # the stores' checks and words, before Float32 makes 1e39 infinite
            check_written_vectors(rows, field.name, size, table)
        elif is_vector_type(field.type):
            check_vector_rows_type(given, field.name, table)
            check_vector_column(rows, field.name, key)
        if _is_text(given) != _is_text(field.type):
            raise EngineError(
                f"column '{field.name}' of table '{table}' holds {field.type}; the rows "
                f"written hold {given}, which is not converted"
            )
        if field.name == key:
            check_keys_kept(rows.column(key), field.type, key, table)
        try:
            column = rows.column(field.name).cast(field.type)
            columns.append(positive_zero(column) if field.name == key else column)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            raise EngineError(
                f"column '{field.name}' of table '{table}' holds {field.type}; the rows "
                f"written hold {rows.schema.field(field.name).type}: {error}"
            ) from None
    written = pa.Table.from_arrays(columns, schema=schema)
    check_key_column(written.column(key), key)
    check_temporal_values_kept(written, store="the local engine")
    return written


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def drop_table(tables: OpenTables, name: str, *, lock_timeout: float | None) -> None:
    """Remove table ``name`` (a damaged one too) in one commit.

    Raises:
        EngineError: no such table.
        DatabaseError: the catalog cannot be written; nothing changed.
    """
    tables.refresh()
    table = tables.table_name(name)
    if (table.catalog, table.schema) != (tables.catalog, tables.schema) or (
        table.name not in tables.entries
    ):
        raise EngineError(f"table '{table}' not found")
    with database.writer_lock(tables.root, timeout=lock_timeout):
        current = database.read_catalog(tables.root)
        if table.name not in current:
            raise EngineError(f"table '{table}' not found")
        database.commit(
            tables.root, {table.name: current[table.name].version}, {}, dropped=[table.name]
        )
        tables.refresh(again=True)


def _write_version(
    root: Path, item: Prepared, embedder: Any, progress: bool, batch_size: int
) -> tuple[TableEntry, Path, pa.Table]:
    """Embed ``item`` and write it complete into a staging directory.

    Raises:
        DatabaseError: a file cannot be written (the message names the directory).
    """
    data = item.data
    vectors: list[VectorColumn] = []
    for column in item.embeds:
        vector_name = f"{column}_embedding"
        texts = data.column(column).to_pylist()
        matrix = embed_column(root, embedder, item.name, column, texts, progress, batch_size)
        array = embedded_vectors(texts, matrix).cast(pa.list_(pa.float32()))
        if vector_name in data.column_names:
            data = data.drop_columns([vector_name])
        data = data.append_column(vector_name, array)
        vectors.append(
            VectorColumn(
                name=vector_name,
                source_column=column,
                model=str(embedder.name),
                dimensions=int(matrix.shape[1]),
            )
        )
    directory = database.new_staging_directory(root)
    try:
        pq.write_table(data, directory / "data.parquet")
        filters = data.select(filter_columns(data)) if item.texts else None
        for column in item.texts:
            build_bm25_index(directory / "bm25" / column, data.column(column).to_pylist(), filters)
        ann_indexes = _build_ann_indexes(item, data, directory, vectors, progress)
    except EngineError:  # a refusal (HNSW settings that do not suit a column), not a failure
        shutil.rmtree(directory, ignore_errors=True)
        raise
    except Exception as error:
        shutil.rmtree(directory, ignore_errors=True)
        message = getattr(error, "strerror", None) or " ".join(str(error).split())
        raise DatabaseError(
            f"cannot write table {item.name!r} to {directory}: {message}; nothing was "
            "committed, the previous version is intact"
        ) from None
    embedded = {vector.name for vector in vectors}
    entry = TableEntry(
        name=item.name,
        version=directory.name[:16],
        rows=data.num_rows,
        key_column=item.key,
        columns=tuple(data.column_names),
        text_indexes=item.texts,
        vector_columns=tuple(vectors),
        ann_indexes=ann_indexes,
        hnsw_settings=item.hnsw_settings if ann_indexes else None,
        text_analysis=TEXT_ANALYSIS if item.texts else None,
        vector_metric=item.vector_metric,
        vector_norms=recorded_vector_norms(data, item.key, item.vector_metric, embedded),
    )
    return entry, directory, data


def _build_ann_indexes(
    item: Prepared,
    data: pa.Table,
    directory: Path,
    embedded: Sequence[VectorColumn],
    progress: bool,
) -> tuple[AnnIndex, ...]:
    """An HNSW index per vector column, when the load asks for one, built with the load's
    settings: an embedded column's serves cosine (how ``vector_search`` ranks), a caller's
    column the load's metric.

    Raises:
        HnswSettingsError: float16 storage for a column with values past its range.
    """
    if item.hnsw_function is None:
        return ()
    functions = {vector.name: COSINE_DISTANCE for vector in embedded}
    built = []
    for field in data.schema:
        if not is_vector_type(field.type):
            continue
        function = functions.get(field.name, item.hnsw_function)
        build_hnsw(
            VectorColumnIndex(data.column(field.name)),
            function,
            database.ann_index_path(directory, field.name),
            settings=item.hnsw_settings,
            column=field.name,
            progress=progress,
        )
        built.append(AnnIndex(column=field.name, function=function))
    return tuple(built)
