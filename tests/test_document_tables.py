"""Rows changed and read by key (``upsert_rows``, ``delete_rows``, ``read_table``,
``read_rows``, ``tables``) on every engine a document table runs on.

A sequence of changes is applied through the engine and to a Python model of the table (a
dict by key, the independent reference); after it the engine's rows equal the model's, each
delete counted the rows that existed, and the engine's BM25 ranking (keys and scores) equals
the ranking of the same rows loaded at once into a fresh table of the same engine: a text
index kept in step by the changes answers as one built from scratch. Bad rows are typed
errors and change nothing. Store-specific hazards have their own tests: DuckDB renumbers rows
at a checkpoint (its index is keyed by rowid), PostgreSQL keeps BM25 statistics of its own.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import TableLoad
from hotdata_retrieval.errors import EngineError, HotdataRetrievalError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

WORDS = ["disk", "full", "error", "upgrade", "login", "slow", "page", "refund", "crash", "sync"]


def _row(key: str, position: int) -> dict[str, Any]:
    words = [WORDS[(position * 3 + i) % len(WORDS)] for i in range(1 + position % 4)]
    return {
        "id": key,
        "body": " ".join(words),
        "lang": "en" if position % 2 else "fr",
        "embedding": [1.0, float(position % 7), float(position % 3)],
    }


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([row["id"] for row in rows], pa.string()),
            "body": pa.array([row["body"] for row in rows], pa.string()),
            "lang": pa.array([row["lang"] for row in rows], pa.string()),
            "embedding": pa.array([row["embedding"] for row in rows], pa.list_(pa.float32())),
        }
    )


def _create(engine: Any, name: str, rows: list[dict[str, Any]]) -> None:
    data = _table(rows)
    load = TableLoad(name=name, data=data, key_column="id", text_columns=("body",))
    engine.upsert_rows(name, data, create=load)


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    opened = open_document_engine(
        request.param, tmp_path_factory.mktemp(f"rows-{request.param}"), request
    )
    opened.kind = request.param
    yield opened
    opened.close()


def _ranking(engine: Any, table: str, query: str) -> list[tuple[str, float]]:
    plan = SearchPlan(
        source=Bm25Search(table=table, column="body", query_text=query),
        limit=50,
        key_column="id",
    )
    return [(str(hit.key), float(hit.score)) for hit in engine.search(plan)]


def _normalized(table: pa.Table) -> list[dict[str, Any]]:
    rows = []
    for row in table.to_pylist():
        row = dict(row)
        row["embedding"] = [round(float(x), 6) for x in row["embedding"]]
        rows.append(row)
    return sorted(rows, key=lambda row: row["id"])


def test_changes_by_key_keep_the_rows_and_the_text_index_as_a_fresh_load(engine: Any) -> None:
    name = fresh_table("rows")
    model = {row["id"]: row for row in (_row(f"k{i}", i) for i in range(12))}
    _create(engine, name, list(model.values()))
    assert name in engine.tables
    steps: list[tuple[str, Any]] = [
        ("upsert", [_row("k3", 40), _row("k20", 41), _row("k21", 42)]),
        ("delete", ["k0", "k7", "missing", "k7"]),
        ("upsert", [_row("k20", 43), _row("k5", 44)]),
        ("delete", ["k21", "nothing"]),
        ("upsert", [_row(f"n{i}", 50 + i) for i in range(5)]),
    ]
    for kind, payload in steps:
        if kind == "upsert":
            engine.upsert_rows(name, _table(payload))
            model.update((row["id"], row) for row in payload)
        else:
            existing = [key for key in dict.fromkeys(payload) if key in model]
            assert engine.delete_rows(name, payload) == len(existing)
            for key in existing:
                del model[key]
    expected = [
        {**row, "embedding": [round(x, 6) for x in row["embedding"]]}
        for row in sorted(model.values(), key=lambda row: row["id"])
    ]
    assert _normalized(engine.read_table(name, ["id", "body", "lang", "embedding"])) == expected
    some = engine.read_rows(name, ["k5", "gone", "n2", "k0"], ["id", "body"]).to_pylist()
    assert sorted(some, key=lambda row: row["id"]) == [
        {"id": "k5", "body": model["k5"]["body"]},
        {"id": "n2", "body": model["n2"]["body"]},
    ]
    fresh = fresh_table("fresh")
    _create(engine, fresh, sorted(model.values(), key=lambda row: row["id"]))
    for query in ("disk", "error upgrade", "refund crash sync", "login page"):
        changed, rebuilt = _ranking(engine, name, query), _ranking(engine, fresh, query)
        assert [key for key, _ in changed] == [key for key, _ in rebuilt], query
        assert [score for _, score in changed] == pytest.approx(
            [score for _, score in rebuilt], rel=1e-6
        ), query
        holding = {
            key for key, row in model.items() if set(query.split()) & set(row["body"].split())
        }
        assert {key for key, _ in changed} == holding, query


def test_nearest_neighbours_follow_the_changes(engine: Any) -> None:
    name = fresh_table("near")
    _create(engine, name, [_row(f"k{i}", i) for i in range(6)])
    engine.upsert_rows(name, _table([{**_row("k1", 1), "embedding": [0.0, 0.0, 9.0]}]))
    engine.delete_rows(name, ["k2"])
    plan = SearchPlan(
        source=NearestNeighborSearch(table=name, column="embedding", query_vector=[0.0, 0.0, 1.0]),
        limit=2,
        key_column="id",
    )
    hits = list(engine.search(plan))
    assert hits[0].key == "k1"
    assert hits[0].distance == pytest.approx(0.0, abs=1e-6)
    every = list(engine.search(attrs.evolve(plan, limit=10)))
    assert sorted(hit.key for hit in every) == ["k0", "k1", "k3", "k4", "k5"]


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (_table([_row("x", 1)]).append_column("colour", pa.array(["red"])), "'colour'"),
        (_table([_row("x", 1), _row("x", 2)]), "twice|not unique"),
        (_table([_row("x", 1)]).set_column(0, "id", pa.array([None], pa.string())), "NULL"),
        (_table([_row("x", 1)]).drop_columns(["id"]), "'id'"),
        (
            _table([_row("x", 1)]).set_column(
                3, "embedding", pa.array([[1.0, 2.0]], pa.list_(pa.float32()))
            ),
            "'embedding'|dimensions",
        ),
        (
            _table([_row("x", 1)]).append_column("body", pa.array(["other words"])),
            "column 'body' appears twice in the rows",
        ),
        (
            _table([_row("x", 1)]).append_column("Lang", pa.array(["de"])),
            "columns 'lang' and 'Lang' differ only in case",
        ),
        ([_row("x", 1)], r"rows must be an Arrow table \(pyarrow.Table or RecordBatch\), not list"),
    ],
    ids=[
        "unknown column",
        "repeated key",
        "null key",
        "no key",
        "vector length",
        "repeated column",
        "columns differing in case",
        "rows no Arrow table",
    ],
)
def test_rows_a_table_cannot_take_are_refused_and_change_nothing(
    engine: Any, rows: pa.Table, words: str
) -> None:
    name = fresh_table("refused")
    _create(engine, name, [_row(f"k{i}", i) for i in range(3)])
    before = _normalized(engine.read_table(name, ["id", "body", "lang", "embedding"]))
    with pytest.raises(HotdataRetrievalError, match=words):
        engine.upsert_rows(name, rows)
    assert _normalized(engine.read_table(name, ["id", "body", "lang", "embedding"])) == before


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        pytest.param("k1", "keys must be a list of keys, not str", id="text, no list"),
        pytest.param(["k1", None], "key None cannot be a value of key column 'id'", id="null"),
        pytest.param(["k1", 1], "key 1 cannot be a value of key column 'id'", id="number"),
        pytest.param([True], "key True cannot be a value of key column 'id'", id="boolean"),
        pytest.param([float("nan")], "NaN equals no key", id="nan"),
    ],
)
def test_keys_the_key_column_cannot_hold_are_refused_by_the_one_check(
    engine: Any, keys: Any, words: str
) -> None:
    name = fresh_table("keys")
    _create(engine, name, [_row(f"k{i}", i) for i in range(3)])
    with pytest.raises(EngineError, match=words):
        engine.read_rows(name, keys)
    with pytest.raises(EngineError, match=words):
        engine.delete_rows(name, keys)
    assert sorted(engine.read_table(name, ["id"]).column("id").to_pylist()) == ["k0", "k1", "k2"]


def test_a_missing_table_is_made_only_with_create(engine: Any) -> None:
    name = fresh_table("missing")
    with pytest.raises(HotdataRetrievalError, match=name):
        engine.upsert_rows(name, _table([_row("a", 1)]))
    assert name not in engine.tables


@pytest.mark.parametrize("create", [True, "docs", {"key_column": "id"}], ids=type)
def test_a_create_that_is_no_table_load_is_refused_naming_its_type(
    engine: Any, create: Any
) -> None:
    name = fresh_table("bad_create")
    with pytest.raises(HotdataRetrievalError, match=f"not {type(create).__name__}$"):
        engine.upsert_rows(name, _table([_row("a", 1)]), create=create)
    assert name not in engine.tables


def test_duckdb_text_search_holds_after_changes_checkpoints_and_a_reopen(tmp_path: Any) -> None:
    # DuckDB's fts index is keyed by rowid, and DuckDB renumbers the rows of a row group
    # with deleted rows when a checkpoint follows an insert (closing the database is one):
    # the index must be built from rowids that no later checkpoint changes.
    from hotdata_retrieval.engines.duckdb import DuckdbEngine

    path = tmp_path / "rows.duckdb"
    model = {row["id"]: row for row in (_row(f"k{i:02d}", i) for i in range(20))}
    with DuckdbEngine(path) as engine:
        _create(engine, "docs", list(model.values()))
    for step in range(3):  # each engine closed, so checkpointed, between the changes
        with DuckdbEngine(path) as engine:
            gone = [f"k{step * 5 + i:02d}" for i in range(3)]
            assert engine.delete_rows("docs", gone) == 3
            for key in gone:
                del model[key]
        with DuckdbEngine(path) as engine:
            fresh = [_row(f"s{step}{i}", 30 + step * 3 + i) for i in range(3)]
            engine.upsert_rows("docs", _table(fresh))
            model.update((row["id"], row) for row in fresh)
    with DuckdbEngine(path) as engine:
        for word in WORDS:
            found = {key for key, _ in _ranking(engine, "docs", word)}
            assert found == {key for key, row in model.items() if word in row["body"].split()}


def test_postgres_statistics_after_changes_equal_a_fresh_loads(postgres_url: str) -> None:
    # PostgreSQL's BM25 reads a statistics table of its own (each term's document count,
    # the rows and their mean length), which the changes keep: it equals a fresh load's.
    from hotdata_retrieval.analysis import analyze_text
    from hotdata_retrieval.compile.postgres import postings_table, statistics_table
    from hotdata_retrieval.compile.statements import select_rows
    from hotdata_retrieval.engines.postgres import PostgresEngine
    from hotdata_retrieval.plan.names import TableName

    changed, fresh = fresh_table("stats"), fresh_table("stats")
    model = {row["id"]: row for row in (_row(f"k{i}", i) for i in range(15))}
    with PostgresEngine(postgres_url) as engine:
        _create(engine, changed, list(model.values()))
        for step in range(4):
            engine.delete_rows(changed, [f"k{step * 3}", f"k{step * 3 + 1}"])
            model.pop(f"k{step * 3}", None)
            model.pop(f"k{step * 3 + 1}", None)
            rows = [_row(f"k{step * 3 + 2}", 60 + step), _row(f"x{step}", 70 + step)]
            engine.upsert_rows(changed, _table(rows))
            model.update((row["id"], row) for row in rows)
        _create(engine, fresh, list(model.values()))

        def statistics(table: str) -> list[tuple[Any, ...]]:
            node = statistics_table(TableName.parse(table), "body")
            columns = ["term", "documents", "average_length"]
            return sorted(engine._query(select_rows(engine.profile, node, columns))[1])

        def postings(table: str) -> list[tuple[Any, ...]]:
            # each row's postings, named by the row's key (row numbers differ between loads)
            node = postings_table(TableName.parse(table), "body")
            rows = engine._query(
                select_rows(engine.profile, node, ["term", "row", "frequency", "length"])
            )[1]
            base = engine.store_table(TableName.parse(table))
            keys = dict(engine._query(select_rows(engine.profile, base, ["hdq__row", "id"]))[1])
            return sorted(
                (keys[row], term, frequency, length) for term, row, frequency, length in rows
            )

        assert statistics(changed) == statistics(fresh)
        assert postings(changed) == postings(fresh)
        analysed = {key: analyze_text(row["body"]) for key, row in model.items()}
        assert postings(fresh) == sorted(
            (key, term, terms.count(term), len(terms))
            for key, terms in analysed.items()
            for term in set(terms)
        )


def _misspelled_table_doors(engine: Any, name: str) -> dict[str, Any]:
    """The doors that read a table by name (the Hotdata engine's ``read_table`` is a SQL
    query the server plans: the engine names the table when the server refuses it)."""
    plan = SearchPlan(source=Bm25Search(table=name, column="body", query_text="disk"))
    return {
        "search": lambda: engine.search(plan),
        "indexes": lambda: engine.indexes(name),
        "read_table": lambda: engine.read_table(name),
    }


def test_a_missing_table_is_named_beside_the_tables_there_are(engine: Any) -> None:
    """A mistyped table name is an error listing the tables the engine holds, so the right
    name is seen beside the wrong one; the reference is the engine's own ``tables``."""
    name = fresh_table("tickets")
    _create(engine, name, [_row("a", 1)])
    held = sorted(engine.tables)
    assert name in held
    for door, call in _misspelled_table_doors(engine, name[1:]).items():
        with pytest.raises(HotdataRetrievalError) as raised:
            call()
        message = str(raised.value)
        assert f"{name[1:]}' not found" in message, (door, message)
        listed = message.split("tables: ", 1)[1].split(" (and ")[0].split(", ")
        assert listed == held[:20], (door, message)


