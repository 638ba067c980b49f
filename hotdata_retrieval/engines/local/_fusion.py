"""The local engine's fusion of a plan's ranked branches in NumPy: the reference fusion's
scores (:func:`hotdata_retrieval.fusion.reference_fusion`) to the last bit, and its order.

The reference is plain Python, one dictionary entry and one tuple per candidate: at the
default depth of 200, a fusion of two branches merges up to 400 candidates, and that costs
about half a millisecond, as much as a filtered branch. Here the candidates are rowids
merged with one :func:`numpy.unique`, and each branch's term is one array operation over its
candidates, the same IEEE-754 operation in the same order as the reference's:

- reciprocal rank fusion: ``weight / (rank_constant + rank)`` (``rank_constant + rank`` an
  integer sum when the constant is an integer, as Python adds them; the weight a float);
- min-max and distribution-based score fusion: ``weight * ((s - low) / (high - low))``,
  ``weight * equal_scores_value`` when ``high == low``, with ``s`` the raw score negated
  for a distance and ``(low, high)`` the reference's own bounds
  (:func:`hotdata_retrieval.fusion.branch_bounds`);

each 0.0 where a branch missed the row, added in branch order. Rows are ordered by fused
score descending, then by the table's key ascending (:meth:`LoadedTable.tie_order
<hotdata_retrieval.engines.local.tables.LoadedTable.tie_order>`: a rowid's place in the
key's order, which is Python's order of the keys for integer and text keys), which is the
reference's order of ``(-score, key)``. Ranks are competition ranks (SQL's ``RANK()``), as
:func:`hotdata_retrieval.fusion.competition_ranks` gives them.

``tests/test_native_fusion.py`` compares every method with the reference on random
branches with tied scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from hotdata_retrieval.fusion import branch_bounds
from hotdata_retrieval.plan.search import (
    Fusion,
    NormalizedScoreFusion,
    ReciprocalRankFusion,
)
from hotdata_retrieval.plan.values import INT64_MAX


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """The 1-based competition ranks (int64) of ``scores``, ordered best first: a score equal
    to the one before it shares its rank, a new score takes its position ("1224").

    >>> competition_ranks(np.array([9.0, 7.0, 7.0, 5.0])).tolist()
    [1, 2, 2, 4]
    >>> competition_ranks(np.array([], dtype=np.float64)).tolist()
    []
    """
    count = scores.size
    positions = np.arange(1, count + 1, dtype=np.int64)
    if count < 2:
        return positions
    starts = np.empty(count, dtype=bool)
    starts[0] = True
    np.not_equal(scores[1:], scores[:-1], out=starts[1:])
    return np.maximum.accumulate(np.where(starts, positions, 0))


def _denominators(rank_constant: float | int, ranks: np.ndarray) -> np.ndarray:
    """``rank_constant + rank`` for each of ``ranks`` (int64), as the float64 Python divides
    a weight by: the integer sum rounded once to float64 for an integer constant, else the
    float sum. An integer constant whose sums would pass INT64_MAX (NumPy's int64 addition
    wraps, and a constant past it cannot be an int64 at all: ``1e300`` is read as an
    integer) is added in Python's integers, each sum then rounded as Python rounds it.

    >>> _denominators(2**63 - 1, np.array([1, 2])).tolist() == [2.0**63, 2.0**63]
    True
    """
    if isinstance(rank_constant, int) and rank_constant > INT64_MAX - ranks.size:
        return np.array([float(rank_constant + rank) for rank in ranks.tolist()], np.float64)
    return rank_constant + ranks


@attrs.frozen
class FusedPage:
    """One page of a fusion, best first.

    Attributes:
        rowids: the page's rowids (int64).
        scores: each row's fused score.
        ranks: per branch, each row's rank in it, ``None`` where the branch missed the row.
        raw: per branch, each row's raw score in it, ``None`` where the branch missed it.
    """

    rowids: np.ndarray
    scores: list[float]
    ranks: list[list[int | None]]
    raw: list[list[float | None]]


def fuse(
    fusion: Fusion,
    branches: Sequence[tuple[np.ndarray, np.ndarray]],
    tie_order: np.ndarray,
    *,
    limit: int,
    offset: int,
) -> FusedPage:
    """The page ``offset`` to ``offset + limit`` of ``fusion`` over its branches.

    Args:
        fusion: the plan's fusion: a :class:`~hotdata_retrieval.plan.search.
            ReciprocalRankFusion` or a :class:`~hotdata_retrieval.plan.search.
            NormalizedScoreFusion` (min-max, distribution-based).
        branches: per branch of ``fusion.branches``, in order, its candidates best first
            (cut to the depth): ``(rowids, raw scores)``, int64 rowids (unique within the
            branch) and float64 scores (finite, Float32 values for a score-based method).
        tie_order: each rowid's place in ascending order of the table's key (unique).
        limit: rows kept after ``offset``.
        offset: fused rows skipped.

    Raises:
        TypeError: a fusion of another kind.
    """
    sizes = [rowids.size for rowids, _ in branches]
    merged = np.concatenate([rowids for rowids, _ in branches])
    candidates, inverse = np.unique(merged, return_inverse=True)
    count = candidates.size
    rank_constant: float | int = 0
    equal_scores_value = 0.0
    extents: list[tuple[float, float] | None] = []
    rrf = isinstance(fusion, ReciprocalRankFusion)
    if isinstance(fusion, ReciprocalRankFusion):
        weights = [float(weight) for weight in fusion.weights]
        rank_constant = fusion.rank_constant
    elif isinstance(fusion, NormalizedScoreFusion):
        weights = [float(weight) for weight in fusion.branch_weights]
        extents = branch_bounds(fusion, [raw.tolist() for _, raw in branches])
        equal_scores_value = fusion.equal_scores_value
    else:
        raise TypeError(f"no NumPy fusion of {type(fusion).__name__}")
    total: np.ndarray | None = None
    at: list[np.ndarray] = []
    ranks: list[np.ndarray] = []
    start = 0
    for index, ((_, raw), size) in enumerate(zip(branches, sizes)):
        places = inverse[start : start + size]
        start += size
        branch_ranks = competition_ranks(raw)
        at.append(places)
        ranks.append(branch_ranks)
        term = np.zeros(count, dtype=np.float64)
        if rrf:
            term[places] = weights[index] / _denominators(rank_constant, branch_ranks)
        else:
            extent = extents[index]
            if extent is not None:
                low, high = extent
                if high == low:
                    normalized = np.full(size, equal_scores_value, dtype=np.float64)
                else:
                    similarity = raw if fusion.branches[index].higher_is_better else -raw
                    normalized = (similarity - low) / (high - low)
                term[places] = weights[index] * normalized
        total = term if total is None else total + term
    assert total is not None  # a fusion has two or more branches
    kept = np.arange(count)
    if fusion.min_score is not None:
        kept = np.flatnonzero(total >= fusion.min_score)
    order = kept[np.lexsort((tie_order[candidates[kept]], -total[kept]))]
    page = order[offset : offset + limit]
    page_ranks: list[list[int | None]] = []
    page_raw: list[list[float | None]] = []
    for (_, raw), places, branch_ranks in zip(branches, at, ranks):
        position = np.full(count, -1, dtype=np.int64)
        position[places] = np.arange(places.size)
        found = position[page].tolist()
        rank_values = branch_ranks.tolist()
        raw_values = raw.tolist()
        page_ranks.append([None if p < 0 else rank_values[p] for p in found])
        page_raw.append([None if p < 0 else raw_values[p] for p in found])
    return FusedPage(candidates[page], total[page].tolist(), page_ranks, page_raw)
