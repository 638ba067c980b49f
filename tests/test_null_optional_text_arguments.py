"""An optional text argument of a search tool (``after``, ``group_by``) takes ``null`` as "not
given", as ``k``, ``filter`` and the flags do, through every door: the LangChain and
LlamaIndex tools, the MCP server, the toolkit and the DDN function.

Before: the LangChain, LlamaIndex and MCP tools refused ``after: null`` and ``group_by: null``
(``Input should be a valid string``), though their schemas gave ``null`` as the default, the
toolkit and DDN took them, and an agent paging a search passes back an answer's
``metadata.next_after``, which is ``null`` after the last page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

NULLS = [{"after": None}, {"group_by": None}, {"after": None, "group_by": None}]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as opened:
        rows = pa.table({"id": list(range(8)), "body": [f"fox {i} sky" for i in range(8)]})
        opened.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield opened


def _ids(document: dict[str, Any]) -> list[Any]:
    return [row["id"] for row in document["rows"]]


@pytest.fixture(scope="module")
def expected(engine: LocalEngine) -> list[Any]:
    return _ids(SearchToolkit(engine, table="docs").search_text("fox", k=3))


@pytest.mark.parametrize("nulls", NULLS)
def test_the_langchain_tool_takes_null(
    engine: LocalEngine, expected: list[Any], nulls: dict[str, Any]
) -> None:
    from hotdata_retrieval.adapters.langchain import make_search_tools

    text = make_search_tools(engine, table="docs")[0]
    message = text.invoke(
        {
            "name": text.name,
            "args": {"query": "fox", "k": 3, **nulls},
            "id": "1",
            "type": "tool_call",
        }
    )
    assert message.status == "success", message.content
    assert _ids(message.artifact) == expected


@pytest.mark.parametrize("nulls", NULLS)
def test_the_llamaindex_tool_takes_null(
    engine: LocalEngine, expected: list[Any], nulls: dict[str, Any]
) -> None:
    from hotdata_retrieval.adapters.llamaindex import make_search_tools

    text = make_search_tools(engine, table="docs")[0]
    assert _ids(json.loads(text.call(query="fox", k=3, **nulls).content)) == expected


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_server_takes_null_and_lists_it(
    engine: LocalEngine, expected: list[Any]
) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    async with Client(create_server(engine, table="docs")) as client:
        (listed, *_) = (await client.list_tools()).tools
        for name in ("after", "group_by"):
            kinds = [one.get("type") for one in listed.input_schema["properties"][name]["anyOf"]]
            assert kinds == ["string", "null"]
        for nulls in NULLS:
            result = await client.call_tool(
                "hotdata_search_text", {"query": "fox", "k": 3, **nulls}
            )
            assert result.is_error is False, result.content
            assert _ids(json.loads(result.content[0].text)) == expected


def test_a_null_next_after_passed_back_starts_the_search_again(
    engine: LocalEngine, expected: list[Any]
) -> None:
    from hotdata_retrieval.adapters.langchain import make_search_tools

    text = make_search_tools(engine, table="docs")[0]
    first = text.invoke({"query": "fox", "k": 20})
    ended = json.loads(first)["metadata"]["next_after"]
    assert ended is None  # a short page: the ranking ends here
    again = json.loads(text.invoke({"query": "fox", "k": 3, "after": ended}))
    assert _ids(again) == expected
