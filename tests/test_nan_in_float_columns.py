"""A float column's NaN is refused by the stores that cannot hold it, naming the column and
the row, before anything is written: SQLite stores a NaN REAL as NULL and turbopuffer's JSON
has no NaN, so a loaded NaN silently became NULL there, and the same plan kept other rows
than on the stores that hold it (local, DuckDB, PostgreSQL, LanceDB: ``g > 1`` keeps a NaN
row, as SQL orders NaN above every number, and a group of NaN rows is formed). Those stores
read NaN back as loaded."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from tests.document_engines import fresh_table
from tests.parity.engines import open_engine

REFUSING = {"sqlite", "turbopuffer"}


@pytest.fixture(
    scope="module", params=["local", "sqlite", "duckdb", "postgres", "lancedb", "turbopuffer"]
)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened.parity_name = request.param
    yield opened
    opened.close()


def _rows(values: list[float | None], kind: pa.DataType, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + len(values))),
            "body": ["row"] * len(values),
            "f": pa.array(values, kind),
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(len(values))], pa.list_(pa.float32(), 2)
            ),
        }
    )


@pytest.mark.parametrize("kind", [pa.float64(), pa.float32()])
def test_a_loaded_nan_is_kept_or_refused(engine: Any, kind: pa.DataType) -> None:
    table = fresh_table("nan")
    data = _rows([1.0, None, math.nan, 2.0], kind)
    if engine.parity_name in REFUSING:
        with pytest.raises(EngineError, match=r"column 'f' holds NaN in row 3"):
            engine.load_table(table, data, key_column="id", text_columns=["body"])
        assert table not in engine.tables
        return
    engine.load_table(table, data, key_column="id", text_columns=["body"])
    read = sorted(engine.read_table(table, ["id", "f"]).to_pylist(), key=lambda row: row["id"])
    values = [row["f"] for row in read]
    assert values[0] == 1.0 and values[1] is None and math.isnan(values[2])


def test_an_upserted_nan_is_kept_or_refused(engine: Any) -> None:
    table = fresh_table("nan")
    engine.load_table(
        table, _rows([1.0, 2.0], pa.float64()), key_column="id", text_columns=["body"]
    )
    change = _rows([3.0, math.nan], pa.float64(), start=1)
    if engine.parity_name in REFUSING:
        with pytest.raises(EngineError, match=r"column 'f' holds NaN in row 2"):
            engine.upsert_rows(table, change)
        read = sorted(engine.read_table(table, ["id", "f"]).to_pylist(), key=lambda row: row["id"])
        assert read == [{"id": 0, "f": 1.0}, {"id": 1, "f": 2.0}]
        return
    engine.upsert_rows(table, change)
    read = sorted(engine.read_table(table, ["id", "f"]).to_pylist(), key=lambda row: row["id"])
    assert [row["id"] for row in read] == [0, 1, 2]
    assert read[1]["f"] == 3.0 and math.isnan(read[2]["f"])
