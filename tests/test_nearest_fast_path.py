"""The local engine answers the nearest-neighbour fast-path shape natively, with the same rows
and the same Float32 distances as the row-by-row distance functions, and pages that are
slices of one ranking; an optional HNSW index serves unfiltered queries of its metric."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import sqlglot
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.cli import main
from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.engines.local import EngineError, LocalEngine, _search
from hotdata_retrieval.engines.local.fastpath import NEAREST_SCAN, rewrite_fast_paths
from hotdata_retrieval.engines.results import executed_plan
from tests.strategies import usable_for_cosine

VECTOR_TYPE = pa.list_(pa.float32())


def _table(
    vectors: list[list[float] | None],
    categories: list[str] | None = None,
    *,
    dimensions: int | None = None,
) -> pa.Table:
    """Rows keyed 0, 1, ... with ``vectors`` in ``emb``: a list column, or with
    ``dimensions`` a fixed-size one (a table whose every vector is NULL needs its length)."""
    count = len(vectors)
    return pa.table(
        {
            "id": list(range(count)),
            "body": [f"fox {i % 4}" for i in range(count)],
            "category": categories or ["a" if i % 3 else "b" for i in range(count)],
            "emb": pa.array(
                vectors, VECTOR_TYPE if dimensions is None else pa.list_(pa.float32(), dimensions)
            ),
        }
    )


def _stash(values: list[float], predicate: object, tie_key: object) -> str:
    """A stand-in for the engine's stash of a scan: the vector as its own key."""
    return str(values)


def _as_written(engine: LocalEngine, sql: str) -> list[dict[str, object]]:
    """The statement run without the fast path: the row-by-row distance functions."""
    return engine._sessions.run(sql, sql).to_pylist()


def test_the_fast_path_is_taken_for_single_and_fused_plans() -> None:
    with LocalEngine() as engine:
        engine.load_table("t", _table([[1.0, 0.0], [0.0, 1.0]]), text_columns=["body"])
        nearest = NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.5])
        text = Bm25Search(table="t", column="body", query_text="fox")
        for source in (nearest, ReciprocalRankFusion(branches=[text, nearest])):
            plan = SearchPlan(source=source)
            sql = to_sql(executed_plan(plan))
            optimized = _search.optimized(engine, sql, _stash)
            assert NEAREST_SCAN in optimized and NEAREST_SCAN not in sql
            assert engine.search(plan).sql == sql  # the statement as given is what is reported


@settings(max_examples=80, deadline=None)
@given(
    vectors=st.lists(
        st.none()
        | st.lists(st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]), min_size=3, max_size=3),
        min_size=1,
        max_size=40,
    ),
    query=st.lists(st.sampled_from([-1.0, 0.25, 1.0, 2.0]), min_size=3, max_size=3),
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    limit=st.integers(1, 12),
    offset=st.integers(0, 6),
    filtered=st.booleans(),
)
def test_the_native_answer_equals_the_distance_functions(
    vectors: list[list[float] | None],
    query: list[float],
    metric: str,
    limit: int,
    offset: int,
    filtered: bool,
) -> None:
    if metric == "cosine" and not any(query):
        query = [1.0, *query[1:]]
    with LocalEngine() as engine:
        engine.load_table("t", _table(vectors, dimensions=len(query)))
        plan = SearchPlan(
            source=NearestNeighborSearch(
                table="t", column="emb", query_vector=query, metric=metric
            ),
            limit=limit,
            offset=offset,
            filter=Comparison(column="category", operator="=", value="a") if filtered else None,
            columns=["id"],
        )
        sql = to_sql(plan)
        native = engine.sql(sql).to_pylist()
        written = _as_written(engine, sql)
        hits = engine.search(plan)
        whole = engine.sql(
            to_sql(SearchPlan(source=plan.source, limit=64, filter=plan.filter, columns=["id"]))
        ).to_pylist()
    # Same distances, in the same (Float32) order; equal distances may differ in the order
    # the row-by-row scan's sort leaves them, never in their values.
    assert [row["_distance"] for row in native] == [row["_distance"] for row in written]
    # The native page is a slice of the native whole ranking (ties ordered by rowid).
    assert native == whole[offset : offset + limit]
    distances = [row["_distance"] for row in whole]
    assert distances == sorted(distances, key=lambda value: (value is None, value))
    # No path puts an undefined distance before a defined one: search() returns only finite
    # distances, nearest first.
    found = [hit.distance for hit in hits]
    assert all(value is not None and math.isfinite(value) for value in found)
    assert found == sorted(found)


EXTREME = [-3e38, -2e19, -1.0, 0.0, 1e-30, 3e-21, 0.5, 1.0, 1e19, 3.4e38]
"""Components whose float32 squared norms overflow (beyond about 1.8e19) or underflow (below
about 1e-19), among ordinary ones: all finite in Float32, so a load for l2 or dot accepts
them."""


