"""A table without rows, and a column holding only NULLs, read back (``read_table``) with
the types the same store reads a row of them as, on every store: the SQL stores' drivers
hand back no value to type such a column by, and it read as Arrow's ``null`` type."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.parity.engines import STORE_ENGINES, empty_engine

FIELDS = [
    ("id", pa.int64(), 1),
    ("body", pa.string(), "disk full"),
    ("amount", pa.float64(), 1.5),
    ("ratio", pa.float32(), 0.5),
    ("open", pa.bool_(), True),
    ("opened_at", pa.timestamp("us"), datetime.datetime(2026, 1, 2, 3, 4, 5)),
    ("day", pa.date32(), datetime.date(2026, 1, 2)),
    ("blob", pa.binary(), b"\x01\x02"),
]


def _table(rows: int, *, nulls: bool = False) -> pa.Table:
    """``rows`` rows of :data:`FIELDS` (keys 1..rows); every column but the key and the
    text NULL with ``nulls``."""
    columns = []
    for name, kind, value in FIELDS:
        if name == "id":
            columns.append(pa.array(range(1, rows + 1), kind))
        elif nulls and name != "body":
            columns.append(pa.nulls(rows, kind))
        else:
            columns.append(pa.array([value] * rows, kind))
    return pa.table(columns, names=[name for name, _, _ in FIELDS])


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _fields(engine: Any, name: str, data: pa.Table) -> list[tuple[str, pa.DataType]]:
    columns = [field.name for field in data.schema if _stores(engine, field.name)]
    engine.load_table(name, data.select(columns), key_column="id", text_columns=["body"])
    read = engine.read_table(name, columns)
    return [(field.name, field.type) for field in read.schema]


def _stores(engine: Any, column: str) -> bool:
    """Whether this test loads ``column`` on ``engine`` (each store holds each kind but
    turbopuffer, which has no attribute type for bytes)."""
    return not (engine.parity_name == "turbopuffer" and column == "blob")


@pytest.mark.parametrize("nulls", [False, True], ids=["no rows", "a column of NULLs"])
def test_a_column_no_value_types_reads_as_a_row_of_it_reads(engine: Any, nulls: bool) -> None:
    expected = _fields(engine, "empty_reads_one_row", _table(1))
    data = _table(2, nulls=True) if nulls else _table(0)
    name = "empty_reads_nulls" if nulls else "empty_reads_no_rows"
    found = _fields(engine, name, data)
    assert found == expected
    assert all(not pa.types.is_null(kind) for _, kind in found)
