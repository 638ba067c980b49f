"""``exact=True`` on a nearest-neighbour branch: a shape no vector index answers, exact rows
on every engine, an HNSW index never consulted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedOnDialectError,
    to_sql,
)
from hotdata_retrieval.compile.turbopuffer import turbopuffer_request
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.distance import float32_distances
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex
from hotdata_retrieval.lint import RULES, IndexCatalog, lint
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document

ROWS = 600
RULES_BY_NAME = {rule.name: rule for rule in RULES}
DIMENSIONS = 8
GENERATOR = np.random.default_rng(11)
VECTORS = GENERATOR.standard_normal((ROWS, DIMENSIONS)).astype(np.float32)
QUERY = GENERATOR.standard_normal(DIMENSIONS).astype(np.float64).tolist()

CATALOG = {
    "indexes": [
        {"table": "docs", "columns": ["embedding"], "kind": "vector", "metric": "cosine"},
        {"table": "docs", "columns": ["body"], "kind": "bm25"},
    ],
    "tables": [{"table": "docs", "unique_keys": ["id"]}],
}


ALIASED_SCAN = RULES_BY_NAME["aliased-scan-without-wrap"].code


def _nearest(exact: bool, **options: Any) -> SearchPlan:
    return SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=QUERY, exact=exact
        ),
        **options,
    )


def _fast_path_findings(sql: str) -> list[str]:
    catalog = IndexCatalog.from_dict(CATALOG)
    return [finding.code for finding in lint(sql, catalog=catalog)]


def test_the_exact_shape_is_not_the_index_shape() -> None:
    fast = to_sql(_nearest(False, limit=5))
    exact = to_sql(_nearest(True, limit=5))
    assert "AS exact_scan" in exact and "ORDER BY\n  _distance ASC,\n  id ASC" in exact
    assert _fast_path_findings(fast) == []
    assert ALIASED_SCAN in _fast_path_findings(exact)


def test_an_exact_branch_of_a_fusion_is_not_the_index_shape() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="q"),
                NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=QUERY, exact=True
                ),
            ]
        )
    )
    assert ALIASED_SCAN in _fast_path_findings(to_sql(plan))


def _reference(limit: int) -> list[int]:
    """Cosine distances in float64, ties (none here) by key."""
    query = np.asarray(QUERY)
    vectors = VECTORS.astype(np.float64)
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    distances = 1.0 - cosine
    return [int(key) for key in np.lexsort((np.arange(ROWS), distances))[:limit]]


@pytest.fixture(scope="module")
def hnsw_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    engine = LocalEngine(tmp_path_factory.mktemp("exact") / "db")
    table = pa.table(
        {
            "id": list(range(ROWS)),
            "body": ["text"] * ROWS,
            "embedding": pa.array(VECTORS.tolist(), pa.list_(pa.float32(), DIMENSIONS)),
        }
    )
    engine.load_table("docs", table, text_columns=["body"], vector_index="hnsw")
    yield engine
    engine.close()


def test_exact_rows_on_an_hnsw_table_even_when_the_index_is_wrong(
    hnsw_engine: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def farthest(
        self: VectorColumnIndex, function: str, vector: Any, k: int, tie_order: Any
    ) -> Any:
        """A broken index: the k farthest rows."""
        rowids = np.arange(self.rows)
        distances = self.exact(function, vector, rowids)
        order = np.argsort(-distances)[:k]
        return rowids[order], distances[order], float32_distances(distances[order])

    monkeypatch.setattr(VectorColumnIndex, "_hnsw_nearest", farthest)
    limit = 10
    asked = [hit.key for hit in hnsw_engine.search(_nearest(False, limit=limit)).hits]
    exact = [hit.key for hit in hnsw_engine.search(_nearest(True, limit=limit)).hits]
    assert asked != _reference(limit)  # the plain branch did ask the (broken) index
    assert exact == _reference(limit)
    statement = hnsw_engine.sql(to_sql(_nearest(True, limit=limit))).to_pylist()
    assert [row["id"] for row in statement] == _reference(limit)


def test_exact_pages_tile_the_exact_ranking(hnsw_engine: LocalEngine) -> None:
    pages = []
    for offset in range(0, 30, 7):
        plan = _nearest(True, limit=7, offset=offset)
        pages.extend(hit.key for hit in hnsw_engine.search(plan).hits)
    assert pages == _reference(35)


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
def test_stores_compile_an_exact_branch_with_a_key_tie_break(dialect: str) -> None:
    sql = to_sql(_nearest(True, limit=5), dialect, pretty=False)
    assert '"id" ASC' in sql


def test_postgres_orders_an_exact_branch_by_no_operator_expression() -> None:
    sql = to_sql(_nearest(True, limit=5, key_column=None), "postgres", pretty=False)
    assert "FETCH FIRST" not in sql and "WITH TIES" not in sql
    assert sql.endswith('ORDER BY "_distance" ASC LIMIT 5')
    dot = SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=QUERY, metric="dot", exact=True
        ),
        key_column=None,
    )
    assert "OPERATOR(public.<#>)" in to_sql(dot, "postgres", pretty=False)
    assert ") + 0 AS" in to_sql(dot, "postgres", pretty=False)


def test_turbopuffer_refuses_an_exact_branch() -> None:
    with pytest.raises(UnsupportedOnDialectError, match="an exact nearest-neighbour scan"):
        turbopuffer_request(_nearest(True))


def test_exact_round_trips_through_plan_documents(tmp_path: Path) -> None:
    plan = _nearest(True, limit=3)
    document = plan_to_document(plan)
    assert document["branches"][0]["exact"] is True
    assert plan_from_document(document) == plan
    assert plan_from_document(plan_to_document(_nearest(False))) == _nearest(False)


def test_an_exact_branch_of_a_fusion_ignores_a_broken_index(
    hnsw_engine: LocalEngine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fused(exact: bool) -> SearchPlan:
        return SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="docs", column="body", query_text="text"),
                    NearestNeighborSearch(
                        table="docs", column="embedding", query_vector=QUERY, exact=exact
                    ),
                ],
                depth=20,
                weights=[1, 2],  # the vector branch's order decides the page
            ),
            limit=10,
        )

    def nothing(self: VectorColumnIndex, function: str, vector: Any, k: int, tie_order: Any) -> Any:
        """A broken index: finds nothing."""
        return (
            np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.float64),
            np.empty(0, dtype=np.float32),
        )

    with LocalEngine(tmp_path / "plain") as plain:
        plain.load_table("docs", hnsw_engine.read_table("docs"), text_columns=["body"])
        expected = [hit.key for hit in plain.search(fused(False)).hits]
    monkeypatch.setattr(VectorColumnIndex, "_hnsw_nearest", nothing)
    assert [hit.key for hit in hnsw_engine.search(fused(True)).hits] == expected
    assert [hit.key for hit in hnsw_engine.search(fused(False)).hits] != expected


def test_a_float32_column_is_held_once_as_its_matrix() -> None:
    """A float32 column without NULL rows (what a load writes) is searched in place: the
    matrix is a read-only view of the Arrow values buffer, not a second copy."""
    column = pa.chunked_array([pa.array(VECTORS.tolist(), type=pa.list_(pa.float32()))])
    index = VectorColumnIndex(column)
    values = column.chunk(0).values
    assert not index.matrix.flags.writeable
    assert index.matrix.ctypes.data == values.buffers()[1].address
    assert np.array_equal(index.matrix, VECTORS)


@pytest.mark.parametrize(
    "column",
    [
        pa.array([*VECTORS[:3].tolist(), None], type=pa.list_(pa.float32())),
        pa.array(VECTORS[:4].astype(np.float64).tolist(), type=pa.list_(pa.float64())),
    ],
    ids=["a NULL row", "float64"],
)
def test_other_columns_are_copied_into_a_float32_matrix(column: pa.Array) -> None:
    index = VectorColumnIndex(column)
    assert index.matrix.flags.writeable and index.matrix.dtype == np.float32
    expected = VECTORS[:4].copy()
    if column.null_count:
        expected[3] = 0.0
    assert np.array_equal(index.matrix, expected)


@pytest.mark.parametrize("function", ["cosine_distance", "l2_distance", "negative_dot_product"])
@pytest.mark.parametrize("kept", [1, 7, ROWS // 8, ROWS // 2])
def test_a_masked_search_is_the_float64_ranking_of_the_kept_rows(function: str, kept: int) -> None:
    """Under a filter keeping few rows (screened over those rows alone) or many (screened
    over every row, then masked), the answer is a float64 scan of the kept rows, ordered by
    (distance rounded to float32, rowid)."""
    index = VectorColumnIndex(pa.array(VECTORS.tolist(), type=pa.list_(pa.float32())))
    mask = np.zeros(ROWS, dtype=bool)
    mask[np.random.default_rng(kept).choice(ROWS, size=kept, replace=False)] = True
    # The query is read as float32, as an ARRAY literal is for the distance functions.
    matrix, query = VECTORS.astype(np.float64), np.float32(QUERY).astype(np.float64)
    if function == "cosine_distance":
        distances = 1 - matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    elif function == "l2_distance":
        distances = ((matrix - query) ** 2).sum(axis=1)  # squared, as the engine's l2_distance
    else:
        distances = -(matrix @ query)
    kept_rows = np.flatnonzero(mask)
    order = np.lexsort((kept_rows, distances[kept_rows].astype(np.float32)))
    expected = kept_rows[order][:10]
    rowids, found = index.nearest(function, QUERY, 10, mask=mask)
    assert rowids.tolist() == expected.tolist()
    assert np.allclose(found, distances[expected], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("function", ["cosine_distance", "l2_distance", "negative_dot_product"])
def test_a_broadcast_query_gives_the_distances_of_its_rows_written_out(function: str) -> None:
    """The kernels take a search's one query broadcast to every row (stride 0) and compute
    its norm once: the distances are those of the same query written out row by row."""
    from hotdata_retrieval.engines.local.distance import DISTANCE_KERNELS

    rows = VECTORS.astype(np.float64)
    query = np.asarray(QUERY)
    broadcast = np.broadcast_to(query, rows.shape)
    assert broadcast.strides[0] == 0
    written_out = np.tile(query, (ROWS, 1))
    kernel = DISTANCE_KERNELS[function]
    assert kernel(rows, broadcast).tolist() == kernel(rows, written_out).tolist()
