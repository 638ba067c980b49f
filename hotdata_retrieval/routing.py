"""Choose a search plan from a table's indexes: text, semantic, nearest or hybrid.

One router serves every engine: :func:`plan_search` reads a :class:`TableIndexes` and a mode
and builds the :class:`~hotdata_retrieval.plan.search.SearchPlan`; an engine's own
``plan_search(table, query, ...)`` reads the table's indexes and calls it with the engine's
:class:`RoutingPolicy`.

A vector index with a ``source_column`` is *provider-backed*: the engine embeds query text
itself (``vector_search``). One without is *plain*: the caller embeds the query
(``embed_query``) and the plan searches the vector column directly. The rules:

- ``text``: BM25 over ``text_column`` (default: the first BM25 column).
- ``semantic``: ``vector_search`` over a provider-backed index; a caller-embedded
  nearest-neighbour search over a plain one. Provider-backed is preferred; ``vector_column`` or
  ``text_column`` (the index's source column) pick one.
- ``nearest``: a caller-embedded nearest-neighbour search on a vector column of either kind.
- ``hybrid``: BM25 fused by reciprocal rank fusion with a caller-embedded nearest-neighbour
  search of a vector column the policy lets share a plan with BM25: the one named by
  ``vector_column``, else the one made from the searched text column, else the only one. With
  several and no way to tell, the router refuses rather than guess.
- ``auto``: hybrid when the table has a BM25 index, a vector column hybrid can use and
  ``embed_query``; else text when it has a BM25 index; else semantic.
- ``fusion`` names hybrid's fusion method (``rrf``, the default, ``min_max`` or ``dbsf``:
  ``docs/fusion.md``); ``weights``, ``rank_constant``, ``alpha``, ``depth`` and ``min_score``
  are its options, each refused by a method that does not take it. Given to a search that is
  not hybrid (``auto`` included, once it has chosen), they are refused rather than ignored.

The one rule that differs between engines is the :class:`RoutingPolicy`: on the local engine
every vector column is provider-backed (engine-embedded at load time) and an ordinary column of
its table, so hybrid fuses BM25 with a caller-embedded search of that same column
(:data:`LOCAL_ROUTING`); on the Hotdata engine a provider-backed index cannot share its table
with a BM25 index (engine contract §1.2), so hybrid needs a plain index
(:data:`HOTDATA_ROUTING`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.indexes import TableIndexes, VectorIndex
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.search import (
    DEFAULT_FUSION_METHOD,
    Bm25Search,
    Branch,
    Fusion,
    NearestNeighborSearch,
    SearchPlan,
    VectorSearch,
    make_fusion,
)

__all__ = [
    "HOTDATA_ROUTING",
    "LOCAL_ROUTING",
    "RoutingPolicy",
    "SearchMode",
    "TableIndexes",
    "VectorIndex",
    "plan_search",
]


class SearchMode(str, enum.Enum):
    """How ``plan_search`` searches."""

    AUTO = "auto"
    TEXT = "text"
    SEMANTIC = "semantic"
    NEAREST = "nearest"
    HYBRID = "hybrid"


@attrs.frozen(kw_only=True)
class RoutingPolicy:
    """What an engine lets a plan combine, and how it speaks of its indexes.

    Attributes:
        fuse_provider_indexes: whether ``hybrid`` may fuse BM25 with a caller-embedded
            nearest-neighbour search of a provider-backed vector column. ``True`` on the local
            engine, whose embedded columns sit beside the BM25 index in the same table;
            ``False`` on the Hotdata engine, where a provider-backed index cannot share its
            table with a BM25 index (engine contract §1.2), so hybrid needs a plain index.
        pending_indexes: whether indexes build in the background and may not be ready yet
            (the Hotdata engine's ``status: pending``); messages then speak of *ready* indexes.
    """

    fuse_provider_indexes: bool = True
    pending_indexes: bool = False


LOCAL_ROUTING = RoutingPolicy(fuse_provider_indexes=True, pending_indexes=False)
"""The local engine's policy, and :func:`plan_search`'s default."""

HOTDATA_ROUTING = RoutingPolicy(fuse_provider_indexes=False, pending_indexes=True)
"""The Hotdata engine's policy: hybrid fuses BM25 with a plain vector index only."""


@attrs.frozen
class _Router:
    indexes: TableIndexes
    policy: RoutingPolicy
    query: str
    embed_query: Callable[[str], Sequence[float]] | None

    @property
    def ready(self) -> str:
        return "ready " if self.policy.pending_indexes else ""

    def fusable(self, vector: VectorIndex) -> bool:
        return self.policy.fuse_provider_indexes or not vector.provider_backed

    @property
    def fused_kind(self) -> str:
        return "vector" if self.policy.fuse_provider_indexes else "plain vector"

    def text_column(self, text_column: str | None) -> str:
        indexes = self.indexes
        if text_column is not None:
            if text_column not in indexes.bm25_columns:
                raise PlanError(
                    f"column '{text_column}' of '{indexes.table}' has no {self.ready}BM25 index; "
                    f"{'ready' if self.ready else 'indexed'}: "
                    f"{', '.join(indexes.bm25_columns) or 'none'}",
                    field="text_column",
                    value=text_column,
                )
            return text_column
        if not indexes.bm25_columns:
            raise PlanError(
                f"table '{indexes.table}' has no {self.ready}BM25 index", field="mode", value="text"
            )
        return indexes.bm25_columns[0]

    def named_vector(self, vector_column: str) -> VectorIndex:
        for vector in self.indexes.vectors:
            if vector.column == vector_column:
                return vector
        raise PlanError(
            f"column '{vector_column}' of '{self.indexes.table}' has no {self.ready}vector index",
            field="vector_column",
            value=vector_column,
        )

    def searched_vector(
        self, mode: SearchMode, vector_column: str | None, text_column: str | None
    ) -> VectorIndex:
        """The vector index a ``semantic`` or ``nearest`` search uses."""
        indexes = self.indexes
        if vector_column is not None:
            return self.named_vector(vector_column)
        if text_column is not None:
            for vector in indexes.vectors:
                if vector.source_column == text_column:
                    return vector
            # A plain index records no text column, so it may still be the one over it.
            if all(vector.provider_backed for vector in indexes.vectors):
                raise PlanError(
                    f"table '{indexes.table}' has no {self.ready}vector index over "
                    f"'{text_column}'; vector indexes: "
                    f"{', '.join(v.column for v in indexes.vectors) or 'none'}",
                    field="text_column",
                    value=text_column,
                )
        for vector in indexes.vectors:
            if vector.provider_backed:
                return vector
        if indexes.vectors:
            return indexes.vectors[0]
        raise PlanError(
            f"table '{indexes.table}' has no {self.ready}vector index",
            field="mode",
            value=mode.value,
        )

    def fused_vector(self, vector_column: str | None, text_column: str) -> VectorIndex:
        """The vector index ``hybrid`` fuses with BM25 over ``text_column``."""
        indexes = self.indexes
        if vector_column is not None:
            vector = self.named_vector(vector_column)
            if not self.fusable(vector):
                raise PlanError(
                    f"column '{vector_column}' of '{indexes.table}' has a provider-backed "
                    "vector index, which cannot be fused: it cannot share its table with a "
                    f"BM25 index; hybrid needs a {self.ready}plain vector index",
                    field="vector_column",
                    value=vector_column,
                )
            return vector
        candidates = [vector for vector in indexes.vectors if self.fusable(vector)]
        for vector in candidates:
            if vector.source_column == text_column:
                return vector
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            provider = [v.column for v in indexes.vectors if v.provider_backed]
            extra = (
                f" (its engine-embedded index on '{provider[0]}' cannot be fused: a "
                "provider-backed index cannot share its table with a BM25 index)"
                if provider
                else ""
            )
            raise PlanError(
                f"table '{indexes.table}' has no {self.ready}{self.fused_kind} index{extra}",
                field="mode",
                value="hybrid",
            )
        raise PlanError(
            f"table '{indexes.table}' has {len(candidates)} {self.fused_kind} indexes "
            f"({', '.join(v.column for v in candidates)}) and none is recorded as made from "
            f"'{text_column}'; name the one to fuse with vector_column=",
            field="vector_column",
            value=None,
        )

    def nearest(self, vector: VectorIndex, mode: SearchMode) -> NearestNeighborSearch:
        if self.embed_query is None:
            kind = "engine-embedded" if vector.provider_backed else "plain"
            raise PlanError(
                f"{mode.value} search over the {kind} vector column '{vector.column}' of "
                f"'{self.indexes.table}' embeds the query on this side and needs an embedder "
                "made with the model that wrote the column (embed_query=, or the engine's "
                "embedder)",
                field="embedder",
                value=None,
            )
        return NearestNeighborSearch(
            table=self.indexes.table,
            column=vector.column,
            query_vector=self.embed_query(self.query),
            metric=vector.metric,
        )

    def auto(self, vector_column: str | None, text_column: str | None) -> SearchMode:
        indexes = self.indexes
        if indexes.bm25_columns and indexes.vectors and self.embed_query is not None:
            if vector_column is not None:
                return SearchMode.HYBRID
            try:
                self.fused_vector(None, self.text_column(text_column))
            except PlanError:
                pass  # no vector column to fuse, or several and no way to tell: not hybrid
            else:
                return SearchMode.HYBRID
        if indexes.bm25_columns:
            return SearchMode.TEXT
        if indexes.vectors:
            return SearchMode.SEMANTIC
        raise PlanError(
            f"table '{indexes.table}' has no {self.ready}BM25 or vector index",
            field="mode",
            value="auto",
        )


def _identifier(value: str | None, label: str) -> str | None:
    return None if value is None else normalize_identifier(value, label=label)


def plan_search(
    indexes: TableIndexes,
    query: str,
    *,
    mode: SearchMode | str = SearchMode.AUTO,
    limit: int = 10,
    offset: int = 0,
    filter: Predicate | None = None,
    columns: Sequence[str] | None = None,
    text_column: str | None = None,
    vector_column: str | None = None,
    embed_query: Callable[[str], Sequence[float]] | None = None,
    include_branch_scores: bool = False,
    weights: Sequence[float] | None = None,
    rank_constant: float | None = None,
    depth: int | None = None,
    fusion: str | None = None,
    alpha: float | None = None,
    min_score: float | None = None,
    policy: RoutingPolicy = LOCAL_ROUTING,
) -> SearchPlan:
    """Build the plan that answers ``query`` on a table with ``indexes`` (rules: module doc).

    Args:
        indexes: the table's BM25 and vector indexes, as its engine reports them.
        query: the user's text.
        mode: ``auto`` (default), ``text``, ``semantic``, ``nearest`` or ``hybrid``.
        limit: top-k.
        offset: rows to skip.
        filter: applied inside every branch.
        columns: the columns to return (default: the key and the searched text column).
        text_column: the text column to search (default: the first BM25 column); for
            ``semantic`` and ``nearest``, the source column of the vector index to use.
        vector_column: the vector column to use (default: chosen by the rules above).
        embed_query: turns the query into a vector; needed by ``nearest``, ``hybrid`` and a
            ``semantic`` search over a plain index.
        include_branch_scores: return each branch's rank and raw score.
        weights: ``hybrid``: the reciprocal rank fusion weights, BM25 first (default all 1).
        rank_constant: ``hybrid``: RRF's rank constant k (default 60).
        depth: ``hybrid``: candidates per branch, at least ``limit + offset`` (default 100).
        fusion: ``hybrid``: the fusion method's name (default ``rrf``; ``min_max``,
            ``dbsf``, or any registered method).
        alpha: ``hybrid`` by ``min_max`` or ``dbsf``: the vector branch's weight in [0, 1].
        min_score: ``hybrid``: drop fused rows scoring below it.
        policy: the engine's :class:`RoutingPolicy` (default :data:`LOCAL_ROUTING`).

    Raises:
        PlanError: an unknown mode; no index for the mode (or, for hybrid, none the policy can
            fuse, or several and no way to tell which); a mode that needs ``embed_query``
            without it; a fusion option (``fusion``, ``weights``, ``rank_constant``, ``alpha``,
            ``depth``, ``min_score``) for a search that is not hybrid, an unknown method, an
            option the method does not take, or a value it refuses.
    """
    try:
        chosen = SearchMode(mode)
    except ValueError:
        known = ", ".join(member.value for member in SearchMode)
        raise PlanError(
            f"unknown mode {mode!r}; expected one of {known}", field="mode", value=mode
        ) from None
    text_column = _identifier(text_column, "text_column")
    vector_column = _identifier(vector_column, "vector_column")
    router = _Router(indexes, policy, query, embed_query)
    automatic = chosen is SearchMode.AUTO
    if automatic:
        chosen = router.auto(vector_column, text_column)
    given = {
        "fusion": fusion,
        "weights": weights,
        "rank_constant": rank_constant,
        "alpha": alpha,
        "depth": depth,
        "min_score": min_score,
    }
    fusion_options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if fusion_options and chosen is not SearchMode.HYBRID:
        name = next(iter(fusion_options))
        raise PlanError(
            f"{name} applies only to hybrid search, which fuses BM25 with nearest-neighbour "
            f"search; this search is {chosen.value}"
            + (" (chosen by mode auto from the table's indexes)" if automatic else ""),
            field=name,
            value=fusion_options[name],
        )

    fusion_options.pop("fusion", None)
    source: Branch | Fusion
    if chosen is SearchMode.TEXT:
        column = router.text_column(text_column)
        source = Bm25Search(table=indexes.table, column=column, query_text=query)
    elif chosen is SearchMode.SEMANTIC:
        vector = router.searched_vector(chosen, vector_column, text_column)
        if vector.source_column:
            source = VectorSearch(
                table=indexes.table, column=vector.source_column, query_text=query
            )
        else:
            source = router.nearest(vector, chosen)
    elif chosen is SearchMode.NEAREST:
        source = router.nearest(router.searched_vector(chosen, vector_column, text_column), chosen)
    else:
        column = router.text_column(text_column)
        vector = router.fused_vector(vector_column, column)
        source = make_fusion(
            DEFAULT_FUSION_METHOD if fusion is None else fusion,
            [
                Bm25Search(table=indexes.table, column=column, query_text=query),
                router.nearest(vector, chosen),
            ],
            **fusion_options,
        )
    default_columns = None
    if columns is None:
        searched = text_column or (
            indexes.bm25_columns[0]
            if indexes.bm25_columns
            else (indexes.vectors[0].source_column if indexes.vectors else None)
        )
        default_columns = tuple(
            dict.fromkeys(c for c in (indexes.key_column, searched) if c is not None)
        )
    return SearchPlan(
        source=source,
        columns=columns if columns is not None else default_columns,
        limit=limit,
        offset=offset,
        filter=filter,
        key_column=indexes.key_column,
        include_branch_scores=include_branch_scores,
    )
