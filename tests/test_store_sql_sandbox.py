"""Agent SQL on the SQL stores cannot read the machine, change settings or data, load
extensions, attach files, kill its own connection for good, or read beyond the searchable
tables; and it runs under the same limits as on the local engine.

Every attack runs on SQLite (a file and an in-memory database), DuckDB and PostgreSQL, through
``stream_sql`` itself, through the toolkit with and without its own read-only check, through
the LangChain SQL tool and through the MCP server. Each is refused with a one-line error that
shows no secret, and the database is unchanged: same tables, same rows, no file written, the
secret file untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters.toolkit import SearchToolkit, ToolError
from hotdata_retrieval.engines._agent_sql import BATCH_ROWS
from hotdata_retrieval.engines.duckdb import DuckdbEngine, fts_extension_path
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.engines.postgres import PostgresEngine
from hotdata_retrieval.engines.sqlite import SqliteEngine

SECRET = "hdq-store-secret-5c2e07"
STORES = ["sqlite", "sqlite-memory", "duckdb", "postgres"]
BODIES = ["the app crashes on start", "charged twice for one order", "crash in settings"]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("store-sandbox")
    secret = base / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text(f"token\n{SECRET}\n")
    drop = base / "drop"
    drop.mkdir()
    # PostgreSQL's server runs as another user: let it reach (and fail to write) the files.
    os.chmod(base, 0o777)
    os.chmod(drop, 0o777)
    return {"base": base, "secret": secret, "drop": drop}


def _load(engine: Any) -> None:
    engine.load_table(
        "docs",
        pa.table({"id": [1, 2, 3], "body": BODIES}),
        text_columns=["body"],
    )
    engine._execute("CREATE TABLE secret_notes (note TEXT)")
    engine._execute(f"INSERT INTO secret_notes VALUES ('{SECRET}')")
    if isinstance(engine, PostgresEngine):
        # What a database may define itself: a function that runs with its owner's rights,
        # an operator over it, and a function shadowing a built-in's name.
        engine._execute(
            "CREATE FUNCTION public.peek_secret() RETURNS SETOF text LANGUAGE sql "
            "SECURITY DEFINER AS 'SELECT note FROM public.secret_notes'"
        )
        engine._execute(
            "CREATE FUNCTION public.peek_join(text, text) RETURNS text LANGUAGE sql "
            "SECURITY DEFINER AS 'SELECT string_agg(note, $1) FROM public.secret_notes'"
        )
        engine._execute(
            "CREATE OPERATOR public.### (LEFTARG = text, RIGHTARG = text, FUNCTION = "
            "public.peek_join)"
        )
        engine._execute(
            "CREATE FUNCTION public.upper(integer) RETURNS text LANGUAGE sql "
            "SECURITY DEFINER AS 'SELECT note FROM public.secret_notes LIMIT 1'"
        )


def _open(store: str, places: dict[str, Path], postgres_url: Callable[[], str]) -> Any:
    if store == "sqlite":
        return SqliteEngine(places["base"] / "store.sqlite")
    if store == "sqlite-memory":
        return SqliteEngine()
    if store == "duckdb":
        return DuckdbEngine(places["base"] / "store.duckdb")
    return PostgresEngine(postgres_url())


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest, places: dict[str, Path]) -> Iterator[tuple[str, Any]]:
    name = request.param
    engine = _open(name, places, lambda: request.getfixturevalue("postgres_url"))
    _load(engine)
    yield name, engine
    engine.close()


def _attacks(store: str, places: dict[str, Path]) -> list[str]:
    """Statements an agent may send to read the machine, change the session or the data,
    attach a file, load an extension, kill the connection or read beyond the searchable
    tables."""
    secret, drop = places["secret"], places["drop"]
    common = [
        "SELECT * FROM secret_notes",
        "SELECT * FROM hdq_columns",
        "DELETE FROM docs",
        "DROP TABLE docs",
        "INSERT INTO docs VALUES (9, 'planted')",
        "UPDATE docs SET body = 'x'",
        "CREATE TABLE planted AS SELECT 1 AS a",
        "SELECT 1; DELETE FROM docs",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    ]
    if store.startswith("sqlite"):
        return [
            *common,
            f"SELECT readfile('{secret}')",
            f"SELECT writefile('{drop}/written', 'x')",
            f"ATTACH '{drop}/attached.db' AS planted",
            f"ATTACH '{secret}' AS planted",
            "SELECT load_extension('mod_spatialite')",
            "PRAGMA query_only = OFF",
            "PRAGMA writable_schema = ON",
            "SELECT * FROM pragma_table_info('secret_notes')",
            "SELECT * FROM pragma_database_list",
            "SELECT data FROM sqlite_dbpage",
            "SELECT * FROM dbstat",
            "BEGIN IMMEDIATE",
            "VACUUM INTO '" + str(drop / "copy.db") + "'",
        ]
    if store == "duckdb":
        return [
            *common,
            f"SELECT * FROM read_csv('{secret}')",
            f"SELECT * FROM read_text('{secret}')",
            f"SELECT * FROM read_blob('{secret}')",
            f"SELECT * FROM read_json_auto('{secret}')",
            f"SELECT * FROM read_parquet('{secret}')",
            f"SELECT * FROM '{secret}'",
            f"SELECT * FROM glob('{secret.parent}/*')",
            f"SELECT * FROM sniff_csv('{secret}')",
            f"COPY docs TO '{drop}/copied.csv'",
            f"COPY (SELECT * FROM secret_notes) TO '{drop}/copied.csv'",
            f"ATTACH '{drop}/attached.duckdb' AS planted",
            "INSTALL httpfs",
            f"LOAD '{fts_extension_path()}'",
            "SET enable_external_access = true",
            "SET threads = 8",
            "RESET lock_configuration",
            "PRAGMA enable_profiling",
            "SELECT getenv('HOME')",
            "SELECT current_setting('temp_directory')",
            "SELECT * FROM duckdb_settings()",
            "SELECT * FROM duckdb_databases()",
            "SELECT * FROM duckdb_extensions()",
            "PRAGMA database_list",
            "SELECT * FROM query('SELECT * FROM secret_notes')",
            "CHECKPOINT",
            # A CTE's name is the table only inside its own scope: DuckDB's binder decides.
            "WITH secret_notes AS (SELECT * FROM secret_notes) SELECT * FROM secret_notes",
            "SELECT * FROM secret_notes, (WITH secret_notes AS (SELECT 1) SELECT 1)",
            "SELECT * FROM secret_notes WHERE EXISTS (WITH secret_notes AS (SELECT 1) SELECT 1)",
            "SELECT * FROM pg_settings, (WITH pg_settings AS (SELECT 1) SELECT 1)",
            "SELECT * FROM pg_settings",
            "SELECT * FROM pg_database",
            "SELECT * FROM duckdb_databases, (WITH duckdb_databases AS (SELECT 1) SELECT 1)",
            "SELECT CAST(note AS INTEGER) FROM secret_notes, "
            "(WITH secret_notes AS (SELECT 1) SELECT 1)",
            "SELECT json_serialize_plan('SELECT current_setting(''temp_directory'')', "
            "optimize := true)",
            "SELECT json_serialize_plan('SELECT * FROM secret_notes WHERE note > ''a''')",
            "SELECT json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
            "SELECT levenshtein(repeat('a', 120000), repeat('b', 120000))",
            "SELECT length(repeat('x', 1500000000))",
            "SELECT setseed(0.42)",
            "SELECT len(range(2000000000))",
            "SELECT len(range(0, 2000000000))",
            "SELECT len(range(-1000000, 1000000))",
            "SELECT len(generate_series(1, 2000000000, 1))",
            "SELECT length(repeat(repeat('x', 1000000), 1000000))",
            "SELECT length(repeat(body, 1000)) FROM docs",
            "SELECT length(repeat('xy', 600000))",
            "SELECT length(lpad(body, 1000000, 'x')) FROM docs",
            "SELECT length(rpad(body, 10, body)) FROM docs",
            "SELECT len(list_resize([1], 300000000))",
            "SELECT len(array_resize([1], 10001))",
            "SELECT length(printf('%1000000000d', 1))",
            "SELECT length(format('{:>1000000000}', 'x'))",
            "SELECT len(list_transform(range(1000000), x -> repeat('ab', 500000)))",
            "SELECT len([range(1000000) for x in range(1000000)])",
            "SELECT list_filter([1, 2], lambda x: x > 1)",
            "SELECT error(body) FROM docs",
            "PIVOT secret_notes ON note",
        ]
    return [
        *common,
        f"SELECT pg_read_file('{secret}')",
        f"SELECT pg_read_binary_file('{secret}')",
        f"SELECT * FROM pg_stat_file('{secret}')",
        "SELECT pg_ls_dir('.')",
        f"SELECT lo_import('{secret}')",
        f"SELECT lo_export(1, '{drop}/exported')",
        "COPY docs TO PROGRAM 'id'",
        f"COPY docs TO '{drop}/copied.csv'",
        "SET statement_timeout = 0",
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)",
        "SELECT pg_terminate_backend(pg_backend_pid())",
        "SELECT pg_cancel_backend(pg_backend_pid())",
        "SELECT pg_advisory_lock(1)",
        "SELECT query_to_xml('SELECT * FROM secret_notes', true, true, '')",
        "SELECT current_setting('data_directory')",
        "SELECT usename, passwd FROM pg_shadow",
        "SELECT * FROM pg_authid",
        "CREATE EXTENSION dblink",
        "SELECT * FROM docs FOR UPDATE",
        "DO $$ BEGIN PERFORM 1; END $$",
        # Functions that run SQL given as text, and the seed of random().
        "SELECT * FROM ts_stat($$SELECT to_tsvector(pg_advisory_lock(42)::text)$$)",
        "SELECT * FROM ts_stat('SELECT to_tsvector(note) FROM secret_notes')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')",
        "SELECT setseed(0.42)",
        "SELECT \"set_config\"('statement_timeout', '0', false)",
        "SELECT pg_logical_emit_message(true, 'hdq', 'x')",
        # The database's own functions and operators, which may run with their owner's rights.
        "SELECT * FROM peek_secret()",
        "SELECT public.peek_secret()",
        "SELECT count(*) FROM docs WHERE body IN (SELECT peek_secret())",
        "SELECT 'a' ### 'b'",
        "SELECT 'a' OPERATOR(public.###) 'b'",
        "SELECT upper(1)",
    ]


def _first(batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch:
    """The first batch, the iterator read to its end (so the statement ends)."""
    first, *_ = list(batches)
    return first


def _warm(engine: Any) -> None:
    """Run a statement under the default limits first: a worker that an earlier test stopped
    starts again on the call that needs it, within that call's time limit."""
    assert _first(engine.stream_sql("SELECT 1 AS one")).to_pylist() == [{"one": 1}]


