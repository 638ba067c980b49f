"""A float literal of any digits compares with a float64 column as that float, on every
engine path: the local engine's native paths and its statement on DataFusion, SQLite, DuckDB,
PostgreSQL, LanceDB and turbopuffer through its fake API. The reference is Python's own
comparison of the floats.

Before: DuckDB read a float literal written without an exponent as a ``DECIMAL`` and
converted it to a double one unit in the last place off: ``0.09999999999999999`` (the float
just below 0.1) became 0.1, so ``f <= 0.09999999999999999`` kept a stored 0.1, and
``f = 0.09999999999999999`` missed the row holding it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans, literal_table

FLOATS: list[float | None] = [
    0.1,
    math.nextafter(0.1, 0.0),
    math.nextafter(0.1, 1.0),
    0.30000000000000004,
    None,
    1.2345678901234567e-05,
    -0.7777777777777778,
    123456.78901234567,
]
"""Column ``f``: floats whose shortest text has 16 or 17 significant digits."""
ROWS = len(FLOATS)

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _table(name: str = "local") -> pa.Table:
    return literal_table(ROWS, {"f": pa.array(FLOATS, pa.float64())})


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "float-digits", _table)


def _expected(predicate: Predicate, negated: bool) -> set[int]:
    def holds(cell: float) -> bool:
        if isinstance(predicate, Comparison):
            return _OPERATORS[predicate.operator.value](cell, predicate.value)
        if isinstance(predicate, Between):
            return bool(predicate.low <= cell <= predicate.high)
        assert isinstance(predicate, InList)
        return cell in predicate.values

    return {
        key for key, cell in enumerate(FLOATS) if cell is not None and holds(cell) is not negated
    }


def _assert_reference_rows(name: str, opened: Any, predicate: Predicate) -> None:
    for negated in (False, True):
        used = Not(operand=predicate) if negated else predicate
        kept = literal_keys(name, opened, literal_plans(used, ROWS)[0], _table().schema)
        assert kept == _expected(predicate, negated), (name, predicate, negated)


@pytest.mark.parametrize("literal", [value for value in FLOATS if value is not None], ids=repr)
def test_a_float_literal_of_seventeen_digits_is_that_float(
    engine: tuple[str, Any], literal: float
) -> None:
    name, opened = engine
    for symbol in _OPERATORS:
        _assert_reference_rows(name, opened, Comparison(column="f", operator=symbol, value=literal))
    _assert_reference_rows(name, opened, Between(column="f", low=literal, high=1e9))
    _assert_reference_rows(name, opened, InList(column="f", values=[literal, 2.5]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    literal=st.one_of(
        st.sampled_from([value for value in FLOATS if value is not None]).flatmap(
            lambda value: st.sampled_from(
                [value, math.nextafter(value, -math.inf), math.nextafter(value, math.inf)]
            )
        ),
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    ),
    symbol=st.sampled_from(list(_OPERATORS)),
)
def test_any_float_literal_is_that_float(
    engine: tuple[str, Any], literal: float, symbol: str
) -> None:
    """Whatever float a comparison holds — a stored one, its neighbours, any other — every
    path keeps the rows Python's comparison of the floats keeps."""
    name, opened = engine
    _assert_reference_rows(name, opened, Comparison(column="f", operator=symbol, value=literal))
