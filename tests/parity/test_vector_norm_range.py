"""Vectors far from unit length rank by cosine distance as NumPy's float64 arithmetic ranks
them, on every store, as long as each vector's squared norm is a normal Float32 number (about
1.2e-38 to 3.4e38; norms from about 1e-19 to 1.8e19). A distance function that multiplies
the two squared norms before its square root overflows or underflows Float32 for a row and a
query both far from unit length (DuckDB's ``array_cosine_distance`` on ``FLOAT[n]`` gave
1.0 for a row of norm 1.7e19 against a query of norm 2, and 2.0 or 0.0 for rows against a
query of norm 1e-18), where the cosine is defined and every other store gives it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from tests.parity.engines import STORE_ENGINES, loaded_engine

_RNG = np.random.default_rng(11)
_DIRECTIONS = _RNG.standard_normal((24, 4))
_DIRECTIONS /= np.linalg.norm(_DIRECTIONS, axis=1, keepdims=True)
_SCALES = np.array([1e-18, 1e18, 1.0, 3e-19, 1e19, 1e-10, 4e18, 2e-19] * 3)
ROWS = (_DIRECTIONS * _SCALES[:, None]).astype(np.float32)
"""Rows of norms 2e-19 to 1e19: float32 squared norms from 4e-38 to 1e38, all normal."""

QUERY = _RNG.standard_normal(4)


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    data = pa.table(
        {
            "id": list(range(len(ROWS))),
            "body": ["row"] * len(ROWS),
            "embedding": pa.array(list(ROWS), pa.list_(pa.float32(), 4)),
        }
    )
    yield from loaded_engine(request, tmp_path_factory, "norm_range", data)


def _reference(query: np.ndarray) -> list[tuple[int, float]]:
    """Each row's cosine distance to ``query`` (as Float32 reads it) in float64, nearest
    first, ties by key."""
    stored = ROWS.astype(np.float64)
    probe = query.astype(np.float32).astype(np.float64)
    cosine = (stored @ probe) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(probe))
    distances = 1.0 - cosine
    return sorted(enumerate(distances.tolist()), key=lambda pair: (pair[1], pair[0]))


def test_the_rows_are_within_the_range() -> None:
    squared = np.einsum("ij,ij->i", ROWS, ROWS, dtype=np.float32)
    assert np.all(squared >= np.finfo(np.float32).tiny)
    assert np.all(np.isfinite(squared))


@pytest.mark.parametrize("scale", [1e-18, 1.0, 1e18])
def test_rows_far_from_unit_length_rank_as_float64_cosine(engine: Any, scale: float) -> None:
    query = QUERY * scale
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="norm_range", column="embedding", query_vector=query.tolist()
        ),
        limit=len(ROWS),
    )
    hits = [(hit.key, hit.distance) for hit in engine.search(plan)]
    expected = _reference(query)
    assert [key for key, _ in hits] == [key for key, _ in expected]
    assert [distance for _, distance in hits] == pytest.approx(
        [distance for _, distance in expected], abs=1e-6
    )
