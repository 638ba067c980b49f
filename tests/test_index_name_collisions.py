"""Tables whose text indexes would share a name: table ``x`` with column ``y__z`` and table
``x__y`` with column ``z``. SQLite names a column's index tables ``<table>__<column>__fts...``,
so it refuses the second load with an error naming both tables and columns, before anything
is written, and the first table keeps answering; DuckDB names its terms tables by the
lengths of the names, so it holds both and each answers with its own rows."""

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
