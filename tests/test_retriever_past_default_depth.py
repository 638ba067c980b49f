"""The LangChain retriever serves a ``k`` past a fusion's default depth (200) as the tools and
the vector stores do: a fusion that names no depth ranks ``k`` candidates per branch.

Before: ``HotdataRetriever(...).invoke(query, k=201)`` on a table searched by words and by
meaning raised ``PlanError: limit + offset = 201 reaches past the default depth 200``, where
``SearchToolkit`` (``max_rows`` above 200) and ``DocumentStore.hybrid_search`` answered.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters.langchain import HotdataRetriever
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.routing import FusionChoice, SearchRequest

ROWS = 260
K = 230


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as opened:
        rows = pa.table(
            {
                "id": list(range(ROWS)),
                "body": [f"fox {i % 7} sky {i % 11} river {i}" for i in range(ROWS)],
            }
        )
        opened.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield opened


@pytest.mark.parametrize("fusion", [None, "rrf", {"method": "dbsf", "alpha": 0.3}])
def test_a_fused_k_past_the_default_depth_is_served(engine: LocalEngine, fusion: object) -> None:
    documents = HotdataRetriever(engine=engine, table="docs", fusion=fusion).invoke("fox sky", k=K)
    choice = FusionChoice.of(fusion) or FusionChoice()
    deep = FusionChoice(method=choice.method, options={**choice.options, "depth": K})
    reference = engine.search(
        engine.plan_search(
            SearchRequest(table="docs", query="fox sky", mode="hybrid", limit=K, fusion=deep)
        )
    )
    assert [int(document.id) for document in documents] == list(reference.keys)
    assert len(documents) == K


def test_a_search_that_does_not_fuse_is_unchanged(engine: LocalEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="docs", mode="text").invoke("river", k=K)
    assert len(documents) == K


def test_a_depth_the_caller_names_is_kept(engine: LocalEngine) -> None:
    retriever = HotdataRetriever(engine=engine, table="docs", fusion={"method": "rrf", "depth": 50})
    with pytest.raises(PlanError, match="reaches past depth 50"):
        retriever.invoke("fox sky", k=K)
