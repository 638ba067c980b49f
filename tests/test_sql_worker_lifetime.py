"""The SQL worker cannot outlive its owner, never runs the owner's script again, and a restart
counts against the call that needs it.

Each test runs the owner as a real process: a script without an ``if __name__ ==
"__main__":`` guard, an owner killed with ``kill -9`` while its worker computes, and ``hdq
mcp`` over stdio through the error sequence that once left its worker unable to open the
database.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits
from hotdata_retrieval.engines.local import LocalEngine

ENDLESS = "SELECT sum(a.value * b.value) AS s FROM range(100000000) a, range(100000000) b"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("worker") / "db"
    with LocalEngine(root) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2, 3], "body": ["red fox", "blue fox", "green sea"]}),
            text_columns=["body"],
        )
    return root


def _state(pid: int) -> str | None:
    """The process's state letter from ``/proc`` (``None``: no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[0]


def test_a_script_without_a_main_guard_runs_once(database: Path, tmp_path: Path) -> None:
    ran = tmp_path / "ran.txt"
    script = tmp_path / "agent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            with Path({str(ran)!r}).open("a") as log:
                log.write("top level ran\\n")
            from hotdata_retrieval.adapters import SearchToolkit
            from hotdata_retrieval.engines.local import LocalEngine
            engine = LocalEngine({str(database)!r})
            toolkit = SearchToolkit(engine, table="docs")
            sql = "SELECT count(*) AS n FROM default.public.docs"
            print(toolkit.execute_sql(sql)["rows"])
            engine.close()
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[{'n': 3}]"
    assert ran.read_text() == "top level ran\n"


OWNER = textwrap.dedent(
    """
    import sys, threading, time
    from hotdata_retrieval.engines.limits import SqlLimits
    from hotdata_retrieval.engines.local import LocalEngine

    engine = LocalEngine(sys.argv[1])

    def run():
        try:
            list(engine.stream_sql(sys.argv[2], limits=SqlLimits(timeout_seconds=3600)))
        except Exception:
            pass

    threading.Thread(target=run, daemon=True).start()
    while engine._worker is None or engine._worker._worker is None \\
            or not engine._worker._worker.ready:
        time.sleep(0.05)
    print(engine._worker._worker.pid, flush=True)
    time.sleep(3600)
    """
)


def test_the_worker_imports_nothing_from_the_callers_directory(
    database: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    planted = "open({marker!r}, 'a').write({name!r})\nraise SystemExit(3)\n"
    for name in ("pyarrow", "datafusion", "hotdata_retrieval"):
        shadow = tmp_path / "cwd" / name / "__init__.py"
        shadow.parent.mkdir(parents=True)
        shadow.write_text(planted.format(marker=str(marker), name=name))
    # What the interpreter's own start-up imports (runpy imports these from the path).
    for name in ("contextlib", "functools", "types", "collections", "keyword", "operator"):
        (tmp_path / "cwd" / f"{name}.py").write_text(planted.format(marker=str(marker), name=name))
    monkeypatch.chdir(tmp_path / "cwd")
    with LocalEngine(database) as engine:
        (batch,) = list(engine.stream_sql("SELECT count(*) AS n FROM docs"))
    assert batch.to_pylist() == [{"n": 3}]
    assert not marker.exists()


def test_the_worker_dies_with_its_owner(database: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(database), ENDLESS],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        worker = int(owner.stdout.readline())
        time.sleep(1.0)
        assert _state(worker) in ("R", "S", "D"), "the worker is computing"
    finally:
        owner.kill()
        owner.wait(timeout=30)
    deadline = time.monotonic() + 20
    while _state(worker) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _state(worker) in (None, "Z"), "the worker outlived its owner"


def test_a_restart_counts_against_the_call_that_needs_it(database: Path) -> None:
    with LocalEngine(database) as engine:
        with pytest.raises(EngineError, match="stopped the SQL worker"):
            list(engine.stream_sql("SELECT " + "+".join(["1"] * 60_000) + " AS n"))
        # A fresh interpreter cannot import the engine and open the database in 50 ms.
        with pytest.raises(SqlLimitError, match="still opening the database") as caught:
            list(engine.stream_sql("SELECT 1 AS one", limits=SqlLimits(timeout_seconds=0.05)))
        assert caught.value.limit == "timeout_seconds"
        # The worker kept opening meanwhile: the next call uses it.
        (batch,) = list(engine.stream_sql("SELECT 1 AS one"))
        assert batch.to_pylist() == [{"one": 1}]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_sql_tool_answers_after_every_kind_of_failed_call(
    database: Path, anyio_backend: str
) -> None:
    from mcp import Client, StdioServerParameters

    hdq = str(Path(sys.executable).with_name("hdq"))
    parameters = StdioServerParameters(
        command=hdq,
        args=["mcp", "--database", database.name, "--table", "docs"],
        cwd=str(database.parent),
    )
    sequence = [
        ("hotdata_execute_sql", {"sql": "SELECT * FROM default.public.nope"}),
        ("hotdata_execute_sql", {"sql": "DROP TABLE default.public.docs"}),
        ("hotdata_execute_sql", {"sql": "SELEC 1"}),
        ("hotdata_search_text", {"query": "fox", "k": "many"}),
        ("hotdata_execute_sql", {"sql": "SELECT " + "+".join(["1"] * 60_000)}),
    ]
    async with Client(parameters) as client:
        for tool, arguments in sequence:
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True, (tool, arguments)
        counted = await client.call_tool(
            "hotdata_execute_sql", {"sql": "SELECT COUNT(*) AS n FROM default.public.docs"}
        )
        assert counted.is_error is False, counted.content
        assert json.loads(counted.content[0].text)["rows"] == [{"n": 3}]


def test_the_worker_writes_nothing_to_its_owners_stdout(database: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from hotdata_retrieval.engines.local import LocalEngine
        with LocalEngine(sys.argv[1]) as engine:
            batches = list(engine.stream_sql("SELECT 1 AS one"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(database)], capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""


def test_closing_the_engine_ends_its_worker(database: Path) -> None:
    engine = LocalEngine(database)
    list(engine.stream_sql("SELECT 1 AS one"))
    assert engine._worker is not None and engine._worker._worker is not None
    pid = engine._worker._worker.pid
    engine.close()
    deadline = time.monotonic() + 10
    while _state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(pid) in (None, "Z")
