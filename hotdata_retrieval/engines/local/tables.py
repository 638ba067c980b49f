"""A table of the local database as the engine holds it open: rows, BM25 indexes, vectors.

Shared by the engine (:mod:`~hotdata_retrieval.engines.local.engine`) and the native
``hybrid_search`` (:mod:`~hotdata_retrieval.engines.local.hybrid`), so neither imports the
other's internals.

Everything a table needs from its version directory is opened here, at once: the Parquet rows
are read into memory and each BM25 index is opened (tantivy maps its files). A table held open
therefore keeps working when a later load replaces its version and removes the directory.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hotdata_retrieval._words import counted
from hotdata_retrieval.analysis import TEXT_ANALYSIS
from hotdata_retrieval.engines._repeated_keys import key_problem
from hotdata_retrieval.engines._vector_norms import (
    OutsideNorms,
    check_cosine_search,
    outside_norms,
    recorded_norms,
)
from hotdata_retrieval.engines.checks import (
    ColumnFacts,
    ValueKind,
    arrow_column_facts,
    arrow_column_kinds,
    arrow_element_kinds,
    arrow_schema_of_text,
    check_filter_values,
    is_vector_type,
)
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local._text_filters import TextFilter, filter_query
from hotdata_retrieval.engines.local.bm25 import Bm25Index
from hotdata_retrieval.engines.local.database import DatabaseError, TableEntry
from hotdata_retrieval.engines.local.masks import passing_rows, reads_as_sql
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, open_hnsw
from hotdata_retrieval.plan.filters import Predicate, filter_shape

if TYPE_CHECKING:
    from hotdata_retrieval.plan.names import TableName
    from hotdata_retrieval.plan.search import SearchPlan

logger = logging.getLogger(__name__)


_NOT_DAMAGE = (KeyboardInterrupt, SystemExit, GeneratorExit)

FILTER_CACHE_BYTES = 32 * 1024 * 1024
"""The most memory the rows of recent filters take per open table (one byte a row each): 32
masks at 1,000,000 rows, 335 at 100,000 (at most :data:`FILTER_CACHE_ENTRIES`)."""

FILTER_CACHE_ENTRIES = 64
"""The most filters whose rows an open table keeps."""

SAMPLE_ROWS = 2048
"""How many rows :meth:`LoadedTable.sampled` reads to estimate a filter's share."""


def _integer_arrays(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column's values (int64, or uint64 for UInt64; 0 where NULL) and whether
    each is present."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    dtype = np.uint64 if pa.types.is_uint64(values.type) else np.int64
    present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    numbers = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=dtype)
    return numbers, present


def _reraise_unless_damage(error: BaseException) -> None:
    """Re-raise ``error`` unless reading a damaged file can raise it. A Rust panic (tantivy
    panics on some truncated index files) surfaces as pyo3's ``PanicException``, which derives
    from ``BaseException``, not ``Exception``, and is not importable by name."""
    if isinstance(error, _NOT_DAMAGE):
        raise error


CHECKED_SHAPES = 256
"""The most plan shapes one open table remembers as passing the engine's checks against it
(:meth:`LoadedTable.passed`)."""


def recorded_vector_norms(
    data: pa.Table, key: str | None, metric: str | None, embedded: set[str]
) -> tuple[tuple[str, str], ...]:
    """A table version's :attr:`~hotdata_retrieval.engines.local.database.TableEntry.
    vector_norms`, from ``data`` (every row; ``key`` its key column, ``metric`` its caller
    vector columns' metric): each vector column the engine did not embed (``embedded``) with
    its record's text (:func:`~hotdata_retrieval.engines._vector_norms.recorded_norms`), which
    :meth:`LoadedTable.outside_norms` reads."""
    return tuple(
        (field.name, recorded_norms(data, field.name, key, metric).to_text())
        for field in data.schema
        if is_vector_type(field.type) and field.name not in embedded
    )


