"""The engine's distance functions as vectorised NumPy scalar UDFs.

Semantics follow datafusion-vector-search-ext ``src/udf.rs`` (engine contract §1.4):

- ``l2_distance(a, b)`` is the *squared* Euclidean distance ``Σ (aᵢ - bᵢ)²`` (no square root),
- ``cosine_distance(a, b)`` is ``1 - a·b / (‖a‖ ‖b‖)``, and 1.0 when either norm is 0,
- ``negative_dot_product(a, b)`` is ``-(a·b)``,

all lower-is-nearer, all returning Float32; a NULL vector row gives a NULL distance, and a
query vector whose length differs from a row's raises an error naming both lengths:
``<udf>: query vector length (N) must match row i dimensionality (D)``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.errors import DimensionMismatchError as DimensionMismatchError
from hotdata_retrieval.errors import row_name
from hotdata_retrieval.plan.search import DistanceMetric


def vector_matrix(name: str, vectors: pa.Array, role: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a list array as a float64 matrix, plus a validity mask.

    Raises:
        DimensionMismatchError: rows of different lengths.
    """
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    valid = np.asarray(vectors.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    lengths = pc.list_value_length(vectors).to_numpy(zero_copy_only=False)
    present = lengths[valid] if valid.any() else np.array([], dtype=np.int64)
    if present.size and (present != present[0]).any():
        row = int(np.flatnonzero(valid)[np.argmax(present != present[0])])
        raise DimensionMismatchError(
            f"{name}: {role} {row_name(row)} has length {int(lengths[row])}, expected "
            f"{int(present[0])}"
        )
    dimension = int(present[0]) if present.size else 0
    flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    matrix = np.zeros((len(vectors), dimension), dtype=np.float64)
    if dimension:
        matrix[valid] = flat.reshape(-1, dimension)
    return matrix, valid


def query_distances(name: str, matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Distance function ``name`` from each row of ``matrix`` to one ``query`` vector.

    A matrix with no columns comes from a column that holds no vector at all (an empty table,
    or NULL in every row): every row is then without a distance (NaN), whatever the query.

    Raises:
        DimensionMismatchError: the query's length differs from the matrix's rows.
    """
    if matrix.shape[1] == 0:
        return np.full(matrix.shape[0], np.nan)
    if query.shape[0] != matrix.shape[1]:
        raise DimensionMismatchError(
            f"{name}: query vector length ({query.shape[0]}) must match column "
            f"dimensionality ({matrix.shape[1]})"
        )
    return DISTANCE_KERNELS[name](matrix, np.broadcast_to(query, matrix.shape))


def _pair(name: str, left: pa.Array, right: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    columns, column_valid = vector_matrix(name, left, "column")
    queries, query_valid = vector_matrix(name, right, "query")
    if queries.shape[0] == 1 and columns.shape[0] != 1:
        queries = np.broadcast_to(queries, (columns.shape[0], queries.shape[1]))
        query_valid = np.broadcast_to(query_valid, (columns.shape[0],))
    valid = column_valid & query_valid
    if valid.any() and columns.shape[1] != queries.shape[1]:
        row = int(np.flatnonzero(valid)[0])
        raise DimensionMismatchError(
            f"{name}: query vector length ({queries.shape[1]}) must match {row_name(row)}'s "
            f"dimensionality ({columns.shape[1]})"
        )
    return columns, queries, valid


def broadcast_row(vector: np.ndarray, rows: int) -> np.ndarray:
    """``vector`` (one-dimensional) as a read-only ``(rows, len(vector))`` matrix of that one
    row repeated, without a copy: the array ``numpy.broadcast_to`` makes (stride 0 between
    rows, so the kernels' arithmetic on it is the same to the bit), built without its
    argument handling, which costs more than a search's re-score of a few rows notices."""
    vector = np.ascontiguousarray(vector)
    view = np.ndarray(
        (rows, vector.shape[0]), dtype=vector.dtype, buffer=vector, strides=(0, vector.itemsize)
    )
    view.flags.writeable = False
    return view


def _row_norms(matrix: np.ndarray) -> np.ndarray | np.float64:
    """Each row's Euclidean norm; a matrix broadcast from one row (stride 0, the query of a
    search) has its one norm computed once and returned as a NumPy scalar, which multiplies
    an array of norms value for value as the array of it repeated would.

    The arithmetic of ``numpy.linalg.norm(matrix, axis=1)`` for a real matrix (the square
    root of ``numpy.add.reduce`` of the squares along each row: NumPy's ``norm``, its
    ``ord=None`` case), bit for bit, without its argument dispatch, which costs more than
    the arithmetic on the few rows a search re-scores."""
    if matrix.shape[0] > 1 and matrix.strides[0] == 0:
        first = matrix[:1]
        one: np.float64 = np.sqrt(np.add.reduce(first * first, axis=1))[0]
        return one
    norms: np.ndarray = np.sqrt(np.add.reduce(matrix * matrix, axis=1))
    return norms


def _cosine(columns: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Rows ``columns`` are stored vectors, never a broadcast row (their norms are an array);
    ``queries`` may be one (:func:`broadcast_row`)."""
    dots = np.einsum("ij,ij->i", columns, queries)
    norms = np.asarray(_row_norms(columns) * _row_norms(queries))
    with np.errstate(divide="ignore", invalid="ignore"):
        distances = 1.0 - dots / norms
    distances[norms == 0] = 1.0
    return np.asarray(distances, dtype=np.float64)


NORM_CHUNK_ROWS = 8192
"""Rows widened to float64 at a time by :func:`float64_row_norms` (at most 8192 x d x 8
bytes of scratch, 24 MiB at 384 dimensions)."""


def float64_row_norms(matrix: np.ndarray) -> np.ndarray:
    """Each row of a float32 ``(n, d)`` matrix's float64 norm, bit for bit the one
    :func:`_cosine` computes for it when re-scoring it (its float64 copy, the square root of
    ``numpy.add.reduce`` of its squares: each row is reduced alone, so neither the rows
    beside it nor the chunk it is widened in move a bit), widened a chunk of rows at a time.
    ``(n,)`` float64: 8 bytes a row."""
    norms = np.empty(matrix.shape[0], dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for start in range(0, matrix.shape[0], NORM_CHUNK_ROWS):
            rows = matrix[start : start + NORM_CHUNK_ROWS].astype(np.float64)
            norms[start : start + rows.shape[0]] = np.sqrt(np.add.reduce(rows * rows, axis=1))
    return norms


def cosine_of_normed(
    rows: np.ndarray, query: np.ndarray, row_norms: np.ndarray, query_norm: np.float64
) -> np.ndarray:
    """:func:`_cosine` of float64 ``rows`` and one float64 ``query`` (``(d,)``), bit for bit,
    from the rows' norms and the query's computed beforehand (:func:`float64_row_norms`,
    :func:`query_norm`); for norms all finite and non-zero (the caller checks), where
    :func:`_cosine` needs no zero-norm fix-up. ``(n,)`` float64."""
    # the one query row against each row: the same sum-of-products loop as _cosine's
    # broadcast query row (a contiguous row, a stride-0 output), without the view
    dots = np.einsum("ij,j->i", rows, query)
    distances: np.ndarray = 1.0 - dots / (row_norms * query_norm)
    return distances


_PACKERS: dict[int, struct.Struct] = {}
"""A native float64 packer per query length (``struct.Struct("<n>d")``), made once each."""


def float64_query(values: tuple[float, ...]) -> np.ndarray:
    """A plan's query vector, a tuple of Python floats (``check_query_vector``), as a
    read-only float64 array, each component's bits as they are (-0.0 stays -0.0).

    ``struct`` copies each float's double into one buffer, about a third of the
    instructions of ``numpy.fromiter`` (which boxes and unboxes each value through NumPy's
    scalar assignment) and a quarter of ``numpy.asarray``'s (which also discovers each
    value's type). ``(n,)`` float64.

    Raises:
        struct.error: a value that is not a number (a plan never holds one).

    >>> float64_query((1.0, -0.0, 2.5)).tolist()
    [1.0, -0.0, 2.5]
    """
    packer = _PACKERS.get(len(values))
    if packer is None:
        packer = _PACKERS.setdefault(len(values), struct.Struct(f"{len(values)}d"))
    return np.frombuffer(packer.pack(*values), dtype=np.float64)


def query_norm(query: np.ndarray) -> np.float64:
    """A float64 query vector's norm as :func:`_cosine` computes a broadcast query's (the
    square root of ``numpy.add.reduce`` of its squares)."""
    one: np.float64 = np.sqrt(np.add.reduce(query * query))
    return one


def _l2(columns: np.ndarray, queries: np.ndarray) -> np.ndarray:
    difference = columns - queries
    return np.asarray(np.einsum("ij,ij->i", difference, difference), dtype=np.float64)


def _negative_dot(columns: np.ndarray, queries: np.ndarray) -> np.ndarray:
    return np.asarray(-np.einsum("ij,ij->i", columns, queries), dtype=np.float64)


_KERNELS: dict[DistanceMetric, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    DistanceMetric.COSINE: _cosine,
    DistanceMetric.L2: _l2,
    DistanceMetric.DOT: _negative_dot,
}

DISTANCE_KERNELS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    HOTDATA.distance_function(metric): kernel for metric, kernel in _KERNELS.items()
}
"""Kernel per SQL function name (the dialect's, ``HOTDATA.distance_functions``): ``(n, d)``
column rows and ``(n, d)`` queries → ``(n,)``."""

COSINE_DISTANCE = HOTDATA.distance_function(DistanceMetric.COSINE)
"""The cosine distance function's name: what engine-embedded vector columns are searched by."""


def _dense(vectors: pa.Array) -> np.ndarray | None:
    """Rows of a NULL-free list array of one length as a float64 ``(n, d)`` matrix (``None``
    when the rows differ in length)."""
    lengths = pc.list_value_length(vectors)
    bounds = pc.min_max(lengths).as_py()
    if bounds["min"] != bounds["max"]:
        return None
    dimension = int(bounds["min"] or 0)
    flat = pc.list_flatten(vectors).to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float64).reshape(len(vectors), dimension)


def distance_udf_arrays(name: str, left: pa.Array, right: pa.Array) -> pa.Array:
    """Evaluate distance function ``name`` row-wise; Float32 out, NULL where either is NULL.

    The common case — no NULLs and one query vector repeated on every row, as DataFusion
    passes an ``ARRAY[...]`` literal — skips the NULL masks and broadcasts the one query row
    instead of copying it per row; the arithmetic is the general path's, so results are
    bit-identical either way.

    Raises:
        DimensionMismatchError: the vectors' lengths differ (the message names both).
    """
    if isinstance(left, pa.ChunkedArray):
        left = left.combine_chunks()
    if isinstance(right, pa.ChunkedArray):
        right = right.combine_chunks()
    if left.null_count == 0 and right.null_count == 0 and len(left) and len(right):
        columns = _dense(left)
        queries = _dense(right)
        if (
            columns is not None
            and queries is not None
            and columns.shape[1] == queries.shape[1]
            and (queries.shape[0] == 1 or bool((queries == queries[0]).all()))
        ):
            query = np.broadcast_to(queries[0], columns.shape)
            result = DISTANCE_KERNELS[name](columns, query)
            return pa.array(float32_distances(result), type=pa.float32())
    columns, queries, valid = _pair(name, left, right)
    distances = np.zeros(columns.shape[0], dtype=np.float64)
    if valid.any():
        distances[valid] = DISTANCE_KERNELS[name](columns[valid], queries[valid])
    return pa.array(float32_distances(distances), type=pa.float32(), mask=~valid)


def float32_distances(distances: np.ndarray) -> np.ndarray:
    """Float64 distances as the functions' Float32 results: a distance beyond Float32's range
    (vectors of enormous magnitude) is an infinity there, without a warning, and a negative
    distance too small for Float32 is 0.0, not -0.0 (SQL orders -0.0 before 0.0, so two rows
    at distance 0 would otherwise rank apart, as they do not in NumPy's ordering). Every path
    that reports a distance rounds through here, so they agree bit for bit."""
    with np.errstate(over="ignore"):
        rounded: np.ndarray = distances.astype(np.float32) + np.float32(0.0)
    return rounded
