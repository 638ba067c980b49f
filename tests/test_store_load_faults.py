"""A store's load stopped at any step leaves the previous table (or no table) searchable as it
was, or the new one searchable whole: never a table without its text index or catalog rows.

A load runs in a process of its own and is killed (``SIGKILL``) before each statement that
changes the store (the engine's ``_execute``: a kill anywhere between two of them leaves what
a kill before the second leaves, the queries between them only reading and the store's own
commit being atomic), or on LanceDB, which runs no SQL, before each of its commits
(``create_table``, each ``create_index``); and once more after the load returned. A fresh
engine then reads the table by every door a search uses (its indexes, a BM25 branch, a
nearest branch, the key) and must find the old rows, the new rows or (for a table that did
not exist) no table; the next load over what the killed one left must succeed. The same loads
are also stopped by an exception at each of these steps, in the process: each engine must
roll back the same way, and its next load succeed.

A change of a document table's rows (``upsert_rows``, ``delete_rows``) is stopped the same
ways, before each statement (on PostgreSQL, each of psycopg's ``execute``, ``executemany``
and ``copy``: its changes write through the connection; on LanceDB, before each commit and
each change call).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.errors import EngineError

STORES = ("sqlite", "duckdb", "postgres", "lancedb")
OLD = [f"old fox {i}" for i in range(20)]
NEW = [f"new fox {i}" for i in range(30)]
TABLE = "docs"


def _data(bodies: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": list(range(len(bodies))),
            "body": bodies,
            "embedding": [[1.0, float(i), 0.5] for i in range(len(bodies))],
        }
    )


OPEN = {
    "sqlite": "from hotdata_retrieval.engines.sqlite import SqliteEngine as Engine",
    "duckdb": "from hotdata_retrieval.engines.duckdb import DuckdbEngine as Engine",
    "postgres": "from hotdata_retrieval.engines.postgres import PostgresEngine as Engine",
    "lancedb": "from hotdata_retrieval.engines.lancedb import LancedbEngine as Engine",
}

LOADER = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow as pa
    store, where, point = sys.argv[1], sys.argv[2], int(sys.argv[3])
    exec(sys.argv[4])  # imports the store's engine as Engine
    reached = 0

    def step():
        global reached
        if reached == point:
            os.kill(os.getpid(), signal.SIGKILL)
        reached += 1

    def before(owner, name):
        real = getattr(owner, name)
        def wrapped(*args, **kwargs):
            step()
            return real(*args, **kwargs)
        setattr(owner, name, wrapped)

    engine = Engine(where)
    if store == "lancedb":
        import lancedb.db, lancedb.table
        before(lancedb.db.LanceDBConnection, "create_table")
        before(lancedb.table.LanceTable, "create_index")
    else:
        before(Engine, "_execute")
    bodies = [f"new fox {i}" for i in range(30)]
    data = pa.table(
        {
            "id": list(range(30)),
            "body": bodies,
            "embedding": [[1.0, float(i), 0.5] for i in range(30)],
        }
    )
    engine.load_table("docs", data, text_columns=["body"])
    step()
    print("steps", reached, flush=True)
    """
)


def _engine(store: str, where: str) -> Any:
    if store == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(where)
    if store == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(where)
    if store == "postgres":
        from hotdata_retrieval.engines.postgres import PostgresEngine

        return PostgresEngine(where)
    from hotdata_retrieval.engines.lancedb import LancedbEngine

    return LancedbEngine(where)


