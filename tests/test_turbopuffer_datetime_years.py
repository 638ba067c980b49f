"""turbopuffer writes a ``datetime`` attribute as RFC 3339 text in UTC, so a date or timestamp
whose instant in UTC is outside the years 1 to 9999 is refused at load and at upsert with an
``EngineError`` naming the column, the value and its row, nothing written; and a zoned
timestamp whose instant is within them loads whatever its wall time in its own zone is.

Before: the engine read each batch into Python ``datetime`` values in the column's own zone,
so ``9999-12-31 23:00 UTC`` in ``Pacific/Kiritimati`` (the year 10000 there) raised pyarrow's
``OverflowError`` at load and at upsert, where every other engine keeps it; and a value
outside the years in UTC raised the same traceback, after the batches before it were
written.

The reference is NumPy: a value's year is that of its ``datetime64`` in UTC.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine, _check_datetime_years
from hotdata_retrieval.errors import EngineError
from tests.turbopuffer_api import FakeTurbopufferApi

UTC = datetime.timezone.utc


def _years(values: list[int | None], kind: pa.DataType) -> list[int | None]:
    """The reference: each value's year in UTC, by NumPy."""
    if pa.types.is_date32(kind):
        unit = "D"
    elif pa.types.is_date64(kind):
        unit = "ms"
    else:
        unit = kind.unit
    return [
        None
        if value is None
        else int(np.datetime64(value, unit).astype("datetime64[Y]").astype(np.int64)) + 1970
        for value in values
    ]


KINDS = [
    pa.timestamp("s"),
    pa.timestamp("ms", "Asia/Kolkata"),
    pa.timestamp("us", "UTC"),
    pa.date32(),
    pa.date64(),
]


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    values=st.lists(st.integers(-(2**40), 2**40) | st.none(), min_size=1, max_size=5),
    shape=st.sampled_from(["plain", "list", "dictionary"]),
)
def test_the_check_refuses_exactly_the_values_outside_the_years(
    kind: pa.DataType, values: list[int | None], shape: str
) -> None:
    if pa.types.is_date64(kind):
        values = [None if value is None else value // 100 * 86_400_000 for value in values]
    if pa.types.is_date32(kind):
        values = [None if value is None else value // 1000 for value in values]
    integers = pa.int32() if pa.types.is_date32(kind) else pa.int64()
    column = pa.array(values, integers).view(kind)
    if shape == "list":
        column = pa.array([[None], values], pa.list_(integers)).cast(pa.list_(kind))
    elif shape == "dictionary":
        column = column.dictionary_encode()
    offset = 1 if shape == "list" else 0  # the values are the list of the second row
    outside = [
        position
        for position, year in enumerate(_years(values, kind))
        if year is not None and not 1 <= year <= 9999
    ]
    table = pa.table({"at": column})
    if not outside:
        _check_datetime_years(table)
        return
    row = outside[0] + 1 if shape != "list" else offset + 1
    with pytest.raises(EngineError, match=rf"column 'at' holds .* in row {row}\b.*1 to 9999"):
        _check_datetime_years(table)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[TurbopufferEngine]:
    with (
        FakeTurbopufferApi(tmp_path / "fake") as api,
        TurbopufferEngine(api_key=api.api_key, base_url=api.url) as opened,
    ):
        yield opened


def _rows(keys: list[int], at: pa.Array) -> pa.Table:
    return pa.table({"id": keys, "body": ["a b"] * len(keys), "at": at})


LAST_HOUR = datetime.datetime(9999, 12, 31, 23, tzinfo=UTC)
"""An instant in the year 9999 in UTC, in the year 10000 at UTC+14."""


def _instants(column: Any) -> list[Any]:
    """A timestamp column as its UTC instants, in microseconds since 1970."""
    return column.cast(pa.timestamp("us", "UTC")).cast(pa.int64()).to_pylist()


def test_a_zoned_timestamp_past_the_years_in_its_zone_loads_and_upserts(
    engine: TurbopufferEngine,
) -> None:
    zone = pa.timestamp("ms", "Pacific/Kiritimati")
    first = pa.array([LAST_HOUR, datetime.datetime(2020, 1, 1, tzinfo=UTC)], zone)
    engine.load_table("zoned", _rows([1, 2], first), key_column="id", text_columns=["body"])
    second = pa.array([LAST_HOUR - datetime.timedelta(hours=1)], zone)
    engine.upsert_rows("zoned", _rows([2], second))
    read = engine.read_table("zoned", ["id", "at"]).sort_by("id")
    assert _instants(read.column("at")) == _instants(first[:1]) + _instants(second)
    lists = pa.array([[LAST_HOUR], None], pa.list_(zone))
    engine.load_table("zoned_lists", _rows([1, 2], lists), key_column="id", text_columns=["body"])
    read = engine.read_table("zoned_lists", ["id", "at"]).sort_by("id")
    assert _instants(pa.array(read.column("at").to_pylist()[0])) == _instants(first[:1])


def test_a_value_outside_the_years_is_refused_at_load_and_upsert(
    engine: TurbopufferEngine,
) -> None:
    past = np.datetime64("10000-01-01T00:00:00", "s").astype(np.int64)
    assert _years([int(past)], pa.timestamp("s")) == [10000]
    kind = pa.timestamp("s")
    bad = pa.array([0, int(past)], pa.int64()).view(kind)
    with pytest.raises(EngineError, match=r"column 'at' holds .* in row 2\b.*1 to 9999"):
        engine.load_table("years", _rows([1, 2], bad), key_column="id", text_columns=["body"])
    assert "years" not in engine.tables
    good = pa.array([0, 1], pa.int64()).view(kind)
    engine.load_table("years", _rows([1, 2], good), key_column="id", text_columns=["body"])
    before = engine.read_table("years", ["id", "at"]).sort_by("id")
    with pytest.raises(EngineError, match=r"column 'at' holds .* in row 1\b.*1 to 9999"):
        engine.upsert_rows("years", _rows([2], bad[1:]))
    assert engine.read_table("years", ["id", "at"]).sort_by("id").equals(before)
