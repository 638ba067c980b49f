"""What a plan's newer options refuse, and what a compiled template may not carry from one
plan to another: each case a typed error naming the value, or SQL of the plan's own."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from jsonschema import Draft202012Validator

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TieBreaker,
    UnsupportedOnDialectError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.compile.turbopuffer import turbopuffer_request
from hotdata_retrieval.plan.document import PLAN_JSON_SCHEMA, plan_from_document

NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: TieBreaker(column="x", descending=1),
        lambda: NearestNeighborSearch(table="t", column="e", query_vector=[1.0], exact=1),
        lambda: Bm25Search(table="t", column="b", query_text="q", allow_empty="yes"),
        lambda: VectorSearch(table="t", column="b", query_text="q", scalar=0),
        lambda: SearchPlan(source=NEAREST, include_vectors=1),
        lambda: SearchPlan(source=NEAREST, include_branch_scores=None),
    ],
)
def test_a_flag_that_is_not_a_boolean_is_a_plan_error(make: Any) -> None:
    with pytest.raises(PlanError, match="must be true or false"):
        make()


def test_a_bare_column_direction_pair_is_refused_not_split() -> None:
    with pytest.raises(PlanError, match="tie-breaker 'desc' is a direction"):
        SearchPlan(source=NEAREST, tie_breakers=("created_at", "desc"))
    plan = SearchPlan(source=NEAREST, tie_breakers=[("created_at", "desc")])
    assert plan.tie_breakers == (TieBreaker(column="created_at", descending=True),)


def test_a_tie_breaker_may_name_a_result_name_that_looks_like_a_debug_column() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(
                    table="docs", column="body", query_text="q", result_name="nearest_distance"
                ),
                NEAREST,
            ]
        ),
        tie_breakers=["nearest_distance"],
    )
    assert "fused.text_score ASC" in to_sql(plan)


def test_a_null_ranking_is_the_default_in_the_schema_as_in_the_decoder() -> None:
    document = {
        "table": "docs",
        "branches": [
            {"kind": "text", "column": "body", "query_text": "q"},
            {"kind": "nearest", "column": "embedding", "query_vector": [1.0, 0.0]},
        ],
        "fusion": {"ranking": None},
    }
    assert list(Draft202012Validator(PLAN_JSON_SCHEMA).iter_errors(document)) == []
    assert plan_from_document(document).fusion.ranking.value == "competition"  # type: ignore[union-attr]


def test_turbopuffer_refuses_tie_breakers() -> None:
    with pytest.raises(UnsupportedOnDialectError, match="tie-breakers"):
        turbopuffer_request(SearchPlan(source=NEAREST, tie_breakers=["created_at"]))


def _native(semantic_query: str, text: str = "disk", **options: Any) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=text, **options),
                VectorSearch(table="docs", column="body", query_text=semantic_query),
            ]
        )
    )


def test_a_cached_native_template_never_serves_a_plan_the_call_cannot_answer() -> None:
    """Whether a fusion is one hybrid_search call depends on values (the semantic query equal
    to the text query, a text with words); a template of one answer never serves the other."""
    assert "hybrid_search(" in to_sql(_native("disk"), "hotdata-native")
    other = to_sql(_native("network"), "hotdata-native")
    assert "hybrid_search(" not in other and "'network'" in other
    assert "hybrid_search(" in to_sql(_native("disk"), "hotdata-native")
    empty = to_sql(_native("?!", text="?!", allow_empty=True), "hotdata-native")
    assert "hybrid_search(" not in empty


def test_a_renamed_fusion_runs_when_a_column_looks_like_a_debug_column() -> None:
    from hotdata_retrieval.engines.local import LocalEngine

    with LocalEngine() as engine:
        engine.load_table(
            "docs",
            pa.table(
                {
                    "id": [1, 2, 3],
                    "body": ["disk full", "disk", "net"],
                    "text_rank": [9, 8, 7],
                    "embedding": pa.array(
                        [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], pa.list_(pa.float32(), 2)
                    ),
                }
            ),
            text_columns=["body"],
        )
        plan = SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="docs", column="body", query_text="disk"),
                    NearestNeighborSearch(
                        table="docs",
                        column="embedding",
                        query_vector=[1.0, 0.0],
                        result_name="distance",
                    ),
                ]
            ),
            columns=["id", "text_rank"],
            score_name="relevance",
        )
        hits = engine.search(plan).hits
        rows = engine.sql(to_sql(plan)).to_pylist()
    assert [hit.key for hit in hits] == [row["id"] for row in rows]
    assert [hit.score for hit in hits] == pytest.approx([row["relevance"] for row in rows])
