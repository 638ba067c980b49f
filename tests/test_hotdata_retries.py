"""The Hotdata client sends a request again after ``429`` or ``503``, as ``Retry-After`` asks,
a bounded number of times, and never past the call's deadline."""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from hotdata_retrieval._http.pool_manager import (
    BACKOFF_SECONDS,
    MAX_RETRIES,
    MAX_RETRY_WAIT,
    retry_wait,
)
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataApiError
from tests.hotdata_api import FakeHotdataApi

API_KEY = "test-key"
DATABASE = "db_support"
WAIT = 60.0
"""Seconds a test waits for something that should happen at once, before it fails."""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeHotdataApi]:
    with LocalEngine() as local:
        local.load_table("docs", pa.table({"id": [1, 2], "body": ["disk full", "quiet"]}))
        with FakeHotdataApi(local, api_key=API_KEY, database_id=DATABASE) as api:
            yield api


def _engine(fake: FakeHotdataApi, deadline: float = 60.0) -> HotdataEngine:
    return HotdataEngine.connect(
        DATABASE,
        api_key=API_KEY,
        workspace_id=fake.workspace_id,
        host=fake.url,
        request_deadline=deadline,
    )


@pytest.mark.parametrize(
    ("header", "retry", "expected"),
    [
        ("3", 0, 3.0),
        ("0", 2, 0.0),
        (None, 0, BACKOFF_SECONDS),
        (None, 2, BACKOFF_SECONDS * 4),
        ("soon", 1, BACKOFF_SECONDS * 2),  # malformed: the back-off
        ("86400", 0, MAX_RETRY_WAIT),  # a day: capped
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0, 0.0),  # a date past
    ],
)
def test_the_wait_is_what_retry_after_asks_within_bounds(
    header: str | None, retry: int, expected: float
) -> None:
    assert retry_wait(header, retry) == expected


def test_an_http_date_in_the_future_is_waited_for() -> None:
    later = email.utils.formatdate(time.time() + 4, usegmt=True)
    assert 2.0 <= retry_wait(later, 0) <= 4.0


@pytest.mark.parametrize("status", [429, 503])
def test_a_refused_request_is_sent_again_and_answered(fake: FakeHotdataApi, status: int) -> None:
    with _engine(fake) as engine:
        before = len(fake.requests)
        fake.refuse_next(2, status, {"Retry-After": "0"})
        assert engine.sql("SELECT id FROM docs ORDER BY id").to_pylist() == [
            {"id": 1},
            {"id": 2},
        ]
        assert len(fake.requests) == before + 3


def test_retries_end_after_the_last_one_with_the_server_s_refusal(fake: FakeHotdataApi) -> None:
    with _engine(fake) as engine:
        before = len(fake.requests)
        fake.refuse_next(MAX_RETRIES + 1, 503, {"Retry-After": "0"})
        with pytest.raises(HotdataApiError, match="try again later"):
            engine.sql("SELECT id FROM docs")
        assert len(fake.requests) == before + MAX_RETRIES + 1
        assert engine.sql("SELECT count(*) AS n FROM docs").to_pylist() == [{"n": 2}]


def test_a_wait_past_the_deadline_ends_with_the_deadline(fake: FakeHotdataApi) -> None:
    with _engine(fake, deadline=1.0) as engine:
        before = len(fake.requests)
        fake.refuse_next(1, 503, {"Retry-After": "9"})
        with pytest.raises(HotdataApiError, match="request_deadline"):
            engine.sql("SELECT id FROM docs")
        waiting = [t for t in threading.enumerate() if t.name == "hdq-hotdata-request"]
        for thread in waiting:
            thread.join(WAIT)  # the given-up call stops waiting and sends nothing more
        assert not any(thread.is_alive() for thread in waiting)
        assert len(fake.requests) == before + 1
