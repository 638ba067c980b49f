"""A number compared with a decimal column keeps, on every engine path that holds one (the
local engine's native search and its statement on DataFusion, LanceDB), the rows a
plain-Python reference keeps, under one rule: a float means the decimal its shortest text
writes (``0.1`` is 0.1), a ``decimal.Decimal`` and number text mean exactly the number they
write; the reference compares ``decimal.Decimal(repr(float))`` (or the Decimal, or
``Decimal(text)``) with each stored ``decimal.Decimal``, a NULL row never kept, under ``NOT``
either. The SQL stores and turbopuffer hold no decimal column and refuse one at load, naming
it.

Before: the local engine failed ``price < 1e30`` on a ``decimal(10, 2)`` column with
DataFusion's cast error (``Cannot cast to Decimal128(30, 15). Overflowing on 1e30``), and
number text in exponent notation (``price < '1e3'``, which the rule accepts: "Cannot cast
string '1e3' to value of Decimal128(38, 10) type"), and
LanceDB failed every float and every integer past the column's range with its own error
(``could not convert to literal of type 'Decimal128(10, 2)'``). A number past the
column's digits now keeps every row or none (NULL for a NULL row), an integral float is the
integer.

Then LanceDB refused every float with a fraction (``price >= 1.59``) and text, which the
local engine answered; the local engine read a float against a decimal column as
``Decimal(30, 15)`` and text as ``Decimal(38, 10)``, so ``price = '1.5000000000000000000001'``
(and the filter text ``price = 1.5000000000000000000001``, read as the float 1.5) kept 1.50,
and on a ``decimal(38, 20)`` column ``fine = 0.12345678901234568`` kept nothing. Every such
number is now written as an exact decimal on the column's grid (docs/plans.md, "Filter values
and column types").
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from hotdata_retrieval.routing import read_filter
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
FINE = [
    decimal.Decimal("0.12345678901234568"),
    decimal.Decimal("0.1"),
    decimal.Decimal("0.00000000000000000001"),
    None,
    decimal.Decimal("-0.3"),
]
"""``decimal(38, 20)``: more digits after the point than DataFusion's ``Decimal(30, 15)``."""
COLUMNS = {"price": PRICE, "fine": FINE}


def _table(name: str = "local") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": ["crash report"] * ROWS,
            "price": pa.array(PRICE, pa.decimal128(10, 2)),
            "fine": pa.array(FINE, pa.decimal128(38, 20)),
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
FRACTIONS: dict[str, Any] = {
    "1.5": 1.5,
    "2.25": 2.25,
    "-2.5": -2.5,
    "text 1.5e0": "1.5e0",
    "0.1": 0.1,
    "1.59": 1.59,
    "2.2": 2.2,
    "-2.999": -2.999,
    "1.505": 1.505,
    "99999999.995": 99999999.995,
    "text 1.5000000000000000000001": "1.5000000000000000000001",
    "text 2.250": "2.250",
    "decimal 1.5000000000000000000001": decimal.Decimal("1.5000000000000000000001"),
    "decimal 1.4999999999999999999999": decimal.Decimal("1.4999999999999999999999"),
    "decimal 2.25": decimal.Decimal("2.25"),
    "decimal -3.001": decimal.Decimal("-3.001"),
    "decimal 1E+2": decimal.Decimal("1E+2"),
}
"""Numbers with a fraction (a float by its shortest text, text and a ``decimal.Decimal``
exactly): on the column's grid, between two of its values, with more digits than a float or
``Decimal(38, 10)`` holds."""
FINE_LITERALS: dict[str, Any] = {
    "0.12345678901234568": 0.12345678901234568,
    "0.1": 0.1,
    "1e-20": 1e-20,
    "5e-21": 5e-21,
    "text 0.00000000000000000001": "0.00000000000000000001",
    "decimal 0.123456789012345680": decimal.Decimal("0.123456789012345680"),
    "decimal 0.1234567890123456800001": decimal.Decimal("0.1234567890123456800001"),
    "-0.3": -0.3,
}
"""Numbers against the ``decimal(38, 20)`` column."""

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _number(value: Any) -> decimal.Decimal:
    """A literal as the reference reads it: a float as the decimal its shortest text writes,
    number text and any other number as the decimal it writes."""
    return decimal.Decimal(repr(value) if isinstance(value, float) else value)


def _holds(predicate: Predicate, cell: decimal.Decimal) -> bool:
    if isinstance(predicate, Comparison):
        return _OPERATORS[predicate.operator.value](cell, _number(predicate.value))
    if isinstance(predicate, Between):
        return _number(predicate.low) <= cell <= _number(predicate.high)  # type: ignore[no-any-return]
    assert isinstance(predicate, InList)
    return any(cell == _number(value) for value in predicate.values)


