"""The suffix and range operators reach the agents' doors: the LangChain tool and retriever,
the MCP tool and the DDN function keep the rows a plain Python reading of the filter keeps
(DDN also for the filter as text), and their argument schemas list the operators."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from mcp import Client

from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_text_search_tool
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.engines.local import LocalEngine

TITLES = ["report 100%", "report 1000", "a_b", "aXb", None, "fin", "Fin", "end"]
YEARS = [1999, 2000, 2003, 2005, 2007, None, 2010, 2011]
FILTERS: dict[str, tuple[dict[str, Any], Any]] = {
    "suffix": (
        {"title": {"$ends_with": "0%"}},
        lambda title, year: title is not None and title.endswith("0%"),
    ),
    "suffix with an underscore": (
        {"title": {"$ends_with": "_b"}},
        lambda title, year: title is not None and title.endswith("_b"),
    ),
    "range": (
        {"year": {"$between": [2000, 2007]}},
        lambda title, year: year is not None and 2000 <= year <= 2007,
    ),
    "not a range": (
        {"$not": {"year": {"$between": [2000, 2007]}}},
        lambda title, year: year is not None and not 2000 <= year <= 2007,
    ),
    "both": (
        {"title": {"$ends_with": "n"}, "year": {"$between": [2000, 2011]}},
        lambda title, year: (
            title is not None and title.endswith("n") and year is not None and year >= 2000
        ),
    ),
}


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as opened:
        opened.load_table(
            "docs",
            pa.table(
                {
                    "id": list(range(1, len(TITLES) + 1)),
                    "body": ["quarterly report"] * len(TITLES),
                    "title": TITLES,
                    "year": pa.array(YEARS, pa.int64()),
                }
            ),
            text_columns=["body"],
        )
        yield opened


def _expected(name: str) -> set[int]:
    _, truth = FILTERS[name]
    return {key for key, (t, y) in enumerate(zip(TITLES, YEARS), 1) if truth(t, y)}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_the_langchain_tool_and_retriever(engine: LocalEngine, name: str) -> None:
    filter_object, _ = FILTERS[name]
    tool = make_text_search_tool(engine, table="docs", k=10)
    answer = json.loads(tool.invoke({"query": "report", "filter": filter_object}))
    assert {row["id"] for row in answer["rows"]} == _expected(name)
    retriever = HotdataRetriever(engine=engine, table="docs", k=10, filter=filter_object)
    assert {int(document.id) for document in retriever.invoke("report")} == _expected(name)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(engine: LocalEngine, anyio_backend: str) -> None:
    server = create_server(engine, table="docs", k=10)
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = json.dumps(tools["hotdata_search_text"].input_schema)
        assert "$ends_with" in schema and "$between" in schema
        for name, (filter_object, _) in FILTERS.items():
            result = await client.call_tool(
                "hotdata_search_text", {"query": "report", "filter": filter_object}
            )
            assert result.is_error is False, result.content
            rows = json.loads(result.content[0].text)["rows"]
            assert {row["id"] for row in rows} == _expected(name), name


def test_a_range_of_the_wrong_shape_is_named(engine: LocalEngine) -> None:
    tool = make_text_search_tool(engine, table="docs", k=10)
    answer = tool.invoke({"query": "report", "filter": {"year": {"$between": [2000]}}})
    assert "expected a list of 2 values [low, high], got 1" in str(answer)


def _ddn_ids(client: Any, arguments: dict[str, Any]) -> set[int]:
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in arguments.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    return {hit["id"] for hit in row["__value"]}


def test_the_ddn_function(engine: LocalEngine) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="docs", max_top_k=10, default_top_k=10))
    (function,) = client.get("/schema").json()["functions"]
    described = function["arguments"]["filter"]["description"]
    assert "$ends_with" in described and "$between" in described
    for name, (filter_object, _) in FILTERS.items():
        assert _ddn_ids(client, {"query": "report", "filter": filter_object}) == _expected(name)
    as_text = {
        "suffix": "ends_with(title, '0%')",
        "range": "year BETWEEN 2000 AND 2007",
        "not a range": "NOT year BETWEEN 2000 AND 2007",
    }
    for name, text in as_text.items():
        assert _ddn_ids(client, {"query": "report", "filter": text}) == _expected(name), name
    refused = client.post(
        "/query",
        json={
            "collection": "search_documents",
            "arguments": {
                "query": {"type": "literal", "value": "report"},
                "filter": {"type": "literal", "value": {"year": {"$between": [2000]}}},
            },
            "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
            "collection_relationships": {},
        },
    )
    assert refused.status_code == 400
    assert "expected a list of 2 values [low, high], got 1" in refused.json()["message"]
