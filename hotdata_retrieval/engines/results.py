"""Typed search results, the same for every engine."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from hotdata_retrieval.plan.search import SearchPlan, debug_columns

__all__ = ["BranchScore", "SearchHit", "SearchResult", "hits_from_rows"]


@attrs.frozen(kw_only=True)
class BranchScore:
    """What one branch said about a hit.

    Attributes:
        rank: 1-based rank within the branch, ``None`` if the branch did not return the hit.
        raw_score: the branch's own score — BM25 ``score`` (higher is better) or
            ``_distance`` (lower is nearer) — ``None`` if the branch did not return the hit.
    """

    rank: int | None
    raw_score: float | None


@attrs.frozen(kw_only=True)
class SearchHit:
    """One result row.

    Attributes:
        key: the row's key (the plan's ``key_column``).
        columns: the requested table columns, by name (the key included if requested).
        score: the fused RRF score (higher is better) for a fusion; for a single branch its
            raw score (BM25 ``score``, higher is better, or ``_distance``, lower is nearer),
            ``None`` for a row whose vector is NULL (it has no distance; such rows come last).
        branches: per branch name, its rank and raw score.
    """

    key: Any
    columns: Mapping[str, Any]
    score: float | None
    branches: Mapping[str, BranchScore]


@attrs.frozen(kw_only=True)
class SearchResult:
    """The hits of one search, best first, with the SQL that produced them."""

    hits: tuple[SearchHit, ...]
    sql: str

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def keys(self) -> list[Any]:
        """The hits' keys, best first."""
        return [hit.key for hit in self.hits]


def hits_from_rows(
    plan: SearchPlan, requested: tuple[str, ...], rows: list[dict[str, Any]]
) -> tuple[SearchHit, ...]:
    """Turn result rows of ``plan`` (compiled with the key projected and, for a fusion, with
    branch scores included) into hits carrying only the ``requested`` columns."""
    names = plan.branch_names
    hits = []
    for position, row in enumerate(rows, start=plan.offset + 1):
        if plan.fusion is None:
            branch = plan.branches[0]
            raw = row[branch.raw_score_column]
            branches = {names[0]: BranchScore(rank=position, raw_score=raw)}
            score = raw
        else:
            branches = {}
            for name, branch in zip(names, plan.branches):
                if not plan.include_branch_scores:
                    branches[name] = BranchScore(rank=None, raw_score=None)
                    continue
                rank_column, raw_column = debug_columns(name, branch)
                rank = row[rank_column]
                branches[name] = BranchScore(
                    rank=None if rank is None else int(rank), raw_score=row[raw_column]
                )
            score = row["score"]
        hits.append(
            SearchHit(
                key=row[plan.key_column],
                columns={column: row[column] for column in requested},
                score=None if score is None else float(score),
                branches=branches,
            )
        )
    return tuple(hits)