def _state(engine: Any) -> str:
    """``"old"``, ``"new"`` or ``"absent"``: what a fresh engine finds, checked whole."""
    # Nothing a stopped load left (DuckDB's staged rows) is listed, searchable or readable.
    listed = getattr(engine, "searchable_tables", lambda: None)()
    try:
        indexes = engine.indexes(TABLE)
    except EngineError as error:
        assert "not found" in str(error), error
        assert listed in (None, ())
        return "absent"
    assert listed in (None, (engine.table_name(TABLE),))
    assert indexes.bm25_columns == ("body",), "the table lost its text index"
    assert [vector.column for vector in indexes.vectors] == ["embedding"]
    assert indexes.key_column == "id"
    text = engine.search(
        SearchPlan(
            source=Bm25Search(table=TABLE, column="body", query_text="fox"),
            columns=["id", "body"],
            limit=100,
        )
    )
    nearest = engine.search(
        SearchPlan(
            source=NearestNeighborSearch(
                table=TABLE, column="embedding", query_vector=[1.0, 0.0, 0.5], metric="l2"
            ),
            limit=100,
        )
    )
    bodies = [hit.columns["body"] for hit in sorted(text.hits, key=lambda hit: hit.key)]
    # l2 from (1, 0, 0.5) to (1, i, 0.5) is i squared: the rows in key order
    assert nearest.keys == list(range(len(bodies))), "the text index and the rows disagree"
    assert [hit.distance for hit in nearest.hits] == [float(i * i) for i in range(len(bodies))]
    if bodies == OLD:
        return "old"
    assert bodies == NEW, bodies
    return "new"


