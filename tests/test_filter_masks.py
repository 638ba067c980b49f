"""The local engine's filter mask (``ArrowMask``) keeps the rows the compiled SQL keeps.

The reference is DataFusion itself running the compiled ``WHERE`` over the same table: the
native searches (the nearest-neighbour fast path, ``hybrid_search``) apply the mask where the
statement as written would apply the ``WHERE``, so both must keep the same rows. Floating-point
columns are the hard case: DataFusion orders NaN above every number (as PostgreSQL does), where
Arrow's IEEE 754 kernels make every ordering comparison with NaN false. (Negative zero is left
out: DataFusion itself disagrees with itself there — ``f = 0`` keeps ``-0.0`` where ``f IN (0,
7.0)`` on a float32 column does not.)
"""

from __future__ import annotations

import datetime
import itertools

import datafusion
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import (
    Comparison,
    InList,
    IsNull,
    NearestNeighborSearch,
    SearchPlan,
)
from hotdata_retrieval.compile import HOTDATA, Hotdata
from hotdata_retrieval.compile.compiler import LiteralBinder, PlanCompiler
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.masks import predicate_mask, true_rows
from hotdata_retrieval.plan.filters import Predicate

NAN = float("nan")
INFINITY = float("inf")
VALUES = [NAN, 0.0, 1.5, -2.0, 7.0, INFINITY, -INFINITY, None, NAN]
OPERATORS = ["=", "!=", "<", "<=", ">", ">="]
LITERALS = [0, 1.5, 5, -3.0, 1e308]


def _data() -> pa.Table:
    return pa.table(
        {
            "id": list(range(len(VALUES))),
            "x": pa.array(VALUES, pa.float64()),
            "f": pa.array(VALUES, pa.float32()),
        }
    )


def _kept_by_sql(data: pa.Table, predicate: Predicate) -> list[int]:
    """The ids DataFusion's ``WHERE`` keeps, the predicate compiled as the Hotdata dialect."""
    where = PlanCompiler(HOTDATA, LiteralBinder(HOTDATA)).predicate(predicate).sql(dialect=Hotdata)
    context = datafusion.SessionContext()
    context.register_record_batches("t", [data.to_batches()])
    rows = context.sql(f"SELECT id FROM t WHERE {where} ORDER BY id").to_arrow_table()
    return list(rows.column("id").to_pylist())


def _kept_by_mask(data: pa.Table, predicate: Predicate) -> list[int]:
    mask = predicate_mask(predicate, data).to_pylist()
    return [index for index, passes in enumerate(mask) if passes is True]


PREDICATES = [
    *(
        Comparison(column=column, operator=operator, value=value)
        for column in ("x", "f")
        for operator in OPERATORS
        for value in LITERALS
    ),
    *(
        InList(column=column, values=values, negated=negated)
        for column in ("x", "f")
        for values in ([0, 7.0], [1.5], [])
        for negated in (False, True)
    ),
    IsNull(column="x"),
    IsNull(column="f", negated=True),
    ~Comparison(column="x", operator=">", value=5),
    ~Comparison(column="f", operator="<=", value=5),
    Comparison(column="x", operator=">=", value=0) & IsNull(column="f", negated=True),
    Comparison(column="x", operator="<", value=0) | Comparison(column="f", operator=">", value=2),
]


@pytest.mark.parametrize("predicate", PREDICATES, ids=repr)
def test_the_mask_keeps_the_rows_the_sql_keeps(predicate: Predicate) -> None:
    data = _data()
    assert _kept_by_mask(data, predicate) == _kept_by_sql(data, predicate)


def test_a_filtered_nearest_search_keeps_nan_rows_as_its_sql_does() -> None:
    data = _data().append_column(
        "emb", pa.array([[1.0, float(i)] for i in range(len(VALUES))], pa.list_(pa.float32()))
    )
    with LocalEngine() as engine:
        engine.load_table("t", data)
        for predicate in (
            Comparison(column="x", operator=">", value=5),
            Comparison(column="f", operator=">=", value=-1),
        ):
            plan = SearchPlan(
                source=NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.5]),
                filter=predicate,
                limit=len(VALUES),
            )
            assert sorted(engine.search(plan).keys) == _kept_by_sql(data, predicate)


