"""Invariants of compilation, checked over generated plans."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    compile_plan,
    to_sql,
)
from hotdata_retrieval.compile import render
from hotdata_retrieval.plan.filters import And, Not, Or
from tests.strategies import plans, vectors, word_texts


def _caller_strings(plan: SearchPlan) -> set[str]:
    strings = {str(table) for table in plan.tables}
    for branch in plan.branches:
        if isinstance(branch, (Bm25Search, VectorSearch)):
            strings.update({branch.query_text, branch.column})

    def walk(predicate: Any) -> None:
        if isinstance(predicate, (And, Or)):
            for operand in predicate.operands:
                walk(operand)
        elif isinstance(predicate, Not):
            walk(predicate.operand)
        else:  # a leaf: every text it holds (a value, a list of values, a prefix...)
            for field in attrs.fields(type(predicate)):
                value = getattr(predicate, field.name)
                items = value if isinstance(value, tuple) else (value,)
                strings.update(item for item in items if isinstance(item, str))

    if plan.filter is not None:
        walk(plan.filter)
    return strings


@given(plans())
def test_sql_parses_as_exactly_one_select(plan: SearchPlan) -> None:
    sql = to_sql(plan)
    for dialect in ("hotdata", "postgres"):
        statements = sqlglot.parse(sql, read=dialect)
        assert len(statements) == 1
        assert isinstance(statements[0], exp.Select)


@given(plans())
def test_every_string_literal_is_the_callers_text_exactly(plan: SearchPlan) -> None:
    tree = sqlglot.parse_one(to_sql(plan, pretty=False), read="hotdata")
    found = {node.this for node in tree.find_all(exp.Literal) if node.is_string}
    expected = _caller_strings(plan)
    query_texts_used = {
        branch.query_text
        for branch in plan.branches
        if isinstance(branch, (Bm25Search, VectorSearch))
    }
    assert query_texts_used <= found
    assert found <= expected


@given(word_texts)
def test_query_text_round_trips_through_sql(text: str) -> None:
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text=text))
    call = sqlglot.parse_one(to_sql(plan), read="hotdata").find(exp.Anonymous)
    assert call is not None and call.name == "bm25_search"
    assert [argument.this for argument in call.expressions[:3]] == [
        "default.public.docs",
        "body",
        text,
    ]
    assert call.expressions[3].this == "10"


@given(vectors)
def test_query_vector_round_trips_exactly(vector: list[float]) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
    )
    array = sqlglot.parse_one(to_sql(plan), read="hotdata").find(exp.Array)
    assert array is not None
    assert [float(element.sql()) for element in array.expressions] == [float(x) for x in vector]


@given(plans())
def test_compilation_is_deterministic(plan: SearchPlan) -> None:
    first = to_sql(plan)
    rebuilt = SearchPlan(
        source=plan.source,
        columns=plan.columns,
        limit=plan.limit,
        offset=plan.offset,
        filter=plan.filter,
        key_column=plan.key_column,
        include_branch_scores=plan.include_branch_scores,
        page_scores=plan.page_scores,
    )
    render._templates.clear()
    assert to_sql(rebuilt) == first
    assert to_sql(plan) == first


@given(plans())
def test_template_fill_equals_a_direct_render(plan: SearchPlan) -> None:
    direct = compile_plan(plan).sql(dialect="hotdata")
    via_template = to_sql(plan, pretty=False)
    assert sqlglot.parse_one(via_template, read="hotdata") == sqlglot.parse_one(
        direct, read="hotdata"
    )


@given(plans(), plans())
def test_plans_sharing_a_template_keep_their_own_values(
    first: SearchPlan, second: SearchPlan
) -> None:
    render._templates.clear()
    sql_second_cold = to_sql(second)
    render._templates.clear()
    to_sql(first)
    assert to_sql(second) == sql_second_cold


@given(plans())
def test_every_table_is_fully_qualified(plan: SearchPlan) -> None:
    tree = sqlglot.parse_one(to_sql(plan), read="hotdata")
    cte_names = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Anonymous) or table.name in cte_names:
            continue
        assert (table.catalog, table.db, table.name) in {name.parts for name in plan.tables}


@given(plans())
def test_nearest_branches_keep_the_fast_path_shape(plan: SearchPlan) -> None:
    tree = sqlglot.parse_one(to_sql(plan), read="hotdata")
    for select in tree.find_all(exp.Select):
        distance_calls = [
            call
            for call in select.expressions
            if isinstance(call, exp.Alias)
            and isinstance(call.this, exp.Anonymous)
            and call.this.name in {"cosine_distance", "l2_distance", "negative_dot_product"}
        ]
        if not distance_calls:
            continue
        source = select.args["from_"].this
        assert isinstance(source, exp.Table) and source.alias == ""
        assert select.args.get("limit") is not None
        (ordered,) = select.args["order"].expressions
        assert ordered.args.get("desc") is False
        assert ordered.this.name == "_distance"
        projected = {column.name for column in select.expressions if isinstance(column, exp.Column)}
        assert "embedding" not in projected


# -- invalid inputs raise the library's typed errors -----------------------------------------


def _with_one(bad: float) -> st.SearchStrategy[list[float]]:
    """Finite numbers with ``bad`` inserted at a drawn position."""
    return st.tuples(
        st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=5),
        st.integers(min_value=0, max_value=5),
    ).map(lambda pair: [*pair[0][: pair[1]], bad, *pair[0][pair[1] :]])


bad_vectors = st.one_of(
    st.just([]),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 3.5e38, -1e300]).flatmap(_with_one),
)


@given(bad_vectors, st.sampled_from(["cosine", "l2", "dot"]))
def test_bad_vectors_raise_plan_error(vector: list[float], metric: str) -> None:
    with pytest.raises(PlanError):
        NearestNeighborSearch(table="docs", column="embedding", query_vector=vector, metric=metric)


@given(st.integers(min_value=1, max_value=16))
def test_a_zero_query_vector_is_refused_for_cosine_only(dimensions: int) -> None:
    zero = [0.0] * dimensions
    with pytest.raises(PlanError, match="all zeros"):
        NearestNeighborSearch(table="docs", column="embedding", query_vector=zero)
    # Zero once converted to Float32, where the distance functions compute: 2**-150 rounds
    # to 0 (half to even), anything larger to the smallest subnormal.
    tiny = [1e-46, -(2.0**-150), *[0.0] * dimensions][:dimensions]
    with pytest.raises(PlanError, match="all zeros once converted to Float32"):
        NearestNeighborSearch(table="docs", column="embedding", query_vector=tiny)
    # The smallest subnormal is no zero, but its square underflows Float32, where the
    # stores' cosine distance computes: refused; the smallest normal squared norm is taken.
    subnormal = [2.0**-149, *[0.0] * (dimensions - 1)]
    with pytest.raises(PlanError, match="squared norm"):
        NearestNeighborSearch(table="docs", column="embedding", query_vector=subnormal)
    smallest = [2.0**-63, *[0.0] * (dimensions - 1)]
    assert NearestNeighborSearch(table="docs", column="embedding", query_vector=smallest)
    for metric in ("l2", "dot"):
        branch = NearestNeighborSearch(
            table="docs", column="embedding", query_vector=zero, metric=metric
        )
        assert branch.query_vector == tuple(zero)


@given(st.integers(max_value=0))
def test_non_positive_limits_raise_plan_error(limit: int) -> None:
    with pytest.raises(PlanError):
        SearchPlan(source=Bm25Search(table="docs", column="body", query_text="q"), limit=limit)


@given(
    st.one_of(
        st.sampled_from([-1.0, -1e-300, float("nan"), float("inf")]).flatmap(
            lambda bad: st.permutations([bad, 1.0])
        ),
        st.lists(st.floats(min_value=0, max_value=10), min_size=1, max_size=1),
        st.lists(st.floats(min_value=0, max_value=10), min_size=3, max_size=4),
    )
)
def test_bad_weights_raise_plan_error(weights: list[float]) -> None:
    with pytest.raises(PlanError):
        ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="q"),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0]),
            ],
            weights=weights,
        )


@given(st.one_of(st.integers(max_value=0), st.floats(max_value=0), st.just(float("nan"))))
def test_bad_rank_constants_raise_plan_error(rank_constant: float) -> None:
    with pytest.raises(PlanError):
        ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="q"),
                Bm25Search(table="docs", column="title", query_text="q"),
            ],
            rank_constant=rank_constant,
        )


@given(st.text(min_size=0, max_size=10), st.text(min_size=0, max_size=10))
def test_nul_bytes_raise_plan_error(before: str, after: str) -> None:
    with pytest.raises(PlanError):
        Bm25Search(table="docs", column="body", query_text=f"{before}\x00{after}")
    with pytest.raises(PlanError):
        Comparison(column="lang", operator="=", value=f"{before}\x00{after}")


@given(
    st.one_of(
        st.lists(st.from_regex(r"[a-z]{1,5}", fullmatch=True), min_size=4, max_size=6).map(
            ".".join
        ),
        st.from_regex(r"[a-z]{0,3}\.\.[a-z]{0,3}", fullmatch=True),
        st.from_regex(r'[a-z]{0,3}"[a-z]{0,3}', fullmatch=True),
    )
)
def test_bad_table_names_raise_plan_error(name: str) -> None:
    with pytest.raises(PlanError):
        Bm25Search(table=name, column="body", query_text="q")
