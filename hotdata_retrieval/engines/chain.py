"""A chain of calls that builds a search step by step, for callers who think in chains:

>>> import pyarrow as pa
>>> from hotdata_retrieval.engines.local import LocalEngine
>>> reviews = pa.table({"id": [1, 2, 3], "body": ["red fox", "red sky", "blue sky"],
...                     "rating": [5, 2, 4]})
>>> with LocalEngine() as engine:
...     _ = engine.load_table("reviews", reviews, text_columns=["body"])
...     search = engine.table("reviews").search("red", mode="text").where("rating >= 4")
...     rows = search.limit(5).select("id", "body").to_list()
>>> [(row["id"], row["body"]) for row in rows]
[(1, 'red fox')]

Each step returns a new object and changes nothing it was called on. The chain holds a
:class:`~hotdata_retrieval.plan.search.SearchPlan` — the plan classes stay the one account of
a search — and each step is one transformation of it, validated as the plan's constructor
validates it, so a bad value is refused at the step that gave it:

- :meth:`SearchTable.search` routes the query by the table's indexes
  (the engine's ``plan_search``: :mod:`hotdata_retrieval.routing`) into the first plan;
- :meth:`Search.where` adds a filter (ANDed with any earlier one), :meth:`Search.limit`,
  :meth:`Search.offset` and :meth:`Search.select` set the page and the columns,
  :meth:`Search.group_by` groups the rows (one or a few per parent document),
  :meth:`Search.diversity` chooses the page by maximal marginal relevance,
  :meth:`Search.rerank` re-scores it with a reranker,
  :meth:`Search.after` continues a ranking after a result's ``next_after``,
  :meth:`Search.facets` counts values of columns among the matched rows;
- :meth:`Search.explain` shows the SQL the plan compiles to for the engine's dialect, and
  the steps that run on its rows;
- :meth:`Search.run` runs it (``engine.search(plan)``), and :meth:`Search.to_list`,
  :meth:`Search.to_arrow` and :meth:`Search.to_pandas` run it and return the rows as data
  (:class:`~hotdata_retrieval.engines.results.SearchResult`'s methods of the same names).

Every engine has the chain through :meth:`~hotdata_retrieval.engines.base.RoutesByIndexes.table`;
any other engine meeting the :class:`~hotdata_retrieval.engines.base.Engine` contract has it
through :func:`search_table`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.formula import ScoreFormula
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.plan.steps import Diversity, describe_steps
from hotdata_retrieval.routing import FusionChoice, SearchMode, read_filter

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from hotdata_retrieval.engines.base import Engine
    from hotdata_retrieval.engines.results import SearchResult
    from hotdata_retrieval.indexes import TableIndexes

ModeName = Literal["auto", "text", "semantic", "nearest", "hybrid"]
"""A search mode by name (:class:`~hotdata_retrieval.routing.SearchMode`)."""

FilterInput = Predicate | Mapping[str, Any] | str
"""A filter as :meth:`Search.where` takes it: a predicate, a filter object (``{"rating":
{"$gte": 4}}``) or filter text (``"rating >= 4"``, :func:`~hotdata_retrieval.parse_filter`)."""


@attrs.frozen
class SearchTable:
    """One table of an engine, the start of a chain (``engine.table("docs")``).

    Attributes:
        engine: the engine the chain searches with (any that meets the engine contract).
        name: the table, as given (the engine completes a 1- or 2-part name).
    """

    engine: Engine
    name: str | TableName

    def indexes(self) -> TableIndexes:
        """What the table can be searched by (``engine.indexes``).

        Raises:
            EngineError: no such table.
        """
        return self.engine.indexes(self.name)

    def search(
        self,
        query: str,
        *,
        mode: SearchMode | ModeName = "auto",
        text_column: str | None = None,
        vector_column: str | None = None,
        fusion: FusionChoice | str | Mapping[str, Any] | None = None,
        embed_query: Callable[[str], Sequence[float]] | None = None,
        explain_scores: bool = False,
        queries: Sequence[str | tuple[str, float]] | None = None,
        formula: ScoreFormula | Sequence[Mapping[str, Any]] | None = None,
        diversity: float | None = None,
        candidates: int | None = None,
        rerank: Any = None,
        top_n: int | None = None,
    ) -> Search:
        """A search of the table for ``query``: the plan the engine routes from the table's
        indexes (``engine.plan_search``; rules in :mod:`hotdata_retrieval.routing`), with
        the router's defaults (10 rows, the key and the searched text column, no filter)
        until later steps change them.

        Args:
            query: the user's text.
            mode: ``"auto"`` (default: hybrid where the table can, else text, else
                semantic), ``"text"`` (BM25), ``"semantic"``, ``"nearest"`` or ``"hybrid"``.
            text_column: the text column to search (default: the table's first BM25 column).
            vector_column: the vector column to search (default: the router's choice).
            fusion: a hybrid search's fusion: a method's name (``"rrf"``, the default,
                ``"min_max"``, ``"dbsf"``), ``{"method": ..., <option>: ...}`` or a
                :class:`~hotdata_retrieval.routing.FusionChoice`.
            embed_query: embeds the query where the route needs a vector on this side
                (default: the engine's embedder for the table).
            explain_scores: a fused search's hits also carry, per branch, the normalized
                value and weighted contribution their fused score adds up from
                (:class:`~hotdata_retrieval.routing.SearchRequest`).
            queries: more query texts (or ``(text, weight)`` pairs) searched beside
                ``query`` and fused with it into one ranking, in one statement
                (:class:`~hotdata_retrieval.routing.SearchRequest`).
            formula: a fused search's final score: a
                :class:`~hotdata_retrieval.plan.formula.ScoreFormula` or its JSON form, a list
                of terms (``docs/plans.md``, "Score formulas").
            diversity: maximal marginal relevance's lambda (0 to 1) over the candidates'
                vectors, as :meth:`Search.diversity` sets it; ``None``: none.
            candidates: rows the diversity step chooses among (:meth:`Search.diversity`).
            rerank: a reranker, its registered name or a model directory, as
                :meth:`Search.rerank` takes it; ``None``: none.
            top_n: rows the reranker scores (:meth:`Search.rerank`).

        Raises:
            PlanError: an unknown mode (naming the known ones); no index serves the mode; the
                route needs an embedder and there is none; a fusion for a search that is not
                hybrid; diversity out of range or on a search without a query vector.
            EngineError: no such table.
        """
        plan = self.engine.plan_search(
            self.name,
            query,
            mode=mode,
            text_column=text_column,
            vector_column=vector_column,
            fusion=fusion,
            embed_query=embed_query,
            explain_scores=explain_scores,
            queries=queries,
            formula=formula,
            diversity=diversity,
            candidates=candidates,
            rerank=rerank,
            top_n=top_n,
        )
        return Search(engine=self.engine, plan=plan)


@attrs.frozen
class Search:
    """A search plan and the engine it runs on: each step returns a new :class:`Search`.

    Attributes:
        engine: the engine :meth:`run` searches with.
        plan: the search so far (:class:`~hotdata_retrieval.plan.search.SearchPlan`).
    """

    engine: Engine
    plan: SearchPlan

    def _with(self, **changes: Any) -> Search:
        return Search(engine=self.engine, plan=attrs.evolve(self.plan, **changes))

    def where(self, condition: FilterInput) -> Search:
        """The search with ``condition`` applied inside every branch, ANDed with any filter
        an earlier step set.

        Args:
            condition: filter text (``"rating >= 4 AND category = 'books'"``), a filter
                object (``{"rating": {"$gte": 4}}``) or a predicate.

        Raises:
            PlanError: text that does not parse, or an object that does not read, the message
                naming the part at fault; a filter on a searched vector column.
        """
        if condition is None:
            raise PlanError(
                "where() needs a filter: filter text, a filter object or a predicate, got None",
                field="filter",
                value=None,
            )
        predicate = read_filter(condition)
        assert predicate is not None
        earlier = self.plan.filter
        return self._with(filter=predicate if earlier is None else earlier & predicate)

    def limit(self, count: int) -> Search:
        """The search returning ``count`` rows (top-k).

        Raises:
            PlanError: ``count`` is not an integer of at least 1; for a fusion, the page
                reaches past its depth (:data:`DEFAULT_DEPTH`, 200, unless the fusion names one).
        """
        return self._with(limit=count)

    def offset(self, count: int) -> Search:
        """The search skipping its first ``count`` rows (a later page).

        Raises:
            PlanError: ``count`` is not an integer of at least 0; for a fusion, the page
                reaches past its depth.
        """
        return self._with(offset=count)

    def group_by(self, column: str | None, *, group_size: int = 1) -> Search:
        """The search returning ``limit`` groups of rows sharing ``column``'s value (a
        chunk's parent document), each with its best ``group_size`` rows, groups ranked by
        their best row (:class:`~hotdata_retrieval.plan.search.SearchPlan`'s ``group_by``);
        ``None`` ungroups it.

        Raises:
            PlanError: a name that is no identifier, a result or searched vector column, a
                ``group_size`` out of 1 to 100 (or without a column), or for a fusion a
                depth short of ``(limit + offset) * group_size``.
        """
        return self._with(group_by=column, group_size=group_size)

    def after(self, token: str | None) -> Search:
        """The search continuing a ranking after a result's last row: ``token`` is that
        result's ``next_after`` (:class:`~hotdata_retrieval.engines.results.SearchResult`);
        ``None`` starts from the top again.

        Raises:
            PlanError: not a token, or a token another search returned (its query, filter,
                fusion or key differ); a search with an offset, tie-breakers or groups.
        """
        return self._with(after=token)

    def facets(self, *columns: str) -> Search:
        """The search also counting, per column, the values of the rows its ranking
        considered (:class:`~hotdata_retrieval.plan.search.SearchPlan`'s ``facets``; the
        result's ``facets``); no columns counts none.

        Raises:
            PlanError: a name that is no identifier, a result or searched vector column,
                more than 8 columns; a grouped search, or one with a cursor or steps.
        """
        return self._with(facets=columns)

    def select(self, *columns: str) -> Search:
        """The search returning ``columns`` of each row, in order (the key is still reported
        as each hit's key).

        Raises:
            PlanError: no column, a name that is no identifier, a column named twice or named
                like a result column (``score``, ``_distance``), the searched vector column.
        """
        return self._with(columns=columns)

    def diversity(self, mmr_lambda: float, *, candidates: int | None = None) -> Search:
        """The search with its page chosen by maximal marginal relevance among ``candidates``
        rows (:class:`~hotdata_retrieval.plan.steps.Diversity`, replacing any earlier
        diversity step): the statement fetches the candidates and their vectors, and
        ``limit`` and ``offset`` cut the page from the diversified order.

        Args:
            mmr_lambda: 0 to 1: 1 ranks by similarity to the query alone, 0 by difference
                from the rows already chosen alone.
            candidates: rows to choose among, at least ``limit + offset``, at most 1,000
                (default: 4 times ``limit + offset``, at most 1,000 and a fusion's depth).

        Raises:
            PlanError: a lambda outside [0, 1], a candidate count out of range, a search
                without a nearest-neighbour branch (no query vector to compare with).
        """
        kept = [step for step in self.plan.steps if not isinstance(step, Diversity)]
        step = Diversity(mmr_lambda=mmr_lambda, candidates=candidates)
        return self._with(steps=[*kept, step])

    def rerank(
        self,
        reranker: Any,
        *,
        top_n: int | None = None,
        column: str | None = None,
        query: str | None = None,
    ) -> Search:
        """The search with its first ``top_n`` rows re-scored by ``reranker`` against the
        query and ordered by that score (:class:`~hotdata_retrieval.plan.steps.Rerank`,
        replacing any earlier rerank step); ``limit`` and ``offset`` cut the page from them.

        Args:
            reranker: a :class:`~hotdata_retrieval.embed.reranking.Reranker` (registered
                under its name), a registered reranker's name, or the directory of an ONNX
                cross-encoder.
            top_n: rows scored, at least ``limit + offset``, at most 1,000 (default: 4 times
                ``limit + offset``, at most 1,000 and a fusion's depth).
            column: the text column paired with the query (default: the searched one).
            query: the query text paired with each row (default: the searched one; a
                search by vector alone needs it).

        Raises:
            PlanError: a ``top_n`` out of range, no text column or query text to pair.
        """
        from hotdata_retrieval.plan.steps import Rerank, steps_from_options

        (made,) = steps_from_options(rerank=reranker, top_n=top_n, query=query)
        assert isinstance(made, Rerank)
        kept = [step for step in self.plan.steps if not isinstance(step, Rerank)]
        return self._with(steps=[*kept, attrs.evolve(made, column=column)])

    def explain(self, *, full_vectors: bool = False) -> str:
        """The SQL statement the plan compiles to for the engine's dialect, pretty-printed
        (:func:`~hotdata_retrieval.compile.render.to_display_sql`: each query vector
        shortened unless ``full_vectors``). The engine's own statement
        (:attr:`~hotdata_retrieval.engines.results.SearchResult.sql`) also projects the key
        and, for a fusion, each branch's rank and raw score. An engine that runs no SQL
        (LanceDB) is shown the plan document (:func:`~hotdata_retrieval.plan_to_document`)
        as JSON.

        Raises:
            UnsupportedOnDialectError: the plan needs what the dialect cannot express.
        """
        profile = getattr(self.engine, "profile", None)
        if profile is None:
            from hotdata_retrieval.plan.document import plan_to_document

            return json.dumps(plan_to_document(self.plan), indent=2, default=str)
        from hotdata_retrieval.compile.render import to_display_sql, to_sql

        sql = to_sql(self.plan, profile) if full_vectors else to_display_sql(self.plan, profile)
        steps = describe_steps(self.plan)
        return "\n".join([sql, *(f"-- {line}" for line in steps)])

    def run(self) -> SearchResult:
        """Run the plan (``engine.search(plan)``): typed hits, best first.

        Raises:
            EngineError: the engine rejected or failed the statement (a missing table,
                column or index).
        """
        return self.engine.search(self.plan)

    def to_list(self) -> list[dict[str, Any]]:
        """Run the plan; its rows as dicts, best first
        (:meth:`~hotdata_retrieval.engines.results.SearchResult.to_list`).

        Raises:
            EngineError: as :meth:`run`.
            PlanError: a requested column has the name of a result value.
        """
        return self.run().to_list()

    def to_arrow(self) -> pa.Table:
        """Run the plan; its rows as an Arrow table
        (:meth:`~hotdata_retrieval.engines.results.SearchResult.to_arrow`).

        Raises:
            EngineError: as :meth:`run`.
            PlanError: as :meth:`to_list`.
            MissingExtraError: pyarrow is not installed.
        """
        return self.run().to_arrow()

    def to_pandas(self) -> pd.DataFrame:
        """Run the plan; its rows as a pandas data frame, best first (the ``pandas`` extra;
        :meth:`~hotdata_retrieval.engines.results.SearchResult.to_pandas`).

        Raises:
            EngineError: as :meth:`run`.
            PlanError: as :meth:`to_list`.
            MissingExtraError: pandas or pyarrow is not installed.
        """
        return self.run().to_pandas()


def search_table(engine: Engine, name: str | TableName) -> SearchTable:
    """The start of a chain on ``engine``'s table ``name``, for any engine that meets the
    engine contract (the library's own engines have it as ``engine.table(name)``).

    Raises:
        PlanError: ``name`` is neither text nor a :class:`~hotdata_retrieval.plan.names.
            TableName`.
    """
    if not isinstance(name, (str, TableName)):
        raise PlanError(
            f"a table is named by text or a TableName, got {name!r}", field="table", value=name
        )
    return SearchTable(engine=engine, name=name)
