"""The SQLite dialect and engine: FTS5 text search with user text as data, sqlite-vec
distances, JSON-text vectors whose bad rows are skipped and counted, fusion with and without
FULL OUTER JOIN, and what the dialect refuses while compiling."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.compile.sqlite import SQLITE, SQLITE_BEFORE_FULL_JOIN, fts5_query
from hotdata_retrieval.engines import Engine
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.sqlite import SqliteEngine
from hotdata_retrieval.fusion import rank_branch, reference_fusion

BODIES = [
    "error ERR-DIM-384 after the upgrade",
    "don't panic: the upgrade (v1.1.6) worked",
    "fix/release-repo is NEAR the AND gate",
    "the quick brown fox",
    None,
    'a "quoted" word and an apostrophe\'s end',
]


@pytest.fixture
def engine() -> Iterator[SqliteEngine]:
    engine = SqliteEngine()
    vectors: list[list[float] | None] = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.5, 0.5, 0.0],
        None,
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
    ]
    data = pa.table(
        {
            "id": list(range(1, 7)),
            "body": BODIES,
            "lang": ["en", "fr", "en", "en", None, "it's"],
            "embedding": vectors,
        }
    )
    engine.load_table("docs", data, text_columns=["body"])
    yield engine
    engine.close()


def test_it_meets_the_engine_contract(engine: SqliteEngine) -> None:
    assert isinstance(engine, Engine)
    indexes = engine.indexes("docs")
    assert indexes.bm25_columns == ("body",)
    assert [vector.column for vector in indexes.vectors] == ["embedding"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ERR-DIM-384", {1}),
        ("v1.1.6", {2}),
        ("fix/release-repo", {3}),
        ("NEAR", {3}),
        ("AND", set()),  # a stop word, as on the local engine
        ("AND repo", {3}),
        ('"quoted"', {6}),
        ("apostrophe's", {6}),
        ("don't", {2}),
        ("(upgrade", {1, 2}),
        ("* - ^ :", set()),
    ],
)
def test_user_text_is_data_never_fts5_syntax(
    engine: SqliteEngine, query: str, expected: set[int]
) -> None:
    # allow_empty: a query without a word ("* - ^ :") is an empty branch rather than an error
    branch = Bm25Search(table="docs", column="body", query_text=query, allow_empty=True)
    assert set(engine.search(SearchPlan(source=branch)).keys) == expected


@given(st.text(min_size=1).filter(lambda text: text.strip() and "\x00" not in text))
def test_any_text_is_a_valid_fts5_query(text: str) -> None:
    engine = _text_engine()
    branch = Bm25Search(table="docs", column="body", query_text=text, allow_empty=True)
    engine.search(SearchPlan(source=branch))


_TEXT_ENGINE: list[SqliteEngine] = []


def _text_engine() -> SqliteEngine:
    if not _TEXT_ENGINE:
        engine = SqliteEngine()
        engine.load_table(
            "docs", pa.table({"id": [1, 2], "body": ["alpha beta", "gamma"]}), text_columns=["body"]
        )
        _TEXT_ENGINE.append(engine)
    return _TEXT_ENGINE[0]


def test_text_scores_are_higher_is_better_and_ordered(engine: SqliteEngine) -> None:
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="upgrade error"))
    result = engine.search(plan)
    scores = [hit.score for hit in result]
    assert all(score is not None and score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # the row matching two of the terms ranks above rows matching one
    assert result.keys[0] == 1


def _cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(1 - x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_distances_match_numpy(engine: SqliteEngine, metric: str) -> None:
    query = [0.9, 0.2, 0.1]
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=query, metric=metric
        )
    )
    result = engine.search(plan)
    stored = {1: [1.0, 0.0, 0.0], 2: [0.0, 1.0, 0.0], 3: [0.5, 0.5, 0.0], 5: [0.0, 0.0, 1.0],
              6: [1.0, 1.0, 1.0]}  # fmt: skip

    def reference(vector: list[float]) -> float:
        if metric == "cosine":
            return _cosine(vector, query)
        return float(np.sum((np.asarray(vector) - np.asarray(query)) ** 2))  # squared L2

    expected = sorted(stored, key=lambda key: (reference(stored[key]), key))
    assert result.keys == expected
    for hit in result:
        assert hit.distance == pytest.approx(reference(stored[hit.key]), rel=1e-5, abs=1e-6)
    assert result.vector_scans[0].scanned == 6
    assert result.vector_scans[0].without_vector == 1
    assert result.vector_scans[0].skipped == 0


def test_dot_and_semantic_search_are_refused_while_compiling() -> None:
    dot = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0], metric="dot")
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on sqlite: the dot distance"):
        to_sql(SearchPlan(source=dot), "sqlite")
    semantic = VectorSearch(table="docs", column="body", query_text="q")
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on sqlite: engine-embedded"):
        to_sql(SearchPlan(source=semantic), "sqlite")
    other_catalog = Bm25Search(table="other.public.docs", column="body", query_text="q")
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on sqlite: the catalog"):
        to_sql(SearchPlan(source=other_catalog), "sqlite")


def test_the_query_vector_is_converted_once_per_statement() -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.25, -1.5])
    )
    sql = to_sql(plan, "sqlite")
    # every use of the query vector is vec_f32 of a constant, which SQLite evaluates once;
    # never a bare JSON string that sqlite-vec would parse for every row
    assert sql.count("'[0.25, -1.5]'") == sql.count("vec_f32('[0.25, -1.5]')") > 0


# -- JSON-text vectors --------------------------------------------------------------------------

JSON_ROWS: list[tuple[int, Any]] = [
    (1, "[1.0, 0.0]"),
    (2, "[0.0, 1.0]"),
    (3, "[0.6, 0.8]"),
    (4, "[1.0, 0.0, 0.0]"),  # another dimension
    (5, "[1.0, "),  # malformed
    (6, '[1.0, "a"]'),  # a non-number
    (7, "[1e400, 1.0]"),  # infinite
    (8, "[1e39, 1.0]"),  # beyond float32
    (9, None),  # no vector
    (10, "{}"),  # not an array
    (11, "[Infinity, 1.0]"),  # not JSON
    (12, "[0.0, 0.0]"),  # a zero vector: cosine 1.0, as on the Hotdata engine
]


@pytest.fixture
def json_engine() -> Iterator[SqliteEngine]:
    engine = SqliteEngine()
    data = pa.table(
        {
            "id": [key for key, _ in JSON_ROWS],
            "lang": ["en"] * 6 + ["fr"] * 6,
            "embedding": [[1.0, 0.0]] * len(JSON_ROWS),
        }
    )
    engine.load_table("vectors", data, vector_storage="json")
    for key, text in JSON_ROWS:
        engine._execute("UPDATE vectors SET embedding = ? WHERE id = ?", (text, key))
    yield engine
    engine.close()


def test_json_vectors_that_cannot_be_used_are_skipped_and_counted(
    json_engine: SqliteEngine,
) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="vectors", column="embedding", query_vector=[1.0, 0.0])
    )
    result = json_engine.search(plan)
    assert result.keys == [1, 3, 2, 12]
    assert [hit.distance for hit in result] == pytest.approx([0.0, 0.4, 1.0, 1.0], abs=1e-6)
    (scan,) = result.vector_scans
    assert (scan.scanned, scan.without_vector, scan.skipped) == (12, 1, 7)


def test_the_count_follows_the_filter(json_engine: SqliteEngine) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="vectors", column="embedding", query_vector=[1.0, 0.0]),
        filter=Comparison(column="lang", operator="=", value="en"),
    )
    (scan,) = json_engine.search(plan).vector_scans
    assert (scan.scanned, scan.without_vector, scan.skipped) == (6, 0, 3)


def _scan_counts(engine: SqliteEngine, query: list[float]) -> tuple[int, int, int]:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="vectors", column="embedding", query_vector=query)
    )
    (scan,) = engine.search(plan).vector_scans
    return scan.scanned, scan.without_vector, scan.skipped


def _expected_counts(connection: Any, dimension: int) -> tuple[int, int, int]:
    """The counts from the stored rows, read back and checked in Python: a BLOB of
    ``dimension`` float32 values, or JSON text of as many finite float32 numbers."""
    scanned = without = skipped = 0
    for (value,) in connection.execute("SELECT embedding FROM vectors").fetchall():
        scanned += 1
        if value is None:
            without += 1
            continue
        if isinstance(value, bytes):
            skipped += len(value) != 4 * dimension
            continue
        try:
            parsed = json.loads(value)
        except (TypeError, ValueError):
            skipped += 1
            continue
        usable = (
            isinstance(parsed, list)
            and len(parsed) == dimension
            and all(
                isinstance(item, (int, float))
                and not isinstance(item, bool)
                and abs(item) <= float(np.finfo(np.float32).max)
                for item in parsed
            )
        )
        skipped += not usable
    return scanned, without, skipped


def test_the_counts_follow_every_change_to_the_database(
    json_engine: SqliteEngine, tmp_path: Any
) -> None:
    """The counts are kept between searches while the database is unchanged, and follow a
    row the engine upserts or deletes, and a row changed through the same connection."""
    connection = json_engine._connection
    statements: list[str] = []
    connection.set_trace_callback(statements.append)

    def counted() -> int:
        return sum('AS "scanned"' in statement for statement in statements)

    for query in ([1.0, 0.0], [0.0, 1.0]):  # one dimension: the same counts, counted once
        assert _scan_counts(json_engine, query) == _expected_counts(connection, 2)
    assert counted() == 1
    json_engine.upsert_rows(
        "vectors",
        pa.table(
            {"id": [13], "lang": ["en"], "embedding": pa.array([None], pa.list_(pa.float64()))}
        ),
    )
    assert _scan_counts(json_engine, [1.0, 0.0]) == _expected_counts(connection, 2)
    json_engine.delete_rows("vectors", [1])
    assert _scan_counts(json_engine, [1.0, 0.0]) == _expected_counts(connection, 2)
    json_engine._execute("UPDATE vectors SET embedding = '[1.0, 2.0]' WHERE id = 4")
    assert _scan_counts(json_engine, [1.0, 0.0]) == _expected_counts(connection, 2)
    assert counted() == 4


def test_the_counts_follow_a_change_by_another_connection(tmp_path: Any) -> None:
    """Another process's change to the database file is seen (``PRAGMA data_version``)."""
    import sqlite3

    path = tmp_path / "store.sqlite"
    engine = SqliteEngine(path)
    try:
        rows = pa.table({"id": [1, 2, 3], "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
        engine.load_table("vectors", rows, vector_storage="json")
        assert _scan_counts(engine, [1.0, 0.0]) == (3, 0, 0)
        other = sqlite3.connect(path)
        with other:
            other.execute("UPDATE vectors SET embedding = NULL WHERE id = 1")
            other.execute("UPDATE vectors SET embedding = '[1.0]' WHERE id = 2")
        other.close()
        assert _scan_counts(engine, [1.0, 0.0]) == _expected_counts(engine._connection, 2)
        assert _scan_counts(engine, [1.0, 0.0]) == (3, 1, 1)
    finally:
        engine.close()


def test_rows_are_found_by_their_key_through_an_index(engine: SqliteEngine) -> None:
    """The key column is indexed (UNIQUE): the fused search's last join reads the base table
    by it instead of building an automatic index of the whole table per search."""
    indexed = [
        info
        for (_, name, unique, *_rest) in engine._connection.execute(
            "SELECT * FROM pragma_index_list('docs')"
        ).fetchall()
        for info in engine._connection.execute(
            "SELECT name FROM pragma_index_info(?)", (name,)
        ).fetchall()
        if unique
    ]
    assert indexed == [("id",)]
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="upgrade"),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=[1, 0, 0]),
            ]
        ),
        limit=3,
    )
    sql = engine.search(plan).sql
    steps = [row[3] for row in engine._connection.execute("EXPLAIN QUERY PLAN " + sql)]
    assert not [step for step in steps if "AUTOMATIC" in step], steps
    assert [step for step in steps if step.startswith("SEARCH base USING") and "(id=?)" in step]


