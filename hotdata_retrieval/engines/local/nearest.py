"""Nearest-neighbour search over one vector column at the speed of one BLAS product.

The distance UDFs (:mod:`~hotdata_retrieval.engines.local.distance`) compute in float64 from
the stored float32 vectors, row by row as DataFusion hands them over; that is the reference
arithmetic every path must agree with bit for bit. :class:`VectorColumnIndex` reaches the same
top-k far faster:

1. the column is held once as a C-contiguous float32 matrix (a view of the Arrow buffer when
   the column is float32 without NULL rows; cosine scales by cached row norms instead of
   keeping a row-normalised copy), so a query costs one float32 matrix-vector product (BLAS
   ``sgemv``) and a selection of the k best (unfiltered cosine over rows that all have a
   vector: a multiplication in place and a sampled threshold, :func:`_screen_cosine`;
   otherwise a partial sort, ``numpy.argpartition``);
2. every row whose float32 distance could still be among the k nearest — the k best plus any
   within a tolerance far wider than float32 rounding — is re-scored with the UDFs' own float64
   kernel, and the final order is (float64 distance, rowid), so the rows *and* their distances
   equal an exact float64 scan's.
3. a row the float32 screen cannot rank — one whose squared norm overflows or underflows
   Float32 (components beyond about 1.8e19, or all below about 1e-19), or whose screened
   distance is not finite — is always re-scored in float64, and so is every row when the query
   itself is such a vector: a huge but finite vector never drops a row from the answer or
   reorders it.

A filter is a boolean mask over rowids applied before the bound. Rows with a NULL vector are
never candidates. Each float32 product runs under the process's BLAS gate
(:mod:`~hotdata_retrieval.engines.local._blas`): on every core alone, on one BLAS thread
while searches overlap.

An optional HNSW index (usearch, the library the Hotdata engine's vector index is built on:
engine contract §2) serves unfiltered queries of its metric approximately; its candidates are
re-scored in float64 too. How it is built and searched is a
:class:`~hotdata_retrieval.engines.hnsw.HnswSettings`.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.engines.hnsw import FLOAT16_MAX, HnswSettings, HnswSettingsError
from hotdata_retrieval.engines.local._blas import blas_product
from hotdata_retrieval.engines.local.distance import (
    COSINE_DISTANCE,
    DISTANCE_KERNELS,
    DimensionMismatchError,
    broadcast_row,
    cosine_of_normed,
    float64_row_norms,
    query_norm,
)
from hotdata_retrieval.errors import row_name
from hotdata_retrieval.plan.search import DistanceMetric

_TOLERANCE = 1e-4
"""Relative float32 error budget when picking rows to re-score in float64. float32 dot products
of 384-d unit vectors err by about 1e-6; the margin is a hundred times wider."""

_FLOAT32_ZERO = np.float32(0.0)
"""Added to a search's Float32 distances: -0.0 becomes 0.0, as
:func:`~hotdata_retrieval.engines.local.distance.float32_distances` makes it (no overflow
can happen: a finite value plus zero)."""

_FLOAT32_TINY = float(np.finfo(np.float32).tiny)
"""Float32's smallest normal number: a squared norm below it has lost its precision."""

_FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Float32's largest finite number: a squared norm above it overflows."""

SUBSET_CACHE_SHARE = 4
"""The gathered rows of a column's recent selective filters take at most a quarter of its
matrix's bytes (:meth:`VectorColumnIndex._subset`)."""

_SUBSET_FACT_BYTES = 4 + 4 + 1 + 1 + 1 + 4
"""The most bytes per kept row of a cached subset's per-row facts: float32 norms, float32
squared norms, the non-zero flags, the unscreenable flags for cosine and for the other
metrics, float32 cosine reciprocals (:class:`_Subset`)."""

SELECTIVE_MASK_FRACTION = 8
"""A filter that keeps at most 1 row in this many is screened over its rows alone: only they
enter the float32 product (then the float64 re-score of the screened candidates), instead of
screening every row and masking afterwards. Past 1/8 reading the kept rows scattered across
the matrix saves little over the one product of every row."""

GATHER_BLOCK_BYTES = 256 * 1024
"""A first-seen filter's kept rows are copied into a buffer of about this many bytes, a block
at a time, and each block is multiplied while it is still in the core's cache
(:func:`_kept_product`): the filter's rows are read once, never gathered into a copy of their
whole size that the product then reads again from memory. Measured on the engine benchmark's
384-d vectors at 10% selectivity: a whole gather then one product costs 0.3x to 0.7x the
product of every row, blocks of 128 to 256 rows 0.06x to 0.5x (a loaded 2-core machine)."""

SEEN_FILTERS = 16
"""How many first-seen filters a column remembers having screened (by their read-only mask's
identity): a filter's rows are gathered and kept (:meth:`VectorColumnIndex._subset`) on its
second search, not its first, so a filter used once never pays for a copy of its rows."""

_USEARCH_METRICS = {
    DistanceMetric.COSINE: "cos",
    DistanceMetric.L2: "l2sq",
    DistanceMetric.DOT: "ip",
}

HNSW_METRICS = {
    HOTDATA.distance_function(metric): name for metric, name in _USEARCH_METRICS.items()
}
"""usearch metric per distance function (the Hotdata index's ``Cos``/``L2sq``/``IP``)."""

USEARCH_STORAGE = {"float32": "f32", "float16": "f16", "int8": "i8"}
"""usearch's scalar kind per :attr:`HnswSettings.storage <hotdata_retrieval.engines.hnsw.
HnswSettings.storage>`."""


