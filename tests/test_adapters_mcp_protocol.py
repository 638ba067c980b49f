"""Malformed MCP requests, in process and over stdio: every one gets an error reply — a JSON-RPC
error or a tool result with ``isError`` and a one-line message naming the bad argument — and
the server answers the next call. Arguments are checked exactly as the listed input schema says.

Every test runs over the local engine and over each store (:data:`ENGINES`: SQLite, DuckDB,
PostgreSQL, LanceDB), the same small table loaded into each, served as ``hdq mcp --engine``
serves it. LanceDB runs no SQL, so its server has no SQL tool: where a test calls it, the test
asserts that the tool is absent and that the search tools say why.

Over stdio the requests are written as raw JSON lines (the SDK's client cannot send a lone
surrogate), and a server that exits without replying, or is silent for :data:`HANG_SECONDS`,
fails the test rather than hanging it.
"""

from __future__ import annotations

import json
import math
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import anyio
import attrs
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from mcp.shared.exceptions import MCPError

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.adapters.mcp import add_tools, create_server
from hotdata_retrieval.cli._engines import table_embedder
from hotdata_retrieval.cli.mcp import open_local_engine
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from tests.parity.engines import open_engine, store_location
from tests.test_adapters_mcp import BODIES, TOOLS, _load

HANG_SECONDS = 600.0
"""Seconds a reply may take before the test calls the server hung. The server starts in about
4 s on an idle machine and many times that on a loaded one, so a shorter clock would fail a
slow machine rather than a hung server: over stdio a reply is awaited as long as the process
lives, and a server that exits fails the wait at once."""

POLL_SECONDS = 0.5
"""How often a wait for a reply over stdio checks that the server still runs."""

SEARCH = "hotdata_search_text"
SQL = "hotdata_execute_sql"
MODES = ["auto", "legacy"]  # the SDK's client: per-request envelope, and initialize handshake


def _tool_error(tool: str, message: str) -> str:
    return f"Error executing tool {tool}: {message}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb"]

ONE_PROCESS = frozenset({"duckdb"})
"""Stores whose database file one process opens at a time (DuckDB's lock): each ``hdq mcp``
process gets a database of its own, loaded alike."""


@attrs.frozen
class Served:
    """The table ``docs`` on one engine, opened as ``hdq mcp`` opens it.

    Attributes:
        name: the engine's name (``--engine``).
        engine: the engine, its embedder the one that made the table's vectors.
        sql_refusal: why the engine offers no SQL tool (LanceDB), or ``None``.
        reach: gives ``hdq mcp``'s options that reach the same table, for one more process.
    """

    name: str
    engine: Any
    sql_refusal: str | None
    reach: Callable[[], tuple[str, ...]]

    @property
    def tools(self) -> list[str]:
        """The tools its server lists."""
        return [tool for tool in TOOLS if tool != SQL or self.sql_refusal is None]

    def options(self) -> tuple[str, ...]:
        """``hdq mcp``'s options for a server process of its own."""
        return self.reach()


def _docs_with_vectors() -> pa.Table:
    """``docs`` as the local engine's load makes it: the bodies embedded by the hashing
    embedder into ``body_embedding``."""
    vectors = HashingEmbedder().embed_documents(BODIES)
    return pa.table(
        {
            "id": list(range(1, len(BODIES) + 1)),
            "body": BODIES,
            "body_embedding": pa.array(vectors, pa.list_(pa.float32())),
        }
    )


