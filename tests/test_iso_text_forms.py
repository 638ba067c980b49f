"""Date and timestamp text is read in one documented set of ISO 8601 forms
(``hotdata_retrieval.plan.values.ISO_FORMS``) through every door that reads it: the filter
text's ``DATE '...'`` and ``TIMESTAMP '...'``, a plan document's ``{"date": ...}`` and
``{"timestamp": ...}``, and text compared with a date or timestamp column (checked and typed
by ``engines/checks.py``, as every engine that knows its columns does).

Before: each door read the text with ``datetime.fromisoformat``, which reads more forms from
Python 3.11 on (``20200101``, ``2020-W01-1``, ``2020-01-01T0506``, ``Z``, seven fraction
digits) and some only before (``2020-01-01x05:06``, ``2020-01-01T05``), so what a plan could
say depended on the Python running it. The reference here is
the table below, written from the documented forms, not from the library's output.
"""

from __future__ import annotations

import datetime

import pytest

from hotdata_retrieval import PlanError
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.engines.checks import ValueKind, check_filter_values, with_typed_values
from hotdata_retrieval.plan.document import plan_from_document
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.values import check_literal, parse_iso_date, parse_iso_timestamp

UTC = datetime.timezone.utc
PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2))
MINUS_FIVE_THIRTY = datetime.timezone(-datetime.timedelta(hours=5, minutes=30))

DATES = {
    "2020-01-01": datetime.date(2020, 1, 1),
    "0001-01-01": datetime.date(1, 1, 1),
    "9999-12-31": datetime.date(9999, 12, 31),
    "20200101": datetime.date(2020, 1, 1),  # Python 3.11+ reads the basic format, 3.10 not
    "2020-0101": None,  # half of each: 3.11+ reads it
    "2020-W01-1": None,  # an ISO week date: 3.11+ only
    "2020-001": None,  # an ordinal date
    "2020-1-1": None,
    "2020-02-30": None,
    " 2020-01-01": None,
    "2020-01-01T00:00": None,  # a date is a date
}
"""Date text and the date it names, ``None`` where it names none."""

TIMESTAMPS = {
    "2020-01-01": datetime.datetime(2020, 1, 1),
    "2020-01-01T05:06": datetime.datetime(2020, 1, 1, 5, 6),
    "2020-01-01 05:06:07": datetime.datetime(2020, 1, 1, 5, 6, 7),
    "2020-01-01T05:06:07.5": datetime.datetime(2020, 1, 1, 5, 6, 7, 500000),
    "2020-01-01T05:06:07.123": datetime.datetime(2020, 1, 1, 5, 6, 7, 123000),
    "2020-01-01T05:06:07.123456": datetime.datetime(2020, 1, 1, 5, 6, 7, 123456),
    "2020-01-01T05:06:07+02:00": datetime.datetime(2020, 1, 1, 5, 6, 7, tzinfo=PLUS_TWO),
    "2020-01-01T05:06-05:30": datetime.datetime(2020, 1, 1, 5, 6, tzinfo=MINUS_FIVE_THIRTY),
    "2020-01-01T05:06:07Z": datetime.datetime(2020, 1, 1, 5, 6, 7, tzinfo=UTC),
    "20200101": datetime.datetime(2020, 1, 1),  # 3.11+ only
    "20200101T05:06": datetime.datetime(2020, 1, 1, 5, 6),
    "20200101T050607": None,  # basic time: 3.11+ only
    "2020-01-01T05": None,  # hour alone: 3.10 reads it
    "2020-01-01T0506": None,  # 3.11+ only
    "2020-01-01T05:06:07.1234567": None,  # seven fraction digits: 3.11+ only
    "2020-01-01T05:06:07,5": None,  # a comma before the fraction: 3.11+ only
    "2020-01-01T05:06:07+0200": None,  # an offset without a colon: 3.11+ only
    "2020-01-01T05:06:07+02": None,  # an offset of hours alone: 3.11+ only
    "2020-01-01x05:06": None,  # any separator: 3.10 reads it
    "2020-W01-1T05:06": None,
    "2020-01-01T24:00": None,
    "2020-01-01T05:06+24:00": None,
}
"""Timestamp text and the datetime it names, ``None`` where it names none."""


