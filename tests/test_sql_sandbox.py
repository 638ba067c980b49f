"""Agent SQL cannot write, cannot read outside the database, and cannot exhaust the host.

The guard is the engine that executes (DataFusion's ``SQLOptions``), not the second parser
that only gives a friendly early message: the differential fuzz builds statements on which
the two parsers may disagree (comments, every line-ending form, quoting) around a hidden write
or read, and checks the effects — no file written, the catalog and the table unchanged, no
outside file's content in any reply — through the toolkit with and without its own check, and
through the engine directly.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.adapters.bounded import read_bounded
from hotdata_retrieval.adapters.envelope import to_json
from hotdata_retrieval.adapters.toolkit import SearchToolkit, ToolError
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import (
    InputLimits,
    InvalidLimitError,
    SqlLimitError,
    SqlLimits,
)
from hotdata_retrieval.engines.local import LocalEngine

SECRET = "hdq-secret-7f3a91"
ROWS = 30


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("sandbox")
    outside = base / "outside"
    outside.mkdir()
    secret = outside / "secret.csv"
    secret.write_text(f"token\n{SECRET}\n")
    drop = base / "drop"
    drop.mkdir()
    return {"database": base / "db", "secret": secret, "drop": drop}


@pytest.fixture(scope="module")
def engine(places: dict[str, Path]) -> Iterator[LocalEngine]:
    with LocalEngine(places["database"]) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": list(range(ROWS)), "body": [f"fox {i}" for i in range(ROWS)]}),
            text_columns=["body"],
        )
        yield engine


def _snapshot(engine: LocalEngine) -> tuple[bytes, int, list[str]]:
    catalog = (engine.root / "catalog.json").read_bytes()
    rows = engine.sql("SELECT count(*) AS n FROM default.public.docs").column("n")[0].as_py()
    files = sorted(str(p.relative_to(engine.root)) for p in engine.root.rglob("*"))
    return catalog, rows, files


def _hidden_statements(places: dict[str, Path], root: Path) -> list[str]:
    drop, secret = places["drop"], places["secret"]
    return [
        f"COPY (SELECT 1 AS a) TO '{drop}/written.csv'",
        f"COPY (SELECT * FROM default.public.docs) TO '{root}/catalog.json'",
        f"COPY default.public.docs TO '{drop}/table.parquet'",
        f"CREATE EXTERNAL TABLE leak STORED AS CSV LOCATION '{secret}'",
        f"SELECT * FROM '{secret}'",
        "INSERT INTO default.public.docs VALUES (999, 'planted')",
        "DELETE FROM default.public.docs",
        "UPDATE default.public.docs SET body = 'x'",
        "DROP TABLE default.public.docs",
        "CREATE TABLE planted AS SELECT 1 AS a",
        "CREATE VIEW planted AS SELECT 1 AS a",
        "SET datafusion.execution.batch_size = 1",
        "SET datafusion.catalog.information_schema = false",
        "PREPARE planted AS SELECT 1",
    ]


STATEMENT_KINDS = [
    "COPY (SELECT 1 AS a) TO '{drop}/kind.csv'",
    "CREATE EXTERNAL TABLE leak STORED AS CSV LOCATION '{secret}'",
    "SELECT * FROM '{secret}'",
    "INSERT INTO default.public.docs VALUES (999, 'planted')",
    "DELETE FROM default.public.docs",
    "UPDATE default.public.docs SET body = 'x'",
    "DROP TABLE default.public.docs",
    "CREATE TABLE planted AS SELECT 1 AS a",
    "CREATE VIEW planted AS SELECT 1 AS a",
    "SET datafusion.execution.batch_size = 1",
    "PREPARE planted AS SELECT 1",
    "CREATE SCHEMA planted",
    "DROP VIEW IF EXISTS planted",
]


def _assert_untouched(
    engine: LocalEngine, places: dict[str, Path], before: tuple[bytes, int, list[str]]
) -> None:
    assert list(places["drop"].iterdir()) == []
    assert _snapshot(engine) == before
    assert engine.table_name("planted").name not in engine.tables
    assert not engine._sessions.main.table_exist("leak")


@pytest.mark.parametrize("template", STATEMENT_KINDS)
@pytest.mark.parametrize("path", ["sql", "stream_sql", "toolkit", "toolkit_unchecked"])
def test_every_statement_kind_is_refused_by_the_engine(
    engine: LocalEngine, places: dict[str, Path], template: str, path: str
) -> None:
    statement = template.format(drop=places["drop"], secret=places["secret"])
    before = _snapshot(engine)
    with pytest.raises((EngineError, ToolError)) as caught:
        if path == "sql":
            engine.sql(statement)
        elif path == "stream_sql":
            list(engine.stream_sql(statement))
        else:
            SearchToolkit(engine, table="docs", read_only=path == "toolkit").execute_sql(statement)
    assert SECRET not in str(caught.value)
    _assert_untouched(engine, places, before)


def test_a_statement_the_second_parser_reads_as_a_select_still_cannot_copy(
    engine: LocalEngine, places: dict[str, Path]
) -> None:
    # sqlglot ends a -- comment at a lone CR and so sees one SELECT with a block comment;
    # DataFusion ends it only at LF and sees COPY ... TO. The engine refuses the COPY.
    statement = f"--x\rSELECT 1 /*\nCOPY (SELECT 1 AS a) TO '{places['drop']}/p.csv' -- */"
    before = _snapshot(engine)
    toolkit = SearchToolkit(engine, table="docs")
    with pytest.raises(ToolError, match="read-only"):
        toolkit.execute_sql(statement)
    _assert_untouched(engine, places, before)


LINE_ENDINGS = ["\n", "\r", "\r\n", "\f", "\v", "\u2028", "\u2029", "\x85"]


def _fragments(hidden: str) -> st.SearchStrategy[str]:
    line_end = st.sampled_from(LINE_ENDINGS)
    word = st.sampled_from(["x", "*/", "/*", "'", '"', "$$", "\\", "--", ";", "SELECT 1"])
    comment = st.one_of(
        st.builds(lambda w, e: f"--{w}{e}", word, line_end),
        st.builds(lambda w: f"/* {w} */", word),
        st.builds(lambda w: f"/* /* {w} */ */", word),
        st.builds(lambda e: f"/*{e}", line_end),
        st.builds(lambda e: f"-- */{e}", line_end),
    )
    quoted = st.sampled_from(
        ["'a'", "'a\\'", "E'\\''", "E'\\' -- '", "$$ ' $$", '"id"', '"a""b"', "'--'", "'/*'"]
    )
    plain = st.sampled_from(["SELECT 1", "SELECT", ",", "(", ")", ";", " ", "1"])
    piece = st.one_of(comment, quoted, plain, line_end)
    return st.builds(
        lambda before, after: "".join(before) + hidden + "".join(after),
        st.lists(piece, max_size=6),
        st.lists(piece, max_size=6),
    )


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_text_makes_the_sql_tool_write_or_read_outside(
    engine: LocalEngine, places: dict[str, Path], data: st.DataObject
) -> None:
    hidden = data.draw(st.sampled_from(_hidden_statements(places, engine.root)))
    statement = data.draw(_fragments(hidden))
    path = data.draw(st.sampled_from(["toolkit", "toolkit_unchecked", "stream_sql"]))
    before = _snapshot(engine)
    try:
        if path == "stream_sql":
            reply: Any = [batch.to_pylist() for batch in engine.stream_sql(statement)]
        else:
            toolkit = SearchToolkit(engine, table="docs", read_only=path == "toolkit")
            reply = toolkit.execute_sql(statement)
    except (EngineError, ToolError) as error:
        reply = str(error)
    assert SECRET not in json.dumps(reply, default=str)
    _assert_untouched(engine, places, before)


# -- limits -----------------------------------------------------------------------------------


def test_a_billion_row_result_is_read_only_as_far_as_the_ceiling(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs", max_rows=20)
    result = toolkit.execute_sql("SELECT value FROM range(1000000000)")
    assert [row["value"] for row in result["rows"]] == list(range(20))
    metadata = result["metadata"]
    assert metadata["truncated"] is True
    assert metadata["row_count_exact"] is False
    assert 20 < metadata["row_count"] < 1_000_000_000
    assert metadata["warnings"][-1]["code"] == "rows_truncated"
    assert "at least" in metadata["warnings"][-1]["message"]


def test_an_exact_row_count_when_the_result_is_small(engine: LocalEngine) -> None:
    result = SearchToolkit(engine, table="docs", max_rows=5).execute_sql(
        "SELECT id FROM default.public.docs ORDER BY id"
    )
    assert [row["id"] for row in result["rows"]] == [0, 1, 2, 3, 4]
    assert result["metadata"]["row_count"] == ROWS
    assert "row_count_exact" not in result["metadata"]


def test_a_huge_value_is_not_sent_back(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs")
    result = toolkit.execute_sql("SELECT repeat('x', 100000000) AS big")
    assert result["rows"] == []
    assert result["metadata"]["row_count"] == 1
    assert result["metadata"]["truncated"] is True
    assert "reply ceiling" in result["metadata"]["warnings"][-1]["message"]
    assert len(to_json(result)) < 4096


def test_the_byte_ceiling_cuts_rows_while_reading(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs", max_rows=1000, max_bytes=10_000)
    result = toolkit.execute_sql("SELECT repeat('y', 1000) AS line FROM range(500)")
    kept = len(result["rows"])
    assert 0 < kept < 10
    assert len(json.dumps(result["rows"])) <= 10_000
    assert result["metadata"]["row_count"] == 500
    assert "10,000 bytes" in result["metadata"]["warnings"][-1]["message"]


def test_recursive_queries_are_refused_by_default(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs")
    endless = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    )
    with pytest.raises(ToolError, match="recursive queries"):
        toolkit.execute_sql(endless)
    with pytest.raises(SqlLimitError) as caught:
        list(engine.stream_sql(endless))
    assert caught.value.limit == "allow_recursive_queries"


def test_an_endless_query_is_cancelled_at_the_time_limit(engine: LocalEngine) -> None:
    limits = SqlLimits(timeout_seconds=0.5, allow_recursive_queries=True)
    endless = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    )
    with pytest.raises(SqlLimitError) as caught:
        list(engine.stream_sql(endless, limits=limits))
    assert caught.value.limit == "timeout_seconds"
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    with pytest.raises(ToolError, match=r"time limit of 0\.5 seconds"):
        toolkit.execute_sql(endless)
    assert _recovered(engine).execute_sql("SELECT 1 AS one")["rows"] == [{"one": 1}]


def test_the_memory_limit_stops_a_query_and_the_next_one_runs(engine: LocalEngine) -> None:
    limits = SqlLimits(memory_bytes=32 * 1024 * 1024)
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    with pytest.raises(ToolError, match="memory limit of 33,554,432 bytes"):
        toolkit.execute_sql("SELECT string_agg(CAST(value AS VARCHAR), ',') FROM range(50000000)")
    assert toolkit.execute_sql("SELECT count(*) AS n FROM range(1000)")["rows"] == [{"n": 1000}]


def test_a_fresh_workers_first_statement_is_charged_only_for_itself(engine: LocalEngine) -> None:
    # The killed statement leaves no worker, so the next one starts fresh: DataFusion's runtime
    # and kernels, started on a first statement (about 28 MiB), belong to its size at rest.
    limits = SqlLimits(memory_bytes=8 * 1024 * 1024)
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    for _ in range(2):
        with pytest.raises(ToolError, match="memory limit of 8,388,608 bytes"):
            toolkit.execute_sql(
                "SELECT string_agg(CAST(value AS VARCHAR), ',') FROM range(50000000)"
            )
        rows = toolkit.execute_sql("SELECT count(*) AS n, max(value) AS top FROM range(1000)")
        assert rows["rows"] == [{"n": 1000, "top": 999}]


def test_a_long_query_does_not_hold_up_other_calls(engine: LocalEngine) -> None:
    limits = SqlLimits(timeout_seconds=3, allow_recursive_queries=True)
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    finished: list[str] = []
    endless = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    )

    def slow() -> None:
        try:
            toolkit.execute_sql(endless)
        except ToolError:
            finished.append("slow")

    worker = threading.Thread(target=slow)
    worker.start()
    result = toolkit.search_text("fox", k=3)
    finished.append("search")
    worker.join()
    assert finished == ["search", "slow"]
    assert len(result["rows"]) == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout_seconds", 0),
        ("timeout_seconds", float("nan")),
        ("memory_bytes", 0),
        ("memory_bytes", True),
        ("memory_bytes", 1.5),
    ],
)
def test_a_bad_limit_is_a_typed_error_naming_it(field: str, value: Any) -> None:
    with pytest.raises(InvalidLimitError, match=field):
        SqlLimits(**{field: value})


def test_read_bounded_closes_the_stream_when_it_stops() -> None:
    closed: list[bool] = []

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for start in range(0, 10_000, 100):
                yield pa.record_batch({"n": list(range(start, start + 100))})
        finally:
            closed.append(True)

    result = read_bounded(batches(), max_rows=5, count_limit=300)
    assert [row["n"] for row in result.rows] == [0, 1, 2, 3, 4]
    assert (result.row_count, result.row_count_exact, result.stopped_by) == (300, False, "max_rows")
    assert closed == [True]


def test_the_langchain_sql_tool_cannot_copy_either(
    engine: LocalEngine, places: dict[str, Path]
) -> None:
    from hotdata_retrieval.adapters.langchain import make_sql_tool

    tool = make_sql_tool(engine, table="docs")
    before = _snapshot(engine)
    statement = f"--x\rSELECT 1 /*\nCOPY (SELECT 1 AS a) TO '{places['drop']}/lc.csv' -- */"
    answer = tool.invoke({"sql": statement})
    assert "read-only" in str(answer)
    unchecked = make_sql_tool(engine, table="docs", read_only=False)
    answer = unchecked.invoke({"sql": f"COPY (SELECT 1 AS a) TO '{places['drop']}/lc.csv'"})
    assert "read-only" in str(answer)
    _assert_untouched(engine, places, before)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda kit: kit.execute_sql("SELECT '\ud800'"), "sql is not valid Unicode"),
        (lambda kit: kit.search_text("fox \udc00"), "query is not valid Unicode"),
        (lambda kit: kit.search_semantic("fox \udc00"), "query is not valid Unicode"),
        (lambda kit: kit.search_text("fox\x00"), "query must not contain a NUL byte"),
    ],
)
def test_text_that_cannot_be_sent_is_a_tool_error_on_every_tool(call: Any, message: str) -> None:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        with pytest.raises(ToolError, match=message):
            call(SearchToolkit(engine, table="docs"))


def test_a_k_too_long_to_print_is_clamped_with_a_readable_warning(engine: LocalEngine) -> None:
    result = SearchToolkit(engine, table="docs", max_rows=3).search_text("fox", k=10**5000)
    assert len(result["rows"]) == 3
    assert "k=a very large number" in result["metadata"]["warnings"][0]["message"]


def test_hdq_mcp_passes_its_sql_limits_to_the_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from click.testing import CliRunner

    from hotdata_retrieval.cli import main

    mcp_command = importlib.import_module("hotdata_retrieval.cli.mcp")

    seen: dict[str, Any] = {}
    monkeypatch.setitem(
        mcp_command.ENGINE_OPENERS, "local", lambda database, table, embedder_choice: object()
    )
    monkeypatch.setattr(
        mcp_command, "serve", lambda engine, settings: seen.update(settings=settings)
    )
    result = CliRunner().invoke(
        main,
        [
            "mcp",
            "--table",
            "docs",
            "--sql-timeout",
            "2.5",
            "--sql-memory",
            "64",
            "--max-bytes",
            "999",
        ],
    )
    assert result.exit_code == 0, result.output
    settings = seen["settings"]
    assert settings.sql_limits == SqlLimits(timeout_seconds=2.5, memory_bytes=64 * 1024 * 1024)
    assert settings.max_bytes == 999


# -- what only a worker process can stop -------------------------------------------------------


def test_planning_work_is_stopped_at_the_time_limit(engine: LocalEngine) -> None:
    # Constant folding happens before any batch: only stopping the worker can end it in time.
    # The folded string is 1.6 GB: the memory limit is set well above it, so only time ends it.
    limits = SqlLimits(timeout_seconds=1, memory_bytes=8 * 1024**3)
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    with pytest.raises(ToolError, match=r"time limit of 1 seconds"):
        toolkit.execute_sql("SELECT length(repeat(md5('x'), 50000000)) AS n")
    assert _recovered(engine).execute_sql("SELECT 1 AS one")["rows"] == [{"one": 1}]


def _recovered(engine: LocalEngine) -> SearchToolkit:
    """A toolkit whose next query may wait for the stopped worker's replacement to open the
    database: the check is that the next query runs, not how fast a process starts on a busy
    machine (the replacement's start counts against the limit)."""
    return SearchToolkit(engine, table="docs", sql_limits=SqlLimits(timeout_seconds=60))


def test_a_huge_scalar_is_stopped_at_the_memory_limit(engine: LocalEngine) -> None:
    limits = SqlLimits(memory_bytes=64 * 1024 * 1024, timeout_seconds=60)
    toolkit = SearchToolkit(engine, table="docs", sql_limits=limits)
    with pytest.raises(ToolError, match="memory limit of 67,108,864 bytes"):
        toolkit.execute_sql("SELECT length(repeat('x', 1500000000)) AS n")
    assert toolkit.execute_sql("SELECT 2 AS two")["rows"] == [{"two": 2}]


def test_a_statement_that_crashes_the_planner_ends_only_the_worker(engine: LocalEngine) -> None:
    # Past the default bound on SQL text, which would refuse it before the worker sees it.
    toolkit = SearchToolkit(
        engine,
        table="docs",
        read_only=False,
        input_limits=InputLimits(max_sql_characters=200_000),
    )
    deep = "SELECT " + "+".join(["1"] * 60_000) + " AS n"
    with pytest.raises(ToolError) as caught:
        toolkit.execute_sql(deep)
    assert "\n" not in str(caught.value).split("\n")[0]
    assert toolkit.execute_sql("SELECT 3 AS three")["rows"] == [{"three": 3}]
