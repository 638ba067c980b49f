"""Highlights and the application's reranker through the adapter doors (the toolkit, the
LangChain tool and retriever, MCP and DDN), each equal to the same search made as a
:class:`SearchRequest`: highlights are an agent's option (``highlight``), the reranker is the
settings' (an agent never names a model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.adapters.settings import SEARCH_OPTIONS, SearchSettings
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.embed.reranking import TermOverlapReranker
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

QUERY = "disks are full"
BODIES = [
    "the disk is full on node three",
    "Full disks stop the build",
    "login page is slow",
    "the DISK was replaced, now it is full again",
    "café crash on start",
    "disk usage graph",
]
LIMIT = 3


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    directory: Path = tmp_path_factory.mktemp("doors") / "db"
    table = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    with LocalEngine(directory, embedder=HashingEmbedder()) as opened:
        opened.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        yield opened


def _reference(engine: LocalEngine, **options: Any) -> list[dict[str, Any]]:
    plan = engine.plan_search(
        SearchRequest(table="docs", query=QUERY, mode="auto", limit=LIMIT, **options)
    )
    return [{"id": hit.key, "highlights": dict(hit.highlights)} for hit in engine.search(plan)]


def _sliced(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The words each row's highlight offsets slice out of its text."""
    words = []
    for row in rows:
        text = BODIES[row["id"] - 1]
        matches = row["highlights"]["body"]["matches"]
        words.append([text[start:end] for start, end in matches])
    return words


def test_the_option_is_one_row_of_the_table() -> None:
    assert [option.name for option in SEARCH_OPTIONS].count("highlight") == 1


def test_the_toolkit_highlights_as_the_request_does(engine: LocalEngine) -> None:
    expected = _reference(engine, highlight=True)
    rows = SearchToolkit(engine, table="docs", k=LIMIT).search_text(QUERY, highlight=True)["rows"]
    assert [{"id": r["id"], "highlights": r["highlights"]} for r in rows] == expected
    assert _sliced(rows)[0] and all(
        word.lower().startswith(("disk", "full")) for row in _sliced(rows) for word in row
    )
    plain = SearchToolkit(engine, table="docs", k=LIMIT).search_text(QUERY)["rows"]
    assert all("highlights" not in row for row in plain)
    defaulted = SearchToolkit(engine, SearchSettings(table="docs", k=LIMIT, highlight=True))
    assert [r["highlights"] for r in defaulted.search_text(QUERY)["rows"]] == [
        r["highlights"] for r in expected
    ]
    with pytest.raises(ToolError, match="highlight must be true or false"):
        SearchToolkit(engine, table="docs").search_text(QUERY, highlight="yes")


def test_the_settings_reranker_reorders_every_search(engine: LocalEngine) -> None:
    reranker = TermOverlapReranker()
    expected = [row["id"] for row in _reference(engine, rerank=reranker, top_n=6)]
    settings = SearchSettings(table="docs", k=LIMIT, reranker=reranker, top_n=6)
    rows = SearchToolkit(engine, settings).search_text(QUERY)["rows"]
    assert [row["id"] for row in rows] == expected
    plain = SearchToolkit(engine, table="docs", k=LIMIT).search_text(QUERY)["rows"]
    assert [row["id"] for row in plain] != expected  # the reranker changed the order
    with pytest.raises(ToolError, match="unknown argument 'rerank'"):
        SearchToolkit(engine, table="docs").search_text(QUERY, rerank="model")


def test_a_reranking_tool_offers_no_cursor(engine: LocalEngine) -> None:
    """Every search of a tool whose settings hold a reranker is reranked, and no cursor
    continues a reranked ranking: the doors do not offer ``after``, and one sent anyway is
    refused with the door's own row count argument to ask with."""
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import AFTER_FIELD, create_app

    settings = SearchSettings(table="docs", k=LIMIT, reranker=TermOverlapReranker(), top_n=6)
    toolkit = SearchToolkit(engine, settings)
    assert toolkit.text_route is not None
    offered = [option.name for option in toolkit.search_options(toolkit.text_route)]
    assert "after" not in offered and "highlight" in offered
    plain = SearchToolkit(engine, table="docs", k=LIMIT)
    assert plain.text_route is not None
    assert "after" in [option.name for option in plain.search_options(plain.text_route)]
    with pytest.raises(ToolError, match=r"reranked.*ask for more rows at once with k \(up to"):
        toolkit.search_text(QUERY, after="abc")

    function = create_app(engine, settings).state.function
    assert "after" not in function.arguments() and AFTER_FIELD not in function.hit_fields()
    assert "`after`" not in function.description()
    client = TestClient(create_app(engine, settings))
    values = {"query": QUERY, "after": "abc"}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 400, answer.text
    assert "'after'" in answer.text