def _snapshot(engine: Any, places: dict[str, Path]) -> tuple[Any, ...]:
    rows = engine.sql("SELECT count(*) AS n FROM docs").to_pylist()
    secret_rows = engine.sql("SELECT count(*) AS n FROM secret_notes").to_pylist()
    return (
        sorted(engine._table_names()),
        rows,
        secret_rows,
        sorted(path.name for path in places["drop"].iterdir()),
        places["secret"].read_text(),
    )


def _run(path: str, engine: Any, statement: str) -> str:
    """The error an attack ends in, through ``path``; a call that does not fail is an
    assertion error naming what came back."""
    if path == "stream_sql":
        try:
            batches = list(engine.stream_sql(statement, limits=SqlLimits(timeout_seconds=10)))
        except EngineError as error:
            return str(error)
        raise AssertionError(f"ran: {[batch.to_pylist() for batch in batches]}")
    if path in ("toolkit", "toolkit_unchecked"):
        toolkit = SearchToolkit(engine, table="docs", read_only=path == "toolkit")
        try:
            answer = toolkit.execute_sql(statement)
        except ToolError as error:
            return str(error)
        raise AssertionError(f"ran: {answer}")
    from hotdata_retrieval.adapters.langchain import make_sql_tool

    answer = make_sql_tool(engine, table="docs", read_only=False).invoke({"sql": statement})
    if not str(answer).startswith("Error"):
        raise AssertionError(f"ran: {answer}")
    return str(answer)