def test_a_fusion_with_json_vectors_still_runs(json_engine: SqliteEngine) -> None:
    nearest = NearestNeighborSearch(table="vectors", column="embedding", query_vector=[0.0, 1.0])
    other = NearestNeighborSearch(
        table="vectors", column="embedding", query_vector=[1.0, 1.0], metric="l2"
    )
    result = json_engine.search(SearchPlan(source=ReciprocalRankFusion(branches=[nearest, other])))
    assert set(result.keys) == {1, 2, 3, 12}
    assert len(result.vector_scans) == 2


# -- fusion, with and without FULL OUTER JOIN ---------------------------------------------------


@pytest.mark.parametrize("profile", [SQLITE, SQLITE_BEFORE_FULL_JOIN], ids=lambda p: p.name)
def test_fusion_equals_the_reference_fusion_of_the_branches(
    engine: SqliteEngine, profile: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "profile", profile)
    text = Bm25Search(table="docs", column="body", query_text="the upgrade fox")
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.3, 0.3, 0.9])
    fusion = ReciprocalRankFusion(branches=[text, nearest], weights=[1.0, 2.0], rank_constant=5)
    result = engine.search(SearchPlan(source=fusion, limit=4))
    lists, ranks = [], []
    for branch in (text, nearest):
        hits = engine.search(SearchPlan(source=branch, limit=100))
        keys, branch_ranks = rank_branch(
            [(hit.key, hit.branches[next(iter(hit.branches))].raw_score) for hit in hits],
            higher_is_better=branch.higher_is_better,
        )
        lists.append(keys)
        ranks.append(branch_ranks)
    expected = reference_fusion(fusion, lists, ranks=ranks, limit=4)
    assert result.keys == [hit.key for hit in expected]
    assert [hit.score for hit in result] == [hit.score for hit in expected]
    assert ("FULL OUTER JOIN" in result.sql) is profile.supports_full_outer_join


