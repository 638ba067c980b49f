"""The same tools over the Model Context Protocol. Needs ``mcp`` (the official Python SDK, 2.x).

:func:`create_server` returns an ``MCPServer`` with the tools of
:mod:`hotdata_retrieval.adapters.langchain` — same names, descriptions, arguments and result
envelope — over one table of any engine; :func:`add_tools` adds them to a server of your own.
``hdq mcp`` serves them over stdio.

Each tool returns the envelope as structured content (and as JSON text). A bad argument or a
failed query comes back as a tool result with ``isError`` set and a message for the model,
never as a crash of the server.

The SDK is imported when a server is built, so this module imports without it.
"""

# Annotations stay evaluated here: the SDK reads the tool functions' annotations (argument
# types and descriptions) at registration, and they close over the toolkit.

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from hotdata_retrieval.adapters.toolkit import (
    DEFAULT_MAX_ROWS,
    DEFAULT_NAME_PREFIX,
    SearchEngine,
    SearchToolkit,
    ToolError,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["INSTALL_HINT", "add_tools", "create_server"]

INSTALL_HINT = "the MCP adapter needs the mcp SDK: pip install 'hotdata-retrieval[mcp]'"

SERVER_NAME = "hotdata-retrieval"


def _sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return MCPServer


def _search_tool(
    toolkit: SearchToolkit, name: str, call: Callable[[Any, Any], dict[str, Any]]
) -> Callable[..., dict[str, Any]]:
    from mcp.server.mcpserver.exceptions import ToolError as McpToolError
    from pydantic import Field

    def search(
        query: Annotated[str, Field(description=toolkit.query_help, min_length=1)],
        k: Annotated[int | None, Field(description=toolkit.k_help, ge=1)] = None,
    ) -> dict[str, Any]:
        try:
            return call(query, k)
        except ToolError as error:
            raise McpToolError(str(error)) from error

    search.__name__ = search.__qualname__ = name
    return search


def _sql_tool(toolkit: SearchToolkit) -> Callable[..., dict[str, Any]]:
    from mcp.server.mcpserver.exceptions import ToolError as McpToolError
    from pydantic import Field

    def execute_sql(
        sql: Annotated[str, Field(description=toolkit.sql_help, min_length=1)],
    ) -> dict[str, Any]:
        try:
            return toolkit.execute_sql(sql)
        except ToolError as error:
            raise McpToolError(str(error)) from error

    execute_sql.__name__ = execute_sql.__qualname__ = toolkit.sql_tool_name
    return execute_sql


def add_tools(
    server: "MCPServer", toolkit: SearchToolkit, *, semantic: bool = True, sql: bool = True
) -> list[str]:
    """Register the toolkit's tools on ``server``; return their names.

    The text search is added when the table has a searchable text column, the semantic search
    when it adds something (see :func:`~hotdata_retrieval.adapters.langchain.
    make_search_tools`), the SQL tool unless ``sql=False``. All are read-only.
    """
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(
        read_only_hint=toolkit.read_only, destructive_hint=False, open_world_hint=False
    )
    names: list[str] = []
    if toolkit.text_route is not None:
        server.add_tool(
            _search_tool(toolkit, toolkit.text_tool_name, toolkit.search_text),
            name=toolkit.text_tool_name,
            description=toolkit.describe_text_search(),
            annotations=read_only,
            structured_output=True,
        )
        names.append(toolkit.text_tool_name)
    if semantic and toolkit.offers_semantic_search:
        server.add_tool(
            _search_tool(toolkit, toolkit.semantic_tool_name, toolkit.search_semantic),
            name=toolkit.semantic_tool_name,
            description=toolkit.describe_semantic_search(),
            annotations=read_only,
            structured_output=True,
        )
        names.append(toolkit.semantic_tool_name)
    if sql:
        server.add_tool(
            _sql_tool(toolkit),
            name=toolkit.sql_tool_name,
            description=toolkit.describe_sql(),
            annotations=read_only,
            structured_output=True,
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
    name: str = SERVER_NAME,
    log_level: str = "WARNING",
) -> "MCPServer":
    """An MCP server with the search and SQL tools for ``table`` of ``engine``.

    The arguments are those of :func:`~hotdata_retrieval.adapters.langchain.
    make_search_tools`, plus the server's ``name`` and ``log_level`` (logs go to stderr).

    Raises:
        ImportError: the mcp SDK is not installed (the message says how to install it).
        ToolError: a bad ``k`` or ``max_rows``.
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
