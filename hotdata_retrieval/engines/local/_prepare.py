"""What a load of the local engine is given, checked and normalised before anything is embedded
or written: column names lower-cased, a unique key, vector columns whose every distance is
defined, text columns that are text, and the vector index asked for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval._words import counted
from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.engines._repeated_keys import positive_zero
from hotdata_retrieval.engines.checks import (
    check_cosine_norms,
    check_key_column,
    check_no_nul,
    check_no_null_type,
    check_reserved_columns,
    check_temporal_values_kept,
    column_names,
    is_vector_type,
    rows_table,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hnsw import (
    HnswSettings,
    HnswSettingsError,
    VectorIndexKind,
    require_vectors_to_index,
)
from hotdata_retrieval.engines.local.loading import normalize_text_types
from hotdata_retrieval.engines.local.masks import true_rows
from hotdata_retrieval.errors import PlanError, row_name
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.search import DistanceMetric
from hotdata_retrieval.plan.values import FLOAT32_MAX

BUILT_VECTOR_INDEXES: tuple[str, ...] = tuple(kind.value for kind in VectorIndexKind)
"""The vector indexes the local engine builds: every kind of the registry
(:class:`~hotdata_retrieval.engines.hnsw.VectorIndexKind`; HNSW through usearch)."""


@attrs.frozen(kw_only=True)
class TableLoad:
    """One table of a :meth:`~hotdata_retrieval.engines.local.LocalEngine.load_tables` call.

    Attributes:
        name: a bare table name (the engine's catalog and schema are implied).
        data: the rows, as an Arrow table.
        key_column: the unique key column (checked), or ``None``.
        text_columns: string columns to index for ``bm25_search``.
        embed_columns: string columns to embed into ``<column>_embedding`` for
            ``vector_search`` (needs the engine's embedder).
        vector_index: ``"hnsw"``: also build an approximate (HNSW, usearch) index of every
            vector column, used for unfiltered nearest-neighbour queries of its metric; default
            ``None``: exact search only.
        vector_metric: the metric the HNSW index of a caller's vector column serves
            (``cosine``, ``l2`` or ``dot``); embedded columns' indexes serve cosine.
        hnsw_settings: how the HNSW indexes are built and searched (connectivity, build and
            search expansion, storage); needs ``vector_index="hnsw"``. Default ``None``: the
            measured :class:`~hotdata_retrieval.engines.hnsw.HnswSettings`. Recorded with the
            table version (the catalog's ``hnsw_settings``), so ``upsert_rows`` and
            ``delete_rows`` rebuild the indexes with the same settings.
    """

    name: str
    data: pa.Table
    key_column: str | None = "id"
    text_columns: Sequence[str] = ()
    embed_columns: Sequence[str] = ()
    vector_index: str | None = None
    vector_metric: str = "cosine"
    hnsw_settings: HnswSettings | None = None


@attrs.frozen
class Prepared:
    """A :class:`TableLoad` checked and normalised: what is written (``hnsw_settings`` is
    ``None`` exactly when no HNSW index is built)."""

    name: str
    data: pa.Table
    key: str | None
    texts: tuple[str, ...]
    embeds: tuple[str, ...]
    hnsw_function: str | None
    hnsw_settings: HnswSettings | None = None
    vector_metric: str | None = None


def prepare(load: TableLoad, embedder: Any) -> Prepared:
    """``load`` checked and normalised (module docstring).

    Raises:
        EngineError: a bad table name, a missing or non-text column, a duplicated or NULL key,
            a vector column with an undefined distance, embed columns without an embedder, an
            unknown vector index or metric, or usearch missing for one.
        HnswSettingsError: ``hnsw_settings`` that are not :class:`~hotdata_retrieval.engines.
            hnsw.HnswSettings`, given without an HNSW index, or with int8 storage for an L2 or
            dot-product index.
    """
    table = normalize_identifier(load.name, label="table")
    if any(character in table for character in "./\\") or table.strip() != table:
        raise EngineError(
            f"table name {load.name!r} may not contain '.', '/' or '\\' or surrounding "
            "spaces: it names a table of the session and a directory of the database"
        )
    given = rows_table(load.data)
    data = _positive_zeros(normalize_text_types(given.rename_columns(column_names(given.schema))))
    if (
        load.text_columns
        or load.embed_columns
        or any(is_vector_type(field.type) for field in data.schema)
    ):
        check_reserved_columns(data.column_names)
    check_no_null_type(data)
    check_no_nul(data)
    key = (
        None
        if load.key_column is None
        else normalize_identifier(load.key_column, label="key column")
    )
    if key is not None:
        _check_key(data, key)
    check_temporal_values_kept(data, store="the local engine")
    try:
        metric = DistanceMetric.parse(load.vector_metric)
    except PlanError as error:
        raise EngineError(str(error)) from None
    caller_vectors = [
        name for name in data.column_names if is_vector_type(data.schema.field(name).type)
    ]
    for name in caller_vectors:
        check_vector_column(data, name, key)
        check_cosine_norms(data, name, metric)
    texts = tuple(normalize_identifier(c, label="text column") for c in load.text_columns)
    embeds = tuple(normalize_identifier(c, label="embed column") for c in load.embed_columns)
    for column in (*texts, *embeds):
        _check_text_column(data, column)
    if embeds and embedder is None:
        raise EngineError("embed_columns need an embedder: LocalEngine(embedder=...)")
    hnsw_function = None
    settings = load.hnsw_settings
    if settings is not None and not isinstance(settings, HnswSettings):
        raise HnswSettingsError(
            f"hnsw_settings must be HnswSettings, got {settings!r}",
            setting="hnsw_settings",
            value=settings,
        )
    if settings is not None and load.vector_index is None:
        raise HnswSettingsError(
            "hnsw_settings are for an HNSW index: pass vector_index='hnsw' too",
            setting="hnsw_settings",
            value=settings,
        )
    if load.vector_index is not None:
        if load.vector_index not in BUILT_VECTOR_INDEXES:
            built = ", ".join(repr(kind) for kind in BUILT_VECTOR_INDEXES)
            raise EngineError(
                f"unknown vector index {load.vector_index!r}; the local engine builds "
                f"{built} (or none: exact search)"
            )
        require_vectors_to_index(
            table,
            [*embeds, *(f.name for f in data.schema if is_vector_type(f.type))],
        )
        try:
            import usearch  # noqa: F401
        except ImportError:
            raise EngineError(
                "an HNSW index needs usearch: pip install 'hotdata-retrieval[ann]'"
            ) from None
        hnsw_function = HOTDATA.distance_function(metric)
        settings = settings or HnswSettings()
        settings.storage_for(metric)  # int8 storage is refused for L2 and dot product
    return Prepared(
        name=table,
        data=data,
        key=key,
        texts=texts,
        embeds=embeds,
        hnsw_function=hnsw_function,
        hnsw_settings=settings,
        vector_metric=metric.value if caller_vectors else None,
    )


def check_vector_lengths(prepared: Prepared) -> None:
    """Refuse a table being made (a load, a first write) with a vector column of the
    caller's that holds no vector and whose type gives no length, as every engine refuses
    it (:func:`~hotdata_retrieval.engines.checks.loaded_vector_dimensions`). Not a table
    rewritten by a row change: one whose rows were all deleted keeps its recorded length.

    Raises:
        EngineError: naming the column.
    """
    data = prepared.data
    for field in data.schema:
        if is_vector_type(field.type) and data.column(field.name).null_count == data.num_rows:
            from hotdata_retrieval.engines.checks import loaded_vector_dimensions

            loaded_vector_dimensions(data, field.name)


def _positive_zeros(data: pa.Table) -> pa.Table:
    """``data`` with every ``-0.0`` of a float column stored as ``0.0``. SQL's ``=`` takes
    them for one value, but DataFusion answers an ``IN`` list of four values or more with a
    hash lookup, where their bits differ: ``x IN (0.0, 7.0, 8.0, 9.0)`` missed a stored
    ``-0.0`` that ``x = 0.0`` finds (filter literals are written ``0.0`` too,
    :func:`~hotdata_retrieval.plan.values.check_literal`). Vector columns are left as they
    are: a zero's sign changes no distance."""
    for position, field in enumerate(data.schema):
        if pa.types.is_floating(field.type):
            data = data.set_column(position, field, positive_zero(data.column(position)))
    return data


def _check_key(data: pa.Table, key: str) -> None:
    if key not in data.column_names:
        raise EngineError(f"key column '{key}' not found; columns: {', '.join(data.column_names)}")
    check_key_column(data.column(key), key, loading=True)


def check_vector_column(data: pa.Table, column: str, key: str | None) -> None:
    """A vector column (a list of floating-point numbers) must hold, in every non-NULL row, a
    non-empty vector of finite numbers within Float32's range, none NULL, all of one length:
    otherwise a distance is undefined (NaN or infinity would rank first or last at random, a
    Float64 value beyond Float32's range is an infinity once the distance functions convert
    it, a length mismatch fails every search), so the load is refused naming the row. A NULL
    row is allowed: it has no distance and is never a candidate."""
    kind = data.schema.field(column).type
    if not is_vector_type(kind):
        return
    values = data.column(column).combine_chunks()
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(valid)
    if not rows.size:
        return

    def name_row(row: int) -> str:
        if key is None:
            return row_name(row)
        return f"{row_name(row)} ({key} = {data.column(key)[row].as_py()!r})"

    empty = rows[lengths[rows] == 0]
    if empty.size:
        raise EngineError(f"column '{column}': {name_row(int(empty[0]))} holds an empty vector")
    other = rows[lengths[rows] != lengths[rows[0]]]
    if other.size:
        raise EngineError(
            f"column '{column}': {name_row(int(other[0]))} has "
            f"{counted(int(lengths[other[0]]), 'dimension')}, {name_row(int(rows[0]))} has "
            f"{int(lengths[rows[0]])}; every vector of a column must have the same length"
        )
    components = pc.list_flatten(values)
    if components.null_count:
        missing = true_rows(pc.is_null(components)).reshape(-1, int(lengths[rows[0]]))
        row = int(rows[int(np.argmax(missing.any(axis=1)))])
        raise EngineError(
            f"column '{column}': {name_row(row)} holds a NULL component; a distance to it "
            "would be undefined (a row without a vector is NULL as a whole)"
        )
    # The values in place (a float column without NULLs converts without a copy), tested in
    # blocks of rows so no temporary holds more than _CHECK_BLOCK values.
    flat = components.to_numpy(zero_copy_only=False).reshape(-1, int(lengths[rows[0]]))
    bad = _first_failing_row(flat, np.isfinite)
    if bad is not None:
        raise EngineError(
            f"column '{column}': {name_row(int(rows[bad]))} holds NaN or an infinite value; a "
            "distance to it would be undefined"
        )
    if not pa.types.is_float64(components.type):
        return  # Float16 and Float32 values are within Float32's range by construction
    bad = _first_failing_row(flat, lambda block: np.abs(block) <= FLOAT32_MAX)
    if bad is not None:
        raise EngineError(
            f"column '{column}': {name_row(int(rows[bad]))} holds a value beyond Float32's "
            f"range (magnitude at most {FLOAT32_MAX:.6g}); distances are computed on Float32 "
            "vectors, where it would be an infinity"
        )


_CHECK_BLOCK = 1 << 22
"""Values a load check tests at once (4 MiB of booleans): the check's temporaries stay
bounded whatever the column's size."""


def _first_failing_row(matrix: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> int | None:
    """The first row of ``matrix`` (rows, dimensions) where ``test`` (elementwise, to
    booleans) is false for some value, or ``None``; tested a block of rows at a time."""
    step = max(1, _CHECK_BLOCK // max(1, matrix.shape[1]))
    for start in range(0, matrix.shape[0], step):
        passed = test(matrix[start : start + step]).all(axis=1)
        if not passed.all():
            return start + int(np.argmin(passed))
    return None


def _check_text_column(data: pa.Table, column: str) -> None:
    if column not in data.column_names:
        raise EngineError(f"column '{column}' not found; columns: {', '.join(data.column_names)}")
    kind = data.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise EngineError(f"column '{column}' holds {kind}, not text")
