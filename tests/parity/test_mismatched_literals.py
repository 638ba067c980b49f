"""A filter literal of another type than its column keeps, on every engine that knows its
columns' types, the rows one reference keeps, or is refused on each with the same
:class:`PlanError` on field ``filter`` naming the value, the column and the kind of value it
holds (``engines/checks.py``, docs/plans.md "Filter values and column types"). Paths: the
local engine's native search (its nearest-neighbour mask and its BM25 index's filter) and its
compiled statement on DataFusion, SQLite, DuckDB, PostgreSQL, LanceDB and turbopuffer through
its fake API.

The rule is the library's: text that reads as the column's type is that value (``year =
'2020'`` is ``year = 2020``, ``day < '2020-01-01T12:00:00'`` the instant it names, a date
column read as midnight UTC of its day); any other mismatch (text that is not such a value,
a number against text, a boolean against a number and back, a number against a date) is
refused. The reference below is plain Python over the table's values, not the library.

Before: every path but SQLite answered a date column compared with a time past midnight
(``day <= '2020-01-01T05:00'``) as the instant, SQLite refused it; and SQLite compared a date
column with a time carrying an offset (``day = '2020-01-01T00:00:00+01:00'``) by its local
date, keeping the rows of 2020-01-01, where every other path compares the instant,
2019-12-31 23:00 UTC, and keeps none. DataFusion (the local engine's statement and LanceDB)
read a zone-less timestamp literal compared with a column of a time zone (``paris >
'2020-01-01T12:00:00'``, ``paris`` in Europe/Paris) in the column's zone, keeping the row at
12:00 UTC, where every other path reads it in UTC; a literal with an offset too, as the
literal was cast to a zone-less timestamp first.
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
from tests.parity.literal_engines import (
    assert_refused_alike,
    checked_keys,
    literal_engine,
    literal_plans,
    literal_table,
)

UTC = datetime.timezone.utc
ONE_HOUR = datetime.timedelta(hours=1)
ROWS = 6

YEAR = [2019, 2020, 2021, None, 10, 300]
RATIO = [0.5, 1.5, 2020.0, None, 10.0, 3.0]
NAME = ["2020", "abc", "10", None, "9", "true"]
FLAG = [True, False, True, None, False, True]
DAY = [
    datetime.date(2020, 1, 1),
    datetime.date(2020, 1, 2),
    datetime.date(2019, 12, 31),
    None,
    datetime.date(2021, 6, 1),
    datetime.date(2020, 1, 1),
]
AT = [
    datetime.datetime(2020, 1, 1, tzinfo=UTC),
    datetime.datetime(2020, 1, 1, 12, tzinfo=UTC),
    datetime.datetime(2019, 12, 31, 23, tzinfo=UTC),
    None,
    datetime.datetime(2021, 6, 1, tzinfo=UTC),
    datetime.datetime(2020, 1, 2, tzinfo=UTC),
]
NAIVE = [
    datetime.datetime(2020, 1, 1, 12),
    datetime.datetime(2020, 1, 1, 11),
    datetime.datetime(2020, 1, 1, 13),
    None,
    datetime.datetime(2020, 1, 1),
    datetime.datetime(2020, 1, 2),
]
VALUES: dict[str, list[Any]] = {
    "year": YEAR,
    "ratio": RATIO,
    "name": NAME,
    "flag": FLAG,
    "day": DAY,
    "at": AT,
    "naive": NAIVE,
    "paris": AT,
}
"""Each column's values, one a row (key ``id`` its position)."""


TABLE = literal_table(
    ROWS,
    {
        "year": pa.array(YEAR, pa.int64()),
        "ratio": pa.array(RATIO, pa.float64()),
        "name": pa.array(NAME, pa.string()),
        "flag": pa.array(FLAG, pa.bool_()),
        "day": pa.array(DAY, pa.date32()),
        "at": pa.array(AT, pa.timestamp("us", tz="UTC")),
        "naive": pa.array(NAIVE, pa.timestamp("us")),
        "paris": pa.array(AT, pa.timestamp("ms", tz="Europe/Paris")),
    },
)


