"""The embedded local engine: DataFusion + tantivy + NumPy, running Hotdata-dialect SQL unchanged.

The Hotdata engine is built on DataFusion, and DataFusion is the one embedded engine that runs
the compiled fused SQL byte for byte unchanged (``shared/reference/local-engines.md`` §A).
:class:`LocalEngine` is the facade over the parts that do so:

- its tables, held open and following the database's catalog
  (:mod:`~hotdata_retrieval.engines.local._catalog`), written by loads and drops that commit
  atomically (:mod:`~hotdata_retrieval.engines.local._storage`, checked first by
  :mod:`~hotdata_retrieval.engines.local._prepare`);
- the engine's SQL surface (engine contract §1.1-1.5): three-part names resolve in the
  session's default catalog and schema, ``default.public``; ``bm25_search``,
  ``vector_search``, the distance functions and ``hybrid_search``
  (:mod:`~hotdata_retrieval.engines.local._functions`), registered in DataFusion sessions
  (:mod:`~hotdata_retrieval.engines.local._session`);
- search: a plan answered natively or by its statement
  (:mod:`~hotdata_retrieval.engines.local._search`).

SQL is read-only on every path: statements run with DataFusion's ``SQLOptions`` refusing DDL,
DML and other statements (``CREATE``, ``COPY``, ``INSERT``, ``SET``, ...), whatever the text
says, and the session reads no file by path (URL tables are off, no external tables). The
database changes only through ``load_table``, ``upsert_rows``, ``delete_rows`` and ``drop_table``.
Agent SQL (:meth:`LocalEngine.stream_sql`) runs in a worker process too: its own session, a
memory pool, no spilling, no recursive queries, a time limit that cancels it."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hotdata_retrieval.engines.base import RoutesByIndexes, hotdata_profile
from hotdata_retrieval.engines.checks import check_no_nul
from hotdata_retrieval.engines.local import _blas, _prepare, _search, _storage
from hotdata_retrieval.engines.local._catalog import OpenTables, ReadsOpenTables
from hotdata_retrieval.engines.local._functions import EngineFunctions
from hotdata_retrieval.engines.local._prepare import TableLoad as TableLoad
from hotdata_retrieval.engines.local._session import Sessions
from hotdata_retrieval.engines.local.sandbox import SqlWorker, local_sql_worker
from hotdata_retrieval.routing import LOCAL_ROUTING, RoutingPolicy

if TYPE_CHECKING:
    import pyarrow as pa

    from hotdata_retrieval.compile import DialectProfile
    from hotdata_retrieval.engines.hnsw import HnswSettings
    from hotdata_retrieval.engines.limits import SqlLimits
    from hotdata_retrieval.engines.local.database import TableEntry
    from hotdata_retrieval.engines.local.tables import LoadedTable
    from hotdata_retrieval.engines.results import SearchResult
    from hotdata_retrieval.indexes import TableIndexes
    from hotdata_retrieval.plan.names import TableName
    from hotdata_retrieval.plan.search import SearchPlan


class LocalEngine(RoutesByIndexes, ReadsOpenTables):
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
        lock_timeout: seconds a write waits for another process's (``None``: as long as it takes).
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

    native_hybrid_search: ClassVar[str | None] = EngineFunctions.hybrid_search
    """The engine's native ``hybrid_search`` table function (``docs/spec/hybrid_search.md``):
    compile for a dialect whose profile names it to use it instead of the CTE form."""

    vector_indexes: ClassVar[tuple[str, ...]] = _prepare.BUILT_VECTOR_INDEXES  # usearch's HNSW
    routing_policy: ClassVar[RoutingPolicy] = LOCAL_ROUTING
    """How :meth:`plan_search` routes: every vector column here is engine-embedded and sits
    beside the BM25 index, so hybrid fuses BM25 with a caller-embedded search of it."""

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
        self.embedder = embedder
        self.lock_timeout = lock_timeout
        self._open = OpenTables(
            self.root,
            catalog=catalog,
            schema=schema,
            installed=lambda loaded: self._sessions.register(loaded),
            forgotten=lambda name: self._sessions.forget(name),
        )
        self.catalog, self.schema = self._open.catalog, self._open.schema
        self._functions = EngineFunctions(self)
        self._sessions = Sessions(
            catalog=self.catalog,
            schema=self.schema,
            functions=self._functions,
            tables=self._open,
        )
        self._worker: SqlWorker | None = None
        self._worker_lock = threading.Lock()
        self._open.refresh()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release sessions and SQL worker, give BLAS its threads back; delete a temporary root."""
        _blas.BLAS_GATE.restore()
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._functions.close()
        self._open.tables.clear()
        self._sessions.close()
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- tables ------------------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, TableEntry]:
        """The database's tables, by name (damaged ones included)."""
        self._open.refresh()
        return dict(self._open.entries)

    @property
    def damaged_tables(self) -> dict[str, str]:
        """Tables whose files cannot be read, with the reason; loading one again repairs it.
        Every table not open yet is opened to find out."""
        return self._open.find_damage()

    def table_name(self, name: str) -> TableName:
        """``name`` completed with this engine's catalog and schema."""
        return self._open.table_name(name)

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by: its BM25 columns and vector columns.

        Raises:
            EngineError: no such table, or it is damaged.
        """
        self._open.refresh()
        return self._open.indexes(table)

    def embedder_for(self, table: str | TableName) -> Any:
        """The embedder that made ``table``'s vectors: the engine's own when it made them,
        else the installed embedder of the model recorded at load (the first by name), else
        ``None``."""
        models = self._open.vector_models(table)
        name = None if self.embedder is None else str(self.embedder.name)
        if name in models:
            return self.embedder
        return self._recorded_embedder(next(iter(models), None))

    def vector_model(self, table: str | TableName) -> str | None:
        """The model that made ``table``'s vectors (the first by name), or ``None``."""
        return next(iter(self._open.vector_models(table)), None)

    def _loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names (raises ``EngineError`` when there is none)."""
        return self._open.loaded(reference)

    def _embedded_tables(self, model: str, *, opened: bool) -> list[LoadedTable]:
        return self._open.embedded_by(model, opened=opened)

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
        hnsw_settings: HnswSettings | None = None,
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
            hnsw_settings: how HNSW indexes are built and searched (see :class:`TableLoad`).
            progress: show a progress bar while embedding and building an index.
            batch_size: texts per embedding batch.

        Raises:
            EngineError: a missing or non-text column, a duplicated or NULL key, an empty
                table name, no embedder for embed columns, or unusable ``hnsw_settings``.
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
            hnsw_settings=hnsw_settings,
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
        writer = {"embedder": self.embedder, "lock_timeout": self.lock_timeout}
        return _storage.load_tables(
            self._open, loads, progress=progress, batch_size=batch_size, **writer
        )

    def upsert_rows(self, name: str, rows: pa.Table, *, create: Any = None) -> TableEntry:
        """Write ``rows`` (Arrow: the key and any of the table's columns, a missing one NULL)
        into table ``name`` by key, replacing the rows whose key it holds; returns the new
        entry. One commit (``_storage.change_rows``): a load's cost, nothing lost. A missing
        table is loaded from ``rows`` with ``create``'s options (a :class:`TableLoad`),
        decided under the writer lock: two first writers both keep their rows.

        Raises:
            EngineError: no such table (and no ``create``) or no key column; a column the
                table lacks or computes, a value its column cannot hold, a NULL or repeated key.
            DatabaseError: the database cannot be written; nothing was committed.
        """
        check_no_nul(rows)
        return self._change(name, upsert=rows, delete=(), create=create)[0]

    def delete_rows(self, name: str, keys: Sequence[Any]) -> int:
        """Remove table ``name``'s rows keyed by ``keys`` in one commit (as
        :meth:`upsert_rows`); returns how many there were (an unknown key is no error).

        Raises:
            EngineError: no such table or no key column; a key its column cannot hold.
            DatabaseError: the database cannot be written; nothing was committed.
        """
        return self._change(name, upsert=None, delete=keys)[1]

    def _change(self, name: str, **change: Any) -> tuple[TableEntry, int]:
        writer = {"embedder": self.embedder, "lock_timeout": self.lock_timeout}
        return _storage.change_rows(self._open, name, **change, **writer)

    def drop_table(self, name: str) -> None:
        """Remove table ``name`` (a damaged one too).

        Raises:
            EngineError: no such table.
            DatabaseError: the catalog cannot be written; nothing changed.
        """
        _storage.drop_table(self._open, name, lock_timeout=self.lock_timeout)

    # -- queries -----------------------------------------------------------------------------

    def sql(self, text: str) -> pa.Table:
        """Run one read-only SQL statement and return its rows as an Arrow table.

        DDL, DML and other statements are refused by DataFusion at planning time
        (``READ_ONLY``); nothing bounds the time or memory the statement takes: for SQL from
        an untrusted author use :meth:`stream_sql`.

        Raises:
            EngineError: the engine's own message (planning or execution).
        """
        self._open.refresh()
        with self._functions.stashed_vectors() as stash:
            return self._sessions.run(_search.optimized(self, text, stash), text)

    def stream_sql(self, text: str, *, limits: SqlLimits | None = None) -> Iterator[pa.RecordBatch]:
        """Run one read-only SQL statement from an untrusted author under ``limits`` and yield
        its result batch by batch.

        The statement runs in the engine's SQL worker process
        (:mod:`~hotdata_retrieval.engines.local.sandbox`), so its limits hold whatever it does:
        past the time limit, or past the memory limit (its resident set beyond its size at
        rest), the worker is stopped; a crash ends only the worker; the next statement starts
        a fresh one. Inside, a session of its own refuses DDL, DML and other statements,
        refuses recursive queries unless allowed, and fails sorts, joins and aggregates that
        outgrow a DataFusion memory pool of ``limits.memory_bytes`` (nothing spills to disk).
        Batches are computed as they are read; closing the iterator stops the query.

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
        with self._worker_lock:
            if self._worker is None:
                self._worker = local_sql_worker(
                    self.root, catalog=self.catalog, schema=self.schema, embedder=self.embedder
                )
            worker = self._worker
        yield from worker.stream(text, limits)

    def _stream_here(
        self, text: str, *, limits: SqlLimits
    ) -> Generator[pa.RecordBatch, None, None]:
        """``stream_sql``'s statement, run in this process: what the SQL worker calls."""
        self._open.refresh()
        yield from self._sessions.stream(text, limits)

    def search(self, plan: SearchPlan) -> SearchResult:
        """Compile ``plan``, run it, and return typed hits, best first.

        Each hit carries its key, the plan's columns, the fused (or raw) score, and each
        branch's rank and raw score. A BM25 or nearest-neighbour branch, or a reciprocal rank
        or min-max fusion of such branches, is answered natively with the rows of its compiled
        statement, without DataFusion's fixed planning cost
        (:mod:`~hotdata_retrieval.engines.local.native`); any other plan's statement runs on
        DataFusion, its nearest-neighbour shapes rewritten to ``nearest_scan``
        (:mod:`~hotdata_retrieval.engines.local.fastpath`); ``SearchResult.sql`` holds it always.

        Raises:
            EngineError: a missing table, column or index, or an engine failure.
            PlanError: a query vector of another length than its column's, before any search.
        """
        self._open.refresh()
        return _search.search(self, plan)

    check_plan = _search.check_search  # refuse a plan as search does, without running it