# -- what the engine checks ---------------------------------------------------------------------


def test_a_missing_column_is_an_error_not_a_string(engine: SqliteEngine) -> None:
    """SQLite reads a double-quoted name that is no column as a string; the engine checks."""
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="fox"),
        filter=Comparison(column="langue", operator="=", value="en"),
    )
    with pytest.raises(EngineError, match="column 'langue' not found"):
        engine.search(plan)


def test_a_text_branch_needs_a_full_text_index(engine: SqliteEngine) -> None:
    plan = SearchPlan(source=Bm25Search(table="docs", column="lang", query_text="en"))
    with pytest.raises(EngineError, match="no full-text index"):
        engine.search(plan)


def test_a_query_vector_of_another_dimension_is_refused(engine: SqliteEngine) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
    )
    with pytest.raises(PlanError, match="query vector has 2 dimensions; column 'embedding'"):
        engine.search(plan)


def test_sql_refuses_writes(engine: SqliteEngine) -> None:
    with pytest.raises(EngineError, match=r"readonly"):
        engine.sql("DELETE FROM docs")
    assert engine.sql("SELECT COUNT(*) AS n FROM docs").column("n").to_pylist() == [6]


def test_a_table_is_replaced_whole(engine: SqliteEngine) -> None:
    engine.load_table("docs", pa.table({"id": [7], "body": ["fox"]}), text_columns=["body"])
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))
    assert engine.search(plan).keys == [7]
    assert engine.indexes("docs").vectors == ()


