"""Tables whose text indexes would share a name: table ``x`` with column ``y__z`` and table
``x__y`` with column ``z``. SQLite names a column's index tables ``<table>__<column>__fts...``,
so it refuses the second load with an error naming both tables and columns, before anything
is written, and the first table keeps answering; DuckDB names its terms tables by the
lengths of the names, so it holds both and each answers with its own rows. PostgreSQL names
its text side tables by the lengths too, but an HNSW index ``<table>__<column>__hnsw``: it
refuses a second such index, and two text columns of one table whose side tables' names meet
(``c`` and ``c__row``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.duckdb import DuckdbEngine
from hotdata_retrieval.engines.sqlite import SqliteEngine
from hotdata_retrieval.errors import EngineError
from hotdata_retrieval.plan.search import Bm25Search, SearchPlan

SHORT = ("x", "y__z", "disk full")
"""Table ``x``, its column ``y__z`` and the one row's text."""
LONG = ("x__y", "z", "full moon")


def _load(engine: Any, table: str, column: str, text: str, *, indexed: bool) -> None:
    data = pa.table({"id": [1], column: [text]})
    engine.load_table(table, data, key_column="id", text_columns=[column] if indexed else [])


def _found(engine: Any, table: str, column: str, query: str) -> list[int]:
    plan = SearchPlan(source=Bm25Search(table=table, column=column, query_text=query))
    return list(engine.search(plan).keys)


@pytest.mark.parametrize("first", [SHORT, LONG], ids=["short_first", "long_first"])
@pytest.mark.parametrize(
    ("first_indexed", "second_indexed"),
    [(True, True), (True, False), (False, True)],
    ids=["both_indexed", "first_indexed", "second_indexed"],
)
def test_sqlite_refuses_a_table_whose_index_names_another_tables(
    tmp_path: Path, first: tuple[str, str, str], first_indexed: bool, second_indexed: bool
) -> None:
    second = LONG if first is SHORT else SHORT
    engine = SqliteEngine(tmp_path / "store.sqlite")
    _load(engine, *first, indexed=first_indexed)
    message = (
        rf"column '{second[1]}' of table '{second[0]}' and column '{first[1]}' of table "
        rf"'{first[0]}' would share the full-text tables 'x__y__z__fts\.\.\.'"
    )
    with pytest.raises(EngineError, match=message):
        _load(engine, *second, indexed=second_indexed)
    assert sorted(engine.tables) == [first[0]]
    if first_indexed:
        assert _found(engine, first[0], first[1], "full") == [1]
    else:
        assert engine.tables[first[0]].text_indexes == ()


def test_sqlite_holds_both_when_neither_column_is_indexed(tmp_path: Path) -> None:
    engine = SqliteEngine(tmp_path / "store.sqlite")
    _load(engine, *SHORT, indexed=False)
    _load(engine, *LONG, indexed=False)
    assert sorted(engine.tables) == ["x", "x__y"]


def test_duckdb_holds_both_and_each_answers_with_its_own_rows(tmp_path: Path) -> None:
    engine = DuckdbEngine(tmp_path / "store.duckdb")
    _load(engine, *SHORT, indexed=True)
    _load(engine, *LONG, indexed=True)
    assert _found(engine, "x", "y__z", "disk") == [1]
    assert _found(engine, "x__y", "z", "disk") == []
    assert _found(engine, "x__y", "z", "moon") == [1]
    assert _found(engine, "x", "y__z", "moon") == []


def _load_vectors(engine: Any, table: str, column: str, *, indexed: bool) -> None:
    data = pa.table({"id": [1], column: pa.array([[1.0, 2.0]], pa.list_(pa.float32()))})
    engine.load_table(table, data, key_column="id", vector_index="hnsw" if indexed else None)