def _loaded_store(name: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    """Store ``name`` with ``docs`` loaded as ``hdq load --embedder hashing`` loads it: the
    key, a full-text index on ``body``, the vectors and the model that made them."""
    engine = open_engine(name, directory, request)
    engine.load_table(
        "docs",
        _docs_with_vectors(),
        key_column="id",
        text_columns=["body"],
        vector_model=HashingEmbedder().name,
    )
    return engine


@pytest.fixture(scope="module", params=ENGINES)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    name = request.param
    directory = tmp_path_factory.mktemp(f"mcp-{name}")
    if name == "local":
        with LocalEngine(directory, embedder=HashingEmbedder()) as loading:
            _load(loading)
        engine = open_local_engine(str(directory), "docs")
        yield Served(name, engine, None, lambda: ("--database", str(directory)))
        engine.close()
        return

    def reach() -> tuple[str, ...]:
        place = directory
        if name in ONE_PROCESS:
            place = tmp_path_factory.mktemp(f"mcp-{name}-process")
            _loaded_store(name, place, request).close()
        return ("--engine", name, "--database", store_location(name, place, request))

    engine = _loaded_store(name, directory, request)
    engine.embedder = table_embedder(engine, "docs")  # as hdq mcp --engine finds it
    assert engine.embedder is not None
    yield Served(name, engine, getattr(engine, "agent_sql_refusal", None), reach)
    engine.close()


@pytest.fixture(scope="module")
def engine(served: Served) -> Any:
    return served.engine


@pytest.fixture(scope="module")
def server(engine: Any) -> MCPServer:
    return create_server(engine, table="docs", k=2, max_rows=4)


def _says_why_there_is_no_sql_tool(served: Served, listed: Any) -> None:
    """The tools ``listed`` (objects with ``name`` and ``description``, or dicts of them) are
    the engine's, without the SQL tool, and the search tools' descriptions say why."""
    described = {
        item["name"] if isinstance(item, dict) else item.name: " ".join(
            (item["description"] if isinstance(item, dict) else item.description).split()
        )
        for item in listed
    }
    assert sorted(described) == sorted(served.tools)
    assert SQL not in described
    for name in described:
        assert (
            "no SQL tool is offered for counts, totals or every row meeting a condition: "
            f"{served.sql_refusal}." in described[name]
        )


def _no_sql_tool(served: Served, tool: str, listed: Any) -> bool:
    """Whether ``tool`` is the SQL tool on an engine that offers none (LanceDB): then the
    test asserts that the tools ``listed`` lack it and say why, instead of calling it."""
    if tool != SQL or served.sql_refusal is None:
        return False
    _says_why_there_is_no_sql_tool(served, listed)
    return True


# -- the faults --------------------------------------------------------------------------------

# (tool, arguments, message after "Error executing tool <tool>: ") for the tool-level checks
ARGUMENT_FAULTS = [
    pytest.param(
        SEARCH,
        {"query": "crash", "k": True},
        "argument 'k': Input should be a valid integer, got a boolean (true)",
        id="k-true",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "k": "5"},
        "argument 'k': Input should be a valid integer, got a string (\"5\")",
        id="k-numeric-string",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "k": 1.5},
        "argument 'k': Input should be a valid integer, got a number (1.5)",
        id="k-fraction",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "k": 0},
        "argument 'k': Input should be greater than or equal to 1, got a number (0)",
        id="k-zero",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "k": [3]},
        "argument 'k': Input should be a valid integer, got an array",
        id="k-array",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "limit": 3},
        "unknown argument 'limit' (the arguments are 'query', 'k', 'filter', 'fusion', "
        "'diversity', 'candidates', 'queries', 'explain_scores', 'group_by', 'group_size', "
        "'after', 'highlight' and 'facets')",
        id="unknown-argument",
    ),
    pytest.param(
        SQL,
        {"sql": "SELECT 1", "k": 3},
        "unknown argument 'k' (the arguments are 'sql')",
        id="sql-unknown-argument",
    ),
    pytest.param(
        SEARCH,
        {"query": ["crash"]},
        "argument 'query': Input should be a valid string, got an array",
        id="query-array",
    ),
    pytest.param(
        SQL,
        {"sql": ""},
        "argument 'sql': String should have at least 1 character, got a string (\"\")",
        id="sql-empty",
    ),
    pytest.param(
        SEARCH,
        {"k": 2, "size": 1, "page": 2},
        "missing argument 'query'; unknown arguments 'size', 'page' (the arguments are 'query', "
        "'k', 'filter', 'fusion', 'diversity', 'candidates', 'queries', 'explain_scores', "
        "'group_by', 'group_size', 'after', 'highlight' and 'facets')",
        id="several-problems",
    ),
]

# Lone surrogates reach the tool in process; over stdio the SDK cannot read the line at all.
SURROGATE_FAULTS = [
    pytest.param(
        SEARCH,
        {"query": "\ud800"},
        "argument 'query' is not valid Unicode text: a lone surrogate (\\ud800) at character 0",
        "params.arguments.query holds a lone surrogate (\\ud800), which is not Unicode text",
        id="query",
    ),
    pytest.param(
        SQL,
        {"sql": "SELECT '\udc00'"},
        "argument 'sql' is not valid Unicode text: a lone surrogate (\\udc00) at character 8",
        "params.arguments.sql holds a lone surrogate (\\udc00), which is not Unicode text",
        id="sql",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "k": "\ud800"},
        "argument 'k': Input should be a valid integer, got a string (\"\\ud800\")",
        "params.arguments.k holds a lone surrogate (\\ud800), which is not Unicode text",
        id="k",
    ),
    pytest.param(
        SEARCH,
        {"query": "crash", "\ud800": 1},
        "unknown argument '\\ud800' (the arguments are 'query', 'k', 'filter', 'fusion', "
        "'diversity', 'candidates', 'queries', 'explain_scores', 'group_by', 'group_size', "
        "'after', 'highlight' and 'facets')",
        "params.arguments has a key, '\\ud800', holding a lone surrogate (\\ud800), which is "
        "not Unicode text",
        id="argument-name",
    ),
]


# -- in process --------------------------------------------------------------------------------


async def _answers_a_valid_call(client: Any) -> None:
    result = await client.call_tool(SEARCH, {"query": "crash"})
    assert result.is_error is False, result.content
    assert result.structured_content["metadata"]["row_count"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "arguments", "message"), ARGUMENT_FAULTS)
