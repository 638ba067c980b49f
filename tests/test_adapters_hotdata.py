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

from hotdata_retrieval.adapters import FORBIDDEN_DESCRIPTION_WORDS, SearchToolkit, ToolError
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
    assert list(tools) == ["hotdata_search_text", "hotdata_search_semantic"]
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
    assert list(tools) == ["hotdata_search_text"]
    assert "matches what the query means" in tools["hotdata_search_text"].description
    document = _result(tools["hotdata_search_text"], query="crash", k=2)
    assert "vector_search('default.public.kb', 'body', 'crash', 2)" in fake.queries[-1]
    assert document["metadata"]["ranked_by"] == "_distance"


def test_no_sql_tool_is_offered_and_the_search_tools_say_why(engine: HotdataEngine) -> None:
    tools = make_search_tools(engine, table="tickets")
    assert "hotdata_execute_sql" not in [tool.name for tool in tools]
    for tool in tools:
        assert "no SQL tool is offered" in tool.description
        assert HotdataEngine.agent_sql_refusal in tool.description
        assert "use hotdata_execute_sql" not in tool.description


def test_agent_sql_is_linted_against_the_control_plane_catalog(engine: HotdataEngine) -> None:
    # The toolkit itself still runs SQL for a caller who asks for it; only the tools
    # offered to a model leave it out.
    kit = SearchToolkit(engine, table="tickets")
    document = kit.execute_sql(
        "SELECT * FROM bm25_search('default.public.tickets','body','x') LIMIT 3"
    )
    assert [warning["code"] for warning in document["metadata"]["warnings"]] == ["HDQ010"]
    with pytest.raises(ToolError, match="HDQ020"):
        kit.execute_sql("SELECT id FROM bm25_search('default.public.tickets', 'id', 'x', 3)")


def test_the_retriever_runs_on_the_hotdata_engine(engine: HotdataEngine) -> None:
    documents = HotdataRetriever(engine=engine, table="tickets", k=2).invoke("crash")
    assert {document.id for document in documents} == {"1", "6"}
    assert {"text_rank", "nearest_rank"} <= set(documents[0].metadata)