def _no_normal_squared_norm(vector: list[float] | None) -> bool:
    if vector is None:
        return False
    squared = float((np.asarray(vector, np.float32).astype(np.float64) ** 2).sum())
    limits = np.finfo(np.float32)
    return squared != 0 and not float(limits.tiny) <= squared <= float(limits.max)


@settings(max_examples=120, deadline=None)
@given(
    vectors=st.lists(
        st.none() | st.lists(st.sampled_from(EXTREME), min_size=2, max_size=2),
        min_size=1,
        max_size=30,
    ),
    query=st.lists(st.sampled_from(EXTREME), min_size=2, max_size=2),
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    limit=st.integers(1, 8),
    offset=st.integers(0, 4),
    filtered=st.booleans(),
)
def test_vectors_of_extreme_magnitude_rank_as_the_distance_functions_do(
    vectors: list[list[float] | None],
    query: list[float],
    metric: str,
    limit: int,
    offset: int,
    filtered: bool,
) -> None:
    if metric == "cosine":  # a query of no normal Float32 squared norm is refused
        query = usable_for_cosine(query)
    where = Comparison(column="category", operator="=", value="a") if filtered else None
    nearest = NearestNeighborSearch(table="t", column="emb", query_vector=query, metric=metric)
    with LocalEngine() as engine:
        # loaded for l2, as a table searched by cosine refuses rows of no normal Float32
        # squared norm; a cosine search of the table is refused while it holds one (NumPy's
        # reading: a non-zero float64 sum of the Float32 components' squares outside
        # Float32's normal numbers), and answered otherwise
        engine.load_table("t", _table(vectors, dimensions=len(query)), vector_metric="l2")
        page = SearchPlan(source=nearest, limit=limit, offset=offset, filter=where, columns=["id"])
        if metric == "cosine" and any(map(_no_normal_squared_norm, vectors)):
            with pytest.raises(EngineError, match="no engine searches the column by cosine"):
                engine.search(page)
            return
        hits = engine.search(page)
        # The reference: every row's distance by the row-by-row distance function, ordered by
        # (Float32 distance, rowid) in Python; rows without a vector are no candidates.
        every = SearchPlan(source=nearest, limit=len(vectors), filter=where, columns=["id"])
        rows = _as_written(engine, to_sql(every))
    ranked = sorted(
        ((row["_distance"], row["id"]) for row in rows if row["_distance"] is not None),
        key=lambda pair: (pair[0], pair[1]),
    )[offset : offset + limit]
    assert hits.keys == [key for _, key in ranked]
    assert [float(np.float32(hit.distance)) for hit in hits] == [value for value, _ in ranked]


def test_pages_of_tied_distances_are_slices_of_one_ranking() -> None:
    # 40 identical vectors: every distance ties; pages of 5 must neither repeat nor skip.
    with LocalEngine() as engine:
        engine.load_table("t", _table([[1.0, 2.0]] * 40))
        nearest = NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.0])
        pages = [
            engine.search(SearchPlan(source=nearest, limit=5, offset=offset)).keys
            for offset in range(0, 40, 5)
        ]
        assert [key for page in pages for key in page] == list(range(40))
        assert engine.search(SearchPlan(source=nearest, limit=40)).keys == list(range(40))


def test_raw_sql_of_the_shape_is_rewritten_and_other_shapes_run_as_written() -> None:
    with LocalEngine() as engine:
        engine.load_table("t", _table([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        shape = (
            "SELECT id, l2_distance(emb, ARRAY[1.0, 0.0]) AS d FROM t "
            "WHERE category = 'a' ORDER BY d ASC LIMIT 2"
        )
        assert NEAREST_SCAN in _search.optimized(engine, shape, _stash)
        assert engine.sql(shape).to_pylist() == [{"id": 1, "d": 2.0}, {"id": 2, "d": 1.0}][::-1]
        for other in (
            "SELECT id, l2_distance(emb, ARRAY[1.0, 0.0]) AS d FROM t ORDER BY d DESC LIMIT 2",
            "SELECT id, l2_distance(emb, ARRAY[1.0, 0.0]) AS d FROM t ORDER BY d",
            "SELECT id, emb, l2_distance(emb, ARRAY[1.0, 0.0]) AS d FROM t ORDER BY d LIMIT 1",
            "SELECT t.id, l2_distance(t.emb, ARRAY[1.0, 0.0]) AS d FROM t JOIN t AS u "
            "ON t.id = u.id ORDER BY d LIMIT 1",
        ):
            assert _search.optimized(engine, other, _stash) == other
            assert engine.sql(other).num_rows >= 1


@pytest.mark.parametrize("values", [[0.5, 2**53], [0.5, float(2**53)]])
def test_an_integer_column_in_a_list_of_floats_is_compared_exactly_on_every_path(
    values: list[float],
) -> None:
    """``n IN (0.5, 2**53)`` (the second value an integer or a float) on an Int64 column:
    as DataFusion's DOUBLE common type an Int64 2**53 + 1 equals 2**53, but the exact
    comparison (docs/plans.md: an integer column compared with a float) keeps only the row
    holding 2**53, and no row equals 0.5. The executed plan holds the exact integer form, so
    the fast path takes it, and the statement the search reports keeps the same rows."""
    data = pa.table(
        {
            "id": [1, 2, 3],
            "n": pa.array([2**53, 2**53 + 1, 7], pa.int64()),
            "emb": pa.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], pa.list_(pa.float32())),
        }
    )
    with LocalEngine() as engine:
        engine.load_table("t", data)
        plan = SearchPlan(
            source=NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.0]),
            filter=InList(column="n", values=values),
            columns=["id"],
        )
        result = engine.search(plan)
        assert NEAREST_SCAN in _search.optimized(engine, result.sql, _stash)
        assert [hit.key for hit in result.hits] == [1]
        assert engine.sql(result.sql).column("id").to_pylist() == [1]