async def test_a_bad_argument_is_a_one_line_tool_error(
    served: Served,
    server: MCPServer,
    mode: str,
    tool: str,
    arguments: dict[str, Any],
    message: str,
) -> None:
    if _no_sql_tool(served, tool, await server.list_tools()):
        return
    with anyio.fail_after(HANG_SECONDS):
        async with Client(server, mode=mode) as client:
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True
            assert result.structured_content is None
            assert [block.text for block in result.content] == [_tool_error(tool, message)]
            await _answers_a_valid_call(client)


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "arguments", "message", "_wire"), SURROGATE_FAULTS)
async def test_a_lone_surrogate_is_a_tool_error_at_the_tool(
    served: Served,
    server: MCPServer,
    tool: str,
    arguments: dict[str, Any],
    message: str,
    _wire: str,
) -> None:
    if _no_sql_tool(served, tool, await server.list_tools()):
        return
    # MCPServer.call_tool: the arguments reach the tool exactly as given
    with pytest.raises(McpToolError) as raised:
        await server.call_tool(tool, arguments)
    assert not isinstance(raised.value, UnexpectedToolError)
    assert str(raised.value) == _tool_error(tool, message)
    async with Client(server) as client:
        await _answers_a_valid_call(client)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "arguments", "message", "_wire"),
    # The SDK's client sends a lone surrogate in a value as it is, but replaces one in an
    # argument name before sending (that case is checked at the tool, above, and over stdio).
    [fault for fault in SURROGATE_FAULTS if fault.id != "argument-name"],
)
async def test_a_lone_surrogate_is_a_tool_error_through_the_client(
    served: Served,
    server: MCPServer,
    mode: str,
    tool: str,
    arguments: dict[str, Any],
    message: str,
    _wire: str,
) -> None:
    if _no_sql_tool(served, tool, await server.list_tools()):
        return
    with anyio.fail_after(HANG_SECONDS):
        async with Client(server, mode=mode) as client:
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True
            assert [block.text for block in result.content] == [_tool_error(tool, message)]
            await _answers_a_valid_call(client)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_k_null_is_the_default_and_a_whole_float_is_an_integer(
    server: MCPServer, mode: str
) -> None:
    async with Client(server, mode=mode) as client:
        default = await client.call_tool(SEARCH, {"query": "crash", "k": None})
        whole = await client.call_tool(SEARCH, {"query": "crash", "k": 3.0})
    assert default.is_error is False and default.structured_content["metadata"]["k"] == 2
    assert whole.is_error is False and whole.structured_content["metadata"]["k"] == 3


@pytest.mark.anyio
async def test_the_listed_schemas_are_closed_and_strict(served: Served, server: MCPServer) -> None:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    listed = {tool.name: tool.input_schema for tool in tools}
    assert sorted(listed) == sorted(served.tools)
    for name in (SEARCH, "hotdata_search_semantic"):
        schema = listed[name]
        assert schema["additionalProperties"] is False
        assert schema["required"] == ["query"]
        assert schema["properties"]["query"]["type"] == "string"
        assert schema["properties"]["query"]["minLength"] == 1
        assert schema["properties"]["k"]["anyOf"] == [
            {"minimum": 1, "type": "integer"},
            {"type": "null"},
        ]
        assert schema["properties"]["k"]["default"] is None
    if _no_sql_tool(served, SQL, tools):
        assert SQL not in listed
    else:
        sql = listed[SQL]
        assert (sql["additionalProperties"], sql["required"]) == (False, ["sql"])
        assert sql["properties"]["sql"]["type"] == "string"
        assert sql["properties"]["sql"]["minLength"] == 1
    # the schema the server keeps is the one it lists
    kept = {tool.name: tool.input_schema for tool in await server.list_tools()}
    assert kept == listed


@pytest.mark.anyio
async def test_tools_added_to_a_server_of_ones_own_check_their_arguments(engine: Any) -> None:
    own = MCPServer(name="mine")
    add_tools(own, SearchToolkit(engine, table="docs", name_prefix="kb_"), sql=False)
    async with Client(own) as client:
        result = await client.call_tool("kb_search_text", {"query": "crash", "k": True})
        listed = (await client.list_tools()).tools
    message = "argument 'k': Input should be a valid integer, got a boolean (true)"
    assert [block.text for block in result.content] == [_tool_error("kb_search_text", message)]
    assert all(tool.input_schema["additionalProperties"] is False for tool in listed)


@pytest.mark.anyio
async def test_a_python_call_is_checked_the_same_way(server: MCPServer) -> None:
    with pytest.raises(McpToolError) as raised:
        await server.call_tool(SEARCH, {"query": "crash", "extra": 1})
    assert str(raised.value) == _tool_error(
        SEARCH,
        "unknown argument 'extra' (the arguments are 'query', 'k', 'filter', 'fusion', "
        "'diversity', 'candidates', 'queries', 'explain_scores', 'group_by', 'group_size', "
        "'after', 'highlight' and 'facets')",
    )


# -- any arguments at all ----------------------------------------------------------------------

_SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.sampled_from(["", " ", "crash", "5", "true", "null", "[1]", '{"k": 1}', "SELECT 1"]),
    st.tuples(st.text(max_size=4), _SURROGATES, st.text(max_size=4)).map("".join),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-3, max_value=9),
    st.floats(),
    st.floats(min_value=-3, max_value=9).map(round).map(float),
    _TEXT,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(_TEXT, children, max_size=3)
    ),
    max_leaves=6,
)
_NAMES = st.one_of(st.sampled_from(["query", "k", "sql"]), _TEXT)
_COUNTS = st.one_of(
    st.none(), st.integers(min_value=-2, max_value=60), st.floats(-2, 60).map(round).map(float)
)
_CALLS = st.one_of(
    # anything at all
    st.tuples(st.sampled_from(TOOLS), st.dictionaries(_NAMES, _VALUES, max_size=4)),
    st.tuples(
        st.sampled_from(TOOLS),
        st.fixed_dictionaries({"query": _VALUES}, optional={"k": _VALUES, "sql": _VALUES}),
    ),
    # close to what each tool takes, so that many calls run
    st.tuples(
        st.sampled_from(TOOLS[:2]),
        st.fixed_dictionaries({"query": _TEXT}, optional={"k": st.one_of(_COUNTS, _SCALARS)}),
    ),
    st.tuples(st.just(SQL), st.fixed_dictionaries({"sql": _TEXT})),
)


class Schemas(dict[str, Draft202012Validator]):
    """The listed input schema of each tool, as a JSON Schema validator."""

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"Schemas({sorted(self)})"


@pytest.fixture(scope="module")
def schemas(server: MCPServer) -> Schemas:
    tools = anyio.run(server.list_tools)
    return Schemas((tool.name, Draft202012Validator(tool.input_schema)) for tool in tools)