@pytest.mark.parametrize(
    "keys", [["a", "b", "a", "a"], ["a", None, "b", None]], ids=["repeated", "null"]
)
@pytest.mark.parametrize("door", ["create", "upsert"])
def test_keys_that_name_no_single_row_are_named_with_what_to_do(
    engine: Any, keys: list[str | None], door: str
) -> None:
    """A key column holding a value twice, or NULL, is refused on every engine with the
    same words: the value and how often it appears (or how many NULLs), counted here
    independently, and what to do. An upsert changes no row."""
    rows = [{**_row("x", position), "id": key} for position, key in enumerate(keys)]
    nulls = keys.count(None)
    if nulls:
        why = f"has {nulls} NULL values"
    else:
        [(value, count)] = [(k, n) for k, n in Counter(keys).items() if n > 1]
        why = f"is not unique: {value!r} appears {count} times"
    name = fresh_table("keys")
    if door == "upsert":
        _create(engine, name, [_row("first", 0)])
    with pytest.raises(HotdataRetrievalError) as raised:
        if door == "create":
            _create(engine, name, rows)
        else:
            engine.upsert_rows(name, _table(rows))
    message = str(raised.value)
    assert f"key column 'id' {why}; give each row a key of its own, not NULL" in message
    assert message.endswith("or name another key column") == (door == "create"), message
    if door == "upsert":
        assert [row["id"] for row in _normalized(engine.read_table(name))] == ["first"]
    else:  # nothing is left behind: no table, as before the call
        assert name not in engine.tables


