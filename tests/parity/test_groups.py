"""Grouped pages on every engine: a text, nearest and hybrid search over a table of chunks,
grouped by each chunk's parent document, equals an independent Python reference: the same
search's ranking of the chunks, the best ``group_size`` chunks of each parent kept, parents
in the order of their best chunk, the page cut by parents. The SQL engines (and Hotdata,
through its fake API) run the grouped statement; the local engine's native path, LanceDB and
turbopuffer rank the candidates and the library groups them."""

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
    to_sql,
)
from hotdata_retrieval.plan.search import Source
from tests.parity.engines import ENGINE_PATHS, open_engine

CHUNKS = 72
WORDS = ["disk", "full", "error", "crash", "network", "slow", "login", "fail"]
QUERY_TEXT = "disk full"
QUERY_VECTOR = [1.0, 3.0]
DEPTH = 80
"""Every chunk is a candidate of every branch, so the reference ranks them all."""


def _parent(index: int) -> str | None:
    # one parent holds many chunks (the page-filling document), one in 13 chunks none
    if index % 13 == 5:
        return None
    return "a" if index % 3 == 0 else f"b{index % 11}"


def _body(index: int) -> str:
    words = [WORDS[(index * step) % len(WORDS)] for step in range(1, 4 + index % 3)]
    if _parent(index) == "a":  # document a is all about a full disk
        words = ["disk", "full", *words[:2]]
    return " ".join(words)


def _vector(index: int) -> list[float]:
    if _parent(index) == "a":
        return [1.0, 3.0 + (index % 5) / 8]
    return [1.0, float((index * 5) % 17)]


def _chunks() -> pa.Table:
    return pa.table(
        {
            "id": list(range(CHUNKS)),
            "body": [_body(index) for index in range(CHUNKS)],
            "parent": [_parent(index) for index in range(CHUNKS)],
            "embedding": pa.array(
                [_vector(index) for index in range(CHUNKS)], pa.list_(pa.float32(), 2)
            ),
        }
    )


ENGINES = [*ENGINE_PATHS, "hotdata"]


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    directory = tmp_path_factory.mktemp(f"groups-{name.replace(' ', '-')}")
    if name != "hotdata":
        opened = open_engine(name, directory, request)
        opened.load_table("chunks", _chunks(), key_column="id", text_columns=["body"])
        yield name, opened
        opened.close()
        return
    pytest.importorskip("hotdata_framework")
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    with LocalEngine(directory / "local") as local:
        local.load_table("chunks", _chunks(), key_column="id", text_columns=["body"])
        with FakeHotdataApi(local, database_id="db_groups") as api:
            api.index_engine_table("chunks")
            api.add_index("chunks", index_type="vector", columns=["embedding"], metric="cosine")
            with HotdataEngine.connect(
                "db_groups", api_key=api.api_key, workspace_id=api.workspace_id, host=api.url
            ) as hotdata:
                yield name, hotdata


def _source(kind: str) -> Source:
    text = Bm25Search(table="chunks", column="body", query_text=QUERY_TEXT)
    nearest = NearestNeighborSearch(table="chunks", column="embedding", query_vector=QUERY_VECTOR)
    if kind == "text":
        return text
    if kind == "nearest":
        return nearest
    return ReciprocalRankFusion(branches=[text, nearest], depth=DEPTH)


def _rows(name: str, engine: Any, plan: SearchPlan) -> list[tuple[Any, Any, float]]:
    """``(key, parent, ranking value)`` of each row: the compiled statement itself on
    DataFusion for "local statement", else ``engine.search``."""
    if name == "local statement":
        ranking = "score" if plan.fusion is not None else plan.ranking_column
        return [
            (row["id"], row["parent"], row[ranking])
            for row in engine.sql(to_sql(plan)).to_pylist()
            if row[ranking] is not None
        ]
    return [(hit.key, hit.columns["parent"], hit.ranking_value) for hit in engine.search(plan).hits]


def _reference(
    ranked: list[tuple[Any, Any, float]], limit: int, offset: int, group_size: int
) -> list[tuple[Any, Any, float]]:
    kept: dict[Any, list[tuple[Any, Any, float]]] = {}
    for row in ranked:
        if row[1] is None:
            continue
        rows = kept.setdefault(row[1], [])
        if len(rows) < group_size:
            rows.append(row)
    return [row for rows in list(kept.values())[offset : offset + limit] for row in rows]


@pytest.mark.parametrize("kind", ["text", "nearest", "hybrid"])
@pytest.mark.parametrize("group_size", [1, 2])
def test_a_grouped_page_keeps_the_best_chunks_of_each_parent(
    engine: tuple[str, Any], kind: str, group_size: int
) -> None:
    name, opened = engine
    ranked = _rows(
        name, opened, SearchPlan(source=_source(kind), limit=DEPTH, columns=["id", "parent"])
    )
    assert len({row[1] for row in ranked[:5]}) < 5  # ungrouped, one parent crowds the page
    for limit, offset in [(5, 0), (3, 2), (4, 9)]:
        plan = SearchPlan(
            source=_source(kind),
            limit=limit,
            offset=offset,
            group_by="parent",
            group_size=group_size,
        )
        rows = _rows(name, opened, plan)
        expected = _reference(ranked, limit, offset, group_size)
        assert [row[:2] for row in rows] == [row[:2] for row in expected]
        assert [row[2] for row in rows] == pytest.approx([row[2] for row in expected])
        parents = [row[1] for row in rows]
        assert len(set(parents)) == min(
            limit, max(0, len({r[1] for r in ranked} - {None}) - offset)
        )


def test_a_grouped_page_short_of_groups_says_so(engine: tuple[str, Any]) -> None:
    name, opened = engine
    if name == "local statement":
        return
    parents = {_parent(index) for index in range(CHUNKS)} - {None}
    result = opened.search(
        SearchPlan(source=_source("hybrid"), limit=len(parents) + 3, group_by="parent")
    )
    assert len({hit.columns["parent"] for hit in result}) == len(parents)
    assert result.underfilled is not None and f"only {len(parents)} groups" in result.underfilled


def test_a_depth_that_cannot_fill_the_groups_is_refused() -> None:
    with pytest.raises(PlanError, match=r"\(limit \+ offset\) \* group_size = 12") as raised:
        SearchPlan(
            source=ReciprocalRankFusion(branches=_source("hybrid").branches, depth=10),  # type: ignore[union-attr]
            limit=3,
            offset=3,
            group_by="parent",
            group_size=2,
        )
    assert raised.value.field == "depth"
