"""A float64 column compared with an integer literal keeps exactly the rows the
mathematically exact comparison keeps, on every engine path: the local engine's native paths
and its statement on DataFusion, SQLite, DuckDB, PostgreSQL, LanceDB and turbopuffer through
its fake API. DataFusion, DuckDB and PostgreSQL cast the literal to float64 (so 2**53 + 1
equals a stored 2.0**53 there) where SQLite compares exactly; the plan now says one thing
everywhere. Values and literals sit at 2**53 +- 1 and at both ends of 64 bits; NULL rows
follow SQL's three-valued logic (never kept, and ``NOT`` of an unknown comparison stays
unknown). The mirror image of test_integer_float_literals.py.

The reference is written here with exact rational arithmetic (:class:`fractions.Fraction`),
not with the library's own truth.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import SearchPlan
from hotdata_retrieval.engines.checks import ColumnFacts, arrow_value_kind, with_typed_values
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import literal_engine, literal_keys, literal_plans

FLOATS: list[float | None] = [
    None, 0.0, 1.0, -1.0, 3.0, 0.5, 2.5,
    2.0**53 - 1, 2.0**53, 2.0**53 + 2, 2.0**53 + 4, -(2.0**53), -(2.0**53) - 2,
    2.0**62, 2.0**63 - 1024, 2.0**63, 2.0**63 + 2048, -(2.0**63), -(2.0**63) - 2048,
    1e19, 1e300, -1e300, 3.0 * 2**60, math.inf, -math.inf, None,
]  # fmt: skip
"""The values of column ``f`` (float64 on every store), infinities included."""


def _floats(name: str) -> list[float | None]:
    """Column ``f``'s values on engine ``name``: turbopuffer's API is JSON, which has no
    infinity, so there its rows hold NULL."""
    if name != "turbopuffer":
        return FLOATS
    return [None if value is not None and math.isinf(value) else value for value in FLOATS]


LITERALS = [
    0, 3, -1, 2**53 - 1, 2**53, 2**53 + 1, 2**53 + 3, -(2**53) - 1, -(2**53) + 1,
    2**62, 2**62 + 1, 3 * 2**60, 3 * 2**60 + 1, 2**63 - 1, 2**63 - 1025, 2**63 - 1024,
    -(2**63), -(2**63) + 1,
]  # fmt: skip
"""Integers float64 holds exactly (0, 2**53, 2**62, 3 * 2**60, -(2**63)) and ones it does
not (2**53 + 1, 2**63 - 1, -(2**63) + 1), which round to a neighbour in float64."""

OPERATORS = ["=", "!=", "<", "<=", ">", ">="]
_PYTHON: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

Truth = Callable[[float | None], "bool | None"]


def _exact(value: float) -> Fraction | float:
    """A stored float as an exact rational; an infinity as itself (Python orders it with
    every integer)."""
    return value if math.isinf(value) else Fraction(value)


def _compare(op: str, literal: int) -> Truth:
    return lambda value: None if value is None else _PYTHON[op](_exact(value), literal)


def _between(low: int | float, high: int | float) -> Truth:
    return lambda value: None if value is None else Fraction(low) <= _exact(value) <= Fraction(high)


def _in(literals: list[int]) -> Truth:
    def truth(value: float | None) -> bool | None:
        if value is None:
            return None
        return any(_exact(value) == literal for literal in literals)

    return truth


def _not(truth: Truth) -> Truth:
    return lambda value: None if truth(value) is None else not truth(value)


def _cases() -> dict[str, tuple[Predicate, Truth]]:
    cases: dict[str, tuple[Predicate, Truth]] = {}
    for op in OPERATORS:
        for literal in LITERALS:
            predicate = Comparison(column="f", operator=op, value=literal)
            cases[f"{op} {literal}"] = (predicate, _compare(op, literal))
    ranges: list[tuple[int | float, int | float]] = [
        (2**53 + 1, 2**53 + 3), (2**53 + 1, 2**53 + 1), (-(2**53) - 1, 2**53 + 1),
        (0, 2**63 - 1), (-(2**63), 2**62 + 1), (-(2**63) + 1, 0), (2**63 - 1025, 2**63 - 1),
        (2.5, 2**53 + 1), (2**53 - 1, 1e19), (3, 2**53),
    ]  # fmt: skip
    for low, high in ranges:
        cases[f"between {low!r} and {high!r}"] = (
            Between(column="f", low=low, high=high),
            _between(low, high),
        )
    lists = [
        [2**53 + 1], [2**53 + 1, 2**53 + 3], [2**53 + 1, 2**53, 3], [2**63 - 1, -(2**63) + 1],
        [2**63 - 1, -(2**63), 0], [3 * 2**60, 3 * 2**60 + 1],
    ]  # fmt: skip
    for values in lists:
        cases[f"in {values!r}"] = (InList(column="f", values=values), _in(values))
    return cases


CASES = _cases()


def _table(name: str = "local") -> pa.Table:
    rows = len(FLOATS)
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "body": ["crash report"] * rows,
            "f": pa.array(_floats(name), pa.float64()),
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(rows)], pa.list_(pa.float32(), 2)
            ),
        }
    )


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "floatlit", _table)


def _plans(predicate: Predicate) -> list[SearchPlan]:
    return literal_plans(predicate, len(FLOATS))


def _keys(name: str, engine: Any, plan: SearchPlan) -> set[int]:
    return literal_keys(name, engine, plan, _table().schema)


def _reference(truth: Truth, name: str = "local") -> set[int]:
    return {key for key, value in enumerate(_floats(name)) if truth(value) is True}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_float64_column_keeps_the_exact_rows(engine: tuple[str, Any], case: str) -> None:
    name, opened = engine
    predicate, truth = CASES[case]
    for negated in (False, True):
        used = Not(operand=predicate) if negated else predicate
        expected = _reference(_not(truth) if negated else truth, name)
        for plan in _plans(used):
            assert _keys(name, opened, plan) == expected, (name, negated, case)


def test_the_reference_is_not_trivial() -> None:
    """The cases tell exact from float64 comparison: each named one keeps other rows than
    the comparison in float64 would, and the cases keep all, none and some rows."""

    def in_float(op: str, literal: int) -> set[int]:
        return {
            key
            for key, value in enumerate(FLOATS)
            if value is not None and _PYTHON[op](value, float(literal))
        }

    for op, literal in (
        ("=", 2**53 + 1),
        ("<=", 2**63 - 1),
        (">=", -(2**63) + 1),
        (">=", 2**53 + 1),
    ):
        assert _reference(_compare(op, literal)) != in_float(op, literal)
    sizes = [len(_reference(truth)) for _, truth in CASES.values()]
    assert 0 in sizes and len(FLOATS) - 2 in sizes
    assert sum(0 < size < len(FLOATS) - 2 for size in sizes) > len(sizes) // 2


@pytest.mark.parametrize("literal", [literal for literal in LITERALS if float(literal) == literal])
def test_an_integer_float64_holds_leaves_the_plan_as_it_is(literal: int) -> None:
    """An integer literal float64 holds exactly is the same comparison in float64: the
    filter is left as it is (compiled statements do not change)."""
    kinds = {"f": arrow_value_kind(pa.float64())}
    for predicate in (
        Comparison(column="f", operator="<", value=literal),
        Between(column="f", low=literal, high=2**62),
        InList(column="f", values=[literal, 0]),
    ):
        typed = with_typed_values(
            predicate, kinds, ColumnFacts(float64=frozenset("f")), numbers=False
        )
        assert typed is predicate