@pytest.mark.parametrize("path", ["stream_sql", "toolkit", "toolkit_unchecked", "langchain"])
def test_every_attack_is_refused_in_one_line_and_changes_nothing(
    store: tuple[str, Any], places: dict[str, Path], path: str
) -> None:
    name, engine = store
    before = _snapshot(engine, places)
    refused = []
    for statement in _attacks(name, places):
        message = _run(path, engine, statement)
        assert SECRET not in message, statement
        assert "\n" not in message, (statement, message)
        refused.append((statement, message))
    assert _snapshot(engine, places) == before
    # The agent's session still answers after every attack, a killed connection included.
    assert _first(engine.stream_sql("SELECT count(*) AS n FROM docs")).to_pylist() == [{"n": 3}]
    assert len(refused) == len(_attacks(name, places))


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("SELECT length(repeat('xy', 500000)) AS n", 1_000_000),
        ("SELECT len(range(1000000)) AS n", 1_000_000),
        ("SELECT len(generate_series(1, 10, 2)) AS n", 5),
        ("SELECT max(length(lpad(id, 10000, '0'))) AS n FROM docs", 10_000),
        ("SELECT max(len(list_resize([1, 2], 3, 0))) AS n", 3),
        ("SELECT count(*) AS n FROM range(3000000)", 3_000_000),
    ],
)
def test_duckdb_builders_run_within_their_bounds(
    tmp_path: Path, statement: str, expected: int
) -> None:
    with DuckdbEngine(tmp_path / "builders.duckdb") as engine:
        engine.load_table("docs", pa.table({"id": ["1", "2"], "body": ["a", "b"]}))
        assert _first(engine.stream_sql(statement)).to_pylist() == [{"n": expected}]


