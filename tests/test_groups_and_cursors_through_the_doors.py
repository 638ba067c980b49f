"""``group_by``, ``group_size`` and ``after`` through every adapter door, read by the one
option table of :mod:`hotdata_retrieval.adapters.settings`: the toolkit, the LangChain tool,
the LlamaIndex tool, the MCP server and the DDN function each return the grouped page the
engine gives the same plan (one row per parent, or two), and a second page from the
answer's ``next_after`` equal to the plan's next rows; a bad value is one clear refusal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.adapters.settings import SearchSettings
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
    ("e", "full backup of the disk"),
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


def _expected(engine: LocalEngine, **options: Any) -> list[Any]:
    """The engine's page for the doors' request (mode auto: hybrid), by the plan itself."""
    request = SearchRequest(table="chunks", query=QUERY, limit=K, **options)
    return engine.search(engine.plan_search(request)).keys


def _ids(answer: dict[str, Any]) -> list[Any]:
    return [row["id"] for row in answer["rows"]]


def test_the_toolkit_groups_and_pages(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="chunks", k=K)
    grouped = toolkit.search_text(QUERY, group_by="parent", group_size=2)
    assert _ids(grouped) == _expected(engine, group_by="parent", group_size=2)
    parents = [row["parent"] for row in grouped["rows"]]
    assert len(set(parents)) == K
    first = toolkit.search_text(QUERY)
    token = first["metadata"]["next_after"]
    second = toolkit.search_text(QUERY, after=token)
    assert _ids(first) + _ids(second) == _expected(engine) + _expected(
        engine, after=_expected_token(engine)
    )
    assert "`group_by` names a column" in toolkit.describe_text_search()
    defaulted = SearchToolkit(engine, table="chunks", k=K, group_by="parent")
    assert _ids(defaulted.search_text(QUERY)) == _expected(engine, group_by="parent")


def _expected_token(engine: LocalEngine) -> str:
    request = SearchRequest(table="chunks", query=QUERY, limit=K)
    token = engine.search(engine.plan_search(request)).next_after
    assert token is not None
    return token


def test_the_langchain_tool(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import make_text_search_tool

    tool = make_text_search_tool(engine, table="chunks", k=K)
    answer = json.loads(tool.invoke({"query": QUERY, "group_by": "parent"}))
    assert _ids(answer) == _expected(engine, group_by="parent")
    first = json.loads(tool.invoke({"query": QUERY}))
    following = json.loads(tool.invoke({"query": QUERY, "after": first["metadata"]["next_after"]}))
    assert _ids(following) == _expected(engine, after=_expected_token(engine))


def test_the_llamaindex_tool(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.llamaindex import make_search_tools

    (text, *_) = make_search_tools(engine, SearchSettings(table="chunks", k=K, group_by="parent"))
    answer = json.loads(str(text.call(query=QUERY, group_size=2)))
    assert _ids(answer) == _expected(engine, group_by="parent", group_size=2)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(engine: LocalEngine, anyio_backend: str) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    async with Client(create_server(engine, table="chunks", k=K)) as client:
        result = await client.call_tool(
            "hotdata_search_text", {"query": QUERY, "group_by": "parent", "group_size": 2}
        )
        first = await client.call_tool("hotdata_search_text", {"query": QUERY})
        token = json.loads(first.content[0].text)["metadata"]["next_after"]
        paged = await client.call_tool("hotdata_search_text", {"query": QUERY, "after": token})
        refused = await client.call_tool("hotdata_search_text", {"query": QUERY, "after": "x"})
    assert result.is_error is False, result.content
    assert _ids(json.loads(result.content[0].text)) == _expected(
        engine, group_by="parent", group_size=2
    )
    assert _ids(json.loads(paged.content[0].text)) == _expected(
        engine, after=_expected_token(engine)
    )
    assert refused.is_error is True
    assert "next_after" in refused.content[0].text


def test_the_ddn_function(engine: LocalEngine) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="chunks", default_top_k=K))
    values = {"query": QUERY, "group_by": "parent", "group_size": 2}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    assert [hit["id"] for hit in row["__value"]] == _expected(
        engine, group_by="parent", group_size=2
    )


def test_a_door_refuses_a_bad_group(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="chunks", k=K)
    with pytest.raises(ToolError, match="give group_by too"):
        toolkit.search_text(QUERY, group_size=2)
    with pytest.raises(ToolError, match="from 1 to 100"):
        toolkit.search_text(QUERY, group_by="parent", group_size=500)
    with pytest.raises(ToolError, match="give group_by too"):
        SearchSettings(table="chunks", group_size=2)
