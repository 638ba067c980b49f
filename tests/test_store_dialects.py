"""The dialects of SQL stores: each plan's exact SQL (or the typed refusal) per dialect, and
three promises for a plan compiled for any target:

- no pgvector operator a re-parse could change (``<=>`` is parsed by sqlglot as MySQL's
  null-safe equality and written back as ``IS NOT DISTINCT FROM``): every statement
  round-trips through its dialect unchanged;
- no field name pasted into the text: names are identifiers and values are literals, so a
  hostile value stays one string and keyword-named columns stay columns;
- no filter after fusion: in a fused statement the filter sits inside every branch's hits
  CTE and nowhere else.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp
from syrupy.assertion import SnapshotAssertion

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    IsNull,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.compile import get_dialect

DIALECTS = ("sqlite", "sqlite-before-3.39", "duckdb", "postgres")
"""The store dialects (the Hotdata dialects are pinned by ``test_compile_snapshots``)."""

VECTOR = (0.12, -0.5, 0.33, 1e-05)
TEXT = Bm25Search(table="docs", column="body", query_text='error E1234 it\'s NEAR-"x"')
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR)
FILTER = (
    Comparison(column="lang", operator="=", value="it's")
    & (
        Comparison(column="year", operator=">=", value=2020)
        | InList(column="order", values=["a", "b"])
    )
    & IsNull(column="deleted_at")
    & ~InList(column="status", values=[])
)

from tests.plans import PLANS as TEST_PLANS  # noqa: E402

PLANS: dict[str, SearchPlan] = {
    "text": SearchPlan(source=TEXT, limit=5),
    "text_filtered_offset": SearchPlan(source=TEXT, limit=5, offset=5, filter=FILTER),
    "nearest_cosine": SearchPlan(source=NEAREST, limit=3),
    "nearest_l2_filtered": SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, metric="l2"
        ),
        limit=3,
        filter=FILTER,
    ),
    "nearest_dot": SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, metric="dot"
        )
    ),
    "semantic": SearchPlan(source=VectorSearch(table="docs", column="body", query_text="q")),
    "hybrid_filtered": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], weights=[2, 0.5], rank_constant=10),
        limit=5,
        filter=FILTER,
        include_branch_scores=True,
        columns=["id", "order", "group"],
    ),
    "five_branches": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                TEXT,
                Bm25Search(table="docs", column="title", query_text="E1234", name="title"),
                NEAREST,
                NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=VECTOR, metric="l2", name="l2"
                ),
                Bm25Search(table="docs", column="notes", query_text="x", name="notes"),
            ]
        ),
        limit=5,
    ),
    "schema_qualified": SearchPlan(
        source=Bm25Search(table="support.tickets", column="body", query_text="x")
    ),
    "other_catalog": SearchPlan(
        source=Bm25Search(table="f1.public.results", column="notes", query_text="x")
    ),
    "union_nearest_filtered": TEST_PLANS["union_nearest"],
    "fusion_over_three_tables": TEST_PLANS["fusion_over_three_tables"],
    "page_scores_over_three_tables": TEST_PLANS["page_scores_over_three_tables"],
    "text_grouped": TEST_PLANS["text_grouped"],
    "nearest_grouped": TEST_PLANS["nearest_grouped"],
    "hybrid_grouped": TEST_PLANS["hybrid_grouped"],
    "nearest_after": TEST_PLANS["nearest_after"],
    "hybrid_after": TEST_PLANS["hybrid_after"],
    "text_faceted": TEST_PLANS["text_faceted"],
    "nearest_faceted": TEST_PLANS["nearest_faceted"],
    "hybrid_faceted": TEST_PLANS["hybrid_faceted"],
    "page_scores_l2": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                TEXT,
                NearestNeighborSearch(
                    table="docs",
                    column="embedding",
                    query_vector=VECTOR,
                    metric="l2",
                    result_name="distance",
                ),
            ]
        ),
        limit=5,
        score_name=None,
        page_scores=["nearest"],
        tie_breakers=["distance"],
    ),
}


def compiled(plan: SearchPlan, dialect: str) -> str:
    """The SQL, or ``-- <the refusal>`` when the dialect refuses the plan."""
    try:
        return to_sql(plan, dialect)
    except UnsupportedFeatureError as error:
        return f"-- {error}"


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_store_sql_snapshot(dialect: str, name: str, sql_snapshot: SnapshotAssertion) -> None:
    assert compiled(PLANS[name], dialect) == sql_snapshot


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_statements_round_trip_through_their_dialect(dialect: str, name: str) -> None:
    sql = compiled(PLANS[name], dialect)
    if sql.startswith("-- "):
        return
    reader = get_dialect(dialect).sqlglot_dialect
    (tree,) = sqlglot.parse(sql, read=reader)
    assert tree is not None
    again = get_dialect(dialect).sqlglot_dialect().generate(tree.copy(), pretty=True)
    # the same tree after a round trip (sqlglot may only change the case of function names
    # it knows), and a fixed point from then on
    assert sqlglot.parse_one(again, read=reader) == tree
    assert (
        get_dialect(dialect)
        .sqlglot_dialect()
        .generate(sqlglot.parse_one(again, read=reader), pretty=True)
        == again
    )
    assert not tree.find(exp.NullSafeEQ)
    assert "IS NOT DISTINCT FROM" not in sql


HOSTILE = "x'); DROP TABLE docs; --"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_values_are_literals_and_names_are_identifiers(dialect: str) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=HOSTILE),
                NEAREST,
            ]
        ),
        filter=Comparison(column="select", operator="=", value=HOSTILE)
        & Comparison(column="order", operator=">", value=1),
        columns=["id", "from", "group"],
    )
    sql = to_sql(plan, dialect)
    (tree,) = sqlglot.parse(sql, read=get_dialect(dialect).sqlglot_dialect)
    assert tree is not None
    assert not tree.find(exp.Drop, exp.Command)
    strings = {literal.this for literal in tree.find_all(exp.Literal) if literal.is_string}
    assert HOSTILE in strings
    columns = {column.name for column in tree.find_all(exp.Column)}
    assert {"select", "order", "from", "group"} <= columns


@pytest.mark.parametrize("name", ["hybrid_filtered", "five_branches"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_filter_sits_in_every_branch_and_never_after_fusion(dialect: str, name: str) -> None:
    plan = SearchPlan(
        source=PLANS[name].source,
        limit=5,
        filter=Comparison(column="lang", operator="=", value="en"),
    )
    sql = to_sql(plan, dialect)
    (tree,) = sqlglot.parse(sql, read=get_dialect(dialect).sqlglot_dialect)
    assert isinstance(tree, exp.Select)
    ctes = {cte.alias: cte.this for cte in tree.ctes}
    for branch in plan.branch_names:
        filtered = {
            column.name
            for where in ctes[f"{branch}_hits"].find_all(exp.Where)
            for column in where.find_all(exp.Column)
        }
        assert "lang" in filtered
    for name_ in ("fused", *[f"{branch}_ranked" for branch in plan.branch_names]):
        filters = [
            column.name
            for where in ctes[name_].find_all(exp.Where)
            for column in where.find_all(exp.Column)
        ]
        assert "lang" not in filters
    assert tree.args.get("where") is None
