"""A grouped, highlighted or diversified search has no cursor (no step or group continues
after a row's score and key): the library pages it with ``offset``, which no adapter door
takes. Each door's refusal of ``after`` on such a search advises what its own caller can do
— ask for more rows at once with its row count argument (``k``; ``top_k`` on DDN) — and
never names ``offset``; the library and ``hdq search`` (which take it) still advise it. The
DDN function's description names the hit's ``after`` field, not an answer's metadata."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.search import CURSORLESS_ADVICE
from hotdata_retrieval.routing import SearchRequest

QUERY = "disk full"
BODIES = [f"disk full {'again ' * (index % 4)}on host {index % 5}" for index in range(12)]
K = 3
CURSORLESS = [
    pytest.param({"group_by": "parent"}, "grouped", id="grouped"),
    pytest.param({"highlight": True}, "highlight", id="highlighted"),
    pytest.param({"diversity": 0.5}, "diversity", id="diversified"),
]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as opened:
        opened.load_table(
            "chunks",
            pa.table(
                {
                    "id": list(range(len(BODIES))),
                    "parent": [f"p{index % 4}" for index in range(len(BODIES))],
                    "body": BODIES,
                }
            ),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield opened


def _token(engine: LocalEngine) -> str:
    """A cursor a plain search of the table returned."""
    request = SearchRequest(table="chunks", query=QUERY, limit=K)
    token = engine.search(engine.plan_search(request)).next_after
    assert token is not None
    return token


@pytest.mark.parametrize(("options", "named"), CURSORLESS)
def test_the_library_advises_offset(
    engine: LocalEngine, options: dict[str, Any], named: str
) -> None:
    request = SearchRequest(table="chunks", query=QUERY, limit=K, after=_token(engine), **options)
    with pytest.raises(PlanError) as refused:
        engine.plan_search(request)
    assert named in refused.value.reason
    assert refused.value.advice == CURSORLESS_ADVICE
    assert str(refused.value).endswith(f"; {CURSORLESS_ADVICE}")


@pytest.mark.parametrize(("options", "named"), CURSORLESS)
def test_the_toolkit_advises_k(engine: LocalEngine, options: dict[str, Any], named: str) -> None:
    toolkit = SearchToolkit(engine, table="chunks", k=K, max_rows=20)
    with pytest.raises(ToolError) as refused:
        toolkit.search_text(QUERY, after=_token(engine), **options)
    message = str(refused.value)
    assert named in message
    assert message.endswith("ask for more rows at once with k (up to 20)")
    assert "offset" not in message


def test_the_langchain_and_llamaindex_tools_advise_k(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import make_text_search_tool
    from hotdata_retrieval.adapters.llamaindex import make_search_tools

    arguments = {"query": QUERY, "after": _token(engine), "group_by": "parent"}
    (text, *_) = make_search_tools(engine, table="chunks", k=K)
    with pytest.raises(ToolError) as refused:  # a LlamaIndex tool raises its refusals
        text.call(**arguments)
    for answer in (  # a LangChain tool returns them to the agent
        str(make_text_search_tool(engine, table="chunks", k=K).invoke(arguments)),
        str(refused.value),
    ):
        assert "a cursor cannot continue a grouped ranking" in answer
        assert "with k (up to" in answer
        assert "offset" not in answer


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool_advises_k(engine: LocalEngine, anyio_backend: str) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    arguments = {"query": QUERY, "after": _token(engine), "diversity": 0.5}
    async with Client(create_server(engine, table="chunks", k=K)) as client:
        refused = await client.call_tool("hotdata_search_text", arguments)
    assert refused.is_error is True
    message = refused.content[0].text
    assert "with k (up to" in message
    assert "offset" not in message


def _ddn_query(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }


@pytest.mark.parametrize(("options", "named"), CURSORLESS)
def test_the_ddn_function_advises_top_k(
    engine: LocalEngine, options: dict[str, Any], named: str
) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="chunks", default_top_k=K, max_top_k=20))
    answer = client.post("/query", json=_ddn_query({"query": QUERY, **options}))
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    assert [hit["after"] for hit in row["__value"]] == [None] * K  # no cursor continues it
    plain = client.post("/query", json=_ddn_query({"query": QUERY}))
    token = plain.json()[0]["rows"][0]["__value"][-1]["after"]
    assert token is not None
    refused = client.post("/query", json=_ddn_query({"query": QUERY, "after": token, **options}))
    assert refused.status_code == 400
    message = refused.json()["message"]
    assert named in message
    assert message.endswith("ask for more rows at once with top_k (up to 20)")
    assert "offset" not in message


def test_the_ddn_description_names_its_own_fields(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.ddn import SearchDocuments

    description = SearchDocuments(engine, table="chunks", default_top_k=K).description()
    assert "A hit's `after`" in description
    assert "metadata" not in description  # DDN answers a list of hits: no metadata
    assert "`facets`" not in description  # not an argument of the function
    assert "k groups" not in description  # its row count is top_k
    schema = SearchDocuments(engine, table="chunks").schema()["functions"][0]["arguments"]
    assert "k groups" not in schema["group_by"]["description"]


def test_hdq_search_advises_its_offset_option(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from hotdata_retrieval.cli import main
    from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN

    database = str(tmp_path / "db")
    with LocalEngine(database, embedder=HashingEmbedder(dimensions=16)) as opened:
        opened.load_table(
            "chunks",
            pa.table({"id": [1, 2], "parent": ["a", "b"], "body": ["disk full", "disk"]}),
            text_columns=["body"],
        )
        request = SearchRequest(table="chunks", query="disk", limit=1, mode="text")
        token = opened.search(opened.plan_search(request)).next_after
    assert token is not None
    refused = CliRunner().invoke(
        main,
        [
            "search", "disk", "--table", "chunks", "--database", database, "--mode", "text",
            "-k", "1", "--after", token, "--group-by", "parent",
        ],
    )  # fmt: skip
    assert refused.exit_code == EXIT_INVALID_PLAN, refused.output
    assert refused.stderr.rstrip().endswith("page it with --offset")
