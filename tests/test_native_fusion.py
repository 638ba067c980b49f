"""The local engine's NumPy fusion (``engines/local/_fusion.py``) against the reference
fusion (``hotdata_retrieval.fusion``): the same page, fused scores equal to the last bit,
the same ranks and raw scores, on random branches with many tied scores, for reciprocal
rank fusion, min-max and distribution-based score fusion."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from hotdata_retrieval.engines.local._fusion import competition_ranks, fuse
from hotdata_retrieval.fusion import competition_ranks as reference_ranks
from hotdata_retrieval.fusion import reference_fusion
from hotdata_retrieval.plan.search import (
    Bm25Search,
    DistributionBasedScoreFusion,
    Fusion,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
)

TEXT = Bm25Search(table="docs", column="body", query_text="w1 w2")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])


def _branch(
    rng: random.Random, keys: list[Any], higher_is_better: bool, size: int, levels: int
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` distinct rowids with Float32 scores drawn from ``levels`` values (ties),
    ordered best first, then by key, as a branch of the engine is."""
    rowids = rng.sample(range(len(keys)), size)
    values = [float(np.float32(rng.randrange(levels) / 7.0 + 0.1)) for _ in rowids]
    sign = -1.0 if higher_is_better else 1.0
    order = sorted(range(size), key=lambda i: (sign * values[i], keys[rowids[i]]))
    return (
        np.array([rowids[i] for i in order], dtype=np.int64),
        np.array([values[i] for i in order], dtype=np.float64),
    )


def _fusion(rng: random.Random, branches: list[Any]) -> Fusion:
    method = rng.randrange(3)
    min_score = rng.choice([None, None, 0.02, 0.5])
    if method == 0:
        return ReciprocalRankFusion(
            branches=branches,
            weights=rng.choice([None, (1, 2), (0, 1.5), (0.3, 0.7)]),
            rank_constant=rng.choice([60, 1, 7.5, 13]),
            min_score=min_score,
        )
    cls = MinMaxFusion if method == 1 else DistributionBasedScoreFusion
    return cls(branches=branches, weights=rng.choice([None, (1, 3), (2, 0)]), min_score=min_score)


@pytest.mark.parametrize("seed", range(40))
def test_numpy_fusion_is_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    rows = rng.choice([5, 30, 400])
    text_keys = rng.random() < 0.3
    numbers = rng.sample(range(-1000, 1000), rows)
    keys: list[Any] = [f"k{n:+05d}" for n in numbers] if text_keys else numbers
    tie_order = np.argsort(np.argsort(np.array(keys), kind="stable"), kind="stable")
    branches = [TEXT, NEAREST] if rng.random() < 0.7 else [NEAREST, TEXT]
    fusion = _fusion(rng, branches)
    ranked = [
        _branch(
            rng,
            keys,
            branch.higher_is_better,
            rng.randrange(0 if rows < 30 else 1, rows + 1),
            rng.choice([2, 5, 1000]),
        )
        for branch in fusion.branches
    ]
    limit, offset = rng.choice([(10, 0), (3, 2), (1000, 0), (5, 7)])
    page = fuse(fusion, ranked, tie_order, limit=limit, offset=offset)
    hits = reference_fusion(
        fusion,
        [[keys[rowid] for rowid in rowids.tolist()] for rowids, _ in ranked],
        ranks=[
            reference_ranks(raw.tolist(), higher_is_better=branch.higher_is_better)
            for (_, raw), branch in zip(ranked, fusion.branches)
        ],
        scores=[raw.tolist() for _, raw in ranked],
        limit=limit,
        offset=offset,
    )
    assert [keys[rowid] for rowid in page.rowids.tolist()] == [hit.key for hit in hits]
    # bit for bit: the floats' representations, not a tolerance
    assert [score.hex() for score in page.scores] == [hit.score.hex() for hit in hits]
    assert [tuple(column) for column in zip(*page.ranks)] == [hit.ranks for hit in hits]
    raw_of = [dict(zip(rowids.tolist(), raw.tolist(), strict=True)) for rowids, raw in ranked]
    expected_raw = [
        [raw_of[index].get(rowid) for rowid in page.rowids.tolist()] for index in range(2)
    ]
    assert page.raw == expected_raw


@pytest.mark.parametrize("seed", range(20))
def test_numpy_competition_ranks_are_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    scores = sorted((rng.randrange(4) / 3.0 for _ in range(rng.randrange(0, 30))), reverse=True)
    assert competition_ranks(np.array(scores, dtype=np.float64)).tolist() == reference_ranks(scores)


def test_a_fusion_of_another_kind_is_refused() -> None:
    class Other(Fusion):
        method = "other"

    with pytest.raises(TypeError, match="Other"):
        fuse(
            Other(branches=[TEXT, NEAREST]),
            [(np.array([0]), np.array([1.0])), (np.array([0]), np.array([1.0]))],
            np.arange(1),
            limit=1,
            offset=0,
        )


@pytest.mark.parametrize("empty", [False, True])
@pytest.mark.parametrize("rank_constant", [2**63 - 1, 2**63 - 3, 2**62 + 1, 2**53 + 1, 1e300])
def test_a_huge_integer_rank_constant_fuses_as_the_reference(
    rank_constant: Any, empty: bool
) -> None:
    # an integer constant near or past INT64_MAX: NumPy's int64 sum would wrap (negative
    # scores, reversed order) or refuse the constant; Python adds the integers exactly
    rng = random.Random(7)
    keys = list(range(20))
    tie_order = np.arange(20)
    fusion = ReciprocalRankFusion(
        branches=[TEXT, NEAREST], rank_constant=rank_constant, weights=(1, 2)
    )
    ranked = [
        _branch(rng, keys, branch.higher_is_better, 0 if empty and index else 12, 4)
        for index, branch in enumerate(fusion.branches)
    ]  # the second branch found nothing, when empty
    page = fuse(fusion, ranked, tie_order, limit=20, offset=0)
    hits = reference_fusion(
        fusion,
        [rowids.tolist() for rowids, _ in ranked],
        ranks=[
            reference_ranks(raw.tolist(), higher_is_better=branch.higher_is_better)
            for (_, raw), branch in zip(ranked, fusion.branches)
        ],
        scores=[raw.tolist() for _, raw in ranked],
        limit=20,
        offset=0,
    )
    assert page.rowids.tolist() == [hit.key for hit in hits]
    assert [score.hex() for score in page.scores] == [hit.score.hex() for hit in hits]
    assert all(score > 0 for score in page.scores)
