"""The same tools over the Model Context Protocol. Needs ``mcp`` (the official Python SDK, 2.x).

:func:`create_server` returns an ``MCPServer`` with the tools of
:mod:`hotdata_retrieval.adapters.langchain` — same names, descriptions, arguments and result
envelope — over one table of any engine; :func:`add_tools` adds them to a server of your own.
``hdq mcp`` serves them over stdio.

Each tool returns the envelope as structured content (and as JSON text). A bad argument or a
failed query comes back as a tool result with ``isError`` set and a one-line message for the
model, never as a crash of the server.

Arguments are checked exactly as each tool's input schema says, before the tool runs: strict
JSON types (``k`` is an integer, never a boolean or a numeric string), ``query`` and ``sql``
non-empty text, ``k`` at least 1, no argument the schema does not list
(``additionalProperties: false``), and no lone surrogate (``"\\ud800"``) anywhere, which is not
Unicode text and could not be sent back as UTF-8. A refused call names each bad argument in
one line. :func:`add_tools` gives each tool that schema and that check, in place of what
``MCPServer.add_tool`` derives from a function's signature (a model that ignores unknown
arguments, takes ``true`` and ``"5"`` for integers and reports pydantic's multi-line text), so
they hold on any transport. :func:`run_stdio` serves over stdio and answers, with a JSON-RPC
error, every request line the SDK cannot read (not JSON, a lone surrogate escape), which the
SDK's own stdio transport drops without a reply.

The SDK is imported when a server is built, so this module imports without it.
"""

import contextlib
import io
import json
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, cast

from hotdata_retrieval.adapters.bounded import DEFAULT_MAX_BYTES
from hotdata_retrieval.adapters.toolkit import (
    DEFAULT_MAX_ROWS,
    DEFAULT_NAME_PREFIX,
    SearchEngine,
    SearchToolkit,
    ToolError,
)
from hotdata_retrieval.engines.limits import SqlLimits

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
    from mcp.types import JSONRPCError
    from pydantic import ValidationError

__all__ = ["INSTALL_HINT", "add_tools", "create_server", "run_stdio"]

INSTALL_HINT = "the MCP adapter needs the mcp SDK: pip install 'hotdata-retrieval[mcp]'"

SERVER_NAME = "hotdata-retrieval"

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate code point: never Unicode text on its own, and not encodable as UTF-8."""

_MAX_UNKNOWN = 5
"""How many unknown argument names one error message lists."""


def _sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return MCPServer


# -- checking arguments ------------------------------------------------------------------------


def _printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): a reply must encode
    as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text: str, size: int = 40) -> str:
    return text if len(text) <= size else f"{text[: size - 3]}..."


def _quoted(name: Any) -> str:
    """An argument name for a one-line message: quotes, control characters and surrogates
    escaped, long names cut."""
    return f"'{_clip(_printable(json.dumps(str(name), ensure_ascii=False)[1:-1]))}'"


def _described(value: Any) -> str:
    """What a rejected value is, in JSON terms, with scalars shown (escaped and cut)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, (int, float)):
        try:
            shown = json.dumps(value)
        except ValueError:  # an integer too long to print
            return "a number"
        return f"a number ({_clip(shown)})"
    if isinstance(value, str):
        return f"a string ({_clip(_printable(json.dumps(value, ensure_ascii=False)))})"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _whole_number(value: Any) -> Any:
    """JSON Schema's ``integer`` is any number without a fraction, so ``5.0`` is ``5``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _problems(error: "ValidationError", arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with each known argument, from the argument model's validation errors.

    Values are read from ``arguments``, not from the errors: pydantic reports text holding a
    lone surrogate with replacement characters in its place.
    """
    problems: list[str] = []
    for detail in error.errors():
        field = detail["loc"][0] if detail["loc"] else None
        name = _quoted(field)
        value = arguments.get(field) if isinstance(field, str) else detail["input"]
        if detail["type"] == "missing":
            problems.append(f"missing argument {name}")
        elif detail["type"] == "string_unicode" and isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            where = f" ({_printable(found.group())}) at character {found.start()}" if found else ""
            problems.append(f"argument {name} is not valid Unicode text: a lone surrogate{where}")
        else:
            message = _printable(detail["msg"])
            problems.append(f"argument {name}: {message}, got {_described(value)}")
    return problems


