"""``--engine``: which engine ``hdq load``, ``hdq search``, ``hdq mcp``, ``hdq tune`` and
``hdq explain`` work with.

The choices, their help and what each needs come from the engine registry
(:mod:`hotdata_retrieval.engines.registry`): ``local`` is the embedded engine (``--database`` a
directory, default ``.hdq``); the stores are ``sqlite`` and ``duckdb`` (``--database`` a file),
``lancedb`` (a directory) and ``postgres`` (a ``postgresql://`` URL or a libpq ``key=value``
string), ``hotdata`` (a database of the workspace, default ``$HOTDATA_DATABASE``; the API key
and workspace come from the environment, as hotdata-framework's ``from_env`` reads them), and
any engine registered after them. ``hdq explain --engine X`` compiles for X's dialect (LanceDB
runs no SQL).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._local import embedder_for_model, embedder_named
from hotdata_retrieval.engines.registry import engine_kind, engine_kinds
from hotdata_retrieval.extras import require_extra

ENGINE_NAMES = tuple(kind.name for kind in engine_kinds())
"""The engines ``--engine`` names, from the engine registry (``local`` first)."""

STORE_ENGINES = tuple(kind.name for kind in engine_kinds() if not kind.embedded)
"""The stores: every registered engine but the embedded one."""

LOADABLE_ENGINES = tuple(kind.name for kind in engine_kinds() if kind.loadable)
"""The engines ``hdq load`` writes to (``local`` first): every registered one that loads."""

ENGINE_DIALECTS: dict[str, str | None] = {kind.name: kind.dialect for kind in engine_kinds()}
"""The dialect each engine's SQL is compiled for (LanceDB: none, it runs no SQL)."""


def _engine_help(names: tuple[str, ...]) -> str:
    described = [
        f"{kind.name} ({'the embedded engine; ' if kind.embedded else ''}--database "
        f"{kind.location}"
        + (f", default ${kind.location_variable}" if kind.location_variable else "")
        + ")"
        for kind in engine_kinds()
        if kind.name in names
    ]
    return "Where the table lives: " + ", ".join(described) + "."


engine_option = click.option(
    "--engine",
    "engine_name",
    type=click.Choice(ENGINE_NAMES),
    default="local",
    show_default=True,
    help=_engine_help(ENGINE_NAMES),
)
"""``--engine`` of a command that reads a table: every registered engine."""

loadable_engine_option = click.option(
    "--engine",
    "engine_name",
    type=click.Choice(LOADABLE_ENGINES),
    default="local",
    show_default=True,
    help=_engine_help(LOADABLE_ENGINES),
)
"""``--engine`` of ``hdq load``: the registered engines it can write tables to."""


def database_given() -> bool:
    """Whether the running command's ``--database`` was given (on the command line or in its
    environment variable) rather than left at its default."""
    source = click.get_current_context().get_parameter_source("database")
    return source is not None and source.name != "DEFAULT"


_SCHEME = re.compile(r"^(postgres(?:ql)?):/(?!/)")


def store_location(engine_name: str, database: Path | str) -> str:
    """``--database`` as the store reads it. A URL passed through the shared path option has
    its ``//`` collapsed (``postgresql:/user@host``); the scheme's slashes are put back.

    >>> store_location("postgres", Path("postgresql://postgres@127.0.0.1:5432/postgres"))
    'postgresql://postgres@127.0.0.1:5432/postgres'
    """
    text = str(database)
    if engine_name == "postgres":
        text = _SCHEME.sub(r"\1://", text)
    return text


def shown_location(engine_name: str, database: Path | str) -> str:
    """``--database`` as a report shows it: the store's location, a PostgreSQL URL's
    password replaced by ``***``."""
    location = store_location(engine_name, database)
    if engine_name == "postgres":
        from hotdata_retrieval.engines.postgres import redacted_url

        return redacted_url(location)
    return location


def open_store(
    engine_name: str,
    database: Path | str,
    *,
    given: bool,
    embedder: Any = None,
    create: bool = True,
) -> Any:
    """The store engine ``engine_name`` on ``database``.

    Args:
        engine_name: one of :data:`STORE_ENGINES`.
        database: the ``--database`` value.
        given: whether ``--database`` (or its environment variable) was given: a store has no
            default location, but one with a ``location_variable`` in the registry reads it
            from there (the Hotdata engine: ``HOTDATA_DATABASE``).
        embedder: the engine's embedder, if any.
        create: whether a missing database file or directory may be created (``hdq load``);
            a command that only reads refuses it, so a mistyped path is named, not created.

    Raises:
        click.UsageError: no ``--database``, or (``create=False``) no file or directory there
            (exit 2, as the local engine's missing database: docs/cli.md, "Exit codes").
        MissingExtraError: the store's extra is not installed.
        EngineError: the store cannot be opened.
    """
    kind = engine_kind(engine_name)
    if not given and kind.location_variable and os.environ.get(kind.location_variable):
        database, given = os.environ[kind.location_variable], True
    if not given:
        also = f" or ${kind.location_variable}" if kind.location_variable else ""
        raise click.UsageError(f"--engine {engine_name} needs --database{also} ({kind.location})")
    require_extra(kind.extra, needed_by=f"--engine {engine_name}")
    location = store_location(engine_name, database)
    if not create and kind.location_is_path and not Path(location).exists():
        raise click.UsageError(
            f"no {engine_name} database at {location}; create one with 'hdq load --engine "
            f"{engine_name}'"
        )
    return kind.open(location, embedder=embedder)


