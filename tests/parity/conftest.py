"""Engines for the parity suite: each loads the fixture corpus once per module.

Every engine the library runs is here, and each runs with no skip: its extra is part of the
``test`` extra (``pyproject.toml``), so ``.ci/run`` installs it from the package index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.parity.corpus import corpus_table, empty_table


def _local(directory: Path) -> Any:
    from hotdata_retrieval.engines.local import LocalEngine

    engine = LocalEngine(directory / "local")
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


def _sqlite(directory: Path) -> Any:
    from hotdata_retrieval.engines.sqlite import SqliteEngine

    engine = SqliteEngine(directory / "store.sqlite")
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


def _duckdb(directory: Path) -> Any:
    from hotdata_retrieval.engines.duckdb import DuckdbEngine

    engine = DuckdbEngine(directory / "store.duckdb")
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


def _postgres(url: str) -> Any:
    from hotdata_retrieval.engines.postgres import PostgresEngine

    engine = PostgresEngine(url)
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


def _lancedb(directory: Path) -> Any:
    from hotdata_retrieval.engines.lancedb import LancedbEngine

    engine = LancedbEngine(directory / "lance")
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


def _turbopuffer(directory: Path) -> Any:
    from tests.turbopuffer_api import fake_backed_engine

    engine = fake_backed_engine(directory / "turbopuffer")
    engine.load_table("docs", corpus_table(), key_column="id", text_columns=["body"])
    engine.load_table("empty", empty_table(), key_column="id", text_columns=["body"])
    return engine


FACTORIES: dict[str, Callable[[Path], Any]] = {
    "local": _local,
    "sqlite": _sqlite,
    "duckdb": _duckdb,
    "lancedb": _lancedb,
    "turbopuffer": _turbopuffer,  # against tests/turbopuffer_api.py, in process
}
"""Engine name → a factory loading ``docs`` and ``empty`` into a fresh database."""

SERVERS: dict[str, Callable[[str], Any]] = {"postgres": _postgres}
"""Engine name → a factory loading the corpus into the session's server (its URL)."""

ENGINES = sorted([*FACTORIES, *SERVERS])

EXACT = frozenset(ENGINES)
"""Engines whose nearest-neighbour search is exact in the suite (no approximate index)."""


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One engine with the corpus loaded, for every test of a module."""
    name = request.param
    if name in SERVERS:
        instance = SERVERS[name](request.getfixturevalue("postgres_url"))
    else:
        instance = FACTORIES[name](tmp_path_factory.mktemp(f"parity-{name}"))
    instance.parity_name = name
    yield instance
    close = getattr(instance, "close", None)
    if close is not None:
        close()
