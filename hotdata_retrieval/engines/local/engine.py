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

SQL is read-only on every path: statements run with DataFusion's ``SQLOptions`` refusing DDL,
DML and other statements (``CREATE``, ``COPY``, ``INSERT``, ``SET``, ...), whatever the text
says, and the session reads no file by path (URL tables are off, no external tables). The
database changes only through :meth:`LocalEngine.load_table` and :meth:`LocalEngine.drop_table`.
Agent SQL (:meth:`LocalEngine.stream_sql`) also runs in a session of its own with a memory pool,
no spilling, no recursive queries, and a time limit that cancels the query.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sqlglot
from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext, SQLOptions, udf, udtf
from datafusion.catalog import Table

from hotdata_retrieval.compile import HOTDATA, DialectProfile, compile_plan, to_sql
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.engines.base import RoutesByIndexes, hotdata_profile
from hotdata_retrieval.engines.checks import (
    arrow_value_kind,
    check_columns,
    check_filter_values,
    check_reserved_columns,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local.bm25 import build_bm25_index
from hotdata_retrieval.engines.local.database import (
    AnnIndex,
    DatabaseError,
    TableEntry,
    VectorColumn,
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
    DISTANCE_FUNCTIONS,
    NEAREST_SCAN,
    ROWID_COLUMN,
    nearest_scan_calls,
    rewrite_fast_paths,
)
from hotdata_retrieval.engines.local.hybrid import HYBRID_SEARCH, HybridSearch
from hotdata_retrieval.engines.local.loading import normalize_text_types
from hotdata_retrieval.engines.local.masks import passing_rows
from hotdata_retrieval.engines.local.native import native_rows, nearest_scan
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, build_hnsw
from hotdata_retrieval.engines.local.sandbox import SqlWorker
from hotdata_retrieval.engines.local.tables import LoadedTable, key_problem, open_table
from hotdata_retrieval.engines.results import SearchResult, executed_plan, search_result
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import DistanceMetric, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.plan.values import FLOAT32_MAX
from hotdata_retrieval.routing import (
    LOCAL_ROUTING,
    RoutingPolicy,
    TableIndexes,
    VectorIndex,
)

__all__ = ["EngineError", "LocalEngine", "TableLoad"]

READ_ONLY = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
"""Every statement the engine runs is planned with these options: DataFusion refuses DDL
(``CREATE``/``DROP``, external tables, views), DML (``INSERT``, ``COPY ... TO``) and other
statements (``SET``, ``PREPARE``, transactions) at planning time, before anything executes."""

_REFUSED_STATEMENT = re.compile(r"\b(DDL|DML|Statement) not supported\b")

_GENERATOR_DIALECT = HOTDATA.sqlglot_dialect()
"""Renders the statements the fast-path rewrite changed (one instance; it holds no state)."""

_REFRESH_ATTEMPTS = 5
"""Times a reader reads the catalog again when a version it was about to open is replaced."""

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


def _embedding_label(table: str, column: str, hashes: Sequence[str | None], count: int) -> str:
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


def _vector_column_type() -> pa.DataType:
    return pa.list_(pa.float32())


@attrs.frozen(kw_only=True)
class TableLoad:
    """One table of a :meth:`LocalEngine.load_tables` call.

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
    """

    name: str
    data: pa.Table
    key_column: str | None = "id"
    text_columns: Sequence[str] = ()
    embed_columns: Sequence[str] = ()
    vector_index: str | None = None
    vector_metric: str = "cosine"


@attrs.frozen
class _Prepared:
    name: str
    data: pa.Table
    key: str | None
    texts: tuple[str, ...]
    embeds: tuple[str, ...]
    hnsw_function: str | None


class LocalEngine(RoutesByIndexes):
    """An embedded database directory you can search with compiled plans or raw SQL.

    Several engines, in several processes, may open one database directory at once: writes
    take turns under the database's writer lock and commit atomically; an open engine sees
    another process's commit at its next query (it reads the catalog again when
    ``catalog.json`` changed). A table whose files are damaged reports its error; the others
    serve (:attr:`damaged_tables`).

    Args:
        path: the database directory (created if missing). ``None``: a temporary directory,
            deleted by :meth:`close`.
        embedder: embeds text for ``embed_columns`` at load time and for ``vector_search``
            queries. Its ``name`` must match the model recorded for a column. Default: none
            (semantic search then needs one).
        catalog: the catalog name three-part references use (default ``default``).
        schema: the schema name (default ``public``).
        lock_timeout: seconds a write waits for another process's write (``None``: as long as
            it takes).
        profile: the dialect profile :meth:`search` compiles plans with (default ``hotdata``);
            one made from it with another compiler carries a fusion defined outside the
            library (:func:`~hotdata_retrieval.engines.base.hotdata_profile`).

    Raises:
        DatabaseError: ``path`` is not a directory, or its catalog cannot be read.
        EngineError: ``profile`` writes another dialect's SQL.

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
        lock_timeout: float | None = None,
        profile: str | DialectProfile = "hotdata",
    ) -> None:
        self.profile = hotdata_profile(profile, "the local engine")
        self._temporary = path is None
        # Absolute: the SQL worker opens the same directory, whatever its working directory.
        self.root = Path(tempfile.mkdtemp(prefix="hdq-")) if path is None else Path(path).absolute()
        if self.root.exists() and not self.root.is_dir():
            raise DatabaseError(f"database path {self.root} exists and is not a directory")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatabaseError(
                f"cannot create the database directory {self.root}: {error.strerror or error}"
            ) from None
        self.embedder = embedder
        self.catalog = normalize_identifier(catalog, label="catalog")
        self.schema = normalize_identifier(schema, label="schema")
        self.lock_timeout = lock_timeout
        self._state = threading.RLock()
        self._tables: dict[str, LoadedTable] = {}
        self._damaged: dict[str, str] = {}
        self._entries: dict[str, TableEntry] = {}
        self._signature: tuple[int, int, int] | None = None
        self._context = self._new_context(SessionConfig())
        self._sandboxes: dict[tuple[int, bool], SessionContext] = {}
        self._text_vectors: tuple[Any, dict[str, np.ndarray]] | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._prefetched: dict[str, concurrent.futures.Future[pa.Table]] = {}
        self._prefetcher: concurrent.futures.ThreadPoolExecutor | None = None
        self._worker: SqlWorker | None = None
        self._vector_keys = itertools.count()
        self._refresh()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release the session and stop the SQL worker; a temporary database directory is
        deleted."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._prefetcher is not None:
            self._prefetcher.shutdown(wait=True, cancel_futures=True)
            self._prefetcher = None
        self._tables.clear()
        self._sandboxes.clear()
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- sessions ----------------------------------------------------------------------------

    def _new_context(
        self, config: SessionConfig, runtime: RuntimeEnvBuilder | None = None
    ) -> SessionContext:
        config = config.with_default_catalog_and_schema(self.catalog, self.schema)
        context = SessionContext(config.with_information_schema(True), runtime)
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
        context.register_udtf(udtf(self._nearest_scan, NEAREST_SCAN))
        context.register_udf(
            udf(
                self._vector_distance,
                [pa.string(), pa.string()],
                pa.float32(),
                "stable",
                "vector_distance",
            )
        )
        context.register_udtf(udtf(HybridSearch(self), HYBRID_SEARCH))
        for loaded in self._tables.values():
            _register(context, loaded)
        return context

    def _sandbox(self, limits: SqlLimits) -> SessionContext:
        """The session agent SQL runs in: ``limits.memory_bytes`` of memory pool shared by
        its statements, no disk manager (nothing spills to disk), recursive queries only when
        the limits allow them. One per distinct pair of those settings."""
        key = (limits.memory_bytes, limits.allow_recursive_queries)
        with self._state:
            context = self._sandboxes.get(key)
            if context is None:
                runtime = (
                    RuntimeEnvBuilder()
                    .with_greedy_memory_pool(limits.memory_bytes)
                    .with_disk_manager_disabled()
                )
                config = SessionConfig().set(
                    "datafusion.execution.enable_recursive_ctes",
                    "true" if limits.allow_recursive_queries else "false",
                )
                context = self._sandboxes[key] = self._new_context(config, runtime)
            return context

    def _contexts(self) -> list[SessionContext]:
        return [self._context, *self._sandboxes.values()]

    # -- the catalog -------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Follow ``catalog.json`` when another writer (or process) committed since it was
        last read: open the tables whose version changed, forget the dropped ones. A table
        whose files cannot be opened is recorded in :attr:`damaged_tables`; the rest serve.

        Raises:
            DatabaseError: the catalog itself cannot be read.
        """
        with self._state:
            for _ in range(_REFRESH_ATTEMPTS):
                signature = database.catalog_signature(self.root)
                if signature == self._signature:
                    return
                entries = database.read_catalog(self.root)
                if self._open_entries(entries, signature):
                    self._signature = signature
                    return
            raise DatabaseError(
                f"the database {self.root} changed {_REFRESH_ATTEMPTS} times while it was "
                "being opened; try again"
            )

    def _open_entries(
        self, entries: dict[str, TableEntry], signature: tuple[int, int, int] | None
    ) -> bool:
        """Hold ``entries`` (read from the catalog at ``signature``) open; ``False`` when a
        version vanished because a newer commit replaced it."""
        for name in [name for name in self._tables if name not in entries]:
            self._forget(name)
        for name in [name for name in self._damaged if name not in entries]:
            del self._damaged[name]
        for name, entry in entries.items():
            current = self._tables.get(name)
            if current is not None and current.entry.version == entry.version:
                continue
            try:
                loaded = open_table(self.root, entry)
            except FileNotFoundError:
                if database.catalog_signature(self.root) != signature:
                    return False  # replaced meanwhile: read the newer catalog
                self._damage(name, f"its version directory {entry.version} is missing")
                continue
            except DatabaseError as error:
                self._damage(name, str(error))
                continue
            self._install(loaded)
        self._entries = dict(entries)
        return True

    def _damage(self, name: str, message: str) -> None:
        self._forget(name)
        self._damaged[name] = message

    def _install(self, loaded: LoadedTable) -> None:
        for context in self._contexts():
            _register(context, loaded)
        self._tables[loaded.entry.name] = loaded
        self._damaged.pop(loaded.entry.name, None)

    def _forget(self, name: str) -> None:
        self._tables.pop(name, None)
        for context in self._contexts():
            if context.table_exist(name):
                context.deregister_table(name)

    # -- tables ------------------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, TableEntry]:
        """The database's tables, by name (damaged ones included)."""
        self._refresh()
        return dict(self._entries)

    @property
    def damaged_tables(self) -> dict[str, str]:
        """Tables whose files cannot be read, with the reason; loading one again repairs it."""
        self._refresh()
        return dict(self._damaged)

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows of ``table``'s current version as an Arrow table (``columns`` of it, in that
        order; default every column). Read from memory once the table is open: no query runs.

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        data = self._loaded(table).data
        if columns is None:
            return data
        missing = [column for column in columns if column not in data.column_names]
        if missing:
            raise EngineError(
                f"column '{missing[0]}' not found in table '{table}'; "
                f"columns: {', '.join(data.column_names)}"
            )
        return data.select(list(columns))

    def table_name(self, name: str) -> TableName:
        """``name`` completed with this engine's catalog and schema."""
        return TableName.parse(name, default_catalog=self.catalog, default_schema=self.schema)

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by: its BM25 columns and vector columns.

        Raises:
            EngineError: no such table, or it is damaged.
        """
        self._refresh()
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
        self._refresh()
        entry = self._entry(table)
        models = {vector.model for vector in entry.vector_columns}
        if self.embedder is not None and str(self.embedder.name) in models:
            return self.embedder
        return None

    routing_policy: ClassVar[RoutingPolicy] = LOCAL_ROUTING
    """How :meth:`plan_search` routes: every vector column here is engine-embedded and sits
    beside the BM25 index, so hybrid fuses BM25 with a caller-embedded search of it."""

    def _entry(self, reference: str | TableName) -> TableEntry:
        return self._loaded(reference).entry

    def _loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names.

        Raises:
            EngineError: no such table in this engine's catalog and schema, or it is damaged.
        """
        name = self.table_name(reference) if isinstance(reference, str) else reference
        if (name.catalog, name.schema) == (self.catalog, self.schema):
            loaded = self._tables.get(name.name)
            if loaded is not None:
                return loaded
            if name.name in self._damaged:
                raise EngineError(
                    f"table '{name}' cannot be read: {self._damaged[name.name]}; load it again "
                    "to repair it"
                )
        raise EngineError(f"table '{name}' not found")

    def load_table(
        self,
        name: str,
        data: pa.Table,
        *,
        key_column: str | None = "id",
        text_columns: Sequence[str] = (),
        embed_columns: Sequence[str] = (),
        vector_index: str | None = None,
        vector_metric: str = "cosine",
        progress: bool = False,
        batch_size: int = 64,
    ) -> TableEntry:
        """Store ``data`` as table ``name`` (replacing any previous version), build a BM25
        index on each of ``text_columns`` and embed each of ``embed_columns`` into
        ``<column>_embedding``. One table of :meth:`load_tables`; see there.

        Args:
            name: a bare table name (the engine's catalog and schema are implied).
            data: the rows, as an Arrow table.
            key_column: the unique key column (checked), or ``None``.
            text_columns: string columns to index for ``bm25_search``.
            embed_columns: string columns to embed for ``vector_search`` (needs ``embedder``).
            vector_index: ``"hnsw"`` to build an approximate index of each vector column
                (see :class:`TableLoad`); default exact search only.
            vector_metric: the metric a caller's vector column's HNSW index serves.
            progress: show a progress bar while embedding and building an index.
            batch_size: texts per embedding batch.

        Raises:
            EngineError: a missing or non-text column, a duplicated or NULL key, an empty
                table name, or embed columns without an embedder.
            DatabaseError: the database cannot be written (the message names the file);
                nothing was committed.
        """
        load = TableLoad(
            name=name,
            data=data,
            key_column=key_column,
            text_columns=tuple(text_columns),
            embed_columns=tuple(embed_columns),
            vector_index=vector_index,
            vector_metric=vector_metric,
        )
        return self.load_tables([load], progress=progress, batch_size=batch_size)[0]

    def load_tables(
        self, loads: Sequence[TableLoad], *, progress: bool = False, batch_size: int = 64
    ) -> list[TableEntry]:
        """Store several tables in one commit: after it every one of them is replaced, and if
        anything fails none is (a BEIR directory's ``corpus``, ``queries`` and ``qrels``).

        Every table is checked before anything is embedded or written. The write holds the
        database's writer lock from start to commit, so concurrent writers take turns and
        none loses another's tables; vectors of texts seen in an earlier load by the same
        model are reused instead of recomputed.

        Args:
            loads: the tables; names must be distinct.
            progress: show a progress bar while embedding.
            batch_size: texts per embedding batch.

        Returns:
            The new catalog entries, in the order of ``loads``.

        Raises:
            EngineError: a table that fails its checks (see :meth:`load_table`).
            DatabaseError: the database cannot be written, or another process holds the
                writer lock past ``lock_timeout``; nothing was committed.
        """
        prepared = [self._prepare(load) for load in loads]
        names = [item.name for item in prepared]
        if len(set(names)) != len(names):
            raise EngineError(f"a load names table {_first_repeat(names)!r} twice")
        with database.writer_lock(self.root, timeout=self.lock_timeout):
            current = database.read_catalog(self.root)
            expected = {n: current[n].version if n in current else None for n in names}
            staged: dict[str, tuple[TableEntry, Path, pa.Table]] = {}
            try:
                for item in prepared:
                    staged[item.name] = self._write_version(item, progress, batch_size)
                self._check_registrable([(entry, data) for entry, _, data in staged.values()])
                database.commit(
                    self.root,
                    expected,
                    {name: (entry, path) for name, (entry, path, _) in staged.items()},
                )
            except BaseException:
                for _, path, _ in staged.values():
                    shutil.rmtree(path, ignore_errors=True)
                raise
            with self._state:
                for entry, _, data in staged.values():
                    self._install(open_table(self.root, entry, data))
                self._signature = None  # read the committed catalog at the next query
                self._refresh()
        return [staged[name][0] for name in names]

    def _prepare(self, load: TableLoad) -> _Prepared:
        table = normalize_identifier(load.name, label="table")
        if any(character in table for character in "./\\") or table.strip() != table:
            raise EngineError(
                f"table name {load.name!r} may not contain '.', '/' or '\\' or surrounding "
                "spaces: it names a table of the session and a directory of the database"
            )
        data = _positive_zeros(normalize_text_types(_lowercase_columns(load.data)))
        if (
            load.text_columns
            or load.embed_columns
            or any(_is_vector_type(field.type) for field in data.schema)
        ):
            check_reserved_columns(data.column_names)
        key = (
            None
            if load.key_column is None
            else normalize_identifier(load.key_column, label="key column")
        )
        if key is not None:
            _check_key(data, key)
        for name in data.column_names:
            _check_vector_column(data, name, key)
        texts = tuple(normalize_identifier(c, label="text column") for c in load.text_columns)
        embeds = tuple(normalize_identifier(c, label="embed column") for c in load.embed_columns)
        for column in (*texts, *embeds):
            _check_text_column(data, column)
        if embeds and self.embedder is None:
            raise EngineError("embed_columns need an embedder: LocalEngine(embedder=...)")
        hnsw_function = None
        if load.vector_index is not None:
            if load.vector_index != "hnsw":
                raise EngineError(
                    f"unknown vector index {load.vector_index!r}; the local engine builds "
                    "'hnsw' (or none: exact search)"
                )
            try:
                import usearch  # noqa: F401
            except ImportError:
                raise EngineError(
                    "an HNSW index needs usearch: pip install 'hotdata-retrieval[ann]'"
                ) from None
            try:
                metric = DistanceMetric.parse(load.vector_metric)
            except PlanError as error:
                raise EngineError(str(error)) from None
            hnsw_function = HOTDATA.distance_function(metric)
        return _Prepared(
            name=table, data=data, key=key, texts=texts, embeds=embeds, hnsw_function=hnsw_function
        )

    def _write_version(
        self, item: _Prepared, progress: bool, batch_size: int
    ) -> tuple[TableEntry, Path, pa.Table]:
        """Embed ``item`` and write it complete into a staging directory."""
        data = item.data
        vectors: list[VectorColumn] = []
        for column in item.embeds:
            vector_name = f"{column}_embedding"
            texts_to_embed = data.column(column).to_pylist()
            matrix = self._embed_column(item.name, column, texts_to_embed, progress, batch_size)
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
        directory = database.new_staging_directory(self.root)
        try:
            pq.write_table(data, directory / "data.parquet")
            for column in item.texts:
                build_bm25_index(directory / "bm25" / column, data.column(column).to_pylist())
            ann_indexes = self._build_ann_indexes(item, data, directory, vectors, progress)
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

    @staticmethod
    def _build_ann_indexes(
        item: _Prepared,
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
            if not _is_vector_type(field.type):
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

    def _check_registrable(self, tables: Sequence[tuple[TableEntry, pa.Table]]) -> None:
        """Register each new table in a scratch session first: a table DataFusion cannot
        hold is refused before the commit."""
        scratch = SessionContext()
        for entry, data in tables:
            try:
                _register_data(scratch, entry.name, data)
            except Exception as error:
                raise EngineError(
                    f"cannot register table {entry.name!r}: {_engine_message(error)}"
                ) from None

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
                description=_embedding_label(table, column, hashes, len(missing)),
            )
            cached.update(zip(missing, fresh))
        matrix = np.zeros((len(texts), dimensions), dtype=np.float32)
        for row, value in enumerate(hashes):
            if value:
                matrix[row] = cached[value]
        database.write_embedding_cache(self.root, table, column, model, hashes, matrix)
        return matrix

    def drop_table(self, name: str) -> None:
        """Remove table ``name`` (a damaged one too).

        Raises:
            EngineError: no such table.
            DatabaseError: the catalog cannot be written; nothing changed.
        """
        self._refresh()
        table = self.table_name(name)
        if (table.catalog, table.schema) != (self.catalog, self.schema) or (
            table.name not in self._entries
        ):
            raise EngineError(f"table '{table}' not found")
        with database.writer_lock(self.root, timeout=self.lock_timeout):
            current = database.read_catalog(self.root)
            if table.name not in current:
                raise EngineError(f"table '{table}' not found")
            database.commit(
                self.root, {table.name: current[table.name].version}, {}, dropped=[table.name]
            )
            with self._state:
                self._signature = None
                self._refresh()

    # -- queries -----------------------------------------------------------------------------

    def sql(self, text: str) -> pa.Table:
        """Run one read-only SQL statement and return its rows as an Arrow table.

        DDL, DML and other statements are refused by DataFusion at planning time
        (:data:`READ_ONLY`); nothing bounds the time or memory the statement takes: for SQL
        from an untrusted author use :meth:`stream_sql`.

        Raises:
            EngineError: the engine's own message (planning or execution).
        """
        self._refresh()
        with self._stashed_vectors() as stash:
            return self._run(self._optimized(text, stash), text)

    def _run(self, statement: str, reported: str) -> pa.Table:
        try:
            return self._context.sql_with_options(statement, READ_ONLY).to_arrow_table()
        except HotdataRetrievalError:
            raise
        except Exception as error:
            raise EngineError(self._explain_failure(error), sql=reported) from None

    @contextlib.contextmanager
    def _stashed_vectors(self) -> Iterator[Callable[[list[float]], str]]:
        """A stash for one statement's query vectors, emptied when it has run."""
        keys: list[str] = []

        def stash(values: list[float]) -> str:
            key = f"hdq-vector:{next(self._vector_keys)}"
            self._vectors[key] = np.asarray(values, dtype=np.float64)
            keys.append(key)
            return key

        try:
            yield stash
        finally:
            for key in keys:
                self._vectors.pop(key, None)
                prefetched = self._prefetched.pop(key, None)
                if prefetched is not None:
                    prefetched.cancel()

    def _optimized(self, text: str, stash: Callable[[list[float]], str]) -> str:
        """``text`` with its nearest-neighbour fast-path shapes answered natively
        (:mod:`~hotdata_retrieval.engines.local.fastpath`); unchanged when it has none or does
        not parse."""
        lowered = text.lower()
        if not any(function in lowered for function in DISTANCE_FUNCTIONS):
            return text
        try:
            tree = sqlglot.parse_one(text, read=HOTDATA.sqlglot_dialect)
        except sqlglot.errors.SqlglotError:
            return text
        return self._rewritten(tree, stash) or text

    def _rewritten(self, tree: Any, stash: Callable[[list[float]], str]) -> str | None:
        """The tree rendered with its fast-path shapes rewritten, or ``None`` if it has none."""
        tree, count = rewrite_fast_paths(tree, self._fast_path_table, stash)
        if not count:
            return None
        self._prefetch_scans(tree)
        # The tree is ours (parsed or compiled for this call): render it without sqlglot's
        # defensive deep copy, which costs more than the rest of the rewrite.
        return str(_GENERATOR_DIALECT.generate(tree, copy=False))

    def _fast_path_table(self, table: Any) -> tuple[TableName, frozenset[str]] | None:
        parts = [part for part in (table.catalog, table.db, table.name) if part]
        try:
            name = TableName.parse(
                ".".join(_quoted(part) for part in parts),
                default_catalog=self.catalog,
                default_schema=self.schema,
            )
        except PlanError:
            return None
        if (name.catalog, name.schema) != (self.catalog, self.schema):
            return None
        loaded = self._tables.get(name.name)
        if loaded is None:
            return None
        return name, frozenset(loaded.entry.columns)

    def stream_sql(self, text: str, *, limits: SqlLimits | None = None) -> Iterator[pa.RecordBatch]:
        """Run one read-only SQL statement from an untrusted author under ``limits`` and yield
        its result batch by batch.

        The statement runs in the engine's SQL worker process
        (:mod:`~hotdata_retrieval.engines.local.sandbox`), so its limits hold whatever it does:
        past the time limit, or past the memory limit (its resident set beyond its size at
        rest), the worker is stopped; a crash ends only the worker; the next statement starts
        a fresh one. Inside, a session of its own refuses DDL, DML and other statements
        (:data:`READ_ONLY`), refuses recursive queries unless allowed, and fails sorts, joins
        and aggregates that outgrow a DataFusion memory pool of ``limits.memory_bytes``
        (nothing spills to disk). Batches are computed as they are read; closing the iterator
        stops the query.

        Args:
            text: one SQL statement.
            limits: the bounds (default :class:`~hotdata_retrieval.engines.limits.SqlLimits`).

        Yields:
            ``pyarrow.RecordBatch`` objects, in result order.

        Raises:
            SqlLimitError: the time or memory limit was passed, or the statement is recursive
                and recursion is not allowed; ``limit`` names which.
            EngineError: the engine's own message (planning or execution), or the worker
                stopped.
        """
        limits = SqlLimits() if limits is None else limits
        with self._state:
            if self._worker is None:
                self._worker = SqlWorker(
                    self.root, catalog=self.catalog, schema=self.schema, embedder=self.embedder
                )
            worker = self._worker
        yield from worker.stream(text, limits)

    def _stream_here(
        self, text: str, *, limits: SqlLimits
    ) -> Generator[pa.RecordBatch, None, None]:
        """``stream_sql``'s statement, run in this process: what the SQL worker calls. The
        time limit is checked between batches only (the worker's owner enforces it fully)."""
        self._refresh()
        deadline = time.monotonic() + limits.timeout_seconds
        context = self._sandbox(limits)
        try:
            for batch in context.sql_with_options(text, READ_ONLY).execute_stream():
                yield batch.to_pyarrow()
                if time.monotonic() > deadline:
                    raise limits.timeout_error(text)
        except HotdataRetrievalError:
            raise
        except Exception as error:
            raise _limit_error(error, limits, text) or EngineError(
                self._explain_failure(error), sql=text
            ) from None

    def _explain_failure(self, error: BaseException) -> str:
        """The engine's message, saying why when it refuses a statement kind or names a
        damaged table."""
        message = _engine_message(error)
        if _REFUSED_STATEMENT.search(message):
            return f"only read-only queries run here; the engine refused: {message}"
        for name, reason in self._damaged.items():
            if f"'{name}'" in message or f".{name}'" in message:
                return f"{message} (table '{name}' cannot be read: {reason})"
        return message

    def search(self, plan: SearchPlan) -> SearchResult:
        """Compile ``plan``, run it, and return typed hits, best first.

        Each hit carries its key, the plan's columns, the fused (or raw) score, and each
        branch's rank and raw score. A BM25 or nearest-neighbour branch, or a reciprocal rank
        or min-max fusion of such branches, is answered natively with the rows of its compiled
        statement, without DataFusion's fixed planning cost
        (:mod:`~hotdata_retrieval.engines.local.native`); any other plan's statement runs on
        DataFusion, its nearest-neighbour shapes rewritten to ``nearest_scan``
        (:mod:`~hotdata_retrieval.engines.local.fastpath`). ``SearchResult.sql`` is the
        statement either way.

        Raises:
            EngineError: a missing table, column or index, or an engine failure.
        """
        self._refresh()
        self._check_plan(plan)
        executed = executed_plan(plan)
        statement = to_sql(executed, self.profile)
        rows = native_rows(executed, self._loaded(executed.table))
        if rows is None:
            with self._stashed_vectors() as stash:
                optimized = (
                    self._rewritten(compile_plan(executed, self.profile), stash)
                    if executed.vector_columns
                    else None
                )
                rows = self._run(optimized or statement, statement).to_pylist()
        return search_result(plan, executed, rows, statement)

    def _in_background(self, work: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run ``work`` on the engine's background thread (nearest-neighbour scans, whose BLAS
        work releases the GIL); the thread is started on first use."""
        with self._state:
            if self._prefetcher is None:
                self._prefetcher = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="hdq-nearest"
                )
            return self._prefetcher.submit(work)

    def _check_plan(self, plan: SearchPlan) -> None:
        loaded = self._loaded(plan.table)
        entry = loaded.entry
        check_columns(plan, entry.columns)
        check_filter_values(
            plan.filter, {field.name: arrow_value_kind(field.type) for field in loaded.data.schema}
        )
        if plan.key_column != entry.key_column and not loaded.is_unique(plan.key_column):
            checked = (
                f"the table's key is '{entry.key_column}'"
                if entry.key_column
                else "the table was loaded without a key"
            )
            raise EngineError(
                f"key column '{plan.key_column}' is not unique in table '{plan.table}' "
                f"({checked}): a search merges and returns rows by key, so a repeated key "
                f"would return a row more than once; search with key_column="
                f"'{entry.key_column or 'a unique column'}'"
            )
        for branch in plan.branches:
            if isinstance(branch, NearestNeighborSearch):
                kind = loaded.data.schema.field(branch.column).type
                if not _is_vector_type(kind):
                    raise EngineError(
                        f"column '{branch.column}' of table '{plan.table}' holds {kind}, not "
                        "vectors (lists of numbers): a nearest-neighbour search needs a vector "
                        "column"
                    )
                vector = next((v for v in entry.vector_columns if v.name == branch.column), None)
                if vector is not None and vector.dimensions != len(branch.query_vector):
                    raise PlanError(
                        f"query vector has {len(branch.query_vector)} dimensions; column "
                        f"'{branch.column}' holds {vector.dimensions}",
                        field="query_vector",
                        value=len(branch.query_vector),
                    )

    # -- table functions ---------------------------------------------------------------------

    def _resolve(self, function: str, reference: Any, column: Any) -> tuple[LoadedTable, str]:
        if not isinstance(reference, str) or not isinstance(column, str):
            raise ValueError(f"{function}: table and column must be string literals")
        try:
            name = TableName.parse(
                reference, default_catalog=self.catalog, default_schema=self.schema
            )
        except PlanError as error:
            raise ValueError(f"{function}: {error}") from None
        return self._loaded(name), column.lower()

    def _bm25_search(self, *arguments: Any) -> Table:
        reference, column, query, *rest = _arguments("bm25_search", arguments, minimum=3, maximum=4)
        k = rest[0] if rest else None
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k <= 0):
            raise ValueError(f"bm25_search: k must be a positive integer, got {k!r}")
        if not isinstance(query, str):
            raise ValueError("bm25_search: the query must be a string literal")
        loaded, column = self._resolve("bm25_search", reference, column)
        entry = loaded.entry
        if k is None:
            # Without k every matching row comes back, so a WHERE over the result sees them
            # all (exact; the Hotdata engine's own default bound is "much larger" than a
            # typical k but not published, engine contract §1.1).
            k = max(1, entry.rows)
        if column not in entry.text_indexes:
            raise ValueError(
                f"No BM25 index found on column '{column}' for "
                f"{self.catalog}.{self.schema}.{entry.name}"
            )
        # A tie at the k-th place is cut by the table's key: the k rows are the first k of
        # ORDER BY score DESC, <key> ASC for any k, so pages of one branch tile its ranking.
        rowids, scores = loaded.bm25[column].search(query, k, tie_order=loaded.tie_order())
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
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float64)
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
        return self._relation(rows.append_column("_distance", values))

    def _prefetch_scans(self, tree: Any) -> None:
        """Start the nearest-neighbour scans of a rewritten statement on a background thread,
        so their BLAS work (which releases the GIL) overlaps with rendering, DataFusion's
        planning and the statement's other branches; ``nearest_scan`` collects the result.
        Only the rewrite's own calls (the vector passed by stash key) are prefetched."""
        for reference, column, function, key, k, filter_text in nearest_scan_calls(tree):
            vector = self._vectors.get(key)
            if vector is None or key in self._prefetched:
                continue
            self._prefetched[key] = self._in_background(
                functools.partial(
                    self._nearest_rows, reference, column, function, vector, k, filter_text
                )
            )

    def _nearest_scan(self, *arguments: Any) -> Table:
        """``nearest_scan('<table>', '<vector column>', '<distance function>', ARRAY[...], k,
        '<filter>' | NULL)``: the k rows nearest the vector among those the filter keeps, with
        every table column, ``_distance`` (Float32, as the distance function returns it) and
        the rowid (the tie-break). What the fast-path rewrite reads; see
        :mod:`~hotdata_retrieval.engines.local.fastpath`."""
        reference, column, function, vector, k, filter_text = _arguments(
            NEAREST_SCAN, arguments, minimum=6, maximum=6
        )
        if isinstance(vector, str):  # a stashed vector (the rewrite's own statements)
            prefetched = self._prefetched.pop(vector, None)
            if prefetched is not None and not prefetched.cancelled():
                return self._relation(prefetched.result())
            try:
                vector = self._vectors[vector]
            except KeyError:
                raise ValueError(f"{NEAREST_SCAN}: no query vector {vector!r}") from None
        return self._relation(
            self._nearest_rows(reference, column, function, vector, k, filter_text)
        )

    def _nearest_rows(
        self, reference: Any, column: Any, function: Any, vector: Any, k: Any, filter_text: Any
    ) -> pa.Table:
        """The rows ``nearest_scan`` returns, as an Arrow table (see :meth:`_nearest_scan`)."""
        loaded, column = self._resolve(NEAREST_SCAN, reference, column)
        mask = None if filter_text is None else passing_rows(parse_filter(filter_text), loaded.data)
        try:
            rowids, distances, rounded = nearest_scan(
                loaded, column, function, vector, int(k), mask, with_nulls=True
            )
        except DimensionMismatchError as error:
            raise ValueError(str(error)) from None
        rows = loaded.data.take(pa.array(rowids, type=pa.int64()))
        rows = rows.append_column(
            "_distance", pa.array(rounded, type=pa.float32(), mask=np.isnan(distances))
        )
        return rows.append_column(ROWID_COLUMN, pa.array(rowids, pa.int64()))

    def _vector_distance(self, texts: pa.Array, queries: pa.Array) -> pa.Array:
        """``vector_distance(<text column>, '<query>')``: the cosine distance from each row's
        stored vector to the embedded query, as ``vector_search`` computes it (the same
        float64 kernel, then Float32), for the rows the statement's WHERE keeps.

        A scalar function sees only the texts, so each text is looked up among the vectors
        this engine's embedder made (any table: the same model maps the same text to the same
        vector). A NULL text gives a NULL distance; so does a text no column embedded.

        Raises:
            ValueError: no embedder, or not one text of the column was embedded by it.
        """
        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks()
        if self.embedder is None:
            raise ValueError(
                "vector_distance: the engine has no embedder; open it with the embedder that "
                "made the column's vectors"
            )
        present = [text for text in texts.to_pylist()]
        query = next((value for value in queries.to_pylist() if value is not None), None)
        if not isinstance(query, str) or not present:
            return pa.nulls(len(present), type=pa.float32())
        vectors = self._embedded_texts()
        rows = [vectors.get(text) if text is not None else None for text in present]
        found = [row for row in rows if row is not None]
        if not found and any(text is not None for text in present):
            raise ValueError(
                "vector_distance: the column's texts were not embedded by "
                f"'{self.embedder.name}'; load the column with embed_columns to search it by "
                "meaning"
            )
        distances = np.full(len(rows), np.nan)
        if found:
            matrix = np.stack(found).astype(np.float64)
            query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float64)
            at = np.array([i for i, row in enumerate(rows) if row is not None], dtype=np.int64)
            distances[at] = query_distances(COSINE_DISTANCE, matrix, query_vector)
        mask = np.isnan(distances)
        return pa.array(float32_distances(distances), type=pa.float32(), mask=mask)

    def _embedded_texts(self) -> dict[str, np.ndarray]:
        """Each text an open table's vector column embedded with this engine's embedder,
        mapped to its float64 vector (built once per set of table versions)."""
        model = str(self.embedder.name)
        sources = tuple(
            sorted(
                (loaded.entry.name, loaded.entry.version, vector.source_column, vector.name)
                for loaded in list(self._tables.values())
                for vector in loaded.entry.vector_columns
                if vector.model == model
            )
        )
        key = (model, sources)
        cached = self._text_vectors
        if cached is not None and cached[0] == key:
            return cached[1]
        mapping: dict[str, np.ndarray] = {}
        for name, _, source_column, vector_column in sources:
            loaded = self._tables[name]
            index = loaded.vector_index(vector_column)
            texts = loaded.data.column(source_column).to_pylist()
            for rowid in index.present.tolist():
                mapping.setdefault(texts[rowid], index.matrix[rowid])
        self._text_vectors = (key, mapping)
        return mapping

    def _relation(self, rows: pa.Table) -> Table:
        """A table function's result, as an in-memory table DataFusion filters itself.

        Not a pyarrow dataset: DataFusion 55 pushes a ``WHERE`` over a pyarrow dataset into
        pyarrow as an exact filter, and pyarrow's semantics are not SQL's — ``NOT (c IN
        ('a', 'b', 'c', 'd'))`` keeps a row whose ``c`` is NULL (pyarrow's ``is_in`` is false
        for NULL, not unknown; DataFusion writes an IN list of four values or more that way)
        and ``x > 5`` drops a NaN that DataFusion's own comparison keeps — so one ``WHERE``
        over ``bm25_search`` and over the base table kept different rows. A DataFrame over the
        rows is a view DataFusion plans and filters like any table. It is built on a helper
        thread: building it blocks on DataFusion's runtime, which panics on the thread that
        is planning the statement.
        """
        return _frame_maker().submit(_memory_table, rows).result()