def test_postgres_built_in_and_extension_callables_still_run(postgres_url: str) -> None:
    with PostgresEngine(postgres_url) as engine:
        engine.load_table("callables", pa.table({"id": [1], "body": [BODIES[0]]}))
        engine._execute(  # runs with the caller's rights: allowed
            "CREATE OR REPLACE FUNCTION public.add_one(integer) RETURNS integer LANGUAGE sql "
            "AS 'SELECT $1 + 1'"
        )
        statement = (
            "SELECT lower(body) AS low, '[1,2]'::vector <=> '[1,3]'::vector AS distance, "
            "to_tsvector('english', body) @@ plainto_tsquery('english', 'fox') AS hit, "
            "add_one(1) AS two FROM callables"
        )
        (row,) = _first(engine.stream_sql(statement)).to_pylist()
        assert row["low"] == BODIES[0].lower() and row["distance"] > 0
        assert row["hit"] is False and row["two"] == 2


def test_a_result_naming_two_columns_alike_is_refused_not_merged(
    store: tuple[str, Any],
) -> None:
    _, engine = store
    toolkit = SearchToolkit(engine, table="docs")
    with pytest.raises(ToolError, match="more than one column named 'x'"):
        toolkit.execute_sql("SELECT id AS x, body AS x FROM docs WHERE id = 1")
    rows = toolkit.execute_sql("SELECT id AS x, body AS y FROM docs WHERE id = 1")["rows"]
    assert rows == [{"x": 1, "y": BODIES[0]}]


def test_the_searchable_table_reads_and_others_are_named(store: tuple[str, Any]) -> None:
    _, engine = store
    toolkit = SearchToolkit(engine, table="docs")
    answer = toolkit.execute_sql(f"SELECT id, body FROM {engine.sql_name('docs')} ORDER BY id")
    assert [row["body"] for row in answer["rows"]] == BODIES
    columns = toolkit.execute_sql(engine.columns_sql("docs"))["rows"]
    assert [next(iter(row.values())) for row in columns] == ["id", "body"]
    with pytest.raises(ToolError, match="secret_notes") as caught:
        toolkit.execute_sql("SELECT * FROM secret_notes")
    assert "docs" in str(caught.value)  # the tables it may read
    assert SECRET not in str(caught.value)


def test_the_sql_tool_names_the_table_as_the_store_does(store: tuple[str, Any]) -> None:
    _, engine = store
    description = SearchToolkit(engine, table="docs").describe_sql()
    assert f"as {engine.sql_name('docs')}." in description
    assert engine.columns_sql("docs") in description
    assert "default.public" not in description


