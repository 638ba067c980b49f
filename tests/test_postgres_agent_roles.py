"""The role a PostgreSQL engine makes for agent SQL cannot outlive the engine as a way in.

An engine process killed with ``SIGKILL`` cleans up nothing: the test kills one before each
statement its first agent call sends on its own connection that changes the server (a kill
before a query that only reads leaves what a kill before the next such statement leaves; the
advisory lock it takes dies with it), and after the call (its agent session open and idle),
and shows that the role it made cannot log in (or, killed within the
moment of its login, holds a password that expires within a minute), that the next engine's
first agent call answers and removes it, and that a live engine's role is never removed.
"""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import psycopg
import pyarrow as pa
import pytest
from psycopg.conninfo import make_conninfo

from hotdata_retrieval.engines.postgres import (
    AGENT_LOGIN_SECONDS,
    PostgresEngine,
    agent_role_lock,
)

TABLE = "agent_role_docs"

AGENT = textwrap.dedent(
    """
    import os, signal, sys
    from hotdata_retrieval.engines.postgres import PostgresEngine

    url, point, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    engine = PostgresEngine(url)
    reached = 0

    def step():
        global reached
        if reached == point:
            print(engine.agent_role, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        reached += 1

    for name in ("_execute", "_execute_secret"):
        def wrapped(self, statement, _real=getattr(PostgresEngine, name)):
            step()
            return _real(self, statement)
        setattr(PostgresEngine, name, wrapped)

    rows = [batch.to_pylist() for batch in engine.stream_sql(f"SELECT count(*) AS n FROM {table}")]
    assert rows == [[{"n": 2}]], rows
    step()  # the agent session open and idle
    print("steps", reached, flush=True)
    """
)


def _run(url: str, point: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", AGENT, url, str(point), TABLE],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _logs_in(url: str, role: str) -> bool:
    try:
        with psycopg.connect(make_conninfo(url, user=role), connect_timeout=30):
            return True
    except psycopg.OperationalError as error:
        assert "not permitted to log in" in str(error) or "does not exist" in str(error), error
        return False


def _wait_until_gone(url: str, role: str) -> None:
    """Wait until the server has ended the killed process's sessions: the server notices a
    closed connection on its next read, which takes it a moment after the kill."""
    key = agent_role_lock(role)
    with psycopg.connect(url, autocommit=True) as connection:
        for _ in range(2400):
            sessions = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", [role]
            ).fetchone()
            locks = connection.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                "AND classid::bigint = %s AND objid::bigint = %s",
                [key >> 32, key & 0xFFFFFFFF],
            ).fetchone()
            if sessions == (0,) and locks == (0,):
                return
            time.sleep(0.05)
    raise AssertionError(f"the sessions of the killed engine ({role}) did not end")


def _role(url: str, role: str) -> tuple[bool, datetime.datetime | None] | None:
    """``(can log in, valid until)`` of ``role``, or ``None`` when there is no such role."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT rolcanlogin, rolvaliduntil FROM pg_roles WHERE rolname = %s", [role]
        ).fetchone()
    return None if row is None else (row[0], row[1])


@pytest.fixture
def url(postgres_url: str) -> Iterator[str]:
    with PostgresEngine(postgres_url) as engine:
        engine.load_table(
            TABLE, pa.table({"id": [1, 2], "body": ["a fox", "a dog"]}), text_columns=["body"]
        )
    yield postgres_url


def test_an_agent_role_of_a_killed_engine_cannot_log_in_and_is_swept(url: str) -> None:
    whole = _run(url, 10**6)
    assert whole.returncode == 0, whole.stderr
    steps = int(whole.stdout.split()[-1])
    assert steps > 5
    within_login = []
    for point in range(steps):
        killed = _run(url, point)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        role = killed.stdout.strip()
        state = _role(url, role)
        if state is not None and state[0]:
            # Killed within its login: the password it was given expires within a minute.
            within_login.append(point)
            valid_until = state[1]
            assert valid_until is not None
            now = datetime.datetime.now(datetime.timezone.utc)
            assert valid_until <= now + datetime.timedelta(seconds=AGENT_LOGIN_SECONDS)
        else:
            assert not _logs_in(url, role), point
        _wait_until_gone(url, role)
        # The next engine's first agent call answers, and removes what the killed one left.
        with PostgresEngine(url) as engine:
            batches = list(engine.stream_sql(f"SELECT count(*) AS n FROM {TABLE}"))
            assert [batch.to_pylist() for batch in batches] == [[{"n": 2}]]
            assert _role(url, role) is None, point
        assert not _logs_in(url, role)
    # Only a kill between the login's opening and its closing leaves a role that can log in.
    assert len(within_login) <= 1, within_login


def test_the_sweep_keeps_a_live_engines_role(url: str) -> None:
    with PostgresEngine(url) as first:
        assert [b.to_pylist() for b in first.stream_sql("SELECT 1 AS one")] == [[{"one": 1}]]
        first._agent_sql.close()  # its agent session ends; the engine lives on
        state = _role(url, first.agent_role)
        assert state is not None
        assert state[0] is False
        with PostgresEngine(url) as second:
            list(second.stream_sql("SELECT 1 AS one"))
            assert _role(url, first.agent_role) is not None
        rows = [b.to_pylist() for b in first.stream_sql(f"SELECT count(*) AS n FROM {TABLE}")]
        assert rows == [[{"n": 2}]]
        role = first.agent_role
    assert _role(url, role) is None  # close() removed it


def test_a_role_named_by_the_caller_cannot_log_in_once_its_session_is_open(url: str) -> None:
    with PostgresEngine(url, agent_role="hdq_agent_named") as engine:
        assert [b.to_pylist() for b in engine.stream_sql("SELECT current_user AS u")] == [
            [{"u": "hdq_agent_named"}]
        ]
        assert not _logs_in(url, "hdq_agent_named")
    # Kept after close, as a name the caller gives is, and still unable to log in.
    assert _role(url, "hdq_agent_named") is not None
    assert not _logs_in(url, "hdq_agent_named")


def test_a_killed_process_leaves_no_agent_statement_running(url: str) -> None:
    """The agent role checks for its client every second
    (``client_connection_check_interval``): a statement whose process was killed stops then,
    not at its time limit (600 s here)."""
    script = textwrap.dedent(
        """
        import sys
        from hotdata_retrieval.engines.limits import SqlLimits
        from hotdata_retrieval.engines.postgres import PostgresEngine

        engine = PostgresEngine(sys.argv[1])
        print(engine.agent_role, flush=True)
        list(engine.stream_sql("SELECT pg_sleep(600)", limits=SqlLimits(timeout_seconds=600)))
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        role = process.stdout.readline().decode().strip()
        with psycopg.connect(url, autocommit=True) as connection:
            for _ in range(2400):
                # the cursor's FETCH runs the statement
                running = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = %s "
                    "AND state = 'active' AND query LIKE 'FETCH%%'",
                    [role],
                ).fetchone()
                if running == (1,):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the statement did not start")
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    _wait_until_gone(url, role)  # well before the statement's 600 s
    with PostgresEngine(url) as engine:
        list(engine.stream_sql("SELECT 1"))
    assert _role(url, role) is None