def test_a_file_database_keeps_its_tables(tmp_path: Any) -> None:
    path = tmp_path / "store.db"
    with SqliteEngine(path) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2], "body": ["a fox", "a dog"], "v": [[1.0, 0.0], [0.0, 1.0]]}),
            text_columns=["body"],
        )
    with SqliteEngine(path) as engine:
        plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))
        assert engine.search(plan).keys == [1]
        assert engine.indexes("docs").vectors[0].column == "v"


def test_load_refuses_vectors_of_two_lengths() -> None:
    with (
        SqliteEngine() as engine,
        pytest.raises(EngineError, match="vector column 'v': row 2 has 2 dimensions, row 1 has 1"),
    ):
        engine.load_table("t", pa.table({"id": [1, 2], "v": [[1.0], [1.0, 2.0]]}))


def test_json_storage_round_trips() -> None:
    with SqliteEngine() as engine:
        engine.load_table("t", pa.table({"id": [1], "v": [[0.1, 2.5]]}), vector_storage="json")
        stored = engine.sql("SELECT v FROM t").column("v").to_pylist()[0]
        assert json.loads(stored) == [0.1, 2.5]
        assert not math.isnan(
            engine.search(
                SearchPlan(
                    source=NearestNeighborSearch(table="t", column="v", query_vector=[1.0, 0.0])
                )
            )
            .hits[0]
            .distance
            or 0.0
        )


_VECTOR_TYPES = {
    "list<float>": pa.list_(pa.float32()),
    "list<double>": pa.list_(pa.float64()),
    "large_list<double>": pa.large_list(pa.float64()),
    "fixed_size_list<float, 3>": pa.list_(pa.float32(), 3),
}


@given(
    vectors=st.lists(
        st.none()
        | st.lists(
            st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=3, max_size=3
        ),
        min_size=1,
        max_size=12,
    ),
    kind=st.sampled_from(sorted(_VECTOR_TYPES)),
    storage=st.sampled_from(["blob", "json"]),
    chunk=st.integers(min_value=1, max_value=5),
)
def test_stored_vectors_are_each_rows_own_components(
    vectors: list[list[float] | None], kind: str, storage: str, chunk: int
) -> None:
    # Vectors are written a column at a time; the reference is each row on its own: NumPy's
    # float32 bytes (sqlite-vec's BLOB) or the JSON of its floats, NULL kept NULL, whatever
    # the list type and however the table's chunks cut the rows.
    column = pa.chunked_array(
        [
            pa.array(vectors[start : start + chunk], type=_VECTOR_TYPES[kind])
            for start in range(0, len(vectors), chunk)
        ]
    )
    table = pa.table({"id": list(range(len(vectors))), "v": column})
    with SqliteEngine() as engine:
        if all(vector is None for vector in vectors) and kind.startswith(("list", "large")):
            # no vector and a type of no length: no length to declare, on every engine
            with pytest.raises(EngineError, match="its length is unknown"):
                engine.load_table("t", table, vector_storage=storage, vector_metric="l2")
            return
        # l2: any finite float32 vector is stored (cosine refuses norms it cannot compute)
        engine.load_table("t", table, vector_storage=storage, vector_metric="l2")
        stored = engine._connection.execute("SELECT v FROM t ORDER BY id").fetchall()
    expected = [
        None
        if vector is None
        else np.asarray(vector, dtype=np.float32).tobytes()
        if storage == "blob"
        else json.dumps([float(x) for x in vector])
        for vector in column.to_pylist()
    ]
    assert [row[0] for row in stored] == expected