def test_an_endless_query_is_cancelled_at_the_time_limit(store: tuple[str, Any]) -> None:
    name, engine = store
    endless = {
        "duckdb": "SELECT sum(a.range * b.range) FROM range(100000000) a, range(100000000) b",
        "postgres": "SELECT pg_sleep(600)",
    }.get(
        name,
        "SELECT count(*) FROM docs a, docs b, docs c, docs d, docs e, docs f, "
        "docs g, docs h, docs i, docs j, docs k, docs l, docs m, docs n, docs o, docs p, docs q, "
        "docs r, docs s, docs t, docs u, docs v, docs w, docs x, docs y, docs z",
    )
    _warm(engine)
    with pytest.raises(SqlLimitError) as caught:
        list(engine.stream_sql(endless, limits=SqlLimits(timeout_seconds=1.0)))
    assert caught.value.limit == "timeout_seconds"
    assert "time limit of 1 seconds" in str(caught.value)
    # Cancelled in the store, not abandoned (an abandoned statement holds the next call with
    # "the previous query is still running"): the next statement runs at once.
    assert _first(engine.stream_sql("SELECT count(*) AS n FROM docs")).to_pylist() == [{"n": 3}]


def test_a_slow_reader_is_held_to_the_time_limit(store: tuple[str, Any]) -> None:
    name, engine = store
    many = {
        "duckdb": "SELECT * FROM range(10000000)",
    }.get(
        name,
        "SELECT a.id FROM docs a, docs b, docs c, docs d, docs e, docs f, docs g, "
        "docs h, docs i, docs j, docs k, docs l, docs m, docs n",
    )
    _warm(engine)
    batches = engine.stream_sql(many, limits=SqlLimits(timeout_seconds=0.5))
    next(batches)
    time.sleep(0.8)
    with pytest.raises(SqlLimitError, match="time limit"):
        for _ in batches:
            pass


def test_recursion_is_allowed_when_the_limits_allow_it(store: tuple[str, Any]) -> None:
    _, engine = store
    query = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) "
    query += "SELECT count(*) AS c FROM r"
    with pytest.raises(SqlLimitError) as caught:
        list(engine.stream_sql(query))
    assert caught.value.limit == "allow_recursive_queries"
    limits = SqlLimits(allow_recursive_queries=True)
    assert _first(engine.stream_sql(query, limits=limits)).to_pylist() == [{"c": 5}]


def test_a_large_result_is_read_only_as_far_as_the_ceiling(store: tuple[str, Any]) -> None:
    name, engine = store
    huge = {
        "duckdb": "SELECT * FROM range(1000000000)",
    }.get(
        name,
        "SELECT a.id FROM docs a, docs b, docs c, docs d, docs e, docs f, docs g, "
        "docs h, docs i, docs j, docs k, docs l, docs m, docs n, docs o, docs p, docs q, docs r",
    )
    answer = SearchToolkit(engine, table="docs", max_rows=3).execute_sql(huge)
    assert len(answer["rows"]) == 3
    assert answer["metadata"]["truncated"] is True
    assert answer["metadata"]["row_count_exact"] is False
    # Counting stops at the counting limit, a batch past it at most: nothing reads on.
    assert 100_000 <= answer["metadata"]["row_count"] < 100_000 + BATCH_ROWS


def test_an_empty_result_keeps_its_columns(store: tuple[str, Any]) -> None:
    _, engine = store
    (batch,) = list(engine.stream_sql("SELECT id, body FROM docs WHERE id < 0"))
    assert batch.num_rows == 0
    assert batch.schema.names == ["id", "body"]


# -- the memory limit, each store's own knob ---------------------------------------------