def _predicates(literal: Any, column: str = "price") -> list[Predicate]:
    return [
        *(Comparison(column=column, operator=op, value=literal) for op in _OPERATORS),
        Between(column=column, low=literal, high=3),
        Between(column=column, low=-4, high=literal),
        InList(column=column, values=[literal, -3]),
        InList(column=column, values=[literal]),
    ]


def _expected(predicate: Predicate, negated: bool) -> set[int]:
    column = predicate.column  # type: ignore[attr-defined]
    return {
        key
        for key, value in enumerate(COLUMNS[column])
        if value is not None and _holds(predicate, value) is not negated
    }


def _assert_reference_rows(name: str, opened: Any, predicate: Predicate) -> None:
    for negated in (False, True):
        used = Not(operand=predicate) if negated else predicate
        for plan in literal_plans(used, ROWS):
            kept = literal_keys(name, opened, plan, _table().schema)
            assert kept == _expected(predicate, negated), (name, predicate, negated)


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
def test_a_fraction_keeps_the_rows_of_the_decimal_it_writes(
    engine: tuple[str, Any], literal: str
) -> None:
    name, opened = engine
    for predicate in _predicates(FRACTIONS[literal]):
        _assert_reference_rows(name, opened, predicate)


@pytest.mark.parametrize("literal", list(FINE_LITERALS))
def test_a_number_past_fifteen_decimal_digits_is_compared_exactly(
    engine: tuple[str, Any], literal: str
) -> None:
    name, opened = engine
    for predicate in _predicates(FINE_LITERALS[literal], column="fine"):
        _assert_reference_rows(name, opened, predicate)


@pytest.mark.parametrize(
    "text",
    [
        "price = 1.5000000000000000000001",
        "price >= 1.59",
        "price > 0.1",
        "price IN (2.25, 1.505)",
        "price = CAST('1.50' AS DECIMAL(3, 2))",
        "fine BETWEEN 0.1 AND 0.12345678901234568",
    ],
)
def test_filter_text_keeps_the_rows_of_the_decimal_it_writes(
    engine: tuple[str, Any], text: str
) -> None:
    """Filter text writes a number with more digits than a float holds as the exact decimal:
    read as a float, ``1.5000000000000000000001`` was 1.5. The reference reads the numbers
    as written (``decimal.Decimal`` of their text)."""
    name, opened = engine
    predicate = read_filter(text)
    column, rest = text.split(" ", 1)
    rows = COLUMNS[column]
    if " BETWEEN " in text:
        low, high = (decimal.Decimal(part) for part in rest.split(" ", 1)[1].split(" AND "))
        wanted = {key for key, cell in enumerate(rows) if cell is not None and low <= cell <= high}
    elif " IN " in text:
        values = [decimal.Decimal(part) for part in rest[4:-1].split(", ")]
        wanted = {key for key, cell in enumerate(rows) if cell is not None and cell in values}
    else:
        symbol, number = rest.split(" ", 1)
        if number.startswith("CAST"):
            number = number.split("'")[1]
        compare = _OPERATORS[symbol]
        wanted = {
            key
            for key, cell in enumerate(rows)
            if cell is not None and compare(cell, decimal.Decimal(number))
        }
    for plan in literal_plans(predicate, ROWS):
        assert literal_keys(name, opened, plan, _table().schema) == wanted, (name, text)


_SCALED = st.builds(
    lambda units, scale: decimal.Decimal(units).scaleb(-scale),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.integers(min_value=0, max_value=5),
)
"""Decimals of up to five digits after the point, around the stored prices."""
_LITERALS = st.one_of(
    _SCALED,
    _SCALED.map(str),
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False),
    st.sampled_from([decimal.Decimal(str(value)) for value in PRICE if value is not None]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    literal=_LITERALS,
    symbol=st.sampled_from(list(_OPERATORS)),
    negated=st.booleans(),
)
def test_any_number_keeps_the_rows_of_the_decimal_it_writes(
    engine: tuple[str, Any], literal: Any, symbol: str, negated: bool
) -> None:
    """Whatever number a comparison holds — a decimal of any scale, its text, a float — every
    path keeps the rows the exact comparison of the decimal it writes keeps."""
    name, opened = engine
    predicate = Comparison(column="price", operator=symbol, value=literal)
    used = Not(operand=predicate) if negated else predicate
    plan = literal_plans(used, ROWS)[0]
    assert literal_keys(name, opened, plan, _table().schema) == _expected(predicate, negated)


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
