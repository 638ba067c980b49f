"""The MCP server, through the SDK's own client: in process, over JSON-RPC memory streams, and
``hdq mcp`` over stdio. Listing, calling each tool, and bad arguments as tool errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from hotdata_retrieval.adapters import FORBIDDEN_DESCRIPTION_WORDS, SearchToolkit, ToolError
from hotdata_retrieval.adapters.mcp import add_tools, create_server
from hotdata_retrieval.cli.mcp import ENGINE_OPENERS, mcp, open_local_engine
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

pytestmark = pytest.mark.anyio

TOOLS = ["hotdata_search_text", "hotdata_search_semantic", "hotdata_execute_sql"]
BODIES = [
    "the app crashes on start",
    "charged twice for one order",
    "password reset mail never arrives",
    "sync fails with error E1234",
    "refund for a cancelled plan",
    "crash when opening the settings",
]


def _load(engine: LocalEngine) -> None:
    rows = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    engine.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hdq")
    with LocalEngine(directory, embedder=HashingEmbedder()) as engine:
        _load(engine)
    return directory


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[Any]:
    local = open_local_engine(str(database), "docs")
    yield local
    local.close()


@pytest.fixture
def server(engine: Any) -> Any:
    return create_server(engine, table="docs", k=2, max_rows=4)


def _document(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    (content,) = result.content
    document = json.loads(content.text)
    assert document == result.structured_content
    return document  # type: ignore[no-any-return]


def _error(result: Any) -> str:
    assert result.is_error is True
    assert result.structured_content is None
    return str(result.content[0].text)


# -- listing -----------------------------------------------------------------------------------


async def test_the_server_lists_the_same_tools_as_the_langchain_adapter(
    server: Any, engine: Any
) -> None:
    toolkit = SearchToolkit(engine, table="docs", k=2, max_rows=4)
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
    assert [tool.name for tool in listed] == TOOLS
    descriptions = {tool.name: tool.description for tool in listed}
    assert descriptions == {
        "hotdata_search_text": toolkit.describe_text_search(),
        "hotdata_search_semantic": toolkit.describe_semantic_search(),
        "hotdata_execute_sql": toolkit.describe_sql(),
    }
    for tool in listed:
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        for word in FORBIDDEN_DESCRIPTION_WORDS:
            assert word not in (tool.description or "").lower()


async def test_search_tools_declare_query_k_filter_and_fusion(server: Any) -> None:
    async with Client(server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = listed["hotdata_search_text"].input_schema
    assert schema["required"] == ["query"]
    assert set(schema["properties"]) == {
        "query",
        "k",
        "filter",
        "fusion",
        "diversity",
        "candidates",
        "queries",
        "explain_scores",
        "group_by",
        "group_size",
        "after",
        "highlight",
        "facets",
    }
    assert "1 to 4" in schema["properties"]["k"]["description"]
    assert set(listed["hotdata_search_semantic"].input_schema["properties"]) == {
        "query",
        "k",
        "filter",
        "diversity",
        "candidates",
        "queries",
        "group_by",
        "group_size",
        "after",
        "highlight",
        "facets",
    }
    for tool in listed.values():  # the arguments' words are the agent's too
        for word in FORBIDDEN_DESCRIPTION_WORDS:
            assert word not in json.dumps(tool.input_schema).lower(), (tool.name, word)
    assert listed["hotdata_execute_sql"].input_schema["required"] == ["sql"]


# -- calling each tool -------------------------------------------------------------------------


async def test_text_search_answers_with_the_envelope(server: Any) -> None:
    async with Client(server) as client:
        document = _document(await client.call_tool("hotdata_search_text", {"query": "crash"}))
    metadata = document["metadata"]
    assert (metadata["tool"], metadata["k"], metadata["ranked_by"]) == (
        "hotdata_search_text",
        2,
        "score",
    )
    assert {row["id"] for row in document["rows"]} == {1, 6}
    assert list(document["rows"][0]) == ["id", "body", "score"]


async def test_semantic_search_answers_nearest_first(server: Any) -> None:
    async with Client(server) as client:
        result = await client.call_tool("hotdata_search_semantic", {"query": "crash", "k": 3})
    document = _document(result)
    assert document["metadata"]["order"] == "ascending"
    distances = [row["_distance"] for row in document["rows"]]
    assert len(distances) == 3 and distances == sorted(distances)


async def test_sql_answers_with_rows_and_lint_warnings(server: Any) -> None:
    sql = "SELECT * FROM bm25_search('default.public.docs','body','x') LIMIT 3"
    async with Client(server) as client:
        document = _document(await client.call_tool("hotdata_execute_sql", {"sql": sql}))
        counted = _document(
            await client.call_tool(
                "hotdata_execute_sql", {"sql": "SELECT COUNT(*) AS n FROM default.public.docs"}
            )
        )
    assert [warning["code"] for warning in document["metadata"]["warnings"]] == ["HDQ010"]
    assert counted["rows"] == [{"n": len(BODIES)}]


async def test_a_larger_k_is_clamped_and_the_result_says_so(server: Any) -> None:
    async with Client(server) as client:
        result = await client.call_tool("hotdata_search_text", {"query": "crash", "k": 400})
    metadata = _document(result)["metadata"]
    assert (metadata["k"], metadata["k_requested"]) == (4, 400)
    assert metadata["warnings"][0]["code"] == "k_clamped"


# -- bad calls ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("hotdata_search_text", {"query": "crash", "k": 0}, "greater than or equal to 1"),
        ("hotdata_search_text", {"query": "crash", "k": "many"}, "valid integer"),
        ("hotdata_search_text", {"k": 3}, "query"),
        ("hotdata_search_text", {"query": "   "}, "query must be non-empty text"),
        ("hotdata_search_semantic", {"query": ""}, "at least 1 character"),
        ("hotdata_execute_sql", {"sql": "SELECT nope FROM default.public.docs"}, "nope"),
        ("hotdata_execute_sql", {"sql": "DROP TABLE docs"}, "got DROP"),
        ("hotdata_execute_sql", {}, "sql"),
    ],
)
async def test_bad_calls_come_back_as_tool_errors(
    server: Any, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with Client(server) as client:
        text = _error(await client.call_tool(tool, arguments))
        assert message in text
        # the server is still there
        assert _document(await client.call_tool("hotdata_search_text", {"query": "crash"}))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_tool_or_prompt_is_invalid_params(server: Any, mode: str) -> None:
    """The MCP specification's tools section (2025-11-25, "Error Handling"): an unknown tool
    is a protocol error, -32602; the SDK alone answered it with a tool result, and an unknown
    prompt with code 0."""
    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as tool:
            await client.call_tool("hotdata_search_everything", {"query": "crash"})
        assert tool.value.error.code == INVALID_PARAMS
        assert tool.value.error.message.startswith("Unknown tool: 'hotdata_search_everything' (")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("summary")
        assert prompt.value.error.code == INVALID_PARAMS
        assert prompt.value.error.message == "Unknown prompt: 'summary' (the server has no prompts)"
        assert _document(await client.call_tool("hotdata_search_text", {"query": "crash"}))


async def test_the_json_rpc_transport_gives_the_same_answers(server: Any) -> None:
    async with Client(server, mode="legacy") as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == TOOLS
        document = _document(await client.call_tool("hotdata_search_text", {"query": "crash"}))
        text = _error(await client.call_tool("hotdata_search_text", {"query": "crash", "k": -1}))
    assert document["metadata"]["row_count"] == 2
    assert "greater than or equal to 1" in text


def test_create_server_checks_its_limits(engine: Any) -> None:
    with pytest.raises(ToolError, match="must not exceed"):
        create_server(engine, table="docs", k=9, max_rows=3)


async def test_tools_can_be_added_to_a_server_of_ones_own(engine: Any) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="mine")
    names = add_tools(server, SearchToolkit(engine, table="docs", name_prefix="kb_"), sql=False)
    assert names == ["kb_search_text", "kb_search_semantic"]
    async with Client(server) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == names


# -- hdq mcp ------------------------------------------------------------------------------------


def test_hdq_mcp_documents_its_options() -> None:
    result = CliRunner().invoke(mcp, ["--help"])
    assert result.exit_code == 0
    for option in ("--database", "--table", "--max-rows", "-k", "--engine"):
        assert option in result.output
    assert sorted(ENGINE_OPENERS) == ["local"]


def test_hdq_mcp_without_a_database_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(mcp, ["--database", str(tmp_path / "none"), "--table", "docs"])
    assert result.exit_code == 2
    assert "no database at" in result.stderr


def test_a_relative_database_names_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(mcp, ["--database", ".hdq", "--table", "docs"])
    assert result.exit_code == 2
    assert f"no database at {tmp_path / '.hdq'} (resolved in {tmp_path}" in result.stderr
    assert "give --database an absolute path" in result.stderr


def test_a_relative_database_is_opened_as_an_absolute_path(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(database.parent)
    engine = open_local_engine(database.name, "docs")
    try:
        assert engine.root == database
        monkeypatch.chdir("/")  # the server's directory changes; its worker still finds it
        rows = SearchToolkit(engine, table="docs").execute_sql(
            "SELECT count(*) AS n FROM default.public.docs"
        )["rows"]
        assert rows == [{"n": len(BODIES)}]
    finally:
        engine.close()


def test_hdq_mcp_with_an_unknown_table_fails_in_one_line(database: Path) -> None:
    result = CliRunner().invoke(mcp, ["--database", str(database), "--table", "nope"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "hdq mcp: error: table 'default.public.nope' not found; tables: docs"
    )


def test_hdq_mcp_rejects_a_k_above_the_ceiling(database: Path) -> None:
    result = CliRunner().invoke(
        mcp, ["--database", str(database), "--table", "docs", "-k", "9", "--max-rows", "3"]
    )
    assert result.exit_code == 2
    assert "Invalid value for '-k': 9 exceeds --max-rows (3)" in result.stderr


def test_hdq_mcp_refuses_a_column_the_table_lacks_before_serving(database: Path) -> None:
    result = CliRunner().invoke(
        mcp, ["--database", str(database), "--table", "docs", "--columns", "id,nosuch"]
    )
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("hdq mcp: error: columns: ") and "'nosuch'" in line


def test_a_toolkit_refuses_a_column_the_table_lacks(engine: Any) -> None:
    with pytest.raises(ToolError, match="'nosuch'"):
        SearchToolkit(engine, table="docs", columns=["id", "nosuch"])
    toolkit = SearchToolkit(engine, table="docs", columns=["id", "body"])
    assert toolkit.columns == ("id", "body")


async def test_hdq_mcp_serves_over_stdio(database: Path) -> None:
    command = "from hotdata_retrieval.cli.mcp import mcp; mcp()"
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-c", command, "--database", str(database), "--table", "docs", "--max-rows", "3"],
    )
    async with Client(parameters) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == TOOLS
        document = _document(
            await client.call_tool("hotdata_search_text", {"query": "crash", "k": 10})
        )
        text = _error(await client.call_tool("hotdata_execute_sql", {"sql": "DROP TABLE docs"}))
    assert document["metadata"]["k"] == 3
    assert {row["id"] for row in document["rows"][:2]} == {1, 6}
    assert "only read-only queries" in text