def test_a_float32_column_matches_the_values_rounded_to_float32_on_every_path() -> None:
    """The integer 16777217 rounds to the float32 16777216.0 (docs/plans.md: a number compared
    with a float32 column is rounded to float32 first), so the IN list keeps that row, on the
    fast path and in the statement alike."""
    data = pa.table(
        {
            "id": [1, 2, 3],
            "g": pa.array([16777216.0, 0.5, 7.0], pa.float32()),
            "emb": pa.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], pa.list_(pa.float32())),
        }
    )
    with LocalEngine() as engine:
        engine.load_table("t", data)
        plan = SearchPlan(
            source=NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.0]),
            filter=InList(column="g", values=[0.5, 16777217]),
            columns=["id"],
        )
        result = engine.search(plan)
        assert [hit.key for hit in result.hits] == [1, 2]
        assert engine.sql(result.sql).column("id").to_pylist() == [1, 2]


def test_a_table_with_a_reserved_column_keeps_the_row_by_row_scan() -> None:
    tree = sqlglot.parse_one(
        "SELECT id, cosine_distance(emb, ARRAY[1.0]) AS _distance FROM t ORDER BY _distance "
        "LIMIT 1",
        read=HOTDATA.sqlglot_dialect,
    )
    _, rewritten = rewrite_fast_paths(tree, lambda table: None, _stash)
    assert rewritten == 0


# -- the HNSW index -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clustered() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 32)).astype(np.float32)
    rows = centres[rng.integers(0, 40, 3000)] + 0.3 * rng.standard_normal((3000, 32))
    queries = centres[rng.integers(0, 40, 50)] + 0.3 * rng.standard_normal((50, 32))
    return rows.astype(np.float32), queries.astype(np.float32)


@pytest.fixture
def indexed(tmp_path: Path, clustered: tuple[np.ndarray, np.ndarray]) -> Iterator[Path]:
    rows, _ = clustered
    with LocalEngine(tmp_path / "db") as engine:
        entry = engine.load_table("v", _table(rows.tolist()), vector_index="hnsw")
        assert [(a.column, a.function) for a in entry.ann_indexes] == [("emb", "cosine_distance")]
    yield tmp_path / "db"


def test_an_hnsw_index_is_stored_with_the_version_and_reaches_high_recall(
    indexed: Path, clustered: tuple[np.ndarray, np.ndarray]
) -> None:
    _, queries = clustered
    catalog = json.loads((indexed / "catalog.json").read_text())
    version = catalog["tables"]["v"]["version"]
    assert (indexed / "tables" / "v" / version / "hnsw" / "emb.usearch").is_file()
    with LocalEngine(indexed) as engine:  # reopened: the index is read back
        loaded = engine._loaded("v")
        assert loaded.vector_index("emb").hnsw is not None
        found = 0
        for query in queries:
            plan = SearchPlan(
                source=NearestNeighborSearch(table="v", column="emb", query_vector=query.tolist()),
                limit=10,
                columns=["id"],
            )
            approximate = set(engine.search(plan).keys)
            exact = {row["id"] for row in _as_written(engine, to_sql(plan))}
            found += len(approximate & exact)
    assert found / (10 * len(queries)) >= 0.95


def test_filtered_or_other_metric_queries_scan_exactly(indexed: Path) -> None:
    with LocalEngine(indexed) as engine:
        for plan in (
            SearchPlan(
                source=NearestNeighborSearch(table="v", column="emb", query_vector=[1.0] * 32),
                filter=Comparison(column="category", operator="=", value="a"),
                columns=["id"],
            ),
            SearchPlan(
                source=NearestNeighborSearch(
                    table="v", column="emb", query_vector=[1.0] * 32, metric="l2"
                ),
                columns=["id"],
            ),
        ):
            sql = to_sql(plan)
            assert engine.sql(sql).to_pylist() == _as_written(engine, sql)


