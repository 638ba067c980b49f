"""Everything an agent sends is bounded before anything reads it: a query's characters and
words, a SQL text's characters, an MCP message's bytes. Each limit has a test at its edge
(accepted) and one past it (a tool error naming the limit), through the toolkit, the LangChain
tools and the MCP server; over stdio an oversized message is dropped without being held, and
the server's memory stays where it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("mcp")

from mcp import Client

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_search_tools
from hotdata_retrieval.adapters.mcp import MAX_MESSAGE_BYTES, create_server
from hotdata_retrieval.engines.limits import (
    DEFAULT_MAX_QUERY_CHARACTERS,
    DEFAULT_MAX_QUERY_TERMS,
    DEFAULT_MAX_SQL_CHARACTERS,
    InputLimitError,
    InputLimits,
    InvalidLimitError,
    SqlLimits,
)
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from tests.test_adapters_mcp_protocol import RawStdio

LIMITS = InputLimits(max_query_characters=40, max_query_terms=5, max_sql_characters=60)
COUNT = "SELECT count(*) AS n FROM default.public.docs"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bounds") / "db"
    with LocalEngine(root) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2], "body": ["red fox jumps", "blue sea waves"]}),
            text_columns=["body"],
        )
    return root


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[LocalEngine]:
    with LocalEngine(database) as opened:
        yield opened


@pytest.fixture(scope="module")
def toolkit(engine: LocalEngine) -> SearchToolkit:
    return SearchToolkit(engine, table="docs", input_limits=LIMITS)


def _padded_sql(length: int) -> str:
    return COUNT + " " * (length - len(COUNT))


def test_the_defaults_are_the_documented_ones() -> None:
    assert InputLimits() == InputLimits(
        max_query_characters=4096, max_query_terms=128, max_sql_characters=65536
    )
    assert (DEFAULT_MAX_QUERY_CHARACTERS, DEFAULT_MAX_QUERY_TERMS) == (4096, 128)
    assert DEFAULT_MAX_SQL_CHARACTERS == 65536


@pytest.mark.parametrize("field", ["max_query_characters", "max_query_terms", "max_sql_characters"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_bad_limit_names_itself(field: str, value: Any) -> None:
    with pytest.raises(InvalidLimitError, match=field):
        InputLimits(**{field: value})


def test_a_query_at_its_character_limit_runs_and_one_past_is_refused(
    toolkit: SearchToolkit,
) -> None:
    at_limit = "fox" + " " * 37
    assert len(at_limit) == 40
    assert toolkit.search_text(at_limit)["rows"]
    with pytest.raises(ToolError, match=r"41 characters; .* at most 40 \(max_query_characters\)"):
        toolkit.search_text(at_limit + " ")


def test_a_query_at_its_word_limit_runs_and_one_past_is_refused(toolkit: SearchToolkit) -> None:
    assert toolkit.search_text("fox a b c d")["rows"]
    with pytest.raises(ToolError, match=r"more than 5 words.*\(max_query_terms\)"):
        toolkit.search_text("fox a b c d e")
    # Words are runs of letters and digits, however they are separated.
    with pytest.raises(ToolError, match="max_query_terms"):
        toolkit.search_text("fox,a,b,c,d,e")


def test_sql_at_its_character_limit_runs_and_one_past_is_refused(toolkit: SearchToolkit) -> None:
    assert toolkit.execute_sql(_padded_sql(60))["rows"] == [{"n": 2}]
    with pytest.raises(ToolError, match=r"61 characters; .* at most 60 \(max_sql_characters\)"):
        toolkit.execute_sql(_padded_sql(61))


def test_the_langchain_tools_take_the_same_limits_and_no_invented_argument(
    engine: LocalEngine,
) -> None:
    text, sql = (tool for tool in make_search_tools(engine, table="docs", input_limits=LIMITS))
    assert text.args_schema.model_json_schema()["properties"]["query"]["maxLength"] == 40
    assert sql.args_schema.model_json_schema()["properties"]["sql"]["maxLength"] == 60
    assert "fox" in str(text.invoke({"query": "fox" + " " * 37}))
    assert "at most 40 characters" in str(text.invoke({"query": "fox" + " " * 38}))
    assert '"n": 2' in str(sql.invoke({"sql": _padded_sql(60)}))
    assert "at most 60 characters" in str(sql.invoke({"sql": _padded_sql(61)}))
    invented = str(text.invoke({"query": "fox", "limit": 3}))
    assert invented.startswith("Error: invalid arguments") and "limit" in invented
    # Filter text is read as one condition (parse_filter), never run as SQL.
    assert '"id": 1' in str(text.invoke({"query": "fox", "filter": "id = 1"}))
    refused = str(text.invoke({"query": "fox", "filter": "id = 1; DROP TABLE docs"}))
    assert refused.startswith("Error: the filter text does not read"), refused


def test_the_toolkit_reads_k_as_the_tools_schemas_do(toolkit: SearchToolkit) -> None:
    assert toolkit.search_text("fox", 1.0)["metadata"]["k"] == 1  # JSON's integer
    for bad in (True, "3", 0, 2.5, float("nan")):
        with pytest.raises(ToolError, match="k must be a whole number of at least 1"):
            toolkit.search_text("fox", bad)


@pytest.mark.parametrize("k", [True, "3", 0, 2.5, "many"])
def test_the_langchain_search_tools_take_k_as_a_json_integer(engine: LocalEngine, k: Any) -> None:
    text, _ = (tool for tool in make_search_tools(engine, table="docs"))
    answer = str(text.invoke({"query": "fox", "k": k}))
    assert answer.startswith("Error: invalid arguments: k: "), answer
    assert '"returned": 1' in str(text.invoke({"query": "fox", "k": 1.0}))  # JSON's integer


def test_the_retriever_keeps_the_input_limits_and_a_strict_k(engine: LocalEngine) -> None:
    retriever = HotdataRetriever(engine=engine, table="docs", mode="text", input_limits=LIMITS)
    assert [document.id for document in retriever.invoke("fox" + " " * 37)] == ["1"]
    with pytest.raises(InputLimitError, match=r"41 characters; .* \(max_query_characters\)"):
        retriever.invoke("fox" + " " * 38)
    with pytest.raises(InputLimitError, match="max_query_terms"):
        retriever.invoke("a b c d e f")
    for bad in (True, "3", 0):
        with pytest.raises(PlanError, match="limit must be"):
            retriever.invoke("fox", k=bad)
        with pytest.raises(PlanError, match="k must be"):
            HotdataRetriever(engine=engine, table="docs", k=bad)
    # The defaults: 128 words is a query, 129 is not.
    default = HotdataRetriever(engine=engine, table="docs", mode="text")
    assert [document.id for document in default.invoke("fox " * 128)] == ["1"]
    with pytest.raises(InputLimitError, match="more than 128 words"):
        default.invoke("fox " * 129)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tools_list_and_keep_the_limits(
    engine: LocalEngine, anyio_backend: str
) -> None:
    server = create_server(engine, table="docs", input_limits=LIMITS)
    async with Client(server) as client:
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert listed["hotdata_search_text"]["properties"]["query"]["maxLength"] == 40
        assert listed["hotdata_execute_sql"]["properties"]["sql"]["maxLength"] == 60
        past = await client.call_tool("hotdata_search_text", {"query": "x" * 41})
        assert past.is_error and "at most 40 characters" in past.content[0].text
        words = await client.call_tool("hotdata_search_text", {"query": "a b c d e f"})
        assert words.is_error and "max_query_terms" in words.content[0].text
        sql = await client.call_tool("hotdata_execute_sql", {"sql": _padded_sql(61)})
        assert sql.is_error and "at most 60 characters" in sql.content[0].text
        fine = await client.call_tool("hotdata_execute_sql", {"sql": _padded_sql(60)})
        assert fine.is_error is False


def _resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def stdio(database: Path, tmp_path: Path) -> Iterator[RawStdio]:
    with (tmp_path / "stderr.txt").open("w+b") as errors:
        client = RawStdio(["--database", str(database)], errors)
        try:
            client.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield client
        finally:
            client.close()


def _call(stdio: RawStdio, query: str) -> dict[str, Any]:
    return stdio.call("hotdata_search_text", {"query": query})


def test_an_oversized_message_is_dropped_unread_and_memory_stays(stdio: RawStdio) -> None:
    assert _call(stdio, "fox")["result"]["isError"] is False
    baseline = _resident_bytes(stdio.process.pid)
    # 64 MB: an argument past every limit, in a message past the stdio reader's.
    huge = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 999,
            "method": "tools/call",
            "params": {"name": "hotdata_search_text", "arguments": {"query": "fox " * 16_000_000}},
        }
    )
    stdio.send_line(huge)
    reply = stdio.reply()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600
    assert f"at most {MAX_MESSAGE_BYTES:,} are read" in reply["error"]["message"]
    assert _call(stdio, "fox")["result"]["isError"] is False
    assert _resident_bytes(stdio.process.pid) <= baseline * 1.1


def test_a_read_message_refused_by_its_arguments_leaves_memory_where_it_was(
    stdio: RawStdio,
) -> None:
    assert _call(stdio, "fox")["result"]["isError"] is False
    baseline = _resident_bytes(stdio.process.pid)
    query = "fox " * ((MAX_MESSAGE_BYTES - 200) // 4)  # the largest message the reader takes
    reply = _call(stdio, query)
    assert reply["result"]["isError"] is True
    assert "at most 4096 characters" in json.dumps(reply["result"])
    assert _call(stdio, "fox")["result"]["isError"] is False
    assert _resident_bytes(stdio.process.pid) <= baseline * 1.1


def test_a_message_at_the_reader_limit_is_read(stdio: RawStdio) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "hotdata_search_text", "arguments": {"query": ""}},
    }
    empty = json.dumps(request)
    # Pad with JSON white space to exactly the limit, the line feed included.
    stdio.send_line(empty[:-1] + " " * (MAX_MESSAGE_BYTES - len(empty) - 1) + "}")
    reply = stdio.reply()
    assert reply["id"] == 7  # read and answered (an empty query is a tool error)
    assert reply["result"]["isError"] is True


def test_reading_and_linting_sql_run_on_the_calls_clock(engine: LocalEngine) -> None:
    values = ",".join(str(number) for number in range(9000))
    sql = f"SELECT count(*) AS n FROM default.public.docs WHERE id IN ({values})"
    assert len(sql) < DEFAULT_MAX_SQL_CHARACTERS
    hurried = SearchToolkit(engine, table="docs", sql_limits=SqlLimits(timeout_seconds=0.001))
    with pytest.raises(ToolError, match=r"time limit of 0.001 seconds"):
        hurried.execute_sql(sql)
    assert SearchToolkit(engine, table="docs").execute_sql(sql)["rows"] == [{"n": 2}]
