"""``explain_scores``: what a plan refuses, its JSON form, the bounds each dialect's statement
returns, and the invariant that a fused hit's explained contributions add up to the reference
fusion's score. Every engine is compared in ``tests/parity/test_explained_scores.py``."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.compile.compiler import native_hybrid_misfit
from hotdata_retrieval.fusion import (
    branch_bounds,
    competition_ranks,
    explain_terms,
    reference_fusion,
)
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document
from hotdata_retrieval.plan.search import (
    DistributionBasedScoreFusion,
    MinMaxFusion,
    bound_columns,
)

TEXT = Bm25Search(table="docs", column="body", query_text="disk full")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.6, -0.8])
DIALECTS = ("hotdata", "sqlite", "duckdb", "postgres")


def test_explain_scores_needs_the_branch_scores() -> None:
    plan = SearchPlan(source=MinMaxFusion(branches=[TEXT, NEAREST]), explain_scores=True)
    assert plan.include_branch_scores
    with pytest.raises(PlanError, match="explain_scores reads each branch's rank") as raised:
        SearchPlan(
            source=MinMaxFusion(branches=[TEXT, NEAREST]),
            explain_scores=True,
            include_branch_scores=False,
        )
    assert raised.value.field == "include_branch_scores"
    with pytest.raises(PlanError, match="explain_scores"):
        SearchPlan(source=TEXT, explain_scores="yes")  # type: ignore[arg-type]


def test_a_bound_column_collides_with_a_projected_column() -> None:
    with pytest.raises(PlanError, match="'text_similarity_low' collides"):
        SearchPlan(
            source=MinMaxFusion(branches=[TEXT, NEAREST]),
            columns=["id", "text_similarity_low"],
            explain_scores=True,
        )


def test_the_json_form_carries_the_flag() -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), explain_scores=True)
    document = plan_to_document(plan)
    assert document["explain_scores"] is True
    assert document["include_branch_scores"] is True
    del document["include_branch_scores"]
    assert plan_from_document(document) == plan


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("fusion", [MinMaxFusion, DistributionBasedScoreFusion])
def test_a_normalized_statement_returns_each_branch_bounds(dialect: str, fusion: type) -> None:
    plan = SearchPlan(source=fusion(branches=[TEXT, NEAREST]), explain_scores=True)
    plain = to_sql(SearchPlan(source=fusion(branches=[TEXT, NEAREST]), include_branch_scores=True))
    sql = to_sql(plan, dialect, pretty=False).replace('"', "")
    for name in plan.branch_names:
        for column in bound_columns(name, plan.source):  # type: ignore[arg-type]
            assert f"AS {column}" in sql
            assert f"fused.{column}" in sql
    assert "similarity_low AS" not in plain


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_rrf_statement_needs_no_more_than_the_ranks(dialect: str) -> None:
    fusion = ReciprocalRankFusion(branches=[TEXT, NEAREST])
    explained = to_sql(SearchPlan(source=fusion, explain_scores=True), dialect)
    assert explained == to_sql(SearchPlan(source=fusion, include_branch_scores=True), dialect)


def test_hybrid_search_returns_no_bounds() -> None:
    normalized = SearchPlan(source=MinMaxFusion(branches=[TEXT, NEAREST]), explain_scores=True)
    assert native_hybrid_misfit(normalized) == (
        "hybrid_search returns no branch's normalization bounds (explain_scores)"
    )
    assert "hybrid_search(" not in to_sql(normalized, "hotdata-native")
    ranked = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), explain_scores=True)
    assert native_hybrid_misfit(ranked) is None


_SCORES = st.lists(
    st.floats(min_value=-50, max_value=50, allow_nan=False, width=32), min_size=0, max_size=8
)


@settings(max_examples=200, deadline=None)
@given(
    method=st.sampled_from([ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion]),
    text=_SCORES,
    nearest=_SCORES,
    weights=st.tuples(st.floats(min_value=0.1, max_value=10), st.floats(min_value=0, max_value=10)),
)
def test_contributions_add_up_to_the_reference_score(
    method: type, text: list[float], nearest: list[float], weights: tuple[float, float]
) -> None:
    """Over any two ranked lists (keys overlapping), each fused hit's terms, from
    :func:`branch_bounds` and the hit's ranks and raw scores, add up to the reference
    fusion's score, and a branch that missed the hit adds exactly 0."""
    fusion = method(branches=[TEXT, NEAREST], weights=list(weights))
    text_scores = sorted(text, reverse=True)
    nearest_scores = sorted(abs(value) for value in nearest)
    lists = [list(range(len(text_scores))), [key * 2 for key in range(len(nearest_scores))]]
    scores = [text_scores, nearest_scores]
    ranks = [
        competition_ranks(text_scores),
        competition_ranks(nearest_scores, higher_is_better=False),
    ]
    hits = reference_fusion(fusion, lists, ranks=ranks, scores=scores)
    bounds = branch_bounds(fusion, scores)
    for hit in hits:
        raw = [
            None if rank is None else scores[index][lists[index].index(hit.key)]
            for index, rank in enumerate(hit.ranks)
        ]
        terms = explain_terms(fusion, hit.ranks, raw, bounds)
        total = terms[0].contribution + terms[1].contribution
        assert math.isclose(total, hit.score, rel_tol=0.0, abs_tol=1e-12)
        for rank, term in zip(hit.ranks, terms):
            if rank is None:
                assert term.normalized is None and term.contribution == 0.0