def _typed() -> pa.Table:
    """Columns a filter reaches with a value of another type: the SQL coerces the string
    literal to the column's type, or a numeric-text column to the literal's number type."""
    return pa.table(
        {
            "id": [0, 1, 2, 3],
            "day": pa.array(
                [
                    datetime.date(2024, 1, 1),
                    datetime.date(2024, 6, 1),
                    None,
                    datetime.date(2025, 1, 1),
                ]
            ),
            "at": pa.array(
                [
                    datetime.datetime(2024, 1, 1),
                    datetime.datetime(2024, 6, 1, 12),
                    datetime.datetime(2025, 1, 1),
                    None,
                ],
                pa.timestamp("us"),
            ),
            "n": [5, 7, None, 10],
            "digits": ["5", "10", None, "7"],
            "flag": [True, False, None, True],
        }
    )


TYPED_PREDICATES = [
    Comparison(column="day", operator=">", value="2024-03-01"),
    Comparison(column="day", operator="=", value="2024-01-01"),
    Comparison(column="at", operator=">=", value="2024-06-01 12:00:00"),
    Comparison(column="at", operator="<", value="2024-06-01T12:00:00"),
    Comparison(column="n", operator="=", value="5"),
    Comparison(column="n", operator=">", value="6"),
    Comparison(column="digits", operator=">", value=6),
    Comparison(column="digits", operator="=", value=10),
    InList(column="day", values=["2024-01-01", "2025-01-01"]),
    InList(column="n", values=["5", 7], negated=True),
    InList(column="digits", values=[5, 7]),
]


@pytest.mark.parametrize("predicate", TYPED_PREDICATES, ids=repr)
def test_a_value_of_another_type_is_read_as_the_sql_reads_it(predicate: Predicate) -> None:
    data = _typed()
    assert _kept_by_mask(data, predicate) == _kept_by_sql(data, predicate)


def test_a_comparison_the_sql_refuses_is_refused() -> None:
    predicate = Comparison(column="flag", operator="=", value="true")
    with pytest.raises(Exception, match="Cannot infer common argument type"):
        _kept_by_sql(_typed(), predicate)
    with pytest.raises(pa.ArrowNotImplementedError):
        predicate_mask(predicate, _typed())


def test_a_nearest_search_filtered_by_a_date_runs_as_its_sql_does() -> None:
    data = _typed().append_column(
        "emb", pa.array([[1.0, float(i)] for i in range(4)], pa.list_(pa.float32()))
    )
    predicate = Comparison(column="day", operator=">", value="2024-03-01")
    with LocalEngine() as engine:
        engine.load_table("t", data)
        plan = SearchPlan(
            source=NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.5]),
            filter=predicate,
        )
        assert sorted(engine.search(plan).keys) == _kept_by_sql(data, predicate) == [1, 3]


@given(
    values=st.lists(st.one_of(st.none(), st.booleans()), max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=3),
    start=st.integers(min_value=0, max_value=20),
)
def test_true_rows_is_where_the_array_is_true(
    values: list[bool | None], cuts: list[int], start: int
) -> None:
    """TRUE rows of any boolean array (NULLs, a sliced array's offset, several chunks) are
    those a row-by-row reading finds TRUE."""
    array = pa.array(values, type=pa.bool_()).slice(min(start, len(values)))
    bounds = sorted({0, len(array), *(cut for cut in cuts if cut < len(array))})
    chunked = pa.chunked_array(
        [array.slice(low, high - low) for low, high in itertools.pairwise(bounds)] or [array],
        type=pa.bool_(),
    )
    expected = [value is True for value in array.to_pylist()]
    for form in (array, chunked):
        found = true_rows(form)
        assert found.dtype == np.bool_ and found.tolist() == expected
