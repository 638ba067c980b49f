"""``explain_scores`` on every engine: each hit of a fused page carries, per branch, its
normalized value and weighted contribution; the contributions, added in branch order, are
the hit's fused score (within 1e-9) for RRF, min-max and DBSF; each normalized value equals a
plain-Python normalization of the branch's own ranked list (run as a single branch on the
same engine); a branch that did not return a hit says so (no rank, no normalized value, a
contribution of 0); the ranking is the same plan's without explanations.

The SQL engines return each branch's normalization bounds from the statement, the local
engine's native path, LanceDB and turbopuffer compute them in the library from the lists
they fuse; Hotdata runs through its fake API."""

from __future__ import annotations

import math
import statistics
from typing import Any

import attrs
import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.plan.search import DistributionBasedScoreFusion, MinMaxFusion
from tests.parity.every_engine import engine as engine
from tests.parity.test_parity import TOLERANCE

QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
QUERY_TEXT = "error upgrade crash"
DEPTH = 8
SUM_TOLERANCE = 1e-9


def _branches() -> list[Any]:
    return [
        Bm25Search(table="docs", column="body", query_text=QUERY_TEXT),
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=QUERY_VECTOR, metric="cosine"
        ),
    ]


FUSIONS = {
    "rrf": lambda: ReciprocalRankFusion(branches=_branches(), depth=DEPTH, weights=[2, 0.5]),
    "min_max": lambda: MinMaxFusion(branches=_branches(), depth=DEPTH, weights=[3, 1]),
    "dbsf": lambda: DistributionBasedScoreFusion(branches=_branches(), depth=DEPTH, alpha=0.3),
}


def _own_list(engine: Any, branch: Any) -> dict[Any, float]:
    """The branch run alone on the engine: key → raw score of its ``DEPTH`` rows."""
    result = engine.search(SearchPlan(source=branch, limit=DEPTH))
    return {
        hit.key: hit.branches[next(iter(hit.branches))].raw_score
        for hit in result
        if hit.branches[next(iter(hit.branches))].raw_score is not None
    }


def _reference_normalized(method: str, raw: float, scores: list[float], better: bool) -> float:
    """The branch's normalized value in plain Python (``docs/fusion.md``)."""
    similarity = [value if better else -value for value in scores]
    mine = raw if better else -raw
    if method == "min_max":
        low, high = min(similarity), max(similarity)
        return 1.0 if high == low else (mine - low) / (high - low)
    mean = statistics.fmean(similarity)
    spread = 3 * statistics.stdev(similarity) if len(similarity) > 1 else 0.0
    if spread == 0:
        return 0.5
    return (mine - (mean - spread)) / (2 * spread)


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_contributions_add_up_to_the_fused_score(engine: Any, method: str) -> None:
    fusion = FUSIONS[method]()
    plan = SearchPlan(source=fusion, limit=DEPTH)
    plain = engine.search(plan)
    result = engine.search(attrs.evolve(plan, explain_scores=True, include_branch_scores=True))
    assert result.keys == plain.keys
    assert [hit.score for hit in result] == pytest.approx([hit.score for hit in plain])
    own = [_own_list(engine, branch) for branch in fusion.branches]
    missed = 0
    for hit in result:
        assert hit.score is not None
        total = 0.0
        for index, (name, branch) in enumerate(zip(plan.branch_names, fusion.branches)):
            explained = hit.branches[name]
            assert explained.contribution is not None
            total += explained.contribution
            if not explained.returned:
                missed += 1
                assert explained.normalized is None and explained.contribution == 0.0
                continue
            assert explained.normalized is not None
            if method == "rrf":
                expected = 1.0 / (fusion.rank_constant + explained.rank)
                weight = float(fusion.weights[index])
            else:
                assert explained.raw_score is not None
                expected = _reference_normalized(
                    method,
                    explained.raw_score,
                    list(own[index].values()),
                    branch.higher_is_better,
                )
                weight = fusion.branch_weights[index]
            assert explained.normalized == pytest.approx(expected, rel=1e-4, abs=1e-4)
            assert explained.contribution == pytest.approx(
                weight * explained.normalized, rel=1e-12, abs=1e-15
            )
        assert math.isclose(total, hit.score, rel_tol=0.0, abs_tol=SUM_TOLERANCE)
    assert missed >= 1  # some hit shows a branch that did not return it


def test_rows_tell_the_explanation(engine: Any) -> None:
    plan = SearchPlan(source=FUSIONS["min_max"](), limit=3, explain_scores=True)
    rows = engine.search(plan).to_list()
    for row in rows:
        total = row["text_contribution"] + row["nearest_contribution"]
        assert math.isclose(total, row["score"], rel_tol=0.0, abs_tol=SUM_TOLERANCE)
    assert TOLERANCE  # the distances themselves are checked in test_parity
