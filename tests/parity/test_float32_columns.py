"""A number compared with a float32 column is rounded to float32 first, on every store: a
column loaded from Python's ``2.1`` as float32 matches ``f = 2.1``, and ``=``, ``<``, ``<=``,
``>``, ``IN`` and ``BETWEEN`` against ``2.1`` and ``0.1`` keep exactly the rows NumPy keeps
comparing ``numpy.float32`` values. turbopuffer has one floating-point attribute type, 64-bit,
so a float32 column loaded there is 64-bit and compared in float64, as NumPy compares the
widened values with ``numpy.float64`` literals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.engines.checks import float32_value
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Predicate
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

VALUES = [2.1, 0.1, 2.1000001, 2.0999997, 0.10000001, 1.5, None, 2.0999999046325684]
"""Python floats stored as float32: 2.1 and 0.1 and their float32 neighbours (2.1000001 and
2.0999997 are the next float32 up and down from 2.1, 0.10000001 the next up from 0.1), a
value between, NULL, and the float64 that is float32 2.1 exactly."""


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    data = bodies_table(["disk report"] * len(VALUES), f=pa.array(VALUES, pa.float32()))
    yield from loaded_engine(request, tmp_path_factory, "float32_rows", data)


def _stored() -> list[np.float32 | None]:
    return [None if value is None else np.float32(value) for value in VALUES]


FLOAT64_STORES = frozenset({"turbopuffer"})
"""Stores with no 32-bit float type, which hold a float32 column in float64."""


def _reference(test: str, *literals: float, precision: Any = np.float32) -> set[int]:
    """The keys NumPy keeps, every stored value and literal taken as ``precision``
    (``numpy.float32``, or ``numpy.float64`` for a store of :data:`FLOAT64_STORES`; NULL
    kept out)."""
    wanted = [precision(literal) for literal in literals]
    keep = set()
    for key, stored in enumerate(_stored()):
        if stored is None:
            continue
        value = precision(stored)
        if test == "=":
            holds = value == wanted[0]
        elif test == "<":
            holds = value < wanted[0]
        elif test == "<=":
            holds = value <= wanted[0]
        elif test == ">":
            holds = value > wanted[0]
        elif test == "in":
            holds = any(value == each for each in wanted)
        else:
            holds = wanted[0] <= value <= wanted[1]
        if holds:
            keep.add(key)
    return keep


CASES: dict[str, tuple[Predicate, str, tuple[float, ...]]] = {
    "f = 2.1": (Comparison(column="f", operator="=", value=2.1), "=", (2.1,)),
    "f = 0.1": (Comparison(column="f", operator="=", value=0.1), "=", (0.1,)),
    "f < 2.1": (Comparison(column="f", operator="<", value=2.1), "<", (2.1,)),
    "f <= 2.1": (Comparison(column="f", operator="<=", value=2.1), "<=", (2.1,)),
    "f > 2.1": (Comparison(column="f", operator=">", value=2.1), ">", (2.1,)),
    "f <= 0.1": (Comparison(column="f", operator="<=", value=0.1), "<=", (0.1,)),
    "f > 0.1": (Comparison(column="f", operator=">", value=0.1), ">", (0.1,)),
    "f IN (2.1, 0.1)": (InList(column="f", values=[2.1, 0.1]), "in", (2.1, 0.1)),
    "f BETWEEN 0.1 AND 2.1": (Between(column="f", low=0.1, high=2.1), "between", (0.1, 2.1)),
    "f = '2.1' (text)": (Comparison(column="f", operator="=", value="2.1"), "=", (2.1,)),
    "f = 2 (an integer)": (Comparison(column="f", operator="=", value=2), "=", (2.0,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_float32_column_compares_in_float32(engine: Any, name: str) -> None:
    predicate, test, literals = CASES[name]
    plan = engine.plan_search(
        SearchRequest(table="float32_rows", query="disk", mode="text", filter=predicate, limit=50)
    )
    precision = np.float64 if engine.parity_name in FLOAT64_STORES else np.float32
    assert set(engine.search(plan).keys) == _reference(test, *literals, precision=precision)


def test_the_reference_keeps_the_row_loaded_from_2_1() -> None:
    """The NumPy reference and the rounding agree that ``f = 2.1`` holds for the stored 2.1
    (so the cases above can fail where a store compares in float64)."""
    assert {0, 7} == _reference("=", 2.1)
    assert set() == _reference("=", 2.1, precision=np.float64)
    assert float32_value(2.1) != 2.1 and float32_value(2.1) == float(np.float32(2.1))
