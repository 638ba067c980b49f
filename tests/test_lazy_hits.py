"""Hits handed over unbuilt (``ColumnRows`` and ``SearchResult``'s lazy hits): a result built
from a page held as columns is, read in any order, the result built from the same rows as
mappings — its hits, keys, length, cursor and short-page note — and a search of the local
engine (whose single-branch page comes as columns) returns what its statement returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.results import ColumnRows, executed_plan, search_result

WORDS = ["fox", "owl", "den", "red"]


def _rows(count: int, *, distance: bool = False) -> list[dict[str, Any]]:
    generator = np.random.default_rng(count)
    scores = sorted(generator.random(count).tolist(), reverse=not distance)
    return [
        {"id": int(key), "title": f"t{key}", ("_distance" if distance else "score"): score}
        for key, score in zip(generator.permutation(count * 2)[:count], scores)
    ]


def _columns(rows: list[dict[str, Any]]) -> ColumnRows:
    return ColumnRows({name: [row[name] for row in rows] for name in rows[0]} if rows else {})


def _plans() -> list[SearchPlan]:
    text = Bm25Search(table="t", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="t", column="embedding", query_vector=[1.0, 0.0])
    return [
        SearchPlan(source=text, columns=["id", "title"], limit=5),
        SearchPlan(source=text, columns=["title"], limit=5, offset=3),
        SearchPlan(source=nearest, columns=["id"], limit=4),
    ]


@pytest.mark.parametrize("plan", _plans())
@pytest.mark.parametrize("count", [0, 3, 5])
@pytest.mark.parametrize("read_hits_first", [True, False])
def test_a_page_of_columns_gives_the_result_of_its_rows(
    plan: SearchPlan, count: int, read_hits_first: bool
) -> None:
    executed = executed_plan(plan)
    rows = _rows(count, distance=plan.ranking_column == "_distance")
    eager = search_result(plan, executed, rows, "SELECT 1")
    lazy = search_result(plan, executed, _columns(rows), "SELECT 1")
    if read_hits_first:
        assert lazy.hits == eager.hits
    assert lazy.keys == eager.keys == [hit.key for hit in eager.hits]
    assert len(lazy) == len(eager) == count
    assert lazy.next_after == eager.next_after
    assert lazy.underfilled == eager.underfilled
    assert lazy == eager and lazy.hits == eager.hits
    assert list(lazy) == list(eager.hits)


def test_a_repeated_key_is_refused_before_any_hit_is_built() -> None:
    plan = _plans()[0]
    rows = _rows(5)
    rows[3]["id"] = rows[1]["id"]
    for given in (rows, _columns(rows)):
        with pytest.raises(EngineError, match="came back twice"):
            search_result(plan, executed_plan(plan), given, "SELECT 1")


def test_column_rows_read_as_the_mappings_they_hold() -> None:
    rows = _rows(4)
    columns = _columns(rows)
    assert list(columns) == rows
    assert [columns[index] for index in range(-4, 4)] == rows + rows
    assert columns[1:3] == rows[1:3] and columns[3:] == rows[3:]
    with pytest.raises(IndexError):
        columns[4]


def test_the_engine_pages_as_its_statement_does(tmp_path: Path) -> None:
    generator = np.random.default_rng(3)
    rows = 200
    table = pa.table(
        {
            "id": pa.array(generator.permutation(rows) * 7, pa.int64()),
            "body": [" ".join(generator.choice(WORDS, size=3)) for _ in range(rows)],
        }
    )
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("t", table, key_column="id", text_columns=["body"])
        for offset in (0, 7):
            for limit in (1, 10, 150):
                plan = SearchPlan(
                    source=Bm25Search(table="t", column="body", query_text="fox den"),
                    columns=["id", "body"],
                    limit=limit,
                    offset=offset,
                )
                found = engine.search(plan)
                keys = found.keys  # before the hits are read
                statement = engine.sql(found.sql).to_pylist()
                assert keys == [row["id"] for row in statement]
                assert [(hit.key, hit.columns["body"], hit.score) for hit in found.hits] == [
                    (row["id"], row["body"], row["score"]) for row in statement
                ]
                assert found.hits[0].branches["text"].rank == offset + 1


@pytest.mark.parametrize("plan", _plans())
def test_a_result_pickles_and_hashes_before_and_after_its_hits_are_read(plan: SearchPlan) -> None:
    import copy
    import pickle

    executed = executed_plan(plan)
    rows = _rows(5, distance=plan.ranking_column == "_distance")
    unread = search_result(plan, executed, _columns(rows), lambda: "SELECT 1")
    eager = search_result(plan, executed, rows, "SELECT 1")
    restored = pickle.loads(pickle.dumps(unread))
    assert restored == eager and restored.next_after == eager.next_after
    assert restored.keys == eager.keys and restored.sql == "SELECT 1"
    assert copy.deepcopy(unread) == eager
    assert hash(unread) == hash(eager) == hash(restored)
    hits = list(eager.hits)
    assert len({*hits, *restored.hits}) == len(hits) == 5
    assert {hit: hit.key for hit in hits}[restored.hits[0]] == eager.keys[0]