def _moment(value: Any) -> datetime.datetime:
    """A date or timestamp of the table as the instant it is: a date at midnight UTC, a
    naive time in UTC (the engines run in UTC)."""
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _meaning(column: str, value: Any) -> Any:
    """A literal as the reference reads it against ``column``: integer or number text as the
    number, ISO 8601 text, a date or a datetime as the instant (:func:`_moment`)."""
    if column == "year":
        return int(value)
    if column == "ratio":
        return float(value)
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return _moment(value)


def _cell(column: str, value: Any) -> Any:
    return value if column in ("year", "ratio") else _moment(value)


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _holds(predicate: Predicate, value: Any) -> bool:
    """Whether ``predicate`` holds for the non-NULL ``value`` of its column."""
    column = predicate.column  # type: ignore[union-attr]
    cell = _cell(column, value)
    if isinstance(predicate, Comparison):
        return _OPERATORS[predicate.operator.value](cell, _meaning(column, predicate.value))
    if isinstance(predicate, Between):
        return _meaning(column, predicate.low) <= cell <= _meaning(column, predicate.high)
    assert isinstance(predicate, InList)
    return any(cell == _meaning(column, member) for member in predicate.values)


def _compared(column: str, op: str, value: Any) -> Predicate:
    return Comparison(column=column, operator=op, value=value)