def test_the_langchain_tool_and_retriever(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_text_search_tool

    expected = _reference(engine, highlight=True)
    tool = make_text_search_tool(engine, table="docs", k=LIMIT)
    rows = json.loads(tool.invoke({"query": QUERY, "highlight": True}))["rows"]
    assert [r["highlights"] for r in rows] == [r["highlights"] for r in expected]
    settings = SearchSettings(table="docs", k=LIMIT, highlight=True)
    documents = HotdataRetriever(engine=engine, settings=settings).invoke(QUERY)
    assert [document.metadata["highlights"] for document in documents] == [
        r["highlights"] for r in expected
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(engine: LocalEngine, anyio_backend: str) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    expected = _reference(engine, highlight=True)
    async with Client(create_server(engine, table="docs", k=LIMIT)) as client:
        result = await client.call_tool("hotdata_search_text", {"query": QUERY, "highlight": True})
    assert result.is_error is False, result.content
    rows = json.loads(result.content[0].text)["rows"]
    assert [r["highlights"] for r in rows] == [r["highlights"] for r in expected]


def test_the_ddn_function(engine: LocalEngine) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    expected = _reference(engine, highlight=True)
    client = TestClient(create_app(engine, table="docs", default_top_k=LIMIT))
    values = {"query": QUERY, "highlight": True}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    assert [hit["highlights"] for hit in row["__value"]] == [r["highlights"] for r in expected]


def test_a_nearest_search_highlights_the_tables_text_column(engine: LocalEngine) -> None:
    plan = engine.plan_search(
        SearchRequest(table="docs", query=QUERY, mode="nearest", limit=LIMIT, highlight=True)
    )
    hits = engine.search(plan).hits
    assert hits and all(set(hit.highlights) == {"body"} for hit in hits)
    rows = [{"id": hit.key, "highlights": dict(hit.highlights)} for hit in hits]
    assert any(_sliced(rows)) and all(
        word.lower().startswith(("disk", "full")) for row in _sliced(rows) for word in row
    )


def test_highlight_without_a_text_column_names_highlight() -> None:
    from hotdata_retrieval import PlanError, SearchPlan
    from hotdata_retrieval.plan.search import NearestNeighborSearch
    from hotdata_retrieval.plan.steps import Highlight

    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
    with pytest.raises(PlanError, match=r"^highlight marks the query's words .*--text-column"):
        SearchPlan(source=nearest, key_column="id", steps=[Highlight(query="disk")])
    with pytest.raises(PlanError, match=r"^highlight marks the query text's words"):
        SearchPlan(source=nearest, key_column="id", steps=[Highlight(columns=["body"])])


def test_highlights_mark_the_words_of_every_query(engine: LocalEngine) -> None:
    request = SearchRequest(
        table="docs", query="login", queries=["graph"], mode="text", highlight=True, limit=5
    )
    result = engine.search(engine.plan_search(request))
    marked = {
        BODIES[hit.key - 1][start:end].lower()
        for hit in result
        for start, end in hit.highlights["body"]["matches"]
    }
    assert {"login", "graph"} <= marked


@pytest.mark.parametrize(
    ("options", "done"),
    [({"group_by": "body"}, "grouped"), ({"diversity": 0.5}, "reordered by diversity")],
)
def test_a_tool_whose_settings_group_or_diversify_offers_no_cursor(
    engine: LocalEngine, options: dict[str, Any], done: str
) -> None:
    """A call cannot turn off the settings' grouping, nor their diversity on a search by
    meaning, and no cursor continues such a ranking: ``after`` is not offered there, and
    one sent anyway is refused naming what the settings do (not the plan's own check)."""
    toolkit = SearchToolkit(engine, SearchSettings(table="docs", k=LIMIT, **options))
    route = toolkit.semantic_route if "diversity" in options else toolkit.text_route
    assert route is not None
    offered = [option.name for option in toolkit.search_options(route)]
    assert "after" not in offered
    search = toolkit.search_semantic if "diversity" in options else toolkit.search_text
    with pytest.raises(ToolError, match=rf"every search here is {done}"):
        search(QUERY, after="abc")
