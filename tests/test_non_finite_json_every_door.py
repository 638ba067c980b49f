"""A float column holding NaN or an infinity is written as JSON ``null`` by every door that
answers in JSON (the MCP tools, the LangChain and LlamaIndex tools, the DDN connector,
``hdq search --format json``): JSON has no such numbers, and a strict reader refuses
Python's ``NaN`` and ``Infinity``. The reference is the table as loaded, read by Python."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from starlette.testclient import TestClient

from hotdata_retrieval.adapters.ddn import FUNCTION_NAME, create_app
from hotdata_retrieval.adapters.langchain import make_search_tools as langchain_tools
from hotdata_retrieval.adapters.llamaindex import make_search_tools as llamaindex_tools
from hotdata_retrieval.adapters.mcp import create_server
from tests.door_tables import hdq_search, rows_by_key

pytestmark = pytest.mark.anyio

ROWS = {
    "id": [1, 2, 3],
    "body": ["red fox", "red car", "red sky"],
    "x": [float("nan"), float("inf"), 1.5],
}
EXPECTED = {
    key: (value if math.isfinite(value) else None) for key, value in zip(ROWS["id"], ROWS["x"])
}


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _by_key(rows: list[dict[str, Any]]) -> dict[int, Any]:
    return rows_by_key(rows, "x")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_mcp_tools_write_null(door_engine: Any) -> None:
    server = create_server(door_engine, table="docs", columns=["id", "body", "x"])
    async with Client(server) as client:
        found = await client.call_tool("hotdata_search_text", {"query": "red"})
        queried = await client.call_tool("hotdata_execute_sql", {"sql": "SELECT id, x FROM docs"})
    for result in (found, queried):
        assert result.is_error is False
        assert _by_key(_strict(result.content[0].text)["rows"]) == EXPECTED


def test_the_langchain_and_llamaindex_tools_write_null(door_engine: Any) -> None:
    engine = door_engine
    (search, _sql) = langchain_tools(engine, table="docs", columns=["id", "body", "x"])
    assert _by_key(_strict(search.invoke({"query": "red"}))["rows"]) == EXPECTED
    (tool, _sql_tool) = llamaindex_tools(engine, table="docs", columns=["id", "body", "x"])
    assert _by_key(_strict(tool.call(query="red").content)["rows"]) == EXPECTED


def test_the_ddn_connector_writes_null(door_engine: Any) -> None:
    client = TestClient(create_app(door_engine, table="docs", filter_columns=["x"]))
    answer = client.post(
        "/query",
        json={
            "collection": FUNCTION_NAME,
            "arguments": {"query": {"type": "literal", "value": "red"}},
            "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
            "collection_relationships": {},
        },
    )
    assert answer.status_code == 200, answer.text
    (row_set,) = _strict(answer.text)
    assert _by_key(row_set["rows"][0]["__value"]) == EXPECTED


def test_hdq_search_writes_null(door_database: Path) -> None:
    found = hdq_search(door_database, "id,x", "json")
    hits = _strict(found.stdout)["hits"]
    assert {hit["key"]: hit["columns"]["x"] for hit in hits} == EXPECTED