def open_engine(engine_name: str, database: Path) -> Any:
    """The engine ``--engine`` names, on ``--database``, opened to read: the local database
    directory, or the store (:func:`open_store`, nothing created).

    Raises:
        click.UsageError: no local database in that directory (naming the store's
            ``--engine`` when ``--database`` is a store's file: :func:`missing_database`); a
            store without ``--database``, or no store's file or directory there.
        MissingExtraError: the engine's extra is not installed.
        EngineError: the store cannot be opened.
    """
    if engine_name != "local":
        return open_store(engine_name, database, given=database_given(), create=False)
    require_extra("local", needed_by="this command")
    from hotdata_retrieval.engines.local import LocalEngine

    if not (database / "catalog.json").exists():
        raise click.UsageError(missing_database(database))
    return LocalEngine(database)


_FILE_HEADERS = {"sqlite": (0, b"SQLite format 3\x00"), "duckdb": (8, b"DUCK")}
"""Each store file's format, by the bytes its header holds at an offset: SQLite's header
string (https://www.sqlite.org/fileformat.html, "The Database Header": offset 0, 16
bytes) and DuckDB's magic bytes (https://duckdb.org/docs/stable/internals/storage: a file
starts with a ``uint64_t`` checksum, then ``DUCK``; duckdb's ``src/storage/magic_bytes.cpp``
reads both headers from the file's first 16 bytes alike)."""

_FILE_SUFFIXES = {".sqlite": "sqlite", ".sqlite3": "sqlite", ".duckdb": "duckdb"}
"""The store a missing file's suffix names (``.db`` names none: SQLite and DuckDB both use it)."""


def file_store(path: Path) -> str | None:
    """The store engine (``sqlite``, ``duckdb``) whose database ``path`` is: from the file's
    header (:data:`_FILE_HEADERS`) when it is a file, else from its suffix
    (:data:`_FILE_SUFFIXES`) when nothing is there; ``None`` otherwise."""
    if path.is_file():
        try:
            with path.open("rb") as file:
                head = file.read(16)
        except OSError:
            return None
        for name, (offset, magic) in _FILE_HEADERS.items():
            if head[offset : offset + len(magic)] == magic:
                return name
        return None
    if path.exists():
        return None
    return _FILE_SUFFIXES.get(path.suffix.lower())


def missing_database(database: Path) -> str:
    """Why the local engine cannot open ``database`` (no ``catalog.json`` there) and what to
    do: search a store's file with its ``--engine`` (:func:`file_store`), else create a local
    database."""
    store = file_store(database)
    if store is not None and database.is_file():
        return (
            f"no database at {database}: it is a {store} database file; give --engine {store} "
            "to search it"
        )
    if store is not None:
        return (
            f"no database at {database}; --engine {store} reads a {store} database file; "
            "create a local database with 'hdq load' or 'hdq demo'"
        )
    return f"no database at {database}; create one with 'hdq load' or 'hdq demo'"


def recorded_model(engine: Any, table: Any) -> str | None:
    """The name of the embedder that made ``table``'s vectors, where ``engine`` records it
    (its ``vector_model``, an optional capability of the engine contract), else ``None`` (the
    Hotdata engine records none).

    Raises:
        HotdataRetrievalError: the engine has no such table.
    """
    vector_model = getattr(engine, "vector_model", None)
    model = vector_model(table) if callable(vector_model) else None
    return str(model) if model else None


query_embedder_option = click.option(
    "--embedder",
    "embedder_choice",
    type=click.Choice(["default", "hashing"]),
    help="The model that embeds queries, for an engine that does not record the one that made "
    "the table's vectors (hotdata, turbopuffer): default or hashing, as hdq load --embedder "
    "names them.  [default: the model recorded at load]",
)
"""``--embedder`` of a command that embeds queries (``hdq search``, ``hdq tune``, ``hdq mcp``)."""


def table_embedder(engine: Any, table: Any, choice: str | None = None) -> Any:
    """The embedder that embeds queries of ``table`` on this side: the one ``choice`` names
    (``--embedder``: ``default`` or ``hashing``), else the model its vectors were made by
    (:func:`recorded_model`), else ``None``.

    Raises:
        CommandError: ``choice`` names another model than the one the engine records.
        HotdataRetrievalError: no such table, or the model is not installed.
    """
    model = recorded_model(engine, table)
    if choice is None:
        return None if model is None else embedder_for_model(model)
    embedder = embedder_named(choice)
    if model is not None and str(embedder.name) != model:
        raise CommandError(
            f"--embedder {choice} embeds with {str(embedder.name)!r}, but the vectors of table "
            f"'{table}' were made by {model!r}; leave --embedder out to embed with that model"
        )
    return embedder


def no_embedder_message(engine_name: str, table: Any, needs: str) -> str:
    """Why a search that embeds its query here cannot run: ``needs`` (``hybrid search``)
    needs the model that made ``table``'s vectors, which engine ``engine_name`` does not
    record, so ``--embedder`` must name it."""
    return (
        f"{needs} embeds each query here, with the model that made the vectors of table "
        f"'{table}', which the {engine_name} engine does not record: name it with --embedder "
        "(default or hashing, as hdq load --embedder)"
    )
