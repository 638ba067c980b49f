"""The distance kernels' row norms are NumPy's ``linalg.norm`` along rows, bit for bit: every
path that reports a distance (the UDFs, the exact re-score, the HNSW re-score) goes through
them, and the reference arithmetic must not move when the kernel is made cheaper."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hotdata_retrieval.engines.local.distance import DISTANCE_KERNELS, _row_norms, float64_query

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)
MATRICES = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 12), st.integers(0, 40)),
    elements=st.one_of(ANY_FLOAT, st.floats(-1e-160, 1e-160), st.floats(-1e160, 1e160)),
)


@given(MATRICES)
def test_row_norms_are_numpys_bit_for_bit(matrix: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        expected = np.linalg.norm(matrix, axis=1)
        found = _row_norms(matrix)
    assert found.dtype == np.float64
    np.testing.assert_array_equal(found.view(np.int64), expected.view(np.int64))


@given(MATRICES, st.integers(2, 9))
def test_a_broadcast_query_has_its_one_norm_on_every_row(matrix: np.ndarray, rows: int) -> None:
    query = np.broadcast_to(matrix[:1], (rows, matrix.shape[1]))
    with np.errstate(all="ignore"):
        expected = np.linalg.norm(np.ascontiguousarray(query), axis=1)
        found = _row_norms(query)
    np.testing.assert_array_equal(found.view(np.int64), expected.view(np.int64))


@given(MATRICES)
def test_cosine_distance_is_the_formula_over_numpys_norms(matrix: np.ndarray) -> None:
    query = np.broadcast_to(matrix[:1], matrix.shape)
    with np.errstate(all="ignore"):
        found = DISTANCE_KERNELS["cosine_distance"](matrix, query)
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(matrix[:1], axis=1)[0]
        expected = 1.0 - np.einsum("ij,ij->i", matrix, query) / norms
    expected[norms == 0] = 1.0
    np.testing.assert_array_equal(found.view(np.int64), expected.view(np.int64))


@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, width=64) | st.just(-0.0),
        min_size=1,
        max_size=64,
    )
)
def test_a_plans_query_vector_is_read_with_its_bits(values: list[float]) -> None:
    vector = float64_query(tuple(values))
    assert vector.dtype == np.float64
    assert vector.tobytes() == np.array(values, dtype=np.float64).tobytes()