def _checked(model: "type[ArgModelBase]", arguments: Any) -> dict[str, Any]:
    """The arguments validated by ``model``, or the MCP ``ToolError`` with a one-line message
    naming each bad argument.

    Unknown names are found here, before the model reads the rest: the model would stop at the
    first name holding a lone surrogate and report nothing else.

    Raises:
        mcp.server.mcpserver.exceptions.ToolError: a bad argument.
    """
    from mcp.server.mcpserver.exceptions import ToolError as McpToolError
    from pydantic import ValidationError

    if not isinstance(arguments, Mapping):
        raise McpToolError(f"the arguments must be an object, got {_described(arguments)}")
    fields = model.model_fields
    known = {name: value for name, value in arguments.items() if name in fields}
    problems: list[str] = []
    parsed = None
    try:
        parsed = model.model_validate(known)
    except ValidationError as error:
        problems = _problems(error, known)
    unknown = [_quoted(name) for name in arguments if name not in fields]
    if unknown:
        listed = ", ".join(unknown[:_MAX_UNKNOWN])
        if len(unknown) > _MAX_UNKNOWN:
            listed += f" and {len(unknown) - _MAX_UNKNOWN} more"
        names = " and ".join(f"'{field}'" for field in fields)
        plural = "s" if len(unknown) > 1 else ""
        problems.append(f"unknown argument{plural} {listed} (the arguments are {names})")
    if problems or parsed is None:
        raise McpToolError("; ".join(problems))
    return {name: getattr(parsed, name) for name in fields}


def _strict_base() -> "type[ArgModelBase]":
    """The base of the argument models: strict JSON types, no argument beyond the fields."""
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
    from pydantic import ConfigDict

    class StrictArguments(ArgModelBase):
        model_config = ConfigDict(strict=True, extra="forbid")

    return StrictArguments


def _search_arguments(toolkit: SearchToolkit, name: str) -> "type[ArgModelBase]":
    from pydantic import BeforeValidator, Field, create_model

    model: type[ArgModelBase] = create_model(
        f"{name}Arguments",
        __base__=_strict_base(),
        query=(Annotated[str, Field(description=toolkit.query_help, min_length=1)], ...),
        k=(
            Annotated[
                Annotated[int, Field(ge=1)] | None,
                BeforeValidator(_whole_number),
                Field(description=toolkit.k_help),
            ],
            None,
        ),
    )
    return model


def _sql_arguments(toolkit: SearchToolkit) -> "type[ArgModelBase]":
    from pydantic import Field, create_model

    model: type[ArgModelBase] = create_model(
        f"{toolkit.sql_tool_name}Arguments",
        __base__=_strict_base(),
        sql=(Annotated[str, Field(description=toolkit.sql_help, min_length=1)], ...),
    )
    return model


def _tool_function(
    name: str, model: "type[ArgModelBase]", call: Callable[..., dict[str, Any]]
) -> Callable[..., dict[str, Any]]:
    """The function behind a tool: it receives the raw arguments, checks them with ``model``
    and calls the toolkit."""
    from mcp.server.mcpserver.exceptions import ToolError as McpToolError

    def run(arguments: dict[str, Any]) -> dict[str, Any]:
        checked = _checked(model, arguments)
        try:
            return call(**checked)
        except ToolError as error:
            raise McpToolError(_printable(str(error))) from error

    run.__name__ = run.__qualname__ = name
    return run


def _raw_arguments_metadata(model: "type[ArgModelBase]", template: Any) -> Any:
    """The SDK's function metadata for a tool whose function checks its own arguments: the
    argument model is ``model`` (its schema is the one listed), the output handling that of
    ``template``, and the SDK hands the function the arguments as they came."""
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

    class RawArguments(FuncMetadata):
        def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
            return {"arguments": arguments_to_validate}

    return RawArguments(
        arg_model=model,
        output_schema=template.output_schema,
        output_model=template.output_model,
        wrap_output=template.wrap_output,
    )


def _register(
    server: "MCPServer",
    name: str,
    description: str,
    model: "type[ArgModelBase]",
    call: Callable[..., dict[str, Any]],
    annotations: Any,
) -> None:
    """Add one tool whose listed input schema is ``model``'s (``additionalProperties: false``)
    and whose arguments are checked by it, errors worded in one line.

    ``MCPServer.add_tool`` derives both from a function's signature, through a model that
    ignores unknown arguments and whose errors are pydantic's multi-line reports; the SDK offers
    no other way to add a tool to a running server. So the tool is added with ``add_tool`` and
    its schema and argument handling then replaced on the SDK's record of it.
    """
    function = _tool_function(name, model, call)
    server.add_tool(
        function,
        name=name,
        description=description,
        annotations=annotations,
        structured_output=True,
    )
    tool = server._tool_manager.get_tool(name)
    if tool is None or tool.fn is not function:  # the name was taken: the SDK kept that tool
        return
    tool.parameters = model.model_json_schema()
    tool.fn_metadata = _raw_arguments_metadata(model, tool.fn_metadata)


