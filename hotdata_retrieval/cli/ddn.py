"""``hdq ddn``: a table's search as a Hasura DDN command.

``hdq ddn serve`` runs the NDC function connector of
:mod:`hotdata_retrieval.adapters.ddn` with uvicorn (``search_documents`` over ``--table`` of
the ``--engine`` store, one equality argument per ``--filter-column``); ``hdq ddn metadata``
prints the HML for the command, its ``SearchHit`` return type and an example relationship
from ``SearchHit.id`` to ``--model`` (``--format json``: the same documents as one JSON
array). The engine is opened as ``hdq search`` opens it, with the embedder that made the
table's vectors, so the connector answers with the rows ``hdq search`` prints.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from hotdata_retrieval.adapters.toolkit import DEFAULT_K, DEFAULT_MAX_ROWS
from hotdata_retrieval.cli._engines import engine_option
from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._local import database_option, reports_errors
from hotdata_retrieval.cli._settings import settings_fields, settings_options
from hotdata_retrieval.errors import HotdataRetrievalError, ToolError
from hotdata_retrieval.extras import require_extra

DEFAULT_PORT = 8080
"""The port ``hdq ddn serve`` listens on: the one DDN's connector containers use."""


def _connector_options(command: Any) -> Any:
    for option in reversed(
        [
            click.option("--table", required=True, help="The table to search (1-3 part name)."),
            database_option,
            engine_option,
            click.option(
                "--filter-column",
                "filter_columns",
                multiple=True,
                metavar="COLUMN",
                help="A column offered as an optional equality argument (repeatable).",
            ),
            click.option("--text-column", metavar="COLUMN", help="The text column to search."),
            click.option(
                "--top-k",
                "default_top_k",
                type=click.IntRange(min=1),
                default=DEFAULT_K,
                show_default=True,
                help="Hits when a call gives no top_k.",
            ),
            click.option(
                "--max-top-k",
                type=click.IntRange(min=1),
                default=DEFAULT_MAX_ROWS,
                show_default=True,
                help="The largest top_k a call may ask for.",
            ),
            settings_options,
        ]
    ):
        command = option(command)
    return command


def _function(
    engine_name: str,
    database: Path,
    table: str,
    filter_columns: Sequence[str],
    text_column: str | None,
    default_top_k: int,
    max_top_k: int,
    settings_params: Mapping[str, Any],
) -> tuple[Any, Any]:
    """The engine (open) and the app serving ``search_documents`` over its table.

    Raises:
        MissingExtraError: the ``ddn`` extra (or the engine's) is not installed.
        HotdataRetrievalError: no such table, or a bad filter column.
    """
    if default_top_k > max_top_k:
        raise click.BadParameter(
            f"{default_top_k} exceeds --max-top-k ({max_top_k})", param_hint="'--top-k'"
        )
    require_extra("ddn", needed_by="hdq ddn")
    shared = settings_fields(settings_params)
    from hotdata_retrieval.adapters.ddn import create_app
    from hotdata_retrieval.cli._engines import open_engine, table_embedder

    engine = open_engine(engine_name, database)
    try:
        searched = engine.indexes(table).table
        # the text ranking needs no embedder; routing says what is missing
        with contextlib.suppress(HotdataRetrievalError):
            embedder = table_embedder(engine, searched)
            if embedder is not None:
                engine.embedder = embedder
        app = create_app(
            engine,
            table=table,
            filter_columns=filter_columns,
            text_column=text_column,
            default_top_k=default_top_k,
            max_top_k=max_top_k,
            **shared,
        )
    except ToolError as error:
        engine.close()
        message = str(error)
        if message.startswith("filter column"):  # said in the terms of the option that named it
            raise CommandError("--filter-column" + message.removeprefix("filter column")) from None
        raise
    except BaseException:
        engine.close()
        raise
    return engine, app


@click.group("ddn")
def ddn() -> None:
    """Serve a table's search as a Hasura DDN command (an NDC connector) and write its HML."""


@ddn.command("serve")
@_connector_options
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on.",
)
@reports_errors
def serve(
    table: str,
    database: Path,
    engine_name: str,
    filter_columns: tuple[str, ...],
    text_column: str | None,
    default_top_k: int,
    max_top_k: int,
    host: str,
    port: int,
    **settings_params: Any,
) -> None:
    """Run the connector: GET /capabilities, GET /schema, POST /query, GET /health."""
    engine, app = _function(
        engine_name,
        database,
        table,
        filter_columns,
        text_column,
        default_top_k,
        max_top_k,
        settings_params,
    )
    import uvicorn

    try:
        listener = _listen(host, port)
    except BaseException:
        engine.close()
        raise
    bound = listener.getsockname()[1]  # the port the system chose for --port 0
    click.echo(f"hdq ddn: serving search_documents over {table} on http://{host}:{bound}", err=True)
    try:
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[listener])
    finally:
        listener.close()
        engine.close()


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening, as uvicorn would bind it, made here
    so that a port in use or an unknown host is one error line (uvicorn logs its own line
    and exits 3) and the address is said only once it is served.

    Raises:
        CommandError: the address cannot be bound, naming it and the reason.
    """
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, protocol)
    except OSError as error:
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)  # uvicorn's default backlog
    except OSError as error:
        listener.close()
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return listener


@ddn.command("metadata")
@_connector_options
@click.option(
    "--connector-name",
    default="search",
    show_default=True,
    help="The DataConnectorLink the HML refers to.",
)
@click.option("--model", default="Documents", show_default=True, help="The model a hit's id joins.")
@click.option(
    "--model-field", default="id", show_default=True, help="The model's field the id matches."
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="yaml: the HML as written to a DDN project; json: the same documents as JSON.",
)
@reports_errors
def metadata(
    table: str,
    database: Path,
    engine_name: str,
    filter_columns: tuple[str, ...],
    text_column: str | None,
    default_top_k: int,
    max_top_k: int,
    connector_name: str,
    model: str,
    model_field: str,
    output_format: str,
    **settings_params: Any,
) -> None:
    """Print the HML of the SearchDocuments command, the SearchHit type and a relationship."""
    from hotdata_retrieval.adapters.ddn import metadata as hml
    from hotdata_retrieval.adapters.ddn import metadata_yaml

    engine, app = _function(
        engine_name,
        database,
        table,
        filter_columns,
        text_column,
        default_top_k,
        max_top_k,
        settings_params,
    )
    engine.close()
    documents = hml(
        app.state.function, connector_name=connector_name, model=model, model_field=model_field
    )
    if output_format == "json":
        click.echo(json.dumps(documents, indent=2))
    else:
        click.echo(metadata_yaml(documents), nl=False)
