"""The local engine's own SQL functions, as its sessions register them (engine contract
§1.1-1.5):

- ``bm25_search('<c>.<s>.<t>', '<column>', '<query>' [, k])``: a table function returning the
  table's columns plus ``score`` (Float32) for the top k rows, in **rowid order** as the engine
  does; no index → ``No BM25 index found on column '<column>' for <c>.<s>.<t>``;
- ``vector_search('<c>.<s>.<t>', '<text column>', '<query>', k)``: embeds the query with the
  model that embedded the column, returns the table's columns plus ``_distance`` for the k
  nearest rows, in rowid order;
- the dialect's distance functions (``cosine_distance``, ``l2_distance`` squared,
  ``negative_dot_product``) and ``vector_distance(<text column>, '<query>')``: scalar UDFs;
- ``nearest_scan``: what the fast-path rewrite reads
  (:mod:`~hotdata_retrieval.engines.local.fastpath`);
- ``hybrid_search(...)``: the native fused search of ``docs/spec/hybrid_search.md``
  (:mod:`~hotdata_retrieval.engines.local.hybrid`).

The Python UDF/UDTF traps measured in local-engines §A are respected: table functions return a
``datafusion.catalog.Table`` over rows in memory (:func:`~hotdata_retrieval.engines.local.
_session.relation`), never ``ctx.from_arrow``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import pyarrow as pa
from datafusion.catalog import Table

from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.engines.local._session import (
    ScalarFunction,
    literal_arguments,
    relation,
)
from hotdata_retrieval.engines.local.distance import (
    COSINE_DISTANCE,
    DISTANCE_KERNELS,
    DimensionMismatchError,
    distance_udf_arrays,
    float32_distances,
    query_distances,
)
from hotdata_retrieval.engines.local.fastpath import (
    NEAREST_SCAN,
    TIE_COLUMN,
    Stash,
    nearest_scan_calls,
)
from hotdata_retrieval.engines.local.hybrid import HYBRID_SEARCH, HybridSearch
from hotdata_retrieval.engines.local.native import nearest_scan
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import TableName

if TYPE_CHECKING:
    from hotdata_retrieval.engines.local.tables import LoadedTable


class FunctionHost(Protocol):
    """What the functions read of the engine that registers them (the local engine meets
    it): its default catalog and schema, its embedder (which may change after it opened),
    and its open tables."""

    catalog: str
    schema: str
    embedder: Any

    def _loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names (raises the engine's error when there is none)."""
        ...

    def _embedded_tables(self, model: str, *, opened: bool) -> list[LoadedTable]:
        """The tables with a vector column ``model`` embedded: those open already
        (``opened``), or every one, opened now."""
        ...


def _vector_type() -> pa.DataType:
    return pa.list_(pa.float32())


