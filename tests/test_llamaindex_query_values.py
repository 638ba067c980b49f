"""The LlamaIndex store refuses a query's bad numbers with a ``PlanError`` naming them, as
its other modes and the other doors do (LangChain's ``lambda_mult``, a search's
``diversity``: a number from 0 to 1; every top-k: a whole number of at least 1).

Before: an ``mmr_threshold`` of NaN reached LlamaIndex's MMR helper and came back as
``KeyError: None``, and one of 5 was used as given; an MMR query with no
``similarity_top_k`` raised ``TypeError`` (``4 * None``); a ``hybrid_top_k`` of 0 was read
as no ``hybrid_top_k`` and answered ``similarity_top_k`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError


@pytest.fixture(scope="module")
def store() -> Iterator[HotdataVectorStore]:
    with LocalEngine() as engine:
        nodes = HotdataVectorStore(engine, "nodes")
        nodes.add(
            [TextNode(id_=str(i), text=f"fox {i}", embedding=[1.0, i / 10]) for i in range(6)]
        )
        yield nodes


def _mmr(**fields: Any) -> VectorStoreQuery:
    return VectorStoreQuery(query_embedding=[1.0, 0.0], mode=VectorStoreQueryMode.MMR, **fields)


@pytest.mark.parametrize("threshold", [float("nan"), 5.0, -0.1, True, "0.5"])
def test_an_mmr_threshold_outside_0_to_1_is_refused(
    store: HotdataVectorStore, threshold: Any
) -> None:
    with pytest.raises(PlanError, match="mmr_threshold must be a number between 0 and 1"):
        store.query(_mmr(similarity_top_k=2), mmr_threshold=threshold)
    if not isinstance(threshold, str):  # the query's own field, where its type lets it
        with pytest.raises(PlanError, match="mmr_threshold must be a number between 0 and 1"):
            store.query(_mmr(similarity_top_k=2, mmr_threshold=threshold))


def test_mmr_answers_within_the_range(store: HotdataVectorStore) -> None:
    relevance = store.query(_mmr(similarity_top_k=2, mmr_threshold=1.0))
    plain = store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=2))
    assert relevance.ids == plain.ids


def test_an_mmr_query_without_a_top_k_is_refused(store: HotdataVectorStore) -> None:
    with pytest.raises(PlanError, match="k must be an integer, got None"):
        store.query(_mmr(similarity_top_k=None))


@pytest.mark.parametrize("top_k", [0, -1])
def test_a_hybrid_top_k_below_1_is_refused(store: HotdataVectorStore, top_k: int) -> None:
    query = VectorStoreQuery(
        query_str="fox",
        query_embedding=[1.0, 0.0],
        mode=VectorStoreQueryMode.HYBRID,
        similarity_top_k=2,
        hybrid_top_k=top_k,
    )
    with pytest.raises(PlanError, match="hybrid_top_k must be >= 1"):
        store.query(query)
