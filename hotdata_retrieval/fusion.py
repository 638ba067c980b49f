"""Reference reciprocal rank fusion in pure Python.

This is the semantics the compiled SQL must reproduce, written as plainly as possible: the
test oracle for every engine, and the fusion used by any adapter that fuses on the client.

A candidate's fused score is ``sum_i weights[i] / (rank_constant + rank_i)`` over the
branches that returned it, ranks 1-based (Cormack, Clarke & Buettcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009, pp. 758-759).
Terms are added in branch order, exactly as the SQL adds its ``COALESCE(...)`` terms, so
the floating-point sums are bit-identical and ties compare equal in both. The result is
ordered by fused score descending, then key ascending.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.search import DEFAULT_RANK_CONSTANT

__all__ = ["FusedHit", "reciprocal_rank_fusion"]


@attrs.frozen(kw_only=True)
class FusedHit:
    """One fused result.

    Attributes:
        key: the candidate's key.
        score: the fused score (higher is better).
        ranks: the 1-based rank of the key in each branch, ``None`` where a branch missed it.
    """

    key: Any
    score: float
    ranks: tuple[int | None, ...]


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    weights: Sequence[float] | None = None,
    rank_constant: float = DEFAULT_RANK_CONSTANT,
    limit: int | None = None,
    offset: int = 0,
) -> list[FusedHit]:
    """Fuse ranked key lists with weighted reciprocal rank fusion.

    Args:
        ranked_lists: one list of keys per branch, best first (already cut to the branch
            depth). A key may appear at most once per list.
        weights: one finite weight >= 0 per list (default all 1.0).
        rank_constant: RRF's k, > 0 (default 60).
        limit: number of hits to return after ``offset`` (default: all).
        offset: number of leading hits to skip.

    Returns:
        Hits ordered by fused score descending, then key ascending.

    Raises:
        PlanError: a weight count that does not match the lists, a negative or non-finite
            weight, a rank constant <= 0, a negative offset or limit, or a key repeated within
            one list (in SQL that would multiply rows).

    >>> [hit.key for hit in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])]
    ['b', 'a', 'c']
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise PlanError(
            f"got {len(weights)} weights for {len(ranked_lists)} ranked lists",
            field="weights",
            value=weights,
        )
    for weight in weights:
        if not math.isfinite(weight) or weight < 0:
            raise PlanError(
                f"weight must be finite and >= 0, got {weight!r}", field="weight", value=weight
            )
    if not math.isfinite(rank_constant) or rank_constant <= 0:
        raise PlanError(
            f"rank_constant must be > 0, got {rank_constant!r}",
            field="rank_constant",
            value=rank_constant,
        )
    if offset < 0 or (limit is not None and limit < 0):
        raise PlanError(f"limit and offset must be >= 0, got {limit!r}, {offset!r}", field="limit")

    ranks: dict[Hashable, list[int | None]] = {}
    for branch, keys in enumerate(ranked_lists):
        for position, key in enumerate(keys, start=1):
            entry = ranks.setdefault(key, [None] * len(ranked_lists))
            if entry[branch] is not None:
                raise PlanError(
                    f"key {key!r} appears twice in ranked list {branch}", field="key", value=key
                )
            entry[branch] = position

    hits = []
    for key, key_ranks in ranks.items():
        terms = [
            float(weights[branch]) / (rank_constant + rank) if rank is not None else 0.0
            for branch, rank in enumerate(key_ranks)
        ]
        score = terms[0]
        for term in terms[1:]:
            score = score + term
        hits.append(FusedHit(key=key, score=score, ranks=tuple(key_ranks)))
    hits.sort(key=lambda hit: (-hit.score, hit.key))
    end = None if limit is None else offset + limit
    return hits[offset:end]
