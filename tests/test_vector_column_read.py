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