class _Subset:
    """The rows a selective filter keeps (:meth:`VectorColumnIndex._subset`): their rowids,
    their vectors gathered into one matrix (``None``: gathered by each search), and the
    column's per-row arrays at those rows, each computed on first use."""

    __slots__ = ("_rows", "cosine_reciprocals", "mask", "per_row", "rowids")

    def __init__(self, mask: np.ndarray, rowids: np.ndarray, rows: np.ndarray | None) -> None:
        self.mask = mask
        self.rowids = rowids
        self._rows = rows
        self.per_row: dict[str, np.ndarray] = {}
        # the kept rows' reciprocal norms for the cosine screen (None: not computed yet;
        # False: a kept row the screen cannot rank): see VectorColumnIndex._screen_kept_cosine
        self.cosine_reciprocals: np.ndarray | bool | None = None

    @property
    def cached(self) -> bool:
        """Whether the rows are gathered and kept for later searches."""
        return self._rows is not None

    def gathered(self, matrix: np.ndarray) -> np.ndarray:
        """The kept rows of ``matrix`` (the column's), in rowid order."""
        return np.take(matrix, self.rowids, axis=0) if self._rows is None else self._rows

    def product(self, matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """The kept rows of ``matrix`` (the column's) times float32 ``vector``, in rowid
        order: one product over the gathered rows, or block by block
        (:func:`_kept_product`) when they are not kept."""
        if self._rows is not None:
            return np.asarray(self._rows @ vector)
        return _kept_product(matrix, self.rowids, vector)

    def of_rows(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The kept rows' values of the column's per-row array ``name``, which ``compute``
        returns whole."""
        values = self.per_row.get(name)
        if values is None:
            values = compute()[self.rowids]
            if self.cached:  # kept with the gathered rows
                self.per_row[name] = values
        return values

    @property
    def nbytes(self) -> int:
        """The most bytes this subset holds beyond the column's own arrays: its rowids, its
        gathered rows and room for every per-row fact a search may add to it
        (:data:`_SUBSET_FACT_BYTES` a row), so the budget it is admitted under holds as it
        grows (and this never reads what another thread is adding)."""
        if self._rows is None:
            return 0
        return self._rows.nbytes + self.rowids.nbytes + self.rowids.size * _SUBSET_FACT_BYTES


class VectorColumnIndex:
    """One vector column of one table version, ready for exact (and optional HNSW) search.

    Args:
        vectors: the column, a list array of floats; NULL rows have no vector.
        hnsw: a loaded usearch index over the same rows (keys = rowids), or ``None``; a search
            asks it for at least its ``expansion_search`` rows.
        hnsw_metric: the distance function the HNSW index serves.

    Raises:
        DimensionMismatchError: rows of different lengths.
    """

    def __init__(
        self, vectors: pa.Array | pa.ChunkedArray, *, hnsw: Any = None, hnsw_metric: str = ""
    ) -> None:
        if isinstance(vectors, pa.ChunkedArray):
            # One chunk is used as is: combine_chunks copies even a single chunk.
            vectors = vectors.chunk(0) if vectors.num_chunks == 1 else vectors.combine_chunks()
        valid = np.asarray(vectors.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        lengths = pc.list_value_length(vectors).to_numpy(zero_copy_only=False)
        present = np.flatnonzero(valid)
        dimensions = int(lengths[present[0]]) if present.size else 0
        if present.size and (lengths[present] != dimensions).any():
            row = int(present[np.argmax(lengths[present] != dimensions)])
            raise DimensionMismatchError(
                f"vector column {row_name(row)} has length {int(lengths[row])}, expected "
                f"{dimensions}"
            )
        self.rows = len(vectors)
        self.dimensions = dimensions
        self.present = present
        self.matrix = _float32_matrix(vectors, valid, dimensions)
        self._valid = valid
        self._squared_norms: np.ndarray | None = None
        # every row's float64 norm, as the cosine re-score computes it, for the HNSW path's
        # re-score (None: not computed yet), and whether every row with a vector has a
        # finite, non-zero one: see _hnsw_rescored
        self._float64_norms: np.ndarray | None = None
        self._float64_norms_fit = False
        self._norms: np.ndarray | None = None
        self._nonzero: np.ndarray | None = None
        self._scale: float | None = None
        self._unscreenable_cache: dict[bool, np.ndarray] = {}
        # every row's float32 reciprocal norm for the cosine screen (None: not computed yet;
        # False: a row the screen cannot rank or without a vector): see _screen_cosine
        self._cosine_reciprocals: np.ndarray | bool | None = None
        # id(mask) -> the rows a cached selective filter keeps, gathered: see _subset.
        self._subsets: OrderedDict[int, _Subset] = OrderedDict()
        self._subsets_lock = threading.Lock()
        # id(mask) -> the read-only masks of filters screened once, not gathered: see _subset
        self._seen: OrderedDict[int, np.ndarray] = OrderedDict()
        self.hnsw = hnsw
        self.hnsw_metric = hnsw_metric

    # -- float32 screening -----------------------------------------------------------------

    def _approximate(
        self, function: str, query: np.ndarray, subset: _Subset | None = None
    ) -> tuple[np.ndarray, float]:
        """float32 distances of every row (or of ``subset``'s rows, in their order), and how
        far they may be from the float64 ones.

        Cosine divides each row's dot product by its float32 norm instead of multiplying a
        row-normalised copy of the matrix: the same one product, without a second resident
        copy of the vectors."""
        query32 = query.astype(np.float32)

        def product(vector: np.ndarray) -> np.ndarray:
            with blas_product():
                if subset is None:
                    return np.asarray(self.matrix @ vector)
                return subset.product(self.matrix, vector)

        metric = HOTDATA.distance_metrics.get(function)
        if metric is DistanceMetric.COSINE:
            # numpy.linalg.norm's arithmetic for a vector, without its argument dispatch
            norm = float(np.sqrt(query32.dot(query32)))
            if norm == 0:
                size = self.rows if subset is None else subset.rowids.size
                return np.ones(size, dtype=np.float32), 0.0
            norms = self._of_rows("norms", self._norms_or_compute, subset)
            scores = product(query32 / np.float32(norm))
            distances = 1.0 - scores / np.where(norms == 0, np.float32(1.0), norms)
            distances[~self._of_rows("nonzero", self._row_nonzero, subset)] = 1.0
            return distances, _TOLERANCE
        if metric is DistanceMetric.L2:
            squared_norms = self._of_rows("squared norms", self._squared_norms_or_compute, subset)
            query_norm = float(query32 @ query32)
            distances = squared_norms - 2.0 * product(query32) + query_norm
            scale = self._screenable_scale() + query_norm
            return distances, _TOLERANCE * max(1.0, scale)
        if metric is DistanceMetric.DOT:
            distances = -product(query32)
            scale = math.sqrt(self._screenable_scale())
            return distances, _TOLERANCE * max(1.0, scale * float(np.linalg.norm(query32)))
        raise ValueError(f"unknown distance function {function!r}")

    @staticmethod
    def _of_rows(
        name: str, compute: Callable[[], np.ndarray], subset: _Subset | None
    ) -> np.ndarray:
        """A per-row array of the column (``compute`` returns it, over every rowid), or its
        values at ``subset``'s rows, which a cached subset keeps under ``name``."""
        return compute() if subset is None else subset.of_rows(name, compute)

    def _norms_or_compute(self) -> np.ndarray:
        if self._norms is None:
            with np.errstate(over="ignore", under="ignore"):
                self._norms = np.sqrt(self._squared_norms_or_compute())
        return self._norms

    def _squared_norms_or_compute(self) -> np.ndarray:
        if self._squared_norms is None:
            with np.errstate(over="ignore", under="ignore"):
                self._squared_norms = np.einsum("ij,ij->i", self.matrix, self.matrix)
        return self._squared_norms

    def _screenable_scale(self) -> float:
        """The largest float32 squared norm among the rows the screen can rank (computed
        once per column: a scan of every row's norm)."""
        if self._scale is None:
            squared = self._squared_norms_or_compute()
            self._scale = float(squared[np.isfinite(squared)].max(initial=0.0))
        return self._scale

    def _unscreenable(
        self,
        function: str,
        query: np.ndarray,
        approximate: np.ndarray,
        subset: _Subset | None = None,
    ) -> np.ndarray:
        """Rows whose float32 screened distance cannot be trusted to rank them: their squared
        norm overflows Float32 (an infinity, so ``inf - inf`` or a normalised zero), or, for
        cosine, underflows below Float32's smallest normal number while the vector is not zero
        (its norm, hence its direction, is then imprecise), or their screened distance is not
        finite. Every row when the query is such a vector. Over ``subset``'s rows (in their
        order) when given, as ``approximate`` is."""
        query32 = query.astype(np.float32)
        query_squared = float(np.dot(query32, query32))  # the caller ignores over/underflow
        cosine = HOTDATA.distance_metrics.get(function) is DistanceMetric.COSINE
        if not math.isfinite(query_squared) or (
            cosine and query_squared < _FLOAT32_TINY and bool(query32.any())
        ):
            return np.ones(approximate.shape[0], dtype=bool)
        rows = self._of_rows(
            "unscreenable by cosine" if cosine else "unscreenable",
            lambda: self._unscreenable_rows(cosine),
            subset,
        )
        return np.asarray(rows | ~np.isfinite(approximate))

    def _unscreenable_rows(self, cosine: bool) -> np.ndarray:
        """The stored rows the screen cannot rank, whatever the query: a squared norm that
        overflows Float32, or for cosine one that underflows while the vector is not zero.
        A property of the rows, so computed once per column and metric family (scanning the
        matrix for non-zero rows costs several times the screen itself)."""
        cached = self._unscreenable_cache.get(cosine)
        if cached is None:
            squared = self._squared_norms_or_compute()
            cached = ~np.isfinite(squared)
            if cosine:
                small = squared < _FLOAT32_TINY
                if small.any():  # only rows with a tiny norm need the non-zero test
                    rows = np.flatnonzero(small)
                    cached[rows[self.matrix[rows].any(axis=1)]] = True
            self._unscreenable_cache[cosine] = cached
        return cached

    def _row_nonzero(self) -> np.ndarray:
        """Whether each row's vector is not all zeros (computed once per column)."""
        if self._nonzero is None:
            self._nonzero = np.asarray(self._squared_norms_or_compute() > 0)
        return self._nonzero

    # -- exact float64 ---------------------------------------------------------------------

    def exact(
        self, function: str, query: np.ndarray, rowids: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """float64 distances of ``rowids`` by the distance UDFs' own kernel (``rows``: their
        float32 vectors, when the caller holds them)."""
        if not rowids.size:
            return np.empty(0, dtype=np.float64)
        if rows is None:
            rows = np.take(self.matrix, rowids, axis=0)
        rows = rows.astype(np.float64)
        queries = broadcast_row(query.astype(np.float32).astype(np.float64), rows.shape[0])
        return np.asarray(DISTANCE_KERNELS[function](rows, queries), dtype=np.float64)

    def row_distances(self, function: str, query: Any, rowids: np.ndarray) -> np.ndarray:
        """float64 distances of ``rowids`` to ``query`` by the distance UDFs' own kernel (the
        query read as Float32, as an ``ARRAY`` literal is), NaN for a row without a vector:
        what ``<function>(<column>, <query>)`` gives those rows, before its Float32
        rounding.

        Raises:
            DimensionMismatchError: the query's length differs from the column's.
        """
        vector = np.asarray(query, dtype=np.float64)
        if self.present.size and vector.shape[0] != self.dimensions:
            raise DimensionMismatchError(
                f"{function}: query vector length ({vector.shape[0]}) must match column "
                f"dimensionality ({self.dimensions})"
            )
        rowids = np.asarray(rowids, dtype=np.int64)
        distances = np.full(rowids.size, np.nan)
        valid = self._valid[rowids] if rowids.size else np.zeros(0, dtype=bool)
        if valid.any():
            distances[valid] = self.exact(function, vector, rowids[valid])
        return distances

    def nearest(
        self,
        function: str,
        query: Any,
        k: int,
        *,
        mask: np.ndarray | None = None,
        with_ties: bool = False,
        approximate: bool = False,
        with_nulls: bool = False,
        tie_order: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest to ``query`` by distance function ``function``:
        :meth:`nearest_rounded` without the Float32 distances."""
        rowids, distances, _ = self.nearest_rounded(
            function,
            query,
            k,
            mask=mask,
            with_ties=with_ties,
            approximate=approximate,
            with_nulls=with_nulls,
            tie_order=tie_order,
        )
        return rowids, distances

    def nearest_rounded(
        self,
        function: str,
        query: Any,
        k: int,
        *,
        mask: np.ndarray | None = None,
        with_ties: bool = False,
        approximate: bool = False,
        with_nulls: bool = False,
        tie_order: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``k`` rows nearest to ``query`` by distance function ``function``, with their
        distances rounded to Float32 as the ranking rounded them.

        Args:
            function: ``cosine_distance``, ``l2_distance`` or ``negative_dot_product``.
            query: the query vector (converted to float32, as an ``ARRAY`` literal is for the
                distance UDFs).
            k: how many rows.
            mask: rows that may be candidates (a boolean array over rowids); default all. A
                read-only mask is taken for an open table's cached filter: its kept rows are
                gathered and kept under its identity, so it must never change (a read-only
                view of an array that is later written to must not be passed).
            with_ties: also return every row tied with the k-th (the caller cuts them).
            approximate: use the HNSW index when it serves ``function`` and there is no mask.
            with_nulls: fill a short answer with rows whose vector is NULL (distance NaN), in
                rowid order, as ``ORDER BY <distance> ASC`` sorts their NULL distances last.
            tie_order: each rowid's position in the order that breaks a tie of distances (the
                table's key order, ``LoadedTable.tie_order``); default the rowid itself.

        Returns:
            ``(rowids, distances, rounded)``: int64 rowids and float64 distances, ordered as
            SQL orders the distance functions' Float32 results — by the distance rounded to
            Float32, then ``tie_order`` (default rowid) — and those Float32 results
            (:func:`~hotdata_retrieval.engines.local.distance.float32_distances` of the
            distances, bit for bit: NaN for a row without a vector). Rows with a NULL vector
            are never returned but to fill a short answer ``with_nulls``.

        Raises:
            DimensionMismatchError: the query's length differs from the column's.
        """
        vector = np.asarray(query, dtype=np.float64)
        if self.present.size and vector.shape[0] != self.dimensions:
            raise DimensionMismatchError(
                f"{function}: query vector length ({vector.shape[0]}) must match column "
                f"dimensionality ({self.dimensions})"
            )
        order = np.arange(self.rows, dtype=np.int64) if tie_order is None else tie_order
        rowids, distances, rounded = self._nearest(
            function, vector, k, mask, with_ties, approximate, order
        )
        if with_nulls and rowids.size < k:
            nulls = ~self._valid if mask is None else (~self._valid & mask)
            extra = np.flatnonzero(nulls)[: k - rowids.size]
            rowids = np.concatenate([rowids, extra])
            distances = np.concatenate([distances, np.full(extra.size, np.nan)])
            rounded = np.concatenate([rounded, np.full(extra.size, np.nan, dtype=np.float32)])
        return rowids, distances, rounded

    def _nearest(
        self,
        function: str,
        vector: np.ndarray,
        k: int,
        mask: np.ndarray | None,
        with_ties: bool,
        approximate: bool,
        tie_order: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        subset = None if mask is None else self._cached_subset(mask)
        if mask is None:
            allowed = self._valid
            candidates_total = self.present.size
        elif subset is None:
            # every row has a vector (the common case): the mask is the allowed rows
            allowed = mask if self.present.size == self.rows else self._valid & mask
            candidates_total = int(np.count_nonzero(allowed))
        else:
            candidates_total = subset.rowids.size
        if k <= 0 or candidates_total == 0:
            return (
                np.empty(0, dtype=np.int64),
                np.empty(0, dtype=np.float64),
                np.empty(0, dtype=np.float32),
            )
        if approximate and mask is None and self.hnsw is not None and self.hnsw_metric == function:
            found = self._hnsw_nearest(function, vector, k, tie_order)
            if found is not None:
                return found
        width = min(k, candidates_total)
        if mask is None:
            screened = self._screen_column_cosine(function, vector, width)
            if screened is not None:
                return self._ranked(function, vector, screened, width, with_ties, tie_order)
        if subset is not None:
            screened = self._screen_kept_cosine(function, vector, width, subset)
            if screened is not None:
                # the screened rows, just read by the screen, from the gathered matrix
                rows = subset.gathered(self.matrix)[screened]
                return self._ranked(
                    function, vector, subset.rowids[screened], width, with_ties, tie_order, rows
                )
        # A selective filter screens the rows it keeps alone (gathered first): the same
        # screen, over a fraction of the product.
        if (
            subset is None
            and mask is not None
            and candidates_total * SELECTIVE_MASK_FRACTION <= self.rows
        ):
            subset = self._subset(mask, allowed)
            screened = self._screen_first_seen_cosine(function, vector, width, subset)
            if screened is not None:
                return self._ranked(
                    function, vector, subset.rowids[screened], width, with_ties, tie_order
                )
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            approximate_distances, tolerance = self._approximate(function, vector, subset)
            unsure = self._unscreenable(function, vector, approximate_distances, subset)
        sure = ~unsure
        if subset is None:
            unsure &= allowed
            sure &= allowed
        ranked = np.where(sure, approximate_distances, np.inf)
        head_width = min(width, int(np.count_nonzero(sure)))
        if head_width:
            if head_width < ranked.size:
                head = np.argpartition(ranked, head_width - 1)[:head_width]
            else:
                head = np.arange(ranked.size)
            boundary = float(ranked[head].max())
            # Every row that float32 rounding could move into the top k, re-scored exactly,
            # with every row the screen cannot rank.
            screened = np.flatnonzero((sure & (ranked <= boundary + tolerance)) | unsure)
        else:
            screened = np.flatnonzero(unsure)
        if subset is not None:
            screened = subset.rowids[screened]
        return self._ranked(function, vector, screened, width, with_ties, tie_order)

    def _screen_kept_cosine(
        self, function: str, vector: np.ndarray, width: int, subset: _Subset
    ) -> np.ndarray | None:
        """The positions among ``subset``'s rows a cosine search of a cached filter's rows
        re-scores, by the screen of
        :meth:`_approximate` in fewer steps; ``None`` (the caller screens as usual) unless
        every kept row is one the screen ranks (a non-zero norm, neither overflowing nor
        underflowing Float32) and so is the query.

        The kept rows' reciprocal norms are computed once, with the gathered rows: each
        screened distance is then ``1 - (row . unit query) / |row|``, finite, and the rows
        within the tolerance of the ``width``-th are the same ones the full screen picks."""
        if subset.cosine_reciprocals is False or (
            HOTDATA.distance_metrics.get(function) is not DistanceMetric.COSINE
        ):
            return None
        if subset.cosine_reciprocals is None:
            if not subset.cached:
                return None
            norms = subset.of_rows("norms", self._norms_or_compute)
            unscreenable = subset.of_rows(
                "unscreenable by cosine", lambda: self._unscreenable_rows(True)
            )
            screenable = not unscreenable.any() and bool(norms.all())
            subset.cosine_reciprocals = (np.float32(1.0) / norms) if screenable else False
            if not screenable:
                return None
        reciprocals = subset.cosine_reciprocals
        assert isinstance(reciprocals, np.ndarray)
        return _screen_cosine(subset.gathered(self.matrix), reciprocals, vector, width)

    def _screen_first_seen_cosine(
        self, function: str, vector: np.ndarray, width: int, subset: _Subset
    ) -> np.ndarray | None:
        """The positions among ``subset``'s rows (a filter's, not gathered: its first search)
        a cosine search re-scores, by the screen of :func:`_screen_cosine` over the column's
        reciprocal norms at those rows and their product block by block
        (:func:`_kept_product`); ``None`` (the caller screens as usual) unless the column
        screen's conditions hold (:meth:`_column_reciprocals`). The same rows as the general
        screen, in a few passes over the kept rows instead of a dozen."""
        if subset.cached or HOTDATA.distance_metrics.get(function) is not DistanceMetric.COSINE:
            return None
        reciprocals = self._column_reciprocals()
        if reciprocals is None:
            return None
        rowids = subset.rowids
        return _screen_cosine(
            lambda unit: _kept_product(self.matrix, rowids, unit),
            reciprocals[rowids],
            vector,
            width,
        )

    def _column_reciprocals(self) -> np.ndarray | None:
        """Every row's float32 reciprocal norm for the cosine screen (computed once per
        column), or ``None`` unless every row has a vector the screen ranks (a non-zero norm,
        neither overflowing nor underflowing Float32)."""
        if self._cosine_reciprocals is None:
            norms = self._norms_or_compute()
            screenable = (
                self.present.size == self.rows
                and not self._unscreenable_rows(True).any()
                and bool(norms.all())
            )
            self._cosine_reciprocals = (np.float32(1.0) / norms) if screenable else False
        reciprocals = self._cosine_reciprocals
        return reciprocals if isinstance(reciprocals, np.ndarray) else None

    def _screen_column_cosine(
        self, function: str, vector: np.ndarray, width: int
    ) -> np.ndarray | None:
        """The rowids an unfiltered cosine search re-scores, by the screen of
        :func:`_screen_cosine`; ``None`` (the caller screens as usual) unless every row has a
        vector the screen ranks (a non-zero norm, neither overflowing nor underflowing
        Float32), and so does the query.

        The rows' reciprocal norms are computed once per column: the screen is then one
        product, one multiplication in place and a selection, where the general screen makes
        a dozen passes over arrays of the column's length — each a fresh array whose pages
        the kernel maps anew (measured at 100,000 rows: 511 page faults a search, against 3
        for the NumPy floor's product and partial sort)."""
        if HOTDATA.distance_metrics.get(function) is not DistanceMetric.COSINE:
            return None
        reciprocals = self._column_reciprocals()
        if reciprocals is None:
            return None
        return _screen_cosine(self.matrix, reciprocals, vector, width)

    def _cached_subset(self, mask: np.ndarray) -> _Subset | None:
        """The rows :meth:`_subset` keeps for read-only ``mask``, if it keeps them."""
        if mask.flags.writeable:
            return None
        with self._subsets_lock:
            known = self._subsets.get(id(mask))
            if known is None or known.mask is not mask:
                return None
            self._subsets.move_to_end(id(mask))
            return known

    def _subset(self, mask: np.ndarray, allowed: np.ndarray) -> _Subset:
        """The rowids ``allowed`` keeps and, for a read-only ``mask`` (an open table's cached
        filter: the same object is the same filter, :meth:`~hotdata_retrieval.engines.local.
        tables.LoadedTable.passing_rows`) searched before, their rows gathered into one
        contiguous matrix, kept for the next search under the same filter with the column's
        per-row facts at those rows: a scan of the filter's rows then reads them in order, not
        scattered across the matrix, and touches nothing of the column's size. The gathered
        rows of all filters take at most 1/:data:`SUBSET_CACHE_SHARE` of the matrix's bytes
        (least recently used out). A writeable mask, or a read-only one on its first search
        (the last :data:`SEEN_FILTERS` are remembered), is screened block by block in place
        (:func:`_kept_product`): a filter used once costs one read of its rows, no copy."""
        rowids = np.flatnonzero(allowed)
        if mask.flags.writeable:
            return _Subset(mask, rowids, None)
        with self._subsets_lock:
            seen = self._seen.get(id(mask)) is mask
            if seen:
                del self._seen[id(mask)]
            else:
                self._seen[id(mask)] = mask
                while len(self._seen) > SEEN_FILTERS:
                    self._seen.popitem(last=False)
        if not seen:
            return _Subset(mask, rowids, None)
        rows = np.take(self.matrix, rowids, axis=0)
        rows.flags.writeable = False
        subset = _Subset(mask, rowids, rows)
        budget = self.matrix.nbytes // SUBSET_CACHE_SHARE
        if subset.nbytes <= budget:
            with self._subsets_lock:
                self._subsets[id(mask)] = subset
                held = sum(entry.nbytes for entry in self._subsets.values())
                while held > budget:
                    _, dropped = self._subsets.popitem(last=False)
                    held -= dropped.nbytes
        return subset

    def _ranked(
        self,
        function: str,
        vector: np.ndarray,
        rowids: np.ndarray,
        width: int,
        with_ties: bool,
        tie_order: np.ndarray,
        rows: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``width`` of ``rowids`` nearest ``vector`` by their exact distances, ordered by
        (Float32 distance, ``tie_order``), with those Float32 distances (as
        :func:`~hotdata_retrieval.engines.local.distance.float32_distances` rounds them); with
        ``with_ties`` every row tied with the last. ``rows``: the float32 vectors of
        ``rowids``, when the caller holds them."""
        distances = self.exact(function, vector, rowids, rows)
        with np.errstate(over="ignore"):  # a distance beyond Float32 is an infinity there
            rounded = distances.astype(np.float32)
        order = np.lexsort((tie_order[rowids], rounded))
        rowids, distances, rounded = rowids[order], distances[order], rounded[order]
        if with_ties and rowids.size > width:
            cut = rounded[width - 1]
            keep = width + int(np.count_nonzero(rounded[width:] == cut))
            return rowids[:keep], distances[:keep], rounded[:keep] + _FLOAT32_ZERO
        return rowids[:width], distances[:width], rounded[:width] + _FLOAT32_ZERO

    def _hnsw_nearest(
        self, function: str, vector: np.ndarray, k: int, tie_order: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The k nearest rows by the HNSW index, re-scored exactly and ordered by (Float32
        distance, ``tie_order``), with those Float32 distances; ``None`` when a tie straddles
        the k-th place, for the caller to scan exactly.

        The index is asked for at least its ``expansion_search`` rows
        (:attr:`HnswSettings.expansion_search <hotdata_retrieval.engines.hnsw.HnswSettings.
        expansion_search>`, set when it is opened), whatever k, so every page of one search
        (k = limit + offset) up to that depth cuts the same candidate list,
        ordered the same way: pages are slices of one ranking. Past it the index is asked for
        k + 1 rows, and among rows tied at the cut the graph returns whichever it reaches
        first, a different subset for each k (duplicate documents have equal vectors); so
        there a tie at the cut (the k-th and the next row at one distance) is answered by the
        exact scan, which keeps the tied rows first in ``tie_order``. (Below the depth the
        exact scan would rank rows the candidate list may lack, and pages would no longer
        tile.)
        """
        candidates = int(self.hnsw.expansion_search)
        count = min(self.present.size, max(k + 1, candidates))
        query32 = vector.astype(np.float32)
        keys = np.asarray(hnsw_keys(self.hnsw, query32, count), dtype=np.int64)
        distances, bounded = self._hnsw_rescored(function, vector, query32, keys)
        if bounded:
            rounded = distances.astype(np.float32)
        else:
            with np.errstate(over="ignore"):
                rounded = distances.astype(np.float32)
        order = np.lexsort((tie_order[keys], rounded))
        keys, distances, rounded = keys[order], distances[order], rounded[order]
        if k + 1 > candidates and k < keys.size and rounded[k] == rounded[k - 1]:
            return None
        return keys[:k], distances[:k], rounded[:k] + _FLOAT32_ZERO

    def _hnsw_rescored(
        self, function: str, vector: np.ndarray, query32: np.ndarray, keys: np.ndarray
    ) -> tuple[np.ndarray, bool]:
        """:meth:`exact`'s distances of the HNSW candidates ``keys``, bit for bit, and whether
        they are bounded (cosine distances of finite, non-zero norms, at most about 2: Float32
        holds them without overflow); for cosine from the column's float64 row norms,
        computed once per table version
        (:func:`~hotdata_retrieval.engines.local.distance.float64_row_norms`, 8 bytes a
        row) instead of for each search's candidates, when every row's norm and the query's
        are finite and non-zero (else :meth:`exact` computes them, with its zero-norm rule)."""
        if function == COSINE_DISTANCE:
            norms = self._float64_norms
            if norms is None:
                norms = self._float64_norms = float64_row_norms(self.matrix)
                present = norms[self.present]
                self._float64_norms_fit = bool(np.isfinite(present).all() and present.all())
            query64 = query32.astype(np.float64)
            norm = query_norm(query64)
            if self._float64_norms_fit and 0.0 < norm < math.inf:
                rows = self.matrix.take(keys, axis=0).astype(np.float64)
                return cosine_of_normed(rows, query64, norms.take(keys), norm), True
        return self.exact(function, vector, keys), False


SCREEN_SAMPLE = 4096
"""About how many of a screen's similarities (every ``n // SCREEN_SAMPLE``-th) estimate a
threshold below its ``width`` best (:func:`_nearest_positions`)."""


def _screen_cosine(
    rows: np.ndarray | Callable[[np.ndarray], np.ndarray],
    reciprocals: np.ndarray,
    vector: np.ndarray,
    width: int,
) -> np.ndarray | None:
    """The positions among ``rows`` (float32, every one with a vector the screen ranks, or
    the function giving their product with a float32 vector; ``reciprocals``: their float32
    reciprocal norms) that a cosine search of the ``width``
    nearest to float64 ``vector`` re-scores, ascending; ``None`` for a query near either end
    of Float32's range (a margin of 4), left to the full screen.

    Each row's similarity is ``(row . unit query) / |row|`` in float32, its screened distance
    one minus that; the rows within :data:`_TOLERANCE` of the ``width``-th best similarity
    are every row float32 rounding could move among the ``width`` nearest, as
    :meth:`VectorColumnIndex._approximate`'s screen keeps them."""
    # in float64, which neither overflows nor underflows here
    squared = float(vector @ vector)
    if not 4 * _FLOAT32_TINY <= squared <= _FLOAT32_MAX / 4:
        return None
    unit = vector.astype(np.float32) / np.float32(math.sqrt(squared))
    with blas_product():
        similarities = np.asarray(rows(unit) if callable(rows) else rows @ unit)
    np.multiply(similarities, reciprocals, out=similarities)
    return _nearest_positions(similarities, width, _TOLERANCE)


def _nearest_positions(values: np.ndarray, width: int, tolerance: float) -> np.ndarray:
    """The positions of the ``values`` (finite) at least the ``width``-th largest minus
    ``tolerance``, ascending.

    Every ``values.size // SCREEN_SAMPLE``-th value gives a threshold that about twice
    ``width`` values reach, the few that do are partitioned for the ``width``-th largest, and
    a single comparison over all values checks the threshold was low enough (it is unless
    the sample misleads, and then every value is compared again): no partial sort and no
    index array of the values' length."""
    size = values.size
    if width >= size:
        return np.arange(size)
    step = size // SCREEN_SAMPLE
    if step >= 2:
        sample = values[::step]
        reach = min(sample.size, 2 * math.ceil(width / step) + 8)
        threshold = float(np.partition(sample, sample.size - reach)[sample.size - reach])
        candidates = np.flatnonzero(values >= threshold)
        if candidates.size >= width:
            found = values[candidates]
            boundary = float(np.partition(found, found.size - width)[found.size - width])
            if threshold <= boundary - tolerance:
                return candidates[found >= boundary - tolerance]
            return np.flatnonzero(values >= boundary - tolerance)
    boundary = float(np.partition(values, size - width)[size - width])
    return np.flatnonzero(values >= boundary - tolerance)


def _kept_product(matrix: np.ndarray, rowids: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix[rowids] @ vector`` (float32) without gathering ``matrix[rowids]``: the rows are
    copied a block of :data:`GATHER_BLOCK_BYTES` at a time into one buffer and each block is
    multiplied while it is in cache, so the kept rows are read from memory once.

    ``rowids`` are the column's own (every one in range), so each take is in ``clip`` mode:
    in its default ``raise`` mode ``numpy.take`` copies its ``out`` buffer before the take
    and back after it (so an index error leaves it unchanged), two copies of every block
    (NumPy 2.4, ``PyArray_TakeFrom``)."""
    out = np.empty(rowids.size, dtype=np.float32)
    if not rowids.size:
        return out
    width = max(1, matrix.shape[1]) * matrix.itemsize
    block = max(16, GATHER_BLOCK_BYTES // width)
    if rowids.size <= block:
        np.dot(np.take(matrix, rowids, axis=0, mode="clip"), vector, out=out)
        return out
    buffer = np.empty((block, matrix.shape[1]), dtype=matrix.dtype)
    for start in range(0, rowids.size, block):
        chunk = rowids[start : start + block]
        rows = buffer[: chunk.size]
        np.take(matrix, chunk, axis=0, out=rows, mode="clip")
        np.dot(rows, vector, out=out[start : start + chunk.size])
    return out


def _float32_matrix(vectors: pa.Array, valid: np.ndarray, dimensions: int) -> np.ndarray:
    """The column as a C-contiguous ``(rows, dimensions)`` float32 matrix, a NULL row all
    zeros. A float32 column without NULL rows whose values are laid out row after row (what
    a load writes and Parquet reads back) is viewed in place, read-only: the vectors are
    resident once, not once as Arrow buffers and again as the matrix."""
    rows = len(vectors)
    if not dimensions:
        return np.zeros((rows, 0), dtype=np.float32)
    values = pc.list_flatten(vectors)
    if (
        bool(valid.all())
        and pa.types.is_float32(values.type)
        and values.null_count == 0
        and len(values) == rows * dimensions
    ):
        flat: np.ndarray = values.to_numpy(zero_copy_only=True)
        if flat.flags.c_contiguous:
            return flat.reshape(rows, dimensions)
    matrix = np.zeros((rows, dimensions), dtype=np.float32)
    matrix[valid] = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(
        -1, dimensions
    )
    return matrix


def hnsw_keys(index: Any, query: np.ndarray, count: int) -> np.ndarray:
    """The keys of the ``count`` rows nearest one float32 ``query`` (``(d,)``) in a usearch
    ``index``, nearest first (fewer when it holds fewer): ``Index.search(query, count,
    threads=1).keys``, one query on one thread (dispatching it to a pool costs about 10 µs,
    usearch 2.26).

    The compiled index's ``search_many`` is called directly when the index has one (usearch
    2.x): ``Index.search``, its Python wrapper, checks the arguments with ``assert``, reshapes
    the query to a batch of one and wraps the result in two dataclasses, about 27k
    instructions a search at SciFact's 384 dimensions (valgrind callgrind) for the same keys
    (``tests/test_hnsw_rescore.py`` compares them). ``search_many`` is not usearch's public
    interface, so a process's first search asks both and keeps the direct call only when it
    answers exactly as ``Index.search`` does (another usearch may order or name its
    arguments otherwise), asking both again until an answer of at least
    :data:`_KEYS_TO_AGREE` keys agrees. ``(n,)`` uint64.
    """
    global _COMPILED_SEARCH_AGREES
    compiled = getattr(index, "_compiled", None)
    search_many = getattr(compiled, "search_many", None)
    if search_many is None or _COMPILED_SEARCH_AGREES is False:
        return _wrapped_keys(index, query, count)
    try:
        # positional: (queries, count, exact, threads)
        found, _, counts, *_ = search_many(query.reshape(1, query.shape[0]), count, False, 1)
        keys: np.ndarray = found[0, : counts[0]]
    except (TypeError, ValueError, IndexError):
        _COMPILED_SEARCH_AGREES = False
        return _wrapped_keys(index, query, count)
    if _COMPILED_SEARCH_AGREES is None:
        wrapped = _wrapped_keys(index, query, count)
        if not np.array_equal(keys, wrapped):
            _COMPILED_SEARCH_AGREES = False
        elif wrapped.size >= _KEYS_TO_AGREE:  # an order of one key proves little
            _COMPILED_SEARCH_AGREES = True
        return wrapped
    return keys


def _wrapped_keys(index: Any, query: np.ndarray, count: int) -> np.ndarray:
    keys: np.ndarray = index.search(query, count, threads=1).keys
    return keys


_KEYS_TO_AGREE = 8
"""How many keys an answer of both calls must hold to settle that they agree."""

_COMPILED_SEARCH_AGREES: bool | None = None
"""Whether usearch's compiled ``search_many`` answered a first search as ``Index.search``
did (:func:`hnsw_keys`); ``None`` until a first search asks both."""


def hnsw_storage(function: str, settings: HnswSettings | None = None) -> str:
    """usearch's scalar kind for an HNSW index serving ``function``: the storage ``settings``
    choose, by default ``i8`` for cosine and ``f32`` otherwise
    (:meth:`HnswSettings.storage_for <hotdata_retrieval.engines.hnsw.HnswSettings.
    storage_for>` says why).

    Raises:
        HnswSettingsError: int8 storage for an L2 or dot-product index.
    """
    chosen = settings or HnswSettings()
    metric = HOTDATA.distance_metrics[function]
    return USEARCH_STORAGE[chosen.storage_for(metric)]


def build_hnsw(
    index: VectorColumnIndex,
    function: str,
    path: Path,
    *,
    settings: HnswSettings | None = None,
    column: str = "",
    progress: bool = False,
) -> Any:
    """Build and save an HNSW index of ``index``'s rows for ``function`` at ``path``.

    Keys are rowids; rows with a NULL vector are left out. The graph is shaped by ``settings``
    (default :class:`~hotdata_retrieval.engines.hnsw.HnswSettings`: connectivity 16, build
    and search expansion 64, int8 storage for cosine and float32 otherwise, as measured);
    every candidate the index returns is re-scored in float64 from the stored vectors, so
    storage and expansion decide which rows are candidates, never their order or distances.

    Raises:
        HnswSettingsError: int8 storage for an L2 or dot-product index, or float16 storage of
            a column with a component beyond float16's range (its distances would be NaN);
            the message names ``column``.
        ImportError: usearch is not installed (``pip install 'hotdata-retrieval[ann]'``).
    """
    from usearch.index import Index

    chosen = settings or HnswSettings()
    storage = hnsw_storage(function, chosen)
    if storage == "f16" and index.matrix.size:
        # Two reductions over the matrix in place: no copy of it, as abs() would make.
        largest = max(float(index.matrix.max()), -float(index.matrix.min()))
        if largest > FLOAT16_MAX:
            where = f"column '{column}'" if column else "the vector column"
            raise HnswSettingsError(
                f"storage 'float16' holds magnitudes up to {FLOAT16_MAX:g}; {where} holds "
                f"{largest:g}, which would be an infinity there; use 'float32'",
                setting="storage",
                value=chosen.storage,
            )
    hnsw = Index(
        ndim=index.dimensions,
        metric=HNSW_METRICS[function],
        dtype=storage,
        connectivity=chosen.connectivity,
        expansion_add=chosen.expansion_add,
        expansion_search=chosen.expansion_search,
    )
    if index.present.size:
        rows = index.matrix[index.present]
        if not progress:
            hnsw.add(index.present, rows)
        else:
            from hotdata_retrieval._progress import progress_report

            # Added in slices so the bar moves (usearch's own progress callback is not
            # usable from Python in 2.26); the graph is the same as one call's.
            step = max(1_000, len(rows) // 100)
            description = f"building the HNSW index ({function})"
            with progress_report(description, len(rows), transient=True) as bar:
                for start in range(0, len(rows), step):
                    stop = min(start + step, len(rows))
                    hnsw.add(index.present[start:stop], rows[start:stop])
                    bar.update(stop)
    path.parent.mkdir(parents=True, exist_ok=True)
    hnsw.save(str(path))
    return hnsw


def open_hnsw(path: Path, *, expansion_search: int | None = None) -> Any:
    """Open a saved HNSW index, memory-mapped (``usearch`` ``Index.restore(view=True)``),
    searching with ``expansion_search`` candidates (default
    :data:`~hotdata_retrieval.engines.hnsw.DEFAULT_EXPANSION_SEARCH`: the file does not
    record it; the catalog does).

    Raises:
        ImportError: usearch is not installed.
        ValueError: the file is not an index.
    """
    from usearch.index import Index

    index = Index.restore(str(path), view=True)
    if index is None:
        raise ValueError(f"{path} is not a usearch index")
    # usearch defines the setter apart from its getter, which type checkers read as none.
    index.expansion_search = (  # type: ignore[misc]
        HnswSettings().expansion_search if expansion_search is None else expansion_search
    )
    return index
