"""The unfiltered cosine screen of the exact nearest-neighbour scan (one product, reciprocal
norms, a sampled threshold): the rows it re-scores hold every row of the answer, so the
answer is a float64 scan's, ties at the cut included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.engines.local import nearest
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex, _nearest_positions

TOLERANCE = 1e-4


def _expected_positions(values: np.ndarray, width: int, tolerance: float) -> list[int]:
    """Every position within ``tolerance`` of the ``width``-th largest value, by a full sort."""
    if width >= values.size:
        return list(range(values.size))
    boundary = float(np.sort(values)[::-1][width - 1])
    return [
        i for i, value in enumerate(values.tolist()) if value >= np.float32(boundary - tolerance)
    ]


def _arrays() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(5)
    size = 20_000
    misleading = rng.standard_normal(size).astype(np.float32)
    misleading[:: size // nearest.SCREEN_SAMPLE] += 10  # the sample sees only the best rows
    clustered = np.full(size, 0.5, dtype=np.float32)
    clustered[rng.choice(size, 300, replace=False)] = 0.5 + rng.random(300).astype(np.float32)
    dense = np.zeros(size, dtype=np.float32)  # many values within the tolerance of the cut
    dense[rng.choice(size, 400, replace=False)] = 1 + np.arange(400, dtype=np.float32) * 1e-6
    return [
        ("dense within the tolerance", dense),
        ("normal", rng.standard_normal(size).astype(np.float32)),
        ("ties", rng.integers(0, 50, size).astype(np.float32) / 50),
        ("misleading sample", misleading),
        ("equal values near the cut", clustered),
        ("small", rng.standard_normal(300).astype(np.float32)),
    ]


@pytest.mark.parametrize(("name", "values"), _arrays(), ids=[name for name, _ in _arrays()])
@pytest.mark.parametrize("width", [1, 10, 200, 299, 5_000])
def test_the_positions_are_those_within_the_tolerance_of_the_cut(
    name: str, values: np.ndarray, width: int
) -> None:
    found = _nearest_positions(values.copy(), width, TOLERANCE)
    assert found.tolist() == _expected_positions(values, width, TOLERANCE)


def _float64_ranking(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    rows = matrix.astype(np.float64)
    query64 = query.astype(np.float32).astype(np.float64)
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(query64)
    with np.errstate(divide="ignore", invalid="ignore"):
        distances: np.ndarray = 1 - rows @ query64 / norms
    return distances


@pytest.mark.parametrize("with_ties", [False, True])
@pytest.mark.parametrize("k", [1, 10, 200])
def test_an_unfiltered_cosine_search_is_the_float64_ranking(with_ties: bool, k: int) -> None:
    """A column larger than the screen's sample, with repeated vectors (rows tied at every
    cut): the rows, their order (Float32 distance, then rowid) and their distances are a
    float64 scan's, every row tied with the k-th among them when asked."""
    rng = np.random.default_rng(k)
    base = rng.standard_normal((4_000, 6)).astype(np.float32)
    matrix = np.concatenate([base, base[:3_000], base[:2_000] * np.float32(2.0)])
    query = rng.standard_normal(6)
    index = VectorColumnIndex(pa.array(matrix.tolist(), type=pa.list_(pa.float32())))
    distances = _float64_ranking(matrix, query)
    rounded = distances.astype(np.float32)
    order = np.lexsort((np.arange(matrix.shape[0]), rounded))
    expected = order[:k]
    if with_ties:
        expected = order[rounded[order] <= rounded[order[k - 1]]]
    rowids, found = index.nearest("cosine_distance", query, k, with_ties=with_ties)
    assert index._cosine_reciprocals is not False  # the screen of this test ran
    assert rowids.tolist() == expected.tolist()
    assert np.allclose(found, distances[expected], rtol=1e-12, atol=1e-12)


def test_a_column_with_a_zero_vector_is_screened_as_before() -> None:
    """A zero vector (distance 1 to every query) is a row the reciprocal norms cannot hold:
    the column is screened by the general screen, and the answer is still a float64 scan's."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((9_000, 5)).astype(np.float32)
    matrix[17] = 0
    query = rng.standard_normal(5)
    index = VectorColumnIndex(pa.array(matrix.tolist(), type=pa.list_(pa.float32())))
    distances = _float64_ranking(matrix, query)
    distances[17] = 1.0
    order = np.lexsort((np.arange(matrix.shape[0]), distances.astype(np.float32)))
    rowids, _ = index.nearest("cosine_distance", query, 50)
    assert index._cosine_reciprocals is False
    assert rowids.tolist() == order[:50].tolist()


def _extreme_columns() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(8)
    size = 9_000
    mixed = rng.standard_normal((size, 4)) * 10.0 ** rng.integers(-15, 15, (size, 1))
    direction = rng.standard_normal(4)
    parallel = direction + rng.standard_normal((size, 4)) * 1e-7  # within float32's rounding
    repeated = rng.standard_normal((40, 4))[rng.integers(0, 40, size)]
    return [
        ("norms near 1e-18", rng.standard_normal((size, 4)) * 1e-18),
        ("norms near 1e18", rng.standard_normal((size, 4)) * 1e18),
        ("norms from 1e-15 to 1e15", mixed),
        ("nearly parallel rows", parallel),
        ("repeated rows at two scales", np.concatenate([repeated, repeated[:100] * 1e6])),
    ]


@pytest.mark.parametrize(
    ("name", "rows"), _extreme_columns(), ids=[name for name, _ in _extreme_columns()]
)
@pytest.mark.parametrize("query_scale", [1e-18, 1.0, 1e18])
@pytest.mark.parametrize("k", [1, 37, 9_000, 9_105])
def test_the_column_screen_holds_at_float32s_extremes(
    name: str, rows: np.ndarray, query_scale: float, k: int
) -> None:
    """Rows and queries of norms near either end of what the screen ranks, rows tied or
    within float32 rounding of each other, k up to and past the rows: the screen's rows and
    their distances, to the bit, are those of the distance kernel over every row, ordered by
    (Float32 distance, rowid)."""
    matrix = rows.astype(np.float32)
    query = np.random.default_rng(k).standard_normal(4) * query_scale
    index = VectorColumnIndex(pa.array(list(matrix), type=pa.list_(pa.float32())))
    stored = matrix.astype(np.float64)
    queries = np.tile(query.astype(np.float32).astype(np.float64), (stored.shape[0], 1))
    distances = nearest.DISTANCE_KERNELS["cosine_distance"](stored, queries)
    order = np.lexsort((np.arange(stored.shape[0]), distances.astype(np.float32)))[:k]
    for _ in range(2):  # the reciprocal norms computed, then read again
        rowids, found = index.nearest("cosine_distance", query, k)
        assert isinstance(index._cosine_reciprocals, np.ndarray)  # the column screen ran
        assert rowids.tolist() == order.tolist()
        assert found.tolist() == distances[order].tolist()
