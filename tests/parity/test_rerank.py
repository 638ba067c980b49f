"""The rerank step on every engine path: with the deterministic test reranker, a page is
the reference order of the plan's first ``top_n`` candidates (the same plan without the
step), sorted by the reranker's score with ties in candidate order, then cut to the page;
after diversity it reranks the diversified candidates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, ReciprocalRankFusion, SearchPlan
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.embed.reranking import TermOverlapReranker
from hotdata_retrieval.engines.results import executed_plan, search_result
from hotdata_retrieval.plan.steps import Diversity, Rerank
from tests.parity.corpus import corpus_table
from tests.parity.engines import ENGINE_PATHS, open_engine

QUERY_TEXT = "error upgrade crash"
QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
TOP_N = 20


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(f"rr-{name.replace(' ', '-')}"), request)
    opened.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    yield name, opened
    opened.close()


def _sources(name: str) -> dict[str, Any]:
    text = Bm25Search(table="docs", column="body", query_text=QUERY_TEXT)
    nearest = NearestNeighborSearch(
        table="docs",
        column="embedding",
        query_vector=QUERY_VECTOR,
        exact=name != "turbopuffer",  # turbopuffer ranks by its ANN index only
    )
    return {"text": text, "hybrid": ReciprocalRankFusion(branches=[text, nearest], depth=40)}


def _hits(name: str, engine: Any, plan: SearchPlan) -> Any:
    if name == "local statement":  # the compiled statement on DataFusion, then the steps
        executed = executed_plan(plan)
        statement = to_sql(executed)
        return search_result(plan, executed, engine.sql(statement).to_pylist(), statement).hits
    return engine.search(plan).hits


def _reference(name: str, engine: Any, plan: SearchPlan) -> list[Any]:
    candidates = attrs.evolve(plan, steps=(), limit=TOP_N, offset=0, columns=["id", "body"])
    hits = _hits(name, engine, candidates)
    scores = TermOverlapReranker().score([(QUERY_TEXT, hit.columns["body"]) for hit in hits])
    order = sorted(range(len(hits)), key=lambda position: -scores[position])
    return [hits[position].key for position in order][plan.offset : plan.offset + plan.limit]


@pytest.mark.parametrize("shape", ["text", "hybrid"])
@pytest.mark.parametrize("offset", [0, 4])
def test_a_reranked_page_is_the_reference_order_of_the_top_n(
    engine: tuple[str, Any], shape: str, offset: int
) -> None:
    name, opened = engine
    plan = SearchPlan(
        source=_sources(name)[shape],
        limit=5,
        offset=offset,
        steps=[Rerank(model="term-overlap", top_n=TOP_N)],
    )
    expected = _reference(name, opened, plan)
    hits = _hits(name, opened, plan)
    assert [hit.key for hit in hits] == expected
    scores = [hit.rerank_score for hit in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    if shape == "hybrid":  # BM25 orders much as term overlap does; a fusion does not
        plain = _hits(name, opened, attrs.evolve(plan, steps=()))
        assert expected != [hit.key for hit in plain]


def test_rerank_after_diversity_reorders_the_diversified_candidates(
    engine: tuple[str, Any],
) -> None:
    name, opened = engine
    diverse = SearchPlan(
        source=_sources(name)["hybrid"],
        limit=TOP_N,
        steps=[Diversity(mmr_lambda=0.3, candidates=30)],
    )
    chosen = _hits(name, opened, diverse)
    both = attrs.evolve(
        diverse, limit=5, steps=[*diverse.steps, Rerank(model="term-overlap", top_n=TOP_N)]
    )
    scores = TermOverlapReranker().score([(QUERY_TEXT, hit.columns["body"]) for hit in chosen])
    order = sorted(range(len(chosen)), key=lambda position: -scores[position])
    assert [hit.key for hit in _hits(name, opened, both)] == [chosen[i].key for i in order][:5]
