"""``queries=``: a search of several query texts is one fused statement on every engine, and
its page is the pure-Python reciprocal rank fusion (``fusion.reciprocal_rank_fusion``) of the
queries' own ranked lists — each branch of the plan run alone on the same engine — weighted
by each query's weight (for a hybrid search, times the fusion's own text/vector pair)."""

from __future__ import annotations

from typing import Any

import pytest

from hotdata_retrieval import SearchPlan
from hotdata_retrieval.fusion import competition_ranks, reciprocal_rank_fusion
from hotdata_retrieval.indexes import TableIndexes, VectorIndex
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.routing import plan_search, search_request
from tests.parity.every_engine import engine as engine

QUERY = "error upgrade"
QUERIES = ["crash timeout", ("disk memory", 2.0)]
VECTORS = {
    "error upgrade": [0.3, -1.2, 0.8, 0.05, -0.4, 1.1],
    "crash timeout": [-0.7, 0.2, 0.1, 1.3, 0.5, -0.2],
    "disk memory": [0.9, 0.9, -0.6, 0.0, 0.4, 0.3],
}
LIMIT = 12


def _embed(text: str) -> list[float]:
    return VECTORS[text]


def _own_list(engine: Any, branch: Any, depth: int) -> tuple[list[Any], list[int]]:
    """The branch run alone: its keys best first and their competition ranks."""
    result = engine.search(SearchPlan(source=branch, limit=depth))
    pairs = [
        (hit.key, hit.branches[next(iter(hit.branches))].raw_score)
        for hit in result
        if hit.branches[next(iter(hit.branches))].raw_score is not None
    ]
    keys = [key for key, _ in pairs]
    ranks = competition_ranks([raw for _, raw in pairs], higher_is_better=branch.higher_is_better)
    return keys, ranks


INDEXES = TableIndexes(
    table=TableName.parse("docs"),
    bm25_columns=("body",),
    vectors=(VectorIndex(column="embedding", metric="cosine"),),
    key_column="id",
)
"""The corpus's indexes as a store that lists its vector column reports them (the local
engine and Hotdata list only the vector indexes they built)."""


def _check(engine: Any, mode: str, **options: Any) -> None:
    if mode == "text":  # the engine's own door
        plan = engine.plan_search("docs", QUERY, mode=mode, queries=QUERIES, limit=LIMIT, **options)
    else:
        request = search_request("docs", QUERY, mode=mode, queries=QUERIES, limit=LIMIT, **options)
        plan = plan_search(INDEXES, request, embed_query=_embed)
    fusion = plan.fusion
    assert fusion is not None
    texts = [QUERY, *(text if isinstance(text, str) else text[0] for text in QUERIES)]
    searched = [branch.query_text for branch in plan.branches if hasattr(branch, "query_text")]
    assert searched == texts  # one text branch per query, in order
    assert len(plan.branches) == len(texts) * (2 if mode == "hybrid" else 1)
    result = engine.search(plan)
    lists = [_own_list(engine, branch, plan.depth) for branch in plan.branches]
    expected = reciprocal_rank_fusion(
        [keys for keys, _ in lists],
        ranks=[ranks for _, ranks in lists],
        weights=[float(weight) for weight in fusion.weights],
        rank_constant=fusion.rank_constant,
        limit=LIMIT,
    )
    assert result.keys == [hit.key for hit in expected]
    assert [hit.score for hit in result] == pytest.approx([hit.score for hit in expected])
    statement = result.sql
    if not statement.lstrip().startswith("{"):  # a SQL engine: one statement reads them all
        assert ";" not in statement.rstrip().rstrip(";")
        for name in plan.branch_names:
            assert f"{name}_hits" in statement.replace('"', "")


def test_three_text_queries_are_the_rrf_of_their_lists(engine: Any) -> None:
    _check(engine, "text")


def test_three_hybrid_queries_are_the_rrf_of_their_six_lists(engine: Any) -> None:
    _check(engine, "hybrid", weights=[1.0, 0.5])
