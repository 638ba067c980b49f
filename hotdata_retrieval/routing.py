"""Choose a search plan from a table's indexes: text, semantic, nearest or hybrid.

``auto`` picks hybrid (BM25 fused with nearest-neighbour search) when the table has both a
BM25 index and a vector column, text search when it has only BM25, and semantic search when
it has only vectors. Hybrid embeds the query on the caller's side and searches the vector
column directly, as the Hotdata engine requires: a provider-backed (engine-embedded) vector
index cannot share its table with a BM25 index (engine contract §1.2).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    Bm25Search,
    Branch,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)

__all__ = ["SearchMode", "TableIndexes", "VectorIndex", "plan_search"]


class SearchMode(str, enum.Enum):
    """How ``plan_search`` searches."""

    AUTO = "auto"
    TEXT = "text"
    SEMANTIC = "semantic"
    NEAREST = "nearest"
    HYBRID = "hybrid"


@attrs.frozen(kw_only=True)
class VectorIndex:
    """A vector column, and the text column it embeds when the engine embeds queries itself.

    Attributes:
        column: the vector column.
        source_column: the text column of a provider-backed index (``vector_search`` embeds
            the query on the engine); ``None`` for a plain index, whose queries the caller
            embeds.
        metric: the index's metric.
    """

    column: str
    source_column: str | None = None
    metric: str = "cosine"


@attrs.frozen(kw_only=True)
class TableIndexes:
    """What a table can be searched by."""

    table: TableName
    bm25_columns: tuple[str, ...] = ()
    vectors: tuple[VectorIndex, ...] = ()
    key_column: str = "id"


def _first_vector(indexes: TableIndexes, text_column: str | None) -> VectorIndex:
    for vector in indexes.vectors:
        if text_column is None or vector.source_column == text_column:
            return vector
    wanted = f" over '{text_column}'" if text_column else ""
    raise PlanError(
        f"table '{indexes.table}' has no vector column{wanted}; load it with embeddings",
        field="mode",
        value=text_column,
    )


def _text_column(indexes: TableIndexes, text_column: str | None) -> str:
    if text_column is not None:
        if text_column not in indexes.bm25_columns:
            raise PlanError(
                f"column '{text_column}' of '{indexes.table}' has no BM25 index; indexed: "
                f"{', '.join(indexes.bm25_columns) or 'none'}",
                field="text_column",
                value=text_column,
            )
        return text_column
    if not indexes.bm25_columns:
        raise PlanError(f"table '{indexes.table}' has no BM25 index", field="mode", value="text")
    return indexes.bm25_columns[0]


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
    embed_query: Callable[[str], Sequence[float]] | None = None,
    include_branch_scores: bool = False,
) -> SearchPlan:
    """Build the plan that answers ``query`` on a table with ``indexes``.

    Args:
        indexes: the table's BM25 and vector columns.
        query: the user's text.
        mode: ``auto`` (default), ``text``, ``semantic``, ``nearest`` or ``hybrid``.
        limit: top-k.
        offset: rows to skip.
        filter: applied inside every branch.
        columns: the columns to return (default: key and text column).
        text_column: the text column to search (default: the first indexed one).
        embed_query: turns the query into a vector; needed by ``nearest`` and ``hybrid``.
        include_branch_scores: return each branch's rank and raw score.

    Raises:
        PlanError: an unknown mode, a missing index for the mode, or a mode that needs
            ``embed_query`` without it.
    """
    try:
        chosen = SearchMode(mode)
    except ValueError:
        known = ", ".join(member.value for member in SearchMode)
        raise PlanError(
            f"unknown mode {mode!r}; expected one of {known}", field="mode", value=mode
        ) from None
    if chosen is SearchMode.AUTO:
        if indexes.bm25_columns and indexes.vectors and embed_query is not None:
            chosen = SearchMode.HYBRID
        elif indexes.bm25_columns:
            chosen = SearchMode.TEXT
        else:
            chosen = SearchMode.SEMANTIC

    def nearest(source: str | None) -> NearestNeighborSearch:
        if embed_query is None:
            raise PlanError(
                f"mode {chosen.value!r} needs a query embedder", field="mode", value=chosen.value
            )
        vector = _first_vector(indexes, source)
        return NearestNeighborSearch(
            table=indexes.table,
            column=vector.column,
            query_vector=embed_query(query),
            metric=vector.metric,
        )

    source: Branch | ReciprocalRankFusion
    if chosen is SearchMode.TEXT:
        column = _text_column(indexes, text_column)
        source = Bm25Search(table=indexes.table, column=column, query_text=query)
    elif chosen is SearchMode.SEMANTIC:
        vector = _first_vector(indexes, text_column)
        if vector.source_column is not None:
            source = VectorSearch(
                table=indexes.table, column=vector.source_column, query_text=query
            )
        else:
            source = nearest(None)
    elif chosen is SearchMode.NEAREST:
        source = nearest(text_column)
    else:
        column = _text_column(indexes, text_column)
        fused: list[Branch] = [
            Bm25Search(table=indexes.table, column=column, query_text=query),
            nearest(column if any(v.source_column == column for v in indexes.vectors) else None),
        ]
        source = ReciprocalRankFusion(branches=fused)
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