def test_sqlite_stops_a_query_at_its_heap_limit(tmp_path: Path) -> None:
    with SqliteEngine(tmp_path / "heap.sqlite") as engine:
        _load(engine)
        query = (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000000) "
            "SELECT length(group_concat(hex(randomblob(64)))) FROM r"
        )
        limits = SqlLimits(memory_bytes=20_000_000, allow_recursive_queries=True)
        with pytest.raises(SqlLimitError) as caught:
            list(engine.stream_sql(query, limits=limits))
        assert caught.value.limit == "memory_bytes"
        # The heap limit was the statement's only: the engine's own work goes on.
        assert engine.sql("SELECT count(*) AS n FROM docs").to_pylist() == [{"n": 3}]
        assert _first(engine.stream_sql("SELECT count(*) AS n FROM docs")).num_rows == 1


def test_duckdb_stops_a_query_at_its_memory_limit(tmp_path: Path) -> None:
    with DuckdbEngine(tmp_path / "memory.duckdb") as engine:
        _load(engine)
        query = (
            "SELECT count(*) FROM (SELECT a.range % 1000000 AS g, string_agg(md5(a.range::TEXT)"
            ", ',') AS s FROM range(20000000) a GROUP BY g ORDER BY s)"
        )
        limits = SqlLimits(memory_bytes=64 * 1024 * 1024, timeout_seconds=120)
        with pytest.raises(SqlLimitError) as caught:
            list(engine.stream_sql(query, limits=limits))
        assert caught.value.limit == "memory_bytes"
        assert _first(engine.stream_sql("SELECT count(*) AS n FROM docs")).num_rows == 1


def test_duckdb_holds_what_spills_to_disk_to_the_memory_limit(tmp_path: Path) -> None:
    with DuckdbEngine(tmp_path / "spill.duckdb") as engine:
        _load(engine)
        _warm(engine)
        assert engine._snapshot is not None
        spilled = engine._snapshot.directory.path / "spill"  # the worker's temporary files
        sizes: list[int] = []
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.01):
                files = list(spilled.rglob("*")) if spilled.exists() else []
                sizes.append(sum(path.stat().st_size for path in files if path.is_file()))

        watcher = threading.Thread(target=watch)
        watcher.start()
        # A sort of about 1.5 GB of text: spilled whole, it would write as much to disk.
        query = (
            "SELECT count(*) FROM (SELECT range, md5(range::VARCHAR) AS h FROM range(30000000) "
            "ORDER BY h)"
        )
        limits = SqlLimits(memory_bytes=64 * 1024 * 1024, timeout_seconds=120)
        try:
            with pytest.raises(SqlLimitError) as caught:
                list(engine.stream_sql(query, limits=limits))
        finally:
            done.set()
            watcher.join()
        assert caught.value.limit == "memory_bytes"
        assert sizes and max(sizes) <= limits.memory_bytes


