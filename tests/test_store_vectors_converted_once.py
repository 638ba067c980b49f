"""A SQL store's search returns each vector as a list of floats, whatever the store's own
form (sqlite-vec's blob, pgvector's text, DuckDB's array), converting each returned vector
once: the searched vectors ``include_vectors`` returns by the hits
(:func:`~hotdata_retrieval.engines.results.hits_from_rows`), any other vector column the
plan projects by the store. The vectors equal the loaded ones, read as float32."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines import results, store

VECTORS = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
OTHER = np.random.default_rng(4).standard_normal((6, 2)).astype(np.float32)
_NAMES = itertools.count()


def _open(kind: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(directory / "db.sqlite")
    if kind == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(directory / "db.duckdb")
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def loaded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    engine = _open(request.param, tmp_path, request)
    name = f"converted_{next(_NAMES)}"  # PostgreSQL's session server is shared
    data = pa.table(
        {
            "id": list(range(len(VECTORS))),
            "body": [f"disk full {index}" for index in range(len(VECTORS))],
            "embedding": pa.array(list(VECTORS), pa.list_(pa.float32())),
            "other": pa.array(list(OTHER), pa.list_(pa.float32())),
        }
    )
    engine.load_table(name, data, key_column="id", text_columns=["body"])
    yield engine, name
    engine.close()


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every value a vector conversion is asked to convert, as it is called."""
    called: list[Any] = []
    convert = results.returned_vector

    def counted(value: Any) -> list[float] | None:
        called.append(value)
        return convert(value)

    monkeypatch.setattr(results, "returned_vector", counted)
    monkeypatch.setattr(store, "returned_vector", counted)
    return called


def test_searched_vectors_are_converted_once(
    loaded: tuple[Any, str], conversions: list[Any]
) -> None:
    engine, name = loaded
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table=name, column="embedding", query_vector=VECTORS[0].tolist()
        ),
        limit=3,
        include_vectors=True,
    )
    hits = engine.search(plan).hits
    assert len(conversions) == len(hits) == 3
    for hit in hits:
        assert isinstance(hit.columns["embedding"], list)
        assert np.array_equal(np.float32(hit.columns["embedding"]), VECTORS[hit.key])


def test_another_projected_vector_column_is_converted_once(
    loaded: tuple[Any, str], conversions: list[Any]
) -> None:
    engine, name = loaded
    plan = SearchPlan(
        source=Bm25Search(table=name, column="body", query_text="disk"),
        columns=["body", "other"],
        limit=4,
    )
    hits = engine.search(plan).hits
    assert len(conversions) == len(hits) == 4
    for hit in hits:
        assert isinstance(hit.columns["other"], list)
        assert np.array_equal(np.float32(hit.columns["other"]), OTHER[hit.key])