_FRAME_MAKER: tuple[int, concurrent.futures.ThreadPoolExecutor, SessionContext] | None = None
_FRAME_MAKER_LOCK = threading.Lock()


def _frame_maker() -> concurrent.futures.ThreadPoolExecutor:
    """This process's helper thread for :func:`_memory_table` (made on first use)."""
    global _FRAME_MAKER
    with _FRAME_MAKER_LOCK:
        if _FRAME_MAKER is None or _FRAME_MAKER[0] != os.getpid():
            executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="hdq-relation"
            )
            _FRAME_MAKER = (os.getpid(), executor, SessionContext())
        return _FRAME_MAKER[1]


def _memory_table(rows: pa.Table) -> Table:
    """``rows`` as a DataFusion view over an in-memory table (on the helper thread). The
    scratch session registers the rows under a fresh name to make the frame and forgets the
    name at once; the frame keeps the rows."""
    assert _FRAME_MAKER is not None
    scratch = _FRAME_MAKER[2]
    name = f"relation_{uuid.uuid4().hex}"
    batches = rows.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=rows.schema)
    ]
    frame = scratch.create_dataframe([batches], name=name, schema=rows.schema)
    scratch.deregister_table(name)
    return Table(frame)


def _distance_udf(name: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def evaluate(left: pa.Array, right: pa.Array) -> pa.Array:
        return distance_udf_arrays(name, left, right)

    evaluate.__name__ = name
    return evaluate


def _register(context: SessionContext, loaded: LoadedTable) -> None:
    """Register ``loaded`` in ``context`` from memory. Registering the Parquet file instead
    would make DataFusion 55 decode every vector on every scan (about 0.8 s for 100,000 x 384
    floats) and keep roughly the column's size of resident memory per scan (measured,
    ``docs/benchmarks.md``); from memory the same scan takes milliseconds."""
    _register_data(context, loaded.entry.name, loaded.data)


def _register_data(context: SessionContext, name: str, data: pa.Table) -> None:
    if context.table_exist(name):
        context.deregister_table(name)
    batches = data.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=data.schema)
    ]
    context.register_record_batches(name, [batches])


