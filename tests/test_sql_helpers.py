"""The public SQL helpers write what the compiler writes: each is checked against the text of
a compiled plan, not against a spelled-out string of its own."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from hotdata_retrieval import (
    Comparison,
    NearestNeighborSearch,
    PlanError,
    SearchPlan,
    TableNameError,
    UnsupportedOnDialectError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval import sql as helpers

DIALECTS = ["hotdata", "sqlite", "duckdb", "postgres"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "value",
    ["it's", "back\\slash", "日本", 42, -2.5, 1e-7, True, datetime.date(2024, 3, 1),
     datetime.datetime(2024, 3, 1, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))],
)  # fmt: skip
def test_a_literal_is_written_as_the_compiler_writes_a_filter_value(
    dialect: str, value: Any
) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
        filter=Comparison(column="x", operator="=", value=value),
    )
    assert f"= {helpers.quote_literal(value, dialect=dialect)}" in to_sql(
        plan, dialect, pretty=False
    )


@pytest.mark.parametrize("dialect", ["hotdata", "duckdb", "postgres"])
def test_a_vector_and_a_distance_function_are_the_compiled_ones(dialect: str) -> None:
    vector = [0.1, -2.0, 1e-05]
    sql = to_sql(
        SearchPlan(
            source=NearestNeighborSearch(
                table="docs", column="embedding", query_vector=vector, metric="l2"
            )
        ),
        dialect,
        pretty=False,
    )
    assert helpers.vector_literal(vector, dialect=dialect) in sql
    if dialect == "hotdata":  # the stores write expressions, not one function per metric
        assert f"{helpers.distance_function('euclidean', dialect=dialect)}(" in sql


def test_names_are_written_as_plans_write_them() -> None:
    sql = to_sql(
        SearchPlan(
            source=VectorSearch(table="Sales.Order", column="All", query_text="q"),
            columns=["id", "Select"],
        ),
        pretty=False,
    )
    assert f"{helpers.quote_column('Select')}" in sql
    assert helpers.quote_column("id") == "id"
    assert helpers.quote_column("x; DROP TABLE y") == '"x; drop table y"'
    assert helpers.normalize_identifier("Select") == "select"
    table = helpers.quote_table("Sales.Order")
    assert table == '"default".sales."order"'
    assert "'default.sales.order'" in sql  # the table function takes the name as text


@pytest.mark.parametrize(
    ("k", "fetch_k", "depth"), [(5, None, 20), (10, None, 40), (5, 3, 5), (1, None, 20), (3, 9, 9)]
)
def test_fetch_depth_is_hotdata_langchains_rule(k: int, fetch_k: int | None, depth: int) -> None:
    assert helpers.fetch_depth(k, fetch_k) == depth


def test_the_constants_are_the_plans() -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0])
    )
    assert plan.result_columns == (helpers.DISTANCE_COLUMN,)
    assert helpers.RRF_RANK_CONSTANT == 60
    assert helpers.SCORE_COLUMN == "score"


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: helpers.quote_literal("a\x00b"), PlanError, "NUL"),
        (lambda: helpers.quote_literal(float("nan")), PlanError, "finite"),
        (lambda: helpers.quote_literal([1]), PlanError, "literal"),
        (lambda: helpers.quote_column('a"b'), PlanError, "double quote"),
        (lambda: helpers.quote_table("a.b.c.d"), TableNameError, "a.b.c.d"),
        (lambda: helpers.vector_literal([]), PlanError, "empty"),
        (lambda: helpers.vector_literal([1.0, 2.0], dimensions=3), PlanError, "2 dimensions"),
        (lambda: helpers.distance_function("jaccard"), PlanError, "jaccard"),
        (
            lambda: helpers.distance_function("cosine", dialect="postgres"),
            UnsupportedOnDialectError,
            "postgres",
        ),
        (lambda: helpers.fetch_depth(0), PlanError, "k"),
        (lambda: helpers.fetch_depth(5, fetch_k=0), PlanError, "fetch_k"),
        (lambda: helpers.quote_query_text("  "), PlanError, "empty"),
    ],
)
def test_bad_input_is_a_typed_error_naming_it(call: Any, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", ["docs", "support.Tickets", "default.public.order"])
def test_a_table_is_written_as_the_compiled_plan_writes_it(dialect: str, name: str) -> None:
    plan = SearchPlan(source=NearestNeighborSearch(table=name, column="e", query_vector=[1.0]))
    assert f"FROM {helpers.quote_table(name, dialect=dialect)}" in to_sql(
        plan, dialect, pretty=False
    )


def test_a_store_refuses_another_catalog() -> None:
    with pytest.raises(UnsupportedOnDialectError, match="the catalog 'lake'"):
        helpers.quote_table("lake.public.docs", dialect="duckdb")
