"""``hdq mcp``: serve a table's search and SQL tools to an MCP client over stdio.

The command opens an engine (:data:`ENGINE_OPENERS`, by ``--engine``), builds the server with
:func:`hotdata_retrieval.adapters.mcp.create_server` and runs it until the client closes
stdin. stdout carries only the protocol; logs and errors go to stderr.

An MCP client starts it as a subprocess, for example::

    {"mcpServers": {"docs": {"command": "hdq",
                             "args": ["mcp", "--database", "/home/me/project/.hdq",
                                      "--table", "docs"]}}}

Clients start servers in a directory of their own choosing, so ``--database`` is resolved to
an absolute path at start-up and a missing database names the directory it was looked for in.

Started by hand in a terminal (stdin a TTY), it says so in one line on stderr
(:data:`TERMINAL_NOTICE`) and then serves as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import click

from hotdata_retrieval.adapters.bounded import DEFAULT_MAX_BYTES
from hotdata_retrieval.adapters.settings import (
    DEFAULT_K,
    DEFAULT_MAX_ROWS,
    DEFAULT_NAME_PREFIX,
    SearchSettings,
)
from hotdata_retrieval.cli._engines import (
    database_given,
    engine_option,
    open_store,
    query_embedder_option,
    table_embedder,
)
from hotdata_retrieval.cli._local import database_option, reports_errors
from hotdata_retrieval.cli._options import parse_names
from hotdata_retrieval.cli._settings import settings_fields, settings_options
from hotdata_retrieval.engines.limits import (
    DEFAULT_MEMORY_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    SqlLimits,
)
from hotdata_retrieval.extras import require_extra

TERMINAL_NOTICE = (
    "hdq mcp: an MCP server on stdio (JSON-RPC, one message per line), waiting for a client; "
    "an MCP client starts it itself: add it to the client's configuration as in "
    "docs/adapters.md, section MCP (press Ctrl-D to stop)"
)
"""What ``hdq mcp`` prints on stderr when its stdin is a terminal: a person, not a client,
started it."""


def terminal_notice(stdin: IO[Any]) -> str | None:
    """:data:`TERMINAL_NOTICE` when ``stdin`` is a terminal (``isatty()``), else ``None``; a
    stream that cannot say (closed, or without a file descriptor) is not a terminal."""
    try:
        return TERMINAL_NOTICE if stdin.isatty() else None
    except (ValueError, OSError):
        return None


EngineOpener = Callable[[str, str, "str | None"], Any]
"""Opens an engine for ``(database, table, embedder_choice)``; the engine may have a
``close()``."""


def open_local_engine(database: str, table: str, embedder_choice: str | None = None) -> Any:
    """The local engine over the database directory ``database``, with the embedder that made
    ``table``'s vectors (so the search tools can fuse and search by meaning), or the one
    ``embedder_choice`` names (``--embedder``: ``default`` or ``hashing``), which must be it.

    Raises:
        click.UsageError: no database in that directory.
        HotdataRetrievalError: no such table, or its vectors' model is not installed; the
            local extra is not installed (``MissingExtraError``).
        CommandError: ``embedder_choice`` names another model than the vectors'.
    """
    require_extra("local", needed_by="--engine local")
    from hotdata_retrieval.engines.local import LocalEngine

    directory = Path(database)
    if not (directory / "catalog.json").exists():
        where = ""
        if not Path(database).is_absolute():
            where = (
                f" (resolved in {Path.cwd()}: an MCP client starts its servers in a directory "
                "of its own, so give --database an absolute path)"
            )
        raise click.UsageError(
            f"no database at {directory.absolute()}{where}; create one with 'hdq load' or "
            "'hdq demo'"
        )
    engine = LocalEngine(directory.absolute())
    try:
        embedder = table_embedder(engine, table, embedder_choice)
        if embedder is not None:
            engine.embedder = embedder
    except BaseException:
        engine.close()
        raise
    return engine


ENGINE_OPENERS: dict[str, EngineOpener] = {"local": open_local_engine}
"""Engines opened here rather than through the engine registry (the local engine, with the
embedder of its table's vectors). Every other registered engine (``--engine``, from
:mod:`hotdata_retrieval.engines.registry`) opens as ``hdq search`` opens it, its search tools
given the embedder its table's vectors were made by where the engine records it, else the one
``--embedder`` names."""


def serve(engine: Any, settings: SearchSettings | None = None, /, **options: Any) -> None:
    """Build the server for a table of ``engine``, set up by ``settings`` or its fields as
    ``options`` (:class:`~hotdata_retrieval.adapters.settings.SearchSettings`: ``table``,
    ``k``, ``columns``, ``embedder``...), and run it over stdio until the client closes it.
    Every request gets a reply, even a line that is not JSON or holds a lone surrogate (see
    :func:`hotdata_retrieval.adapters.mcp.run_stdio`)."""
    from hotdata_retrieval.adapters.mcp import create_server, run_stdio

    run_stdio(create_server(engine, SearchSettings.of(settings, **options)))


@click.command("mcp")
@database_option
@click.option("--table", required=True, help="The table to search (1-3 part name).")
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ROWS,
    show_default=True,
    help="The ceiling on rows any tool returns; a larger k from the model is reduced to it.",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    help=f"Rows a search returns when the model gives no k.  [default: {DEFAULT_K}, or "
    "--max-rows when smaller]",
)
@click.option(
    "--name-prefix",
    default=DEFAULT_NAME_PREFIX,
    show_default=True,
    help="Prefix of the tool names.",
)
@click.option("--no-sql", is_flag=True, help="Serve the search tools only.")
@click.option(
    "--sql-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="Cancel an agent's SQL query that runs longer.",
)
@click.option(
    "--sql-memory",
    type=click.IntRange(min=1),
    default=DEFAULT_MEMORY_BYTES // (1024 * 1024),
    show_default=True,
    metavar="MiB",
    help="Working memory all agent SQL queries may hold at once; past it a query fails.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="The ceiling on a SQL reply's rows, as JSON text.",
)
@engine_option
@query_embedder_option
@click.option(
    "--columns",
    metavar="A,B",
    callback=parse_names,
    help="The columns each search row carries (comma-separated; default: the key and the "
    "searched text).",
)
@settings_options
@reports_errors
def mcp(
    database: Path,
    table: str,
    max_rows: int,
    k: int | None,
    name_prefix: str,
    no_sql: bool,
    sql_timeout: float,
    sql_memory: int,
    max_bytes: int,
    engine_name: str,
    embedder_choice: str | None,
    columns: tuple[str, ...] | None,
    **settings_params: Any,
) -> None:
    """Serve TABLE's search and SQL tools to an MCP client over stdio."""
    if k is not None and k > max_rows:
        raise click.BadParameter(f"{k} exceeds --max-rows ({max_rows})", param_hint="'-k'")
    require_extra("mcp", needed_by="this command")
    if sys.stdin is None:  # started with file descriptor 0 closed (``<&-``)
        raise click.UsageError("standard input is closed: an MCP client writes its requests there")
    shared = settings_fields(settings_params)
    embedder = None
    if engine_name in ENGINE_OPENERS:
        engine = ENGINE_OPENERS[engine_name](str(database), table, embedder_choice)
    else:
        engine = open_store(engine_name, database, given=database_given(), create=False)
        try:
            embedder = table_embedder(engine, table, embedder_choice)
        except BaseException:
            engine.close()
            raise
    notice = terminal_notice(sys.stdin)
    if notice is not None:
        click.echo(notice, err=True)
    try:
        settings = SearchSettings(
            table=table,
            k=k,
            max_rows=max_rows,
            name_prefix=name_prefix,
            embedder=embedder,
            columns=None if columns is None else list(columns),
            sql=not no_sql,
            sql_limits=SqlLimits(
                timeout_seconds=sql_timeout, memory_bytes=sql_memory * 1024 * 1024
            ),
            max_bytes=max_bytes,
            **shared,
        )
        serve(engine, settings)
    finally:
        close = getattr(engine, "close", None)
        if callable(close):
            close()