def _distance_udf(name: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def evaluate(left: pa.Array, right: pa.Array) -> pa.Array:
        return distance_udf_arrays(name, left, right)

    evaluate.__name__ = name
    return evaluate


class EngineFunctions:
    """The functions of one engine (a :class:`FunctionHost`: the local engine; module
    docstring), with the query vectors a statement stashes for its fast-path scans
    and the background thread those scans run on.

    Args:
        engine: the engine whose tables and embedder the functions read.
    """

    hybrid_search: ClassVar[str] = HYBRID_SEARCH
    """The name of the native fused search the functions include."""

    def __init__(self, engine: FunctionHost) -> None:
        self._engine = engine
        self._lock = threading.RLock()
        self._vectors: dict[str, np.ndarray] = {}
        self._filters: dict[str, Predicate | None] = {}
        self._ties: dict[str, str | None] = {}
        self._prefetched: dict[str, concurrent.futures.Future[pa.Table]] = {}
        self._prefetcher: concurrent.futures.ThreadPoolExecutor | None = None
        self._vector_keys = itertools.count()
        self._text_vectors: tuple[Any, dict[str, np.ndarray]] | None = None
        self._hybrid = HybridSearch(engine)

    def scalar_functions(self) -> list[ScalarFunction]:
        """The distance functions and ``vector_distance``."""
        vector = _vector_type()
        return [
            *(
                ScalarFunction(
                    name, _distance_udf(name), [vector, vector], pa.float32(), "immutable"
                )
                for name in DISTANCE_KERNELS
            ),
            ScalarFunction(
                HOTDATA.require(HOTDATA.semantic_distance_function, "semantic distance"),
                self.vector_distance,
                [pa.string(), pa.string()],
                pa.float32(),
                "stable",
            ),
        ]

    def table_functions(self) -> Mapping[str, Callable[..., Table]]:
        """``bm25_search``, ``vector_search``, ``nearest_scan`` and ``hybrid_search``, by the
        names the dialect writes."""
        return {
            HOTDATA.require(HOTDATA.text_search_function, "full-text search"): self.bm25_search,
            HOTDATA.require(HOTDATA.semantic_search_function, "semantic search"): (
                self.vector_search
            ),
            NEAREST_SCAN: self.nearest_scan,
            HYBRID_SEARCH: self._hybrid,
        }

    def close(self) -> None:
        """Stop the background thread, dropping the scans it has not started."""
        with self._lock:
            if self._prefetcher is not None:
                self._prefetcher.shutdown(wait=True, cancel_futures=True)
                self._prefetcher = None

    # -- query vectors ---------------------------------------------------------------------

    @contextlib.contextmanager
    def stashed_vectors(self) -> Iterator[Stash]:
        """A stash for one statement's scans — each query vector and its filter predicate —
        emptied when it has run."""
        keys: list[str] = []

        def stash(values: list[float], predicate: Predicate | None, tie_key: str | None) -> str:
            key = f"hdq-vector:{next(self._vector_keys)}"
            self._vectors[key] = np.asarray(values, dtype=np.float64)
            self._filters[key] = predicate
            self._ties[key] = tie_key
            keys.append(key)
            return key

        try:
            yield stash
        finally:
            for key in keys:
                self._vectors.pop(key, None)
                self._filters.pop(key, None)
                self._ties.pop(key, None)
                prefetched = self._prefetched.pop(key, None)
                if prefetched is not None:
                    prefetched.cancel()

    def compiled(self, filters: Mapping[str, Predicate]) -> contextlib.AbstractContextManager[None]:
        """While a statement compiled from a plan runs: the filter texts of its
        ``hybrid_search`` calls (``filters``, from :func:`~hotdata_retrieval.engines.local.
        hybrid.compiled_filters`) are read as the predicates they were compiled from, never
        parsed."""
        return self._hybrid.compiled(filters)

    def prefetch_scans(self, tree: Any) -> None:
        """Start the nearest-neighbour scans of a rewritten statement on the background thread,
        so their BLAS work (which releases the GIL) overlaps with rendering, DataFusion's
        planning and the statement's other branches; ``nearest_scan`` collects the result.
        Only the rewrite's own calls (the vector and filter passed by stash key) are
        prefetched."""
        for reference, column, function, key, k, _ in nearest_scan_calls(tree):
            vector = self._vectors.get(key)
            if vector is None or key in self._prefetched:
                continue
            self._prefetched[key] = self._in_background(
                functools.partial(
                    self._nearest_rows,
                    reference,
                    column,
                    function,
                    vector,
                    k,
                    self._filters.get(key),
                    self._ties.get(key),
                )
            )

    def _in_background(self, work: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        with self._lock:
            if self._prefetcher is None:
                self._prefetcher = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="hdq-nearest"
                )
            return self._prefetcher.submit(work)

    # -- table functions -------------------------------------------------------------------

    def _resolve(self, function: str, reference: Any, column: Any) -> tuple[LoadedTable, str]:
        if not isinstance(reference, str) or not isinstance(column, str):
            raise ValueError(f"{function}: table and column must be string literals")
        engine = self._engine
        try:
            name = TableName.parse(
                reference, default_catalog=engine.catalog, default_schema=engine.schema
            )
        except PlanError as error:
            raise ValueError(f"{function}: {error}") from None
        return engine._loaded(name), column.lower()

    def _reference(self, loaded: LoadedTable) -> str:
        return f"{self._engine.catalog}.{self._engine.schema}.{loaded.entry.name}"

    def bm25_search(self, *arguments: Any) -> Table:
        """``bm25_search`` (module docstring)."""
        name = "bm25_search"
        reference, column, query, *rest = literal_arguments(name, arguments, minimum=3, maximum=4)
        k = rest[0] if rest else None
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k <= 0):
            raise ValueError(f"{name}: k must be a positive integer, got {k!r}")
        if not isinstance(query, str):
            raise ValueError(f"{name}: the query must be a string literal")
        loaded, column = self._resolve(name, reference, column)
        entry = loaded.entry
        if k is None:
            # Without k every matching row comes back, so a WHERE over the result sees them
            # all (exact; the Hotdata engine's own default bound is "much larger" than a
            # typical k but not published, engine contract §1.1).
            k = max(1, entry.rows)
        if column not in entry.text_indexes:
            raise ValueError(
                f"No BM25 index found on column '{column}' for {self._reference(loaded)}"
            )
        # A tie at the k-th place is cut by the table's key: the k rows are the first k of
        # ORDER BY score DESC, <key> ASC for any k, so pages of one branch tile its ranking.
        rowids, scores = loaded.bm25[column].search(query, k, tie_order=loaded.tie_order())
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        return relation(rows.append_column("score", pa.array(scores, type=pa.float32())))

    def vector_search(self, *arguments: Any) -> Table:
        """``vector_search`` (module docstring)."""
        name = "vector_search"
        reference, column, query, k = literal_arguments(name, arguments, minimum=4, maximum=4)
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"{name}: k must be a positive integer, got {k!r}")
        if not isinstance(query, str):
            raise ValueError(f"{name}: the query must be a string literal")
        loaded, column = self._resolve(name, reference, column)
        vector = loaded.entry.vector_for_source(column)
        if vector is None:
            raise ValueError(
                f"No vector index found on column '{column}' for {self._reference(loaded)}"
            )
        embedder = self._engine.embedder
        if embedder is None or str(embedder.name) != vector.model:
            raise ValueError(
                f"{name}: column '{column}' was embedded by '{vector.model}'; open the engine "
                "with that embedder"
            )
        query_vector = np.asarray(embedder.embed_query(query), dtype=np.float64)
        # The k nearest rows that have a vector; a tie at the k-th place is cut by the table's
        # key, so the k rows are the first k of ORDER BY _distance ASC, <key> ASC for any k.
        nearest, distances = loaded.vector_index(vector.name).nearest(
            COSINE_DISTANCE, query_vector, k, with_ties=True
        )
        rounded = float32_distances(distances)
        kept = np.lexsort((loaded.tie_order()[nearest], rounded))[:k]
        order = kept[np.argsort(nearest[kept], kind="stable")]  # rowid order, as the engine's
        rowids = nearest[order]
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        values = pa.array(rounded[order], type=pa.float32())
        return relation(rows.append_column("_distance", values))

    def nearest_scan(self, *arguments: Any) -> Table:
        """``nearest_scan('<table>', '<vector column>', '<distance function>', ARRAY[...], k,
        '<filter>' | NULL)``: the k rows nearest the vector among those the filter keeps, with
        every table column, ``_distance`` (Float32, as the distance function returns it) and
        the rowid (the tie-break). What the fast-path rewrite reads; see
        :mod:`~hotdata_retrieval.engines.local.fastpath`: its calls pass a stash key for the
        vector and NULL for the filter, whose predicate is stashed under the same key (filter
        text is parsed only in a call written by hand)."""
        reference, column, function, vector, k, filter_text = literal_arguments(
            NEAREST_SCAN, arguments, minimum=6, maximum=6
        )
        kept: Predicate | None = None
        tie_key: str | None = None
        if filter_text is not None:  # a call written by hand
            try:
                kept = parse_filter(filter_text)
            except PlanError as error:
                raise ValueError(f"{NEAREST_SCAN}: {error}") from None
        if isinstance(vector, str):  # a stashed scan (the rewrite's own statements)
            prefetched = self._prefetched.pop(vector, None)
            if prefetched is not None and not prefetched.cancelled():
                return relation(prefetched.result())
            key = vector
            try:
                vector = self._vectors[key]
            except KeyError:
                raise ValueError(f"{NEAREST_SCAN}: no query vector {key!r}") from None
            kept = self._filters.get(key) if kept is None else kept
            tie_key = self._ties.get(key)
        return relation(self._nearest_rows(reference, column, function, vector, k, kept, tie_key))

    def _nearest_rows(
        self,
        reference: Any,
        column: Any,
        function: Any,
        vector: Any,
        k: Any,
        predicate: Predicate | None,
        tie_key: str | None = None,
    ) -> pa.Table:
        """The rows ``nearest_scan`` returns, as an Arrow table (``predicate``: the rows it
        keeps, ``None`` for every row; ``tie_key``: the column ties are ordered by, ``None``
        for the table's key)."""
        loaded, column = self._resolve(NEAREST_SCAN, reference, column)
        mask = None if predicate is None else loaded.passing_rows(predicate)
        try:
            rowids, distances, rounded = nearest_scan(
                loaded, column, function, vector, int(k), mask, with_nulls=True, tie_key=tie_key
            )
        except DimensionMismatchError as error:
            raise ValueError(str(error)) from None
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        rows = rows.append_column(
            "_distance", pa.array(rounded, type=pa.float32(), mask=np.isnan(distances))
        )
        ties = loaded.tie_order(tie_key)[rowids]
        return rows.append_column(TIE_COLUMN, pa.array(ties, pa.int64()))

    # -- vector_distance -------------------------------------------------------------------

    def vector_distance(self, texts: pa.Array, queries: pa.Array) -> pa.Array:
        """``vector_distance(<text column>, '<query>')``: the cosine distance from each row's
        stored vector to the embedded query, as ``vector_search`` computes it (the same
        float64 kernel, then Float32), for the rows the statement's WHERE keeps.

        A scalar function sees only the texts, so each text is looked up among the vectors
        the engine's embedder made (any table: the same model maps the same text to the same
        vector). A NULL text gives a NULL distance; so does a text no column embedded.

        Raises:
            ValueError: no embedder, or not one text of the column was embedded by it.
        """
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        embedder = self._engine.embedder
        if embedder is None:
            raise ValueError(
                "vector_distance: the engine has no embedder; open it with the embedder that "
                "made the column's vectors"
            )
        present = list(texts.to_pylist())
        query = next((value for value in queries.to_pylist() if value is not None), None)
        if not isinstance(query, str) or not present:
            return pa.nulls(len(present), type=pa.float32())
        model = str(embedder.name)
        vectors = self._embedded_texts(model, opened=True)
        if any(text is not None and text not in vectors for text in present):
            vectors = self._embedded_texts(model, opened=False)  # the tables not open yet too
        rows = [vectors.get(text) if text is not None else None for text in present]
        found = [row for row in rows if row is not None]
        if not found and any(text is not None for text in present):
            raise ValueError(
                "vector_distance: the column's texts were not embedded by "
                f"'{embedder.name}'; load the column with embed_columns to search it by "
                "meaning"
            )
        distances = np.full(len(rows), np.nan)
        if found:
            matrix = np.stack(found).astype(np.float64)
            query_vector = np.asarray(embedder.embed_query(query), dtype=np.float64)
            at = np.array([i for i, row in enumerate(rows) if row is not None], dtype=np.int64)
            distances[at] = query_distances(COSINE_DISTANCE, matrix, query_vector)
        mask = np.isnan(distances)
        return pa.array(float32_distances(distances), type=pa.float32(), mask=mask)

    def _embedded_texts(self, model: str, *, opened: bool) -> dict[str, np.ndarray]:
        """Each text a table's vector column embedded with ``model``, mapped to its float64
        vector: of the tables open already (``opened``: the statement's own are), or of every
        table, opened now (built once per set of table versions)."""
        tables = self._engine._embedded_tables(model, opened=opened)
        sources = tuple(
            sorted(
                (loaded.entry.name, loaded.entry.version, vector.source_column, vector.name)
                for loaded in tables
                for vector in loaded.entry.vector_columns
                if vector.model == model
            )
        )
        key = (model, sources)
        cached = self._text_vectors
        if cached is not None and cached[0] == key:
            return cached[1]
        by_name = {loaded.entry.name: loaded for loaded in tables}
        mapping: dict[str, np.ndarray] = {}
        for name, _, source_column, vector_column in sources:
            loaded = by_name[name]
            index = loaded.vector_index(vector_column)
            texts = loaded.data.column(source_column).to_pylist()
            for rowid in index.present.tolist():
                mapping.setdefault(texts[rowid], index.matrix[rowid])
        self._text_vectors = (key, mapping)
        return mapping
