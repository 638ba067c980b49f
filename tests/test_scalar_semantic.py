"""The engine-embedded scalar form: ``VectorSearch(scalar=True)`` compiles to hotdata-cli's
``SELECT ..., vector_distance(col, 'text') AS dist FROM c.s.t ORDER BY dist LIMIT n`` and
ranks as the ``vector_search`` table function does on the local engine."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedOnDialectError,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document

BODIES = [
    "cozy apartment near the park",
    "quiet street with trees",
    "loud bar downtown",
    "cozy cabin in the woods",
    "modern loft, quiet and bright",
    "studio by the station",
]


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=32)) as engine:
        table = pa.table({"id": list(range(len(BODIES))), "title": BODIES})
        engine.load_table("listings", table, text_columns=["title"], embed_columns=["title"])
        yield engine


def _semantic(scalar: bool, **options: object) -> VectorSearch:
    return VectorSearch(
        table="listings", column="title", query_text="cozy quiet", scalar=scalar, **options
    )


def test_the_scalar_form_is_hotdata_clis_shape() -> None:
    plan = SearchPlan(source=_semantic(True, result_name="dist"), columns=["id", "title"])
    assert to_sql(plan, pretty=False) == (
        "SELECT id, title, vector_distance(title, 'cozy quiet') AS dist "
        'FROM "default".public.listings ORDER BY dist ASC LIMIT 10'
    )


def test_the_scalar_form_ranks_as_the_table_function(local: LocalEngine) -> None:
    table_function = local.search(SearchPlan(source=_semantic(False), limit=len(BODIES)))
    scalar = local.search(SearchPlan(source=_semantic(True), limit=len(BODIES)))
    distances = {hit.key: hit.distance for hit in table_function.hits}
    assert sorted(distances) == sorted(hit.key for hit in scalar.hits)
    for hit in scalar.hits:
        assert hit.distance == pytest.approx(distances[hit.key], abs=1e-6)
    ordered = [hit.distance for hit in scalar.hits]
    assert ordered == sorted(ordered)
    assert "vector_distance(title, 'cozy quiet')" in scalar.sql


def test_a_scalar_branch_fuses(local: LocalEngine) -> None:
    def fused(scalar: bool) -> SearchPlan:
        return SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="listings", column="title", query_text="cozy quiet"),
                    _semantic(scalar),
                ]
            ),
            limit=4,
        )

    assert [h.key for h in local.search(fused(True)).hits] == [
        h.key for h in local.search(fused(False)).hits
    ]


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
def test_stores_without_engine_embedding_refuse_it(dialect: str) -> None:
    with pytest.raises(UnsupportedOnDialectError, match="engine-embedded semantic"):
        to_sql(SearchPlan(source=_semantic(True)), dialect)


def test_scalar_round_trips_through_documents() -> None:
    plan = SearchPlan(source=_semantic(True))
    document = plan_to_document(plan)
    assert document["branches"][0]["scalar"] is True
    assert plan_from_document(document) == plan
