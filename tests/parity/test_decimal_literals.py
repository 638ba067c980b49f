"""A number compared with a decimal column keeps, on every engine path that holds one (the
local engine's native search and its statement on DataFusion, LanceDB), the rows a
plain-Python reference keeps (``decimal.Decimal`` compared with the number exactly, a NULL
row never kept, under ``NOT`` either), or is refused with the one ``PlanError`` naming the
column and the value; the SQL stores and turbopuffer hold no decimal column and refuse one
at load, naming it.

Before: the local engine failed ``price < 1e30`` on a ``decimal(10, 2)`` column with
DataFusion's cast error (``Cannot cast to Decimal128(30, 15). Overflowing on 1e30``), and
number text in exponent notation (``price < '1e3'``, which the rule accepts: "Cannot cast
string '1e3' to value of Decimal128(38, 10) type"), and
LanceDB failed every float and every integer past the column's range with its own error
(``could not convert to literal of type 'Decimal128(10, 2)'``). A number past the
column's digits now keeps every row or none (NULL for a NULL row), an integral float is the
integer, and LanceDB, which compares a decimal column with no float, refuses a fraction with
a ``PlanError`` (docs/plans.md, "Filter values and column types").
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import PlanError
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import open_engine
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans

ROWS = 5
PRICE = [
    decimal.Decimal("1.50"),
    decimal.Decimal("2.25"),
    None,
    decimal.Decimal("-3.00"),
    decimal.Decimal("99999999.99"),
]
"""``decimal(10, 2)``: eight digits before the point."""


def _table(name: str = "local") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": ["crash report"] * ROWS,
            "price": pa.array(PRICE, pa.decimal128(10, 2)),
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(ROWS)], pa.list_(pa.float32(), 2)
            ),
        }
    )


DECIMAL_PATHS = ["local", "local statement", "lancedb"]


@pytest.fixture(scope="module", params=DECIMAL_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "decimal", _table)


WHOLE: dict[str, Any] = {
    "1e30": 1e30,
    "-1e30": -1e30,
    "1e300": 1e300,
    "10**8": 10**8,
    "-(10**8)": -(10**8),
    "10**11": 10**11,
    "2.0": 2.0,
    "-3": -3,
    "99999999.0": 99999999.0,
    "text 1e30": "1e30",
    "text -1e30": "-1e30",
    "text 1e3": "1e3",
}
"""Numbers every path answers: past the column's digits, or whole."""
FRACTIONS: dict[str, Any] = {"1.5": 1.5, "2.25": 2.25, "-2.5": -2.5, "text 1.5e0": "1.5e0"}
"""Numbers with a fraction, exact in binary (so ``Decimal`` compares with them as written):
the local engine answers, LanceDB refuses."""

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _number(value: Any) -> Any:
    """A literal as the reference reads it: number text as the decimal it spells."""
    return decimal.Decimal(value) if isinstance(value, str) else value


def _holds(predicate: Predicate, cell: decimal.Decimal) -> bool:
    if isinstance(predicate, Comparison):
        return _OPERATORS[predicate.operator.value](cell, _number(predicate.value))
    if isinstance(predicate, Between):
        return _number(predicate.low) <= cell <= _number(predicate.high)  # type: ignore[no-any-return]
    assert isinstance(predicate, InList)
    return any(cell == _number(value) for value in predicate.values)


def _predicates(literal: Any) -> list[Predicate]:
    return [
        *(Comparison(column="price", operator=op, value=literal) for op in _OPERATORS),
        Between(column="price", low=literal, high=3),
        Between(column="price", low=-4, high=literal),
        InList(column="price", values=[literal, -3]),
        InList(column="price", values=[literal]),
    ]


def _expected(predicate: Predicate, negated: bool) -> set[int]:
    return {
        key
        for key, value in enumerate(PRICE)
        if value is not None and _holds(predicate, value) is not negated
    }


@pytest.mark.parametrize("literal", list(WHOLE))
def test_a_number_past_the_digits_or_whole_keeps_the_reference_rows(
    engine: tuple[str, Any], literal: str
) -> None:
    name, opened = engine
    for predicate in _predicates(WHOLE[literal]):
        for negated in (False, True):
            used = Not(operand=predicate) if negated else predicate
            plan = literal_plans(used, ROWS)[0]
            kept = literal_keys(name, opened, plan, _table().schema)
            assert kept == _expected(predicate, negated), (name, predicate, negated)


@pytest.mark.parametrize("literal", list(FRACTIONS))
def test_a_fraction_is_answered_or_refused_naming_it(engine: tuple[str, Any], literal: str) -> None:
    name, opened = engine
    value = FRACTIONS[literal]
    for predicate in _predicates(value)[:6]:
        for negated in (False, True):
            used = Not(operand=predicate) if negated else predicate
            plan = literal_plans(used, ROWS)[0]
            if name == "lancedb":
                with pytest.raises(PlanError, match="column 'price', which holds decimal") as e:
                    literal_keys(name, opened, plan, _table().schema)
                assert e.value.field == "filter"
                assert e.value.value == float(value)
                continue
            kept = literal_keys(name, opened, plan, _table().schema)
            assert kept == _expected(predicate, negated), (name, predicate, negated)


@pytest.mark.parametrize("name", ["sqlite", "duckdb", "postgres", "turbopuffer"])
def test_a_store_without_decimals_refuses_the_column_at_load(
    name: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    opened = open_engine(name, tmp_path, request)
    try:
        with pytest.raises(EngineError, match=r"column 'price'.*decimal128\(10, 2\)"):
            opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
    finally:
        opened.close()
