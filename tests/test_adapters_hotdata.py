"""The agent tools over the Hotdata engine, end to end through hotdata-framework's real client
against the in-process fake of the Hotdata REST API (``tests/hotdata_api.py``): the same
tools, routed by the engine's own index listing, linted against its control-plane catalog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("hotdata_framework")
pytest.importorskip("langchain_core")

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from hotdata_retrieval.adapters import FORBIDDEN_DESCRIPTION_WORDS
from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_search_tools
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.local import LocalEngine
from tests.hotdata_api import FakeHotdataApi

API_KEY = "test-key"
WORKSPACE = "ws_adapters"
DATABASE_ID = "db_adapters"
EMBEDDER = HashingEmbedder(dimensions=32)
BODIES = [
    "the app crashes on start",
    "charged twice for one order",
    "password reset mail never arrives",
    "sync fails with error E1234",
    "refund for a cancelled plan",
    "crash when opening the settings",
]


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as engine:
        ids = list(range(1, len(BODIES) + 1))
        vectors = pa.array(EMBEDDER.embed_documents(BODIES), type=pa.list_(pa.float32()))
        engine.load_table(
            "tickets",
            pa.table({"id": ids, "body": BODIES, "embedding": vectors}),
            text_columns=["body"],
        )
        engine.load_table("kb", pa.table({"id": ids, "body": BODIES}), embed_columns=["body"])
        yield engine


@pytest.fixture(scope="module")
def fake(local: LocalEngine) -> Iterator[FakeHotdataApi]:
    with FakeHotdataApi(
        local, api_key=API_KEY, workspace_id=WORKSPACE, database_id=DATABASE_ID
    ) as api:
        # tickets: BM25 + a plain vector index (queries embedded here); kb: provider-backed.
        api.index_engine_table("tickets")
        api.add_index("tickets", index_type="vector", columns=["embedding"], metric="cosine")
        api.index_engine_table("kb")
        yield api


@pytest.fixture
def engine(fake: FakeHotdataApi) -> Iterator[HotdataEngine]:
    with HotdataEngine.connect(
        DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url, embedder=EMBEDDER
    ) as hotdata:
        yield hotdata


def _result(tool: BaseTool, **args: Any) -> dict[str, Any]:
    message = tool.invoke(ToolCall(name=tool.name, args=args, id="call-1", type="tool_call"))
    assert isinstance(message, ToolMessage)
    assert message.status == "success", message.content
    document: dict[str, Any] = json.loads(str(message.content))
    return document


def test_text_search_fuses_over_a_plain_index_in_one_statement(
    engine: HotdataEngine, fake: FakeHotdataApi
) -> None:
    tools = {tool.name: tool for tool in make_search_tools(engine, table="tickets")}
    assert list(tools) == ["hotdata_search_text", "hotdata_search_semantic", "hotdata_execute_sql"]
    for tool in tools.values():
        for word in FORBIDDEN_DESCRIPTION_WORDS:
            assert word not in tool.description.lower()
    with fake.counting() as counts:
        document = _result(tools["hotdata_search_text"], query="crash", k=2)
    assert counts["POST /v1/query"] == 1
    assert "FULL OUTER JOIN" in fake.queries[-1]
    assert {row["id"] for row in document["rows"]} == {1, 6}
    assert document["metadata"]["ranked_by"] == "score"


def test_a_provider_backed_table_is_searched_by_meaning_on_the_engine(
    engine: HotdataEngine, fake: FakeHotdataApi
) -> None:
    tools = {tool.name: tool for tool in make_search_tools(engine, table="kb")}
    assert list(tools) == ["hotdata_search_text", "hotdata_execute_sql"]
    assert "matches what the query means" in tools["hotdata_search_text"].description
    document = _result(tools["hotdata_search_text"], query="crash", k=2)
    assert "vector_search('default.public.kb', 'body', 'crash', 2)" in fake.queries[-1]
    assert document["metadata"]["ranked_by"] == "_distance"


def test_agent_sql_is_linted_against_the_control_plane_catalog(engine: HotdataEngine) -> None:
    sql_tool = make_search_tools(engine, table="tickets")[-1]
    document = _result(
        sql_tool, sql="SELECT * FROM bm25_search('default.public.tickets','body','x') LIMIT 3"
    )
    assert [warning["code"] for warning in document["metadata"]["warnings"]] == ["HDQ010"]
    message = sql_tool.invoke(
        ToolCall(
            name=sql_tool.name,
            args={"sql": "SELECT id FROM bm25_search('default.public.tickets', 'id', 'x', 3)"},
            id="call-2",
            type="tool_call",
        )
    )
    assert message.status == "error"
    assert "HDQ020" in str(message.content)


def test_the_retriever_runs_on_the_hotdata_engine(engine: HotdataEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="tickets", k=2).invoke("crash")
    assert {document.id for document in documents} == {"1", "6"}
    assert {"text_rank", "nearest_rank"} <= set(documents[0].metadata)
