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
they hold on any transport. :func:`conform_errors` gives each malformed request the JSON-RPC
error its kind calls for (an unknown tool or prompt, params of the wrong shape: ``-32602``;
a failure: ``-32603``, never the SDK's code ``0``). :func:`run_stdio` serves over stdio,
reading one message per line feed as strict UTF-8, and answers, with a JSON-RPC error, every
request line the SDK cannot read or would mistake for a notification (not UTF-8, not JSON, an
id that is not a string or an integer, a batch, a lone surrogate escape, an integer too long
to read), which the SDK's own stdio transport drops without a reply.

The SDK is imported when a server is built, so this module imports without it.
"""

import json
import logging
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, cast

from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.adapters.toolkit import (
    STORED_DATA_NOTICE,
    SearchEngine,
    SearchToolkit,
    ToolError,
)

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
    from mcp.types import JSONRPCError
    from pydantic import ValidationError

INSTALL_HINT = "the MCP adapter needs the mcp SDK: pip install 'hotdata-retrieval[mcp]'"

SERVER_NAME = "hotdata-retrieval"

_LOGGER = logging.getLogger(__name__)

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
        quoted = [f"'{field}'" for field in fields]
        names = " and ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 2 else quoted)
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


def _search_arguments(toolkit: SearchToolkit, name: str, route: Any) -> "type[ArgModelBase]":
    """A search tool's arguments on ``route``: the options the toolkit offers there
    (:meth:`~hotdata_retrieval.adapters.toolkit.SearchToolkit.argument_fields`, one per row of
    :data:`~hotdata_retrieval.adapters.settings.SEARCH_OPTIONS`); the toolkit reads the
    values."""
    from pydantic import create_model

    model: type[ArgModelBase] = create_model(
        f"{name}Arguments", __base__=_strict_base(), **toolkit.argument_fields(route)
    )
    return model


def _sql_arguments(toolkit: SearchToolkit) -> "type[ArgModelBase]":
    from pydantic import Field, create_model

    model: type[ArgModelBase] = create_model(
        f"{toolkit.sql_tool_name}Arguments",
        __base__=_strict_base(),
        sql=(
            Annotated[
                str,
                Field(
                    description=toolkit.sql_help,
                    min_length=1,
                    max_length=toolkit.input_limits.max_sql_characters,
                ),
            ],
            ...,
        ),
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
    server: "MCPServer",
    toolkit: SearchToolkit,
    *,
    semantic: bool | None = None,
    sql: bool | None = None,
) -> list[str]:
    """Register the toolkit's tools on ``server``; return their names.

    The text search is added when the table has a searchable text column, the semantic search
    when it adds something (see :func:`~hotdata_retrieval.adapters.langchain.
    make_search_tools`), the SQL tool unless ``sql=False`` or the engine refuses agent SQL
    (``agent_sql_refusal``: LanceDB, the Hotdata engine; the search tools' descriptions then say
    why there is none). All are read-only. Each lists an
    input schema with ``additionalProperties: false`` and checks its arguments against it.
    """
    from mcp.types import ToolAnnotations

    semantic = toolkit.settings.semantic if semantic is None else semantic
    sql = toolkit.settings.sql if sql is None else sql
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
            _search_arguments(toolkit, name, toolkit.text_route),
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
            _search_arguments(toolkit, name, toolkit.semantic_route),
            toolkit.search_semantic,
            read_only,
        )
        names.append(name)
    if sql and toolkit.offers_sql:
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
    settings: SearchSettings | None = None,
    /,
    *,
    name: str = SERVER_NAME,
    log_level: str = "WARNING",
    **options: Any,
) -> "MCPServer":
    """An MCP server with the search and SQL tools for a table of ``engine``.

    The tools are those of :func:`~hotdata_retrieval.adapters.langchain.make_search_tools`,
    set up by ``settings`` (:class:`~hotdata_retrieval.adapters.settings.SearchSettings`) or
    by its fields given as ``options`` (``create_server(engine, table="docs", k=5)``), plus
    the server's ``name`` and ``log_level`` (logs go to stderr). Malformed requests get the
    JSON-RPC errors of :func:`conform_errors`.

    Raises:
        ImportError: the mcp SDK is not installed (the message says how to install it).
        ToolError: a bad setting (``k``, ``max_rows``, ``max_bytes``, limits...), ``name``
            or ``log_level``.
        TypeError: an option that is no setting.
        HotdataRetrievalError: the engine does not know the table, or an option does not fit.
    """
    server_class = _sdk()
    if not isinstance(name, str) or not name.strip():
        raise ToolError(f"name must be the server's name (text), got {name!r}")
    levels = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    if log_level not in levels:
        raise ToolError(f"log_level must be one of {', '.join(levels)}, got {log_level!r}")
    toolkit = SearchToolkit(engine, settings, **options)
    sql = toolkit.settings.sql
    server: MCPServer = server_class(
        name=name,
        instructions=_instructions(toolkit, sql=sql),
        log_level=log_level,
    )
    add_tools(server, toolkit)
    conform_errors(server)
    return server


def _instructions(toolkit: SearchToolkit, *, sql: bool = True) -> str:
    search = (
        f"Use {toolkit.text_tool_name} to find rows of {toolkit.table} by what their text says"
        if toolkit.text_route is not None
        else ""
    )
    if not toolkit.offers_sql:
        counting = f"{search}. No SQL tool is offered: {toolkit.sql_refusal}. "
    elif not sql:
        counting = f"{search}. " if search else ""
    elif search:
        counting = f"{search}, and {toolkit.sql_tool_name} for counts, totals and filters on "
        counting += "exact values. "
    else:
        counting = f"Use {toolkit.sql_tool_name} for counts, totals and filters on exact values. "
    return f"{counting}Every tool returns {{metadata, rows}}; read metadata.warnings. " + (
        STORED_DATA_NOTICE
    )


# -- errors of the JSON-RPC layer --------------------------------------------------------------


def conform_errors(server: "MCPServer") -> None:
    """Make ``server`` answer every malformed request with a JSON-RPC error of the right code and
    a one-line message, on any transport (a middleware added to ``server.middleware``):

    - ``tools/call`` or ``prompts/get`` naming a tool or prompt the server does not have:
      ``-32602`` (invalid params), ``Unknown tool: 'name'`` (the tools are listed), as the MCP
      specification's tools section shows (2025-11-25, "Error Handling"). The SDK alone
      answers an unknown tool with a tool result and an unknown prompt with error code ``0``
      and a traceback on stderr.
    - params that do not fit the method (missing, or of the wrong type): ``-32602`` naming
      each bad field (``params.name is missing``), where the SDK says only "Invalid request
      parameters".
    - any other failure of a handler: ``-32603`` (internal error) in one line, where the SDK
      sends code ``0``; the traceback is logged at debug level only.
    - a notification never gets a reply; one that fails is logged in one line.

    :func:`create_server` calls it; call it on a server of your own.
    """
    server.middleware.append(_ConformingErrors(server))


class _ConformingErrors:
    """The middleware of :func:`conform_errors`."""

    def __init__(self, server: "MCPServer") -> None:
        self._server = server

    async def __call__(
        self, ctx: "ServerRequestContext[Any, Any]", call_next: "CallNext"
    ) -> "HandlerResult":
        from mcp.shared.exceptions import MCPError
        from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
        from pydantic import ValidationError

        notification = ctx.request_id is None
        try:
            if not notification:
                await self._check_name(ctx.method, ctx.params)
            return await call_next(ctx)
        except MCPError:
            if notification:
                return None
            raise
        except ValidationError as error:
            if notification:
                _LOGGER.warning("notification %s: invalid params", _printable(ctx.method))
                return None
            raise MCPError(INVALID_PARAMS, f"Invalid params: {_fields(error)}") from None
        except Exception as error:  # every failure becomes one error reply
            _LOGGER.debug("handler for %s failed", _printable(ctx.method), exc_info=True)
            described = _printable(" ".join(f"{type(error).__name__}: {error}".split()))
            if notification:
                _LOGGER.warning("notification %s failed: %s", ctx.method, described)
                return None
            raise MCPError(INTERNAL_ERROR, f"Internal error: {_clip(described, 200)}") from None

    async def _check_name(self, method: str, params: Any) -> None:
        """Refuse a ``tools/call`` or ``prompts/get`` that names no tool or prompt of the
        server."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        if method not in ("tools/call", "prompts/get") or not isinstance(params, Mapping):
            return
        name = params.get("name")
        if not isinstance(name, str):
            return  # the params check names the problem
        if method == "tools/call":
            kind, names = "tool", [tool.name for tool in await self._server.list_tools()]
        else:
            kind, names = "prompt", [prompt.name for prompt in await self._server.list_prompts()]
        if name in names:
            return
        listed = ", ".join(f"'{known}'" for known in names[:_MAX_UNKNOWN])
        known_names = f"the {kind}s are {listed}" if names else f"the server has no {kind}s"
        raise MCPError(INVALID_PARAMS, f"Unknown {kind}: {_quoted(name)} ({known_names})")


def _fields(error: "ValidationError") -> str:
    """Each bad field of a params validation error, in one line (``params.name is missing``,
    ``params.cursor: Input should be a valid string``); pydantic's own text is several lines
    and shows the input."""
    parts: list[str] = []
    details = error.errors()
    for detail in details[:3]:
        location = [str(part) for part in detail["loc"]]
        if not location or location[0] != "params":
            location.insert(0, "params")
        where = _clip(".".join(location), 60)
        if detail["type"] == "missing":
            parts.append(f"{where} is missing")
        else:
            parts.append(f"{where}: {_printable(detail['msg'])}")
    if len(details) > 3:
        parts.append(f"and {len(details) - 3} more")
    return "; ".join(parts)


# -- stdio -------------------------------------------------------------------------------------


def run_stdio(server: "MCPServer") -> None:
    """Serve ``server`` over stdin and stdout until the client closes stdin.

    As ``server.run("stdio")``, except for how stdin is read. A message is one line ending at a
    line feed (``\\n``) alone, read as bytes and decoded as strict UTF-8: a carriage return,
    U+2028 or U+0085 inside a message does not end it (the SDK reads stdin as text with
    universal newlines, so a ``\\r`` split a message in two). Every request line the SDK cannot
    read, or would read as something other than what it is, is answered here with a JSON-RPC
    2.0 error, where the SDK answers none (the client would wait forever):

    - bytes that are not UTF-8, or text that is not JSON: ``-32700`` (parse error), id
      ``null`` (JSON-RPC 2.0 §5.1). A raw control character inside a string is not JSON.
    - a request whose ``id`` is not a string or an integer (``1.5``, ``1.0``, ``true``,
      ``{}``, ``[]``, ``null``, or an integer of more than 4,300 digits): ``-32600`` (invalid
      request), id ``null`` (§5: the id could not be read). The SDK took such a line for a
      notification and said nothing. ``"id": null`` is refused too: MCP requires a string or
      an integer id and forbids null (JSON-RPC 2.0 itself only discourages it).
    - a batch (a JSON array of request objects): ``-32600``, id ``null``; MCP has no batches
      since protocol version 2025-06-18, and a batch would need its replies in one array.
    - a request the SDK cannot parse though its id can be read — a lone surrogate
      (``"\\ud800"``) or an integer of more than 4,300 digits (the SDK's JSON parser's limit)
      in ``params``, or ``params`` an array: ``-32602`` (invalid params) with the request's
      id, naming where; elsewhere in the message: ``-32600`` with the id.
    - any other JSON that is not a JSON-RPC request: ``-32600``, with the id when it has one.

    Notifications (no ``id``) and replies from the client are never answered, malformed or not.
    Errors of the methods themselves (unknown tool, bad params) are :func:`conform_errors`'s;
    :func:`create_server` installs it.
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


MAX_MESSAGE_BYTES = 512 * 1024
"""The longest message ``run_stdio`` reads: 512 KiB. A longer line is never held whole: it is
read in pieces, dropped, and answered with ``-32600``, so a client cannot make the server hold
(or parse) a request of any size. Every tool's arguments fit well within it: a SQL text of
the toolkit's most characters (64 Ki), each written as a six-byte ``\\u`` escape, is 384
KiB. (At 4 MiB, a 3.6 MB message that was read, parsed and then refused left the server 34%
larger.)"""


class _Oversized:
    """A line longer than :data:`MAX_MESSAGE_BYTES`, dropped unread (its size kept)."""

    def __init__(self, size: int) -> None:
        self.size = size


async def _stdin_lines() -> AsyncIterator[bytes | _Oversized]:
    """The lines of stdin as bytes, each ending at a line feed; a line over
    :data:`MAX_MESSAGE_BYTES` comes as an :class:`_Oversized`, read in pieces and dropped."""
    import anyio

    readline = sys.stdin.buffer.readline
    while True:
        line = await anyio.to_thread.run_sync(readline, MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) <= MAX_MESSAGE_BYTES:
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = await anyio.to_thread.run_sync(readline, 1 << 20)
            if not line:
                break
            size += len(line)
        yield _Oversized(size)


_JSON_WHITESPACE = b" \t\r\n"
"""What JSON allows around a value (RFC 8259 §2), which the SDK skips too."""


class _LineGate:
    """The lines of stdin for the SDK's stdio transport: a line the SDK reads as what it is
    passes, decoded; any other is answered here, on the transport's write stream, and goes no
    further."""

    def __init__(self, lines: AsyncIterable[bytes | _Oversized]) -> None:
        import anyio

        self._lines = lines
        self._replies: Any = None
        self._bound = anyio.Event()
        self._initialized = False

    def answer_on(self, replies: Any) -> None:
        """Send the error replies on ``replies`` (the transport's write stream)."""
        self._replies = replies
        self._bound.set()

    def _before_initialize(self, text: str) -> "tuple[JSONRPCError | None, str | None]":
        """Pass ``text`` on, or answer a request that comes before ``initialize``
        (:data:`_BEFORE_INITIALIZE`). The first ``initialize`` opens the session; the SDK
        itself answers one that is malformed."""
        message = json.loads(text)
        if not isinstance(message, dict) or "method" not in message:
            return None, text
        if message["method"] == "initialize":
            self._initialized = True
            return None, text
        if "id" not in message or message["method"] in _BEFORE_INITIALIZE:
            return None, text
        return _before_initialize_reply(message["id"]), None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        import anyio
        from mcp.shared.message import SessionMessage

        async for line in self._lines:
            reply: JSONRPCError | None
            text: str | None
            if isinstance(line, _Oversized):
                reply, text = _oversized_reply(line), None
            else:
                data = line.strip(_JSON_WHITESPACE)
                if not data:
                    continue
                reply, text = _screened(data)
            if text is not None and not self._initialized:
                reply, text = self._before_initialize(text)
            if text is not None:
                yield text
                continue
            if reply is None:
                continue
            await self._bound.wait()
            try:
                await self._replies.send(SessionMessage(reply))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


_BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
"""The requests a client may send before ``initialize`` (MCP specification 2025-11-25,
"Lifecycle": the client SHOULD NOT send requests other than pings before the server has
responded to the initialize request)."""


def _before_initialize_reply(request_id: str | int) -> "JSONRPCError":
    """``-32600`` for a request that comes before ``initialize``, with its id: the SDK answered
    ``-32602`` "Invalid request parameters", which sends a client looking at its params."""
    from mcp.types import INVALID_REQUEST

    return _rpc_error(
        request_id,
        INVALID_REQUEST,
        "Invalid Request: the session is not initialized; send initialize first (only ping "
        "may come before it)",
    )


def _oversized_reply(line: _Oversized) -> "JSONRPCError":
    """``-32600`` for a message over :data:`MAX_MESSAGE_BYTES`, id ``null``: it was not read,
    so its id is unknown (JSON-RPC 2.0 §5)."""
    from mcp.types import INVALID_REQUEST

    return _rpc_error(
        None,
        INVALID_REQUEST,
        f"Invalid Request: the message is {line.size:,} bytes; at most "
        f"{MAX_MESSAGE_BYTES:,} are read",
    )


def _screened(data: bytes) -> "tuple[JSONRPCError | None, str | None]":
    """``(None, text)`` for a line to hand to the SDK; ``(error, None)`` for one answered with
    ``error``; ``(None, None)`` for one dropped without a reply."""
    from mcp.types import PARSE_ERROR

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _rpc_error(
            None,
            PARSE_ERROR,
            f"Parse error: the line is not UTF-8: byte 0x{data[error.start]:02x} at byte "
            f"{error.start + 1} ({error.reason})",
        ), None
    problem = _unreadable(text)
    try:
        message = _decoded(text)
    except (ValueError, RecursionError) as error:
        if problem is None:  # the SDK reads it, so it is JSON
            return None, text
        return _rpc_error(None, PARSE_ERROR, f"Parse error: {problem[1] or error}"), None
    reply = _error_reply(message, problem)
    if reply is _PASS:
        return None, text
    return cast("JSONRPCError | None", reply), None


class _LongInteger:
    """An integer in the JSON text with more digits than the SDK's JSON parser reads."""

    def __init__(self, digits: str) -> None:
        self.digits = digits


_MAX_INTEGER_DIGITS = 4300
"""The longest integer (in digits) the SDK's JSON parser (pydantic-core) reads; a longer one
is "number out of range" (observed with pydantic-core 2; Python's own default limit,
``sys.get_int_max_str_digits()``, is the same)."""


def _integer(text: str) -> Any:
    if len(text.lstrip("-")) > _MAX_INTEGER_DIGITS:
        return _LongInteger(text)
    return int(text)


def _decoded(text: str) -> Any:
    """``text`` as JSON, integers too long for the SDK kept as :class:`_LongInteger`.

    Raises:
        ValueError: not JSON (a raw control character in a string included).
        RecursionError: nested too deep to decode.
    """
    return json.loads(text, parse_int=_integer)


_PASS = object()
"""What :func:`_error_reply` returns for a line the SDK reads as what it is."""

_NOT_A_REQUEST = (
    'not a JSON-RPC 2.0 request: it needs "jsonrpc": "2.0", a string "method" and a string '
    'or integer "id"'
)


def _error_reply(message: Any, problem: "tuple[str, str] | None") -> Any:
    """The JSON-RPC error answering a decoded line, ``None`` when no reply is due (a
    notification, or a reply from the client) or :data:`_PASS` when the SDK reads it as what
    it is. ``problem`` is why the SDK cannot read it, if it cannot."""
    from mcp.types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

    if isinstance(message, list) and message and all(isinstance(item, dict) for item in message):
        return _rpc_error(
            None,
            INVALID_REQUEST,
            "Invalid Request: a batch (a JSON array of requests) is not supported: MCP has no "
            "batches since protocol version 2025-06-18; send one request per line",
        )
    if not isinstance(message, dict):
        return _rpc_error(None, INVALID_REQUEST, f"Invalid Request: {_NOT_A_REQUEST}")
    if "method" not in message and ("result" in message or "error" in message):
        return _PASS if problem is None else None
    if "method" in message and "id" not in message:
        return _PASS if problem is None else None
    request_id, id_problem = _request_id(message)
    if id_problem is not None:
        return _rpc_error(None, INVALID_REQUEST, f"Invalid Request: {id_problem}")
    found = _unreadable_value_in(message)
    if found is not None:
        path, where = found
        if path == "params" or path.startswith(("params.", "params[")):
            return _rpc_error(request_id, INVALID_PARAMS, f"Invalid params: {where}")
        return _rpc_error(request_id, INVALID_REQUEST, f"Invalid Request: {where}")
    params = message.get("params")
    if isinstance(params, list):
        return _rpc_error(
            request_id, INVALID_PARAMS, "Invalid params: params must be an object, got an array"
        )
    if params is not None and not isinstance(params, dict):
        return _rpc_error(
            request_id,
            INVALID_REQUEST,
            f"Invalid Request: params must be an object, got {_described(params)}",
        )
    if problem is None:
        return _PASS
    kind, reason = problem
    if kind == "json_invalid":
        return _rpc_error(request_id, PARSE_ERROR, f"Parse error: {reason}")
    return _rpc_error(request_id, INVALID_REQUEST, f"Invalid Request: {_NOT_A_REQUEST}")


def _request_id(message: Mapping[str, Any]) -> tuple[str | int | None, str | None]:
    """The request's id, or why it cannot be echoed: MCP requires a string or an integer
    (never null, never a boolean)."""
    value = message.get("id")
    if isinstance(value, str):
        found = _LONE_SURROGATE.search(value)
        if found is None:
            return value, None
        return None, (
            f"id holds a lone surrogate ({_printable(found.group())}), which is not Unicode text"
        )
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    if isinstance(value, _LongInteger):
        shown = f"an integer of {len(value.digits.lstrip('-')):,} digits"
    else:
        shown = _described(value)
    return None, f"the id must be a string or an integer, got {shown}"


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


def _unreadable_value_in(message: Any) -> tuple[str, str] | None:
    """Where a decoded message holds a value the SDK cannot read — a lone surrogate, an
    integer of too many digits: the path (``params.arguments.query``) and a sentence fragment
    naming it (``params.arguments.query holds a lone surrogate (\\ud800)...``); ``None`` when it
    holds none."""
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
        elif isinstance(value, _LongInteger):
            digits = len(value.digits.lstrip("-"))
            return path, (
                f"{path} is an integer of {digits:,} digits; at most "
                f"{_MAX_INTEGER_DIGITS:,} can be read"
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