def _unknown_tool(tool: str, tools: list[str]) -> str:
    """The JSON-RPC error message for a call of ``tool`` on a server listing ``tools``."""
    return f"Unknown tool: '{tool}' (the tools are {', '.join(repr(name) for name in tools)})"


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(character) <= 0xDFFF for character in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def _is_plain_json(value: Any) -> bool:
    """No lone surrogate and no NaN or infinity: what the SDK's client sends unchanged."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_is_plain_json(k) and _is_plain_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain_json(item) for item in value)
    return not _has_lone_surrogate(value)


_ARGUMENT_PROBLEM = ("argument ", "unknown argument", "missing argument", "the arguments must")


def _expected(schemas: Schemas, tool: str, arguments: Any) -> str:
    """``absent``: the server lists no such tool (the SQL tool on LanceDB); ``refused``: the
    arguments break the listed schema or hold a lone surrogate; ``answered``: a search runs on
    them; ``checked``: they pass, and the tool may still fail (a SQL query that does not run; a
    query of spaces only, or with a NUL character, which the search refuses)."""
    if tool not in schemas:
        return "absent"
    if _has_lone_surrogate(arguments) or not schemas[tool].is_valid(arguments):
        return "refused"
    if tool != SQL and arguments["query"].strip() and "\x00" not in arguments["query"]:
        return "answered"
    return "checked"


def _assert_reply(expected: str, tool: str, is_error: bool, text: str) -> None:
    text.encode("utf-8")  # never a lone surrogate in a reply
    problem = text.removeprefix(_tool_error(tool, ""))
    if expected == "absent":
        assert is_error, text
        assert text.startswith(f"Unknown tool: {tool}"), text
        return
    if expected == "refused":
        assert is_error, text
        assert text.startswith(_tool_error(tool, "")), text
        assert problem.startswith(_ARGUMENT_PROBLEM), text
        assert "\n" not in text
        return
    assert not (is_error and problem.startswith(_ARGUMENT_PROBLEM)), text
    if expected == "answered":
        assert not is_error, text


async def _at_the_tool(server: MCPServer, tool: str, arguments: Any) -> tuple[bool, str]:
    try:
        with anyio.fail_after(HANG_SECONDS):
            result = await server.call_tool(tool, arguments)
    except McpToolError as error:
        assert not isinstance(error, UnexpectedToolError), repr(error.__cause__)
        return True, str(error)
    (block,) = result.content
    return bool(result.is_error), block.text


async def _through_the_client(
    server: MCPServer, mode: str, tool: str, arguments: Any
) -> tuple[bool, str]:
    with anyio.fail_after(HANG_SECONDS):
        async with Client(server, mode=mode) as client:
            result = await client.call_tool(tool, arguments)
    (block,) = result.content
    return bool(result.is_error), block.text


async def _refused_by_the_client(
    server: MCPServer, mode: str, tool: str, arguments: Any
) -> tuple[int, str]:
    """The JSON-RPC error a call through the client gets (it must get one)."""
    with anyio.fail_after(HANG_SECONDS):
        async with Client(server, mode=mode) as client:
            try:
                await client.call_tool(tool, arguments)
            except MCPError as error:
                return error.error.code, error.error.message
    pytest.fail(f"{tool} answered {arguments!r} with a result")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=_CALLS, mode=st.sampled_from(MODES))
def test_any_json_arguments_in_process_get_a_result_or_an_error_reply(
    served: Served,
    server: MCPServer,
    schemas: Schemas,
    call: tuple[str, dict[str, Any]],
    mode: str,
) -> None:
    tool, arguments = call
    expected = _expected(schemas, tool, arguments)
    at_the_tool = anyio.run(_at_the_tool, server, tool, arguments)
    _assert_reply(expected, tool, *at_the_tool)
    if expected == "absent" and _is_plain_json(arguments):
        refused = anyio.run(_refused_by_the_client, server, mode, tool, arguments)
        assert refused == (-32602, _unknown_tool(tool, served.tools))
    elif _is_plain_json(arguments):
        assert anyio.run(_through_the_client, server, mode, tool, arguments) == at_the_tool


# -- over stdio --------------------------------------------------------------------------------

COMMAND = "from hotdata_retrieval.cli.mcp import mcp; mcp()"
SERVED = ["--table", "docs", "--max-rows", "3"]


class RawStdio:
    """``hdq mcp`` as a subprocess, spoken to one raw line at a time; ``options`` reach the
    engine (``--database``, ``--engine``)."""

    def __init__(self, options: Sequence[str], errors: IO[bytes]) -> None:
        self.errors = errors
        self.process = subprocess.Popen(
            [sys.executable, "-c", COMMAND, *options, *SERVED],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send_line(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        # json.dumps escapes a lone surrogate as \ud800, as a JavaScript client would
        self.send_line(json.dumps(message))

    def _stderr_tail(self) -> str:
        self.errors.flush()
        return Path(self.errors.name).read_text(errors="replace")[-2000:]

    def reply(self) -> dict[str, Any]:
        """The next line the server writes, awaited while the server runs (module docstring)."""
        waited = 0.0
        while True:
            try:
                line = self.lines.get(timeout=POLL_SECONDS)
                break
            except queue.Empty:
                waited += POLL_SECONDS
                if self.process.poll() is not None and self.lines.empty():
                    pytest.fail(
                        f"the server exited ({self.process.returncode}) without replying; "
                        f"its stderr ends: {self._stderr_tail()}"
                    )
                if waited >= HANG_SECONDS:
                    pytest.fail(f"no reply in {HANG_SECONDS} s; stderr: {self._stderr_tail()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def request_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self.request_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.reply()
        assert reply.get("id") == request_id, reply
        return reply

    def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def stdio(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    with (tmp_path_factory.mktemp("stdio") / "stderr.txt").open("w+b") as errors:
        client = RawStdio(served.options(), errors)
        try:
            initialized = client.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            assert "result" in initialized, initialized
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield client
        finally:
            client.close()
    assert client.process.returncode == 0


def _answers_a_valid_call_over_stdio(stdio: RawStdio) -> None:
    reply = stdio.call(SEARCH, {"query": "crash"})
    assert reply["result"]["isError"] is False
    assert reply["result"]["structuredContent"]["metadata"]["k"] == 3


def _tool_error_reply(request_id: int, tool: str, message: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "content": [{"type": "text", "text": _tool_error(tool, message)}],
            "isError": True,
        },
    }


def _listed_over_stdio(stdio: RawStdio) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = stdio.request("tools/list")["result"]["tools"]
    return tools


@pytest.mark.parametrize(("tool", "arguments", "message"), ARGUMENT_FAULTS)
def test_a_bad_argument_over_stdio_is_a_one_line_tool_error(
    served: Served, stdio: RawStdio, tool: str, arguments: dict[str, Any], message: str
) -> None:
    absent = _no_sql_tool(served, tool, _listed_over_stdio(stdio))
    reply = stdio.call(tool, arguments)
    if absent:
        assert reply["error"] == {"code": -32602, "message": _unknown_tool(tool, served.tools)}
    else:
        assert reply == _tool_error_reply(stdio.next_id, tool, message)
    _answers_a_valid_call_over_stdio(stdio)


@pytest.mark.parametrize(("tool", "arguments", "_message", "where"), SURROGATE_FAULTS)
def test_a_lone_surrogate_over_stdio_is_a_json_rpc_error(
    served: Served,
    stdio: RawStdio,
    tool: str,
    arguments: dict[str, Any],
    _message: str,
    where: str,
) -> None:
    if _no_sql_tool(served, tool, _listed_over_stdio(stdio)):
        return
    reply = stdio.call(tool, arguments)
    assert reply == {
        "jsonrpc": "2.0",
        "id": stdio.next_id,
        "error": {"code": -32602, "message": f"Invalid params: {where}"},
    }
    _answers_a_valid_call_over_stdio(stdio)


def test_k_null_over_stdio_is_the_default(stdio: RawStdio) -> None:
    reply = stdio.call(SEARCH, {"query": "crash", "k": None})
    assert reply["result"]["isError"] is False
    assert reply["result"]["structuredContent"]["metadata"]["k"] == 3


@pytest.mark.parametrize(
    ("line", "error"),
    [
        pytest.param(
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "\\ud800"}}',
            {
                "id": 7,
                "code": -32602,
                "message": "Invalid params: params.name holds a lone surrogate (\\ud800), "
                "which is not Unicode text",
            },
            id="surrogate-in-tool-name",
        ),
        pytest.param(
            '{"jsonrpc": "2.0", "id": 8, "method": "tools/\\udfff"}',
            {
                "id": 8,
                "code": -32600,
                "message": "Invalid Request: method holds a lone surrogate (\\udfff), which is "
                "not Unicode text",
            },
            id="surrogate-in-method",
        ),
        pytest.param(
            '{"jsonrpc": "2.0", "id": "a\\ud800", "method": "ping"}',
            {
                "id": None,
                "code": -32600,
                "message": "Invalid Request: id holds a lone surrogate (\\ud800), which is not "
                "Unicode text",
            },
            id="surrogate-in-id",
        ),
        pytest.param(
            '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": '
            '"hotdata_search_text", "arguments": {"query": "crash", "k": {"x": ["\\udc00"]}}}}',
            {
                "id": 9,
                "code": -32602,
                "message": "Invalid params: params.arguments.k.x[0] holds a lone surrogate "
                "(\\udc00), which is not Unicode text",
            },
            id="surrogate-nested",
        ),
        pytest.param(
            '{"jsonrpc": "2.0", "id": 10, "method": "ping"',
            {
                "id": None,
                "code": -32700,
                "message": "Parse error: Invalid JSON: EOF while parsing an object at line 1 "
                "column 45",
            },
            id="not-json",
        ),
        pytest.param(
            "[1, 2]",
            {
                "id": None,
                "code": -32600,
                "message": 'Invalid Request: not a JSON-RPC 2.0 request: it needs "jsonrpc": '
                '"2.0", a string "method" and a string or integer "id"',
            },
            id="not-an-object",
        ),
        pytest.param(
            '{"id": 11, "method": "ping"}',
            {
                "id": 11,
                "code": -32600,
                "message": 'Invalid Request: not a JSON-RPC 2.0 request: it needs "jsonrpc": '
                '"2.0", a string "method" and a string or integer "id"',
            },
            id="no-jsonrpc-version",
        ),
    ],
)
def test_a_line_the_sdk_cannot_read_gets_a_json_rpc_error(
    stdio: RawStdio, line: str, error: dict[str, Any]
) -> None:
    stdio.send_line(line)
    expected = dict(error)  # the parameter is shared by every engine's run
    expected_id = expected.pop("id")
    assert stdio.reply() == {"jsonrpc": "2.0", "id": expected_id, "error": expected}
    _answers_a_valid_call_over_stdio(stdio)


def test_notifications_and_blank_lines_get_no_reply_even_when_malformed(stdio: RawStdio) -> None:
    stdio.send_line('{"jsonrpc": "2.0", "method": "notifications/\\ud800"}')
    stdio.send_line('{"jsonrpc": "2.0", "id": 99, "result": {"x": "\\ud800"}}')
    stdio.send_line("   ")
    # the next reply is the ping's: nothing answered the three lines before it
    assert stdio.request("ping") == {"jsonrpc": "2.0", "id": stdio.next_id, "result": {}}


# -- JSON-RPC 2.0 conformance over stdio (issue 9) ----------------------------------------------

NOT_AN_ID = "Invalid Request: the id must be a string or an integer, got "


def _stderr(stdio: RawStdio) -> str:
    stdio.errors.flush()
    return Path(stdio.errors.name).read_text(errors="replace")


def _error_reply(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@pytest.mark.parametrize(
    ("id_text", "shown"),
    [
        ("1.5", "a number (1.5)"),
        ("1.0", "a number (1.0)"),
        ("true", "a boolean (true)"),
        ("false", "a boolean (false)"),
        ("{}", "an object"),
        ('{"a": 1}', "an object"),
        ("[]", "an array"),
        ("[1]", "an array"),
        ("null", "null"),
        ("9" * 5000, "an integer of 5,000 digits"),
    ],
    ids=[
        "fraction",
        "whole-float",
        "true",
        "false",
        "object",
        "object-1",
        "array",
        "array-1",
        "null",
        "long-integer",
    ],
)
def test_an_id_that_is_not_a_string_or_an_integer_is_an_invalid_request(
    stdio: RawStdio, id_text: str, shown: str
) -> None:
    """JSON-RPC 2.0 §4/§5: the id of a request is a string or a number, and an error whose id
    cannot be read has id null; MCP narrows it to a string or an integer, never null. The
    SDK took these lines for notifications and never answered."""
    stdio.send_line(f'{{"jsonrpc": "2.0", "id": {id_text}, "method": "ping"}}')
    assert stdio.reply() == _error_reply(None, -32600, NOT_AN_ID + shown)
    _answers_a_valid_call_over_stdio(stdio)


def test_a_long_integer_in_params_is_invalid_params_with_the_request_id(
    stdio: RawStdio,
) -> None:
    arguments = '{"query": "crash", "k": ' + "9" * 5000 + "}"
    stdio.send_line(
        '{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": '
        f'{{"name": "{SEARCH}", "arguments": {arguments}}}}}'
    )
    assert stdio.reply() == _error_reply(
        41,
        -32602,
        "Invalid params: params.arguments.k is an integer of 5,000 digits; at most 4,300 can "
        "be read",
    )
    _answers_a_valid_call_over_stdio(stdio)


def test_a_long_integer_outside_params_is_an_invalid_request_with_the_id(
    stdio: RawStdio,
) -> None:
    stdio.send_line('{"jsonrpc": "2.0", "id": "x", "method": "ping", "extra": -' + "1" * 4301 + "}")
    assert stdio.reply() == _error_reply(
        "x",
        -32600,
        "Invalid Request: extra is an integer of 4,301 digits; at most 4,300 can be read",
    )


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"], ids=["ls", "ps", "nel"])
def test_a_unicode_line_separator_inside_a_string_is_part_of_the_message(
    served: Served, stdio: RawStdio, separator: str
) -> None:
    """JSON allows these unescaped in a string; ``str.splitlines`` would cut the line there."""
    if _no_sql_tool(served, SQL, _listed_over_stdio(stdio)):
        # the search tool reads the query whole instead: one reply, for this request
        reply = stdio.call(SEARCH, {"query": f"crash{separator}start"})
        assert reply["id"] == stdio.next_id and reply["result"]["isError"] is False, reply
        return
    request_id = stdio.request_id()
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": SQL, "arguments": {"sql": f"SELECT 'a{separator}b' AS s"}},
    }
    line = json.dumps(message, ensure_ascii=False)
    assert separator in line
    stdio.send_line(line)
    reply = stdio.reply()
    assert reply["id"] == request_id
    assert reply["result"]["structuredContent"]["rows"] == [{"s": f"a{separator}b"}]


def test_a_carriage_return_between_tokens_does_not_end_the_message(stdio: RawStdio) -> None:
    """A ``\\r`` is JSON white space: the message goes on to the line feed (the SDK read
    stdin with universal newlines and split it into two lines, two parse errors)."""
    stdio.send_line('{"jsonrpc": "2.0",\r"id": 42,\r"method": "ping"}')
    assert stdio.reply() == {"jsonrpc": "2.0", "id": 42, "result": {}}
    stdio.send_line('{"jsonrpc": "2.0", "id": 43, "method": "ping"}\r')
    assert stdio.reply() == {"jsonrpc": "2.0", "id": 43, "result": {}}


def test_a_raw_carriage_return_inside_a_string_is_one_parse_error(stdio: RawStdio) -> None:
    stdio.send_line('{"jsonrpc": "2.0", "id": 44, "method": "ping", "params": {"a": "x\ry"}}')
    reply = stdio.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700, reply
    assert "control character" in reply["error"]["message"]
    # one reply, not one per piece: the next reply is the ping's
    assert stdio.request("ping") == {"jsonrpc": "2.0", "id": stdio.next_id, "result": {}}


@pytest.mark.parametrize(
    ("data", "bad", "reason"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 45, "method": "ping", "params": {"a": "\xff"}}',
            b"\xff",
            "invalid start byte",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 46, "method": "ping", "params": {"a": "\xed\xa0\x80"}}',
            b"\xed",
            "invalid continuation byte",
        ),
        (b"\xef\xbb", b"\xef", "unexpected end of data"),
    ],
    ids=["invalid-start-byte", "encoded-surrogate", "truncated"],
)
def test_bytes_that_are_not_utf8_are_a_parse_error(
    stdio: RawStdio, data: bytes, bad: bytes, reason: str
) -> None:
    assert stdio.process.stdin is not None
    stdio.process.stdin.write(data + b"\n")
    stdio.process.stdin.flush()
    where = f"byte 0x{bad[0]:02x} at byte {data.index(bad) + 1}"
    message = f"Parse error: the line is not UTF-8: {where} ({reason})"
    assert stdio.reply() == _error_reply(None, -32700, message)
    _answers_a_valid_call_over_stdio(stdio)


METHOD_FAULTS = [
    pytest.param(
        "prompts/get",
        {"name": "nope"},
        -32602,
        "Unknown prompt: 'nope' (the server has no prompts)",
        id="unknown-prompt",
    ),
    pytest.param(
        "tools/call",
        {"name": "hotdata_search_everything", "arguments": {"query": "crash"}},
        -32602,
        "Unknown tool: 'hotdata_search_everything' (the tools are {tools})",
        id="unknown-tool",
    ),
    pytest.param("tools/call", None, -32602, "Invalid params: params is missing", id="no-params"),
    pytest.param(
        "tools/call", {}, -32602, "Invalid params: params.name is missing", id="no-tool-name"
    ),
    pytest.param(
        "tools/call",
        {"name": 5},
        -32602,
        "Invalid params: params.name: Input should be a valid string",
        id="tool-name-number",
    ),
    pytest.param(
        "tools/call",
        {"name": SEARCH, "arguments": ["crash"]},
        -32602,
        "Invalid params: params.arguments: Input should be a valid dictionary",
        id="arguments-array",
    ),
    pytest.param(
        "tools/call",
        [SEARCH],
        -32602,
        "Invalid params: params must be an object, got an array",
        id="params-array",
    ),
    pytest.param(
        "tools/list",
        "all",
        -32600,
        'Invalid Request: params must be an object, got a string ("all")',
        id="params-string",
    ),
    pytest.param(
        "prompts/get", {}, -32602, "Invalid params: params.name is missing", id="no-prompt-name"
    ),
    pytest.param(
        "prompts/list",
        {"cursor": 5},
        -32602,
        "Invalid params: params.cursor: Input should be a valid string",
        id="cursor-number",
    ),
    pytest.param(
        "resources/read",
        {"uri": "file:///etc/passwd"},
        -32602,
        "Unknown resource: file:///etc/passwd",
        id="unknown-resource",
    ),
    pytest.param("tools/nothing", {}, -32601, "Method not found", id="unknown-method"),
]


@pytest.mark.parametrize(("method", "params", "code", "message"), METHOD_FAULTS)
def test_a_bad_method_call_over_stdio_is_a_json_rpc_error(
    served: Served, stdio: RawStdio, method: str, params: Any, code: int, message: str
) -> None:
    """Each with its JSON-RPC code and a one-line message naming the bad value; never code 0,
    never a traceback on stderr (the SDK answered an unknown prompt with code 0 and logged a
    traceback, and an unknown tool with a tool result)."""
    before = len(_stderr(stdio))
    message_line: dict[str, Any] = {"jsonrpc": "2.0", "id": stdio.request_id(), "method": method}
    if params is not None:
        message_line["params"] = params
    stdio.send(message_line)
    reply = stdio.reply()
    assert reply["id"] == stdio.next_id
    assert reply["error"]["code"] == code
    listed = ", ".join(repr(tool) for tool in served.tools)  # LanceDB's lack the SQL tool
    assert reply["error"]["message"] == message.replace("{tools}", listed)
    _answers_a_valid_call_over_stdio(stdio)
    assert _stderr(stdio)[before:] == ""


def test_a_batch_is_one_invalid_request(stdio: RawStdio) -> None:
    stdio.send_line(
        '[{"jsonrpc": "2.0", "id": 47, "method": "ping"}, '
        '{"jsonrpc": "2.0", "id": 48, "method": "ping"}]'
    )
    assert stdio.reply() == _error_reply(
        None,
        -32600,
        "Invalid Request: a batch (a JSON array of requests) is not supported: MCP has no "
        "batches since protocol version 2025-06-18; send one request per line",
    )
    _answers_a_valid_call_over_stdio(stdio)


def test_notifications_never_get_a_reply(stdio: RawStdio) -> None:
    before = len(_stderr(stdio))
    for line in [
        '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}}',
        '{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": []}}',
        '{"jsonrpc": "2.0", "method": "notifications/nothing"}',
        '{"jsonrpc": "2.0", "method": "prompts/get", "params": {"name": "nope"}}',
        '{"jsonrpc": "2.0", "method": "ping", "params": {"k": ' + "1" * 5000 + "}}",
    ]:
        stdio.send_line(line)
    # the next reply is the ping's: nothing answered the lines before it
    assert stdio.request("ping") == {"jsonrpc": "2.0", "id": stdio.next_id, "result": {}}
    assert "Traceback" not in _stderr(stdio)[before:]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=_CALLS)
def test_any_json_arguments_over_stdio_get_a_reply(
    served: Served, stdio: RawStdio, schemas: Schemas, call: tuple[str, dict[str, Any]]
) -> None:
    tool, arguments = call
    reply = stdio.call(tool, arguments)  # NaN and Infinity go as such, surrogates as escapes
    if _expected(schemas, tool, arguments) == "absent" and not _has_lone_surrogate(arguments):
        assert reply["error"] == {"code": -32602, "message": _unknown_tool(tool, served.tools)}
        return
    if _has_lone_surrogate(arguments):
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"].startswith("Invalid params: params.arguments")
        return
    (block,) = reply["result"]["content"]
    _assert_reply(
        _expected(schemas, tool, arguments), tool, reply["result"]["isError"], block["text"]
    )


def test_a_request_before_initialize_is_an_invalid_request_naming_the_order(
    served: Served, tmp_path: Path
) -> None:
    with (tmp_path / "stderr.txt").open("w+b") as errors:
        client = RawStdio(served.options(), errors)
        try:
            early = client.request("tools/list")
            assert early["error"] == {
                "code": -32600,
                "message": "Invalid Request: the session is not initialized; send initialize "
                "first (only ping may come before it)",
            }
            assert client.call(SEARCH, {"query": "crash"})["error"]["code"] == -32600
            assert client.request("ping")["result"] == {}
            initialized = client.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            assert "result" in initialized
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            _answers_a_valid_call_over_stdio(client)
        finally:
            client.close()
