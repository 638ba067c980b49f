"""The Hotdata engine reads back what every engine reads back, and refuses what it cannot
send before it declares a table.

- A list of dates, times or timestamps: the API answers JSON lists of ISO text, which the
  engine read as lists of text; it now reads each element as the listed element type, as
  the local engine returns the column (the reference: the local engine's ``read_table`` of
  the same rows, and the values written).
- A decimal of negative scale, which Parquet (the file a load uploads) has no form of: the
  engine raised pyarrow's ``OSError`` after declaring the table; it now raises an
  ``EngineError`` naming the table, and declares none.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from tests.document_engines import fresh_table, load_by_key, open_document_engine

UTC = datetime.timezone.utc


@pytest.fixture(scope="module")
def engines(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    opened = {
        name: open_document_engine(name, tmp_path_factory.mktemp(name), request)
        for name in ("local", "hotdata")
    }
    yield opened
    for engine in opened.values():
        engine.close()


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        (
            pa.list_(pa.timestamp("ms")),
            [[datetime.datetime(2020, 1, 1, 5, 0, 0, 250000), None], None, []],
        ),
        (
            pa.list_(pa.timestamp("us", "UTC")),
            [[datetime.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)], [], None],
        ),
        (pa.large_list(pa.date32()), [[datetime.date(2024, 2, 29)], None, [None]]),
        (pa.list_(pa.time64("us")), [[datetime.time(23, 59, 59, 1)], [], None]),
    ],
    ids=["timestamp-ms", "timestamp-utc", "large-list-date", "time"],
)
def test_a_list_of_moments_reads_back_as_on_the_local_engine(
    engines: dict[str, Any], kind: pa.DataType, values: list[Any]
) -> None:
    data = pa.table({"id": [1, 2, 3], "body": ["a", "b", "c"], "at": pa.array(values, kind)})
    read = {}
    for name, engine in engines.items():
        table = fresh_table("moment_lists")
        load_by_key(engine, table, data)
        read[name] = engine.read_table(table, ["id", "at"]).sort_by("id").column("at")
    assert read["local"].type == kind
    assert read["hotdata"].type == read["local"].type
    assert read["hotdata"].to_pylist() == read["local"].to_pylist() == values


def test_a_type_parquet_cannot_write_is_refused_before_the_table_is_declared(
    engines: dict[str, Any],
) -> None:
    engine = engines["hotdata"]
    table = fresh_table("negative_scale")
    data = pa.table(
        {
            "id": [1],
            "body": ["a"],
            "price": pa.array([decimal.Decimal("12300")], pa.decimal128(5, -2)),
        }
    )
    with pytest.raises(EngineError, match=r"as the Parquet file a load uploads: .*Scale"):
        load_by_key(engine, table, data)
    assert table not in engine.tables
