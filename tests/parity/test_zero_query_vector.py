"""A hybrid search whose query embeds to a zero vector (an embedder's usual answer when it
fails) is answered by its text branch alone on every engine: BM25 order, finite scores, a
warning logged. A nearest-only search with that vector stays refused, naming it."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from hotdata_retrieval import PlanError
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = ["disk full on node", "the disk is fine", "login page slow", "full moon", "disk disk"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "zero_vectors", bodies_table(BODIES))


def _zeros(_query: str) -> Sequence[float]:
    return [0.0, 0.0]


def test_a_zero_vector_hybrid_search_gives_the_text_order(
    engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    text = engine.search(
        engine.plan_search(SearchRequest(table="zero_vectors", query="disk full", mode="text"))
    )
    with caplog.at_level(logging.WARNING, logger="hotdata_retrieval"):
        plan = engine.plan_search(
            SearchRequest(table="zero_vectors", query="disk full", mode="hybrid"),
            embed_query=_zeros,
        )
    assert "answered by its text branch alone" in caplog.text
    assert "the query 'disk full' embedded to a zero vector" in caplog.text
    hybrid = engine.search(plan)
    assert list(hybrid.keys) == list(text.keys) and list(text.keys)
    assert all(math.isfinite(hit.score) for hit in hybrid.hits)
    assert [hit.score for hit in hybrid.hits] == [hit.score for hit in text.hits]


def test_a_zero_vector_nearest_search_is_refused(engine: Any) -> None:
    with pytest.raises(PlanError, match="all zeros"):
        engine.plan_search(
            SearchRequest(table="zero_vectors", query="disk full", mode="nearest"),
            embed_query=_zeros,
        )


@pytest.mark.parametrize(
    ("option", "value"),
    [("diversity", 0.5), ("formula", [{"factors": ["score"]}])],
)
def test_a_zero_vector_hybrid_search_refuses_what_its_text_branch_cannot_take(
    engine: Any, option: str, value: Any
) -> None:
    # diversity needs the query vector and a formula a fusion: neither is left, and
    # dropping either would change the order asked for; the error says why
    request = SearchRequest(
        table="zero_vectors", query="disk full", mode="hybrid", **{option: value}
    )
    with pytest.raises(PlanError, match=f"{option} cannot apply: .*zero vector") as raised:
        engine.plan_search(request, embed_query=_zeros)
    assert raised.value.field == option


def test_a_zero_vector_in_one_query_of_several_keeps_the_options(engine: Any) -> None:
    def first_fails(query: str) -> Sequence[float]:
        return [0.0, 0.0] if query == "disk full" else [1.0, 2.0]

    plan = engine.plan_search(
        SearchRequest(
            table="zero_vectors",
            query="disk full",
            queries=["full moon"],
            mode="hybrid",
            diversity=0.5,
        ),
        embed_query=first_fails,
    )
    assert engine.search(plan).keys


@pytest.mark.parametrize(
    ("option", "value"),
    [("min_score", 1.0), ("weights", [0.0, 1.0]), ("depth", 1), ("rank_constant", 20)],
)
def test_a_zero_vector_hybrid_search_refuses_fusion_options_with_nothing_to_fuse(
    engine: Any, option: str, value: Any
) -> None:
    # a min_score on fused scores would be kept on BM25 scores, weights muting the text
    # branch would be answered by it alone: the answer asked for cannot be given
    request = SearchRequest(
        table="zero_vectors",
        query="disk full",
        mode="hybrid",
        fusion={"method": "rrf", option: value},
    )
    with pytest.raises(PlanError, match=f"{option} cannot apply: .*zero vector") as raised:
        engine.plan_search(request, embed_query=_zeros)
    assert raised.value.field == option


def test_a_zero_vector_hybrid_search_naming_only_its_method_is_answered(engine: Any) -> None:
    request = SearchRequest(
        table="zero_vectors", query="disk full", mode="hybrid", fusion={"method": "dbsf"}
    )
    plan = engine.plan_search(request, embed_query=_zeros)
    assert list(engine.search(plan).keys)
