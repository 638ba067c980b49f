"""Facets on every engine: the counts a faceted search returns equal a Python count of the
rows the ranking considered (here every row the query matches and the filter passes, fewer
than the depth), cut to the 20 most frequent values, ties by value, NULL not counted; the
page is the unfaceted plan's page."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.plan.search import FACET_VALUES, Source
from tests.parity.engines import STORE_ENGINES, missing_column_message, open_engine

ROWS = 150
LANGS = ["en", "de", "fr", None, "en", "es"]
WORDS = ["disk", "full", "error", "crash", "network", "slow", "login", "fail"]


def _body(index: int) -> str:
    return " ".join([WORDS[index % len(WORDS)], WORDS[(index * 3) % len(WORDS)], "log"])


def _table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(ROWS)),
            "body": [_body(index) for index in range(ROWS)],
            "lang": [LANGS[index % len(LANGS)] for index in range(ROWS)],
            # 41 values, 3 or 4 rows each: more than FACET_VALUES, with ties among them
            "year": [1990 + (index * 7) % 41 for index in range(ROWS)],
            "embedding": pa.array(
                [[1.0, float((index * 7) % 31) / 3] for index in range(ROWS)],
                pa.list_(pa.float32(), 2),
            ),
        }
    )


ENGINES = [*STORE_ENGINES, "hotdata"]


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    name = request.param
    directory = tmp_path_factory.mktemp(f"facets-{name}")
    if name != "hotdata":
        opened = open_engine(name, directory, request)
        opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
        yield opened
        opened.close()
        return
    pytest.importorskip("hotdata_framework")
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    with LocalEngine(directory / "local") as local:
        local.load_table("docs", _table(), key_column="id", text_columns=["body"])
        with FakeHotdataApi(local, database_id="db_facets") as api:
            api.index_engine_table("docs")
            api.add_index("docs", index_type="vector", columns=["embedding"], metric="cosine")
            with HotdataEngine.connect(
                "db_facets", api_key=api.api_key, workspace_id=api.workspace_id, host=api.url
            ) as hotdata:
                yield hotdata


def _source(kind: str) -> Source:
    text = Bm25Search(table="docs", column="body", query_text="disk crash")
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 3.0])
    if kind == "text":
        return text
    if kind == "nearest":
        return nearest
    return ReciprocalRankFusion(branches=[text, nearest], depth=200)


def _matched(kind: str) -> list[dict[str, Any]]:
    """The rows the ranking considers, independently of any engine: the filter's rows that
    the text query matches (a text search), or all of them (a nearest search ranks every
    row with a vector; the fusion's depth covers them all)."""
    rows = _table().to_pylist()
    passing = [row for row in rows if row["year"] >= 1995]
    if kind == "text":
        return [row for row in passing if {"disk", "crash"} & set(row["body"].split())]
    return passing


def _reference(rows: list[dict[str, Any]], column: str) -> tuple[dict[Any, int], int]:
    counts = Counter(row[column] for row in rows if row[column] is not None)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return dict(ordered[:FACET_VALUES]), max(0, len(ordered) - FACET_VALUES)


@pytest.mark.parametrize("kind", ["text", "nearest", "hybrid"])
def test_facet_counts_are_a_python_count_of_the_matched_rows(engine: Any, kind: str) -> None:
    where = Comparison(column="year", operator=">=", value=1995)
    plain = SearchPlan(source=_source(kind), limit=7, offset=3, filter=where)
    faceted = SearchPlan(
        source=_source(kind), limit=7, offset=3, filter=where, facets=["lang", "year"]
    )
    result = engine.search(faceted)
    assert result.keys == engine.search(plain).keys
    assert [hit.ranking_value for hit in result] == pytest.approx(
        [hit.ranking_value for hit in engine.search(plain)]
    )
    matched = _matched(kind)
    assert list(result.facets) == ["lang", "year"]
    for column in ("lang", "year"):
        counts, cut = _reference(matched, column)
        assert dict(result.facets[column]) == counts, column
        assert list(result.facets[column]) == list(counts), column  # count, then value
        assert result.facets_cut[column] == cut, column
    if kind != "text":
        assert result.facets_cut["year"] > 0  # the cut is exercised
    assert None not in result.facets["lang"]


def test_a_fusion_counts_its_first_depth_fused_rows(engine: Any) -> None:
    """With a depth below the matched rows, the counted rows are the fusion's first depth
    fused rows: the unfaceted ranking's first depth hits, counted in Python."""
    text = Bm25Search(table="docs", column="body", query_text="disk crash")
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 3.0])
    fusion = ReciprocalRankFusion(branches=[text, nearest], depth=12)
    first = engine.search(SearchPlan(source=fusion, limit=12, columns=["id", "lang"]))
    assert len(first) == 12
    result = engine.search(SearchPlan(source=fusion, limit=4, facets=["lang"]))
    counts, _ = _reference([dict(hit.columns) for hit in first], "lang")
    assert dict(result.facets["lang"]) == counts
    assert result.keys == first.keys[:4]
    with pytest.raises(PlanError, match="reaches past depth 12") as refused:
        SearchPlan(source=fusion, limit=10, offset=5, facets=["lang"])
    assert refused.value.field == "depth"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"group_by": "lang"}, "group_by"),
        ({"facets": ["embedding"]}, "facets"),
        ({"facets": ["_rank_position"]}, "columns"),
        ({"facets": [f"c{index}" for index in range(9)]}, "facets"),
    ],
)
def test_a_faceted_plan_refuses_what_it_cannot_count(options: dict[str, Any], field: str) -> None:
    with pytest.raises(PlanError) as refused:
        SearchPlan(source=_source("hybrid"), **{"facets": ["lang"], **options})
    assert refused.value.field == field


@pytest.mark.parametrize("kind", ["text", "hybrid"])
def test_an_unknown_facet_column_is_named_with_the_table_columns(engine: Any, kind: str) -> None:
    """A facet column the table lacks is refused before anything runs, naming it and the
    table's columns, as an unknown projected or group_by column is: never a traceback. (The
    Hotdata engine, which learns its columns from its planner, passes on the planner's
    message naming the column and the valid ones.)"""
    with pytest.raises(EngineError, match=missing_column_message(engine, "nope")):
        engine.search(SearchPlan(source=_source(kind), limit=3, facets=["nope"]))