@attrs.define
class LoadedTable:
    """One table held open.

    Attributes:
        entry: its catalog entry (the version it was opened at).
        data: its rows; row ``i`` is rowid ``i`` of its BM25 indexes.
        bm25: text column → its open BM25 index.
        unique: column → whether it is a unique key, computed on first use.
        vector_indexes: vector column → its float32 matrix for exact search, built on first
            use.
        dimensions: vector column → its vectors' length, read on first use (see
            :meth:`vector_dimensions`).
        hnsw: vector column → (its open HNSW index, the distance function it serves).
        key_positions: per tie-break column (``None``: the table's key), each rowid's
            position in its ascending order, computed on first use (see :meth:`tie_order`).
    """

    entry: TableEntry
    data: pa.Table
    bm25: dict[str, Bm25Index]
    unique: dict[str, bool] = attrs.Factory(dict)
    vector_indexes: dict[str, VectorColumnIndex] = attrs.Factory(dict)
    dimensions: dict[str, int] = attrs.Factory(dict)
    hnsw: dict[str, tuple[Any, str]] = attrs.Factory(dict)
    key_positions: dict[str | None, np.ndarray] = attrs.Factory(dict)
    _kinds: tuple[dict[str, ValueKind], dict[str, ValueKind]] | None = None
    _facts: ColumnFacts | None = None
    _filtered: OrderedDict[tuple[Predicate, str], np.ndarray] = attrs.Factory(OrderedDict)
    _filtered_lock: threading.Lock = attrs.Factory(threading.Lock)
    _numbers: dict[str, np.ndarray | None] = attrs.Factory(dict)
    _last_filter: tuple[Predicate, tuple[Predicate, str] | None] | None = None
    _verdicts: dict[tuple[Predicate, str], list[bool | None]] = attrs.Factory(dict)
    _read_as_sql: dict[tuple[Any, ...], bool] = attrs.Factory(dict)
    _sampled: dict[str, tuple[np.ndarray, np.ndarray]] = attrs.Factory(dict)
    _sampled_order: dict[str, np.ndarray] = attrs.Factory(dict)
    _integers: dict[str, tuple[np.ndarray, np.ndarray]] = attrs.Factory(dict)
    _text_filters: dict[tuple[tuple[Predicate, str], str], TextFilter | None] = attrs.Factory(dict)
    _checked_shapes: set[tuple[Any, ...]] = attrs.Factory(set)
    _norms: dict[str, OutsideNorms | None] = attrs.Factory(dict)

    def check_cosine_search(self, plan: SearchPlan, table: TableName) -> None:
        """Refuse a cosine search of a vector column of this table that holds a row a cosine
        search cannot rank (:func:`~hotdata_retrieval.engines._vector_norms.
        check_cosine_search`, the rows as :meth:`outside_norms` says).

        Raises:
            EngineError: naming the table, the column and the row's key.
        """
        check_cosine_search(plan, table, self.outside_norms, self.entry.caller_metric)

    def outside_norms(self, column: str) -> OutsideNorms | None:
        """The rows of vector column ``column`` a cosine search cannot rank
        (:class:`~hotdata_retrieval.engines._vector_norms.OutsideNorms`), as the version's
        catalog entry records them (computed from the rows when it does not know: a catalog
        written before it was recorded); ``None`` for a column the engine embedded (searched
        by cosine, its vectors the embedder's). Once per column."""
        if column in self._norms:
            return self._norms[column]
        recorded = dict(self.entry.vector_norms or ())
        record: OutsideNorms | None = None
        if column not in {vector.name for vector in self.entry.vector_columns}:
            record = OutsideNorms.from_text(recorded.get(column))
            if not record.known:
                record = outside_norms(self.data, column, self.entry.key_column)
        self._norms[column] = record
        return record

    def checked(self, shape: tuple[Any, ...]) -> bool:
        """Whether a plan of ``shape`` (:attr:`~hotdata_retrieval.plan.search.SearchPlan.
        checked_shape`) passed the engine's checks against this table (:meth:`passed`)."""
        return shape in self._checked_shapes

    def passed(self, shape: tuple[Any, ...]) -> None:
        """Remember that a plan of ``shape`` passed the engine's checks against this table
        (an open table never changes): at most :data:`CHECKED_SHAPES` shapes, forgotten all
        at once when full."""
        if len(self._checked_shapes) >= CHECKED_SHAPES:
            self._checked_shapes.clear()
        self._checked_shapes.add(shape)

    def column_kinds(self) -> dict[str, ValueKind]:
        """Each column's :class:`~hotdata_retrieval.engines.checks.ValueKind`, from its Arrow
        type (read once: an open table's schema never changes). The caller must not change
        the mapping."""
        return self._read_kinds()[0]

    def element_kinds(self) -> dict[str, ValueKind]:
        """The kind of each list column's elements (:func:`~hotdata_retrieval.engines.checks.
        arrow_element_kinds`, read once). The caller must not change the mapping."""
        return self._read_kinds()[1]

    def column_facts(self) -> ColumnFacts:
        """The columns' facts that type a filter's values (:func:`~hotdata_retrieval.engines.
        checks.arrow_column_facts`, read once: an open table's schema never changes). The
        caller must not change them."""
        if self._facts is None:
            self._facts = arrow_column_facts(self.data.schema)
        return self._facts

    def _read_kinds(self) -> tuple[dict[str, ValueKind], dict[str, ValueKind]]:
        if self._kinds is None:
            schema = self.data.schema
            columns = arrow_column_kinds(schema)
            self._kinds = (columns, arrow_element_kinds(schema))
        return self._kinds

    def passing_rows(self, predicate: Predicate) -> np.ndarray:
        """The rows ``predicate`` keeps, as :func:`~hotdata_retrieval.engines.local.masks.
        passing_rows` computes them (a read-only boolean array over rowids), remembered for
        the filters used last.

        Agents and applications search one table under the same few filters (a tenant, a
        category, a date range) with query after query; the rows a filter keeps depend only on
        the filter and the table's version, which an open table never changes, so each is
        computed once while it is recent: the filter cache of Lucene's ``LRUQueryCache`` and
        Elasticsearch's node query cache, per table version. At most
        :data:`FILTER_CACHE_ENTRIES` filters and :data:`FILTER_CACHE_BYTES` bytes, least
        recently used first out. A filter is the same filter when it is equal and its
        ``repr`` is too, so values equal across types never share rows (``2**53`` and
        ``2.0**53`` are equal in Python, but an Int64 column compared with the float reads
        ``2**53 + 1`` as ``2**53``).

        Raises:
            as :func:`~hotdata_retrieval.engines.local.masks.passing_rows` (not remembered).
        """
        key = self._filter_key(predicate)
        if key is None:  # a value that cannot be a key: computed every time
            return passing_rows(predicate, self.data)
        with self._filtered_lock:
            known = self._filtered.get(key)
            if known is not None:
                self._filtered.move_to_end(key)
                return known
        rows = self._evaluated(predicate)
        rows.flags.writeable = False
        if rows.nbytes > FILTER_CACHE_BYTES:
            return rows
        # Every mask is one byte a row of this table, so the bytes held are a count of masks
        # (summing them would hash every cached filter again: OrderedDict's values() looks
        # each key up).
        most = min(FILTER_CACHE_ENTRIES, FILTER_CACHE_BYTES // max(1, rows.nbytes))
        with self._filtered_lock:
            self._filtered[key] = rows
            while len(self._filtered) > most:
                self._filtered.popitem(last=False)
        return rows

    def _evaluated(self, predicate: Predicate) -> np.ndarray:
        """The rows ``predicate`` keeps, computed for :meth:`passing_rows`: in NumPy over the
        table's integer columns (:meth:`integers`) when its BM25 indexes translate it
        (:meth:`text_filter`: comparisons, ``BETWEEN``, ``IN`` lists and ``IS NULL`` tests
        of integer columns with integer values, read with the row mask's three-valued logic,
        ``tests/test_text_filters_in_index.py``), else by the row mask's Arrow kernels. A
        range of 100,000 rows costs a quarter of the kernels' comparisons, their bitmaps
        and their unpacking, and the translation is one a filtered text search makes
        anyway."""
        for column in self.bm25:  # one index asked: those of a version hold the same columns
            found = self.text_filter(predicate, column)
            if found is not None:
                return found.keeps(self.integers)
            break
        return passing_rows(predicate, self.data)

    def sampled(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Integer column ``column`` at :data:`SAMPLE_ROWS` rows drawn at random (seeded;
        every row of a smaller table), read once: its values (int64, or uint64 for a UInt64
        column; 0 where NULL) and whether each is present. A filter's share of these rows
        estimates its share of the table within about 2 points at 10% (three deviations of
        a binomial: 3 * sqrt(0.1 * 0.9 / 2048) = 2.0%).

        Raises:
            KeyError: the table has no column ``column``.
        """
        known = self._sampled.get(column)
        if known is None:
            values = self.data.column(column)
            rows = self.data.num_rows
            if rows > SAMPLE_ROWS:
                drawn = np.random.default_rng(rows).choice(rows, SAMPLE_ROWS, replace=False)
                values = values.take(np.sort(drawn))
            known = _integer_arrays(values)
            self._sampled[column] = known
        return known

    def sampled_order(self, column: str) -> np.ndarray:
        """Integer column ``column``'s present values at the :meth:`sampled` rows, sorted
        (read once): a filter's leaf counts the sampled rows it keeps by binary search
        (:func:`~hotdata_retrieval.engines.local._text_filters.filter_query`).

        Raises:
            KeyError: the table has no column ``column``.
        """
        known = self._sampled_order.get(column)
        if known is None:
            values, present = self.sampled(column)
            known = np.sort(values[present])
            known.flags.writeable = False
            self._sampled_order[column] = known
        return known

    def integers(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Integer column ``column``'s every row, as :meth:`sampled` reads its sample (read
        once: 9 bytes a row), for filters tested on a search's hits alone.

        Raises:
            KeyError: the table has no column ``column``.
        """
        known = self._integers.get(column)
        if known is None:
            known = _integer_arrays(self.data.column(column))
            for array in known:
                array.flags.writeable = False
            self._integers[column] = known
        return known

    def rows_of(self, rowids: np.ndarray) -> Callable[[str], tuple[np.ndarray, np.ndarray]]:
        """The rows ``rowids`` of the table's integer columns (:meth:`integers`), in the form
        :meth:`~hotdata_retrieval.engines.local._text_filters.TextFilter.keeps` reads."""

        def rows(column: str) -> tuple[np.ndarray, np.ndarray]:
            numbers, present = self.integers(column)
            return numbers[rowids], present[rowids]

        return rows

    def text_filter(self, predicate: Predicate, column: str) -> TextFilter | None:
        """``predicate`` as a query of text column ``column``'s BM25 index
        (:func:`~hotdata_retrieval.engines.local._text_filters.filter_query`, over
        :meth:`sampled` rows), remembered per filter as :meth:`passing_rows` remembers its
        rows (at most :data:`FILTER_CACHE_ENTRIES`, all forgotten when full): a repeated
        filter is translated and its share estimated once.

        Raises:
            KeyError: the table has no BM25 index of ``column``.
        """
        index = self.bm25[column]
        key = self._filter_key(predicate)
        if key is None:
            return filter_query(
                predicate, index, self.data.schema, self.sampled, self.sampled_order
            )
        remembered = (key, column)
        if remembered in self._text_filters:
            return self._text_filters[remembered]
        found = filter_query(predicate, index, self.data.schema, self.sampled, self.sampled_order)
        if len(self._text_filters) >= FILTER_CACHE_ENTRIES:
            self._text_filters.clear()
        self._text_filters[remembered] = found
        return found

    def check_filter(self, predicate: Predicate) -> None:
        """Refuse a filter value this table's columns cannot be compared with
        (:func:`~hotdata_retrieval.engines.checks.check_filter_values` over its column and
        element kinds); a filter that passed is remembered as :meth:`passing_rows` remembers
        its rows.

        Raises:
            PlanError: as ``check_filter_values``.
        """
        verdicts = self._filter_verdicts(predicate)
        if verdicts is not None and verdicts[0]:
            return
        check_filter_values(predicate, self.column_kinds(), self.element_kinds())
        if verdicts is not None:
            verdicts[0] = True

    def filter_reads_as_sql(self, predicate: Predicate) -> bool:
        """Whether :meth:`passing_rows` keeps exactly the rows a ``WHERE`` of ``predicate``
        keeps (:func:`~hotdata_retrieval.engines.local.masks.reads_as_sql` over this table's
        schema), remembered per filter, and per shape of filter
        (:func:`~hotdata_retrieval.plan.filters.filter_shape`: the answer reads the columns and
        the values' types, never the values), so a filter whose values are new in every call
        is not read again (about 25 µs of a search, measured on the filtered benchmark's
        table; at most :data:`FILTER_CACHE_ENTRIES` shapes, all forgotten when full)."""
        verdicts = self._filter_verdicts(predicate)
        if verdicts is None:
            return reads_as_sql(predicate, self.data.schema)
        if verdicts[1] is None:
            shape = filter_shape(predicate)
            try:
                known = None if shape is None else self._read_as_sql.get(shape)
            except TypeError:  # a field that cannot be hashed
                shape = known = None
            if known is None:
                known = reads_as_sql(predicate, self.data.schema)
                if shape is not None:
                    if len(self._read_as_sql) >= FILTER_CACHE_ENTRIES:
                        self._read_as_sql.clear()
                    self._read_as_sql[shape] = known
            verdicts[1] = known
        return bool(verdicts[1])

    def _filter_verdicts(self, predicate: Predicate) -> list[bool | None] | None:
        """What this table has found of ``predicate``: ``[checked, reads as SQL]`` (each
        ``None`` or ``False`` until found true), or ``None`` for a filter that cannot be a
        key. At most :data:`FILTER_CACHE_ENTRIES` filters (all forgotten when full)."""
        key = self._filter_key(predicate)
        if key is None:
            return None
        verdicts = self._verdicts.get(key)
        if verdicts is None:
            if len(self._verdicts) >= FILTER_CACHE_ENTRIES:
                self._verdicts.clear()
            verdicts = self._verdicts.setdefault(key, [False, None])
        return verdicts

    def _filter_key(self, predicate: Predicate) -> tuple[Predicate, str] | None:
        """The key a filter is remembered by: the filter and its ``repr`` (see
        :meth:`passing_rows`), ``None`` when it cannot be hashed. The last filter's key is
        kept, so one search's checks, verdicts and rows make one ``repr``."""
        last = self._last_filter
        if last is not None and last[0] is predicate:
            return last[1]
        try:
            key: tuple[Predicate, str] | None = (predicate, repr(predicate))
            hash(key)
        except TypeError:
            key = None
        self._last_filter = (predicate, key)
        return key

    def rows_at(self, columns: Sequence[str], rowids: np.ndarray) -> list[dict[str, Any]]:
        """Rows ``rowids`` (int64 rowids, in the order given) of ``columns``, one mapping of
        column name to value each, the values ``pyarrow.Table.to_pylist`` gives."""
        if not columns:
            return [{} for _ in range(len(rowids))]
        values = [self.values_at(column, rowids) for column in columns]
        return [dict(zip(columns, row)) for row in zip(*values)]

    def values_at(self, column: str, rowids: np.ndarray) -> list[Any]:
        """Column ``column``'s values at ``rowids`` (int64, in the order given), as
        ``pyarrow.Array.to_pylist`` gives them.

        A column of integers or floats without NULL is read from a NumPy copy of it, made on
        first use (a few rows of a page cost less through NumPy than through an Arrow
        ``take``); other columns are taken from the Arrow rows.
        """
        if column not in self._numbers:
            values = self.data.column(column)
            kind = values.type
            numeric = (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and not (
                pa.types.is_float16(kind)
            )
            numbers = None
            if numeric and values.null_count == 0:
                numbers = np.asarray(values.to_numpy())
                numbers.flags.writeable = False
            self._numbers[column] = numbers
        numbers = self._numbers[column]
        if numbers is not None:
            result: list[Any] = numbers[rowids].tolist()
            return result
        taken: list[Any] = self.data.column(column).take(rowids).to_pylist()
        return taken

    def vector_index(self, column: str) -> VectorColumnIndex:
        """The search-ready form of vector column ``column`` (built on first use), with its
        HNSW index when the table has one.

        Raises:
            DimensionMismatchError: the column's vectors differ in length.
        """
        index = self.vector_indexes.get(column)
        if index is None:
            hnsw, function = self.hnsw.get(column, (None, ""))
            index = VectorColumnIndex(self.data.column(column), hnsw=hnsw, hnsw_metric=function)
            self.vector_indexes[column] = index
        return index

    def vector_dimensions(self, column: str) -> int:
        """The length of vector column ``column``'s vectors: the first non-NULL row's (the
        load checked that every row has the same), or with none the list size of a
        fixed-size list column, else 0 (a column with no vector has no length to check a
        query against). Read without building the search matrix, once per column.

        Raises:
            KeyError: the table has no column ``column``.
        """
        known = self.dimensions.get(column)
        if known is None:
            values = self.data.column(column)
            known = int(getattr(values.type, "list_size", 0) or 0)
            for chunk in values.chunks:
                if chunk.null_count < len(chunk):
                    lengths = pc.drop_null(pc.list_value_length(chunk))
                    known = int(lengths[0].as_py())
                    break
            self.dimensions[column] = known
        return known

    def tie_order(self, key: str | None = None) -> np.ndarray:
        """Each rowid's position (int64) in ascending order of ``key`` (default the table's
        key) — numbers by value, text and bytes by byte order, as SQL's ``ORDER BY <key>
        ASC`` sorts them — or the rowid itself when the table was loaded without a key and
        none is given. A search whose plan keys rows by another unique column than the
        table's key passes it (``SearchPlan.key_column``), so its ties are that column's
        order, as a store's ``ORDER BY <raw score>, <key>`` has them.

        ``bm25_search`` and ``vector_search`` cut a tie at their k by it, so the k rows they
        keep are the first k of ``ORDER BY <raw score>, <key> ASC``, whatever k is: pages of
        one branch (k = limit + offset) are then slices of one ranking, and a fusion's depth
        cut keeps the tied rows of lowest key, as the native ``hybrid_search`` does (R7).
        """
        if key is not None:
            # a column's order computed before (only a column's name is kept under its own):
            # without pyarrow's list of column names, built anew on each read
            known = self.key_positions.get(key)
            if known is not None:
                return known
        if key is None or key not in self.data.column_names:
            key = self.entry.key_column
        positions = self.key_positions.get(key)
        if positions is None:
            if key is None or key not in self.data.column_names:
                positions = np.arange(self.data.num_rows, dtype=np.int64)
            else:
                values = self.data.column(key)
                if pa.types.is_float16(values.type):  # Arrow ranks no float16: float32 holds it
                    values = values.cast(pa.float32())
                ranks = pc.rank(values, sort_keys="ascending", tiebreaker="first")
                positions = np.asarray(ranks.to_numpy(), dtype=np.int64)
            self.key_positions[key] = positions
        return positions

    def is_unique(self, column: str) -> bool:
        """Whether ``column`` can be a key: no NULL, no NaN and no value twice, as SQL's ``=``
        compares them (computed once; see :func:`key_problem`)."""
        known = self.unique.get(column)
        if known is None:
            known = key_problem(self.data.column(column)) is None
            self.unique[column] = known
        return known


def read_rows(path: Path) -> pa.Table:
    """A version's rows, read from its Parquet file.

    Decoding a list column (a vector column) allocates several times the column's size in
    temporary buffers, which the Arrow memory pool (mimalloc by default) keeps resident
    after they are freed: at 100,000 x 384 float32 vectors (146 MiB), 920 MiB over the
    process's baseline after the read, 255 MiB once the pool returns its unused memory
    (``MemoryPool.release_unused``, about 3 ms), which it is asked to here.

    A float32 vector column without NULL rows is read a few MiB at a time into one
    ``(rows, dimensions)`` float32 matrix, which the returned column views in place
    (:func:`_vector_column`): Parquet hands a column back in several chunks, and the search
    matrix of such a column was a second copy beside the table's (3.34x the vectors resident
    at 1M rows), while decoding the whole column at once held all its temporaries together.
    The file is read through a buffered stream (:data:`_STREAM_BUFFER_BYTES`) without
    pre-buffering: pyarrow's reader otherwise reads a row group's whole column chunk into
    memory before decoding it, a second copy of the vectors while the matrix fills (peak 5.0x
    the vectors over the baseline at 100,000 rows and 2.3x at 1,000,000, against 1.5x and
    1.08x streamed in batches of :data:`_VECTOR_BATCH_BYTES`; ``benchmarks/
    bench_open_memory.py``).

    Raises:
        as ``pyarrow.parquet.read_table``.
    """
    parquet = pq.ParquetFile(path, buffer_size=_STREAM_BUFFER_BYTES, pre_buffer=False)
    schema = parquet.schema_arrow
    vectors = [field.name for field in schema if _float32_lists(field.type)]
    if not vectors:
        data = _as_written(pq.read_table(path), parquet)
        pa.default_memory_pool().release_unused()
        return data
    others = [name for name in schema.names if name not in vectors]
    read = parquet.read(columns=others) if others else None
    columns = []
    for field in schema:
        if field.name in vectors:
            columns.append(_vector_column(parquet, field))
        else:
            assert read is not None
            columns.append(read.column(field.name))
        pa.default_memory_pool().release_unused()
    return _as_written(pa.Table.from_arrays(columns, schema=schema), parquet)


def _as_written(data: pa.Table, parquet: pq.ParquetFile) -> pa.Table:
    """``data`` (read from ``parquet``) with each timestamp, date and time column as the Arrow
    type it was written with. Parquet has no unit of seconds and no ``date64``, so pyarrow
    reads a ``timestamp[s]`` column back as ``timestamp[ms]``, a ``time32[s]`` as
    ``time32[ms]`` and a ``date64`` as ``date32`` (pyarrow 26), though the Arrow schema it
    writes into the file's metadata (``ARROW:schema``, base64 of the IPC schema) records
    them; the values convert exactly."""
    recorded = (parquet.metadata.metadata or {}).get(b"ARROW:schema")
    written = arrow_schema_of_text(recorded) if recorded is not None else None
    if written is None:
        return data
    for position, field in enumerate(data.schema):
        index = written.get_field_index(field.name)
        kind = written.field(index).type if index >= 0 else field.type
        temporal = pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind)
        if temporal and kind != field.type:
            data = data.set_column(
                position, field.with_type(kind), data.column(position).cast(kind)
            )
    return data


def _float32_lists(kind: pa.DataType) -> bool:
    return bool(
        (pa.types.is_list(kind) or pa.types.is_large_list(kind))
        and pa.types.is_float32(kind.value_type)
    )


_STREAM_BUFFER_BYTES = 1 << 20
"""Bytes of a Parquet file read at a time when a table with vector columns is opened (see
:func:`read_rows`)."""

_VECTOR_BATCH_BYTES = 4 << 20
"""About how many bytes of a vector column's values are decoded at a time: the decoder's
temporaries (the values, and a repetition and a definition level per value) are a few times
a batch, and a batch is copied into the matrix and let go before the next."""

_VECTOR_BATCH_ROWS = 65_536
"""The most rows of a vector column decoded at a time."""


def _vector_batch_rows(parquet: pq.ParquetFile, field: pa.Field) -> int:
    """Rows of vector column ``field`` that hold about :data:`_VECTOR_BATCH_BYTES` of float32
    values, from the file's metadata (its values per row), at most :data:`_VECTOR_BATCH_ROWS`."""
    metadata = parquet.metadata
    leaves = [
        index
        for index in range(metadata.num_columns)
        # a name holding dots may count another column's values too: smaller batches only
        if metadata.schema.column(index).path.startswith(f"{field.name}.")
    ]
    values = sum(
        max(0, metadata.row_group(group).column(index).num_values)
        for group in range(metadata.num_row_groups)
        for index in leaves
    )
    per_row = 4 * max(1, -(-values // max(1, metadata.num_rows)))
    return max(1, min(_VECTOR_BATCH_ROWS, _VECTOR_BATCH_BYTES // int(per_row)))


def _vector_column(parquet: pq.ParquetFile, field: pa.Field) -> pa.ChunkedArray:
    """Vector column ``field`` of ``parquet``, :func:`_vector_batch_rows` rows at a time:
    into one float32 matrix viewed as a single-chunk list column when every row holds a
    vector of one length (the rows a load writes), else as the batches come."""
    rows = parquet.metadata.num_rows
    matrix: np.ndarray | None = None
    chunks: list[pa.Array] = []
    start = 0
    batch_rows = _vector_batch_rows(parquet, field)
    batches = parquet.iter_batches(batch_size=batch_rows, columns=[field.name])
    for number, batch in enumerate(batches):
        chunk = batch.column(0)
        bounds = pc.min_max(pc.list_value_length(chunk)).as_py()
        uniform = chunk.null_count == 0 and bounds["min"] == bounds["max"]
        if number == 0 and uniform and bounds["min"] and rows * bounds["min"] < 2**31:
            matrix = np.empty((rows, bounds["min"]), dtype=np.float32)
        if matrix is not None and (not uniform or bounds["min"] != matrix.shape[1]):
            chunks = [_as_lists(matrix[:start], field.type)] if start else []
            matrix = None  # an odd row group: the column stays as Parquet gives it
        if matrix is not None:
            values = pc.list_flatten(chunk).to_numpy(zero_copy_only=False)
            matrix[start : start + len(chunk)] = values.reshape(len(chunk), -1)
        else:
            chunks.append(chunk)
        start += len(chunk)
    if matrix is not None:
        chunks = [_as_lists(matrix, field.type)]
    return pa.chunked_array(chunks, type=field.type)


def _as_lists(matrix: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``matrix``'s rows as a list array of type ``kind`` (a list or large list of float32)
    over the matrix's own memory."""
    rows, dimensions = matrix.shape
    large = pa.types.is_large_list(kind)
    offsets = np.arange(
        0, (rows + 1) * dimensions, dimensions, dtype=np.int64 if large else np.int32
    )
    make = pa.LargeListArray if large else pa.ListArray
    return make.from_arrays(pa.array(offsets), pa.array(matrix.reshape(-1)), type=kind)


def open_table(root: Path, entry: TableEntry, data: pa.Table | None = None) -> LoadedTable:
    """Open ``entry``'s version: its rows (``data`` when the caller has them in memory) and its
    BM25 indexes.

    Raises:
        DatabaseError: a file is missing, truncated or does not match the catalog; the message
            names the file. ``FileNotFoundError`` when the version directory itself is gone
            (another writer replaced the table: read the catalog again).
    """
    directory = database.version_directory(root, entry)
    if not directory.is_dir():
        raise FileNotFoundError(directory)
    if data is None:
        path = directory / "data.parquet"
        try:
            data = read_rows(path)
        except FileNotFoundError:
            raise DatabaseError(f"table '{entry.name}': {path} is missing") from None
        except BaseException as error:  # ArrowInvalid, OSError: any damage names the file
            _reraise_unless_damage(error)
            raise DatabaseError(
                f"table '{entry.name}': cannot read {path}: {' '.join(str(error).split())}"
            ) from None
        if data.num_rows != entry.rows or tuple(data.column_names) != entry.columns:
            raise DatabaseError(
                f"table '{entry.name}': {path} holds {counted(data.num_rows, 'row')} of "
                f"{', '.join(data.column_names)}; the catalog records "
                f"{counted(entry.rows, 'row')} of "
                f"{', '.join(entry.columns)}"
            )
    hnsw: dict[str, tuple[Any, str]] = {}
    search = entry.hnsw_settings.expansion_search if entry.hnsw_settings else None
    for ann in entry.ann_indexes:
        location = database.ann_index_path(directory, ann.column)
        try:
            hnsw[ann.column] = (open_hnsw(location, expansion_search=search), ann.function)
        except ImportError:
            logger.warning(
                "table %r has an HNSW index but usearch is not installed: exact search",
                entry.name,
            )
        except BaseException as error:  # usearch raises RuntimeError/ValueError for any damage
            _reraise_unless_damage(error)
            raise DatabaseError(
                f"table '{entry.name}': cannot open the HNSW index {location}: "
                f"{' '.join(str(error).split())}"
            ) from None
    indexes: dict[str, Bm25Index] = {}
    for column in entry.text_indexes:
        location = directory / "bm25" / column
        try:
            indexes[column] = Bm25Index(location)
        except BaseException as error:  # tantivy raises ValueError, or panics, for any damage
            _reraise_unless_damage(error)
            raise DatabaseError(
                f"table '{entry.name}': cannot open the BM25 index {location}: "
                f"{' '.join(str(error).split())}"
            ) from None
    if entry.text_indexes and entry.text_analysis != TEXT_ANALYSIS:
        logger.warning(
            "table %r was indexed by another text analysis (%s) than this release's: its "
            "BM25 terms differ from its queries' (stop words, for one); load it again to "
            "index it by the current analysis",
            entry.name,
            entry.text_analysis or "an earlier release's, with Lucene's English stop words",
        )
    return LoadedTable(entry=entry, data=data, bm25=indexes, hnsw=hnsw)
