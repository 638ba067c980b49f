"""The PostgreSQL + pgvector engine on a throwaway server: the HNSW index serves nearest
branches (``EXPLAIN``) with recall against brute force, filtered searches fill their pages,
text ranks by ts_rank_cd, and what the dialect guarantees about pgvector's operators."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
import sqlglot

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.compile import get_dialect
from hotdata_retrieval.engines import Engine
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.postgres import PostgresEngine

ROWS = 3000
DIMENSIONS = 16


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    generator = np.random.default_rng(7)
    # clustered data, as embeddings are (isotropic noise is HNSW's worst case)
    centers = generator.standard_normal((30, DIMENSIONS))
    labels = generator.integers(0, 30, ROWS)
    return (centers[labels] + 0.3 * generator.standard_normal((ROWS, DIMENSIONS))).astype(
        np.float32
    )


@pytest.fixture(scope="module")
def engine(postgres_url: str, vectors: np.ndarray) -> Iterator[PostgresEngine]:
    engine = PostgresEngine(postgres_url)
    data = pa.table(
        {
            "id": np.arange(ROWS, dtype=np.int64),
            "body": [f"doc {i} {'rare' if i % 500 == 0 else 'common'}" for i in range(ROWS)],
            "bucket": [i % 100 for i in range(ROWS)],
            "embedding": pa.array(list(vectors), pa.list_(pa.float32())),
        }
    )
    engine.load_table("points", data, text_columns=["body"], vector_index="hnsw")
    yield engine
    engine.close()


def nearest(query: np.ndarray, metric: str = "cosine") -> NearestNeighborSearch:
    return NearestNeighborSearch(
        table="points", column="embedding", query_vector=query.tolist(), metric=metric
    )


def test_it_meets_the_engine_contract(engine: PostgresEngine) -> None:
    assert isinstance(engine, Engine)
    indexes = engine.indexes("points")
    assert indexes.bm25_columns == ("body",)
    assert [vector.column for vector in indexes.vectors] == ["embedding"]


def test_the_hnsw_index_serves_a_nearest_branch(
    engine: PostgresEngine, vectors: np.ndarray
) -> None:
    plan = SearchPlan(source=nearest(vectors[0]), limit=10)
    explained = engine.explain(plan)
    assert "Index Scan using points__embedding__hnsw" in explained
    fused = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="points", column="body", query_text="rare"),
                nearest(vectors[0]),
            ]
        )
    )
    explained = engine.explain(fused)
    assert "points__embedding__hnsw" in explained
    assert "p6_public_6_points_body_pkey" in explained  # the text branch reads its postings


def test_the_key_column_has_an_index(engine: PostgresEngine) -> None:
    """The key column has an index (``<table>__hdq__key``), by which a fused search's last
    join, an upsert and a delete find rows (at 100,000 rows PostgreSQL otherwise hashes the
    whole table for every fused search; at this test's 3,000 rows its planner may still
    prefer the hash)."""
    indexed = engine._query(
        "SELECT c.relname, a.attname FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = 'public.points'::regclass"
    )[1]
    assert ("points__hdq__key", "id") in indexed


def test_a_key_longer_than_a_btree_entry_loads(postgres_url: str) -> None:
    """A btree entry holds at most about 2,700 bytes, so a unique btree of the keys failed
    the load of a 3,000-character key; the key's hash index holds any. The rows read back
    by key are the rows given."""
    import random
    import string

    letters = random.Random(7)  # random text: PostgreSQL compresses a repeated letter
    keys = ["".join(letters.choices(string.ascii_letters, k=size)) for size in (3_000, 10_000)]
    keys.append("short")
    data = pa.table({"id": keys, "body": ["red fox", "blue whale", "green frog"]})
    with PostgresEngine(postgres_url) as engine:
        engine.load_table("long_keys", data, text_columns=["body"])
        engine.upsert_rows("long_keys", pa.table({"id": [keys[1]], "body": ["grey whale"]}))
        read = engine.read_rows("long_keys", keys, ["id", "body"]).to_pylist()
        engine.delete_rows("long_keys", [keys[0]])
        left = sorted(engine.read_table("long_keys", ["id"]).column("id").to_pylist())
    assert sorted((row["id"], row["body"]) for row in read) == sorted(
        [(keys[0], "red fox"), (keys[1], "grey whale"), (keys[2], "green frog")]
    )
    assert left == sorted(keys[1:])


def test_hnsw_recall_at_10(engine: PostgresEngine, vectors: np.ndarray) -> None:
    generator = np.random.default_rng(11)
    normalized = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    recalls = []
    for row in generator.integers(0, ROWS, 20):
        query = vectors[row] + 0.05 * generator.standard_normal(DIMENSIONS).astype(np.float32)
        exact = np.argsort(1 - normalized @ (query / np.linalg.norm(query)), kind="stable")[:10]
        found = engine.search(SearchPlan(source=nearest(query), limit=10)).keys
        recalls.append(len(set(found) & set(exact.tolist())) / 10)
    assert np.mean(recalls) >= 0.95


def test_a_selective_filter_fills_the_page(engine: PostgresEngine, vectors: np.ndarray) -> None:
    """pgvector 0.6 has no iterative index scan: the filtered statement runs without index
    scans, so all 10 rows of the 30 that pass come back (bug-cases B18)."""
    plan = SearchPlan(
        source=nearest(vectors[1]),
        limit=10,
        filter=Comparison(column="bucket", operator="=", value=7),
    )
    result = engine.search(plan)
    assert len(result) == 10 and result.underfilled is None
    passing = np.flatnonzero(np.arange(ROWS) % 100 == 7)
    normalized = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[1] / np.linalg.norm(vectors[1])
    distances = 1 - normalized[passing] @ query
    assert result.keys == passing[np.argsort(distances, kind="stable")][:10].tolist()


def test_text_ranks_by_ts_rank_cd(engine: PostgresEngine) -> None:
    result = engine.search(
        SearchPlan(source=Bm25Search(table="points", column="body", query_text="rare"), limit=10)
    )
    assert result.keys == [0, 500, 1000, 1500, 2000, 2500]
    assert len({hit.score for hit in result}) == 1  # equal documents, equal rank, key order


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_operators_are_written_so_no_reparse_changes_them(metric: str) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=[1.0, 0.5], metric=metric
        )
    )
    sql = to_sql(plan, "postgres")
    for operator in ("<=>", "<->", "<#>"):
        assert sql.count(operator) == sql.count(f"OPERATOR(public.{operator})")
    reparsed = sqlglot.parse_one(sql, read="postgres").sql("postgres")
    assert "IS NOT DISTINCT FROM" not in reparsed
    assert sqlglot.parse_one(reparsed, read="postgres") == sqlglot.parse_one(sql, read="postgres")


def test_l2_reports_the_squared_euclidean_distance(
    engine: PostgresEngine, vectors: np.ndarray
) -> None:
    """pgvector's <-> is the Euclidean distance; the plan's l2 is its square, as on Hotdata."""
    query = vectors[3] + 1.0
    result = engine.search(SearchPlan(source=nearest(query, "l2"), limit=3))
    for hit in result:
        expected = float(np.sum((vectors[hit.key].astype(np.float64) - query) ** 2))
        assert hit.distance == pytest.approx(expected, rel=1e-5)
    assert "OPERATOR(public.<->)" in result.sql and "vector_l2_squared_distance" in result.sql


def test_semantic_search_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on postgres: engine-embedded"):
        to_sql(SearchPlan(source=VectorSearch(table="t", column="c", query_text="q")), "postgres")
    assert get_dialect("postgres").name == "postgres"


def test_sql_is_read_only(engine: PostgresEngine) -> None:
    with pytest.raises(EngineError, match="read-only"):
        engine.sql("DELETE FROM points")
    assert engine.sql("SELECT COUNT(*) AS n FROM points").column("n").to_pylist() == [ROWS]


def test_an_unreachable_server_is_an_engine_error() -> None:
    with pytest.raises(EngineError, match="cannot connect to PostgreSQL"):
        PostgresEngine("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2")


def test_a_page_past_hnsw_ef_search_is_full(engine: PostgresEngine, vectors: np.ndarray) -> None:
    """An HNSW index scan stops at ``hnsw.ef_search`` candidates (pgvector's default 40), so
    a top-60, a page at offset 50 or a fused branch of depth 100 must not be cut there."""
    query = vectors[5]
    normalized = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = np.argsort(1 - normalized @ (query / np.linalg.norm(query)), kind="stable")
    whole = engine.search(SearchPlan(source=nearest(query), limit=60))
    assert len(whole) == 60 and whole.underfilled is None
    assert len(set(whole.keys) & set(exact[:60].tolist())) / 60 >= 0.95
    page = engine.search(SearchPlan(source=nearest(query), limit=10, offset=50))
    assert page.keys == whole.keys[50:]
    fused = engine.search(
        SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="points", column="body", query_text="rare"),
                    nearest(query),
                ]
            ),
            limit=100,
        )
    )
    nearest_ranks = [
        score.rank
        for hit in fused
        for name, score in hit.branches.items()
        if name != "text" and score.rank is not None
    ]
    # 6 rows match "rare": the other 94 of the 100 come from the nearest branch alone
    assert len(fused) == 100 and max(nearest_ranks) >= 94


def _index_options(engine: PostgresEngine, index: str) -> list[str]:
    found = engine.sql(f"SELECT reloptions FROM pg_class WHERE relname = '{index}'")
    (options,) = found.column("reloptions").to_pylist()
    return sorted(options or [])


def test_hnsw_settings_become_the_index_options(
    engine: PostgresEngine, vectors: np.ndarray
) -> None:
    from hotdata_retrieval.engines import HnswSettings

    data = pa.table(
        {
            "id": np.arange(200, dtype=np.int64),
            "embedding": pa.array(list(vectors[:200]), pa.list_(pa.float32())),
        }
    )
    settings = HnswSettings(connectivity=8, expansion_add=40, storage="float32")
    engine.load_table("tuned", data, vector_index="hnsw", hnsw_settings=settings)
    assert _index_options(engine, "tuned__embedding__hnsw") == ["ef_construction=40", "m=8"]
    engine.load_table("plain", data, vector_index="hnsw")  # pgvector's defaults, written out
    assert _index_options(engine, "plain__embedding__hnsw") == ["ef_construction=64", "m=16"]
    query = vectors[0].tolist()
    plan = SearchPlan(
        source=NearestNeighborSearch(table="tuned", column="embedding", query_vector=query),
        limit=5,
    )
    assert "Index Scan using tuned__embedding__hnsw" in engine.explain(plan)


@pytest.mark.parametrize(
    ("settings", "setting"),
    [
        ({"expansion_search": 100}, "expansion_search"),
        ({"storage": "int8"}, "storage"),
        ({"storage": "float16"}, "storage"),
        ({"connectivity": 40, "expansion_add": 64}, "expansion_add"),
    ],
)
def test_hnsw_settings_pgvector_cannot_take_are_refused(
    engine: PostgresEngine, settings: dict[str, object], setting: str
) -> None:
    from hotdata_retrieval import HnswSettingsError
    from hotdata_retrieval.engines import HnswSettings

    data = pa.table({"id": [1], "embedding": pa.array([[1.0, 0.0]], pa.list_(pa.float32()))})
    with pytest.raises(HnswSettingsError) as raised:
        engine.load_table(
            "refused", data, vector_index="hnsw", hnsw_settings=HnswSettings(**settings)
        )
    assert raised.value.setting == setting
    with pytest.raises(HnswSettingsError, match="pass vector_index='hnsw' too"):
        engine.load_table("refused", data, hnsw_settings=HnswSettings())
    with pytest.raises(EngineError, match="not found"):
        engine.indexes("refused")


def test_a_text_index_without_postings_asks_for_a_new_load(engine: PostgresEngine) -> None:
    """A table loaded by a release that wrote no postings (no ``hdq__row`` column, no
    postings table; its terms under a GIN index) is not searched by text with a missing
    statistic: the column has no full-text index until the table is loaded again."""
    from hotdata_retrieval.compile.postgres import ROW_COLUMN, postings_table
    from hotdata_retrieval.compile.statements import drop_table
    from hotdata_retrieval.plan.names import TableName

    data = pa.table({"id": [1, 2], "body": ["disk full", "disk fine"]})
    engine.load_table("earlier", data, key_column="id", text_columns=["body"])
    plan = SearchPlan(source=Bm25Search(table="earlier", column="body", query_text="full"))
    assert engine.search(plan).keys == [1]
    engine._execute(drop_table(engine.profile, postings_table(TableName.parse("earlier"), "body")))
    engine._execute(f'ALTER TABLE "public"."earlier" DROP COLUMN "{ROW_COLUMN}"')
    with pytest.raises(EngineError, match=r"column 'body' of table .* has no full-text index"):
        engine.search(plan)
    engine.load_table("earlier", data, key_column="id", text_columns=["body"])
    assert engine.search(plan).keys == [1]
    assert engine.describe("earlier").columns == ("id", "body")


def test_a_column_named_like_the_row_numbers_is_refused(engine: PostgresEngine) -> None:
    data = pa.table({"id": [1], "body": ["disk"], "hdq__row": [7]})
    with pytest.raises(EngineError, match=r"^column 'hdq__row' holds each row's number"):
        engine.load_table("numbered", data, key_column="id", text_columns=["body"])
    engine.load_table("numbered", data, key_column="id")  # no text index: an ordinary column
    assert engine.describe("numbered").columns == ("id", "body", "hdq__row")


def test_the_largest_norm_bounds_a_dot_search_after_each_change(engine: PostgresEngine) -> None:
    """pgvector sums ``<#>`` in Float32, so a dot search whose query's norm times the
    column's largest norm is past half of Float32's largest number is refused: the catalog's
    largest norm is raised by an upsert and left by a delete (an upper bound), and a table
    loaded before it was recorded has its column read. The bound is computed here from the
    rows, apart from the library."""
    from hotdata_retrieval.compile.statements import catalog_delete
    from hotdata_retrieval.engines.store import LARGEST_NORM_ROLE
    from hotdata_retrieval.errors import PlanError

    vector_type = pa.list_(pa.float32(), 2)
    small = pa.table({"id": [1, 2], "v": pa.array([[1.0, 0.0], [0.0, 1.0]], vector_type)})
    large = pa.table({"id": [3], "v": pa.array([[-3e38, 3e38]], vector_type)})
    query = [1e38, 0.0]
    bound = float(np.finfo(np.float32).max) / 2

    def fits(rows: list[list[float]]) -> bool:
        norms = np.linalg.norm(np.array(rows, dtype=np.float32).astype(np.float64), axis=1)
        return float(norms.max()) * float(np.linalg.norm(query)) <= bound

    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="dot_norms", column="v", query_vector=query, metric="dot"
        ),
        key_column="id",
    )
    refused = r"query_vector \(norm 1e\+38\) .* vector column 'v' .* sums the products in Float32"
    engine.load_table("dot_norms", small, key_column="id", vector_metric="dot")
    assert fits(small.column("v").to_pylist())
    assert engine.search(plan).keys == [1, 2]
    engine.upsert_rows("dot_norms", large)
    assert not fits([*small.column("v").to_pylist(), *large.column("v").to_pylist()])
    with pytest.raises(PlanError, match=refused):
        engine.search(plan)
    engine.delete_rows("dot_norms", [3])
    with pytest.raises(PlanError, match=refused):  # the bound a delete leaves
        engine.check_plan(plan)
    engine.load_table("dot_norms", small, key_column="id", vector_metric="dot")
    assert engine.search(plan).keys == [1, 2]

    def forgotten(rows: pa.Table) -> None:  # as a table an earlier release loaded
        engine.load_table("dot_norms", rows, key_column="id", vector_metric="dot")
        engine._execute(catalog_delete(engine.profile, "public", "dot_norms", LARGEST_NORM_ROLE))
        assert engine.describe("dot_norms").vectors[0].largest_norm is None

    forgotten(small)
    assert engine.search(plan).keys == [1, 2]
    forgotten(pa.concat_tables([small, large]))
    with pytest.raises(PlanError, match=refused):
        engine.search(plan)