class _Place:
    """Where one store's database lives: a copy, for each stop, of a database made once with
    the old table or without it (a file, a directory, or a PostgreSQL database made from a
    template database)."""

    def __init__(self, store: str, root: Path, postgres_url: str | None) -> None:
        self.store = store
        self.root = root
        self.postgres_url = postgres_url
        self._count = 0
        self._templates: dict[bool, str] = {}

    def _new(self) -> str:
        self._count += 1
        if self.store == "postgres":
            return self._database(f"load_faults_{uuid.uuid4().hex[:12]}")
        suffix = {"sqlite": ".sqlite", "duckdb": ".duckdb", "lancedb": ""}[self.store]
        return str(self.root / f"db{self._count}{suffix}")

    def fresh(self, with_old: bool) -> str:
        if with_old not in self._templates:
            template = self._new()
            engine = _engine(self.store, template)
            try:
                if with_old:
                    engine.load_table(TABLE, _data(OLD), text_columns=["body"])
            finally:
                engine.close()
            self._templates[with_old] = template
        template = self._templates[with_old]
        if self.store == "postgres":
            return self._database(f"load_faults_{uuid.uuid4().hex[:12]}", template)
        where = self._new()
        if self.store == "lancedb":
            if Path(template).exists():
                shutil.copytree(template, where)
        elif Path(template).exists():
            shutil.copyfile(template, where)
        return where

    def _database(self, name: str, template: str | None = None) -> str:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        assert self.postgres_url is not None
        copied = f' TEMPLATE "{conninfo_to_dict(template)["dbname"]}"' if template else ""
        with psycopg.connect(self.postgres_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"{copied}')
        parts = conninfo_to_dict(self.postgres_url)
        parts["dbname"] = name
        return make_conninfo("", **parts)

    def remove(self, where: str) -> None:
        if self.store == "postgres":
            import psycopg
            from psycopg.conninfo import conninfo_to_dict

            name = conninfo_to_dict(where)["dbname"]
            with psycopg.connect(self.postgres_url or "", autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        elif self.store == "lancedb":
            shutil.rmtree(where, ignore_errors=True)
        else:
            for path in Path(where).parent.glob(Path(where).name + "*"):
                path.unlink()

    def remove_templates(self) -> None:
        for template in self._templates.values():
            self.remove(template)


@pytest.fixture(params=STORES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Place]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    made = _Place(request.param, tmp_path, url)
    yield made
    made.remove_templates()


def _load(store: str, where: str, point: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LOADER, store, where, str(point), OPEN[store]],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_load_killed_at_any_step_leaves_a_searchable_table(place: _Place) -> None:
    """Before: the old table; killed before step ``n``; after: the old table (the load not
    committed) or the new one, whole, and a next load succeeds. (A load of a new table runs
    the same steps less the drops; the exceptions below stop one at each.)"""
    where = place.fresh(with_old=True)
    whole = _load(place.store, where, 10**6)
    assert whole.returncode == 0, whole.stderr
    steps = int(whole.stdout.split()[-1])
    place.remove(where)
    seen = []
    for point in range(steps):
        where = place.fresh(with_old=True)
        # An engine open all along (a server's) answers after the kill as a fresh one does;
        # a DuckDB file is open in one process at a time.
        serving = None if place.store == "duckdb" else _engine(place.store, where)
        try:
            killed = _load(place.store, where, point)
            assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
            served = None if serving is None else _state(serving)
        finally:
            if serving is not None:
                serving.close()
        engine = _engine(place.store, where)
        try:
            state = _state(engine)
            assert state in ("old", "new"), (point, state)
            assert served in (None, state), (point, served, state)
            seen.append(state)
            # The next load writes over whatever the killed one left, and serves.
            engine.load_table(TABLE, _data(NEW), text_columns=["body"])
            assert _state(engine) == "new"
        finally:
            engine.close()
        place.remove(where)
    # The load commits once: every kill before it keeps the old state, every kill after it
    # finds the new one.
    committed = seen.index("new")
    assert seen == ["old"] * committed + ["new"] * (steps - committed), seen


class _Stop(Exception):
    """The exception injected at a step."""


def _stop_at(
    monkeypatch: pytest.MonkeyPatch, store: str, engine: Any, point: int
) -> Callable[[], int]:
    reached = [0]

    def step() -> None:
        reached[0] += 1
        if reached[0] == point + 1:  # once: the engine's clean-up runs unhindered
            raise _Stop(f"stopped at step {point}")

    def before(owner: Any, name: str) -> None:
        real = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            step()
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapped)

    if store == "lancedb":
        import lancedb.db
        import lancedb.table

        before(lancedb.db.LanceDBConnection, "create_table")
        before(lancedb.table.LanceTable, "create_index")
    else:
        before(type(engine), "_execute")
    return lambda: reached[0]


@pytest.mark.parametrize("replacing", [True, False], ids=["replace", "new"])
def test_a_load_that_fails_at_any_step_leaves_a_searchable_table(
    place: _Place, replacing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = "old" if replacing else "absent"
    where = place.fresh(replacing)
    engine = _engine(place.store, where)
    with monkeypatch.context() as patched:
        steps = _stop_at(patched, place.store, engine, 10**6)
        engine.load_table(TABLE, _data(NEW), text_columns=["body"])
        total = steps()
    engine.close()
    place.remove(where)
    assert total > 0
    for point in range(total):
        where = place.fresh(replacing)
        engine = _engine(place.store, where)
        try:
            with monkeypatch.context() as patched:
                _stop_at(patched, place.store, engine, point)
                with pytest.raises((_Stop, EngineError)):
                    engine.load_table(TABLE, _data(NEW), text_columns=["body"])
            # Every step is before the commit (its last statement), so nothing changed.
            assert _state(engine) == before, point
            engine.load_table(TABLE, _data(NEW), text_columns=["body"])
            assert _state(engine) == "new"
        finally:
            engine.close()
        place.remove(where)


# -- row changes: upsert_rows and delete_rows ------------------------------------------------
#
# The same stops for a change of a document table's rows: the old table holds OLD (keys 0-19);
# an upsert replaces keys 0-4 and adds keys 20-24, a delete removes keys 5-14. A fresh engine
# must then find the old rows or the new ones, whole: the rows a direct read returns, a BM25
# branch finding exactly the rows whose text holds its term with the scores a fresh load of
# those rows gives (a stale index returns a removed row, misses a new one or scores by old
# statistics), the nearest branch in step, and agent SQL (where it runs in a worker, on a copy
# of the store) returning the same rows. The change then runs again over what the stopped one
# left, and must give the new rows.

UPSERT = {key: f"new fox {key}" for key in [*range(5), *range(20, 25)]}
DELETE = list(range(5, 15))
OLD_ROWS = dict(enumerate(OLD))
CHANGED = {
    "upsert": {**OLD_ROWS, **UPSERT},
    "delete": {key: body for key, body in OLD_ROWS.items() if key not in DELETE},
}
"""Each change's new rows, key to body (the vector of key ``k`` is ``[1, k, 0.5]``)."""

CHANGER = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow as pa
    store, where, point, change = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5]
    exec(sys.argv[4])  # imports the store's engine as Engine
    reached = 0

    def step():
        global reached
        if reached == point:
            os.kill(os.getpid(), signal.SIGKILL)
        reached += 1

    def before(owner, name):
        real = getattr(owner, name)
        def wrapped(*args, **kwargs):
            step()
            return real(*args, **kwargs)
        setattr(owner, name, wrapped)

    engine = Engine(where)
    if store == "lancedb":
        import lancedb.db, lancedb.merge, lancedb.table
        before(lancedb.db.LanceDBConnection, "create_table")
        before(lancedb.merge.LanceMergeInsertBuilder, "execute")
        before(lancedb.table.LanceTable, "delete")
        before(lancedb.table.LanceTable, "create_index")
    elif store == "postgres":
        import psycopg
        for name in ("execute", "executemany", "copy"):
            before(psycopg.Cursor, name)
    else:
        before(Engine, "_execute")
    if change == "upsert":
        keys = [*range(5), *range(20, 25)]
        rows = pa.table(
            {
                "id": keys,
                "body": [f"new fox {key}" for key in keys],
                "embedding": [[1.0, float(key), 0.5] for key in keys],
            }
        )
        engine.upsert_rows("docs", rows)
    else:
        engine.delete_rows("docs", list(range(5, 15)))
    step()
    print("steps", reached, flush=True)
    """
)


def _change(engine: Any, change: str) -> None:
    if change == "upsert":
        keys = list(UPSERT)
        engine.upsert_rows(
            TABLE,
            pa.table(
                {
                    "id": keys,
                    "body": [UPSERT[key] for key in keys],
                    "embedding": [[1.0, float(key), 0.5] for key in keys],
                }
            ),
        )
    else:
        engine.delete_rows(TABLE, DELETE)


def _bm25(engine: Any, term: str) -> dict[int, float]:
    found = engine.search(
        SearchPlan(
            source=Bm25Search(table=TABLE, column="body", query_text=term),
            columns=["id", "body"],
            limit=100,
        )
    )
    return {hit.key: hit.score for hit in found.hits}


TERMS = ("fox", "new", "old", "3")
"""The terms searched: in every row, in the new rows only, in the old rows only, in a few."""


def _scores(place: _Place, rows: dict[int, str]) -> dict[str, dict[int, float]]:
    """Each term's BM25 scores by key on a fresh load of ``rows`` into the same store."""
    where = place.fresh(with_old=False)
    engine = _engine(place.store, where)
    try:
        keys = sorted(rows)
        engine.load_table(
            TABLE,
            pa.table(
                {
                    "id": keys,
                    "body": [rows[key] for key in keys],
                    "embedding": [[1.0, float(key), 0.5] for key in keys],
                }
            ),
            text_columns=["body"],
        )
        return {term: _bm25(engine, term) for term in TERMS}
    finally:
        engine.close()
        place.remove(where)


def _changed_state(
    engine: Any, store: str, change: str, reference: dict[str, dict[str, dict[int, float]]]
) -> str:
    """``"old"`` or ``"new"``: the rows a fresh engine finds, every door checked against them."""
    listed = getattr(engine, "searchable_tables", lambda: None)()
    assert listed in (None, (engine.table_name(TABLE),))
    indexes = engine.indexes(TABLE)
    assert indexes.bm25_columns == ("body",), "the table lost its text index"
    assert [vector.column for vector in indexes.vectors] == ["embedding"]
    assert indexes.key_column == "id"
    read = engine.read_table(TABLE, ["id", "body"]).to_pylist()
    rows = {row["id"]: row["body"] for row in read}
    assert len(rows) == len(read), "a key came back twice"
    state = "old" if rows == OLD_ROWS else "new"
    assert rows == (OLD_ROWS if state == "old" else CHANGED[change]), rows
    for term in TERMS:
        scores = _bm25(engine, term)
        # exactly the rows whose text holds the term, scored as a fresh load of them is
        assert set(scores) == {key for key, body in rows.items() if term in body.split()}, term
        assert scores == pytest.approx(reference[state][term], rel=1e-5), term
    nearest = engine.search(
        SearchPlan(
            source=NearestNeighborSearch(
                table=TABLE, column="embedding", query_vector=[1.0, 0.0, 0.5], metric="l2"
            ),
            limit=100,
        )
    )
    assert nearest.keys == sorted(rows), "the nearest branch and the rows disagree"
    assert [hit.distance for hit in nearest.hits] == [float(key * key) for key in sorted(rows)]
    if store in ("duckdb", "sqlite"):  # agent SQL reads a copy, in its worker
        agent = [
            row
            for batch in engine.stream_sql("SELECT id, body FROM docs ORDER BY id")
            for row in batch.to_pylist()
        ]
        assert agent == sorted(read, key=lambda row: row["id"]), "agent SQL reads other rows"
    return state


def _run_change(
    store: str, where: str, point: int, change: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHANGER, store, where, str(point), OPEN[store], change],
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("change", ["upsert", "delete"])
def test_a_row_change_killed_at_any_step_leaves_the_old_rows_or_the_new(
    place: _Place, change: str
) -> None:
    """Before: OLD; killed before step ``n`` of an upsert or a delete; after: OLD or the
    changed rows, each searchable as a fresh load of them, and the change runs again."""
    reference = {
        "old": _scores(place, OLD_ROWS),
        "new": _scores(place, CHANGED[change]),
    }
    where = place.fresh(with_old=True)
    whole = _run_change(place.store, where, 10**6, change)
    assert whole.returncode == 0, whole.stderr
    steps = int(whole.stdout.split()[-1])
    place.remove(where)
    seen = []
    for point in range(steps):
        where = place.fresh(with_old=True)
        killed = _run_change(place.store, where, point, change)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        engine = _engine(place.store, where)
        try:
            state = _changed_state(engine, place.store, change, reference)
            seen.append(state)
            _change(engine, change)
            assert _changed_state(engine, place.store, change, reference) == "new", point
        finally:
            engine.close()
        place.remove(where)
    committed = seen.index("new")
    assert seen == ["old"] * committed + ["new"] * (steps - committed), seen


def _change_hooks(store: str, engine: Any) -> list[tuple[Any, str]]:
    """The calls a row change is stopped before, as ``CHANGER`` kills it."""
    if store == "lancedb":
        import lancedb.db
        import lancedb.merge
        import lancedb.table

        return [
            (lancedb.db.LanceDBConnection, "create_table"),
            (lancedb.merge.LanceMergeInsertBuilder, "execute"),
            (lancedb.table.LanceTable, "delete"),
            (lancedb.table.LanceTable, "create_index"),
        ]
    if store == "postgres":
        import psycopg

        return [(psycopg.Cursor, name) for name in ("execute", "executemany", "copy")]
    return [(type(engine), "_execute")]


@pytest.mark.parametrize("change", ["upsert", "delete"])
def test_a_row_change_that_fails_at_any_step_leaves_the_old_rows(
    place: _Place, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped by an exception before any of its steps, a change rolls back whole (DuckDB's
    staged rows dropped): the old rows, searchable as they were, and the same change then
    succeeds."""
    reference = {
        "old": _scores(place, OLD_ROWS),
        "new": _scores(place, CHANGED[change]),
    }
    counted = [0]

    def hooked(patched: pytest.MonkeyPatch, engine: Any, point: int) -> None:
        for owner, name in _change_hooks(place.store, engine):
            real = getattr(owner, name)

            def wrapped(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                counted[0] += 1
                if counted[0] == point + 1:  # once: the engine's clean-up runs unhindered
                    raise _Stop(f"stopped at step {point}")
                return _real(*args, **kwargs)

            patched.setattr(owner, name, wrapped)

    where = place.fresh(with_old=True)
    engine = _engine(place.store, where)
    with monkeypatch.context() as patched:
        hooked(patched, engine, 10**6)
        _change(engine, change)
    total = counted[0]
    engine.close()
    place.remove(where)
    assert total > 0
    for point in range(total):
        counted[0] = 0
        where = place.fresh(with_old=True)
        engine = _engine(place.store, where)
        try:
            with monkeypatch.context() as patched:
                hooked(patched, engine, point)
                with pytest.raises((_Stop, EngineError)):
                    _change(engine, change)
            state = _changed_state(engine, place.store, change, reference)
            assert state == "old", point
            _change(engine, change)
            assert _changed_state(engine, place.store, change, reference) == "new", point
        finally:
            engine.close()
        place.remove(where)
