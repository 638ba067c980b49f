"""The DuckDB engine: the fts extension loaded offline by file path, read-only SQL, and what
it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines import Engine
from hotdata_retrieval.engines.duckdb import STAGED_SUFFIX, DuckdbEngine, fts_extension_path
from hotdata_retrieval.engines.errors import EngineError


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DuckdbEngine]:
    # no home directory to find a downloaded extension in: the wheel's file is the only one
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    engine = DuckdbEngine()
    engine.load_table(
        "docs",
        pa.table(
            {
                "id": [1, 2, 3],
                "body": ["disk error", "memory error", "network"],
                "v": pa.array([[1.0, 0.0], [0.0, 0.0], None], pa.list_(pa.float32())),
            }
        ),
        text_columns=["body"],
    )
    yield engine
    engine.close()


def test_the_extension_comes_from_the_wheel() -> None:
    import duckdb

    path = fts_extension_path()
    assert path.is_file() and f"v{duckdb.__version__}" in path.parts


def test_it_meets_the_engine_contract(engine: DuckdbEngine) -> None:
    assert isinstance(engine, Engine)
    assert engine.indexes("docs").bm25_columns == ("body",)
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="error"))
    assert sorted(engine.search(plan).keys) == [1, 2]


def test_a_zero_vector_is_at_cosine_distance_one(engine: DuckdbEngine) -> None:
    """DuckDB's array_cosine_distance gives 2.0 against a zero vector; the Hotdata engine 1.0."""
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="v", query_vector=[0.0, 1.0])
    )
    result = engine.search(plan)
    assert result.keys == [1, 2]
    assert [hit.distance for hit in result] == pytest.approx([1.0, 1.0])


def test_sql_cannot_change_the_database(engine: DuckdbEngine) -> None:
    engine.sql("DELETE FROM docs")
    assert engine.sql("SELECT COUNT(*) AS n FROM docs").column("n").to_pylist() == [3]


def test_a_vector_column_without_vectors_needs_its_length() -> None:
    with DuckdbEngine() as engine, pytest.raises(EngineError, match=r"its length is unknown"):
        engine.load_table("t", pa.table({"id": [1], "v": pa.array([None], pa.list_(pa.float32()))}))


def test_a_mismatched_wheel_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    monkeypatch.setattr(duckdb, "__version__", "0.0.1")
    with pytest.raises(EngineError, match=r"no build for DuckDB 0\.0\.1 \(it has v1"):
        fts_extension_path()


@pytest.mark.parametrize(
    ("name", "text_column"),
    [("my docs", "body"), ('"my docs"', "body"), ("docs_2", "the body"), ("docs_3", "Body Text")],
)
def test_names_the_fts_extension_cannot_write_are_indexed_under_a_digest(
    tmp_path: Path, name: str, text_column: str
) -> None:
    """DuckDB's fts extension writes names into its SQL unquoted (``PRAGMA
    create_fts_index('main."my docs"', ...)`` is a syntax error): a table or text column whose
    name is not bare is indexed through a terms table named by a digest, and found (B23)."""
    with DuckdbEngine(tmp_path / "store.duckdb") as engine:
        data = pa.table({"id": [1, 2], text_column: ["disk full", "quiet garden"]})
        engine.load_table(name, data, text_columns=[text_column])
        plan = SearchPlan(
            source=Bm25Search(table=name, column=text_column, query_text="disk"),
            columns=["id"],
        )
        assert list(engine.search(plan).keys) == [1]
        assert engine.indexes(name).bm25_columns == (text_column.lower(),)


def test_a_load_leaves_no_staged_table_and_refuses_a_staged_name(tmp_path: Path) -> None:
    """A load stages its rows as ``<table>__hdq_loading`` and renames them in: none is left,
    and a user's table may not be named so."""
    with DuckdbEngine(tmp_path / "store.duckdb") as engine:
        data = pa.table({"id": [1, 2], "body": ["disk full", "quiet garden"]})
        for _ in range(2):  # a new table, then a replaced one
            engine.load_table("docs", data, text_columns=["body"])
        listed = engine.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "ORDER BY table_name"
        ).column("table_name")
        assert listed.to_pylist() == ["docs", "hdq_columns"]
        with pytest.raises(EngineError, match="ends like the engine's own tables"):
            engine.load_table(f"docs{STAGED_SUFFIX}", data, text_columns=["body"])
