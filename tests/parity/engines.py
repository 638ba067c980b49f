"""Open each engine the parity tests compare, empty, in a directory of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ENGINE_PATHS = ["local", "local statement", "sqlite", "duckdb", "postgres", "lancedb"]
"""Every way a plan runs: the local engine's search (its native path where it answers) and
its compiled statement on DataFusion, then each store."""


def open_engine(name: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    """A new, empty engine of kind ``name`` (one of :data:`ENGINE_PATHS`; both local paths
    are a :class:`LocalEngine`), its files under ``directory``; PostgreSQL on the session's
    throwaway server."""
    if name in ("local", "local statement"):
        from hotdata_retrieval.engines.local import LocalEngine

        return LocalEngine(directory / "local")
    if name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(directory / "store.sqlite")
    if name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(directory / "store.duckdb")
    if name == "lancedb":
        from hotdata_retrieval.engines.lancedb import LancedbEngine

        return LancedbEngine(directory / "lance")
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(request.getfixturevalue("postgres_url"))
