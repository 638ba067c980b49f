"""The search chain on the Hotdata engine (against the fake REST API) and on an engine from
outside the library (through ``search_table``): the same plan as by hand, the same rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("hotdata_framework")

from hotdata_retrieval import Comparison, SearchPlan, to_sql
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.chain import search_table
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from tests.hotdata_api import FakeHotdataApi

API_KEY = "test-key"
WORKSPACE = "ws_chain"
DATABASE_ID = "db_chain"
EMBEDDER = HashingEmbedder(dimensions=16)
BODIES = ["app crashes on start", "charged twice", "crash in settings", "refund", "app crash"]
RATINGS = [5, 2, 4, 1, 3]


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as engine:
        engine.load_table(
            "tickets",
            pa.table(
                {
                    "id": list(range(len(BODIES))),
                    "body": BODIES,
                    "rating": RATINGS,
                    "embedding": pa.array(
                        EMBEDDER.embed_documents(BODIES), type=pa.list_(pa.float32())
                    ),
                }
            ),
            text_columns=["body"],
        )
        yield engine


@pytest.fixture(scope="module")
def hotdata(local: LocalEngine) -> Iterator[HotdataEngine]:
    with FakeHotdataApi(
        local, api_key=API_KEY, workspace_id=WORKSPACE, database_id=DATABASE_ID
    ) as api:
        api.index_engine_table("tickets")
        api.add_index("tickets", index_type="vector", columns=["embedding"], metric="cosine")
        with HotdataEngine.connect(
            DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=api.url, embedder=EMBEDDER
        ) as engine:
            yield engine


def test_a_hybrid_chain_on_the_hotdata_engine(hotdata: HotdataEngine) -> None:
    search = hotdata.table("tickets").search("app crash", mode="hybrid").where("rating >= 3")
    by_hand = hotdata.plan_search(
        "tickets",
        "app crash",
        mode="hybrid",
        filter=Comparison(column="rating", operator=">=", value=3),
    )
    assert search.plan == by_hand
    assert search.explain(full_vectors=True) == to_sql(by_hand, hotdata.profile)
    rows = search.select("id", "rating").limit(5).to_list()
    assert {row["id"] for row in rows} == {i for i, rating in enumerate(RATINGS) if rating >= 3}
    assert rows == hotdata.search(search.select("id", "rating").limit(5).plan).to_list()


class _Wrapped:
    """An engine from outside the library: the four methods of the contract, no more."""

    def __init__(self, inner: LocalEngine) -> None:
        self.inner = inner

    def search(self, plan: SearchPlan) -> Any:
        return self.inner.search(plan)

    def sql(self, text: str) -> Any:
        return self.inner.sql(text)

    def indexes(self, table: Any) -> Any:
        return self.inner.indexes(table)

    def plan_search(self, request: Any, query: Any = None, /, **options: Any) -> Any:
        return self.inner.plan_search(request, query, **options)


def test_any_engine_of_the_contract_chains_through_search_table(local: LocalEngine) -> None:
    chained = search_table(_Wrapped(local), "tickets").search("crash", mode="text").limit(2)
    assert (
        chained.to_list() == local.table("tickets").search("crash", mode="text").limit(2).to_list()
    )
    assert '"kind": "text"' in chained.explain()  # no profile: the plan document
    with pytest.raises(PlanError, match="42"):
        search_table(local, 42)  # type: ignore[arg-type]