@pytest.mark.parametrize("short_first", [True, False], ids=["short_first", "long_first"])
def test_postgres_refuses_a_vector_column_whose_hnsw_index_another_table_has(
    postgres_url: str, short_first: bool
) -> None:
    """PostgreSQL names an HNSW index ``<table>__<column>__hnsw``: ``h1__y__z__hnsw`` for
    both tables here, refused on the second load when both are indexed, held when one is."""
    from hotdata_retrieval.engines.postgres import PostgresEngine

    prefix = "hs" if short_first else "hl"
    short, long = (prefix, "y__z"), (f"{prefix}__y", "z")
    first, second = (short, long) if short_first else (long, short)
    with PostgresEngine(postgres_url) as engine:
        _load_vectors(engine, *first, indexed=True)
        message = (
            rf"column '{second[1]}' of table '{second[0]}' and column '{first[1]}' of table "
            rf"'{first[0]}' would share the HNSW index '{prefix}__y__z__hnsw'"
        )
        with pytest.raises(EngineError, match=message):
            _load_vectors(engine, *second, indexed=True)
        assert [name for name in engine.tables if name.startswith(prefix)] == [first[0]]
        _load_vectors(engine, *second, indexed=False)
        assert sorted(n for n in engine.tables if n.startswith(prefix)) == sorted([prefix, long[0]])


@pytest.mark.parametrize("longer_first", [True, False], ids=["longer_first", "shorter_first"])
@pytest.mark.parametrize("suffix", ["_pkey"])
def test_postgres_refuses_text_columns_whose_side_tables_share_a_name(
    postgres_url: str, suffix: str, longer_first: bool
) -> None:
    """A text column's postings table ``p<len>_<schema>_<len>_<table>_<column>`` and its
    primary key ``<postings>_pkey``: columns ``c`` and ``c_pkey`` of one table would share
    one, so the load is refused and writes nothing."""
    from hotdata_retrieval.engines.postgres import PostgresEngine

    table = f"sides{suffix}"
    data = pa.table({"id": [1], "c": ["disk full"], f"c{suffix}": ["full moon"]})
    with PostgresEngine(postgres_url) as engine:
        shared = f"p6_public_{len(table)}_{table}_c{suffix}"
        with pytest.raises(EngineError, match=rf"text columns 'c' and 'c{suffix}'.*'{shared}'"):
            texts = [f"c{suffix}", "c"] if longer_first else ["c", f"c{suffix}"]
            engine.load_table(table, data, key_column="id", text_columns=texts)
        assert table not in engine.tables


def test_postgres_holds_both_text_tables_and_each_answers_with_its_own_rows(
    postgres_url: str,
) -> None:
    """The side tables' names carry the schema's and the table's lengths, so ``x`` with
    column ``y__z`` and ``x__y`` with column ``z`` have their own."""
    from hotdata_retrieval.engines.postgres import PostgresEngine

    with PostgresEngine(postgres_url) as engine:
        _load(engine, "tx", "y__z", "disk full", indexed=True)
        _load(engine, "tx__y", "z", "full moon", indexed=True)
        assert _found(engine, "tx", "y__z", "disk") == [1]
        assert _found(engine, "tx__y", "z", "disk") == []
        assert _found(engine, "tx__y", "z", "moon") == [1]
        assert _found(engine, "tx", "y__z", "moon") == []


def test_postgres_holds_text_columns_c_and_c__row_and_a_44_character_table(
    postgres_url: str,
) -> None:
    """The postings index is named as its table with ``r`` for ``p``
    (``text_postings_row_index``): no column's postings table takes its name, and it fits
    in PostgreSQL's 63 bytes wherever the side tables do (a 44-character table name)."""
    from hotdata_retrieval.engines.postgres import PostgresEngine

    data = pa.table({"id": [1, 2], "c": ["disk full", "moon"], "c__row": ["moon", "disk"]})
    long_name = "t" * 44
    with PostgresEngine(postgres_url) as engine:
        engine.load_table("rows_both", data, key_column="id", text_columns=["c", "c__row"])
        assert _found(engine, "rows_both", "c", "disk") == [1]
        assert _found(engine, "rows_both", "c__row", "disk") == [2]
        _load(engine, long_name, "body", "disk full", indexed=True)
        assert _found(engine, long_name, "body", "disk") == [1]
