"""A table's vector columns are read back as one float32 matrix the search uses in place, not
a copy beside the table's chunks; any other column (NULL rows, mixed lengths, another type)
is read back as it was written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hotdata_retrieval.engines.local import tables
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex


def _write(tmp_path: Path, table: pa.Table) -> Path:
    path = tmp_path / "data.parquet"
    pq.write_table(table, path, row_group_size=10)
    return path


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "_VECTOR_BATCH_ROWS", 7)  # several batches of 45 rows


@pytest.mark.parametrize("kind", [pa.list_(pa.float32()), pa.large_list(pa.float32())])
def test_uniform_vectors_are_one_matrix_the_search_views(tmp_path: Path, kind: pa.DataType) -> None:
    matrix = np.random.default_rng(3).standard_normal((45, 5)).astype(np.float32)
    written = pa.table(
        {"id": np.arange(45), "emb": pa.array(matrix.tolist(), kind), "body": ["x"] * 45}
    )
    read = tables.read_rows(_write(tmp_path, written))
    assert read.equals(written)
    assert read.column("emb").num_chunks == 1 and read.schema == written.schema
    index = VectorColumnIndex(read.column("emb"))
    assert not index.matrix.flags.owndata  # a view of the table's column, not a copy
    assert np.array_equal(index.matrix, matrix)


@pytest.mark.parametrize(
    "rows",
    [
        [[1.0, 2.0]] * 20 + [None] + [[3.0, 4.0]] * 4,  # a NULL row in a later batch
        [[1.0, 2.0]] * 20 + [[1.0, 2.0, 3.0]] + [[3.0, 4.0]] * 4,  # another length
        [None] * 3 + [[1.0, 2.0]] * 10,  # NULL rows first
        [[]] * 12,  # empty vectors
    ],
)
def test_other_vector_columns_read_back_as_written(tmp_path: Path, rows: list) -> None:
    written = pa.table({"id": np.arange(len(rows)), "emb": pa.array(rows, pa.list_(pa.float32()))})
    read = tables.read_rows(_write(tmp_path, written))
    assert read.column("emb").to_pylist() == rows
    assert read.schema == written.schema


def test_a_table_without_vectors_reads_as_parquet_does(tmp_path: Path) -> None:
    written = pa.table({"id": [1, 2], "scores": pa.array([[1.0], [2.0]], pa.list_(pa.float64()))})
    assert tables.read_rows(_write(tmp_path, written)).equals(written)


def _naive_matrix(path: Path, column: str) -> np.ndarray:
    """The column as ``pyarrow.parquet.read_table`` reads it, row by row into float32, a NULL
    row all zeros: the reference the search matrix must equal."""
    rows = pq.read_table(path).column(column).to_pylist()
    width = max((len(row) for row in rows if row is not None), default=0)
    return np.array([row or [0.0] * width for row in rows], dtype=np.float32).reshape(-1, width)


def test_batches_are_sized_by_bytes_from_the_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tables, "_VECTOR_BATCH_ROWS", 1_000)
    monkeypatch.setattr(tables, "_VECTOR_BATCH_BYTES", 3 * 6 * 4)  # three 6-d float32 rows
    matrix = np.random.default_rng(5).standard_normal((50, 6)).astype(np.float32)
    written = pa.table(
        {"id": np.arange(50), "emb": pa.array(matrix.tolist(), pa.list_(pa.float32()))}
    )
    path = _write(tmp_path, written)
    parquet = pq.ParquetFile(path)
    assert tables._vector_batch_rows(parquet, parquet.schema_arrow.field("emb")) == 3
    read = tables.read_rows(path)
    assert read.equals(written) and read.column("emb").num_chunks == 1
    assert np.array_equal(VectorColumnIndex(read.column("emb")).matrix, _naive_matrix(path, "emb"))


@pytest.mark.parametrize("element", [pa.float16(), pa.float32(), pa.float64()])
@pytest.mark.parametrize("null_row", [None, 0, 17, 44])
def test_the_search_matrix_equals_the_column_read_naively(
    tmp_path: Path, element: pa.DataType, null_row: int | None
) -> None:
    """Across row groups of 10 and batches of 7 rows, with or without a NULL vector, and for
    half, single and double precision values (converted to float32 as NumPy converts them)."""
    values = np.random.default_rng(11).standard_normal((45, 4)) * 100
    rows: list = [list(row) for row in values.astype(element.to_pandas_dtype())]
    if null_row is not None:
        rows[null_row] = None
    path = _write(
        tmp_path, pa.table({"id": np.arange(45), "emb": pa.array(rows, pa.list_(element))})
    )
    read = tables.read_rows(path)
    assert read.column("emb").to_pylist() == pq.read_table(path).column("emb").to_pylist()
    index = VectorColumnIndex(read.column("emb"))
    assert index.matrix.dtype == np.float32
    assert np.array_equal(index.matrix, _naive_matrix(path, "emb"))
    expected_present = [row for row in range(45) if row != null_row]
    assert index.present.tolist() == expected_present
