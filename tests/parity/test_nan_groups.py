"""Groups by a float column holding NaN, -0.0 and 0.0, on every engine path: the rows whose
value is NaN form one group, and -0.0 and 0.0 one group, as SQL's ``PARTITION BY`` compares
them on the SQL engines; NULL is left out. The library's grouping (the local engine's native
path, LanceDB, turbopuffer) keyed a dict by the value, and NaN equals nothing, not even
itself, so each NaN row could start a group of its own."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan, to_sql
from hotdata_retrieval.engines.results import executed_plan, search_result
from tests.parity.engines import open_engine

NAN = float("nan")
VALUES = [NAN, 2.0, NAN, -0.0, 0.0, 1.5, None, NAN, -0.0, 1.5, 2.0, NAN]

ENGINES = ["local", "local statement", "duckdb", "postgres", "lancedb"]
"""The engine paths that hold NaN in a float column (SQLite and turbopuffer store it as
NULL)."""


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp("nan-groups"), request)
    data = pa.table(
        {
            "id": list(range(len(VALUES))),
            "body": ["row"] * len(VALUES),
            "g": pa.array(VALUES, pa.float64()),
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(len(VALUES))], pa.list_(pa.float32(), 2)
            ),
        }
    )
    opened.load_table("nan_groups", data, key_column="id", text_columns=["body"])
    opened.parity_name = name
    yield opened
    opened.close()


def _reference(limit: int, offset: int, size: int) -> list[int]:
    """Rows by distance to [1, 0] (row i at angle atan(i): key order), grouped by value with
    all NaNs one group and -0.0 equal to 0.0, NULL left out."""
    groups: dict[Any, list[int]] = {}
    for key, value in enumerate(VALUES):
        if value is None:
            continue
        kept = groups.setdefault("nan" if math.isnan(value) else value, [])
        if len(kept) < size:
            kept.append(key)
    return [key for kept in list(groups.values())[offset : offset + limit] for key in kept]


@pytest.mark.parametrize(("limit", "offset", "size"), [(5, 0, 5), (2, 1, 2), (1, 0, 3)])
def test_nan_rows_form_one_group(engine: Any, limit: int, offset: int, size: int) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="nan_groups", column="embedding", query_vector=[1.0, 0.0]
        ),
        limit=limit,
        offset=offset,
        group_by="g",
        group_size=size,
    )
    if engine.parity_name == "local statement":  # the grouped statement on DataFusion
        executed = executed_plan(plan)
        statement = to_sql(executed)
        keys = search_result(plan, executed, engine.sql(statement).to_pylist(), statement).keys
    else:
        keys = engine.search(plan).keys
    assert keys == _reference(limit, offset, size)
