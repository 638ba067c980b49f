"""Table and column names a store's own machinery may not hold: each engine either quotes them
correctly (the load and every search work) or refuses them at load, before writing anything,
with an ``EngineError`` naming the rule.

Names with a space, a quote, a dash, non-ASCII letters and a SQL keyword, as a table, a text
column, the key, the vector column and a filtered column, on every engine. DuckDB's
full-text extension writes the names of the table it indexes into its SQL unquoted; the
engine indexes a terms table named by a digest when a name is not bare, so DuckDB takes them
all (B23: a text column named ``Body Text`` loads and is found). One store refuses some by
rule: LanceDB's table names are letters, digits, ``_``, ``-`` and ``.``, and its column names
hold no dot (a nested field's path).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    EngineError,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from tests.parity.engines import open_engine

ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb"]

TABLES = ["my docs", "it's", "my-docs", "dócs", "select"]
COLUMNS = ["the body", "Body Text", "it's", "my-col", "bódy", "select", "my.col"]

LANCEDB_TABLE = "it may contain only alphanumeric characters, underscores, hyphens and periods"


class Engines:
    """Each engine, opened on first use and kept for the module."""

    def __init__(self, request: pytest.FixtureRequest, factory: pytest.TempPathFactory) -> None:
        self.request = request
        self.factory = factory
        self.opened: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.opened:
            directory = self.factory.mktemp(f"names-{name}")
            self.opened[name] = open_engine(name, directory, self.request)
        return self.opened[name]


@pytest.fixture(scope="module")
def engines(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engines]:
    opened = Engines(request, tmp_path_factory)
    yield opened
    for engine in opened.opened.values():
        engine.close()


def _table(key: str = "id", text: str = "body", vector: str = "vec", kind: str = "cat") -> Any:
    return pa.table(
        {
            key: [1, 2, 3],
            text: ["disk full", "quiet garden", "disk error"],
            vector: pa.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], pa.list_(pa.float32(), 2)),
            kind: ["a", "b", "a"],
        }
    )


def _searches(
    table: str, key: str = "id", text: str = "body", vector: str = "vec", kind: str = "cat"
) -> list[tuple[SearchPlan, list[int]]]:
    """Each plan over the table and the keys it finds: a text search, a filtered nearest
    search and a filtered fusion of the two."""
    words = Bm25Search(table=table, column=text, query_text="disk")
    nearest = NearestNeighborSearch(table=table, column=vector, query_vector=[1.0, 0.0])
    only_a = Comparison(column=kind, operator="=", value="a")
    return [
        (SearchPlan(source=words, columns=[key, text], key_column=key), [1, 3]),
        (SearchPlan(source=nearest, columns=[key], filter=only_a, key_column=key), [1, 3]),
        (
            SearchPlan(
                source=ReciprocalRankFusion(branches=[words, nearest]),
                columns=[key, kind],
                filter=only_a,
                key_column=key,
            ),
            [1, 3],
        ),
    ]


def _refused_table(engine: str, table: str) -> str | None:
    if engine == "lancedb" and not all(c.isascii() and (c.isalnum() or c in "_-.") for c in table):
        return LANCEDB_TABLE
    return None


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("table", TABLES)
def test_a_table_name_is_quoted_or_refused_by_rule(engines: Engines, name: str, table: str) -> None:
    opened = engines[name]
    refusal = _refused_table(name, table)
    if refusal is not None:
        with pytest.raises(EngineError, match=re.escape(refusal)):
            opened.load_table(table, _table(), key_column="id", text_columns=["body"])
        with pytest.raises(EngineError):  # nothing was written
            opened.indexes(table)
        return
    opened.load_table(table, _table(), key_column="id", text_columns=["body"])
    for plan, keys in _searches(table):
        assert sorted(opened.search(plan).keys) == keys, plan


@pytest.mark.parametrize(
    ("name", "column", "role"),
    [
        (name, column, role)
        for name in ENGINES
        for column in COLUMNS
        for role in ("text", "key", "vector", "kind")
    ],
)
def test_a_column_name_is_quoted_or_refused_by_rule(
    engines: Engines, name: str, column: str, role: str
) -> None:
    opened = engines[name]
    names = {role: column}
    table = f"docs_{role}"
    data = _table(**names)
    if name == "lancedb" and "." in column:
        refusal = f"column {column!r}: LanceDB reads a dot in a column name as a path"
        with pytest.raises(EngineError, match=re.escape(refusal)):
            opened.load_table(table, data, key_column=names.get("key", "id"), text_columns=[])
        return
    opened.load_table(
        table, data, key_column=names.get("key", "id"), text_columns=[names.get("text", "body")]
    )
    for plan, keys in _searches(table, **names):
        assert sorted(opened.search(plan).keys) == keys, plan


@pytest.mark.parametrize("name", ENGINES)
def test_tables_whose_names_join_alike_keep_their_own_text_index(
    engines: Engines, name: str
) -> None:
    """``a`` with text column ``b__c`` and ``a__b`` with ``c``: the stores name each text
    index after its table and column, and two such names must not meet (DuckDB's once did,
    and a search of one table scored the other's rows)."""
    opened = engines[name]
    first = pa.table({"id": [1, 2], "b__c": ["apple pie", "banana split"]})
    second = pa.table({"id": [1, 2], "c": ["cherry tart", "durian"]})
    opened.load_table("a", first, key_column="id", text_columns=["b__c"])
    try:
        opened.load_table("a__b", second, key_column="id", text_columns=["c"])
    except EngineError as error:  # refused, naming what is in the way: never wrong rows
        assert "a__b" in str(error)
        return

    def keys(table: str, column: str, query: str) -> list[Any]:
        plan = SearchPlan(source=Bm25Search(table=table, column=column, query_text=query))
        return list(opened.search(plan).keys)

    assert keys("a", "b__c", "apple") == [1]
    assert keys("a", "b__c", "cherry") == []
    assert keys("a__b", "c", "cherry") == [1]
    assert keys("a__b", "c", "apple") == []


@pytest.mark.parametrize("name", ["sqlite", "duckdb"])
def test_a_rowid_column_beside_a_text_index_is_refused(engines: Engines, name: str) -> None:
    data = pa.table({"id": [1, 2], "rowid": [5, 5], "body": ["apple pie", "banana"]})
    with pytest.raises(EngineError, match="column 'rowid'"):
        engines[name].load_table("rowids", data, key_column="id", text_columns=["body"])
    with pytest.raises(EngineError):  # nothing was written
        engines[name].indexes("rowids")


def test_a_name_postgres_would_truncate_is_refused(engines: Engines) -> None:
    data = pa.table({"id": [1], "body": ["apple"]})
    long_table = "t" * 55  # its index name, <table>__body__fts, passes 63 bytes
    with pytest.raises(EngineError, match="longer than PostgreSQL's 63 bytes"):
        engines["postgres"].load_table(long_table, data, key_column="id", text_columns=["body"])
    with pytest.raises(EngineError):
        engines["postgres"].indexes(long_table)


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("sqlite", "docs__body__fts"),
        ("sqlite", "hdq_columns"),
        ("duckdb", "hdq_text.t4_main_4_docs_body"),
        ("duckdb", "hdq_columns"),
        ("postgres", "hdq_text.t6_public_4_docs_body"),
        ("postgres", "hdq_columns"),
    ],
)
def test_a_name_the_engine_keeps_for_itself_is_refused(
    engines: Engines, name: str, table: str
) -> None:
    """A user table under the name of the engine's catalog or text index tables would replace
    them (SQLite once took ``docs__body__fts`` and ``docs`` lost its text index)."""
    opened = engines[name]
    opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
    with pytest.raises(EngineError, match="choose another name"):
        opened.load_table(table, _table(), key_column="id", text_columns=["body"])
    for plan, keys in _searches("docs"):
        assert sorted(opened.search(plan).keys) == keys
