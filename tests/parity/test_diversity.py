"""The diversity step on every engine path: a page equals LangChain's
``maximal_marginal_relevance`` (the reference) run over the same candidates — the plan's
statement without the step, returning ``candidates`` rows and their vectors — then cut to
the page. The corpus holds rows with one vector between them (``TIED``), so the order of
ties is checked too, and rows without a vector, which a fused page may hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, ReciprocalRankFusion, SearchPlan
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.engines.results import executed_plan, search_result
from hotdata_retrieval.plan.steps import Diversity, statement_rows
from tests.parity.corpus import TIED, corpus_table
from tests.parity.engines import ENGINE_PATHS, open_engine

QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
CANDIDATES = 24


@pytest.fixture(scope="module", params=ENGINE_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(f"mmr-{name.replace(' ', '-')}"), request)
    opened.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    yield name, opened
    opened.close()


def _nearest(query: list[float], name: str = "local") -> NearestNeighborSearch:
    # turbopuffer ranks by its ANN index only (its fake in the tests is exact)
    exact = name != "turbopuffer"
    return NearestNeighborSearch(table="docs", column="embedding", query_vector=query, exact=exact)


def _hybrid(query: list[float], name: str) -> ReciprocalRankFusion:
    return ReciprocalRankFusion(
        branches=[
            Bm25Search(table="docs", column="body", query_text="error crash"),
            _nearest(query, name),
        ],
        depth=40,
    )


def _run(name: str, engine: Any, plan: SearchPlan) -> list[Any]:
    """The page's keys: ``engine.search``, or for "local statement" the compiled statement
    itself run on DataFusion, its rows through the same steps."""
    if name == "local statement":
        executed = executed_plan(plan)
        statement = to_sql(executed)
        rows = engine.sql(statement).to_pylist()
        return search_result(plan, executed, rows, statement).keys
    return engine.search(plan).keys


def _reference(name: str, engine: Any, plan: SearchPlan, mmr_lambda: float) -> list[Any]:
    """LangChain's MMR over the candidates the plan's statement returns, then the page."""
    candidates = attrs.evolve(
        plan, steps=(), limit=statement_rows(plan), offset=0, include_vectors=True
    )
    hits = engine.search(candidates).hits
    with_vector = [hit for hit in hits if hit.columns["embedding"] is not None]
    without = [hit.key for hit in hits if hit.columns["embedding"] is None]
    query = next(b for b in plan.branches if isinstance(b, NearestNeighborSearch)).query_vector
    chosen = maximal_marginal_relevance(
        np.asarray(query, dtype=np.float64),
        [list(hit.columns["embedding"]) for hit in with_vector],
        lambda_mult=mmr_lambda,
        k=len(with_vector),
    )
    ordered = [with_vector[index].key for index in chosen] + without
    return ordered[plan.offset : plan.offset + plan.limit]


def _tied_query() -> list[float]:
    vector = corpus_table().column("embedding")[TIED[0] - 1].as_py()
    return [value + 0.01 for value in vector]


@pytest.mark.parametrize("mmr_lambda", [0.0, 0.35, 0.5, 1.0])
@pytest.mark.parametrize("shape", ["nearest", "hybrid"])
@pytest.mark.parametrize("query", ["query", "tied"])
def test_a_diverse_page_is_langchains_mmr_over_the_candidates(
    engine: tuple[str, Any], mmr_lambda: float, shape: str, query: str
) -> None:
    name, opened = engine
    vector = QUERY_VECTOR if query == "query" else _tied_query()
    source = _nearest(vector, name) if shape == "nearest" else _hybrid(vector, name)
    for offset in (0, 5):
        plan = SearchPlan(
            source=source,
            limit=6,
            offset=offset,
            steps=[Diversity(mmr_lambda=mmr_lambda, candidates=CANDIDATES)],
        )
        expected = _reference(name, opened, plan, mmr_lambda)
        assert len(expected) == 6
        assert _run(name, opened, plan) == expected
        if mmr_lambda == 1.0 and shape == "nearest":
            # relevance alone is the nearest ranking itself (cosine is the branch's metric)
            plain = attrs.evolve(plan, steps=())
            assert _run(name, opened, plain) == expected


def test_diversity_changes_the_page(engine: tuple[str, Any]) -> None:
    """The tied rows all rank near the query; diversity keeps one of them on the page."""
    name, opened = engine
    plain = SearchPlan(source=_nearest(_tied_query(), name), limit=6)
    diverse = attrs.evolve(plain, steps=[Diversity(mmr_lambda=0.3, candidates=CANDIDATES)])
    tied_plain = [key for key in _run(name, opened, plain) if key in TIED]
    tied_diverse = [key for key in _run(name, opened, diverse) if key in TIED]
    assert len(tied_plain) == len(TIED)
    assert len(tied_diverse) == 1
