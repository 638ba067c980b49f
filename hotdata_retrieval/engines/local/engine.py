"""The embedded local engine: DataFusion + tantivy + NumPy, running Hotdata-dialect SQL unchanged.

The Hotdata engine is built on DataFusion, and DataFusion is the one embedded engine that runs
the compiled fused SQL byte for byte unchanged (``shared/reference/local-engines.md`` §A). This
module reproduces the engine's SQL surface (engine contract §1.1-1.5):

- three-part names resolve: the session's default catalog and schema are ``default.public``;
- ``bm25_search('<c>.<s>.<t>', '<column>', '<query>' [, k])``: a table function returning the
  table's columns plus ``score`` (Float32) for the top k rows, in **rowid order** as the engine
  does; no index → ``No BM25 index found on column '<column>' for <c>.<s>.<t>``;
- ``vector_search('<c>.<s>.<t>', '<text column>', '<query>', k)``: embeds the query with the
  model that embedded the column, returns the table's columns plus ``_distance`` for the k
  nearest rows, in rowid order;
- ``cosine_distance``, ``l2_distance`` (squared), ``negative_dot_product``: scalar UDFs;
- ``hybrid_search(...)``: the native fused search of ``docs/spec/hybrid_search.md``, which the
  Hotdata engine does not have (engine contract §1.6); see
  :attr:`LocalEngine.native_hybrid_search`.

The Python UDF/UDTF traps measured in local-engines §A are respected: table functions return a
``datafusion.catalog.Table`` over a pyarrow dataset (never ``ctx.from_arrow``), and SQL is
rendered with function names exactly as written.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.parquet as pq
from datafusion import SessionConfig, SessionContext, udf, udtf
from datafusion.catalog import Table

from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local.bm25 import Bm25Index, build_bm25_index
from hotdata_retrieval.engines.local.database import DatabaseError, TableEntry, VectorColumn
from hotdata_retrieval.engines.local.distance import (
    DISTANCE_KERNELS,
    cached_vector_matrix,
    distance_udf_arrays,
)
from hotdata_retrieval.engines.local.hybrid import HYBRID_SEARCH, HybridSearch
from hotdata_retrieval.engines.local.loading import normalize_text_types
from hotdata_retrieval.engines.results import SearchResult, hits_from_rows
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from hotdata_retrieval.plan.filters import predicate_columns
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.routing import TableIndexes, VectorIndex

__all__ = ["DEFAULT_BM25_BOUND", "EngineError", "LocalEngine"]

DEFAULT_BM25_BOUND = 10_000
"""Rows ``bm25_search`` considers without a 4th argument. The Hotdata engine's own default is
"much larger" than a typical k but not published (engine contract §1.1); this is the local
choice."""

_PYERR_VALUE = re.compile(r'value: \w+\((?P<quote>["\'])(?P<message>.*?)(?P=quote)\)', re.DOTALL)


def _engine_message(error: BaseException) -> str:
    """The readable message inside a DataFusion error (which wraps Python errors as PyErr)."""
    text = str(error)
    match = _PYERR_VALUE.search(text)
    if match is not None:
        return match.group("message").replace("\\'", "'").replace('\\"', '"')
    return text


def _arguments(name: str, arguments: Sequence[Any], *, minimum: int, maximum: int) -> list[Any]:
    if not minimum <= len(arguments) <= maximum:
        shape = f"{name}('catalog.schema.table', 'column', 'query'" + (
            ", k)" if minimum == 4 else "[, k])"
        )
        raise ValueError(f"{name} takes {minimum} to {maximum} arguments: {shape}")
    values = []
    for argument in arguments:
        try:
            values.append(argument.python_value().as_py())
        except Exception:  # a column or expression, not a literal
            raise ValueError(f"{name}: every argument must be a literal, got {argument}") from None
    return values


def _vector_column_type() -> pa.DataType:
    return pa.list_(pa.float32())


@attrs.define
class _LoadedTable:
    entry: TableEntry
    data: pa.Table
    bm25: dict[str, Bm25Index]
    vectors: dict[str, tuple[np.ndarray, np.ndarray]]


class LocalEngine:
    """An embedded database directory you can search with compiled plans or raw SQL.

    Args:
        path: the database directory (created if missing). ``None``: a temporary directory,
            deleted by :meth:`close`.
        embedder: embeds text for ``embed_columns`` at load time and for ``vector_search``
            queries. Its ``name`` must match the model recorded for a column. Default: none
            (semantic search then needs one).
        catalog: the catalog name three-part references use (default ``default``).
        schema: the schema name (default ``public``).

    >>> import pyarrow as pa
    >>> from hotdata_retrieval import Bm25Search, SearchPlan
    >>> with LocalEngine() as engine:
    ...     _ = engine.load_table("docs", pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]}),
    ...                           text_columns=["body"])
    ...     result = engine.search(SearchPlan(
    ...         source=Bm25Search(table="docs", column="body", query_text="fox")))
    >>> result.keys
    [1]
    """

    native_hybrid_search: ClassVar[str | None] = HYBRID_SEARCH
    """The engine's native ``hybrid_search`` table function (``docs/spec/hybrid_search.md``):
    compile for a dialect whose profile names it to use it instead of the CTE form."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: Any = None,
        catalog: str = "default",
        schema: str = "public",
    ) -> None:
        self._temporary = path is None
        self.root = Path(tempfile.mkdtemp(prefix="hdq-")) if path is None else Path(path)
        if self.root.exists() and not self.root.is_dir():
            raise DatabaseError(f"database path {self.root} exists and is not a directory")
        self.root.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.catalog = normalize_identifier(catalog, label="catalog")
        self.schema = normalize_identifier(schema, label="schema")
        self._tables: dict[str, _LoadedTable] = {}
        self._entries = database.read_catalog(self.root)
        self._context = self._new_context()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release the session; a temporary database directory is deleted."""
        self._tables.clear()
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- session -----------------------------------------------------------------------------

    def _new_context(self) -> SessionContext:
        config = SessionConfig().with_default_catalog_and_schema(self.catalog, self.schema)
        context = SessionContext(config.with_information_schema(True))
        for function in DISTANCE_KERNELS:
            context.register_udf(
                udf(
                    _distance_udf(function),
                    [_vector_column_type(), _vector_column_type()],
                    pa.float32(),
                    "immutable",
                    function,
                )
            )
        context.register_udtf(udtf(self._bm25_search, "bm25_search"))
        context.register_udtf(udtf(self._vector_search, "vector_search"))
        context.register_udtf(udtf(HybridSearch(self), HYBRID_SEARCH))
        for entry in self._entries.values():
            self._register(context, entry)
        return context

    def _register(
        self, context: SessionContext, entry: TableEntry, data: pa.Table | None = None
    ) -> None:
        """Register ``entry`` from memory. Registering the Parquet file instead would make
        DataFusion 55 decode every vector on every scan (about 0.8 s for 100,000 x 384
        floats) and keep roughly the column's size of resident memory per scan (measured,
        ``docs/benchmarks.md``); from memory the same scan takes milliseconds."""
        loaded = self._loaded(entry, data)
        if context.table_exist(entry.name):
            context.deregister_table(entry.name)
        batches = loaded.data.combine_chunks().to_batches() or [
            pa.RecordBatch.from_pylist([], schema=loaded.data.schema)
        ]
        context.register_record_batches(entry.name, [batches])

    # -- tables ------------------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, TableEntry]:
        """The database's tables, by name."""
        return dict(self._entries)

    def table_name(self, name: str) -> TableName:
        """``name`` completed with this engine's catalog and schema."""
        return TableName.parse(name, default_catalog=self.catalog, default_schema=self.schema)

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by: its BM25 columns and vector columns.

        Raises:
            EngineError: no such table.
        """
        entry = self._entry(table)
        return TableIndexes(
            table=TableName(catalog=self.catalog, schema=self.schema, name=entry.name),
            bm25_columns=entry.text_indexes,
            vectors=tuple(
                VectorIndex(column=v.name, source_column=v.source_column, metric=v.metric)
                for v in entry.vector_columns
            ),
            key_column=entry.key_column or "id",
        )

    def embedder_for(self, table: str | TableName) -> Any:
        """The embedder that made ``table``'s vectors, if this engine has it (else ``None``)."""
        entry = self._entry(table)
        models = {vector.model for vector in entry.vector_columns}
        if self.embedder is not None and str(self.embedder.name) in models:
            return self.embedder
        return None

    def _entry(self, reference: str | TableName) -> TableEntry:
        name = self.table_name(reference) if isinstance(reference, str) else reference
        if (name.catalog, name.schema) != (self.catalog, self.schema) or (
            name.name not in self._entries
        ):
            raise EngineError(f"table '{name}' not found")
        return self._entries[name.name]

    def _loaded(self, entry: TableEntry, data: pa.Table | None = None) -> _LoadedTable:
        loaded = self._tables.get(entry.name)
        if loaded is not None and loaded.entry.version == entry.version:
            return loaded
        if data is None:
            directory = database.version_directory(self.root, entry)
            data = pq.read_table(directory / "data.parquet")
        loaded = _LoadedTable(entry=entry, data=data, bm25={}, vectors={})
        self._tables[entry.name] = loaded
        return loaded

    def load_table(
        self,
        name: str,
        data: pa.Table,
        *,
        key_column: str | None = "id",
        text_columns: Sequence[str] = (),
        embed_columns: Sequence[str] = (),
        progress: bool = False,
        batch_size: int = 64,
    ) -> TableEntry:
        """Store ``data`` as table ``name`` (replacing any previous version), build a BM25
        index on each of ``text_columns`` and embed each of ``embed_columns`` into
        ``<column>_embedding``.

        The previous version stays readable until the new one is complete; if anything fails,
        it is left intact. Vectors of texts seen in an earlier load by the same model are
        reused instead of recomputed.

        Args:
            name: a bare table name (the engine's catalog and schema are implied).
            data: the rows, as an Arrow table.
            key_column: the unique key column (checked), or ``None``.
            text_columns: string columns to index for ``bm25_search``.
            embed_columns: string columns to embed for ``vector_search`` (needs ``embedder``).
            progress: show a progress bar while embedding.
            batch_size: texts per embedding batch.

        Raises:
            EngineError: a missing or non-text column, a duplicated or NULL key, an empty
                table name, or embed columns without an embedder.
        """
        table = normalize_identifier(name, label="table")
        if any(character in table for character in "./\\") or table.strip() != table:
            raise EngineError(
                f"table name {name!r} may not contain '.', '/' or '\\' or surrounding spaces: "
                "it names a table of the session and a directory of the database"
            )
        data = normalize_text_types(_lowercase_columns(data))
        if text_columns or embed_columns:
            for reserved in ("score", "_distance"):
                if reserved in data.column_names:
                    raise EngineError(
                        f"column {reserved!r} is reserved in a searchable table: bm25_search "
                        "and vector_search add a column of that name to their results; "
                        "rename it before loading"
                    )
        key = None if key_column is None else normalize_identifier(key_column, label="key column")
        if key is not None:
            _check_key(data, key)
        texts = tuple(normalize_identifier(c, label="text column") for c in text_columns)
        embeds = tuple(normalize_identifier(c, label="embed column") for c in embed_columns)
        for column in (*texts, *embeds):
            _check_text_column(data, column)
        if embeds and self.embedder is None:
            raise EngineError("embed_columns need an embedder: LocalEngine(embedder=...)")

        vectors: list[VectorColumn] = []
        for column in embeds:
            vector_name = f"{column}_embedding"
            texts_to_embed = data.column(column).to_pylist()
            matrix = self._embed_column(table, column, texts_to_embed, progress, batch_size)
            missing = pa.array([text is None for text in texts_to_embed], type=pa.bool_())
            array = pa.FixedSizeListArray.from_arrays(
                pa.array(matrix.reshape(-1), type=pa.float32()), matrix.shape[1], mask=missing
            ).cast(_vector_column_type())
            if vector_name in data.column_names:
                data = data.drop_columns([vector_name])
            data = data.append_column(vector_name, array)
            vectors.append(
                VectorColumn(
                    name=vector_name,
                    source_column=column,
                    model=str(self.embedder.name),
                    dimensions=int(matrix.shape[1]),
                )
            )

        version, directory = database.new_version_directory(self.root, table)
        try:
            pq.write_table(data, directory / "data.parquet")
            for column in texts:
                build_bm25_index(directory / "bm25" / column, data.column(column).to_pylist())
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        entry = TableEntry(
            name=table,
            version=version,
            rows=data.num_rows,
            key_column=key,
            columns=tuple(data.column_names),
            text_indexes=texts,
            vector_columns=tuple(vectors),
        )
        previous = self._entries.get(table)
        previous_loaded = self._tables.pop(table, None)
        try:
            self._register(self._context, entry, data)
        except Exception as error:
            shutil.rmtree(directory, ignore_errors=True)
            self._tables.pop(table, None)
            if previous is not None:
                if previous_loaded is not None:
                    self._tables[table] = previous_loaded
                self._register(self._context, previous)
            raise EngineError(
                f"cannot register table {table!r}: {_engine_message(error)}"
            ) from None
        entries = {**self._entries, table: entry}
        database.write_catalog(self.root, entries)
        self._entries = entries
        database.remove_stale_versions(self.root, entries)
        return entry

    def _embed_column(
        self, table: str, column: str, texts: list[Any], progress: bool, batch_size: int
    ) -> np.ndarray:
        from hotdata_retrieval.embed import embed_in_batches

        model = str(self.embedder.name)
        dimensions = int(self.embedder.dimensions)
        hashes = database.text_hashes([t if isinstance(t, str) else None for t in texts])
        cached = database.read_embedding_cache(self.root, table, column, model, dimensions)
        missing = sorted({h for h in hashes if h and h not in cached})
        first_text = {h: t for h, t in zip(hashes, texts) if h}
        if missing:
            fresh = embed_in_batches(
                self.embedder,
                [first_text[h] for h in missing],
                batch_size=batch_size,
                progress=progress,
                description=f"embedding {table}.{column}",
            )
            cached.update(zip(missing, fresh))
        matrix = np.zeros((len(texts), dimensions), dtype=np.float32)
        for row, value in enumerate(hashes):
            if value:
                matrix[row] = cached[value]
        database.write_embedding_cache(self.root, table, column, model, hashes, matrix)
        return matrix

    def drop_table(self, name: str) -> None:
        """Remove table ``name``.

        Raises:
            EngineError: no such table.
        """
        entry = self._entry(name)
        entries = {key: value for key, value in self._entries.items() if key != entry.name}
        database.write_catalog(self.root, entries)
        self._entries = entries
        self._tables.pop(entry.name, None)
        self._context.deregister_table(entry.name)
        database.remove_stale_versions(self.root, entries)

    # -- queries -----------------------------------------------------------------------------

    def sql(self, text: str) -> pa.Table:
        """Run one SQL statement and return its rows as an Arrow table.

        Raises:
            EngineError: the engine's own message (planning or execution).
        """
        try:
            return self._context.sql(text).to_arrow_table()
        except HotdataRetrievalError:
            raise
        except Exception as error:
            raise EngineError(_engine_message(error), sql=text) from None

    def search(self, plan: SearchPlan) -> SearchResult:
        """Compile ``plan``, run it, and return typed hits, best first.

        Each hit carries its key, the plan's columns, the fused (or raw) score, and each
        branch's rank and raw score.

        Raises:
            EngineError: a missing table, column or index, or an engine failure.
        """
        self._check_plan(plan)
        requested = plan.projection
        columns = requested if plan.key_column in requested else (plan.key_column, *requested)
        try:
            internal = attrs.evolve(
                plan, columns=columns, include_branch_scores=plan.fusion is not None
            )
        except PlanError:
            # A projected column is named like a debug column (say ``text_rank``): keep the
            # user's column; branch ranks are then not reported.
            internal = attrs.evolve(plan, columns=columns)
        statement = to_sql(internal)
        rows = self.sql(statement).to_pylist()
        return SearchResult(hits=hits_from_rows(internal, requested, rows), sql=to_sql(plan))

    def _check_plan(self, plan: SearchPlan) -> None:
        entry = self._entry(plan.table)
        known = set(entry.columns)
        needed = {*plan.projection, plan.key_column}
        if plan.filter is not None:
            needed |= predicate_columns(plan.filter)
        missing = sorted(needed - known)
        if missing:
            raise EngineError(
                f"column '{missing[0]}' not found in table '{plan.table}'; "
                f"columns: {', '.join(entry.columns)}"
            )
        for branch in plan.branches:
            if isinstance(branch, NearestNeighborSearch):
                if branch.column not in known:
                    raise EngineError(f"column '{branch.column}' not found in table '{plan.table}'")
                vector = next((v for v in entry.vector_columns if v.name == branch.column), None)
                if vector is not None and vector.dimensions != len(branch.query_vector):
                    raise PlanError(
                        f"query vector has {len(branch.query_vector)} dimensions; column "
                        f"'{branch.column}' holds {vector.dimensions}",
                        field="query_vector",
                        value=len(branch.query_vector),
                    )

    # -- table functions ---------------------------------------------------------------------

    def _resolve(self, function: str, reference: Any, column: Any) -> tuple[_LoadedTable, str]:
        if not isinstance(reference, str) or not isinstance(column, str):
            raise ValueError(f"{function}: table and column must be string literals")
        try:
            name = TableName.parse(
                reference, default_catalog=self.catalog, default_schema=self.schema
            )
        except PlanError as error:
            raise ValueError(f"{function}: {error}") from None
        entry = self._entry(name)
        return self._loaded(entry), column.lower()

    def _bm25_search(self, *arguments: Any) -> Table:
        reference, column, query, *rest = _arguments("bm25_search", arguments, minimum=3, maximum=4)
        k = rest[0] if rest else DEFAULT_BM25_BOUND
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"bm25_search: k must be a positive integer, got {k!r}")
        if not isinstance(query, str):
            raise ValueError("bm25_search: the query must be a string literal")
        loaded, column = self._resolve("bm25_search", reference, column)
        entry = loaded.entry
        if column not in entry.text_indexes:
            raise ValueError(
                f"No BM25 index found on column '{column}' for "
                f"{self.catalog}.{self.schema}.{entry.name}"
            )
        index = loaded.bm25.get(column)
        if index is None:
            directory = database.version_directory(self.root, entry) / "bm25" / column
            index = loaded.bm25[column] = Bm25Index(directory)
        rowids, scores = index.search(query, k)
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        return self._relation(rows.append_column("score", pa.array(scores, type=pa.float32())))

    def _vector_search(self, *arguments: Any) -> Table:
        reference, column, query, k = _arguments("vector_search", arguments, minimum=4, maximum=4)
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"vector_search: k must be a positive integer, got {k!r}")
        if not isinstance(query, str):
            raise ValueError("vector_search: the query must be a string literal")
        loaded, column = self._resolve("vector_search", reference, column)
        entry = loaded.entry
        vector = entry.vector_for_source(column)
        if vector is None:
            raise ValueError(
                f"No vector index found on column '{column}' for "
                f"{self.catalog}.{self.schema}.{entry.name}"
            )
        if self.embedder is None or str(self.embedder.name) != vector.model:
            raise ValueError(
                f"vector_search: column '{column}' was embedded by '{vector.model}'; "
                "open the engine with that embedder"
            )
        matrix, present = cached_vector_matrix(
            loaded.vectors, vector.name, loaded.data.column(vector.name)
        )
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float64)
        queries = np.broadcast_to(query_vector, (matrix.shape[0], query_vector.shape[0]))
        distances = DISTANCE_KERNELS["cosine_distance"](matrix, queries)
        # The k nearest rows that have a vector; a tie at the k-th place is cut by rowid.
        order = present[np.lexsort((present, distances[present]))]
        rowids = np.sort(order[: min(k, order.shape[0])])
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        values = pa.array(distances[rowids].astype(np.float32), type=pa.float32())
        return self._relation(rows.append_column("_distance", values))

    def _relation(self, rows: pa.Table) -> Table:
        """A table function's result. An in-memory dataset of zero rows has no fragments,
        which DataFusion 55 rejects when sorting it (``SanityCheckPlan``), so an empty result
        is served from an empty Arrow IPC file instead."""
        if rows.num_rows:
            return Table(ds.dataset(rows))
        key = hashlib.blake2b(rows.schema.serialize().to_pybytes(), digest_size=12).hexdigest()
        path = self.root / ".scratch" / f"empty-{key}.arrow"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            feather.write_feather(rows, str(path))
        return Table(ds.dataset(str(path), format="ipc"))


def _distance_udf(name: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def evaluate(left: pa.Array, right: pa.Array) -> pa.Array:
        return distance_udf_arrays(name, left, right)

    evaluate.__name__ = name
    return evaluate


def _lowercase_columns(data: pa.Table) -> pa.Table:
    names = [normalize_identifier(name, label="column") for name in data.column_names]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise EngineError(
            f"columns differ only in case and would collide once lower-cased: {duplicated[0]!r}"
        )
    return data.rename_columns(names)


def _check_key(data: pa.Table, key: str) -> None:
    if key not in data.column_names:
        raise EngineError(f"key column '{key}' not found; columns: {', '.join(data.column_names)}")
    values = data.column(key)
    if values.null_count:
        raise EngineError(f"key column '{key}' has {values.null_count} NULL values")
    if len(values.unique()) != len(values):
        raise EngineError(f"key column '{key}' is not unique")


def _check_text_column(data: pa.Table, column: str) -> None:
    if column not in data.column_names:
        raise EngineError(f"column '{column}' not found; columns: {', '.join(data.column_names)}")
    kind = data.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise EngineError(f"column '{column}' holds {kind}, not text")
