"""``explain_scores`` and ``queries`` through every door built from ``SearchSettings``: the
toolkit, the LangChain tool and retriever, the MCP tool and the DDN function. Each returns
the page ``SearchRequest`` gives for the same options (one search path), and each row's
explanation adds up to its score; ``SearchSettings(explain_scores=True)`` is the default a
call can override."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from mcp import Client

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_text_search_tool
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

QUERY = "app crashes on start"
QUERIES = ["the application fails when launched", "start crash"]
K = 4
ROWS = [
    "the app crashes on start",
    "app crashes on start every time",
    "the app crashes when opening settings",
    "crash on start after the update",
    "charged twice for one order",
    "start the sync again",
    "the desktop app freezes",
    "the application fails when launched",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    directory = tmp_path_factory.mktemp("explained-doors") / "db"
    table = pa.table({"id": list(range(1, len(ROWS) + 1)), "body": ROWS})
    with LocalEngine(directory, embedder=HashingEmbedder()) as opened:
        opened.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        yield opened


@pytest.fixture(scope="module")
def expected(engine: LocalEngine) -> list[tuple[int, float]]:
    request = SearchRequest(
        table="docs", query=QUERY, mode="hybrid", limit=K, fusion="dbsf", queries=QUERIES,
        explain_scores=True,
    )  # fmt: skip
    plan = engine.plan_search(request)
    assert len(plan.branches) == 6
    return [(hit.key, hit.score) for hit in engine.search(plan)]  # type: ignore[misc]


def _check(
    rows: list[tuple[Any, float, dict[str, Any]]], expected: list[tuple[int, float]]
) -> None:
    assert [int(key) for key, _, _ in rows] == [key for key, _ in expected]
    assert [score for _, score, _ in rows] == pytest.approx([score for _, score in expected])
    for _, score, explanation in rows:
        branches = explanation["branches"]
        assert len(branches) == 6
        total = sum(branch["contribution"] for branch in branches.values())
        assert math.isclose(total, score, rel_tol=0.0, abs_tol=1e-9)


ARGUMENTS = {"query": QUERY, "fusion": "dbsf", "queries": QUERIES, "explain_scores": True}


def test_the_toolkit(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    rows = SearchToolkit(engine, table="docs", k=K).search_text(**ARGUMENTS)["rows"]
    _check([(row["id"], row["score"], row["explanation"]) for row in rows], expected)


def test_the_settings_default_and_a_call_that_declines(
    engine: LocalEngine, expected: list[tuple[int, float]]
) -> None:
    toolkit = SearchToolkit(
        engine, SearchSettings(table="docs", k=K, fusion="dbsf", explain_scores=True)
    )
    rows = toolkit.search_text(QUERY, queries=QUERIES)["rows"]
    _check([(row["id"], row["score"], row["explanation"]) for row in rows], expected)
    declined = toolkit.search_text(QUERY, queries=QUERIES, explain_scores=False)["rows"]
    assert all("explanation" not in row for row in declined)
    with pytest.raises(ToolError, match="explain_scores must be true or false"):
        toolkit.search_text(QUERY, explain_scores="yes")
    with pytest.raises(ToolError, match="queries must be a list of at most 15"):
        toolkit.search_text(QUERY, queries=["q"] * 16)


def test_the_langchain_tool(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    tool = make_text_search_tool(engine, table="docs", k=K)
    rows = json.loads(tool.invoke(ARGUMENTS))["rows"]
    _check([(row["id"], row["score"], row["explanation"]) for row in rows], expected)


def test_the_langchain_retriever(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    retriever = HotdataRetriever(
        engine=engine, table="docs", k=K, mode="hybrid", fusion="dbsf", queries=QUERIES,
        explain_scores=True,
    )  # fmt: skip
    documents = retriever.invoke(QUERY)
    _check([(d.id, d.metadata["score"], d.metadata["explanation"]) for d in documents], expected)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(
    engine: LocalEngine, expected: list[tuple[int, float]], anyio_backend: str
) -> None:
    server = create_server(engine, table="docs", k=K)
    async with Client(server) as client:
        result = await client.call_tool("hotdata_search_text", ARGUMENTS)
    assert result.is_error is False, result.content
    rows = json.loads(result.content[0].text)["rows"]
    _check([(row["id"], row["score"], row["explanation"]) for row in rows], expected)


def test_the_ddn_function(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="docs", default_top_k=K))
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in ARGUMENTS.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    _check([(hit["id"], hit["score"], hit["explanation"]) for hit in row["__value"]], expected)
