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
- ``plan_search(table, query, ...) -> SearchPlan``: read the table's indexes and route the query
  with :func:`hotdata_retrieval.routing.plan_search` under the engine's
  :class:`~hotdata_retrieval.routing.RoutingPolicy`.

Optional capabilities, which callers probe for and do without (:data:`OPTIONAL_CAPABILITIES`):

- ``stream_sql(text, *, limits)``: the result batch by batch under
  :class:`~hotdata_retrieval.engines.limits.SqlLimits` (the local engine); the agent SQL tool
  prefers it to ``sql``.
- ``embedder_for(table)``: the embedder a search of the table needs on the caller's side, or
  ``None``.
- ``tables``: a mapping of every table's name (the local engine); the SQL tool's linter then
  reads every table's indexes.
- ``index_catalog(table)``: the table's indexes as an
  :class:`~hotdata_retrieval.indexes.IndexCatalog`, pending ones included (the Hotdata engine).
- ``sql_name(table)`` and ``columns_sql(table)``: how SQL on the engine names a table, and a
  query listing its columns, where that differs from the full three-part name and
  ``information_schema`` (the SQL stores); the SQL tool's description uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import attrs

from hotdata_retrieval.engines.results import SearchResult
from hotdata_retrieval.indexes import TableIndexes
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.routing import RoutingPolicy, SearchMode, plan_search

if TYPE_CHECKING:
    import pyarrow as pa

    from hotdata_retrieval.compile import DialectProfile
    from hotdata_retrieval.engines.duckdb import DuckdbEngine
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.lancedb import LancedbEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.engines.postgres import PostgresEngine
    from hotdata_retrieval.engines.sqlite import SqliteEngine

__all__ = [
    "OPTIONAL_CAPABILITIES",
    "Engine",
    "RoutesByIndexes",
    "hotdata_profile",
    "query_embedder",
]

OPTIONAL_CAPABILITIES = (
    "stream_sql",
    "embedder_for",
    "tables",
    "index_catalog",
    "sql_name",
    "columns_sql",
)
"""Members an engine may have beyond :class:`Engine`; callers check for them before use."""


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
        table: str | TableName,
        query: str,
        *,
        mode: SearchMode | str = SearchMode.AUTO,
        limit: int = 10,
        offset: int = 0,
        filter: Predicate | None = None,
        columns: Sequence[str] | None = None,
        text_column: str | None = None,
        vector_column: str | None = None,
        key_column: str | None = None,
        embed_query: Callable[[str], Sequence[float]] | None = None,
        include_branch_scores: bool = False,
        weights: Sequence[float] | None = None,
        rank_constant: float | None = None,
        depth: int | None = None,
    ) -> SearchPlan:
        """Read ``table``'s indexes and route ``query`` (:func:`~hotdata_retrieval.routing.
        plan_search`, with the engine's routing policy).

        Args:
            table: the table (1-3 part name, completed with the engine's defaults).
            query: the user's text.
            mode: ``auto``, ``text``, ``semantic``, ``nearest`` or ``hybrid``.
            limit: top-k.
            offset: rows to skip.
            filter: applied inside every branch.
            columns: the columns to return (default: the key and the searched text column).
            text_column: the text column to search.
            vector_column: the vector column to use.
            key_column: the table's unique key (default: what the engine knows of the table).
            embed_query: embeds the query on the caller's side where the route needs it
                (default: the engine's embedder for the table, if it has one).
            include_branch_scores: return each branch's rank and raw score.
            weights, rank_constant, depth: ``hybrid``'s reciprocal rank fusion (default
                all 1, 60 and 100); refused for a search that is not hybrid.

        Raises:
            PlanError: no index serves ``mode``, or the route needs an embedder and there is
                none.
            EngineError: no such table (or the engine cannot list its indexes).
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

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by (see :meth:`Engine.indexes`)."""
        raise NotImplementedError

    def embedder_for(self, table: str | TableName) -> Any:
        """The embedder that made ``table``'s vectors, if the engine has it (else ``None``)."""
        raise NotImplementedError

    def plan_search(
        self,
        table: str | TableName,
        query: str,
        *,
        mode: SearchMode | str = SearchMode.AUTO,
        limit: int = 10,
        offset: int = 0,
        filter: Predicate | None = None,
        columns: Sequence[str] | None = None,
        text_column: str | None = None,
        vector_column: str | None = None,
        key_column: str | None = None,
        embed_query: Callable[[str], Sequence[float]] | None = None,
        include_branch_scores: bool = False,
        weights: Sequence[float] | None = None,
        rank_constant: float | None = None,
        depth: int | None = None,
    ) -> SearchPlan:
        """Read ``table``'s indexes and route ``query`` (:meth:`Engine.plan_search`).
        ``key_column`` defaults to the table's key; ``embed_query`` to :meth:`embedder_for`'s
        ``embed_query``.

        Raises:
            PlanError: no index serves ``mode``, or the route needs an embedder and there is
                none.
            EngineError: no such table.
        """
        indexes = self.indexes(table)
        if key_column is not None:
            indexes = attrs.evolve(indexes, key_column=key_column)
        return plan_search(
            indexes,
            query,
            mode=mode,
            limit=limit,
            offset=offset,
            filter=filter,
            columns=columns,
            text_column=text_column,
            vector_column=vector_column,
            embed_query=embed_query or query_embedder(self.embedder_for(indexes.table)),
            include_branch_scores=include_branch_scores,
            weights=weights,
            rank_constant=rank_constant,
            depth=depth,
            policy=self.routing_policy,
        )


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
