"""Cursor pages on every engine: a walk over a 200-row ranking in pages of 7, each page asked
for with the previous page's ``next_after``, returns the unpaged ranking row for row (ties
on the score included, which the key orders); a token from another search is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.plan.search import Source
from tests.parity.engines import STORE_ENGINES, open_engine

ROWS = 200
PAGE = 7
WORDS = ["disk", "full", "error", "crash", "network", "slow", "login", "fail"]


def _table() -> pa.Table:
    # every body holds "disk" (1 to 3 times), so the text branch ranks all 200, in ties
    return pa.table(
        {
            "id": list(range(ROWS)),
            "body": [
                " ".join(["disk"] * (1 + index % 3) + [WORDS[index % len(WORDS)]] * (index % 4))
                for index in range(ROWS)
            ],
            "embedding": pa.array(
                [[1.0, float((index * 7) % 31) / 3] for index in range(ROWS)],
                pa.list_(pa.float32(), 2),
            ),
        }
    )


ENGINES = [*STORE_ENGINES, "hotdata"]


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    name = request.param
    directory = tmp_path_factory.mktemp(f"cursors-{name}")
    if name != "hotdata":
        opened = open_engine(name, directory, request)
        opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
        yield opened
        opened.close()
        return
    pytest.importorskip("hotdata_framework")
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    with LocalEngine(directory / "local") as local:
        local.load_table("docs", _table(), key_column="id", text_columns=["body"])
        with FakeHotdataApi(local, database_id="db_cursors") as api:
            api.index_engine_table("docs")
            api.add_index("docs", index_type="vector", columns=["embedding"], metric="cosine")
            with HotdataEngine.connect(
                "db_cursors", api_key=api.api_key, workspace_id=api.workspace_id, host=api.url
            ) as hotdata:
                yield hotdata


def _source(kind: str) -> Source:
    text = Bm25Search(table="docs", column="body", query_text="disk full")
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 3.0])
    if kind == "text":
        return text
    if kind == "nearest":
        return nearest
    return ReciprocalRankFusion(branches=[text, nearest], depth=ROWS)


@pytest.mark.parametrize("kind", ["text", "nearest", "hybrid"])
def test_a_cursor_walk_is_the_unpaged_ranking(engine: Any, kind: str) -> None:
    unpaged = engine.search(SearchPlan(source=_source(kind), limit=ROWS))
    assert len(unpaged) == ROWS
    walked: list[tuple[Any, float | None]] = []
    after = None
    for _ in range(ROWS // PAGE + 2):
        page = engine.search(SearchPlan(source=_source(kind), limit=PAGE, after=after))
        walked.extend((hit.key, hit.ranking_value) for hit in page)
        after = page.next_after
        if after is None:
            assert len(page) < PAGE
            break
    assert [key for key, _ in walked] == unpaged.keys
    assert [value for _, value in walked] == [hit.ranking_value for hit in unpaged]
    if kind != "hybrid":  # ties the key ordered
        assert len({hit.ranking_value for hit in unpaged}) < ROWS


def test_a_token_from_another_search_is_refused(engine: Any) -> None:
    page = engine.search(SearchPlan(source=_source("hybrid"), limit=PAGE))
    assert page.next_after is not None
    other = ReciprocalRankFusion(branches=_source("hybrid").branches, depth=ROWS, rank_constant=10)  # type: ignore[union-attr]
    with pytest.raises(PlanError, match="returned by another search") as refused:
        SearchPlan(source=other, limit=PAGE, after=page.next_after)
    assert refused.value.field == "after"
    with pytest.raises(PlanError, match="not both") as both:
        SearchPlan(source=_source("hybrid"), limit=PAGE, offset=7, after=page.next_after)
    assert both.value.field == "offset"
    with pytest.raises(PlanError, match="next_after"):
        SearchPlan(source=_source("hybrid"), after="not a token")
    # the page size and the columns may change between pages: the ranking is the same
    wider = engine.search(
        SearchPlan(source=_source("hybrid"), limit=2 * PAGE, after=page.next_after)
    )
    unpaged = engine.search(SearchPlan(source=_source("hybrid"), limit=3 * PAGE))
    assert wider.keys == unpaged.keys[PAGE:]
