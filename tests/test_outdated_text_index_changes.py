"""A table whose full-text index an earlier release wrote (PostgreSQL: terms without
per-column postings; SQLite: an FTS5 table without BM25 statistics) is neither searched nor
kept up to date by this release: a change by key (``upsert_rows``, ``delete_rows``) is
refused with an :class:`~hotdata_retrieval.errors.OutdatedIndexError` naming the table, its
columns and what to do, and changes nothing; once the table is loaded again, changes keep
its text search up to date."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, OutdatedIndexError, SearchPlan

DATA = pa.table({"id": [1, 2], "body": ["disk full", "disk fine"]})
_NAMES = itertools.count()


def _postgres_earlier(request: pytest.FixtureRequest, _directory: Path) -> tuple[Any, str]:
    from hotdata_retrieval.compile.postgres import ROW_COLUMN, postings_table
    from hotdata_retrieval.compile.statements import drop_table
    from hotdata_retrieval.engines.postgres import PostgresEngine
    from hotdata_retrieval.plan.names import TableName

    engine = PostgresEngine(request.getfixturevalue("postgres_url"))
    name = f"earlier_changes_{next(_NAMES)}"  # the session's server is shared
    engine.load_table(name, DATA, key_column="id", text_columns=["body"])
    # the layout before per-column postings: terms, no postings table, no row numbers
    engine._execute(drop_table(engine.profile, postings_table(TableName.parse(name), "body")))
    engine._execute(f'ALTER TABLE "public"."{name}" DROP COLUMN "{ROW_COLUMN}"')
    return engine, name


def _sqlite_earlier(_request: pytest.FixtureRequest, directory: Path) -> tuple[Any, str]:
    import sqlean

    from hotdata_retrieval.engines.sqlite import SqliteEngine

    path = directory / "earlier.sqlite"
    with SqliteEngine(path) as engine:
        engine.load_table("docs", DATA, key_column="id", text_columns=["body"])
    connection = sqlean.connect(str(path))
    for table in ("docs__body__fts_terms", "docs__body__fts_corpus"):  # FTS5 table only
        connection.execute(f'DROP TABLE "{table}"')
    connection.commit()
    connection.close()
    return SqliteEngine(path), "docs"


@pytest.mark.parametrize(
    "earlier",
    [pytest.param(_postgres_earlier, id="postgres"), pytest.param(_sqlite_earlier, id="sqlite")],
)
def test_a_change_to_an_earlier_layout_is_refused_until_a_new_load(
    earlier: Callable[[pytest.FixtureRequest, Path], tuple[Any, str]],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    engine, name = earlier(request, tmp_path)
    try:
        before = sorted(engine.read_table(name, ["id", "body"]).to_pylist(), key=str)
        changes = [
            lambda: engine.upsert_rows(name, pa.table({"id": [3], "body": ["zebra crossing"]})),
            lambda: engine.delete_rows(name, [1]),
        ]
        for change in changes:
            with pytest.raises(OutdatedIndexError) as refused:
                change()
            assert refused.value.table.endswith(f".{name}")
            assert refused.value.columns == ("body",)
            assert f"table '{refused.value.table}'" in str(refused.value)
            assert "column 'body'" in str(refused.value)
            assert "load the table again (load_table)" in str(refused.value)
        assert sorted(engine.read_table(name, ["id", "body"]).to_pylist(), key=str) == before
        engine.load_table(name, DATA, key_column="id", text_columns=["body"])
        engine.upsert_rows(name, pa.table({"id": [3], "body": ["zebra crossing"]}))
        engine.delete_rows(name, [1])
        plan = SearchPlan(source=Bm25Search(table=name, column="body", query_text="zebra disk"))
        assert sorted(engine.search(plan).keys) == [2, 3]
    finally:
        engine.close()