@pytest.mark.parametrize("text", DATES)
def test_date_text_reads_as_the_documented_forms_on_every_door(text: str) -> None:
    expected = DATES[text]
    assert parse_iso_date(text) == expected
    document = {
        "branches": [{"kind": "text", "table": "t", "column": "body", "query_text": "x"}],
        "filter": {"column": "day", "op": "=", "value": {"date": text}},
    }
    if expected is None:
        with pytest.raises(PlanError, match="is not an ISO 8601 date"):
            parse_filter(f"day = DATE '{text}'")
        with pytest.raises(PlanError, match="is not an ISO 8601 date"):
            plan_from_document(document)
    else:
        wanted = Comparison(column="day", operator="=", value=expected)
        assert parse_filter(f"day = DATE '{text}'") == wanted
        assert plan_from_document(document).filter == wanted


def _utc(value: datetime.datetime) -> datetime.datetime:
    if value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


@pytest.mark.parametrize("text", TIMESTAMPS)
def test_timestamp_text_reads_as_the_documented_forms_on_every_door(text: str) -> None:
    expected = TIMESTAMPS[text]
    assert parse_iso_timestamp(text) == expected
    document = {
        "branches": [{"kind": "text", "table": "t", "column": "body", "query_text": "x"}],
        "filter": {"column": "at", "op": "<", "value": {"timestamp": text}},
    }
    compared = parse_filter(f"at < '{text}'")
    kinds = {"at": ValueKind.TEMPORAL}
    if expected is None:
        with pytest.raises(PlanError, match="is not an ISO 8601 timestamp"):
            parse_filter(f"at < TIMESTAMP '{text}'")
        with pytest.raises(PlanError, match="is not an ISO 8601 timestamp"):
            plan_from_document(document)
        with pytest.raises(PlanError, match="which is not an ISO 8601 date or timestamp"):
            check_filter_values(compared, kinds)
        return
    wanted = Comparison(column="at", operator="<", value=_utc(expected))
    assert parse_filter(f"at < TIMESTAMP '{text}'") == wanted
    assert plan_from_document(document).filter == wanted
    check_filter_values(compared, kinds)
    typed = with_typed_values(compared, kinds, numbers=False)
    if DATES.get(text) is not None:  # date text against a timestamp column is the date
        wanted = Comparison(column="at", operator="<", value=DATES[text])
    assert typed == wanted


@pytest.mark.parametrize(
    "moment",
    [
        datetime.datetime(1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=5))),
        datetime.datetime(9999, 12, 31, 23, tzinfo=datetime.timezone(-datetime.timedelta(hours=5))),
    ],
)
def test_an_aware_datetime_past_the_years_in_utc_is_a_plan_error(
    moment: datetime.datetime,
) -> None:
    """datetime(1, 1, 1, tzinfo=+05:00) is in the year 0 in UTC, which ``datetime`` cannot
    hold: Python raised OverflowError from the plan's constructor."""
    with pytest.raises(PlanError, match="outside the years 1 to 9999 once in UTC") as raised:
        check_literal(moment)
    assert raised.value.value == moment
    with pytest.raises(PlanError, match="outside the years 1 to 9999 once in UTC"):
        Comparison(column="at", operator=">", value=moment)
    text = moment.isoformat()
    with pytest.raises(PlanError, match="outside the years 1 to 9999 once in UTC"):
        parse_filter(f"at > TIMESTAMP '{text}'")


@pytest.mark.parametrize("fraction", ["1234567", "123456789", "0000000"])
def test_a_fraction_past_microseconds_is_refused_naming_the_limit_on_every_door(
    fraction: str,
) -> None:
    """A fraction of a second of more than six digits (nanoseconds, as other systems write
    them) is in none of the ISO forms; every door that reads timestamp text says so by the
    six-digit (microsecond) limit and the digits given, not only by the list of forms."""
    text = f"2020-01-01T05:06:07.{fraction}Z"
    limit = (
        rf"its fraction of a second has {len(fraction)} digits, and a timestamp holds at most "
        r"6 \(microseconds\)"
    )
    document = {
        "branches": [{"kind": "text", "table": "t", "column": "body", "query_text": "x"}],
        "filter": {"column": "at", "op": "<", "value": {"timestamp": text}},
    }
    with pytest.raises(PlanError, match=limit):
        parse_filter(f"at < TIMESTAMP '{text}'")
    with pytest.raises(PlanError, match=limit):
        plan_from_document(document)
    with pytest.raises(PlanError, match=limit):
        check_filter_values(parse_filter(f"at < '{text}'"), {"at": ValueKind.TEMPORAL})
