"""A date or timestamp literal far from today (the years 1 to 1677 and 2262 to 9999) against
a timestamp column keeps, on every engine path, the rows a plain-Python reference keeps: the
literal compared with each row's instant, a NULL row never kept, under ``NOT`` either.

DataFusion (the local engine's statement, LanceDB, and the local engine behind the fake
turbopuffer) wrote a timestamp literal as nanoseconds and cast a date literal to
nanoseconds to compare it with a timestamp column, so a literal outside about 1677-09-21 to
2262-04-11 failed with its cast error (``Cannot cast Date32 value -171664 to
Timestamp(ns)``), or, on LanceDB against a nanosecond column, answered wrongly
(``ts < '3000-01-01T00:00'`` kept no row). The library now writes a timestamp literal as
microseconds, a date compared with a timestamp column as midnight UTC of that day, and a
literal past the years a nanosecond column holds as the comparison it is there, TRUE or
FALSE for every value and NULL for a NULL row (docs/plans.md, "Filter values and column
types").
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans

UTC = datetime.timezone.utc
PLUS_ONE = datetime.timezone(datetime.timedelta(hours=1))
ROWS = 4
MICRO = [
    datetime.datetime(2020, 1, 1, 12),
    None,
    datetime.datetime(1400, 6, 1),
    datetime.datetime(9000, 1, 1),
]
"""Instants (naive: UTC) of the microsecond and millisecond columns, past the nanosecond
years on both sides."""
NANO = [
    datetime.datetime(2020, 1, 1, 12),
    None,
    datetime.datetime(1700, 6, 1),
    datetime.datetime(2250, 1, 1),
]
VALUES = {"micro": MICRO, "milli": MICRO, "nano": NANO}


def _table(name: str = "local") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": ["crash report"] * ROWS,
            "micro": pa.array(MICRO, pa.timestamp("us")),
            "milli": pa.array(
                [None if m is None else m.replace(tzinfo=UTC) for m in MICRO],
                pa.timestamp("ms", tz="UTC"),
            ),
            "nano": pa.array(NANO, pa.timestamp("ns")),
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(ROWS)], pa.list_(pa.float32(), 2)
            ),
        }
    )


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "timestamp-range", _table)


LITERALS: dict[str, Any] = {
    "date 1500": datetime.date(1500, 1, 1),
    "text 1500": "1500-01-01",
    "text 3000": "3000-01-01T00:00",
    "year 1": datetime.datetime(1, 1, 1),
    "year 9999": datetime.datetime(9999, 12, 31, 23, 59),
    "date 9999": datetime.date(9999, 12, 31),
    "aware 1600": datetime.datetime(1600, 1, 1, 5, tzinfo=PLUS_ONE),
    "text 2100": "2100-01-01",
}
"""Literals outside the nanosecond years (and one inside), as a plan may give them."""

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _instant(value: Any) -> datetime.datetime:
    """A literal as the reference reads it: ISO text parsed, a date at midnight UTC, a naive
    time in UTC."""
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def _holds(predicate: Predicate, cell: datetime.datetime) -> bool:
    if isinstance(predicate, Comparison):
        return _OPERATORS[predicate.operator.value](cell, _instant(predicate.value))
    if isinstance(predicate, Between):
        return _instant(predicate.low) <= cell <= _instant(predicate.high)
    assert isinstance(predicate, InList)
    return any(cell == _instant(value) for value in predicate.values)


def _predicates(column: str, literal: Any) -> list[Predicate]:
    inside = datetime.datetime(2020, 1, 1, 12)
    return [
        *(Comparison(column=column, operator=op, value=literal) for op in _OPERATORS),
        Between(column=column, low=literal, high=inside),
        Between(column=column, low=inside, high=literal),
        InList(column=column, values=[literal, inside]),
        InList(column=column, values=[literal]),
    ]


@pytest.mark.parametrize("literal", list(LITERALS))
@pytest.mark.parametrize("column", list(VALUES))
def test_a_literal_far_from_today_keeps_the_reference_rows(
    engine: tuple[str, Any], column: str, literal: str
) -> None:
    name, opened = engine
    values = VALUES[column]
    for predicate in _predicates(column, LITERALS[literal]):
        for negated in (False, True):
            used = Not(operand=predicate) if negated else predicate
            expected = {
                key
                for key, value in enumerate(values)
                if value is not None and _holds(predicate, value) is not negated
            }
            plan = literal_plans(used, ROWS)[0]
            kept = literal_keys(name, opened, plan, _table().schema)
            assert kept == expected, (name, predicate, negated)