def add_tools(
    server: "MCPServer", toolkit: SearchToolkit, *, semantic: bool = True, sql: bool = True
) -> list[str]:
    """Register the toolkit's tools on ``server``; return their names.

    The text search is added when the table has a searchable text column, the semantic search
    when it adds something (see :func:`~hotdata_retrieval.adapters.langchain.
    make_search_tools`), the SQL tool unless ``sql=False``. All are read-only. Each lists an
    input schema with ``additionalProperties: false`` and checks its arguments against it.
    """
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(
        read_only_hint=toolkit.read_only, destructive_hint=False, open_world_hint=False
    )
    names: list[str] = []
    if toolkit.text_route is not None:
        name = toolkit.text_tool_name
        _register(
            server,
            name,
            toolkit.describe_text_search(),
            _search_arguments(toolkit, name),
            toolkit.search_text,
            read_only,
        )
        names.append(name)
    if semantic and toolkit.offers_semantic_search:
        name = toolkit.semantic_tool_name
        _register(
            server,
            name,
            toolkit.describe_semantic_search(),
            _search_arguments(toolkit, name),
            toolkit.search_semantic,
            read_only,
        )
        names.append(name)
    if sql:
        _register(
            server,
            toolkit.sql_tool_name,
            toolkit.describe_sql(),
            _sql_arguments(toolkit),
            toolkit.execute_sql,
            read_only,
        )
        names.append(toolkit.sql_tool_name)
    return names


def create_server(
    engine: SearchEngine,
    *,
    table: str,
    k: int | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    columns: Sequence[str] | None = None,
    text_column: str | None = None,
    key_column: str | None = None,
    embedder: Any = None,
    name_prefix: str = DEFAULT_NAME_PREFIX,
    semantic: bool = True,
    sql: bool = True,
    read_only: bool = True,
    sql_limits: SqlLimits | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    name: str = SERVER_NAME,
    log_level: str = "WARNING",
) -> "MCPServer":
    """An MCP server with the search and SQL tools for ``table`` of ``engine``.

    The arguments are those of :func:`~hotdata_retrieval.adapters.langchain.
    make_search_tools`, plus the server's ``name`` and ``log_level`` (logs go to stderr).

    Raises:
        ImportError: the mcp SDK is not installed (the message says how to install it).
        ToolError: a bad ``k``, ``max_rows`` or ``max_bytes``.
        HotdataRetrievalError: the engine does not know the table, or an option does not fit.
    """
    server_class = _sdk()
    toolkit = SearchToolkit(
        engine,
        table=table,
        k=k,
        max_rows=max_rows,
        columns=columns,
        text_column=text_column,
        key_column=key_column,
        embedder=embedder,
        name_prefix=name_prefix,
        read_only=read_only,
        sql_limits=sql_limits,
        max_bytes=max_bytes,
    )
    server: MCPServer = server_class(
        name=name,
        instructions=_instructions(toolkit),
        log_level=log_level,
    )
    add_tools(server, toolkit, semantic=semantic, sql=sql)
    return server


def _instructions(toolkit: SearchToolkit) -> str:
    search = (
        f"Use {toolkit.text_tool_name} to find rows of {toolkit.table} by what their text "
        "says, and "
        if toolkit.text_route is not None
        else ""
    )
    return (
        f"{search}{toolkit.sql_tool_name} for counts, totals and filters on exact values. "
        "Every tool returns {metadata, rows}; read metadata.warnings."
    )


# -- stdio -------------------------------------------------------------------------------------


