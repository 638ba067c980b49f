"""Agent SQL on SQLite and DuckDB runs in a worker process, so a crash or a runaway statement
cannot reach the caller, and what it may call is an allow-list.

Each attack that once took down or outlasted the server through DuckDB's agent SQL is run
again: a JSON text nested 100,000 deep that crashed the process (``json_structure``), a
``replace`` and a ``regexp_replace`` that grew a text past its memory limit and went on after
the call returned, a 120-character ``GLOB`` that held the SQL tool for minutes, and a
``concat`` of repeats. Each ends at its limit with a one-line error, the worker that ran it is
no longer running it, and the next call answers. SQLite's analogues hold too. Then the
allow-lists, the snapshot DuckDB's worker reads, and the MCP server, in process and as ``hdq
mcp --engine duckdb``, answering after its worker dies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from hotdata_retrieval.engines._agent_sql import SNAPSHOT_PREFIX, snapshot_directory
from hotdata_retrieval.engines._duckdb_agent import ALLOWED_FUNCTIONS as DUCKDB_FUNCTIONS
from hotdata_retrieval.engines._sqlite_agent import ALLOWED_FUNCTIONS as SQLITE_FUNCTIONS
from hotdata_retrieval.engines._sqlite_agent import connect as sqlite_connect
from hotdata_retrieval.engines.duckdb import DuckdbEngine, fts_extension_path
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.engines.sqlite import SqliteEngine
from hotdata_retrieval.errors import RefusedStatementError

BODIES = ["red fox jumps", "blue fox sleeps", "green sea waves"]
SECRET = "hdq-worker-secret-41d7"
MEMORY = SqlLimits(memory_bytes=64 * 1024 * 1024)
"""A small memory limit, under the default time limit: a worker stopped by the previous
statement starts again on the next call's clock, well within it."""

CRASH = "SELECT json_structure(repeat('[', 100000) || repeat(']', 100000)) AS s"
TENFOLD = "'x', 'xxxxxxxxxx'"
MILLION_X = "repeat('x', 1000000)"
SQLITE_MILLION_X = "printf('%.*c', 1000000, 'x')"
GLOBAL = "'g'"


def _nested(function: str, inner: str, times: int, *extra: str) -> str:
    """``function(function(inner, 'x', 'xxxxxxxxxx'), ...)``: each level ten times longer."""
    text = inner
    for _ in range(times):
        text = f"{function}({text}, {TENFOLD}{''.join(', ' + part for part in extra)})"
    return text


def _load(engine: Any) -> None:
    engine.load_table("docs", pa.table({"id": [1, 2, 3], "body": BODIES}), text_columns=["body"])
    engine._execute("CREATE TABLE secret_notes (note TEXT)")
    engine._execute(f"INSERT INTO secret_notes VALUES ('{SECRET}')")


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DuckdbEngine]:
    engine = DuckdbEngine(tmp_path_factory.mktemp("duck") / "store.duckdb")
    _load(engine)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def lite() -> Iterator[SqliteEngine]:
    engine = SqliteEngine()
    _load(engine)
    yield engine
    engine.close()


def _rows(engine: Any, text: str, limits: SqlLimits | None = None) -> list[dict[str, Any]]:
    return [row for batch in engine.stream_sql(text, limits=limits) for row in batch.to_pylist()]


