"""A vector whose Float32 squared norm is non-zero and no normal Float32 number
(:data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`: norms below about 1.1e-19 or
above 1.8e19) has no right cosine distance on SQLite (sqlite-vec), PostgreSQL (pgvector) or
LanceDB, which compute it from Float32 squared norms: a row ``[1e-30, 1e-30]`` loaded raw
was at distance -inf from ``[1, 0]`` on SQLite and LanceDB and 0.0 on PostgreSQL, a row
``[0, 1e-30]`` was left out on PostgreSQL and LanceDB, where NumPy's float64 gives 0.29 and
1.0 (the local engine and DuckDB, computing in float64, agreed with NumPy). So every engine
refuses such a vector, with one message: as a row loaded or upserted into a table searched
by cosine (an ``EngineError`` naming the row, from 1, and the column) and as the query
vector of a cosine search (a ``PlanError`` naming it). The rows are read by NumPy, apart
from the engines, to know which row each refusal must name; the rows an engine accepts rank
as NumPy's float64 cosine (``test_vector_norm_range.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import EngineError, NearestNeighborSearch, PlanError, SearchPlan
from tests.parity.engines import STORE_ENGINES, empty_engine

GOOD = [[1.0, 0.0], [0.6, 0.8], [0.0, 0.0], [1e-18, 3e-19]]
"""Rows every engine takes: unit, zero, and small but normal once squared in Float32."""

OUTSIDE = [[1e-30, 1e-30], [0.0, 1e-30], [1e20, 0.0], [3e19, -3e19], [2e-45, 0.0]]
"""Non-zero rows whose Float32 squared norm underflows or overflows."""


def _first_outside(rows: list[list[float]]) -> int | None:
    """The 1-based number of the first non-zero row whose squared norm, summed in float64
    from its Float32 components, is not a normal Float32 number (NumPy's bounds, apart from
    the library's)."""
    low, high = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
    for number, row in enumerate(rows, 1):
        components = np.array(row, dtype=np.float32).astype(np.float64)
        squared = float(np.sum(components * components))
        if squared and not low <= squared <= high:
            return number
    return None


def _table(rows: list[list[float]], first_key: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": list(range(first_key, first_key + len(rows))),
            "body": ["row"] * len(rows),
            "embedding": pa.array(rows, pa.list_(pa.float32(), 2)),
        }
    )


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def test_the_reference_finds_the_rows_outside() -> None:
    assert _first_outside(GOOD) is None
    for vector in OUTSIDE:
        assert _first_outside([vector]) == 1


@pytest.mark.parametrize("vector", OUTSIDE)
def test_loading_such_a_row_is_refused_naming_it(engine: Any, vector: list[float]) -> None:
    rows = [*GOOD, vector]
    number = _first_outside(rows)
    with pytest.raises(EngineError) as raised:
        engine.load_table("outside", _table(rows), key_column="id", text_columns=["body"])
    assert str(raised.value).startswith(
        f"row {number} of vector column 'embedding' has squared norm "
    )
    assert "cosine" in str(raised.value)


@pytest.mark.parametrize("vector", OUTSIDE)
def test_upserting_such_a_row_is_refused_and_nothing_written(
    engine: Any, vector: list[float]
) -> None:
    engine.load_table("kept", _table(GOOD), key_column="id", text_columns=["body"])
    rows = [[0.5, 0.5], vector]
    number = _first_outside(rows)
    with pytest.raises(EngineError, match=f"^row {number} of vector column 'embedding' has"):
        engine.upsert_rows("kept", _table(rows, first_key=10))
    kept = engine.read_table("kept", ["id"]).column(0).to_pylist()
    assert sorted(kept) == list(range(len(GOOD)))


@pytest.mark.parametrize("vector", OUTSIDE)
def test_a_cosine_query_of_such_a_vector_is_refused(engine: Any, vector: list[float]) -> None:
    engine.load_table("queried", _table(GOOD), key_column="id", text_columns=["body"])
    with pytest.raises(PlanError, match=r"^query_vector has squared norm ") as raised:
        engine.search(
            SearchPlan(
                source=NearestNeighborSearch(
                    table="queried", column="embedding", query_vector=vector
                ),
                limit=3,
            )
        )
    assert raised.value.field == "query_vector"


def test_the_rows_it_takes_rank_as_float64_cosine(engine: Any) -> None:
    engine.load_table("taken", _table(GOOD), key_column="id", text_columns=["body"])
    query = np.array([1.0, 0.25])
    stored = np.array(GOOD, dtype=np.float32).astype(np.float64)
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(query)
    with np.errstate(invalid="ignore", divide="ignore"):
        distances = np.where(norms == 0, 1.0, 1.0 - (stored @ query) / norms)
    hits = engine.search(
        SearchPlan(
            source=NearestNeighborSearch(
                table="taken", column="embedding", query_vector=query.tolist()
            ),
            limit=len(GOOD),
        )
    )
    found = {hit.key: hit.distance for hit in hits}
    nonzero = [key for key, row in enumerate(GOOD) if any(row)]
    for key in nonzero:  # a zero row is no candidate on LanceDB (its module docstring)
        assert found[key] == pytest.approx(distances[key], abs=1e-6)
    order = [key for key in hits.keys if key in nonzero]
    assert order == sorted(nonzero, key=lambda key: (distances[key], key))
