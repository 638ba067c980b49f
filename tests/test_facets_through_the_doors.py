"""``facets`` through the adapter doors, read by the one option table of
:mod:`hotdata_retrieval.adapters.settings`: the toolkit, the LangChain tool and the MCP
server each answer with ``metadata.facets`` equal to a Python count of the rows the search
matched (a hybrid search over ten chunks: its nearest branch ranks every row), and with the
page the engine gives the same plan; a bad value is one clear refusal."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

QUERY = "disk full"
CHUNKS = [
    ("a", "disk full on the server"),
    ("a", "the disk is full again"),
    ("b", "disk full warning"),
    ("a", "full disk after the upgrade"),
    ("c", "disk slow and full"),
    ("a", "disk full disk full"),
    ("d", "disk errors"),
    ("a", "clean a full disk"),
    ("b", "login fails on a full disk"),
    (None, "full backup of the disk"),
]
K = 3


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder()) as opened:
        opened.load_table(
            "chunks",
            pa.table(
                {
                    "id": list(range(len(CHUNKS))),
                    "parent": [parent for parent, _ in CHUNKS],
                    "body": [body for _, body in CHUNKS],
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield opened


def _reference() -> list[dict[str, Any]]:
    """Every row's parent counted (NULL not), most frequent first, ties by value."""
    counts = Counter(parent for parent, _ in CHUNKS if parent is not None)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"value": value, "count": count} for value, count in ordered]


def _expected_page(engine: LocalEngine) -> list[Any]:
    request = SearchRequest(table="chunks", query=QUERY, limit=K, facets=["parent"])
    return engine.search(engine.plan_search(request)).keys


def _check(engine: LocalEngine, answer: dict[str, Any]) -> None:
    assert answer["metadata"]["facets"] == {"parent": _reference()}
    assert answer["metadata"]["facets_cut"] == {"parent": 0}
    assert [row["id"] for row in answer["rows"]] == _expected_page(engine)


def test_the_toolkit_counts_facets(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="chunks", k=K)
    _check(engine, toolkit.search_text(QUERY, facets=["parent"]))
    assert "facets" not in toolkit.search_text(QUERY)["metadata"]
    assert "`facets` names up to 8 columns" in toolkit.describe_text_search()
    with pytest.raises(ToolError, match="facets must be a list of column names"):
        toolkit.search_text(QUERY, facets="parent")
    with pytest.raises(ToolError, match="more than 8"):
        toolkit.search_text(QUERY, facets=[f"c{index}" for index in range(9)])


def test_the_langchain_tool(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import make_text_search_tool

    tool = make_text_search_tool(engine, table="chunks", k=K)
    _check(engine, json.loads(tool.invoke({"query": QUERY, "facets": ["parent"]})))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(engine: LocalEngine, anyio_backend: str) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    async with Client(create_server(engine, table="chunks", k=K)) as client:
        result = await client.call_tool(
            "hotdata_search_text", {"query": QUERY, "facets": ["parent"]}
        )
    assert result.is_error is False, result.content
    _check(engine, json.loads(result.content[0].text))


def test_the_ddn_function_does_not_offer_facets_it_cannot_return(engine: LocalEngine) -> None:
    """Its answer is a list of hits with no metadata: facets would be taken and dropped."""
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    app = create_app(engine, table="chunks")
    (function,) = app.state.function.schema()["functions"]
    assert "facets" not in function["arguments"]
    values = {"query": QUERY, "facets": ["parent"]}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = TestClient(app).post("/query", json=body)
    assert answer.status_code >= 400
    assert "facets" in answer.text
