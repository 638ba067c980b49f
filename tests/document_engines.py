"""Every engine a document table (:class:`~hotdata_retrieval.documents.DocumentStore`) runs
on, opened empty for the vector-store suites: the local engine, the SQL stores, LanceDB,
turbopuffer over its fake API and the Hotdata engine over its fake API (a local engine behind
it)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.parity.engines import open_engine

DOCUMENT_ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb", "turbopuffer", "hotdata"]
"""The engines the vector stores are checked on."""

_TABLES = itertools.count()


def fresh_table(prefix: str = "documents") -> str:
    """A table name no other test of the session uses (the engines of a module, and the
    PostgreSQL server of a session, are shared)."""
    return f"{prefix}_{next(_TABLES)}"


def open_document_engine(name: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    """A new, empty engine of kind ``name`` (one of :data:`DOCUMENT_ENGINES`) with its files
    under ``directory``; closing it stops the fake API behind it, if any."""
    if name != "hotdata":
        return open_engine(name, directory, request)
    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    local = LocalEngine(directory / "hotdata")
    api = FakeHotdataApi(local).start()

    class _FakeBacked(HotdataEngine):
        def close(self) -> None:
            super().close()
            api.stop()
            local.close()

    engine = _FakeBacked.connect(
        api.database_id, api_key=api.api_key, workspace_id=api.workspace_id, host=api.url
    )
    engine.fake = api
    return engine


def load_by_key(engine: Any, name: str, data: Any, **load: Any) -> None:
    """``data`` (a ``pyarrow.Table``) as table ``name`` keyed by its ``id`` column, with
    ``body`` its text column unless ``load`` says otherwise: ``load_table``, or on the
    Hotdata engine (managed tables, written by key only) an upsert that makes the table."""
    from hotdata_retrieval.engines.local import TableLoad

    load = {"key_column": "id", "text_columns": ["body"], **load}
    if hasattr(engine, "load_table"):
        engine.load_table(name, data, **load)
    else:
        engine.upsert_rows(name, data, create=TableLoad(name=name, data=data, **load))