def test_fts5_query_keeps_only_terms() -> None:
    # the local engine's analysis: 'the' and 'not' are stop words, terms are folded and stemmed
    assert fts5_query('the"b c') == '"b" OR "c"'
    assert fts5_query("NOT x* Running") == '"x" OR "run"'


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (pa.array([1, 2], pa.duration("s")), "duration[s]"),
        (pa.array([["a"], None], pa.list_(pa.string())), "list<item: string>"),
    ],
    ids=["duration", "list"],
)
def test_a_column_type_the_store_cannot_hold_is_named(values: pa.Array, kind: str) -> None:
    data = pa.table({"id": [1, 2], "body": ["a", "b"], "odd": values})
    engine = SqliteEngine()
    with pytest.raises(
        EngineError,
        match="^"
        + re.escape(f"column 'odd': the SQLite engine cannot store a column of type {kind}")
        + "$",
    ):
        engine.load_table("docs", data, text_columns=["body"])


def test_a_text_index_without_bm25_statistics_asks_for_a_new_load(tmp_path: Any) -> None:
    """A table loaded by a release that wrote only the FTS5 table (no postings, no corpus
    row) is not searched by text with a wrong or missing statistic: the column has no
    full-text index until the table is loaded again, which replaces the old FTS5 table."""
    import sqlean

    path = tmp_path / "old.sqlite"
    data = pa.table({"id": [1, 2], "body": ["disk full", "disk fine"]})
    with SqliteEngine(path) as engine:
        engine.load_table("docs", data, key_column="id", text_columns=["body"])
    connection = sqlean.connect(str(path))
    for name in ("docs__body__fts_terms", "docs__body__fts_corpus"):
        connection.execute(f'DROP TABLE "{name}"')
    connection.commit()
    connection.close()
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="full"))
    with SqliteEngine(path) as engine:
        with pytest.raises(EngineError, match=r"column 'body' of table .* has no full-text index"):
            engine.search(plan)
        engine.load_table("docs", data, key_column="id", text_columns=["body"])
        assert engine.search(plan).keys == [1]


@pytest.mark.parametrize(
    "kind",
    [pa.timestamp("us", "UTC"), pa.timestamp("ns"), pa.timestamp("ms", "Europe/Paris")],
    ids=str,
)
def test_a_timestamp_key_finds_its_row_as_the_text_sqlite_holds(kind: pa.DataType) -> None:
    """SQLite holds a timestamp as ISO text in UTC: a key is bound as that text, so an
    upsert replaces its row, and ``read_rows`` and ``delete_rows`` find it. The driver's own
    adapter wrote a zoned key with its offset (``+00:00``), which no stored text equals, so
    the upsert failed on the key's unique index; it had none for pandas' ``Timestamp`` (the
    keys of a nanosecond column), so every change by such a key failed."""
    import datetime

    units = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[kind.unit]
    keys = pa.array([1_700_000_000 * units, 1_700_000_001 * units], pa.int64()).view(kind)
    engine = SqliteEngine(":memory:")
    engine.load_table("events", pa.table({"id": keys, "body": ["a", "b"]}), text_columns=["body"])
    engine.upsert_rows("events", pa.table({"id": keys[1:], "body": ["replaced"]}))
    assert engine.read_table("events").to_pylist() == [
        {"id": keys[0].as_py(), "body": "a"},
        {"id": keys[1].as_py(), "body": "replaced"},
    ]
    second = datetime.datetime(2023, 11, 14, 22, 13, 21, tzinfo=datetime.timezone.utc)
    for key in (keys[1].as_py(), second, second.replace(tzinfo=None)):
        assert engine.read_rows("events", [key]).column("body").to_pylist() == ["replaced"]
    assert engine.delete_rows("events", [keys[0].as_py()]) == 1
    assert engine.read_table("events", ["body"]).column("body").to_pylist() == ["replaced"]
