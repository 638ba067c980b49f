"""Results as data on every engine: ``to_list()``, ``to_arrow()`` and ``to_pandas()`` hold
each hit's requested columns, its score or distance and, for a fusion, each branch's rank
and raw score, best first, typed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.engines.results import BranchScore, SearchHit, SearchResult
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = ["disk full on host", "network error", "disk error again", "full moon", "quiet"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(
        request, tmp_path_factory, "notes", bodies_table(BODIES, rating=[5, 3, 4, 1, 2])
    )


def _text(query: str = "disk error") -> Bm25Search:
    return Bm25Search(table="notes", column="body", query_text=query, name="text")


def _nearest() -> NearestNeighborSearch:
    return NearestNeighborSearch(
        table="notes", column="embedding", query_vector=[1.0, 0.5], name="nearest"
    )


def test_a_text_page_as_rows(engine: Any) -> None:
    result = engine.search(SearchPlan(source=_text(), columns=["id", "body", "rating"]))
    rows = result.to_list()
    assert [row["id"] for row in rows] == result.keys
    assert rows == [{**hit.columns, "score": hit.score} for hit in result]
    assert list(rows[0]) == ["id", "body", "rating", "score"]


def test_a_nearest_page_reports_distances(engine: Any) -> None:
    result = engine.search(SearchPlan(source=_nearest(), columns=["id"], limit=3))
    assert result.to_list() == [{"id": hit.key, "distance": hit.distance} for hit in result]


def test_a_fusion_reports_each_branch(engine: Any) -> None:
    fused = ReciprocalRankFusion(branches=[_text(), _nearest()])
    result = engine.search(SearchPlan(source=fused, columns=["id"], limit=5))
    rows = result.to_list()
    assert len(rows) == len(result)
    for row, hit in zip(rows, result):
        assert row["id"] == hit.key and row["score"] == hit.score
        for name in ("text", "nearest"):
            assert row[f"{name}_rank"] == hit.branches[name].rank
            assert row[f"{name}_raw_score"] == hit.branches[name].raw_score
    missed = [row for row in rows if row["text_rank"] is None]
    assert missed, "a row only the nearest branch found"
    assert all(row["text_raw_score"] is None for row in missed)


def test_arrow_and_pandas_hold_the_same_rows_typed(engine: Any) -> None:
    fused = ReciprocalRankFusion(branches=[_text(), _nearest()])
    result = engine.search(SearchPlan(source=fused, columns=["id", "rating"], limit=5))
    table = result.to_arrow()
    assert table.to_pylist() == result.to_list()
    assert pa.types.is_integer(table.schema.field("text_rank").type)
    assert pa.types.is_floating(table.schema.field("score").type)
    frame = result.to_pandas()
    assert list(frame.columns) == table.column_names
    assert frame["id"].tolist() == result.keys
    assert frame["score"].is_monotonic_decreasing


def test_an_empty_page_is_an_empty_table(engine: Any) -> None:
    result = engine.search(SearchPlan(source=_text("absent"), columns=["id"]))
    assert result.to_list() == []
    assert result.to_arrow().num_rows == 0
    assert len(result.to_pandas()) == 0


def test_a_column_named_like_a_result_value_is_refused() -> None:
    hit = SearchHit(
        key=1,
        columns={"id": 1, "nearest_rank": 7},
        score=0.5,
        branches={
            "text": BranchScore(rank=1, raw_score=2.0),
            "nearest": BranchScore(rank=None, raw_score=None),
        },
    )
    with pytest.raises(PlanError, match="'nearest_rank'"):
        SearchResult(hits=(hit,), sql="").to_list()
    alone = SearchHit(
        key=1,
        columns={"id": 1},
        distance=0.25,
        branches={"nearest": BranchScore(rank=1, raw_score=0.25)},
    )
    assert SearchResult(hits=(alone,), sql="", ranked_by="_distance").to_list() == [
        {"id": 1, "distance": 0.25}
    ]
