"""turbopuffer request bodies: pinned per plan, refusals typed, and filters that keep exactly
the rows SQL keeps (checked on the parity corpus with a model of turbopuffer's filter
semantics, in which a null attribute is compared like any value)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
    UnsupportedOnDialectError,
    VectorSearch,
)
from hotdata_retrieval.compile.turbopuffer import turbopuffer_filter, turbopuffer_request
from tests.parity.corpus import COLUMNS, passing, row
from tests.parity.test_parity import FILTERS

TEXT = Bm25Search(table="docs", column="body", query_text="error E1234 it's")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.5, -1.0])

PLANS = {
    "text": SearchPlan(source=TEXT, limit=5, offset=5),
    "nearest_l2_filtered": SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=[0.5, -1.0], metric="l2"
        ),
        filter=FILTERS["negation with nulls"],
    ),
    "hybrid_filtered": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], depth=50),
        limit=10,
        filter=Comparison(column="lang", operator="=", value="en") & FILTERS["not in"],
        columns=["id", "title", "order"],
    ),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_request_body_snapshot(name: str, snapshot: SnapshotAssertion) -> None:
    body = turbopuffer_request(PLANS[name])
    assert json.loads(json.dumps(body)) == body  # plain JSON
    assert body == snapshot


def test_every_branch_carries_the_filter() -> None:
    body = turbopuffer_request(PLANS["hybrid_filtered"])
    filters = [query["filters"] for query in body["queries"]]
    assert len(filters) == 2 and filters[0] == filters[1]
    assert [query["top_k"] for query in body["queries"]] == [50, 50]


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (
            SearchPlan(
                source=NearestNeighborSearch(
                    table="t", column="v", query_vector=[1.0], metric="dot"
                )
            ),
            "the dot distance",
        ),
        (SearchPlan(source=VectorSearch(table="t", column="c", query_text="q")), "engine-embedded"),
        (
            SearchPlan(
                source=ReciprocalRankFusion(
                    branches=[
                        NearestNeighborSearch(table="t", column="v", query_vector=[1.0]),
                        NearestNeighborSearch(
                            table="t", column="v", query_vector=[1.0], metric="l2", name="b"
                        ),
                    ]
                )
            ),
            "nearest branches of two metrics",
        ),
        (SearchPlan(source=TEXT, limit=1000, offset=300), "top_k 1300"),
    ],
    ids=["dot", "semantic", "two metrics", "top_k"],
)
def test_what_turbopuffer_cannot_express_is_refused(plan: SearchPlan, message: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"^unsupported on turbopuffer: {message}"):
        turbopuffer_request(plan)


def _passes(node: list[Any] | None, values: dict[str, Any]) -> bool:
    """turbopuffer's filter semantics on one document: null is a value like any other."""
    if node is None:
        return True
    if node[0] == "And":
        return all(_passes(part, values) for part in node[1])
    if node[0] == "Or":
        return any(_passes(part, values) for part in node[1])
    if node[0] == "Not":
        return not _passes(node[1], values)
    column, operator, operand = node
    value = values.get(column)
    if operator == "Eq":
        return bool(value == operand)
    if operator == "NotEq":
        return bool(value != operand)
    if operator == "In":
        return value in operand
    if operator == "NotIn":
        return value not in operand
    if value is None or operand is None:
        return False
    return bool(
        {"Lt": value < operand, "Lte": value <= operand, "Gt": value > operand}.get(
            operator, value >= operand
        )
    )


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters_keep_exactly_the_rows_sql_keeps(name: str) -> None:
    translated = turbopuffer_filter(FILTERS[name])
    kept = {key for key in COLUMNS["id"] if _passes(translated, row(key))}
    assert kept == passing(FILTERS[name])


@pytest.mark.parametrize(
    ("prefix", "pattern"),
    [
        ("crash", "crash*"),
        ("100%_", "100%_*"),  # SQL's pattern characters are no glob's
        ("a*b?", "a[*]b[?]*"),
        ("[x]{y,z}", "[[]x[]][{]y,z[}]*"),
        ("日本", "日本*"),
    ],
)
def test_a_prefix_is_a_glob_whose_pattern_characters_are_data(prefix: str, pattern: str) -> None:
    from hotdata_retrieval.plan.filters import StartsWith

    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
        filter=StartsWith(column="title", prefix=prefix),
    )
    assert turbopuffer_request(plan)["queries"][0]["filters"] == ["title", "Glob", pattern]


def test_a_prefix_with_a_backslash_is_refused_before_anything_is_sent() -> None:
    from hotdata_retrieval.plan.filters import StartsWith

    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
        filter=StartsWith(column="title", prefix="back\\slash"),
    )
    with pytest.raises(UnsupportedOnDialectError, match="a prefix holding a backslash"):
        turbopuffer_request(plan)
