"""A first plan's two usual mistakes, on every engine: the default key (``id``) on a table
without it, and a fusion of a table with its side table of vectors without ``rows_from``.
Each is a ``PlanError`` naming the argument to pass, and passing it gives the answer."""

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
    UnsupportedOnDialectError,
)
from tests.parity.engines import STORE_ENGINES, open_engine

BODIES = ["red fox", "blue fox", "green hill", "fox den"]
VECTORS = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.8, 0.6]]


KEYLESS_ENGINES = [name for name in STORE_ENGINES if name != "turbopuffer"] + ["hotdata"]
"""Engines that hold a table without a key (turbopuffer keys every document by its id)."""

ONE_TABLE_ENGINES = ["lancedb", "turbopuffer"]
"""Engines that run a search on one table (LanceDB each branch on one, turbopuffer one
namespace per request): they refuse a fusion over a table and its side table, with or
without rows_from."""

SIDE_TABLE_ENGINES = [name for name in STORE_ENGINES if name not in ONE_TABLE_ENGINES] + ["hotdata"]
"""Engines that fuse branches over different tables."""


def _load_keyless(engine: Any) -> None:
    engine.load_table(
        "keyless",
        pa.table(
            {
                "doc": ["a", "b", "c", "d"],
                "body": BODIES,
                "embedding": pa.array(VECTORS, type=pa.list_(pa.float32())),
            }
        ),
        key_column=None,
        text_columns=["body"],
    )


def _load_side_table(engine: Any) -> None:
    engine.load_table(
        "notes",
        pa.table({"id": ["a", "b", "c", "d"], "body": BODIES}),
        key_column="id",
        text_columns=["body"],
    )
    engine.load_table(
        "notes_vectors",
        pa.table(
            {"id": ["a", "b", "c", "d"], "embedding": pa.array(VECTORS, pa.list_(pa.float32()))}
        ),
        key_column="id",
    )


def _opened(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, load: Any
) -> Iterator[Any]:
    directory = tmp_path_factory.mktemp(f"first-plan-{request.param}")
    if request.param != "hotdata":
        opened = open_engine(request.param, directory, request)
        load(opened)
        yield opened
        opened.close()
        return
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    with LocalEngine(directory / "local") as local:
        load(local)
        with (
            FakeHotdataApi(local) as api,
            HotdataEngine.connect(
                api.database_id, api_key=api.api_key, workspace_id=api.workspace_id, host=api.url
            ) as hotdata,
        ):
            yield hotdata


@pytest.fixture(scope="module", params=KEYLESS_ENGINES)
def keyless(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from _opened(request, tmp_path_factory, _load_keyless)


@pytest.fixture(scope="module", params=ONE_TABLE_ENGINES)
def one_table(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from _opened(request, tmp_path_factory, _load_side_table)


@pytest.fixture(scope="module", params=SIDE_TABLE_ENGINES)
def side(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from _opened(request, tmp_path_factory, _load_side_table)


def _text(table: str) -> Bm25Search:
    return Bm25Search(table=table, column="body", query_text="fox")


def _nearest(table: str) -> NearestNeighborSearch:
    return NearestNeighborSearch(table=table, column="embedding", query_vector=[1.0, 0.0])


@pytest.mark.parametrize("source", [_text, _nearest], ids=["text", "nearest"])
def test_the_default_key_on_a_keyless_table_names_key_column_none(
    keyless: Any, source: Any
) -> None:
    plan = SearchPlan(source=source("keyless"), columns=["doc"], limit=4)
    with pytest.raises(PlanError, match=r"no column 'id'.*key_column=None") as raised:
        keyless.search(plan)
    assert raised.value.field == "key_column"
    fixed = SearchPlan(source=source("keyless"), columns=["doc"], limit=4, key_column=None)
    found = [hit.columns["doc"] for hit in keyless.search(fixed).hits]
    expected = ["a", "d", "c", "b"] if source is _nearest else ["a", "b", "d"]
    assert sorted(found) == sorted(expected)
    if source is _nearest:  # distances differ: the order is the reference's
        assert found == expected


def test_a_fusion_over_a_keyless_table_names_key_column(keyless: Any) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=[_text("keyless"), _nearest("keyless")]),
        columns=["doc"],
    )
    with pytest.raises(PlanError, match=r"no column 'id'.*key_column='<") as raised:
        keyless.search(plan)
    assert raised.value.field == "key_column"


def _fused(**options: Any) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(branches=[_text("notes"), _nearest("notes_vectors")]),
        limit=4,
        **options,
    )


@pytest.mark.parametrize("columns", [None, ["id", "body"], ["id"]], ids=["default", "body", "id"])
def test_a_fusion_with_a_side_table_names_rows_from(side: Any, columns: Any) -> None:
    with pytest.raises(PlanError, match="pass rows_from") as raised:
        side.search(_fused(columns=columns))
    assert raised.value.field == "rows_from"
    assert "notes" in str(raised.value)


def test_rows_from_fuses_a_table_with_its_side_table(side: Any) -> None:
    hits = side.search(_fused(rows_from="notes", columns=["id", "body"])).hits
    # text ranks a, b, d (tied scores share rank 1 on "fox" alone: one word each);
    # nearest ranks a, d, c, b; fused by reciprocal ranks, the key breaking ties
    assert {hit.key: hit.columns["body"] for hit in hits} == dict(zip(["a", "b", "c", "d"], BODIES))
    assert hits[0].key == "a"


@pytest.mark.parametrize("rows_from", [None, "notes"])
def test_an_engine_of_one_table_refuses_the_fusion_either_way(
    one_table: Any, rows_from: str | None
) -> None:
    with pytest.raises(UnsupportedOnDialectError, match="several tables"):
        one_table.search(_fused(rows_from=rows_from))
