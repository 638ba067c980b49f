"""Open each engine the parity tests compare, empty, in a directory of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

ENGINE_PATHS = [
    "local",
    "local statement",
    "sqlite",
    "duckdb",
    "postgres",
    "lancedb",
    "turbopuffer",
]
"""Every way a plan runs: the local engine's search (its native path where it answers) and
its compiled statement on DataFusion, then each store."""


STORE_ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb", "turbopuffer"]
"""The six engines a module-scoped ``engine`` fixture of :func:`loaded_engine` runs on."""


def bodies_table(bodies: list[str | None], **columns: list[Any]) -> pa.Table:
    """A small table: ``id`` 0..n-1, ``body`` the texts, 2-d float32 ``embedding`` vectors
    ``[1, i]`` (so the local engine embeds nothing) and any further ``columns``."""
    return pa.table(
        {
            "id": list(range(len(bodies))),
            "body": bodies,
            **columns,
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(len(bodies))], pa.list_(pa.float32(), 2)
            ),
        }
    )


def loaded_engine(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    table: str,
    data: pa.Table,
) -> Iterator[Any]:
    """The body of a module-scoped ``engine`` fixture parametrised by engine name: a fresh
    engine with ``data`` loaded as ``table`` (key ``id``, text column ``body``), its name in
    ``parity_name``, closed afterwards."""
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(f"{table}-{name}"), request)
    opened.load_table(table, data, key_column="id", text_columns=["body"])
    opened.parity_name = name
    yield opened
    opened.close()


def empty_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The body of a module-scoped ``engine`` fixture parametrised by engine name: a fresh,
    empty engine, its name in ``parity_name``, closed afterwards."""
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(name), request)
    opened.parity_name = name
    yield opened
    opened.close()


STORE_FILES = {"sqlite": "store.sqlite", "duckdb": "store.duckdb", "lancedb": "lance"}
"""Where under its directory :func:`open_engine` keeps each store's database."""


def store_location(name: str, directory: Path, request: pytest.FixtureRequest) -> str:
    """Where :func:`open_engine` keeps the database of store ``name`` (``sqlite``,
    ``duckdb``, ``lancedb``, ``postgres``), as ``hdq --engine NAME --database`` names it: a
    file or directory under ``directory``, or the session's PostgreSQL URL."""
    if name == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(directory / STORE_FILES[name])


def open_engine(name: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    """A new, empty engine of kind ``name`` (one of :data:`ENGINE_PATHS`; both local paths
    are a :class:`LocalEngine`), its files under ``directory``; PostgreSQL on the session's
    throwaway server."""
    if name in ("local", "local statement"):
        from hotdata_retrieval.engines.local import LocalEngine

        return LocalEngine(directory / "local")
    if name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(store_location(name, directory, request))
    if name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(store_location(name, directory, request))
    if name == "lancedb":
        from hotdata_retrieval.engines.lancedb import LancedbEngine

        return LancedbEngine(store_location(name, directory, request))
    if name == "turbopuffer":
        from tests.turbopuffer_api import fake_backed_engine

        return fake_backed_engine(directory / "turbopuffer")
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(store_location(name, directory, request))


def missing_column_message(engine: Any, column: str) -> str:
    """The pattern of the error every engine raises for a plan reading ``column`` from table
    ``docs``, which lacks it: the shared check's message naming the column and listing the
    table's columns (:func:`~hotdata_retrieval.engines.checks.check_columns`); the Hotdata
    engine's planner's, naming the column and the valid fields."""
    from hotdata_retrieval.engines.hotdata import HotdataEngine

    if isinstance(engine, HotdataEngine):
        return rf"No field named (?:\w+\.)?{column}\b.*Valid fields are "
    return rf"column '{column}' not found in table '(?:\w+\.)*docs'; columns: id, body, "
