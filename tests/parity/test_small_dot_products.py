"""Dot products too small for ``1 - a·b`` in Float32 rank as NumPy's float64 products on
every engine that has the dot metric. LanceDB's dot distance is ``1 - a·b`` in Float32, so a
product of -1e-30 came back as 0 (and rows whose products differ by less than about 6e-8
tied, then ranked by key), where the local engine, DuckDB and PostgreSQL answer -1e-30.
SQLite (sqlite-vec) and turbopuffer have no dot metric and refuse the plan, naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan, UnsupportedOnDialectError
from tests.parity.engines import STORE_ENGINES, empty_engine

ROWS = [
    [1e-30, 1e-30],
    [1.0, 0.5],
    [-1e-30, 0.0],
    [0.0, 1e-30],
    [3e-9, 0.0],
    [-2e-9, 5.0],
    [1e-8, 0.0],
    [0.0, 0.0],
]
"""Products with ``[1, 0]`` of 1e-30, 1, -1e-30, 0, 3e-9, -2e-9, 1e-8 and 0."""

QUERIES = [[1.0, 0.0], [-1.0, 0.0], [1e-3, -1e-25]]

NO_DOT = {"sqlite", "turbopuffer"}


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    data = pa.table(
        {
            "id": list(range(len(ROWS))),
            "body": ["row"] * len(ROWS),
            "embedding": pa.array(ROWS, pa.list_(pa.float32(), 2)),
        }
    )
    opened = empty_engine(request, tmp_path_factory)
    engine = next(opened)
    # turbopuffer's namespace has one metric, and no dot: it is loaded by l2
    metric = "l2" if request.param == "turbopuffer" else "dot"
    engine.load_table(
        "small_dots", data, key_column="id", text_columns=["body"], vector_metric=metric
    )
    yield engine
    next(opened, None)


def _reference(query: list[float]) -> list[tuple[int, float]]:
    """Each row's ``-(a·b)`` in float64 from its Float32 components, reported as a Float32
    (every engine's distance type: a product of 1e-55 is 0 there), nearest first, ties by
    key."""
    stored = np.array(ROWS, dtype=np.float32).astype(np.float64)
    distances = (-(stored @ np.array(query, dtype=np.float64))).astype(np.float32)
    return sorted(enumerate(distances.tolist()), key=lambda pair: (pair[1], pair[0]))


@pytest.mark.parametrize("query", QUERIES)
def test_small_products_rank_as_float64_products(engine: Any, query: list[float]) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="small_dots", column="embedding", query_vector=query, metric="dot"
        ),
        limit=len(ROWS),
    )
    if engine.parity_name in NO_DOT:
        with pytest.raises(UnsupportedOnDialectError, match="dot"):
            engine.search(plan)
        return
    hits = [(hit.key, hit.distance) for hit in engine.search(plan)]
    expected = _reference(query)
    assert [key for key, _ in hits] == [key for key, _ in expected]
    for (_, found), (_, wanted) in zip(hits, expected):
        assert found == pytest.approx(wanted, rel=1e-6, abs=0.0)