@pytest.mark.parametrize("door", ["create", "upsert"])
def test_a_vector_past_float32_is_named_before_anything_is_written(engine: Any, door: str) -> None:
    """A component beyond Float32's largest finite value (``numpy.finfo``), which every engine
    would store as an infinity, is refused naming Float32's range on every engine, the
    Hotdata engine's managed tables too (before, its server was sent the rows and named the
    value NaN or infinite): an upsert changes no row, a create leaves no table."""
    largest = float(np.finfo(np.float32).max)
    rows = [_row("a", 0), {**_row("b", 1), "embedding": [1.0, largest * 2, 0.0]}]
    data = pa.table({**_table(rows).to_pydict(), "embedding": [r["embedding"] for r in rows]})
    name = fresh_table("far")
    if door == "upsert":
        _create(engine, name, [_row("first", 0)])
    with pytest.raises(HotdataRetrievalError) as raised:
        if door == "create":
            load = TableLoad(name=name, data=data, key_column="id", text_columns=("body",))
            engine.upsert_rows(name, data, create=load)
        else:
            engine.upsert_rows(name, data)
    assert "beyond Float32's range" in str(raised.value)
    if door == "upsert":
        assert [row["id"] for row in _normalized(engine.read_table(name))] == ["first"]
    else:
        assert name not in engine.tables
