"""An unsigned 64-bit integer above the largest signed one is refused on every SQL store
(SQLite, DuckDB, PostgreSQL: their integer columns are signed 64-bit) with one message naming
the column, the row and the value, at load and at upsert, before anything is written; the
largest signed value loads and is read back. Each driver refused with its own words before
("Python int too large to convert to SQLite INTEGER", DuckDB's conversion error)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from tests.parity.engines import empty_engine

SQL_STORES = ["sqlite", "duckdb", "postgres"]
LARGEST = 2**63 - 1


@pytest.fixture(scope="module", params=SQL_STORES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _rows(keys: list[int], counts: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(keys, pa.uint64()),
            "body": [f"disk {key}" for key in keys],
            "hits": pa.array(counts, pa.uint64()),
        }
    )


def _message(engine: Any, column: str, row: int, value: int) -> str:
    return (
        f"column '{column}' holds {value} in row {row + 1}, past the largest integer the "
        f"{engine.parity_name} store holds \\({LARGEST}\\)"
    )


def test_the_largest_signed_value_loads_and_reads_back(engine: Any) -> None:
    engine.load_table("unsigned_ok", _rows([1, LARGEST], [0, LARGEST]), text_columns=["body"])
    read = engine.read_table("unsigned_ok", ["id", "hits"]).to_pydict()
    assert sorted(zip(read["id"], read["hits"])) == [(1, 0), (LARGEST, LARGEST)]


@pytest.mark.parametrize(
    ("keys", "counts", "column", "row", "value"),
    [
        ([1, 2**63], [0, 0], "id", 1, 2**63),
        ([1, 2, 3], [5, 2**64 - 1, 2**63], "hits", 1, 2**64 - 1),
    ],
)
def test_a_value_past_it_is_refused_at_load_and_upsert_alike(
    engine: Any, keys: list[int], counts: list[int], column: str, row: int, value: int
) -> None:
    message = _message(engine, column, row, value)
    with pytest.raises(EngineError, match=message):
        engine.load_table("unsigned_refused", _rows(keys, counts), text_columns=["body"])
    assert "unsigned_refused" not in engine.tables
    engine.load_table("unsigned_kept", _rows([7], [7]), text_columns=["body"])
    with pytest.raises(EngineError, match=message):
        engine.upsert_rows("unsigned_kept", _rows(keys, counts))
    assert engine.read_table("unsigned_kept", ["id"]).to_pydict() == {"id": [7]}