def _limit_error(error: BaseException, limits: SqlLimits, text: str) -> SqlLimitError | None:
    """The limit a DataFusion failure reports, if it is one."""
    message = _engine_message(error)
    if "Resources exhausted" in message:
        return limits.memory_error(text, detail=message)
    if "Recursive CTEs are not enabled" in message:
        return limits.recursion_error(text)
    return None


def _quoted(part: str) -> str:
    return '"' + part.replace('"', '""') + '"'


def _first_repeat(names: Sequence[str]) -> str:
    return next(name for name in names if names.count(name) > 1)


def _lowercase_columns(data: pa.Table) -> pa.Table:
    names = [normalize_identifier(name, label="column") for name in data.column_names]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise EngineError(
            f"columns differ only in case and would collide once lower-cased: {duplicated[0]!r}"
        )
    return data.rename_columns(names)


def _positive_zeros(data: pa.Table) -> pa.Table:
    """``data`` with every ``-0.0`` of a float column stored as ``0.0``. SQL's ``=`` takes
    them for one value, but DataFusion answers an ``IN`` list of four values or more with a
    hash lookup, where their bits differ: ``x IN (0.0, 7.0, 8.0, 9.0)`` missed a stored
    ``-0.0`` that ``x = 0.0`` finds (filter literals are written ``0.0`` too,
    :func:`~hotdata_retrieval.plan.values.check_literal`). Vector columns are left as they
    are: a zero's sign changes no distance."""
    for position, field in enumerate(data.schema):
        if pa.types.is_float32(field.type) or pa.types.is_float64(field.type):
            column = pc.add(data.column(position), pa.scalar(0.0, field.type))
            data = data.set_column(position, field, column)
    return data


