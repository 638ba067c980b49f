"""A Float32 dot product of finite rows can be ``inf - inf`` (NaN), or overflow in a partial
sum, where the product itself is 0 or within Float32; every engine ranks such a row at its
float64 product rounded to Float32, as the exact sum of the Float32 products gives it
(fractions, apart from the library). LanceDB computes its products in Float32: it left the
``[-3e38, 3e38]`` row out from ``[1e20, 1e20, 0]`` (its NaN distance) and ranked
``[3e38, 3e38, -3e38]`` first from ``[1, 1, 2]``, at -inf, where its product is 0; so a dot
search whose products can overflow there is ranked on the client
(``lancedb._products_fit``).

PostgreSQL's pgvector sums ``<#>`` in Float32 too (pgvector ``src/vector.c``,
``VectorInnerProduct``): it gave that row NaN and ranked that one first at -inf. So it
refuses, naming the query vector, a dot search whose Float32 partial sums can overflow: the
column's largest norm (recorded at load and raised by each upsert) times the query's past
half of Float32's largest number, as :func:`_may_overflow` computes from the rows apart from
the library; a query within it (the small one) is ranked as every other engine ranks it.
turbopuffer has no dot metric."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.errors import PlanError, UnsupportedOnDialectError
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan
from tests.parity.engines import empty_engine

ENGINES = ["local", "sqlite", "duckdb", "lancedb", "postgres"]
WITHOUT_DOT = {"sqlite"}
"""sqlite-vec has cosine and l2 only: a dot search is refused by name there."""
FLOAT32_SUMS = {"postgres"}
"""Stores summing a dot product in Float32 that refuse a query whose sums may overflow."""


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


DOT_ROWS = np.array(
    [
        [1e20, 1e20, 0.0],
        [-3e38, 3e38, 0.0],  # inf - inf in Float32 from [1e20, 1e20, 0]: NaN; 0 exactly
        [1.0, 0.0, 0.0],
        [3e38, 3e38, -3e38],  # from [1, 1, 2], Float32's partial sum overflows; 0 exactly
        [0.5, 0.25, 0.0],
    ],
    dtype=np.float32,
)
DOT_QUERIES = [[1e20, 1e20, 0.0], [1.0, 1.0, 2.0], [1e-20, 0.0, 0.0]]


def _may_overflow(rows: np.ndarray, query: list[float]) -> bool:
    """Whether a Float32 partial sum of ``query``'s product with a row of ``rows`` may pass
    half of Float32's largest number: the largest row norm times the query's (Cauchy-Schwarz
    bounds every partial sum by it), in float64 of the Float32 components."""
    query64 = np.array(query, dtype=np.float32).astype(np.float64)
    largest = float(np.max(np.linalg.norm(rows.astype(np.float64), axis=1)))
    return largest * float(np.linalg.norm(query64)) > float(np.finfo(np.float32).max) / 2


def _exact_dot_reference(query: list[float]) -> list[tuple[int, float]]:
    """(key, distance) best first for :data:`DOT_ROWS`, keys from 1: ``-(a·q)`` summed
    exactly (fractions) from the Float32 components, then rounded to Float32 as IEEE 754
    rounds it (an infinity past the range), ties by key."""
    query32 = [float(value) for value in np.array(query, dtype=np.float32)]
    distances = []
    for row in DOT_ROWS.tolist():
        exact = -sum(Fraction(a) * Fraction(q) for a, q in zip(row, query32))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the overflow is the point
            distances.append(float(np.float32(float(exact))) + 0.0)
    return sorted(zip(range(1, len(distances) + 1), distances), key=lambda pair: pair[::-1])


@pytest.mark.parametrize("query", DOT_QUERIES, ids=["overflowing", "partial-sum", "small"])
def test_a_dot_product_float32_cannot_sum_is_ranked_at_its_exact_value(
    engine: Any, query: list[float]
) -> None:
    """Each row at its exact product rounded to Float32, ties by key, and every cut keeps
    the best rows (module docstring); the small query's products fit Float32 everywhere."""
    name = "dot_past_float32"
    engine.load_table(
        name,
        pa.table(
            {
                "id": list(range(1, len(DOT_ROWS) + 2)),
                "v": pa.array([*DOT_ROWS.tolist(), None], pa.list_(pa.float32(), 3)),
            }
        ),
        key_column="id",
        vector_metric="dot",
    )
    branch = NearestNeighborSearch(table=name, column="v", query_vector=query, metric="dot")
    plan = SearchPlan(source=branch, key_column="id", limit=len(DOT_ROWS) + 1)
    if engine.parity_name in WITHOUT_DOT:
        with pytest.raises(UnsupportedOnDialectError, match="the dot distance"):
            engine.search(plan)
        return
    if engine.parity_name in FLOAT32_SUMS and _may_overflow(DOT_ROWS, query):
        with pytest.raises(PlanError, match=r"query_vector .* sums the products in Float32"):
            engine.search(plan)
        with pytest.raises(PlanError, match="scale the query vector down"):
            engine.check_plan(plan)
        return
    answer = [(hit.key, hit.distance) for hit in engine.search(plan).hits]
    assert answer == _exact_dot_reference(query)
    kept = attrs.evolve(plan, filter=Comparison(column="id", operator="!=", value=1))
    assert [(hit.key, hit.distance) for hit in engine.search(kept).hits] == [
        pair for pair in _exact_dot_reference(query) if pair[0] != 1
    ]
    for bound in range(1, len(DOT_ROWS)):  # every cut keeps the best rows, ties by key
        cut = attrs.evolve(plan, limit=bound)
        assert [hit.key for hit in engine.search(cut).hits] == [
            key for key, _ in _exact_dot_reference(query)[:bound]
        ]