ANSWERED: dict[str, Predicate] = {
    "year = '2020'": _compared("year", "=", "2020"),
    "year > '2020'": _compared("year", ">", "2020"),
    "year > '9'": _compared("year", ">", "9"),
    "year = '0010'": _compared("year", "=", "0010"),
    "year in ('2020', 10)": InList(column="year", values=["2020", 10]),
    "year between '10' and '2020'": Between(column="year", low="10", high="2020"),
    "ratio = '1.5'": _compared("ratio", "=", "1.5"),
    "ratio > '9'": _compared("ratio", ">", "9"),
    "ratio = '1E1'": _compared("ratio", "=", "1E1"),
    "day = '2020-01-01'": _compared("day", "=", "2020-01-01"),
    "day > '2020-01-01'": _compared("day", ">", "2020-01-01"),
    "day in ('2020-01-01', '2021-06-01')": InList(
        column="day", values=["2020-01-01", "2021-06-01"]
    ),
    "day = '2020-01-01T00:00:00'": _compared("day", "=", "2020-01-01T00:00:00"),
    "day = datetime": _compared("day", "=", datetime.datetime(2020, 1, 1)),
    "day < '2020-01-01 12:00:00'": _compared("day", "<", "2020-01-01 12:00:00"),
    "day <= '2020-01-01T05:00'": _compared("day", "<=", "2020-01-01T05:00"),
    "day >= '2020-01-01T05:00'": _compared("day", ">=", "2020-01-01T05:00"),
    "day > '2020-01-01T05:00'": _compared("day", ">", "2020-01-01T05:00"),
    "day = '2020-01-01T05:00'": _compared("day", "=", "2020-01-01T05:00"),
    "day != '2020-01-01T05:00'": _compared("day", "!=", "2020-01-01T05:00"),
    "day = '2020-01-01T00:00:00+01:00'": _compared("day", "=", "2020-01-01T00:00:00+01:00"),
    "day = '2020-01-02T01:00:00+01:00'": _compared("day", "=", "2020-01-02T01:00:00+01:00"),
    "day > '2020-01-01T00:00:00-01:00'": _compared("day", ">", "2020-01-01T00:00:00-01:00"),
    "day < '2020-01-01T00:00:00+01:00'": _compared("day", "<", "2020-01-01T00:00:00+01:00"),
    "day in ('2020-01-01T05:00', '2021-06-01')": InList(
        column="day", values=["2020-01-01T05:00", "2021-06-01"]
    ),
    "day in ('2020-01-01T05:00')": InList(column="day", values=["2020-01-01T05:00"]),
    "day between '2019-12-31T01:00' and '2020-01-02T00:00'": Between(
        column="day", low="2019-12-31T01:00", high="2020-01-02T00:00"
    ),
    "day between '2020-01-01T01:00' and '2020-01-01T23:00'": Between(
        column="day", low="2020-01-01T01:00", high="2020-01-01T23:00"
    ),
    "at = '2020-01-01'": _compared("at", "=", "2020-01-01"),
    "at > '2020-01-01'": _compared("at", ">", "2020-01-01"),
    "at >= '2020-01-01T12:00:00'": _compared("at", ">=", "2020-01-01T12:00:00"),
    "at < '2020-01-01T13:00:00+01:00'": _compared("at", "<", "2020-01-01T13:00:00+01:00"),
    "at between '2020-01-01' and '2020-01-02'": Between(
        column="at", low="2020-01-01", high="2020-01-02"
    ),
    "at = date": _compared("at", "=", datetime.date(2020, 1, 1)),
    "naive = '2020-01-01T12:00:00'": _compared("naive", "=", "2020-01-01T12:00:00"),
    "naive = '2020-01-01T13:00:00+01:00'": _compared("naive", "=", "2020-01-01T13:00:00+01:00"),
    "naive > '2020-01-01'": _compared("naive", ">", "2020-01-01"),
    "paris = '2020-01-01'": _compared("paris", "=", "2020-01-01"),
    "paris = date": _compared("paris", "=", datetime.date(2020, 1, 2)),
    "paris in (dates)": InList(column="paris", values=["2020-01-02", "2021-06-01T00:00:00Z"]),
    "paris < '2020-01-01T12:00:00'": _compared("paris", "<", "2020-01-01T12:00:00"),
    "paris <= '2020-01-01T12:00:00'": _compared("paris", "<=", "2020-01-01T12:00:00"),
    "paris > '2020-01-01T12:00:00'": _compared("paris", ">", "2020-01-01T12:00:00"),
    "paris >= '2020-01-01T12:00:00'": _compared("paris", ">=", "2020-01-01T12:00:00"),
    "paris = '2020-01-01T12:00:00'": _compared("paris", "=", "2020-01-01T12:00:00"),
    "paris != '2020-01-01T12:00:00'": _compared("paris", "!=", "2020-01-01T12:00:00"),
    "paris = '2020-01-01 12:00'": _compared("paris", "=", "2020-01-01 12:00"),
    "paris = '2020-01-01T13:00:00+01:00'": _compared("paris", "=", "2020-01-01T13:00:00+01:00"),
    "paris > '2020-01-01T12:00:00Z'": _compared("paris", ">", "2020-01-01T12:00:00Z"),
    "paris <= '2020-01-01T07:00:00-05:00'": _compared("paris", "<=", "2020-01-01T07:00:00-05:00"),
    "paris = datetime": _compared("paris", "=", datetime.datetime(2020, 1, 1, 12)),
    "paris = aware datetime": _compared(
        "paris", "=", datetime.datetime(2020, 1, 1, 13, tzinfo=datetime.timezone(ONE_HOUR))
    ),
    "paris between '2019-12-31T23:00:00' and '2020-01-01T12:00:00'": Between(
        column="paris", low="2019-12-31T23:00:00", high="2020-01-01T12:00:00"
    ),
    "paris between offsets": Between(
        column="paris", low="2020-01-01T00:00:00+01:00", high="2020-01-01T13:00:00+01:00"
    ),
    "paris in ('2020-01-01T12:00:00', '2019-12-31T23:00')": InList(
        column="paris", values=["2020-01-01T12:00:00", "2019-12-31T23:00"]
    ),
    "paris in (offsets)": InList(
        column="paris", values=["2020-01-01T13:00:00+01:00", "2020-01-02T00:00:00+00:00"]
    ),
    "at > '2020-01-01T12:00:00'": _compared("at", ">", "2020-01-01T12:00:00"),
    "at in ('2020-01-01T12:00:00')": InList(column="at", values=["2020-01-01T12:00:00"]),
}
"""Filters every path answers as :func:`_holds` says (a NULL row is never kept, under
``NOT`` either). Column ``paris`` holds the instants of ``at`` in a zone other than UTC: a date,
a time of day without an offset (a time in UTC) and one with an offset compare as the instant
they name everywhere."""