def _state(pid: int) -> str | None:
    """The process's state letter from ``/proc`` (``None``: no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[0]


def _attack(engine: Any, text: str, limits: SqlLimits) -> EngineError:
    """Run ``text`` on a warm worker; return its error, having checked that it is one line and
    that nothing runs it after the call returned: the next call answers, either from the same
    worker (which answers one statement at a time, so it has ended the attack) or from a new
    one, the old one being gone."""
    assert _rows(engine, "SELECT 1 AS one") == [{"one": 1}]
    pid = engine._agent_sql.worker.pid
    with pytest.raises(EngineError) as caught:
        _rows(engine, text, limits)
    assert "\n" not in str(caught.value)
    assert _rows(engine, "SELECT count(*) AS n FROM docs") == [{"n": 3}]
    if engine._agent_sql.worker.pid != pid:
        assert _state(pid) in (None, "Z"), "the statement runs on after its call returned"
    return caught.value


# -- DuckDB: each attack ends at its bound, and the next call answers --------------------------


def test_duckdb_a_statement_that_crashes_ends_only_the_worker(duck: DuckdbEngine) -> None:
    pid_before = os.getpid()
    error = _attack(duck, CRASH, SqlLimits())
    assert "stopped the SQL worker process" in str(error)
    assert not isinstance(error, SqlLimitError)
    assert os.getpid() == pid_before


def test_duckdb_a_replace_blow_up_stops_at_the_memory_limit(duck: DuckdbEngine) -> None:
    text = f"SELECT length({_nested('replace', MILLION_X, 3)}) AS n"
    error = _attack(duck, text, MEMORY)
    assert isinstance(error, SqlLimitError) and error.limit == "memory_bytes"


def test_duckdb_a_regexp_replace_blow_up_stops_at_the_memory_limit(duck: DuckdbEngine) -> None:
    text = f"SELECT length({_nested('regexp_replace', MILLION_X, 3, GLOBAL)}) AS n"
    error = _attack(duck, text, MEMORY)
    assert isinstance(error, SqlLimitError) and error.limit == "memory_bytes"


def test_duckdb_a_backtracking_glob_stops_at_the_time_limit(duck: DuckdbEngine) -> None:
    pattern = "*a" * 60 + "b"
    assert len(pattern) > 120
    text = f"SELECT repeat('a', 100) GLOB '{pattern}' AS g"
    error = _attack(duck, text, SqlLimits(timeout_seconds=1))
    assert isinstance(error, SqlLimitError) and error.limit == "timeout_seconds"


def test_duckdb_a_concat_of_repeats_stops_at_the_memory_limit(duck: DuckdbEngine) -> None:
    repeats = ", ".join([MILLION_X] * 300)
    text = f"SELECT length(concat({repeats})) AS n FROM range(100)"
    error = _attack(duck, text, MEMORY)
    assert isinstance(error, SqlLimitError) and error.limit == "memory_bytes"


# -- SQLite: the same shapes --------------------------------------------------------------


def test_sqlite_json_nested_beyond_its_depth_is_an_error(lite: SqliteEngine) -> None:
    text = "SELECT json(printf('%.*c', 100000, '[') || printf('%.*c', 100000, ']')) AS s"
    assert "malformed JSON" in str(_attack(lite, text, SqlLimits()))


def test_sqlite_a_replace_blow_up_stops_at_the_memory_limit(lite: SqliteEngine) -> None:
    text = f"SELECT length({_nested('replace', SQLITE_MILLION_X, 3)}) AS n"
    error = _attack(lite, text, MEMORY)
    assert isinstance(error, SqlLimitError) and error.limit == "memory_bytes"


def test_sqlite_a_concat_of_repeats_stops_at_the_memory_limit(lite: SqliteEngine) -> None:
    repeats = ", ".join([SQLITE_MILLION_X] * 300)
    error = _attack(lite, f"SELECT length(concat({repeats})) AS n", MEMORY)
    assert isinstance(error, SqlLimitError) and error.limit == "memory_bytes"


def test_sqlite_a_long_glob_answers(lite: SqliteEngine) -> None:
    # SQLite's matcher does not backtrack without bound: the 120-character pattern answers.
    pattern = "*a" * 60 + "b"
    text = f"SELECT printf('%.*c', 100000, 'a') GLOB '{pattern}' AS g"
    assert _rows(lite, text, SqlLimits(timeout_seconds=10)) == [{"g": 0}]


def test_sqlite_has_no_regexp_replace(lite: SqliteEngine) -> None:
    with pytest.raises(EngineError, match="no such function"):
        _rows(lite, "SELECT regexp_replace(body, 'x', 'y') FROM docs")


# -- the allow-lists -----------------------------------------------------------------------


def test_every_allowed_duckdb_function_exists_and_others_are_refused(duck: DuckdbEngine) -> None:
    probe = duckdb.connect()
    probe.execute(f"LOAD '{fts_extension_path()}'")
    listed = probe.execute("SELECT function_name FROM duckdb_functions()").fetchall()
    names = {row[0].lower() for row in listed}
    assert names >= DUCKDB_FUNCTIONS, sorted(DUCKDB_FUNCTIONS - names)
    unlisted = sorted(names - DUCKDB_FUNCTIONS)
    assert {"version", "current_setting", "sleep_ms", "list_aggregate", "nextval"} <= set(unlisted)
    for call in (
        "version()",
        "current_database()",
        "current_query()",
        "sleep_ms(10)",
        "list_aggregate([1, 2], 'sum')",
        "json_serialize_sql('SELECT 1')",
        "getvariable('x')",
        "pg_sleep(1)",
        "txid_current()",
        "system.main.version()",
        "fts_main_other.match_bm25(1, 'x')",
    ):
        with pytest.raises(RefusedStatementError, match="is not allowed here"):
            _rows(duck, f"SELECT {call} AS x")


def test_every_allowed_sqlite_function_exists_and_others_are_refused(lite: SqliteEngine) -> None:
    probe = sqlite_connect(":memory:")
    listed = probe.execute("SELECT name FROM pragma_function_list").fetchall()
    names = {row[0].lower() for row in listed}
    assert names >= SQLITE_FUNCTIONS, sorted(SQLITE_FUNCTIONS - names)
    for call in ("sqlite_version()", "changes()", "vec_version()", "sqlite_source_id()"):
        with pytest.raises(RefusedStatementError, match="is not allowed here"):
            _rows(lite, f"SELECT {call} AS x")
    rows = _rows(lite, "SELECT upper(body) AS b, vec_length(vec_f32('[1, 2]')) AS n FROM docs")
    assert rows[0] == {"b": BODIES[0].upper(), "n": 2}


def test_duckdb_agent_sql_runs_the_usual_queries(duck: DuckdbEngine) -> None:
    """What an agent writes to read a table still runs: aggregates, windows, patterns, casts,
    dates, lists, JSON, the full-text index and the catalog."""
    index = "fts_hdq_text_t4_main_4_docs_body"
    queries = {
        "SELECT count(*) AS n, sum(id) AS s, string_agg(body, '|' ORDER BY id) AS t FROM docs": [
            {"n": 3, "s": 6, "t": "|".join(BODIES)}
        ],
        "SELECT id, row_number() OVER (ORDER BY id DESC) AS r FROM docs ORDER BY id": [
            {"id": 1, "r": 3},
            {"id": 2, "r": 2},
            {"id": 3, "r": 1},
        ],
        "SELECT count(*) FILTER (WHERE body LIKE '%fox%' AND body GLOB '*s*') AS n FROM docs": [
            {"n": 2}
        ],
        "SELECT CAST(id AS VARCHAR) || ':' || upper(split_part(body, ' ', 1)) AS x FROM docs "
        "WHERE regexp_matches(body, '^g')": [{"x": "3:GREEN"}],
        "SELECT year(DATE '2024-02-29' + INTERVAL 1 DAY) AS y, len([1, 2, 3]) AS l, "
        "json_extract_string('{\"a\": \"b\"}', '$.a') AS j": [{"y": 2024, "l": 3, "j": "b"}],
        f"SELECT id FROM (SELECT id, {index}.match_bm25(rowid, 'fox') AS score FROM docs) "
        "WHERE score IS NOT NULL ORDER BY id": [
            {"id": 1},
            {"id": 2},
        ],
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = 'docs' ORDER BY ordinal_position": [
            {"column_name": "id"},
            {"column_name": "body"},
        ],
    }
    for text, expected in queries.items():
        assert _rows(duck, text) == expected, text


# -- DuckDB's snapshot -------------------------------------------------------------------


def test_duckdb_agent_bm25_scores_are_the_stores_own(tmp_path: Path) -> None:
    """The worker reads a copy; the copy's rowids are the store's, so match_bm25 scores the
    same rows the same."""
    index = "fts_hdq_text_t4_main_4_docs_body"
    text = f"SELECT id, {index}.match_bm25(rowid, 'fox') AS score FROM docs ORDER BY id"
    for database in (tmp_path / "bm25.duckdb", ":memory:"):
        with DuckdbEngine(database) as engine:
            bodies = [f"fox {'den ' * i}{i}" if i % 3 else f"sea {i}" for i in range(300)]
            engine.load_table(
                "docs", pa.table({"id": list(range(300)), "body": bodies}), text_columns=["body"]
            )
            assert _rows(engine, text) == engine.sql(text).to_pylist()


def test_duckdb_snapshot_holds_only_the_searchable_rows(duck: DuckdbEngine) -> None:
    assert _rows(duck, "SELECT count(*) AS n FROM docs") == [{"n": 3}]
    assert duck._snapshot is not None
    copy = duckdb.connect(str(duck._snapshot.path), read_only=True)
    try:
        assert copy.execute("SELECT count(*) FROM secret_notes").fetchall() == [(0,)]
        assert copy.execute("SELECT count(*) FROM docs").fetchall() == [(3,)]
    finally:
        copy.close()


def test_duckdb_snapshot_follows_loads_and_goes_with_the_engine(tmp_path: Path) -> None:
    engine = DuckdbEngine(tmp_path / "follow.duckdb")
    engine.load_table("docs", pa.table({"id": [1], "body": ["one"]}), text_columns=["body"])
    assert _rows(engine, "SELECT count(*) AS n FROM docs") == [{"n": 1}]
    assert engine._snapshot is not None
    first = engine._snapshot.path.parent
    engine.load_table("docs", pa.table({"id": [1, 2], "body": ["a", "b"]}), text_columns=["body"])
    assert _rows(engine, "SELECT count(*) AS n FROM docs") == [{"n": 2}]
    assert engine._snapshot is not None
    second = engine._snapshot.path.parent
    assert not first.exists() and second.exists()
    engine.close()
    assert not second.exists()


def test_a_snapshot_goes_when_its_process_ends_without_close(tmp_path: Path) -> None:
    script = (
        "import sys, pyarrow as pa\n"
        "from hotdata_retrieval.engines.duckdb import DuckdbEngine\n"
        "engine = DuckdbEngine(sys.argv[1])\n"
        "engine.load_table('docs', pa.table({'id': [1], 'body': ['x']}), text_columns=['body'])\n"
        "list(engine.stream_sql('SELECT count(*) FROM docs'))\n"
        "print(engine._snapshot.directory.path)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "unclosed.duckdb")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    directory = Path(done.stdout.strip())
    assert directory.name.startswith(SNAPSHOT_PREFIX)
    assert not directory.exists()


def test_duckdb_snapshot_leaves_out_the_databases_views_and_macros(tmp_path: Path) -> None:
    with DuckdbEngine(tmp_path / "shadow.duckdb") as engine:
        _load(engine)
        # A macro may take a built-in's name, and a view runs functions of its own.
        engine._execute("CREATE MACRO lower(x) AS (SELECT max(note) FROM secret_notes)")
        engine._execute("CREATE VIEW settings AS SELECT current_setting('threads') AS t FROM docs")
        assert engine.sql("SELECT lower('A') AS x").to_pylist() == [{"x": SECRET}]
        assert _rows(engine, "SELECT lower('A') AS x") == [{"x": "a"}]
        with pytest.raises(EngineError, match="settings"):
            _rows(engine, "SELECT * FROM settings")


def test_duckdb_refuses_a_table_whose_rowids_have_gaps(tmp_path: Path) -> None:
    with DuckdbEngine(tmp_path / "gaps.duckdb") as engine:
        _load(engine)
        engine._execute("DELETE FROM docs WHERE id = 1")
        with pytest.raises(EngineError, match="load it again"):
            _rows(engine, "SELECT count(*) AS n FROM docs")


def test_duckdb_agent_sql_reads_a_document_table_after_its_rows_change(tmp_path: Path) -> None:
    """Deletes and upserts leave the table's rowids without a gap (its rows are staged and
    swapped in with their text index), so the snapshot takes it: agent SQL returns the rows a
    direct read returns, and ``match_bm25`` scores them as the store does."""
    index = "fts_hdq_text_t4_main_4_docs_body"
    scores = f"SELECT id, {index}.match_bm25(rowid, 'fox') AS score FROM docs ORDER BY id"
    with DuckdbEngine(tmp_path / "changed.duckdb") as engine:
        bodies = [f"fox {'den ' * (i % 5)}{i}" if i % 3 else f"sea {i}" for i in range(60)]
        engine.load_table(
            "docs", pa.table({"id": list(range(60)), "body": bodies}), text_columns=["body"]
        )
        assert engine.delete_rows("docs", [1, 7, 30, 31, 58, 999]) == 5
        direct = sorted(engine.read_table("docs").to_pylist(), key=lambda row: row["id"])
        assert len(direct) == 55
        assert _rows(engine, "SELECT id, body FROM docs ORDER BY id") == direct
        assert _rows(engine, scores) == engine.sql(scores).to_pylist()
        engine.upsert_rows("docs", pa.table({"id": [2, 100], "body": ["fox moved", "fox new"]}))
        engine.delete_rows("docs", [4])
        direct = sorted(engine.read_table("docs").to_pylist(), key=lambda row: row["id"])
        assert [row["body"] for row in direct if row["id"] in (2, 100)] == [
            "fox moved",
            "fox new",
        ]
        assert _rows(engine, "SELECT id, body FROM docs ORDER BY id") == direct
        found = [row for row in _rows(engine, scores) if row["score"] is not None]
        assert found == [row for row in engine.sql(scores).to_pylist() if row["score"]]
        assert {row["id"] for row in found} == {
            row["id"] for row in direct if "fox" in row["body"].split()
        }


def test_duckdb_agent_sql_reads_a_table_without_text_index_after_a_delete(
    tmp_path: Path,
) -> None:
    """A table without a text index changes in place, its rowids left with gaps: nothing is
    keyed by them, so the snapshot copies it and agent SQL returns the rows a read returns."""
    with DuckdbEngine(tmp_path / "vectors.duckdb") as engine:
        vectors = [[float(i), 1.0] for i in range(10)]
        engine.load_table("docs", pa.table({"id": list(range(10)), "embedding": vectors}))
        assert engine.delete_rows("docs", [0, 4, 5]) == 3
        engine.upsert_rows("docs", pa.table({"id": [4], "embedding": [[9.0, 9.0]]}))
        direct = sorted(engine.read_table("docs", ["id"]).to_pylist(), key=lambda row: row["id"])
        assert [row["id"] for row in direct] == [1, 2, 3, 4, 6, 7, 8, 9]
        assert _rows(engine, "SELECT id FROM docs ORDER BY id") == direct


def test_duckdb_agent_sql_leaves_the_stores_settings_alone(tmp_path: Path) -> None:
    with DuckdbEngine(tmp_path / "settings.duckdb") as engine:
        _load(engine)
        before = engine.sql("SELECT current_setting('memory_limit') AS m").to_pylist()
        assert _rows(engine, "SELECT count(*) AS n FROM docs", MEMORY) == [{"n": 3}]
        assert engine.sql("SELECT current_setting('memory_limit') AS m").to_pylist() == before
        engine._execute("SET threads = 2")  # the configuration is not locked


def test_sqlite_memory_copy_follows_the_engines_writes() -> None:
    with SqliteEngine() as engine:
        _load(engine)
        assert _rows(engine, "SELECT count(*) AS n FROM docs") == [{"n": 3}]
        engine.load_table("docs", pa.table({"id": [7], "body": ["one"]}), text_columns=["body"])
        assert _rows(engine, "SELECT id FROM docs") == [{"id": 7}]
        assert engine._snapshot is not None
        directory = engine._snapshot[0].path
    assert not directory.exists()


def test_a_dead_processs_snapshot_is_swept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    stale = Path(tempfile.gettempdir()) / f"{SNAPSHOT_PREFIX}{int(done.stdout)}-left"
    stale.mkdir()
    (stale / "snapshot.duckdb").write_bytes(b"x")
    made = snapshot_directory()
    made.rmdir()
    assert made.name.startswith(f"{SNAPSHOT_PREFIX}{os.getpid()}-")
    assert not stale.exists()


# -- the MCP server answers after its worker dies -------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_server_answers_after_each_attack(
    duck: DuckdbEngine, anyio_backend: str
) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    server = create_server(duck, table="docs", sql_limits=MEMORY)
    replace = f"SELECT length({_nested('replace', MILLION_X, 3)}) AS n"
    async with Client(server) as client:
        for attack in (CRASH, replace):
            result = await client.call_tool("hotdata_execute_sql", {"sql": attack})
            assert result.is_error is True
            assert "\n" not in str(result.content[0].text)
            counted = await client.call_tool(
                "hotdata_execute_sql", {"sql": "SELECT count(*) AS n FROM main.docs"}
            )
            assert counted.is_error is False, counted.content
            assert json.loads(counted.content[0].text)["rows"] == [{"n": 3}]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_hdq_mcp_on_duckdb_survives_the_crash(tmp_path: Path, anyio_backend: str) -> None:
    from mcp import Client, StdioServerParameters

    database = tmp_path / "served.duckdb"
    with DuckdbEngine(database) as engine:
        _load(engine)
    parameters = StdioServerParameters(
        command=str(Path(sys.executable).with_name("hdq")),
        args=["mcp", "--engine", "duckdb", "--database", str(database), "--table", "docs"],
    )
    async with Client(parameters) as client:
        crashed = await client.call_tool("hotdata_execute_sql", {"sql": CRASH})
        assert crashed.is_error is True
        assert "stopped the SQL worker process" in str(crashed.content[0].text)
        found = await client.call_tool("hotdata_search_text", {"query": "fox", "k": 5})
        assert found.is_error is False, found.content
        counted = await client.call_tool(
            "hotdata_execute_sql", {"sql": "SELECT count(*) AS n FROM main.docs"}
        )
        assert counted.is_error is False, counted.content
        assert json.loads(counted.content[0].text)["rows"] == [{"n": 3}]
