"""A ``decimal.Decimal`` literal is exact against every number column, on every engine path:
the local engine's native paths and its statement on DataFusion, SQLite, DuckDB, PostgreSQL,
LanceDB and turbopuffer through its fake API. Against an integer column it is compared as a
float is (``n < Decimal('2.5')`` is ``n <= 2``); against a float64 column as an integer
float64 does not hold is (``f = Decimal('0.1')`` holds for no float, since no float64 is 0.1
exactly; ``f < Decimal('0.1')`` keeps the float 0.1, which is 0.1000000000000000055…, out);
against a float32 column rounded to float32 first, as every number is (the column's own
precision; turbopuffer holds such a column as float64). Before, the plan refused every
``decimal.Decimal``.

The reference is Python's own comparison of ``decimal.Decimal`` with ``int`` and ``float``,
which is exact, and NumPy's float32 for the float32 column.
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans, literal_table

D = decimal.Decimal
INTEGERS = [0, 2, 3, -3, None, 2**53 + 1, 9]
FLOATS = [0.0, 0.1, 2.5, -3.0, None, 2.0**53, 0.30000000000000004]
FLOAT32S = [0.0, float(np.float32(0.1)), 2.5, -3.0, None, 1.5, 0.25]
ROWS = len(INTEGERS)
COLUMNS = {"n": INTEGERS, "f": FLOATS, "g": FLOAT32S}


def _table(name: str = "local") -> pa.Table:
    return literal_table(
        ROWS,
        {
            "n": pa.array(INTEGERS, pa.int64()),
            "f": pa.array(FLOATS, pa.float64()),
            "g": pa.array(FLOAT32S, pa.float32()),
        },
    )


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "decimal-numbers", _table)


LITERALS = [
    D("2"),
    D("2.5"),
    D("2.50"),
    D("-2.999"),
    D("0.1"),
    D("0.1000000000000000055511151231257827021181583404541015625"[:40]),
    D("0.30000000000000004"),
    D("9007199254740993"),
    D("9007199254740992.5"),
    D("1E+20"),
    D("-0.00"),
]
"""Decimals on and between integers, ones float64 holds exactly (2.5, -0.00) and ones it
does not (0.1, 0.30000000000000004, 2**53 + 1), past 64 bits (1E+20)."""

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _literal_for(float32: bool, value: D) -> Any:
    """The literal as the rule reads it: exact, but rounded to float32 against a float32
    column."""
    return float(np.float32(float(value))) if float32 else value


def _holds(predicate: Predicate, cell: Any, float32: bool) -> bool:
    if isinstance(predicate, Comparison):
        return _OPERATORS[predicate.operator.value](cell, _literal_for(float32, predicate.value))
    if isinstance(predicate, Between):
        low, high = _literal_for(float32, predicate.low), _literal_for(float32, predicate.high)
        return bool(low <= cell <= high)
    assert isinstance(predicate, InList)
    return any(cell == _literal_for(float32, value) for value in predicate.values)


def _expected(name: str, predicate: Predicate, negated: bool) -> set[int]:
    """The reference rows on engine path ``name``: turbopuffer has one floating-point
    attribute type, 64-bit, so there column ``g`` is a float64 column (docs/plans.md)."""
    column = predicate.column  # type: ignore[attr-defined]
    float32 = column == "g" and name != "turbopuffer"
    return {
        key
        for key, cell in enumerate(COLUMNS[column])
        if cell is not None and _holds(predicate, cell, float32) is not negated
    }


@pytest.mark.parametrize("column", list(COLUMNS))
@pytest.mark.parametrize("literal", LITERALS, ids=str)
def test_a_decimal_literal_is_exact_against_a_number_column(
    engine: tuple[str, Any], column: str, literal: D
) -> None:
    name, opened = engine
    predicates: list[Predicate] = [
        *(Comparison(column=column, operator=symbol, value=literal) for symbol in _OPERATORS),
        Between(column=column, low=literal, high=D("9.5")),
        Between(column=column, low=D("-3.5"), high=literal),
        InList(column=column, values=[literal, D("-3")]),
    ]
    for predicate in predicates:
        for negated in (False, True):
            used = Not(operand=predicate) if negated else predicate
            plan = literal_plans(used, ROWS)[0]
            kept = literal_keys(name, opened, plan, _table().schema)
            assert kept == _expected(name, predicate, negated), (name, predicate, negated)