def _check_key(data: pa.Table, key: str) -> None:
    if key not in data.column_names:
        raise EngineError(f"key column '{key}' not found; columns: {', '.join(data.column_names)}")
    problem = key_problem(data.column(key))
    if problem is not None:
        raise EngineError(f"key column '{key}' {problem}")


def _is_vector_type(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ) and (pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type))


def _check_vector_column(data: pa.Table, column: str, key: str | None) -> None:
    """A vector column (a list of numbers) must hold, in every non-NULL row, a non-empty
    vector of finite numbers within Float32's range, none NULL, all of one length: otherwise a
    distance is undefined (NaN or infinity would rank first or last at random, a Float64 value
    beyond Float32's range is an infinity once the distance functions convert it, a length
    mismatch fails every search), so the load is refused naming the row. A NULL row is allowed:
    it has no distance and is never a candidate."""
    kind = data.schema.field(column).type
    if not _is_vector_type(kind):
        return
    values = data.column(column).combine_chunks()
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(valid)
    if not rows.size:
        return

    def name_row(row: int) -> str:
        if key is None:
            return f"row {row}"
        return f"row {row} ({key} = {data.column(key)[row].as_py()!r})"

    empty = rows[lengths[rows] == 0]
    if empty.size:
        raise EngineError(f"column '{column}': {name_row(int(empty[0]))} holds an empty vector")
    other = rows[lengths[rows] != lengths[rows[0]]]
    if other.size:
        raise EngineError(
            f"column '{column}': {name_row(int(other[0]))} has {int(lengths[other[0]])} "
            f"dimensions, {name_row(int(rows[0]))} has {int(lengths[rows[0]])}; every vector "
            "of a column must have the same length"
        )
    components = pc.list_flatten(values)
    flat = np.asarray(components.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(
        -1, int(lengths[rows[0]])
    )
    if components.null_count:
        missing = np.asarray(
            components.is_null().to_numpy(zero_copy_only=False), dtype=bool
        ).reshape(flat.shape)
        row = int(rows[int(np.argmax(missing.any(axis=1)))])
        raise EngineError(
            f"column '{column}': {name_row(row)} holds a NULL component; a distance to it "
            "would be undefined (a row without a vector is NULL as a whole)"
        )
    finite = np.isfinite(flat).all(axis=1)
    if not finite.all():
        row = int(rows[int(np.argmin(finite))])
        raise EngineError(
            f"column '{column}': {name_row(row)} holds NaN or an infinite value; a distance "
            "to it would be undefined"
        )
    in_range = (np.abs(flat) <= FLOAT32_MAX).all(axis=1)
    if not in_range.all():
        row = int(rows[int(np.argmin(in_range))])
        raise EngineError(
            f"column '{column}': {name_row(row)} holds a value beyond Float32's range "
            f"(magnitude at most {FLOAT32_MAX:.6g}); distances are computed on Float32 "
            "vectors, where it would be an infinity"
        )


def _check_text_column(data: pa.Table, column: str) -> None:
    if column not in data.column_names:
        raise EngineError(f"column '{column}' not found; columns: {', '.join(data.column_names)}")
    kind = data.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise EngineError(f"column '{column}' holds {kind}, not text")
