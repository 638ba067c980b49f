"""A LangChain agent loop, driven by a fake chat model, narrows a search by a column through the
search tool's ``filter`` argument: the tool's schema offers it, and only matching rows return."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from hotdata_retrieval.adapters.langchain import make_search_tools
from hotdata_retrieval.engines.local import LocalEngine

CATEGORIES = ["billing", "login", "export"]
ROWS = pa.table(
    {
        "id": list(range(1, 31)),
        "body": [f"the invoice page crashes on start, case {index}" for index in range(30)],
        "category": [CATEGORIES[index % 3] for index in range(30)],
        "rating": [index % 5 + 1 for index in range(30)],
    }
)


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    engine = LocalEngine()
    engine.load_table("tickets", ROWS, text_columns=["body"])
    found = make_search_tools(engine, table="tickets", columns=["category", "rating"], sql=False)
    return {tool.name: tool for tool in found}


def run_agent(tools: dict[str, Any], calls: list[dict[str, Any]]) -> list[BaseMessage]:
    """One turn of the usual tool-calling loop: the model asks for ``calls``, the loop runs
    each tool and hands the results back, the model answers."""
    model = FakeMessagesListChatModel(
        responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="done")]
    )
    messages: list[BaseMessage] = [HumanMessage(content="which billing tickets crash?")]
    while True:
        reply = model.invoke(messages)
        messages.append(reply)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            return messages
        for call in reply.tool_calls:
            messages.append(tools[call["name"]].invoke(call))


def hits_of(message: BaseMessage) -> list[dict[str, Any]]:
    assert isinstance(message, ToolMessage)
    document = json.loads(str(message.content))
    rows: list[dict[str, Any]] = document["rows"]
    return rows


def test_the_search_tool_offers_a_filter_on_the_table_columns(tools: dict[str, Any]) -> None:
    [search] = [tool for name, tool in tools.items() if "search" in name]
    assert "filter" in search.args
    assert "$gte" in search.args["filter"]["description"]
    assert "`category`" in search.description  # the columns a filter can name come back


def test_the_agent_narrows_by_a_column_through_the_filter(tools: dict[str, Any]) -> None:
    [name] = [name for name in tools if "search" in name]
    query = {"query": "invoice crashes", "k": 6}
    unfiltered = run_agent(tools, [{"name": name, "args": query, "id": "a"}])
    filtered = run_agent(
        tools,
        [{"name": name, "args": {**query, "filter": {"category": "billing"}}, "id": "b"}],
    )
    assert {row["category"] for row in hits_of(unfiltered[2])} == set(CATEGORIES)
    rows = hits_of(filtered[2])
    assert len(rows) == 6
    assert {row["category"] for row in rows} == {"billing"}
    assert filtered[-1].content == "done"


def test_a_range_filter_object_reaches_the_search(tools: dict[str, Any]) -> None:
    [name] = [name for name in tools if "search" in name]
    arguments = {"query": "invoice", "k": 10, "filter": {"rating": {"$gte": 4}}}
    rows = hits_of(run_agent(tools, [{"name": name, "args": arguments, "id": "c"}])[2])
    assert rows and all(row["rating"] >= 4 for row in rows)
    expected = sum(1 for rating in ROWS.column("rating").to_pylist() if rating >= 4)
    assert len(rows) == min(10, expected)
