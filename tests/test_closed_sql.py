"""The shared part of agent SQL on the stores (``engines._agent_sql.ClosedSql``), with a
session double: the time limit holds even when the store cannot stop a statement, a statement
it could not stop holds the tool until it ends, and the watchdog never cancels a finished one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator

import pyarrow as pa
import pytest

from hotdata_retrieval.engines._agent_sql import ClosedSession, ClosedSql
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimitError, SqlLimits


class _Session(ClosedSession):
    """Runs ``stuck`` until released, whatever ``cancel`` says; anything else at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancels = 0
        self.closed = False

    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        if text == "stuck":
            self.release.wait(60)
        yield pa.record_batch({"n": [1]})

    def cancel(self) -> None:
        self.cancels += 1

    def close(self) -> None:
        self.closed = True


def test_an_unstoppable_statement_returns_at_its_limit_and_holds_the_tool() -> None:
    opened: list[_Session] = []

    def open_session(limits: SqlLimits) -> _Session:
        opened.append(_Session())
        return opened[-1]

    closed = ClosedSql("fake", open_session)
    with pytest.raises(SqlLimitError) as caught:
        list(closed.stream("stuck", SqlLimits(timeout_seconds=0.2)))
    assert caught.value.limit == "timeout_seconds"
    assert opened[0].cancels == 1
    assert not opened[0].release.is_set()  # returned while the statement was still stuck
    with pytest.raises(EngineError, match="previous query is still running"):
        list(closed.stream("quick", SqlLimits()))
    opened[0].release.set()
    for _ in range(200):  # the stuck statement's thread ends once released
        try:
            (batch,) = list(closed.stream("quick", SqlLimits()))
            break
        except EngineError:
            time.sleep(0.05)
    assert batch.to_pylist() == [{"n": 1}]
    assert len(opened) == 2  # the stuck session was left to its statement; a new one serves
    closed.close()


def test_the_watchdog_never_cancels_a_statement_that_ended() -> None:
    session = _Session()
    closed = ClosedSql("fake", lambda limits: session)
    for _ in range(5):
        (batch,) = list(closed.stream("quick", SqlLimits(timeout_seconds=0.2)))
        assert batch.num_rows == 1
        time.sleep(0.3)  # past the limit: a watchdog left running would have fired
    assert session.cancels == 0
    closed.close()
    assert session.closed
