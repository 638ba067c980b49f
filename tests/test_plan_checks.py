"""The rules a :class:`SearchPlan` is checked against: each is a named check, and each alone
refuses a plan that breaks it, with its own message, while the other checks accept that plan.

A check added to ``hotdata_retrieval.plan.search`` without an example here fails
``test_every_check_has_an_example``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hotdata_retrieval import (
    Between,
    Bm25Search,
    Comparison,
    IsNull,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.plan import search
from hotdata_retrieval.plan._cursor import Cursor
from hotdata_retrieval.plan.formula import ColumnValue, FormulaTerm, FusedScore, ScoreFormula
from hotdata_retrieval.plan.search import PlanCheck, plan_checks
from hotdata_retrieval.plan.steps import Diversity

VECTOR = [0.6, -0.8, 0.1]
FORMULA = ScoreFormula(terms=[FormulaTerm(factors=[FusedScore()])])
TEXT = Bm25Search(table="docs", column="body", query_text="disk full")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR)


def _fused(*branches: Any, **options: Any) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(branches=list(branches or (TEXT, NEAREST))), **options
    )


def _nearest(**options: Any) -> NearestNeighborSearch:
    return NearestNeighborSearch(
        **{"table": "docs", "column": "embedding", "query_vector": VECTOR, **options}
    )


# check name -> (a plan breaking that rule alone, the field named, a part of the message)
EXAMPLES: dict[str, tuple[Callable[[], SearchPlan], str, str]] = {
    "single_branch_rows_from": (
        lambda: SearchPlan(source=TEXT, rows_from="other"),
        "rows_from",
        "a single branch reads its rows from its own table ('default.public.docs')",
    ),
    "single_branch_filter_through_key": (
        lambda: SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text="q", filter_through_key=True)
        ),
        "filter_through_key",
        "a single branch applies the filter to its own table",
    ),
    "vectors_within_rows": (
        lambda: _fused(TEXT, _nearest(table="cues"), rows_from="docs", include_vectors=True),
        "include_vectors",
        "branch 'nearest' searches 'default.public.cues', outside it",
    ),
    "filter_through_side_table": (
        lambda: _fused(TEXT, _nearest(filter_through_key=True)),
        "filter_through_key",
        "filter_through_key is for a side table the filter's columns are not in",
    ),
    "page_scores_need_fusion": (
        lambda: SearchPlan(source=_nearest(result_name="distance"), page_scores=["nearest"]),
        "page_scores",
        "a single branch returns every hit itself, with its raw score",
    ),
    "page_scores_name_branches": (
        lambda: _fused(include_branch_scores=True, page_scores=["near"]),
        "page_scores",
        "'near', which is no branch of the plan; its branches: 'text', 'nearest'",
    ),
    "page_scores_nearest_only": (
        lambda: _fused(include_branch_scores=True, page_scores=["text"]),
        "page_scores",
        "page_scores names the text branch 'text'",
    ),
    "page_scores_within_rows": (
        lambda: _fused(
            TEXT,
            _nearest(table="cues", result_name="distance"),
            rows_from="docs",
            page_scores=["nearest"],
        ),
        "page_scores",
        "the branch searches 'default.public.cues', outside it",
    ),
    "page_scores_returned": (
        lambda: _fused(page_scores=["nearest"]),
        "page_scores",
        "give the branch a result_name, or set include_branch_scores",
    ),
    "explained_scores_read_branch_scores": (
        lambda: _fused(explain_scores=True, include_branch_scores=False),
        "include_branch_scores",
        "explain_scores reads each branch's rank and raw score",
    ),
    "formula_needs_fusion": (
        lambda: SearchPlan(source=TEXT, formula=FORMULA),
        "formula",
        "formula rescores a fusion's rows",
    ),
    "formula_columns_not_vectors": (
        lambda: _fused(
            formula=ScoreFormula(terms=[FormulaTerm(factors=[ColumnValue(column="embedding")])])
        ),
        "formula",
        "formula column 'embedding' is a searched vector column",
    ),
    "score_name_needs_fusion": (
        lambda: SearchPlan(source=TEXT, score_name="relevance"),
        "score_name",
        "score_name names a fusion's score",
    ),
    "result_columns_unique": (
        lambda: _fused(
            Bm25Search(table="docs", column="body", query_text="q", result_name="raw"),
            _nearest(result_name="raw"),
        ),
        "result_name",
        "result column 'raw' is named twice",
    ),
    "fusion_needs_key": (
        lambda: _fused(key_column=None),
        "key_column",
        "a fusion joins its branches on the table's unique key",
    ),
    "page_within_depth": (
        lambda: _fused(limit=100, offset=101),
        "depth",
        "limit + offset = 201 reaches past the default depth 200",
    ),
    "depth_fits_64_bits": (
        lambda: SearchPlan(source=TEXT, limit=2**62, offset=2**62),
        "limit",
        "candidates per branch, which does not fit in 64 bits",
    ),
    "key_column_not_computed": (
        lambda: SearchPlan(source=TEXT, key_column="score", columns=["body"]),
        "key_column",
        "key column 'score' collides with a column the search computes",
    ),
    "projection_not_result": (
        lambda: SearchPlan(source=TEXT, columns=["id", "score"]),
        "columns",
        "column 'score' collides with the result column of the same name",
    ),
    "projection_not_vectors": (
        lambda: SearchPlan(source=NEAREST, columns=["id", "embedding"]),
        "columns",
        "column 'embedding' is the searched vector column and is never projected",
    ),
    "filter_not_on_vectors": (
        lambda: SearchPlan(source=NEAREST, filter=IsNull(column="embedding")),
        "filter",
        "filter column 'embedding' is a searched vector column",
    ),
    "tie_breakers_not_vectors": (
        lambda: SearchPlan(source=NEAREST, tie_breakers=["embedding"]),
        "tie_breakers",
        "tie-break column 'embedding' is a searched vector column",
    ),
    "tie_breakers_not_key": (
        lambda: SearchPlan(source=TEXT, tie_breakers=["id"]),
        "tie_breakers",
        "tie-break column 'id' is the key column",
    ),
    "tie_breakers_computed": (
        lambda: _fused(tie_breakers=["text_rank"]),
        "tie_breakers",
        "tie-break column 'text_rank' is a branch's debug column",
    ),
    "tie_breakers_not_ranking": (
        lambda: SearchPlan(source=TEXT, tie_breakers=["score"]),
        "tie_breakers",
        "tie-break column 'score' is the ranking itself",
    ),
    "groups": (
        lambda: SearchPlan(source=TEXT, group_size=2),
        "group_size",
        "group_size is the rows kept per group; pass group_by too",
    ),
    "facets": (
        lambda: SearchPlan(source=TEXT, facets=["score"]),
        "facets",
        "facets column 'score' is a column the search computes",
    ),
    "cursor": (
        lambda: SearchPlan(
            source=TEXT,
            after=Cursor(value=1.5, key=3, served=10, fingerprint="0" * 16).token(),
        ),
        "after",
        "the cursor was returned by another search",
    ),
    "steps": (
        lambda: SearchPlan(source=TEXT, steps=[Diversity(mmr_lambda=0.5)]),
        "diversity",
        "which only a nearest-neighbour branch carries",
    ),
}

CHECKS = {check.name: check for check in plan_checks()}


def test_every_check_has_an_example() -> None:
    assert len(CHECKS) == len(plan_checks()), "two checks share a name"
    assert list(CHECKS) == list(EXAMPLES)


def test_every_check_states_its_rule() -> None:
    for check in plan_checks():
        assert check.rule, check.name
        assert check.rule == " ".join((check.check.__doc__ or "").split())


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_check_alone_refuses_its_example(name: str, monkeypatch: Any) -> None:
    make, field, message = EXAMPLES[name]
    monkeypatch.setattr(search, "_PLAN_CHECKS", [CHECKS[name]])
    with pytest.raises(PlanError) as caught:
        make()
    assert message in str(caught.value)
    assert caught.value.field == field


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_other_checks_accept_each_example(name: str, monkeypatch: Any) -> None:
    make = EXAMPLES[name][0]
    others: list[PlanCheck] = [check for check in plan_checks() if check.name != name]
    monkeypatch.setattr(search, "_PLAN_CHECKS", others)
    assert isinstance(make(), SearchPlan)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_check_runs_on_a_plan(name: str) -> None:
    make, field, message = EXAMPLES[name]
    with pytest.raises(PlanError) as caught:
        make()
    assert message in str(caught.value)
    assert caught.value.field == field


def _counting(calls: list[str]) -> list[PlanCheck]:
    """Every check, each recording its name in ``calls`` when it runs."""

    def wrap(check: PlanCheck) -> PlanCheck:
        def run(plan: SearchPlan) -> None:
            calls.append(check.name)
            check.check(plan)

        return PlanCheck(name=check.name, rule=check.rule, check=run)

    return [wrap(check) for check in plan_checks()]


def test_a_plan_of_a_checked_shape_is_not_checked_again(monkeypatch: Any) -> None:
    calls: list[str] = []
    monkeypatch.setattr(search, "_PLAN_CHECKS", _counting(calls))
    SearchPlan(source=Bm25Search(table="docs", column="body", query_text="disk"), limit=5)
    assert calls == list(CHECKS)
    calls.clear()
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="full"), limit=5)
    assert calls == []  # the same shape, another query
    assert plan.branches[0].query_text == "full"
    SearchPlan(source=Bm25Search(table="docs", column="body", query_text="full"), limit=6)
    assert calls == list(CHECKS)  # another limit: another shape


def test_a_filter_of_a_checked_shape_with_other_values_is_not_checked_again(
    monkeypatch: Any,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(search, "_PLAN_CHECKS", _counting(calls))

    def plan(predicate: Any) -> SearchPlan:
        return SearchPlan(source=TEXT, filter=predicate)

    plan(Between(column="year", low=1, high=5))
    assert calls == list(CHECKS)
    calls.clear()
    plan(Between(column="year", low=7, high=9))
    assert calls == []  # other values of the same types: no check reads them
    for other in (
        Between(column="year", low=7, high=9.5),  # another type
        Between(column="month", low=7, high=9),  # another column
        Comparison(column="year", operator="<", value=7),
        ~Between(column="year", low=7, high=9),
    ):
        plan(other)
        assert calls == list(CHECKS)
        calls.clear()


def test_a_filter_on_a_searched_vector_is_refused_after_other_values_passed() -> None:
    SearchPlan(source=NEAREST, filter=Comparison(column="id", operator="=", value=1))
    for value in (1, 2):
        with pytest.raises(PlanError, match="is a searched vector column"):
            SearchPlan(
                source=NEAREST,
                filter=Comparison(column=NEAREST.column, operator="=", value=value),
            )


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_is_refused_after_valid_plans_of_nearby_shapes(name: str) -> None:
    # valid plans sharing the examples' tables, columns and branches, so that a shape key
    # missing a field (or a refused plan remembered) would let the example through
    for options in ({}, {"limit": 5}, {"columns": ["id", "body"]}, {"offset": 3}):
        SearchPlan(source=TEXT, **options)
        _fused(**options)
        SearchPlan(source=NEAREST, **options)
    make, field, message = EXAMPLES[name]
    for _ in range(2):
        with pytest.raises(PlanError) as caught:
            make()
        assert message in str(caught.value)
        assert caught.value.field == field


def test_a_field_left_out_of_the_shape_would_let_an_invalid_plan_through() -> None:
    SearchPlan(source=TEXT, columns=["id"])
    with pytest.raises(PlanError, match="collides with the result column"):
        SearchPlan(source=TEXT, columns=["score"])
    SearchPlan(source=NEAREST, key_column="id")
    with pytest.raises(PlanError, match="collides with a column the search computes"):
        SearchPlan(source=NEAREST, key_column="_distance")
    SearchPlan(source=Bm25Search(table="docs", column="body", query_text="q"))
    with pytest.raises(PlanError, match="filter_through_key"):
        SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text="q", filter_through_key=True)
        )


def test_the_checked_shapes_are_bounded() -> None:
    for limit in range(1, search.MAX_CHECKED_SHAPES + 20):
        SearchPlan(source=TEXT, limit=limit)
        assert len(search._CHECKED.shapes) <= search.MAX_CHECKED_SHAPES