REFUSED: dict[str, tuple[Predicate, str]] = {
    "year = 'abc'": (
        Comparison(column="year", operator="=", value="abc"),
        "filter compares column 'year', which holds integer values, with 'abc', which is not "
        "an integer",
    ),
    "year = '2020.0'": (
        Comparison(column="year", operator="=", value="2020.0"),
        "filter compares column 'year', which holds integer values, with '2020.0', which is "
        "not an integer",
    ),
    "year in (2020, 'x')": (
        InList(column="year", values=[2020, "x"]),
        "filter compares column 'year', which holds integer values, with 'x', which is not an "
        "integer",
    ),
    "year = TRUE": (
        Comparison(column="year", operator="=", value=True),
        "filter compares column 'year', which holds integer values, with TRUE, a boolean",
    ),
    "ratio < 'half'": (
        Comparison(column="ratio", operator="<", value="half"),
        "filter compares column 'ratio', which holds number values, with 'half', which is not "
        "a finite number",
    ),
    "name = 2020": (
        Comparison(column="name", operator="=", value=2020),
        "filter compares column 'name', which holds text values, with 2020, a number; quote "
        "it to compare text",
    ),
    "name in ('abc', 10)": (
        InList(column="name", values=["abc", 10]),
        "filter compares column 'name', which holds text values, with 10, a number; quote it "
        "to compare text",
    ),
    "name = TRUE": (
        Comparison(column="name", operator="=", value=True),
        "filter compares column 'name', which holds text values, with TRUE, a boolean; quote "
        "it to compare text",
    ),
    "flag = 1": (
        Comparison(column="flag", operator="=", value=1),
        "filter compares column 'flag', which holds boolean values, with 1, a number; compare "
        "it with TRUE or FALSE",
    ),
    "flag = 'true'": (
        Comparison(column="flag", operator="=", value="true"),
        "filter compares column 'flag', which holds boolean values, with 'true', text; "
        "compare it with TRUE or FALSE",
    ),
    "flag in (TRUE, 1)": (
        InList(column="flag", values=[True, 1]),
        "filter compares column 'flag', which holds boolean values, with 1, a number; compare "
        "it with TRUE or FALSE",
    ),
    "day = 2020": (
        Comparison(column="day", operator="=", value=2020),
        "filter compares column 'day', which holds date or timestamp values, with 2020, which "
        "is not an ISO 8601 date or timestamp",
    ),
    "day = 'soon'": (
        Comparison(column="day", operator="=", value="soon"),
        "filter compares column 'day', which holds date or timestamp values, with 'soon', "
        "which is not an ISO 8601 date or timestamp",
    ),
    "at >= '2020-1-1'": (
        Comparison(column="at", operator=">=", value="2020-1-1"),
        "filter compares column 'at', which holds date or timestamp values, with '2020-1-1', "
        "which is not an ISO 8601 date or timestamp",
    ),
}
"""Filters every path refuses, with the start of the one message."""


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "mismatch", lambda _name: TABLE)


@pytest.mark.parametrize("case", sorted(ANSWERED))
def test_a_literal_that_reads_as_its_columns_type_keeps_the_reference_rows(
    engine: tuple[str, Any], case: str
) -> None:
    name, opened = engine
    predicate = ANSWERED[case]
    values = VALUES[predicate.column]  # type: ignore[union-attr]
    for negated in (False, True):
        used = Not(operand=predicate) if negated else predicate
        expected = {
            key
            for key, value in enumerate(values)
            if value is not None and _holds(predicate, value) is not negated
        }
        for plan in literal_plans(used, ROWS):
            assert checked_keys(name, opened, plan, TABLE.schema) == expected, (
                name,
                case,
                negated,
            )


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_literal_of_another_kind_is_refused_alike(engine: tuple[str, Any], case: str) -> None:
    name, opened = engine
    predicate, message = REFUSED[case]
    assert_refused_alike(name, opened, predicate, ROWS, TABLE.schema, message)


def test_the_reference_tells_a_day_from_its_instant() -> None:
    """The date cases are not all answered by the date alone: a time past midnight and a
    time with an offset keep other rows than the comparison of their dates would."""
    for case in ("day = '2020-01-01T00:00:00+01:00'", "day = '2020-01-01T05:00'"):
        predicate = ANSWERED[case]
        day = datetime.datetime.fromisoformat(predicate.value).date()  # type: ignore[union-attr]
        by_date = {key for key, value in enumerate(DAY) if value == day}
        kept = {key for key, value in enumerate(DAY) if value and _holds(predicate, value)}
        assert by_date and kept != by_date, case
