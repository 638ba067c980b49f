"""Rows upserted into a table whose vector column holds vectors of one length, with a vector
of another length, are refused on every store with one message naming the first such row of
the rows given (NULLs pass), before anything is written. The stores said "the rows hold 3",
leaving the caller to search the rows for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import bodies_table, loaded_engine

TABLE = "vector_lengths"
STORES = ["sqlite", "duckdb", "postgres", "lancedb", "turbopuffer"]


@pytest.fixture(scope="module", params=STORES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, TABLE, bodies_table(["disk a", "disk b"]))


def _rows(vectors: list[list[float] | None]) -> pa.Table:
    keys = list(range(10, 10 + len(vectors)))
    return pa.table(
        {
            "id": keys,
            "body": [f"disk {key}" for key in keys],
            "embedding": pa.array(vectors, pa.list_(pa.float32())),
        }
    )


@pytest.mark.parametrize(
    ("vectors", "row"),
    [([[1.0, 2.0, 3.0]], 0), ([None, [1.0, 2.0], None, [1.0, 2.0, 3.0]], 3)],
)
def test_a_vector_of_another_length_than_the_tables_is_refused_naming_its_row(
    engine: Any, vectors: list[list[float] | None], row: int
) -> None:
    with pytest.raises(
        EngineError,
        match=rf"vector column 'embedding' of table '\S*{TABLE}' holds vectors of 2 "
        rf"dimensions; row {row + 1} of the rows has 3$",
    ):
        engine.upsert_rows(TABLE, _rows(vectors))
    found = engine.search(engine.plan_search(SearchRequest(table=TABLE, query="disk", mode="text")))
    assert sorted(found.keys) == [0, 1]
