"""The engine contract: what every engine offers, whatever runs its SQL.

:class:`Engine` is a runtime-checkable :class:`typing.Protocol`. ``LocalEngine`` and
``HotdataEngine`` satisfy it, and everything built on engines — the agent toolkit, the
LangChain and MCP adapters, ``hdq search`` — asks for no more than it:

- ``search(plan) -> SearchResult``: compile the plan to one statement, run it, return typed
  hits. Every engine expands the plan through
  :func:`~hotdata_retrieval.engines.results.executed_plan` and builds the result with
  :func:`~hotdata_retrieval.engines.results.search_result`, so engines accept the same plans and
  answer in the same shape; ``SearchResult.sql`` is the statement that ran.
- ``sql(text) -> pyarrow.Table``: run one statement.
- ``indexes(table) -> TableIndexes``: what the table can be searched by.
- ``plan_search(request) -> SearchPlan``: read the table's indexes and route a
  :class:`~hotdata_retrieval.routing.SearchRequest` with
  :func:`hotdata_retrieval.routing.plan_search` under the engine's
  :class:`~hotdata_retrieval.routing.RoutingPolicy` (``plan_search(table, query, **options)``
  builds the request from keywords).

Every engine of the library also has ``table(name)``, the start of a search chain
(:mod:`hotdata_retrieval.engines.chain`, through :class:`RoutesByIndexes`); another engine
chains through :func:`~hotdata_retrieval.engines.chain.search_table`.

Optional capabilities, which callers probe for and do without (:data:`OPTIONAL_CAPABILITIES`):

- ``stream_sql(text, *, limits)``: the result batch by batch under
  :class:`~hotdata_retrieval.engines.limits.SqlLimits` (the local engine); the agent SQL tool
  prefers it to ``sql``.
- ``check_plan(plan)``: refuse a plan as ``search`` would before it runs, without running it
  (a missing table or column, a query vector of another length than its column's): the local
  engine and the SQL stores; ``hdq explain`` checks a plan against a table with it.
- ``embedder_for(table)``: the embedder a search of the table needs on the caller's side, or
  ``None``.
- ``vector_model(table)``: the name of the embedder that made the table's vectors, where the
  engine records it (the local engine and the stores the library loads: ``hdq load`` writes
  it), else ``None``; the command line embeds queries with that model.
- ``tables``: a mapping of every table's name (every engine of the library); the SQL tool's
  linter then reads every table's indexes.
- ``index_catalog(table)``: the table's indexes as an
  :class:`~hotdata_retrieval.indexes.IndexCatalog`, pending ones included (the Hotdata engine).
- ``sql_name(table)`` and ``columns_sql(table)``: how SQL on the engine names a table, and a
  query listing its columns, where that differs from the full three-part name and
  ``information_schema`` (the SQL stores); the SQL tool's description uses them.
- ``load_table(name, data, ...)``: store an Arrow table, replacing any table of that name
  (every engine of the library but the Hotdata engine, whose tables are loaded through the
  document capabilities below).
- ``read_table(table, columns=None)``: every row of a table as an Arrow table, and
  ``read_rows(table, keys, columns=None)`` the rows of some keys (in no set order; an unknown
  key is left out).
- ``upsert_rows(table, rows, *, create=None)`` and ``delete_rows(table, keys)``: rows changed
  by key, one commit each (on turbopuffer and Hotdata, one request per batch); ``create``
  (a :class:`~hotdata_retrieval.engines.local.TableLoad`) makes a missing table from the
  rows with its options.

  A document table (:class:`~hotdata_retrieval.documents.DocumentStore`, what the LangChain
  and LlamaIndex vector stores keep) needs :data:`DOCUMENT_CAPABILITIES`; every engine of the
  library has them. An engine without one of them is refused with a
  :class:`~hotdata_retrieval.errors.MissingCapabilityError` naming each missing capability
  and why (:func:`missing_capabilities`: an engine says why in its
  ``capability_refusals``).
- ``agent_sql_refusal``: why SQL written by a model must not run on the engine (LanceDB runs
  no SQL; the Hotdata API does not refuse writes); the agent tools then offer no SQL tool
  and say why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import attrs

from hotdata_retrieval.engines.chain import SearchTable, search_table
from hotdata_retrieval.engines.results import SearchResult
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from hotdata_retrieval.indexes import TableIndexes
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import DistanceMetric, SearchPlan
from hotdata_retrieval.routing import RoutingPolicy, SearchRequest, plan_search, search_request

if TYPE_CHECKING:
    import pyarrow as pa

    from hotdata_retrieval.compile import DialectProfile
    from hotdata_retrieval.engines.duckdb import DuckdbEngine
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.lancedb import LancedbEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.engines.postgres import PostgresEngine
    from hotdata_retrieval.engines.sqlite import SqliteEngine
    from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine

OPTIONAL_CAPABILITIES = (
    "stream_sql",
    "check_plan",
    "embedder_for",
    "vector_model",
    "tables",
    "index_catalog",
    "sql_name",
    "columns_sql",
    "load_table",
    "read_table",
    "read_rows",
    "upsert_rows",
    "delete_rows",
    "agent_sql_refusal",
    "capability_refusals",
)
"""Members an engine may have beyond :class:`Engine`; callers check for them before use."""

DOCUMENT_CAPABILITIES = (
    "upsert_rows",
    "delete_rows",
    "read_table",
    "read_rows",
    "tables",
    "search",
)
"""What an engine must have to keep a document table
(:class:`~hotdata_retrieval.documents.DocumentStore`): write and remove rows by key, read
every row and the rows of some keys, list its tables, search."""


def missing_capabilities(engine: Any, capabilities: Sequence[str]) -> dict[str, str]:
    """Each of ``capabilities`` that ``engine`` lacks, with why: the engine's own reason
    (``capability_refusals``, a mapping of capability to reason, which an engine that has a
    member but cannot serve it on its data gives too), else that it has no such member.
    Empty when the engine has them all.

    >>> missing_capabilities(object(), ["read_rows"])
    {'read_rows': 'it has no read_rows'}
    """
    refusals = getattr(engine, "capability_refusals", None) or {}
    missing = {}
    for name in capabilities:
        if name in refusals:
            missing[name] = str(refusals[name])
        elif not (hasattr(type(engine), name) or hasattr(engine, name)):  # no property runs
            missing[name] = f"it has no {name}"
    return missing


@runtime_checkable
class Engine(Protocol):
    """The contract every engine meets: ``search``, ``sql``, ``indexes`` and ``plan_search``.

    ``isinstance(engine, Engine)`` checks that the four methods exist (not their signatures;
    ``tests/test_engine_contract.py`` checks those for the library's engines).
    """

    def search(self, plan: SearchPlan) -> SearchResult:
        """Compile ``plan`` to one statement, run it, and return typed hits, best first.

        Raises:
            EngineError: the engine rejected or failed the statement (a missing table, column
                or index), or a key came back twice.
        """
        ...

    def sql(self, text: str) -> pa.Table:
        """Run one SQL statement and return its rows as an Arrow table.

        Raises:
            EngineError: the engine's own message (planning or execution).
        """
        ...

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by: its ready BM25 columns and vector indexes.

        Raises:
            EngineError: no such table (or the engine cannot list its indexes).
        """
        ...

    def plan_search(
        self,
        request: SearchRequest | str | TableName,
        query: str | None = None,
        /,
        *,
        embed_query: Callable[[str], Sequence[float]] | None = None,
        **options: Any,
    ) -> SearchPlan:
        """Read the request's table's indexes and route it (:func:`~hotdata_retrieval.
        routing.plan_search`, with the engine's routing policy).

        Args:
            request: the search (:class:`~hotdata_retrieval.routing.SearchRequest`), or the
                table, with ``query`` and ``options`` the request's other fields
                (:func:`~hotdata_retrieval.routing.search_request`).
            query: the user's text, beside a table.
            embed_query: embeds the query on the caller's side where the route needs it
                (default: the engine's embedder for the table, if it has one).
            options: the request's fields (``mode``, ``limit``, ``filter``, ``fusion``, ...).

        Raises:
            PlanError: no index serves the mode, or the route needs an embedder and there is
                none; a bad request.
            EngineError: no such table (or the engine cannot list its indexes).
        """
        ...


class DocumentEngine(Engine, Protocol):
    """An engine that keeps document tables (:data:`DOCUMENT_CAPABILITIES`): the contract's
    four methods, and rows listed, read and changed by key. Every engine of the library is
    one; ``tests/test_engine_contract.py`` checks their signatures against these (an engine
    may take more, keyword-only and optional: the Hotdata engine's ``key_column``).
    """

    @property
    def tables(self) -> Mapping[str, Any]:
        """The engine's tables (of its default schema or namespace prefix), by name."""
        ...

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of ``table`` (``columns`` of them, in that order; default every column).

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        ...

    def read_rows(
        self, table: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows of ``table`` keyed by ``keys`` (``columns`` of them), in no set order; an
        unknown key is left out.

        Raises:
            EngineError: no such table or key column, a column it does not have.
        """
        ...

    def upsert_rows(self, name: str, rows: pa.Table, *, create: Any = None) -> Any:
        """Write ``rows`` by key, replacing the rows whose key the table holds, in one commit
        (per batch, on engines reached by requests); ``create`` (a
        :class:`~hotdata_retrieval.engines.local.TableLoad`) makes a missing table.

        Raises:
            EngineError: no such table and no ``create``; rows the table cannot hold.
        """
        ...

    def delete_rows(self, name: str, keys: Sequence[Any]) -> int:
        """Remove the rows keyed by ``keys``; how many there were.

        Raises:
            EngineError: no such table or key column.
        """
        ...


def query_embedder(embedder: Any) -> Callable[[str], Sequence[float]] | None:
    """``embedder.embed_query``, or ``None`` without an embedder."""
    if embedder is None:
        return None
    embed: Callable[[str], Sequence[float]] = embedder.embed_query
    return embed


class RoutesByIndexes:
    """``plan_search`` for an engine that knows its tables' indexes and embedders: read
    :meth:`indexes`, set the key column when one is given, and route with
    :func:`hotdata_retrieval.routing.plan_search` under :attr:`routing_policy`, embedding the
    query with :meth:`embedder_for`'s embedder unless ``embed_query`` is given. The local
    engine and the store engines inherit it; the Hotdata engine routes its own way (it names
    pending indexes). Arguments and errors as :meth:`Engine.plan_search`."""

    routing_policy: ClassVar[RoutingPolicy]

    vector_metrics: ClassVar[tuple[str, ...]] = tuple(metric.value for metric in DistanceMetric)
    """The distances its vector search computes, by
    :class:`~hotdata_retrieval.plan.search.DistanceMetric` name: every one but on
    turbopuffer (no dot distance)."""

    vector_indexes: ClassVar[tuple[str, ...]] = ()
    """The approximate vector indexes ``load_table`` (and a document table's first write)
    builds, by :class:`~hotdata_retrieval.engines.hnsw.VectorIndexKind` name: none by default
    (nearest-neighbour search is exact); the local, PostgreSQL and Hotdata engines build
    ``hnsw``."""

    def check_column_types(self, schema: Any) -> None:
        """Refuse, before anything is written, a column of ``schema`` (a ``pyarrow.Schema``
        of columns other than vectors) whose type the engine cannot store, as its load
        would: what a document store's ``filter_columns`` are checked by when it is built.
        By default (the local, LanceDB and Hotdata engines) the types every load refuses
        (:func:`~hotdata_retrieval.engines.checks.check_no_null_type`: ``null``,
        ``list<null>``, a struct of no field); the SQL stores and turbopuffer override it
        with the types they hold.

        Raises:
            EngineError: naming the first such column and its type.
        """
        import pyarrow as pa

        from hotdata_retrieval.engines.checks import check_no_null_type

        check_no_null_type(schema.empty_table() if isinstance(schema, pa.Schema) else schema)

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by (see :meth:`Engine.indexes`)."""
        raise NotImplementedError

    def embedder_for(self, table: str | TableName) -> Any:
        """The embedder that made ``table``'s vectors, if the engine has it (else ``None``)."""
        raise NotImplementedError

    def plan_search(
        self,
        request: SearchRequest | str | TableName,
        query: str | None = None,
        /,
        *,
        embed_query: Callable[[str], Sequence[float]] | None = None,
        **options: Any,
    ) -> SearchPlan:
        """Read the request's table's indexes and route it (:meth:`Engine.plan_search`). The
        request's ``key_column`` defaults to the table's key; ``embed_query`` to
        :meth:`embedder_for`'s ``embed_query``.

        Raises:
            PlanError: no index serves the mode, or the route needs an embedder and there is
                none; a bad request.
            EngineError: no such table.
        """
        search = search_request(request, query, **options)
        indexes = self._route_indexes(search.table)
        if search.key_column is not None:
            indexes = attrs.evolve(indexes, key_column=search.key_column)
        embed = embed_query or query_embedder(self._query_embedder(indexes.table))
        try:
            return plan_search(indexes, search, embed_query=embed, policy=self.routing_policy)
        except PlanError as error:
            raise self._routing_failed(error, indexes.table) from None

    def table(self, name: str | TableName) -> SearchTable:
        """The start of a search chain on table ``name``
        (:mod:`hotdata_retrieval.engines.chain`): ``engine.table("docs").search("text",
        mode="hybrid").where("rating >= 4").limit(10).to_pandas()``, each step a new plan.

        Raises:
            PlanError: ``name`` is neither text nor a ``TableName``.
        """
        return search_table(self, name)  # type: ignore[arg-type]

    def _route_indexes(self, table: str | TableName) -> TableIndexes:
        """The indexes a search of ``table`` is routed by (default: :meth:`indexes`)."""
        return self.indexes(table)

    def _query_embedder(self, table: TableName) -> Any:
        """The embedder queries of ``table`` are embedded with (default:
        :meth:`embedder_for`)."""
        return self.embedder_for(table)

    def _routing_failed(self, error: PlanError, table: TableName) -> PlanError:
        """The error to raise when routing ``table`` failed (default: ``error`` itself)."""
        return error

    def _recorded_embedder(self, model: str | None) -> Any:
        """The installed embedder of the model a load recorded for a table's vectors
        (:func:`~hotdata_retrieval.embed.embedder_for_model`), made once per engine and model;
        ``None`` when no model is recorded or none installed makes its vectors (a search that
        needs one then says so)."""
        if not model:
            return None
        made: dict[str, Any] = self.__dict__.setdefault("_recorded_embedders", {})
        if model not in made:
            from hotdata_retrieval.embed import embedder_for_model

            try:
                made[model] = embedder_for_model(model)
            except HotdataRetrievalError:
                made[model] = None
        return made[model]


if TYPE_CHECKING:  # mypy checks that the library's engines meet the contract

    def _engines_meet_the_contract(
        local: LocalEngine,
        hotdata: HotdataEngine,
        sqlite: SqliteEngine,
        duckdb: DuckdbEngine,
        postgres: PostgresEngine,
        lancedb: LancedbEngine,
    ) -> list[Engine]:
        return [local, hotdata, sqlite, duckdb, postgres, lancedb]

    def _engines_keep_document_tables(
        local: LocalEngine,
        hotdata: HotdataEngine,
        sqlite: SqliteEngine,
        duckdb: DuckdbEngine,
        postgres: PostgresEngine,
        lancedb: LancedbEngine,
        turbopuffer: TurbopufferEngine,
    ) -> list[DocumentEngine]:
        return [local, hotdata, sqlite, duckdb, postgres, lancedb, turbopuffer]


def hotdata_profile(profile: str | DialectProfile, engine: str) -> DialectProfile:
    """The dialect profile ``engine`` compiles plans with: ``profile`` (a registered name or a
    :class:`~hotdata_retrieval.compile.DialectProfile`), which must write the Hotdata dialect's
    SQL — the ``hotdata`` profile, or one made from it with another compiler, as a fusion
    defined outside the library is (``docs/architecture.md``, "How to add a fusion").

    Raises:
        UnknownDialectError: no dialect of that name is registered.
        EngineError: the profile writes another dialect's SQL, which ``engine`` cannot run.
    """
    from hotdata_retrieval.compile import HOTDATA, get_dialect
    from hotdata_retrieval.engines.errors import EngineError

    resolved = get_dialect(profile)
    if not issubclass(resolved.sqlglot_dialect, HOTDATA.sqlglot_dialect):
        raise EngineError(
            f"{engine} runs the Hotdata dialect's SQL; dialect profile {resolved.name!r} "
            "writes another dialect's (use a profile made from the hotdata profile, "
            "attrs.evolve(HOTDATA, compiler=...))"
        )
    return resolved
