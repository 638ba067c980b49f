"""``page_scores`` on every engine: a fused page's hits the nearest branch did not return
carry that branch's distance, computed for their rows, equal to a NumPy brute force from the
stored vectors; the ranking is the same plan's without it, and a tie-breaker reads the
computed distance. The SQL engines compute it in the statement's final join, the local
engine's native path with NumPy, LanceDB and turbopuffer in the library from the vectors
their rows bring back."""

from __future__ import annotations

from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
)
from tests.parity.corpus import WITHOUT_VECTOR, reference_distances
from tests.parity.test_parity import METRICS, TOLERANCE

QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
QUERY_TEXT = "error upgrade crash"
DEPTH = 6
"""Few candidates per branch, so the text branch brings hits the nearest branch missed."""


def _plan(metric: str, **options: Any) -> SearchPlan:
    fusion = options.pop("fusion", {})
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=QUERY_TEXT),
                NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=QUERY_VECTOR, metric=metric
                ),
            ],
            depth=DEPTH,
            **fusion,
        ),
        limit=DEPTH,
        include_branch_scores=True,
        **options,
    )


def test_every_hit_carries_the_nearest_distance(engine: Any) -> None:
    for metric in METRICS[engine.parity_name]:  # the others are refused (test_parity)
        _check_every_hit(engine, metric)


def _check_every_hit(engine: Any, metric: str) -> None:
    reference = reference_distances(QUERY_VECTOR, metric)
    plain = engine.search(_plan(metric))
    result = engine.search(_plan(metric, page_scores=["nearest"]))
    assert result.keys == plain.keys  # the ranking is the plan's own
    computed = 0
    for hit, before in zip(result, plain):
        nearest = hit.branches["nearest"]
        assert nearest.rank == before.branches["nearest"].rank
        if nearest.rank is not None:  # returned: the branch's own distance, as without
            assert nearest.raw_score == before.branches["nearest"].raw_score
            assert not nearest.computed
        elif hit.key in WITHOUT_VECTOR:
            assert nearest.raw_score is None and not nearest.computed
        else:
            assert before.branches["nearest"].raw_score is None
            assert nearest.computed
            computed += 1
        if hit.key not in WITHOUT_VECTOR:
            assert nearest.raw_score == pytest.approx(
                reference[hit.key], rel=TOLERANCE, abs=TOLERANCE
            )
    assert computed >= 1


def test_a_tie_breaker_reads_the_computed_distance(engine: Any) -> None:
    """The nearest branch weighs nothing, so rows tied on their text rank tie on the fused
    score and the completed distance orders them, rows without a vector last."""
    metric = METRICS[engine.parity_name][0]
    plan = _plan(
        metric,
        fusion={"weights": [1, 0]},
        page_scores=["nearest"],
        tie_breakers=["nearest_distance"],
    )
    if engine.parity_name == "turbopuffer":
        with pytest.raises(UnsupportedFeatureError, match="tie-breakers"):
            engine.search(plan)
        return
    reference = reference_distances(QUERY_VECTOR, metric)
    result = engine.search(plan)
    order = [
        (-hit.score, reference.get(hit.key, float("inf")), hit.key)  # NULL distances last
        for hit in result
    ]
    assert order == sorted(order)
    assert len({hit.score for hit in result}) < len(result)  # ties the distance decided
    assert any(hit.branches["nearest"].computed for hit in result)
