"""A filter value of nanoseconds (pandas' ``Timestamp``, a ``datetime`` subclass) that is not a
whole microsecond is refused with a ``PlanError`` naming it, through every door that takes a
filter value, as timestamp text of more than six fraction digits is
(``tests/test_iso_text_forms.py``); one of whole microseconds filters as the plain
``datetime`` it equals.

Before: the plan kept the ``Timestamp`` and every engine but SQLite compared it at its
microsecond, silently: ``ns = Timestamp('2024-01-01 00:00:00.000000001')`` kept the row at
``00:00:00`` on the local engine, LanceDB and the Hotdata engine (whose columns hold the
nanosecond), and ``ms = Timestamp('… .250000001')`` kept the row at ``.250`` on DuckDB and
turbopuffer too.

The reference is pandas: a value is refused exactly when its ``nanosecond`` is not 0, and the
rows a whole-microsecond value keeps are those Python's own comparison of the row's instant
(pandas' nanoseconds) with the value's keeps.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Iterator
from typing import Any

import attrs
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import Bm25Search, PlanError, SearchPlan
from hotdata_retrieval.plan.filters import Between, Comparison, ContainsAny, InList
from hotdata_retrieval.sql import quote_literal
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

BASE = pd.Timestamp("2024-01-01 00:00:00")

DOORS = {
    "comparison": lambda value: Comparison(column="at", operator="=", value=value),
    "between": lambda value: Between(column="at", low=value, high=value),
    "in list": lambda value: InList(column="at", values=[BASE, value]),
    "contains any": lambda value: ContainsAny(column="at", values=[value]),
    "sql literal": lambda value: quote_literal(value),
}
"""Each door that takes a filter value, given one value."""


@settings(max_examples=200, deadline=None)
@given(
    offset=st.integers(-(10**12), 10**12),
    door=st.sampled_from(sorted(DOORS)),
    zone=st.sampled_from([None, "UTC", "Asia/Kolkata"]),
)
def test_a_value_finer_than_a_microsecond_is_refused_on_every_door(
    offset: int, door: str, zone: str | None
) -> None:
    value = BASE + pd.Timedelta(offset, "ns")
    if zone is not None:
        value = value.tz_localize(zone)
    if value.nanosecond == 0:
        DOORS[door](value)
        return
    with pytest.raises(PlanError, match="holds at most microseconds") as refused:
        DOORS[door](value)
    assert repr(value) in str(refused.value)
    assert refused.value.value == value


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened.parity_name = request.param
    yield opened
    opened.close()


@pytest.mark.parametrize("operator_text", ["=", "<", ">="])
def test_a_whole_microsecond_value_keeps_the_reference_rows(
    engine: Any, operator_text: str
) -> None:
    """A ``Timestamp`` of whole microseconds, compared with a column of whole milliseconds
    (kept by every store), keeps the rows Python's comparison keeps."""
    from hotdata_retrieval.engines.local import TableLoad

    name = fresh_table("whole_microsecond_values")
    moments = [BASE + pd.Timedelta(step, "ms") for step in range(0, 4000, 250)]
    data = pa.table(
        {
            "id": list(range(1, len(moments) + 1)),
            "body": ["w"] * len(moments),
            "at": pa.array(moments, pa.timestamp("ms")),
        }
    )
    if engine.parity_name == "hotdata":
        made = TableLoad(name=name, data=data, key_column="id", text_columns=["body"])
        engine.upsert_rows(name, data, create=made)
    else:
        engine.load_table(name, data, key_column="id", text_columns=["body"])
    value = BASE + pd.Timedelta(1_250_000, "ns")  # 1.25 ms: between two rows
    compare = {"=": operator.eq, "<": operator.lt, ">=": operator.ge}[operator_text]
    expected = {
        key
        for key, moment in zip(data.column("id").to_pylist(), moments, strict=True)
        if compare(moment.value, value.value)
    }
    plan = SearchPlan(
        source=Bm25Search(table=name, column="body", query_text="w"),
        limit=len(moments),
        filter=Comparison(column="at", operator=operator_text, value=value),
    )
    assert set(engine.search(plan).keys) == expected
    plain = Comparison(column="at", operator=operator_text, value=value.to_pydatetime())
    assert set(engine.search(attrs.evolve(plan, filter=plain)).keys) == expected


def test_the_reference_sees_the_nanoseconds() -> None:
    """The premise: pandas keeps a nanosecond a ``datetime`` cannot."""
    value = BASE + pd.Timedelta(1, "ns")
    assert value.nanosecond == 1
    assert isinstance(value, datetime.datetime)
