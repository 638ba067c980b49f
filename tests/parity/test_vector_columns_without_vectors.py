"""A loaded vector column that holds no vector (every row NULL) has the length its type
gives, on every store: a fixed-size list column (``pa.list_(pa.float32(), n)``) loads, its
rows NULL, and a nearest-neighbour search of an ``n``-long query runs and finds nothing; a
variable-length list column has no length to declare, and is refused on every store with
one message naming it. Before, the local engine and SQLite loaded the variable one where
DuckDB, PostgreSQL, LanceDB and turbopuffer refused it, each in its own words, and LanceDB
refused a NULL vector of a fixed-size list column of 10 floats or more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.errors import EngineError
from tests.parity.engines import STORE_ENGINES, empty_engine

ROWS = 3
LENGTH = 16
"""The fixed-size column's length: past LanceDB's 10, where it takes a column for vectors."""


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _table(vectors: pa.Array) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": [f"disk report {row}" for row in range(ROWS)],
            "embedding": vectors,
        }
    )


def test_a_variable_list_column_of_no_vector_is_refused_alike(engine: Any) -> None:
    data = _table(pa.nulls(ROWS, pa.list_(pa.float32())))
    with pytest.raises(
        EngineError,
        match=r"^vector column 'embedding' holds no vector, so its length is unknown; load at "
        r"least one row with a vector, or type the column as a fixed-size list",
    ):
        engine.load_table("no_vector_list", data, key_column="id", text_columns=["body"])
    assert "no_vector_list" not in engine.tables


@pytest.mark.parametrize("nulls", [ROWS, 1])
def test_a_fixed_size_column_of_null_vectors_loads_alike(engine: Any, nulls: int) -> None:
    """Every row NULL, or one: the NULL rows read back NULL and are no candidate of a
    nearest-neighbour search, whose query of the column's length is accepted (the model:
    the rows with a vector, nearest first by cosine distance to ``[1, 0, ...]``)."""
    vectors = [None] * nulls + [[1.0] + [float(row)] * (LENGTH - 1) for row in range(ROWS - nulls)]
    data = _table(pa.array(vectors, pa.list_(pa.float32(), LENGTH)))
    name = f"null_vectors_{nulls}"
    engine.load_table(name, data, key_column="id", text_columns=["body"])
    read = engine.read_table(name, ["id", "embedding"]).sort_by("id")
    assert [vector is None for vector in read.column("embedding").to_pylist()] == [
        vector is None for vector in vectors
    ]
    query = [1.0] + [0.0] * (LENGTH - 1)
    plan = SearchPlan(
        source=NearestNeighborSearch(table=name, column="embedding", query_vector=query),
        limit=ROWS,
    )
    assert list(engine.search(plan).keys) == [
        row for row, vector in enumerate(vectors) if vector is not None
    ]


def test_a_table_whose_rows_are_all_deleted_keeps_its_vector_column(engine: Any) -> None:
    """The refusal is of a table being made: a loaded table of variable-length vectors whose
    rows are all deleted (the local engine rewrites it, of no row) stays, empty, on every
    store, and takes rows of its length again."""
    vectors = [[1.0, float(row)] for row in range(ROWS)]
    data = _table(pa.array(vectors, pa.list_(pa.float32())))
    engine.load_table("all_deleted", data, key_column="id", text_columns=["body"])
    assert engine.delete_rows("all_deleted", list(range(ROWS))) == ROWS
    assert engine.read_table("all_deleted", ["id"]).num_rows == 0
    engine.upsert_rows("all_deleted", data.slice(0, 1))
    assert engine.read_table("all_deleted", ["id"]).column("id").to_pylist() == [0]