def test_pages_of_an_hnsw_search_with_duplicate_vectors_tile_one_ranking() -> None:
    # 30 distinct vectors, each stored ten times (duplicate documents): every page's k cuts
    # inside a tie, where HNSW returns whichever tied rows its graph reaches first.
    distinct = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)
    rows = np.repeat(distinct, 10, axis=0)
    with LocalEngine() as engine:
        engine.load_table("h", _table(rows.tolist()), vector_index="hnsw")
        for query in (rows[0], rows[55] + 0.01):
            nearest = NearestNeighborSearch(table="h", column="emb", query_vector=query.tolist())
            unpaged = engine.search(SearchPlan(source=nearest, limit=60, columns=["id"]))
            # Duplicates rank together by rowid: the query's own ten rows come first in order.
            if query is rows[0]:
                assert unpaged.keys[:10] == list(range(10))
            for page in (1, 3, 7):
                keys = [
                    key
                    for offset in range(0, 60, page)
                    for key in engine.search(
                        SearchPlan(
                            source=nearest,
                            limit=min(page, 60 - offset),
                            offset=offset,
                            columns=["id"],
                        )
                    ).keys
                ]
                assert keys == unpaged.keys


def test_a_damaged_hnsw_file_reports_the_table(indexed: Path) -> None:
    catalog = json.loads((indexed / "catalog.json").read_text())
    version = catalog["tables"]["v"]["version"]
    (indexed / "tables" / "v" / version / "hnsw" / "emb.usearch").write_bytes(b"garbage")
    with LocalEngine(indexed) as engine:
        assert "emb.usearch" in engine.damaged_tables["v"]


def test_an_unknown_vector_index_is_refused() -> None:
    with LocalEngine() as engine, pytest.raises(EngineError, match="unknown vector index 'ivf'"):
        engine.load_table("t", _table([[1.0]]), vector_index="ivf")
    with LocalEngine() as engine, pytest.raises(EngineError, match="unknown metric 'hamming'"):
        engine.load_table("t", _table([[1.0]]), vector_index="hnsw", vector_metric="hamming")


def test_hdq_load_builds_the_index(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": str(i), "body": f"fox number {i}"} for i in range(20)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = CliRunner().invoke(
        main,
        [
            "load",
            str(source),
            "--database",
            str(tmp_path / "db"),
            "--embedder",
            "hashing",
            "--vector-index",
            "hnsw",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    (table,) = json.loads(result.stdout)["tables"]
    assert table["ann_indexes"] == [{"column": "body_embedding", "function": "cosine_distance"}]


def test_prefetched_scans_give_the_rows_an_inline_scan_gives() -> None:
    # The rewrite starts each nearest_scan of a statement on a background thread;
    # nearest_scan collects it.
    rng = np.random.default_rng(7)
    vectors = [[float(x) for x in row] for row in rng.standard_normal((60, 4))]
    with LocalEngine() as prefetching, LocalEngine() as inline:
        inline._functions.prefetch_scans = lambda tree: None  # type: ignore[method-assign]
        threads: list[str] = []
        original = prefetching._functions._nearest_rows

        def recording(*arguments: object) -> pa.Table:
            import threading

            threads.append(threading.current_thread().name)
            return original(*arguments)

        prefetching._functions._nearest_rows = recording  # type: ignore[method-assign]
        for engine in (prefetching, inline):
            engine.load_table("t", _table(vectors), text_columns=["body"])
        nearest = NearestNeighborSearch(table="t", column="emb", query_vector=vectors[3])
        other = NearestNeighborSearch(table="t", column="emb", query_vector=vectors[9])
        text = Bm25Search(table="t", column="body", query_text="fox 1")
        plans = [
            SearchPlan(source=nearest, limit=7),
            SearchPlan(source=ReciprocalRankFusion(branches=[text, nearest]), limit=9),
            SearchPlan(source=ReciprocalRankFusion(branches=[nearest, other, text]), offset=3),
            SearchPlan(
                source=ReciprocalRankFusion(branches=[text, nearest]),
                filter=Comparison(column="category", operator="=", value="a"),
                include_branch_scores=True,
            ),
        ]
        for plan in plans:  # the statements (search answers these plans natively)
            statement = to_sql(executed_plan(plan))
            assert prefetching.sql(statement).to_pylist() == inline.sql(statement).to_pylist()
        assert threads and all(name.startswith("hdq-nearest") for name in threads)
        functions = prefetching._functions
        assert functions._prefetched == {} and functions._vectors == {}
        assert functions._filters == {}
