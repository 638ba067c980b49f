"""A datetime literal finer than a timestamp column of seconds or milliseconds keeps the rows
Python's comparison of the instants keeps on the engines whose statements run on DataFusion:
the local engine (one table on its native path, a union of tables on its statement) and the
Hotdata engine (its fake API's SQL runs on DataFusion, as the service's does), one table or
a union of tables whose column has one unit in each.

Before: DataFusion casts such a literal to the column's unit, cutting it, so on a column of
milliseconds ``ms = '….250001'`` kept the row at ``.250``, ``ms >= '….250001'`` kept it too
and ``ms < '….250001'`` left it out, on every Hotdata search and on every local union; the
literal is now folded onto the column's grid first (``coarse_timestamp_predicate``), as for
LanceDB and turbopuffer.

The reference is plain Python: each row's ``datetime`` compared with the literal.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.engines.local import TableLoad
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Predicate
from tests.document_engines import fresh_table, open_document_engine

BASE = datetime.datetime(2024, 1, 1)
UNITS = {"ms": 250_000, "s": 1_000_000}
"""Each column's unit and the microseconds between its rows' values."""
ROWS = 6

LITERALS = [
    BASE + datetime.timedelta(microseconds=offset)
    for offset in (250_000, 250_001, 249_999, 1_000_001, 999_999, 2_000_000, -1)
]
"""On a value, just after one, just before one, and before every value."""

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _values(unit: str) -> list[datetime.datetime]:
    return [BASE + datetime.timedelta(microseconds=UNITS[unit] * row) for row in range(ROWS)]


def _table(first_key: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(first_key, first_key + ROWS)),
            "body": ["w"] * ROWS,
            "ms": pa.array(_values("ms"), pa.timestamp("ms")),
            "s": pa.array(_values("s"), pa.timestamp("s", "UTC")),
        }
    )


@pytest.fixture(scope="module", params=["local", "hotdata"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, list[str]]]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    names = [fresh_table("coarse_literals"), fresh_table("coarse_literals")]
    for first_key, name in zip((1, 101), names, strict=True):
        data = _table(first_key)
        made = TableLoad(name=name, data=data, key_column="id", text_columns=["body"])
        opened.upsert_rows(name, data, create=made)
    yield opened, names
    opened.close()


def _reference(tables: int, truth: Callable[[datetime.datetime], bool], unit: str) -> set[int]:
    keys = set()
    for first_key in (1, 101)[:tables]:
        for row, value in enumerate(_values(unit)):
            if truth(value):
                keys.add(first_key + row)
    return keys


def _keys(engine: tuple[Any, list[str]], tables: int, predicate: Predicate) -> set[int]:
    opened, names = engine
    table: Any = names[0] if tables == 1 else names
    plan = SearchPlan(
        source=Bm25Search(table=table, column="body", query_text="w"),
        limit=ROWS * 2,
        filter=predicate,
    )
    return set(opened.search(plan).keys)


@pytest.mark.parametrize("tables", [1, 2], ids=["one table", "a union"])
@pytest.mark.parametrize("unit", sorted(UNITS))
@pytest.mark.parametrize("operator_text", sorted(OPERATORS))
def test_a_finer_literal_keeps_the_reference_rows(
    engine: tuple[Any, list[str]], tables: int, unit: str, operator_text: str
) -> None:
    compare = OPERATORS[operator_text]
    for literal in LITERALS:
        predicate = Comparison(column=unit, operator=operator_text, value=literal)
        expected = _reference(tables, lambda value, x=literal: compare(value, x), unit)
        assert _keys(engine, tables, predicate) == expected, literal


@pytest.mark.parametrize("tables", [1, 2], ids=["one table", "a union"])
def test_between_and_in_list_keep_the_reference_rows(
    engine: tuple[Any, list[str]], tables: int
) -> None:
    low, high = LITERALS[1], LITERALS[3]  # .250001 and 1.000001
    between = Between(column="ms", low=low, high=high)
    assert _keys(engine, tables, between) == _reference(
        tables, lambda value: low <= value <= high, "ms"
    )
    listed = InList(column="ms", values=[LITERALS[0], LITERALS[1], LITERALS[4]])
    assert _keys(engine, tables, listed) == _reference(
        tables, lambda value: value in listed.values, "ms"
    )
