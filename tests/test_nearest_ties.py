"""A tie of distances in a nearest-neighbour branch is broken by the table's key, as every
store's ``ORDER BY <distance>, <key>`` breaks it: at a single search's bound, at a fusion's
depth, on the exact scan and on the HNSW index alike."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.sqlite import SqliteEngine

KEYS = [9, 3, 7, 1, 5, 2, 8, 4, 6, 0]  # keys out of row order
DATA = pa.table(
    {
        "id": KEYS,
        "body": ["twin words"] * 9 + ["other"],
        "bucket": [key % 2 for key in KEYS],
        "embedding": pa.array([[1.0, 0.0]] * len(KEYS), pa.list_(pa.float32(), 2)),
    }
)
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
FUSED = ReciprocalRankFusion(
    branches=[Bm25Search(table="docs", column="body", query_text="twin"), NEAREST], depth=3
)


def keys(engine: object, plan: SearchPlan) -> list[object]:
    return [hit.key for hit in engine.search(plan).hits]  # type: ignore[attr-defined]


@pytest.fixture(scope="module", params=[None, "hnsw"])
def engines(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    root = tmp_path_factory.mktemp("ties")
    local = LocalEngine(root / "local")
    local.load_table("docs", DATA, text_columns=["body"], vector_index=request.param)
    sqlite = SqliteEngine(root / "store.db")
    sqlite.load_table("docs", DATA, key_column="id", text_columns=["body"])
    return local, sqlite


@pytest.mark.parametrize(
    "plan",
    [
        SearchPlan(source=NEAREST, limit=3),
        SearchPlan(source=NEAREST, limit=3, offset=2),
        SearchPlan(
            source=NEAREST, limit=3, filter=Comparison(column="bucket", operator="=", value=1)
        ),
        SearchPlan(source=FUSED, limit=2),
        SearchPlan(
            source=FUSED, limit=3, filter=Comparison(column="bucket", operator="=", value=0)
        ),
    ],
    ids=["nearest", "nearest-page-2", "nearest-filtered", "fused-depth", "fused-filtered"],
)
def test_ties_are_cut_by_the_key_as_on_a_store(engines: tuple, plan: SearchPlan) -> None:
    local, sqlite = engines
    assert keys(local, plan) == keys(sqlite, plan)


def test_a_tied_nearest_search_returns_the_lowest_keys_in_key_order(engines: tuple) -> None:
    local, _ = engines
    assert keys(local, SearchPlan(source=NEAREST, limit=4)) == [0, 1, 2, 3]


def test_the_depth_cut_keeps_the_nearest_rows_of_lowest_key(engines: tuple) -> None:
    local, _ = engines
    hits = local.search(SearchPlan(source=FUSED, limit=3)).hits
    assert [hit.key for hit in hits] == [1, 2, 0]  # 0: the nearest branch's third, by key
    nearest_ranked = sorted(hit.key for hit in hits if hit.branches["nearest"].rank is not None)
    assert nearest_ranked == [0, 1, 2]


def test_pages_of_a_tied_search_tile_one_ranking(engines: tuple, tmp_path: Path) -> None:
    local, _ = engines
    whole = keys(local, SearchPlan(source=NEAREST, limit=9))
    pages = [
        keys(local, SearchPlan(source=NEAREST, limit=3, offset=offset)) for offset in (0, 3, 6)
    ]
    assert [key for page in pages for key in page] == whole == sorted(KEYS)[:9]
