"""Names the caller chooses, and vectors returned on request: a branch's score or distance
under its ``result_name``, a fusion's score under ``score_name`` (or not at all, one branch's
distance in its place), the searched vectors with ``include_vectors``; the statement ends in
``ORDER BY ... LIMIT`` and keeps its order when wrapped. Each run on a real engine and
compared with a NumPy reference."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document

ROWS = 40
GENERATOR = np.random.default_rng(5)
VECTORS = GENERATOR.standard_normal((ROWS, 4)).astype(np.float32)
QUERY = [0.3, -0.2, 0.9, 0.1]
WORDS = ["disk", "full", "error", "network"]


def _table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(ROWS)),
            "body": [" ".join(WORDS[: 1 + key % len(WORDS)]) for key in range(ROWS)],
            "created": [key % 5 for key in range(ROWS)],
            "embedding": pa.array(VECTORS.tolist(), pa.list_(pa.float32(), 4)),
        }
    )


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from hotdata_retrieval.engines.local import LocalEngine

    engine = LocalEngine(tmp_path_factory.mktemp("names") / "db")
    engine.load_table("docs", _table(), text_columns=["body"])
    yield engine
    engine.close()


def _distances() -> np.ndarray:
    query = np.asarray(QUERY)
    vectors = VECTORS.astype(np.float64)
    return np.asarray(
        1.0 - vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    )


def _nearest_order(limit: int) -> list[int]:
    distances = _distances()
    return [int(key) for key in np.lexsort((np.arange(ROWS), distances))[:limit]]


def _nearest(**options: Any) -> NearestNeighborSearch:
    return NearestNeighborSearch(table="docs", column="embedding", query_vector=QUERY, **options)


@pytest.mark.parametrize("name", ["dist", "distance"])
def test_a_renamed_distance_is_the_distance_and_keeps_its_order_when_wrapped(
    local: Any, name: str
) -> None:
    plan = SearchPlan(source=_nearest(result_name=name), limit=8)
    sql = to_sql(plan, pretty=False)
    assert f" AS {name} " in sql and sql.endswith(f"ORDER BY {name} ASC LIMIT 8")
    rows = local.sql(sql).to_pylist()
    assert [row["id"] for row in rows] == _nearest_order(8)
    expected = _distances()
    for row in rows:
        assert row[name] == pytest.approx(expected[row["id"]], abs=1e-6)
    wrapped = local.sql(f"SELECT * FROM ({sql}) AS wrapped LIMIT 5").to_pylist()
    assert [row["id"] for row in wrapped] == _nearest_order(5)


@pytest.mark.parametrize(
    "source",
    [
        Bm25Search(table="docs", column="body", query_text="disk error", result_name="rank"),
        ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="disk error"),
                _nearest(result_name="distance"),
            ]
        ),
    ],
    ids=["text", "fusion"],
)
def test_every_shape_survives_being_wrapped(local: Any, source: Any) -> None:
    plan = SearchPlan(source=source, limit=10)
    sql = to_sql(plan, pretty=False)
    assert " ORDER BY " in sql and sql.endswith("LIMIT 10")
    direct = [row["id"] for row in local.sql(sql).to_pylist()]
    wrapped = local.sql(f"SELECT * FROM ({sql}) AS wrapped LIMIT 6").to_pylist()
    assert [row["id"] for row in wrapped] == direct[:6]


def test_a_fusion_can_return_one_branchs_distance_instead_of_its_score(local: Any) -> None:
    """hotmemory's recall: the fused order, each row's content distance as `distance`, ties
    broken by that distance and a recency column."""
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="network"),
                _nearest(result_name="distance"),
            ],
            depth=ROWS,
        ),
        score_name=None,
        tie_breakers=["distance", "created desc"],
        limit=ROWS,
    )
    rows = local.sql(to_sql(plan)).to_pylist()
    assert set(rows[0]) == {"id", "body", "distance"}
    expected = _distances()
    for row in rows:
        if row["distance"] is not None:
            assert row["distance"] == pytest.approx(expected[row["id"]], abs=1e-6)
    # The same rows in the same order as the plan that returns the score.
    scored = SearchPlan(
        source=plan.source, tie_breakers=plan.tie_breakers, limit=ROWS, include_branch_scores=True
    )
    assert [row["id"] for row in rows] == [hit.key for hit in local.search(scored).hits]
    assert [hit.key for hit in local.search(plan).hits] == [row["id"] for row in rows]


def test_a_fused_score_under_another_name(local: Any) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[Bm25Search(table="docs", column="body", query_text="disk"), _nearest()]
        ),
        score_name="relevance",
        limit=5,
    )
    rows = local.sql(to_sql(plan)).to_pylist()
    scores = [row["relevance"] for row in rows]
    assert scores == sorted(scores, reverse=True)
    assert [hit.score for hit in local.search(plan).hits] == pytest.approx(scores)


def test_vectors_come_back_on_request(local: Any) -> None:
    plan = SearchPlan(source=_nearest(), include_vectors=True, limit=4)
    assert plan.projection == ("id", "embedding")
    hits = local.search(plan).hits
    assert [hit.key for hit in hits] == _nearest_order(4)
    for hit in hits:
        assert hit.columns["embedding"] == pytest.approx(VECTORS[hit.key].tolist())
    fused = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[Bm25Search(table="docs", column="body", query_text="disk"), _nearest()]
        ),
        include_vectors=True,
        limit=4,
    )
    for hit in local.search(fused).hits:
        assert hit.columns["embedding"] == pytest.approx(VECTORS[hit.key].tolist())


def test_a_single_branch_returning_its_vectors_is_linted_as_off_the_fast_path() -> None:
    from hotdata_retrieval.lint import RULES, IndexCatalog, lint

    catalog = IndexCatalog.from_dict(
        {"indexes": [{"table": "docs", "columns": ["embedding"], "kind": "vector"}]}
    )
    code = {rule.name: rule.code for rule in RULES}["vector-column-in-output"]
    plain = to_sql(SearchPlan(source=_nearest(), limit=4))
    with_vectors = to_sql(SearchPlan(source=_nearest(), include_vectors=True, limit=4))
    assert code not in [finding.code for finding in lint(plain, catalog)]
    assert code in [finding.code for finding in lint(with_vectors, catalog)]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda: SearchPlan(source=_nearest(), score_name="relevance"),
            "score_name names a fusion's score",
        ),
        (
            lambda: SearchPlan(
                source=ReciprocalRankFusion(
                    branches=[
                        Bm25Search(table="docs", column="body", query_text="q", result_name="x"),
                        _nearest(result_name="x"),
                    ]
                )
            ),
            "result column 'x' is named twice",
        ),
        (
            lambda: SearchPlan(source=_nearest(result_name="id")),
            "key column 'id' collides",
        ),
        (
            lambda: SearchPlan(
                source=ReciprocalRankFusion(
                    branches=[Bm25Search(table="docs", column="body", query_text="q"), _nearest()]
                ),
                tie_breakers=["nearest_distance"],
            ),
            "is a branch's debug column",
        ),
        (lambda: _nearest(result_name=""), "result column name"),
    ],
)
def test_bad_names_are_refused(make: Any, pattern: str) -> None:
    with pytest.raises(PlanError, match=pattern):
        make()


def test_a_name_that_is_a_table_column_is_refused_by_the_engine(local: Any) -> None:
    with pytest.raises(PlanError, match="result column name 'created' is a column of table"):
        local.search(SearchPlan(source=_nearest(result_name="created")))


def test_names_and_vectors_round_trip_through_documents() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="q", result_name="relevance"),
                _nearest(result_name="distance"),
            ]
        ),
        score_name=None,
        include_vectors=True,
        tie_breakers=["distance"],
    )
    document = plan_to_document(plan)
    assert document["score_name"] is False
    assert document["branches"][1]["result_name"] == "distance"
    assert plan_from_document(document) == plan
