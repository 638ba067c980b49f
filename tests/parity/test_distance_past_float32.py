"""A distance past Float32's range is an infinity of its sign on every engine that computes
it: the rows ``[1e20, 0]`` and ``[1, 0.5]`` are within Float32, but the first one's squared
l2 distance from ``[1, 0.25]`` (1e40) and its dot product with ``[1e20, 0.25]`` are not.
DuckDB computes its distances in float64 and casts them to ``FLOAT``, which it refused
("Conversion Error") where the other engines' Float32 distance is infinite.

The reference is NumPy: the float64 distance of the Float32 vectors, rounded to Float32 as
IEEE 754 rounds it (``numpy.float32``, an infinity past the range); a row without a vector
is never a hit. PostgreSQL refuses the dot query: pgvector sums ``<#>`` in Float32, so a
query whose norm times the column's largest norm is past half of Float32's largest number
(here 1e40) could be ranked wrong (``tests/parity/test_dot_products_past_float32.py``), and
is refused by name. turbopuffer is not here:
its answers are JSON, which holds no infinity, so it refuses the rows and queries of an l2
table that could make such a distance (``tests/test_turbopuffer_engine.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.errors import PlanError, UnsupportedOnDialectError
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan
from tests.parity.engines import empty_engine

ROWS = np.array([[1e20, 0.0], [1.0, 0.5]], dtype=np.float32)
QUERIES = {"l2": [1.0, 0.25], "dot": [1e20, 0.25]}
ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb"]
WITHOUT_DOT = {"sqlite"}
"""sqlite-vec has cosine and l2 only: a dot search is refused by name there."""
FLOAT32_DOT_SUMS = {"postgres"}
"""Stores summing a dot product in Float32, which refuse a query whose sums may overflow."""


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _reference(metric: str) -> list[tuple[int, float]]:
    """(key, Float32 distance) best first, keys 1 and 2 for :data:`ROWS`."""
    query = np.array(QUERIES[metric], dtype=np.float32).astype(np.float64)
    rows = ROWS.astype(np.float64)
    exact = ((rows - query) ** 2).sum(axis=1) if metric == "l2" else -(rows @ query)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflow is the point
        rounded = [float(np.float32(value)) for value in exact]
    return sorted(zip([1, 2], rounded), key=lambda pair: (pair[1], pair[0]))


@pytest.mark.parametrize("metric", ["l2", "dot"])
def test_a_distance_past_float32_is_an_infinity_on_every_engine(engine: Any, metric: str) -> None:
    name = f"past_float32_{metric}"
    engine.load_table(
        name,
        pa.table(
            {"id": [1, 2, 3], "v": pa.array([*ROWS.tolist(), None], pa.list_(pa.float32(), 2))}
        ),
        key_column="id",
        vector_metric=metric,
    )
    branch = NearestNeighborSearch(
        table=name, column="v", query_vector=QUERIES[metric], metric=metric
    )
    plan = SearchPlan(source=branch, key_column="id", limit=3)  # row 3 has no vector: no hit
    if metric == "dot" and engine.parity_name in WITHOUT_DOT:
        with pytest.raises(UnsupportedOnDialectError, match="the dot distance"):
            engine.search(plan)
        return
    if metric == "dot" and engine.parity_name in FLOAT32_DOT_SUMS:
        query = np.array(QUERIES[metric], dtype=np.float32).astype(np.float64)
        largest = float(np.linalg.norm(ROWS.astype(np.float64), axis=1).max())
        assert largest * float(np.linalg.norm(query)) > float(np.finfo(np.float32).max) / 2
        with pytest.raises(PlanError, match=r"query_vector .* sums the products in Float32"):
            engine.search(plan)
        return
    result = engine.search(plan)
    answer = [(hit.key, hit.distance) for hit in result.hits]
    expected = _reference(metric)
    assert any(np.isinf(distance) for _, distance in expected)  # the case is the overflow
    assert answer == expected