def test_postgres_stops_a_query_at_its_memory_limit(postgres_url: str) -> None:
    with PostgresEngine(postgres_url, agent_role="hdq_agent_memory") as engine:
        engine.load_table("limited", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
        query = (
            "SELECT count(*) FROM (SELECT md5(g::text) AS m FROM generate_series(1, 3000000) g "
            "ORDER BY m) s"
        )
        limits = SqlLimits(memory_bytes=1024 * 1024, timeout_seconds=120)
        with pytest.raises(SqlLimitError) as caught:
            list(engine.stream_sql(query, limits=limits))
        assert caught.value.limit == "memory_bytes"


def test_postgres_stops_the_attack_shapes_in_its_own_server(postgres_url: str) -> None:
    """The shapes that crashed or outlasted DuckDB in the library's process end in
    PostgreSQL's own server: a JSON text nested 100,000 deep is its stack-depth error, a
    ``replace`` blow-up its time limit, and no backend of the agent's role runs on after."""
    with PostgresEngine(postgres_url, agent_role="hdq_agent_shapes") as engine:
        engine.load_table("shapes", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
        nested = "SELECT length((repeat('[', 100000) || repeat(']', 100000))::jsonb::text) AS n"
        tenfold = "repeat('x', 1000000)"
        for _ in range(3):
            tenfold = f"replace({tenfold}, 'x', 'xxxxxxxxxx')"
        for statement, limits, expected in (
            (nested, SqlLimits(), "stack depth limit exceeded"),
            (f"SELECT length({tenfold}) AS n", SqlLimits(timeout_seconds=1), "time limit"),
        ):
            with pytest.raises(EngineError, match=expected):
                list(engine.stream_sql(statement, limits=limits))
            active = engine.sql(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = 'hdq_agent_shapes' "
                "AND state = 'active'"
            ).to_pylist()
            assert active == [{"n": 0}]
            assert _first(engine.stream_sql("SELECT count(*) AS n FROM shapes")).num_rows == 1


# -- PostgreSQL's role -----------------------------------------------------------------


def test_postgres_refuses_an_agent_role_that_can_do_more(postgres_url: str) -> None:
    with (
        PostgresEngine(postgres_url, agent_url=postgres_url) as engine,
        pytest.raises(EngineError, match="rolsuper"),
    ):
        list(engine.stream_sql("SELECT 1"))


def test_postgres_agent_role_reads_a_table_loaded_after_it_was_made(postgres_url: str) -> None:
    with PostgresEngine(postgres_url, agent_role="hdq_agent_later") as engine:
        engine.load_table("first_docs", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
        assert _first(engine.stream_sql("SELECT count(*) AS n FROM first_docs")).num_rows == 1
        engine.load_table("later_docs", pa.table({"id": [1], "body": ["y"]}), text_columns=["body"])
        # Replacing a table drops its grants: the engine grants again.
        engine.load_table("first_docs", pa.table({"id": [2], "body": ["z"]}), text_columns=["body"])
        for table in ("later_docs", "first_docs"):
            rows = _first(engine.stream_sql(f"SELECT id FROM {table}")).to_pylist()
            assert len(rows) == 1


def test_postgres_agent_role_is_no_superuser(postgres_url: str) -> None:
    with PostgresEngine(postgres_url, agent_role="hdq_agent_attributes") as engine:
        engine.load_table("plain", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
        assert _first(engine.stream_sql("SELECT current_user AS u")).to_pylist() == [
            {"u": "hdq_agent_attributes"}
        ]
        answer = engine.sql(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolcanlogin FROM pg_roles "
            "WHERE rolname = 'hdq_agent_attributes'"
        ).to_pylist()
    # Its session is open; the role refuses any further login.
    assert answer == [
        {"rolsuper": False, "rolcreaterole": False, "rolcreatedb": False, "rolcanlogin": False}
    ]


# -- the MCP server over each store -------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_sql_tool_refuses_every_attack(
    store: tuple[str, Any], places: dict[str, Path], anyio_backend: str
) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    name, engine = store
    before = _snapshot(engine, places)
    server = create_server(engine, table="docs", read_only=False)
    async with Client(server) as client:
        for statement in _attacks(name, places):
            result = await client.call_tool("hotdata_execute_sql", {"sql": statement})
            assert result.is_error is True, (statement, result.content)
            text = str(result.content[0].text)
            assert SECRET not in text
        counted = await client.call_tool(
            "hotdata_execute_sql", {"sql": f"SELECT count(*) AS n FROM {engine.sql_name('docs')}"}
        )
    assert json.loads(counted.content[0].text)["rows"] == [{"n": 3}]
    assert _snapshot(engine, places) == before


# -- what is readable is read again for every statement ------------------------------------


@pytest.mark.parametrize("store_name", ["sqlite", "duckdb", "postgres"])
def test_a_table_that_stops_being_searchable_stops_being_readable(
    store_name: str, places: dict[str, Path], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if store_name == "sqlite":
        engine: Any = SqliteEngine(tmp_path / "stale.sqlite")
    elif store_name == "duckdb":
        engine = DuckdbEngine(tmp_path / "stale.duckdb")
    else:
        engine = PostgresEngine(request.getfixturevalue("postgres_url"))
    with engine:
        engine.load_table("notes", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
        assert _first(engine.stream_sql("SELECT count(*) AS n FROM notes")).num_rows == 1
        engine.load_table("notes", pa.table({"note": [SECRET]}), key_column=None)
        with pytest.raises(EngineError) as caught:
            list(engine.stream_sql("SELECT * FROM notes"))
        assert SECRET not in str(caught.value)


def test_sqlite_refuses_functions_an_extension_added(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    script = textwrap.dedent(
        f"""
        import sqlean, pyarrow as pa
        sqlean.extensions.enable_all()
        from hotdata_retrieval.engines.sqlite import SqliteEngine
        from hotdata_retrieval.engines.errors import EngineError
        with SqliteEngine({str(tmp_path / "fileio.sqlite")!r}) as engine:
            engine.load_table("docs", pa.table({{"id": [1], "body": ["x"]}}), text_columns=["body"])
            assert engine.sql("SELECT fileio_read({str(secret)!r}) AS t").to_pylist()[0]["t"]
            for sql in ["SELECT fileio_read({str(secret)!r})",
                        "SELECT fileio_write({str(tmp_path / "planted")!r}, 'x')",
                        "SELECT * FROM fileio_ls({str(tmp_path)!r})"]:
                try:
                    list(engine.stream_sql(sql))
                except EngineError as error:
                    print(error)
                else:
                    raise SystemExit("ran: " + sql)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert "fileio_read() is not allowed" in lines[0]
    assert "fileio_write() is not allowed" in lines[1]
    assert SECRET.encode() not in done.stdout.encode()
    assert not (tmp_path / "planted").exists()


def test_sqlite_heap_limits_of_two_engines_never_stay_lowered(tmp_path: Path) -> None:
    import sqlean

    with SqliteEngine(tmp_path / "a.sqlite") as first, SqliteEngine(tmp_path / "b.sqlite") as b:
        for engine in (first, b):
            _load(engine)
        slow = "SELECT count(*) FROM docs a, docs b, docs c, docs d, docs e, docs f, docs g"
        small = SqlLimits(memory_bytes=30_000_000)
        large = SqlLimits(memory_bytes=1 << 30)
        streams = [first.stream_sql(slow, limits=small), b.stream_sql(slow, limits=large)]
        results: list[Any] = []
        threads = [threading.Thread(target=lambda s=s: results.append(list(s))) for s in streams]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == 2
        probe = sqlean.connect(":memory:")
        assert probe.execute("PRAGMA hard_heap_limit").fetchone()[0] == 0
        assert first.sql("SELECT count(*) AS n FROM docs").to_pylist() == [{"n": 3}]


def test_postgres_engines_get_roles_of_their_own_removed_at_close(postgres_url: str) -> None:
    first, second = PostgresEngine(postgres_url), PostgresEngine(postgres_url)
    try:
        for engine in (first, second):
            engine.load_table("own", pa.table({"id": [1], "body": ["x"]}), text_columns=["body"])
            assert _first(engine.stream_sql("SELECT current_user AS u")).to_pylist() == [
                {"u": engine.agent_role}
            ]
        assert first.agent_role != second.agent_role
        assert first.agent_role.startswith("hdq_agent_")
    finally:
        first.close()
    assert second.sql(
        f"SELECT count(*) AS n FROM pg_roles WHERE rolname = '{first.agent_role}'"
    ).to_pylist() == [{"n": 0}]
    second.close()


def test_postgres_recovers_a_session_left_in_a_transaction(store: tuple[str, Any]) -> None:
    name, engine = store
    if name != "postgres":
        return  # a PostgreSQL fact; the other stores have no such state
    list(engine.stream_sql("SELECT 1 AS one"))
    engine._agent_sql._session._connection.execute("BEGIN")  # a cancel that came too late
    assert _first(engine.stream_sql("SELECT 2 AS two")).to_pylist() == [{"two": 2}]


@pytest.mark.parametrize(
    "text",
    [
        "COMMIT; DELETE FROM {table}",
        "SELECT 1; DELETE FROM {table}",
        "ROLLBACK; DROP TABLE {table}",
    ],
)
def test_sql_runs_one_statement_so_a_second_cannot_write(store: tuple[str, Any], text: str) -> None:
    """``sql()`` refuses writes by running its statement in a transaction it rolls back (or a
    read-only one); a second statement could end that transaction first, so it is refused."""
    _, engine = store
    table = engine.sql_name("docs")
    before = engine.sql(f"SELECT count(*) AS n FROM {table}").column("n").to_pylist()
    with pytest.raises(EngineError, match="one"):
        engine.sql(text.format(table=table))
    assert engine.sql(f"SELECT count(*) AS n FROM {table}").column("n").to_pylist() == before
    assert before[0] > 0
