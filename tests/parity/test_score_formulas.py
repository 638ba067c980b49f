"""Score formulas on every engine: a fusion rescored by a weighted sum of the fused score and a
column, and by Elasticsearch's/Qdrant's exp, gauss and linear decays of a column, returns the
top-k of an independent pure-Python reference — the branches' own lists (each branch run
alone on the engine), fused by ``reciprocal_rank_fusion``, rescored with the decay functions
written here from their published definitions (``ln`` and ``exp``), filtered by
``min_score``, ordered by the final score then the key. Each hit's terms add up to its
score, and with ``explain_scores`` its branches' contributions add up to its fused score,
within 1e-9."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.fusion import competition_ranks, reciprocal_rank_fusion
from hotdata_retrieval.plan.formula import (
    ColumnValue,
    Decay,
    FormulaTerm,
    FusedScore,
    ScoreFormula,
)
from tests.parity.conftest import ENGINES
from tests.parity.corpus import COLUMNS
from tests.parity.engines import missing_column_message
from tests.parity.every_engine import engine as engine

QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
QUERY_TEXT = "error upgrade crash"
DEPTH = 10
LIMIT = 6
YEAR = dict(zip(COLUMNS["id"], COLUMNS["year"]))


def _exp(value: float | None, origin: float, scale: float, offset: float, decay: float) -> float:
    """Elasticsearch ``exp``: ``exp(λ · max(0, |v - origin| - offset))``, ``λ = ln(decay) /
    scale``; 0 for a NULL."""
    if value is None:
        return 0.0
    distance = max(0.0, abs(value - origin) - offset)
    return math.exp(math.log(decay) / scale * distance)


def _gauss(value: float | None, origin: float, scale: float, offset: float, decay: float) -> float:
    """Elasticsearch ``gauss``: ``exp(-d² / (2 v))``, ``v = -scale² / (2 ln(decay))``."""
    if value is None:
        return 0.0
    distance = max(0.0, abs(value - origin) - offset)
    variance = -(scale**2) / (2 * math.log(decay))
    return math.exp(-(distance**2) / (2 * variance))


def _linear(value: float | None, origin: float, scale: float, offset: float, decay: float) -> float:
    """Elasticsearch ``linear``: ``max(0, (s - d) / s)``, ``s = scale / (1 - decay)``."""
    if value is None:
        return 0.0
    distance = max(0.0, abs(value - origin) - offset)
    width = scale / (1 - decay)
    return max(0.0, (width - distance) / width)


def _weighted(fused: float, year: Any) -> float:
    return 0.5 * fused + 0.0001 * (2000 if year is None else year)


def _decayed(fused: float, year: Any) -> float:
    return (
        fused * _gauss(year, 2020, 3, 1, 0.5)
        + 0.01 * _exp(year, 2018, 2, 0, 0.3)
        + 0.02 * _linear(year, 2022, 4, 0.5, 0.25)
    )


FORMULAS: dict[str, tuple[ScoreFormula, Callable[[float, Any], float]]] = {
    "weighted": (
        ScoreFormula(
            terms=[
                FormulaTerm(weight=0.5, factors=[FusedScore()]),
                FormulaTerm(weight=0.0001, factors=[ColumnValue(column="year", missing=2000)]),
            ]
        ),
        _weighted,
    ),
    "decays": (
        ScoreFormula(
            terms=[
                FormulaTerm(
                    factors=[
                        FusedScore(),
                        Decay(function="gauss", column="year", origin=2020, scale=3, offset=1),
                    ]
                ),
                FormulaTerm(
                    weight=0.01,
                    factors=[Decay(function="exp", column="year", origin=2018, scale=2, decay=0.3)],
                ),
                FormulaTerm(
                    weight=0.02,
                    factors=[
                        Decay(
                            function="linear",
                            column="year",
                            origin=2022,
                            scale=4,
                            offset=0.5,
                            decay=0.25,
                        )
                    ],
                ),
            ]
        ),
        _decayed,
    ),
}


def _branches() -> list[Any]:
    return [
        Bm25Search(table="docs", column="body", query_text=QUERY_TEXT),
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=QUERY_VECTOR, metric="cosine"
        ),
    ]


def _own_list(engine: Any, branch: Any) -> tuple[list[Any], list[int]]:
    result = engine.search(SearchPlan(source=branch, limit=DEPTH))
    pairs = [
        (hit.key, hit.branches[next(iter(hit.branches))].raw_score)
        for hit in result
        if hit.branches[next(iter(hit.branches))].raw_score is not None
    ]
    ranks = competition_ranks([raw for _, raw in pairs], higher_is_better=branch.higher_is_better)
    return [key for key, _ in pairs], ranks


@pytest.mark.parametrize("name", sorted(FORMULAS))
@pytest.mark.parametrize("offset", [0, 3])
def test_a_formula_page_is_the_python_reference(engine: Any, name: str, offset: int) -> None:
    formula, reference = FORMULAS[name]
    fusion = ReciprocalRankFusion(branches=_branches(), depth=DEPTH, weights=[1.0, 0.7])
    lists = [_own_list(engine, branch) for branch in fusion.branches]
    fused = reciprocal_rank_fusion(
        [keys for keys, _ in lists],
        ranks=[ranks for _, ranks in lists],
        weights=[1.0, 0.7],
    )
    final = sorted(
        ((reference(hit.score, YEAR[hit.key]), hit.key, hit.score) for hit in fused),
        key=lambda item: (-item[0], item[1]),
    )
    threshold = final[len(final) // 2][0]  # min_score keeps the upper half
    kept = [item for item in final if item[0] >= threshold]
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=_branches(), depth=DEPTH, weights=[1.0, 0.7], min_score=threshold
        ),
        formula=formula,
        limit=LIMIT,
        offset=offset,
        explain_scores=True,
    )
    result = engine.search(plan)
    expected = kept[offset : offset + LIMIT]
    assert result.keys == [key for _, key, _ in expected]
    for hit, (score, _, fused_score) in zip(result, expected):
        assert hit.score == pytest.approx(score, rel=1e-9, abs=1e-12)
        assert hit.fused_score == pytest.approx(fused_score, rel=1e-9, abs=1e-12)
        assert len(hit.terms) == len(formula.terms)
        assert math.isclose(sum(hit.terms), hit.score, rel_tol=0.0, abs_tol=1e-9)
        contributions = [branch.contribution for branch in hit.branches.values()]
        assert math.isclose(sum(contributions), hit.fused_score, rel_tol=0.0, abs_tol=1e-9)  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("column", ["body", "lang", "active"])
def test_a_formula_over_a_column_that_is_not_numeric_is_refused(engine: Any, column: str) -> None:
    """A formula column of text or booleans is refused before anything runs, naming it:
    never a score of 0.0 for every hit (SQLite reads text as 0.0) or the engine's cast
    error. (Every engine that knows its columns' types: the Hotdata engine learns them
    from its planner only.)"""
    for factor in (
        ColumnValue(column=column),
        Decay(function="exp", column=column, origin=0, scale=1),
    ):
        formula = ScoreFormula(terms=[FormulaTerm(factors=[FusedScore(), factor])])
        plan = SearchPlan(source=ReciprocalRankFusion(branches=_branches()), formula=formula)
        with pytest.raises(PlanError, match=f"formula column '{column}' of table .* not numbers"):
            engine.search(plan)


def test_an_unknown_formula_column_is_named_with_the_table_columns(engine: Any) -> None:
    formula = ScoreFormula(terms=[FormulaTerm(factors=[ColumnValue(column="nope")])])
    plan = SearchPlan(source=ReciprocalRankFusion(branches=_branches()), formula=formula)
    with pytest.raises(EngineError, match=missing_column_message(engine, "nope")):
        engine.search(plan)
