"""The LangChain tools (``make_search_tools``, over :class:`~hotdata_retrieval.adapters.
SearchToolkit`) over each store: SQLite, DuckDB, PostgreSQL, LanceDB and turbopuffer (its fake
REST API), the same small table loaded into each through the parity suite's store opener.

The search tools return the store's rows — those whose text holds the query's words, or the
nearest by a cosine distance computed here — and a model's filter narrows them; the SQL tool,
where the store runs SQL, counts the rows, and a write through it is refused with the count
unchanged; where the store runs none, it is not offered and the search tools say why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from hotdata_retrieval.adapters.langchain import make_search_tools
from hotdata_retrieval.embed import HashingEmbedder
from tests.parity.engines import open_engine

STORES = ["sqlite", "duckdb", "postgres", "lancedb", "turbopuffer"]
EMBEDDER = HashingEmbedder(dimensions=64)
ROWS = [
    {"id": 1, "body": "the upgrade failed with error E1234", "lang": "en"},
    {"id": 2, "body": "error after the upgrade of the app", "lang": "fr"},
    {"id": 3, "body": "billing page is slow", "lang": "fr"},
    {"id": 4, "body": "error on the billing page after the upgrade", "lang": "en"},
    {"id": 5, "body": "refund for a cancelled plan", "lang": "en"},
    {"id": 6, "body": "the billing address cannot be changed", "lang": "fr"},
]
TEXT, SEMANTIC, SQL = "hotdata_search_text", "hotdata_search_semantic", "hotdata_execute_sql"


@pytest.fixture(scope="module", params=STORES)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The store with ``tickets`` loaded: key ``id``, a full-text index on ``body``, the
    bodies' vectors and the model that made them."""
    name = request.param
    engine = open_engine(name, tmp_path_factory.mktemp(f"langchain-{name}"), request)
    bodies = [row["body"] for row in ROWS]
    data = pa.table(
        {
            "id": [row["id"] for row in ROWS],
            "body": bodies,
            "lang": [row["lang"] for row in ROWS],
            "body_embedding": pa.array(EMBEDDER.embed_documents(bodies), pa.list_(pa.float32())),
        }
    )
    engine.load_table(
        "tickets", data, key_column="id", text_columns=["body"], vector_model=EMBEDDER.name
    )
    yield engine
    engine.close()


def _tools(engine: Any, **options: Any) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in make_search_tools(engine, table="tickets", **options)}


def _call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = tool.invoke(ToolCall(name=tool.name, args=args, id="call-1", type="tool_call"))
    assert isinstance(message, ToolMessage)
    return message


def _rows(tool: BaseTool, **args: Any) -> list[dict[str, Any]]:
    message = _call(tool, **args)
    assert message.status == "success", message.content
    rows: list[dict[str, Any]] = json.loads(str(message.content))["rows"]
    return rows


def _holding(word: str, **equal: Any) -> set[int]:
    return {
        row["id"]
        for row in ROWS
        if word in row["body"].split() and all(row[k] == v for k, v in equal.items())
    }


def _nearest(query: str, k: int, **equal: Any) -> list[int]:
    """The ``k`` rows nearest ``query`` by cosine distance, computed here."""
    wanted = np.asarray(EMBEDDER.embed_query(query), dtype=float)
    distances = {}
    for row in ROWS:
        if all(row[key] == value for key, value in equal.items()):
            vector = np.asarray(EMBEDDER.embed_query(row["body"]), dtype=float)
            cosine = vector @ wanted / (np.linalg.norm(vector) * np.linalg.norm(wanted))
            distances[row["id"]] = 1.0 - float(cosine)
    return sorted(distances, key=lambda key: (distances[key], key))[:k]


def test_the_text_search_returns_the_rows_holding_the_words_and_a_filter_narrows_them(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no embedder (the store would otherwise embed with the model recorded at load): the text
    # search is BM25 alone
    monkeypatch.setattr(store, "embedder_for", lambda table: None)
    tools = _tools(store)
    found = _rows(tools[TEXT], query="billing", k=10)
    narrowed = _rows(tools[TEXT], query="billing", k=10, filter={"lang": "fr"})
    assert {row["id"] for row in found} == _holding("billing") == {3, 4, 6}
    assert {row["id"] for row in narrowed} == _holding("billing", lang="fr") == {3, 6}
    by_key = {row["id"]: row for row in ROWS}
    for row in found:
        assert row["body"] == by_key[row["id"]]["body"]


def test_a_store_opened_without_an_embedder_embeds_with_the_model_recorded_at_load(
    store: Any,
) -> None:
    recorded = store.embedder_for("tickets")
    if not callable(getattr(store, "vector_model", None)):  # turbopuffer records no model
        assert recorded is None
        return
    assert recorded is not None and recorded.name == EMBEDDER.name
    assert recorded.embed_query("billing") == EMBEDDER.embed_query("billing")


def test_the_semantic_search_returns_the_nearest_rows_and_a_filter_narrows_them(
    store: Any,
) -> None:
    tools = _tools(store, embedder=EMBEDDER)
    assert SEMANTIC in tools
    found = _rows(tools[SEMANTIC], query="billing page is slow", k=3)
    narrowed = _rows(tools[SEMANTIC], query="billing page is slow", k=3, filter={"lang": "en"})
    assert [row["id"] for row in found] == _nearest("billing page is slow", 3)
    assert [row["id"] for row in narrowed] == _nearest("billing page is slow", 3, lang="en")
    assert found[0]["id"] == 3  # the same text: distance 0


def test_a_write_through_the_sql_tool_is_refused_and_changes_nothing(store: Any) -> None:
    tools = _tools(store)
    refusal = getattr(store, "agent_sql_refusal", None)
    if refusal is not None:  # LanceDB and turbopuffer run no SQL: no tool, and the others say why
        assert SQL not in tools
        for tool in tools.values():
            assert refusal in tool.description
        return
    count = "SELECT count(*) AS n FROM " + store.sql_name("tickets")
    before = _rows(tools[SQL], sql=count)
    refused = _call(tools[SQL], sql="DELETE FROM " + store.sql_name("tickets") + " WHERE id = 1")
    after = _rows(tools[SQL], sql=count)
    assert refused.status == "error", refused.content
    assert before == after == [{"n": len(ROWS)}]
