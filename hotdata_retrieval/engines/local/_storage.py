"""How the local engine writes: a load embeds and writes each table into a staging directory of
its own, builds its indexes there, and commits every table of the load at once under the
database's writer lock (:func:`~hotdata_retrieval.engines.local.database.commit`); a drop is a
commit without the table. Nothing a failed write touched is ever visible."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local._catalog import OpenTables
from hotdata_retrieval.engines.local._prepare import Prepared, TableLoad, is_vector_type, prepare
from hotdata_retrieval.engines.local._session import check_registrable
from hotdata_retrieval.engines.local.bm25 import build_bm25_index
from hotdata_retrieval.engines.local.database import (
    AnnIndex,
    DatabaseError,
    TableEntry,
    VectorColumn,
)
from hotdata_retrieval.engines.local.distance import COSINE_DISTANCE
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, build_hnsw
from hotdata_retrieval.engines.local.tables import open_table


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
    names = [item.name for item in prepared]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise EngineError(f"a load names table {repeated!r} twice")
    root = tables.root
    with database.writer_lock(root, timeout=lock_timeout):
        current = database.read_catalog(root)
        expected = {n: current[n].version if n in current else None for n in names}
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
    return [staged[name][0] for name in names]


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
        matrix = _embed_column(root, embedder, item.name, column, texts, progress, batch_size)
        missing = pa.array([text is None for text in texts], type=pa.bool_())
        array = pa.FixedSizeListArray.from_arrays(
            pa.array(matrix.reshape(-1), type=pa.float32()), matrix.shape[1], mask=missing
        ).cast(pa.list_(pa.float32()))
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
        for column in item.texts:
            build_bm25_index(directory / "bm25" / column, data.column(column).to_pylist())
        ann_indexes = _build_ann_indexes(item, data, directory, vectors, progress)
    except Exception as error:
        shutil.rmtree(directory, ignore_errors=True)
        message = getattr(error, "strerror", None) or " ".join(str(error).split())
        raise DatabaseError(
            f"cannot write table {item.name!r} to {directory}: {message}; nothing was "
            "committed, the previous version is intact"
        ) from None
    entry = TableEntry(
        name=item.name,
        version=directory.name[:16],
        rows=data.num_rows,
        key_column=item.key,
        columns=tuple(data.column_names),
        text_indexes=item.texts,
        vector_columns=tuple(vectors),
        ann_indexes=ann_indexes,
    )
    return entry, directory, data


def _build_ann_indexes(
    item: Prepared,
    data: pa.Table,
    directory: Path,
    embedded: Sequence[VectorColumn],
    progress: bool,
) -> tuple[AnnIndex, ...]:
    """An HNSW index per vector column, when the load asks for one: an embedded column's
    serves cosine (how ``vector_search`` ranks), a caller's column the load's metric."""
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
            progress=progress,
        )
        built.append(AnnIndex(column=field.name, function=function))
    return tuple(built)


def embedding_label(table: str, column: str, hashes: Sequence[str | None], count: int) -> str:
    """The progress bar's label for embedding ``count`` texts of a column whose rows have
    ``hashes`` (``None`` for a null). The bar counts the distinct texts not embedded before,
    so when that is not the row count the label says both: ``embedding tickets.body (143 texts
    of 144 rows)``, or ``(12 new texts of 5183 rows)`` when the others were embedded before."""
    label = f"embedding {table}.{column}"
    if count == len(hashes):
        return label
    distinct = len({value for value in hashes if value})
    new = "new " if count < distinct else ""
    texts = "text" if count == 1 else "texts"
    rows = "row" if len(hashes) == 1 else "rows"
    return f"{label} ({count} {new}{texts} of {len(hashes)} {rows})"


def _embed_column(
    root: Path,
    embedder: Any,
    table: str,
    column: str,
    texts: list[Any],
    progress: bool,
    batch_size: int,
) -> np.ndarray:
    """The column's vectors: those of texts the same model embedded before read from the
    database's embedding cache, the rest embedded in batches."""
    from hotdata_retrieval.embed import embed_in_batches

    model = str(embedder.name)
    dimensions = int(embedder.dimensions)
    hashes = database.text_hashes([t if isinstance(t, str) else None for t in texts])
    cached = database.read_embedding_cache(root, table, column, model, dimensions)
    missing = sorted({h for h in hashes if h and h not in cached})
    first_text = {h: t for h, t in zip(hashes, texts) if h}
    if missing:
        fresh = embed_in_batches(
            embedder,
            [first_text[h] for h in missing],
            batch_size=batch_size,
            progress=progress,
            description=embedding_label(table, column, hashes, len(missing)),
        )
        cached.update(zip(missing, fresh))
    matrix = np.zeros((len(texts), dimensions), dtype=np.float32)
    for row, value in enumerate(hashes):
        if value:
            matrix[row] = cached[value]
    database.write_embedding_cache(root, table, column, model, hashes, matrix)
    return matrix
