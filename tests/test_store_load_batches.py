"""A load and an upsert that span several record batches store exactly the rows given, on
every store engine.

The stores write (and check) a table :data:`~hotdata_retrieval.engines.checks.LOAD_BATCH_ROWS`
rows at a time; here that constant is set to 3 so that 17 rows make six batches, the last one
short. The reference is the input itself: the rows read back (``read_table``) equal the rows
loaded, float32 vectors bit for bit, NULL vectors and NULL texts kept NULL. The BM25 ranking of
the batched table equals that of the same rows loaded in one batch, and a bad vector in a late
batch is named by its row in the whole table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.engines import checks
from hotdata_retrieval.errors import HotdataRetrievalError
from tests.parity.engines import STORE_ENGINES, open_engine

ROWS = 17
BATCH_ROWS = 3
DIMENSIONS = 4
WORDS = ["disk", "full", "error", "upgrade", "login", "slow", "page", "refund"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    opened = open_engine(request.param, Path(tmp_path_factory.mktemp("batches")), request)
    yield opened
    opened.close()


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "LOAD_BATCH_ROWS", BATCH_ROWS)


def _rows(first: int, count: int, seed: int) -> list[dict[str, Any]]:
    """Rows keyed ``first``..: every fifth text NULL, every fourth vector NULL, the vectors
    seeded float32 numbers (held as the Python floats float32 gives back)."""
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSIONS), dtype=np.float32)
    rows = []
    for offset in range(count):
        key = first + offset
        words = [WORDS[(key * 3 + i) % len(WORDS)] for i in range(1 + key % 3)]
        rows.append(
            {
                "id": key,
                "body": None if key % 5 == 2 else " ".join(words),
                "embedding": None if key % 4 == 1 else vectors[offset].tolist(),
            }
        )
    return rows


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([row["id"] for row in rows], pa.int64()),
            "body": pa.array([row["body"] for row in rows], pa.string()),
            "embedding": pa.array([row["embedding"] for row in rows], pa.list_(pa.float32())),
        }
    )


def _stored(engine: Any, name: str) -> list[dict[str, Any]]:
    read = engine.read_table(name, ["id", "body", "embedding"]).to_pylist()
    rows = [
        {
            "id": int(row["id"]),
            "body": row["body"],
            "embedding": None
            if row["embedding"] is None
            else np.asarray(row["embedding"], np.float32).tolist(),
        }
        for row in read
    ]
    return sorted(rows, key=lambda row: row["id"])


def _ranking(engine: Any, name: str, query: str) -> list[tuple[int, float]]:
    plan = SearchPlan(
        source=Bm25Search(table=name, column="body", query_text=query), limit=50, key_column="id"
    )
    return [(int(hit.key), float(hit.score)) for hit in engine.search(plan)]


def test_a_load_over_several_batches_stores_the_rows_given(
    engine: Any, small_batches: None
) -> None:
    rows = _rows(0, ROWS, seed=1)
    assert any(row["body"] is None for row in rows)
    assert any(row["embedding"] is None for row in rows)
    assert len(_table(rows).to_batches(max_chunksize=BATCH_ROWS)) == 6
    engine.load_table("batched", _table(rows), key_column="id", text_columns=["body"])
    assert _stored(engine, "batched") == rows


def test_a_batched_load_ranks_as_one_batch(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(0, ROWS, seed=2)
    monkeypatch.setattr(checks, "LOAD_BATCH_ROWS", ROWS)
    engine.load_table("whole", _table(rows), key_column="id", text_columns=["body"])
    monkeypatch.setattr(checks, "LOAD_BATCH_ROWS", BATCH_ROWS)
    engine.load_table("pieces", _table(rows), key_column="id", text_columns=["body"])
    for query in ("disk", "error upgrade", "refund slow page", "login full"):
        whole, pieces = _ranking(engine, "whole", query), _ranking(engine, "pieces", query)
        assert whole, query
        assert pieces == whole, query


def test_an_upsert_over_several_batches_stores_the_rows_given(
    engine: Any, small_batches: None
) -> None:
    model = {row["id"]: row for row in _rows(0, ROWS, seed=3)}
    engine.load_table(
        "changed", _table(list(model.values())), key_column="id", text_columns=["body"]
    )
    changes = _rows(10, 11, seed=4)  # keys 10..20: seven replaced, four added
    engine.upsert_rows("changed", _table(changes))
    model.update((row["id"], row) for row in changes)
    assert _stored(engine, "changed") == sorted(model.values(), key=lambda row: row["id"])


def test_a_bad_vector_in_a_late_batch_is_named_by_its_row(engine: Any, small_batches: None) -> None:
    rows = _rows(0, ROWS, seed=5)
    rows[13]["embedding"] = [1.0, float("nan"), 0.0, 2.0]
    with pytest.raises(HotdataRetrievalError, match=r"row 14\b"):
        engine.load_table("refused", _table(rows), key_column="id", text_columns=["body"])


def _vectors_table(vectors: list[list[float | None] | None], kind: pa.DataType) -> pa.Table:
    return pa.table({"embedding": pa.array(vectors, kind)})


@pytest.mark.parametrize("kind", [pa.list_(pa.float32()), pa.list_(pa.float64())])
@pytest.mark.parametrize(
    ("row", "bad"),
    [(7, []), (11, [1.0, None, 2.0, 3.0]), (16, [1.0, 2.0, float("inf"), 3.0])],
)
def test_the_vector_check_names_the_first_bad_row_of_any_batch(
    small_batches: None, kind: pa.DataType, row: int, bad: list[float | None]
) -> None:
    vectors: list[list[float | None] | None] = [
        None if i % 4 == 1 else [float(i), 1.0, 2.0, 3.0] for i in range(ROWS)
    ]
    vectors[row] = bad
    vectors[-1 if row != 16 else 0] = None
    message = (
        f"row {row + 1} of vector column 'embedding' is not a vector of finite numbers: {bad!r}"
    )
    with pytest.raises(HotdataRetrievalError) as raised:
        checks.vector_dimensions(_vectors_table(vectors, kind), "embedding")
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("row", "bad"), [(9, [1.0, 3.5e38, 2.0, 3.0]), (15, [1.0, 2.0, 3.0, -1e39])]
)
def test_the_vector_check_names_the_first_row_beyond_float32(
    small_batches: None, row: int, bad: list[float]
) -> None:
    """A Float64 component finite in Float64 but beyond Float32's range, where every store
    holds its vectors, is an infinity there: refused, naming the row, as the local engine's
    load refuses it (tests/test_hostile_data.py)."""
    vectors: list[list[float] | None] = [[float(i), 1.0, 2.0, 3.0] for i in range(ROWS)]
    vectors[row] = bad
    vectors[row + 1] = [1e39, 0.0, 0.0, 0.0]  # a later bad row is not named
    message = (
        f"row {row + 1} of vector column 'embedding' holds a value beyond Float32's range "
        f"(magnitude at most 3.40282e+38); vectors are stored as Float32, where it would be an "
        f"infinity: {bad!r}"
    )
    with pytest.raises(HotdataRetrievalError) as raised:
        checks.vector_dimensions(_vectors_table(vectors, pa.list_(pa.float64())), "embedding")
    assert str(raised.value) == message
    vectors[row] = vectors[row + 1] = [3.4028234663852886e38, -1.0, 0.0, 0.0]  # the largest
    assert (
        checks.vector_dimensions(_vectors_table(vectors, pa.list_(pa.float64())), "embedding") == 4
    )


def test_every_store_refuses_a_vector_beyond_float32_at_load(engine: Any) -> None:
    rows = _rows(0, 5, seed=6)
    rows[3]["embedding"] = [1.0, 1e39, 0.0, 2.0]
    table = _table(rows).set_column(
        2, "embedding", pa.array([row["embedding"] for row in rows], pa.list_(pa.float64()))
    )
    with pytest.raises(HotdataRetrievalError, match=r"row 4 .*beyond Float32's range"):
        engine.load_table("beyond", table, key_column="id", text_columns=["body"])


@pytest.mark.parametrize(("nulls", "other"), [(0, 14), (0, 2), (5, 6), (7, 16), (4, 5)])
def test_the_vector_check_names_the_first_row_of_another_length(
    small_batches: None, nulls: int, other: int
) -> None:
    """The first ``nulls`` rows are NULL, row ``other`` has three components, the rest four:
    in the first row's batch or a later one."""
    vectors: list[list[float | None] | None] = [[1.0, 2.0, 3.0, 4.0]] * ROWS
    vectors[:nulls] = [None] * nulls
    vectors[other] = [1.0, 2.0, 3.0]
    vectors[-1] = [5.0, 6.0, 7.0]  # a later row of the same other length is not named
    table = _vectors_table(vectors, pa.list_(pa.float32()))
    message = (
        f"vector column 'embedding': row {other + 1} has 3 dimensions, row {nulls + 1} has 4; "
        "a column's vectors share one length"
    )
    with pytest.raises(HotdataRetrievalError) as raised:
        checks.vector_dimensions(table, "embedding")
    assert str(raised.value) == message


def test_the_vector_check_reads_a_fixed_size_column_with_nulls(small_batches: None) -> None:
    kind = pa.list_(pa.float32(), 4)
    vectors: list[list[float | None] | None] = [
        None if i % 3 == 0 else [1.0, 2.0, float(i), 4.0] for i in range(ROWS)
    ]
    assert checks.vector_dimensions(_vectors_table(vectors, kind), "embedding") == 4
    assert checks.vector_dimensions(_vectors_table([None] * 5, kind), "embedding") == 4
    vectors[13] = [1.0, float("nan"), 2.0, 3.0]
    with pytest.raises(HotdataRetrievalError, match=r"^row 14 of vector column 'embedding'"):
        checks.vector_dimensions(_vectors_table(vectors, kind), "embedding")
