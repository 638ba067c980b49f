"""The Hotdata engine reads a zoned timestamp of the API's answer whose offset holds seconds
(a zone's local mean time before its standard time: ``America/New_York`` was ``-04:56:02``
until 1883, as Python writes it) as the instant it names, as every engine reads it back.

Before: Arrow does not read an offset of seconds, and the engine took the text for one
without an offset, so ``read_table`` and ``read_rows`` of such a value were refused ("holds a
value that is not one of its type"), though the table held it.

The reference is the instants written: Arrow's integers of each value, in its unit.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.local import TableLoad
from tests.document_engines import fresh_table, open_document_engine

UTC = datetime.timezone.utc

MOMENTS = [
    datetime.datetime(1850, 6, 1, 12, 0, 0, 123456, tzinfo=UTC),
    datetime.datetime(1800, 1, 1, tzinfo=UTC),
    datetime.datetime(2020, 6, 1, 12, tzinfo=UTC),
]
"""Instants before and after each zone's standard time."""


@pytest.fixture(scope="module")
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine("hotdata", tmp_path_factory.mktemp("hotdata"), request)
    yield opened
    opened.close()


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Amsterdam", "Asia/Kolkata"])
def test_an_offset_of_seconds_reads_as_its_instant(engine: Any, zone: str, unit: str) -> None:
    kind = pa.timestamp(unit, zone)
    step = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 1}[unit]
    written = pa.array(
        [moment - datetime.timedelta(microseconds=moment.microsecond % step) for moment in MOMENTS],
        kind,
    )
    offsets = [moment.astimezone(ZoneInfo(zone)).utcoffset() for moment in MOMENTS]
    assert any(offset.seconds % 60 for offset in offsets if offset), "the premise"
    name = fresh_table("offset_seconds")
    data = pa.table({"id": [1, 2, 3], "body": ["a", "b", "c"], "at": written})
    engine.upsert_rows(
        name, data, create=TableLoad(name=name, data=data, key_column="id", text_columns=["body"])
    )
    expected = written.cast(pa.int64()).to_pylist()
    read = engine.read_table(name, ["id", "at"]).sort_by("id").column("at")
    assert read.cast(pa.timestamp(unit, "UTC")).cast(pa.int64()).to_pylist() == expected
    rows = engine.read_rows(name, [1, 2]).sort_by("id").column("at")
    assert rows.cast(pa.timestamp(unit, "UTC")).cast(pa.int64()).to_pylist() == expected[:2]
