"""The LanceDB engine: plans run through LanceDB's own searches, filters translated, no SQL."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    SearchPlan,
    UnsupportedFeatureError,
    VectorSearch,
)
from hotdata_retrieval.engines import Engine
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.lancedb import LancedbEngine, lancedb_filter


@pytest.fixture
def engine(tmp_path: Path) -> LancedbEngine:
    engine = LancedbEngine(tmp_path / "lance")
    engine.load_table(
        "docs",
        pa.table(
            {
                "id": [1, 2, 3],
                "body": ["error ERR-DIM-384 here", 'it\'s a "quoted" error', "nothing"],
                "select": ["a", "it's", "b"],
                "v": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
            }
        ),
        text_columns=["body"],
    )
    return engine


def test_it_meets_the_engine_contract(engine: LancedbEngine) -> None:
    assert isinstance(engine, Engine)
    indexes = engine.indexes("docs")
    assert indexes.bm25_columns == ("body",)
    assert [vector.column for vector in indexes.vectors] == ["v"]


@pytest.mark.parametrize("query", ['NEAR("x" AND', "ERR-DIM-384", "it's", "* ( ) : ^"])
def test_user_text_is_never_query_syntax(engine: LancedbEngine, query: str) -> None:
    branch = Bm25Search(table="docs", column="body", query_text=query, allow_empty=True)
    engine.search(SearchPlan(source=branch))


def test_filters_are_translated_with_quoted_names_and_escaped_values(
    engine: LancedbEngine,
) -> None:
    predicate = Comparison(column="select", operator="=", value="it's")
    assert lancedb_filter(predicate) == "\"select\" = 'it''s'"
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="v", query_vector=[1.0, 0.0]),
        filter=predicate,
    )
    assert engine.search(plan).keys == [2]
    empty = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="v", query_vector=[1.0, 0.0]),
        filter=InList(column="select", values=[]),
    )
    assert engine.search(empty).keys == []


def test_dot_is_the_negative_inner_product(engine: LancedbEngine) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="v", query_vector=[2.0, 1.0], metric="dot"
        )
    )
    result = engine.search(plan)
    assert result.keys == [3, 1, 2]
    assert [hit.distance for hit in result] == pytest.approx([-3.0, -2.0, -1.0])


def test_there_is_no_sql(engine: LancedbEngine) -> None:
    with pytest.raises(EngineError, match="LanceDB has no SQL interface"):
        engine.sql("SELECT 1")


def test_semantic_search_is_refused(engine: LancedbEngine) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on lancedb: engine-embedded"):
        engine.search(SearchPlan(source=VectorSearch(table="docs", column="body", query_text="q")))


def test_the_result_records_the_queries(engine: LancedbEngine) -> None:
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="error"),
        filter=Comparison(column="select", operator="!=", value="b"),
    )
    result = engine.search(plan)
    assert sorted(result.keys) == [1, 2]
    assert '"where": "\\"select\\" <> \'b\'"' in result.sql


def test_loading_prints_nothing_from_lancedb_on_any_door(tmp_path: Path) -> None:
    """LanceDB's Rust log writes a WARN line for every new table unless LANCEDB_LOG says
    otherwise; the library quiets it wherever the lancedb extra is first imported: the
    engine and ``hdq load --engine lancedb``."""
    import subprocess
    import sys

    environment = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    script = (
        "import pyarrow as pa, sys\n"
        "from hotdata_retrieval.engines.lancedb import LancedbEngine\n"
        "LancedbEngine(sys.argv[1]).load_table('docs', pa.table({'id': [1], 'body': ['x']}),"
        " text_columns=['body'])\n"
    )
    engine = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "api")],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    assert engine.stderr == ""
    data = tmp_path / "rows.csv"
    data.write_text("id,body\n1,disk full\n")
    command = subprocess.run(
        [
            sys.executable,
            "-m",
            "hotdata_retrieval",
            "load",
            str(data),
            "--engine",
            "lancedb",
            "--database",
            str(tmp_path / "cli"),
            "--no-embed",
            "--text-column",
            "body",
        ],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    assert "WARN" not in command.stderr


def test_a_table_that_names_no_text_columns_reads_as_it_is(tmp_path: Path) -> None:
    """A table written before loads named their text columns (or by LanceDB itself) is read at
    its latest version, its full-text indexes as LanceDB lists them."""
    import lancedb
    from lancedb.index import FTS

    from hotdata_retrieval.analysis import indexed_text

    bodies = ["disk full", "quiet garden"]
    data = pa.table(
        {"id": [1, 2], "body": bodies, "body__terms": [indexed_text(b) for b in bodies]}
    ).replace_schema_metadata({b"hdq.key_column": b"id"})
    lancedb.connect(str(tmp_path / "lance")).create_table("docs", data).create_index(
        "body__terms", config=FTS(base_tokenizer="whitespace"), replace=True
    )
    engine = LancedbEngine(tmp_path / "lance")
    assert engine.indexes("docs").bm25_columns == ("body",)
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="disk"))
    assert engine.search(plan).keys == [1]


def test_a_table_whose_only_version_lacks_its_text_index_is_not_found(tmp_path: Path) -> None:
    """A first load stopped after its rows' version and before the text index: no table."""
    import lancedb

    engine = LancedbEngine(tmp_path / "lance")
    data = pa.table({"id": [1], "body": ["disk full"], "body__terms": ["disk full"]})
    named = data.replace_schema_metadata({b"hdq.text_columns": b'["body"]'})
    lancedb.connect(str(tmp_path / "lance")).create_table("docs", named)
    with pytest.raises(EngineError, match="its load stopped before its text indexes"):
        engine.indexes("docs")
    engine.load_table("docs", data.drop_columns(["body__terms"]), text_columns=["body"])
    assert engine.indexes("docs").bm25_columns == ("body",)
