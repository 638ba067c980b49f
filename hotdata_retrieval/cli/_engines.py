"""``--engine``: which store ``hdq load``, ``hdq search`` and ``hdq explain`` work with.

``local`` is the embedded engine (``--database`` a directory, default ``.hdq``); the stores
are ``sqlite`` and ``duckdb`` (``--database`` a file), ``lancedb`` (a directory) and
``postgres`` (a ``postgresql://`` URL or a libpq ``key=value`` string). ``hdq explain
--engine X`` compiles for X's dialect (LanceDB runs no SQL).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.extras import require_extra

__all__ = [
    "ENGINE_DIALECTS",
    "ENGINE_NAMES",
    "STORE_ENGINES",
    "engine_option",
    "open_store",
    "store_location",
]

STORE_ENGINES = ("sqlite", "postgres", "duckdb", "lancedb")
ENGINE_NAMES = ("local", *STORE_ENGINES)

ENGINE_DIALECTS: dict[str, str | None] = {
    "local": "hotdata",
    "sqlite": "sqlite",
    "postgres": "postgres",
    "duckdb": "duckdb",
    "lancedb": None,
}
"""The dialect each engine's SQL is compiled for (LanceDB: none, it runs no SQL)."""

_LOCATION = {
    "sqlite": "a database file",
    "duckdb": "a database file",
    "lancedb": "a database directory",
    "postgres": "a postgresql:// URL",
}

engine_option = click.option(
    "--engine",
    "engine_name",
    type=click.Choice(ENGINE_NAMES),
    default="local",
    show_default=True,
    help="Where the table lives: local (the embedded engine; --database a directory), "
    "sqlite or duckdb (--database a file), lancedb (--database a directory), postgres "
    "(--database a postgresql:// URL).",
)

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
            default location.
        embedder: the engine's embedder, if any.
        create: whether a missing database file or directory may be created (``hdq load``);
            a command that only reads refuses it, so a mistyped path is named, not created.

    Raises:
        CommandError: no ``--database``, or (``create=False``) no file or directory there.
        MissingExtraError: the store's extra is not installed.
        EngineError: the store cannot be opened.
    """
    if not given:
        raise CommandError(f"--engine {engine_name} needs --database ({_LOCATION[engine_name]})")
    require_extra(engine_name, needed_by=f"--engine {engine_name}")
    location = store_location(engine_name, database)
    if not create and engine_name != "postgres" and not Path(location).exists():
        raise CommandError(
            f"no {engine_name} database at {location}; create one with 'hdq load --engine "
            f"{engine_name}'"
        )
    if engine_name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(location, embedder=embedder)
    if engine_name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(location, embedder=embedder)
    if engine_name == "lancedb":
        from hotdata_retrieval.engines.lancedb import LancedbEngine

        return LancedbEngine(location, embedder=embedder)
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(location, embedder=embedder)
