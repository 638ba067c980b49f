"""The LanceDB engine: plans run through LanceDB's own searches, filters translated, no SQL."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
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


@pytest.mark.parametrize(("limit", "offset"), [(2**63 - 1, 0), (2**32, 0), (2**63 - 2, 1)])
def test_a_page_of_more_rows_than_lancedb_takes_is_the_whole_ranking(
    engine: LancedbEngine, limit: int, offset: int
) -> None:
    """LanceDB refuses a query limit of 2**32 or more; a page that large is the ranking a
    page of every row gives, from the offset on (with a fusion too, whose depth is as
    large)."""
    nearest = NearestNeighborSearch(table="docs", column="v", query_vector=[1.0, 0.2])
    every = engine.search(SearchPlan(source=nearest, limit=3)).keys
    assert (
        engine.search(SearchPlan(source=nearest, limit=limit, offset=offset)).keys
        == (every[offset:])
    )
    fused = ReciprocalRankFusion(
        branches=[Bm25Search(table="docs", column="body", query_text="error"), nearest],
        depth=limit + offset,
    )
    whole = engine.search(SearchPlan(source=attrs.evolve(fused, depth=3), limit=3)).keys
    assert engine.search(SearchPlan(source=fused, limit=3)).keys == whole


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


def _bytes_on_disk(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def _upserted_ten_times(directory: Path, kept_seconds: float | None) -> LancedbEngine:
    engine = LancedbEngine(directory, old_versions_kept_seconds=kept_seconds)
    bodies = [f"disk full on node {number}" for number in range(2000)]
    engine.load_table(
        "docs", pa.table({"id": list(range(2000)), "body": bodies}), text_columns=["body"]
    )
    for number in range(10):
        engine.upsert_rows("docs", pa.table({"id": [number], "body": [f"moon {number}"]}))
    engine.delete_rows("docs", [1999])
    return engine


def test_writes_remove_the_versions_older_than_the_window(tmp_path: Path) -> None:
    # every write is a whole new version: kept for ever, eleven writes are twelve copies
    pruned = _upserted_ten_times(tmp_path / "pruned", 0)
    kept = _upserted_ten_times(tmp_path / "kept", None)
    assert len(pruned._table("docs").list_versions()) == 1
    assert len(kept._table("docs").list_versions()) > 12
    assert _bytes_on_disk(tmp_path / "pruned") * 4 < _bytes_on_disk(tmp_path / "kept")
    for engine in (pruned, kept):
        page = engine.search(
            SearchPlan(source=Bm25Search(table="docs", column="body", query_text="moon"), limit=20)
        )
        assert sorted(page.keys) == list(range(10))
        assert engine.read_table("docs").num_rows == 1999


def test_the_default_window_keeps_the_versions_another_process_may_read(tmp_path: Path) -> None:
    engine = _upserted_ten_times(tmp_path, LancedbEngine(tmp_path / "x").old_versions_kept_seconds)
    assert len(engine._table("docs").list_versions()) > 12


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 1e14, 366 * 86400, "60", True])
def test_a_bad_window_is_refused_naming_it(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="old_versions_kept_seconds must be"):
        LancedbEngine(tmp_path, old_versions_kept_seconds=bad)  # type: ignore[arg-type]


def test_a_window_of_a_numpy_number_is_taken(tmp_path: Path) -> None:
    import numpy as np

    engine = LancedbEngine(tmp_path, old_versions_kept_seconds=np.int64(30))
    assert engine.old_versions_kept_seconds == 30.0
    assert type(engine.old_versions_kept_seconds) is float


def test_an_upsert_keyed_by_zero_replaces_the_row_loaded_as_minus_zero(tmp_path: Path) -> None:
    """``-0.0`` and ``0.0`` are one key (Python's and SQL's ``==``): LanceDB's own lookup
    tells their bits apart, so the key is stored as ``0.0`` at load and upsert, and an
    upsert of ``0.0`` replaced nothing and added a second row under the key."""
    engine = LancedbEngine(tmp_path / "lance")
    rows = pa.table({"id": pa.array([-0.0, 1.0]), "body": ["a", "b"]})
    engine.load_table("floats", rows, text_columns=["body"])
    engine.upsert_rows("floats", pa.table({"id": pa.array([0.0]), "body": ["replaced"]}))
    engine.upsert_rows("floats", pa.table({"id": pa.array([-0.0]), "body": ["again"]}))
    read = engine.read_table("floats").to_pylist()
    assert sorted(read, key=lambda row: row["id"]) == [
        {"id": 0.0, "body": "again"},
        {"id": 1.0, "body": "b"},
    ]
    assert engine.delete_rows("floats", [0.0]) == 1


@pytest.mark.parametrize("kind", [pa.time64("ns"), pa.timestamp("ns", "UTC")], ids=str)
def test_an_upsert_keeps_the_nanoseconds_of_its_keys(tmp_path: Path, kind: pa.DataType) -> None:
    """An upsert's rows are written through Arrow, not Python's values: ``datetime.time``
    holds no nanoseconds, so an upserted ``time64[ns]`` key a nanosecond past midnight was
    written as midnight, beside the row it should have replaced. The reference is Arrow's
    integers."""
    engine = LancedbEngine(tmp_path / "lance")
    keys = pa.array([1, 2, 10**9], pa.int64()).view(kind)
    engine.load_table("times", pa.table({"id": keys, "body": ["a", "b", "c"]}))
    engine.upsert_rows("times", pa.table({"id": keys[1:2], "body": ["replaced"]}))
    read = engine.read_table("times").sort_by("id")
    assert read.column("id").combine_chunks().view(pa.int64()).to_pylist() == [1, 2, 10**9]
    assert read.column("body").to_pylist() == ["a", "replaced", "c"]


@pytest.mark.parametrize("query", [[1e20, 1e20, 0.0], [1.0, 1.0, 2.0], [1e-20, 0.0, 0.0]])
def test_a_dot_search_of_a_version_without_the_largest_norm_is_ranked_exactly(
    engine: LancedbEngine, query: list[float]
) -> None:
    """A table version an earlier release wrote records no largest norm, so whether
    LanceDB's Float32 products can overflow is unknown: the search is ranked on the client,
    each row at its exact product rounded to Float32 (the parity module's reference), as a
    version that records it is."""
    from tests.parity.test_dot_products_past_float32 import DOT_ROWS, _exact_dot_reference

    rows = pa.table(
        {
            "id": list(range(1, len(DOT_ROWS) + 2)),
            "v": pa.array([*DOT_ROWS.tolist(), None], pa.list_(pa.float32(), 3)),
        }
    )
    engine.load_table("dots", rows, key_column="id", vector_metric="dot")
    branch = NearestNeighborSearch(table="dots", column="v", query_vector=query, metric="dot")
    plan = SearchPlan(source=branch, key_column="id", limit=len(DOT_ROWS) + 1)
    recorded = [(hit.key, hit.distance) for hit in engine.search(plan).hits]
    written = engine._database.open_table("dots").to_arrow()
    metadata = dict(written.schema.metadata or {})
    assert metadata.pop(b"hdq.vector_largest_norms")
    engine._database.create_table(
        "dots", written.replace_schema_metadata(metadata), mode="overwrite"
    )
    earlier = [(hit.key, hit.distance) for hit in engine.search(plan).hits]
    assert recorded == earlier == _exact_dot_reference(query)