def run_stdio(server: "MCPServer") -> None:
    """Serve ``server`` over stdin and stdout until the client closes stdin.

    As ``server.run("stdio")``, except that every request line the SDK cannot read is answered
    with a JSON-RPC error instead of not at all: text that is not JSON (``-32700``), a lone
    surrogate such as ``"\\ud800"`` anywhere in the message (``-32602`` inside ``params``,
    ``-32600`` elsewhere), JSON that is not a JSON-RPC request (``-32600``). The SDK parses
    each line with pydantic's JSON parser, which refuses lone surrogate escapes as invalid JSON,
    and its stdio transport drops a line it cannot parse, so the client would wait forever.
    Notifications and replies are never answered, malformed or not.
    """
    import anyio

    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: "MCPServer") -> None:
    from mcp.server.stdio import stdio_server

    gate = _LineGate(_stdin_lines())
    # stdout stays the SDK's (it points fd 1 at stderr while serving); stdin is read here.
    async with stdio_server(stdin=cast(Any, gate)) as (read_stream, write_stream):
        gate.answer_on(write_stream)
        # What MCPServer.run_stdio_async runs; it takes no stdin of its own.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class _UnownedTextWrapper(io.TextIOWrapper):
    """Text over ``sys.stdin.buffer`` that leaves the buffer open when it is closed."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):  # already detached
            self.detach()


def _stdin_lines() -> AsyncIterable[str]:
    import anyio

    text = _UnownedTextWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return cast(AsyncIterable[str], anyio.wrap_file(text))


class _LineGate:
    """The lines of stdin for the SDK's stdio transport: a line the SDK can read passes; any
    other is answered here, on the transport's write stream, and goes no further."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        import anyio

        self._lines = lines
        self._replies: Any = None
        self._bound = anyio.Event()

    def answer_on(self, replies: Any) -> None:
        """Send the error replies on ``replies`` (the transport's write stream)."""
        self._replies = replies
        self._bound.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        import anyio
        from mcp.shared.message import SessionMessage

        async for line in self._lines:
            text = line.strip(" \t\r\n")  # JSON's whitespace, which the SDK skips too
            if not text:
                continue
            problem = _unreadable(text)
            if problem is None:
                yield line
                continue
            reply = _error_reply(text, problem)
            if reply is None:
                continue
            await self._bound.wait()
            try:
                await self._replies.send(SessionMessage(reply))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


def _unreadable(line: str) -> "tuple[str, str] | None":
    """Why the SDK cannot read ``line`` (the error's type and message), or ``None``."""
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as error:
        first = error.errors()[0]
        return first["type"], first["msg"]
    return None


_NOT_A_REQUEST = (
    'not a JSON-RPC 2.0 request: it needs "jsonrpc": "2.0", a string "method" and a string '
    'or integer "id"'
)


def _error_reply(line: str, problem: tuple[str, str]) -> "JSONRPCError | None":
    """The JSON-RPC error answering an unreadable line, or ``None`` when none is due (a
    notification, or a reply from the client)."""
    from mcp.types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

    kind, reason = problem
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _rpc_error(None, PARSE_ERROR, f"Parse error: {reason}")
    if not isinstance(message, dict):
        return _rpc_error(None, INVALID_REQUEST, f"Invalid Request: {_NOT_A_REQUEST}")
    if "method" not in message and ("result" in message or "error" in message):
        return None
    if "method" in message and "id" not in message:
        return None
    request_id = _request_id(message)
    found = _lone_surrogate_in(message)
    if found is not None:
        path, where = found
        if path == "params" or path.startswith(("params.", "params[")):
            return _rpc_error(request_id, INVALID_PARAMS, f"Invalid params: {where}")
        return _rpc_error(request_id, INVALID_REQUEST, f"Invalid Request: {where}")
    if kind == "json_invalid":
        return _rpc_error(request_id, PARSE_ERROR, f"Parse error: {reason}")
    return _rpc_error(request_id, INVALID_REQUEST, f"Invalid Request: {_NOT_A_REQUEST}")


def _request_id(message: Mapping[str, Any]) -> str | int | None:
    """The request's id when it can be echoed (a string or an integer), else ``None``."""
    value = message.get("id")
    if isinstance(value, str) and not _LONE_SURROGATE.search(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _lone_surrogate_in(message: Any) -> tuple[str, str] | None:
    """Where a decoded message holds a lone surrogate: the path (``params.arguments.query``) and
    a sentence fragment naming it (``params.arguments.query holds a lone surrogate
    (\\ud800)...``); ``None`` when it holds none."""
    stack: list[tuple[str, Any]] = [("", message)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found:
                return path, (
                    f"{path or 'the message'} holds a lone surrogate "
                    f"({_printable(found.group())}), which is not Unicode text"
                )
        elif isinstance(value, dict):
            children: list[tuple[str, Any]] = []
            for key, item in value.items():
                found = _LONE_SURROGATE.search(key)
                if found:
                    return path, (
                        f"{path or 'the message'} has a key, {_quoted(key)}, holding a lone "
                        f"surrogate ({_printable(found.group())}), which is not Unicode text"
                    )
                children.append((f"{path}.{_segment(key)}" if path else _segment(key), item))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", item) for i, item in enumerate(value)]))
    return None


def _segment(key: str) -> str:
    return _clip(json.dumps(key, ensure_ascii=False)[1:-1])


def _rpc_error(request_id: str | int | None, code: int, message: str) -> "JSONRPCError":
    from mcp.types import ErrorData, JSONRPCError

    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=_printable(message))
    )
