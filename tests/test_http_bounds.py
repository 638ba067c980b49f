"""Every HTTP answer the remote engines read is bounded, and a call's deadline closes its
connection (``hotdata_retrieval/_http``): the Hotdata engine (the generated SDK, urllib3) and
the turbopuffer engine (httpx2), each against its fake server answering a request with a
hostile answer (``tests/hostile_http.py``): an endless body, gzip and deflate bombs of 1 GiB
of zeros, a body or headers sent one byte at a time.

Each call fails with its typed error; the server sees the connection closed having sent no
more than the limit and what the loopback connection buffers; the process's memory rises by
no more than a few limits while the call runs; no thread is left reading; and the same engine
answers its next call. Nothing here times anything: a wait only bounds how long a test that
fails takes to say so.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pyarrow as pa
import pytest
import trustme
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval._http import (
    CHUNK_BYTES,
    CallAbandoned,
    HttpCall,
    accept_encoding,
    bounded_body,
    call_within,
)
from hotdata_retrieval._http.pool_manager import BoundedPoolManager
from hotdata_retrieval._http.transport import BoundedTransport
from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.limits import ResponseLimits
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine
from hotdata_retrieval.errors import (
    EngineError,
    HotdataApiError,
    HotdataConfigError,
    InvalidLimitError,
    ResponseLimitError,
)
from tests.hostile_http import BOMB_BYTES, HostileAnswer, PeakResidentMemory
from tests.hotdata_api import FakeHotdataApi
from tests.turbopuffer_api import FakeTurbopufferApi

LIMIT = 4 << 20
"""The limits of these tests: 4 MiB as sent and decompressed."""

LIMITS = ResponseLimits(max_response_bytes=LIMIT, max_decompressed_bytes=LIMIT)

BUFFERED = 16 << 20
"""More than a loopback connection holds between a server's writes and a client's reads (the
kernel's send and receive buffers, a few MB each at most)."""

MEMORY = 64 << 20
"""More than the process's memory rises by while a call reads an answer within :data:`LIMIT`
(the body, its pieces, the client's copies); a client that read a bomb whole would rise by
1 GiB."""

DEADLINE = 2.0
"""The deadline of the tests of the deadline: far past what a call to a fake takes, far below
what an answer sent a byte at a time takes."""

WAIT = 60.0
"""Seconds a test waits for something that should happen at once, before it fails."""

API_KEY = "test-key"
DATABASE = "db_support"
TEXT = SearchPlan(
    source=Bm25Search(table="docs", column="body", query_text="disk error"),
    limit=3,
    columns=["id", "body"],
)


def _docs() -> pa.Table:
    return pa.table(
        {
            "id": [1, 2, 3, 4],
            "body": ["disk error", "login fails", "disk full error", "billing"],
        }
    )


@attrs.frozen
class Served:
    """An engine over a fake server, and two calls: ``call``, the one a hostile answer meets,
    and ``check``, a call whose answer is checked."""

    name: str
    engine: Any
    fake: Any
    call: Callable[[], Any]
    check: Callable[[], None]
    thread_name: str

    def requests(self) -> int:
        return len(self.fake.requests)


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine() as engine:
        engine.load_table("docs", _docs(), text_columns=["body"])
        yield engine


@pytest.fixture(scope="module")
def hotdata_fake(local: LocalEngine) -> Iterator[FakeHotdataApi]:
    with FakeHotdataApi(local, api_key=API_KEY, database_id=DATABASE) as api:
        api.index_engine_table("docs")
        yield api


def _hotdata(fake: FakeHotdataApi, deadline: float) -> Served:
    engine = HotdataEngine.connect(
        DATABASE,
        api_key=API_KEY,
        workspace_id=fake.workspace_id,
        host=fake.url,
        request_deadline=deadline,
        response_limits=LIMITS,
    )

    def check() -> None:
        assert engine.sql("SELECT count(*) AS n FROM docs").to_pylist() == [{"n": 4}]

    return Served(
        "hotdata",
        engine,
        fake,
        lambda: engine.sql("SELECT id FROM docs"),
        check,
        "hdq-hotdata-request",
    )


def _turbopuffer(fake: FakeTurbopufferApi, deadline: float) -> Served:
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as loader:
        loader.load_table("docs", _docs(), text_columns=["body"])
    engine = TurbopufferEngine(
        api_key=fake.api_key,
        base_url=fake.url,
        request_deadline=deadline,
        response_limits=LIMITS,
    )

    def check() -> None:
        assert [hit.key for hit in engine.search(TEXT)] == [1, 3]

    return Served(
        "turbopuffer",
        engine,
        fake,
        lambda: engine.search(TEXT),
        check,
        "hdq-turbopuffer-request",
    )


ENGINES = pytest.mark.parametrize("name", ["hotdata", "turbopuffer"])


@pytest.fixture
def serve(hotdata_fake: FakeHotdataApi, tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Makes the engine ``name`` over its fake, with a deadline (default 60 s); everything made
    is closed at teardown."""
    made: list[Served] = []
    fakes: list[FakeTurbopufferApi] = []

    def build(name: str, deadline: float = 60.0) -> Served:
        if name == "hotdata":
            served = _hotdata(hotdata_fake, deadline)
        else:
            fake = FakeTurbopufferApi(tmp_path / f"fake-{len(fakes)}").start()
            fakes.append(fake)
            served = _turbopuffer(fake, deadline)
        made.append(served)
        return served

    yield build
    for served in made:
        served.engine.close()
    for fake in fakes:
        fake.stop()


def _request_threads(name: str) -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == name}


def _ended(threads: set[threading.Thread]) -> bool:
    for thread in threads:
        thread.join(WAIT)
    return not any(thread.is_alive() for thread in threads)


# -- limits: an endless body, gzip and deflate bombs ---------------------------------------


@pytest.mark.parametrize(
    ("kind", "limit"),
    [
        ("endless", "max_response_bytes"),
        ("gzip", "max_decompressed_bytes"),
        ("deflate", "max_decompressed_bytes"),
    ],
)
@ENGINES
def test_an_answer_past_a_limit_is_stopped_and_its_connection_closed(
    serve: Callable[..., Served], name: str, kind: str, limit: str
) -> None:
    served = serve(name)
    served.check()
    hostile: HostileAnswer = served.fake.answer_hostile_once(kind)
    asked = served.requests()
    before = _request_threads(served.thread_name)
    with PeakResidentMemory() as memory, pytest.raises(ResponseLimitError) as caught:
        served.call()
    error = caught.value
    assert (error.limit, error.value) == (limit, LIMIT)
    assert f"larger than {LIMIT:,} bytes" in str(error) and "\n" not in str(error)
    assert hostile.closed.wait(WAIT), "the client never closed the connection"
    assert hostile.sent_when_closed is not None
    assert hostile.sent_when_closed <= LIMIT + BUFFERED
    if kind == "endless":
        assert not hostile.finished.is_set()  # stopped long before its end
    assert memory.growth <= MEMORY, f"memory rose by {memory.growth:,} bytes"
    assert _ended(_request_threads(served.thread_name) - before)
    # one request: a client's retry is refused before it is sent
    assert served.requests() == asked + 1
    served.check()


@ENGINES
def test_an_answer_in_an_encoding_not_asked_for_is_refused(
    serve: Callable[..., Served], name: str
) -> None:
    served = serve(name)
    hostile: HostileAnswer = served.fake.answer_hostile_once("br")
    with pytest.raises(EngineError, match=r"content encoding 'br', which was not asked for"):
        served.call()
    assert hostile.closed.wait(WAIT)
    served.check()


@ENGINES
def test_an_agent_tool_says_which_limit_and_answers_its_next_call(
    serve: Callable[..., Served], name: str
) -> None:
    served = serve(name)
    toolkit = SearchToolkit(served.engine, table="docs")

    def found() -> list[Any]:
        return [row["id"] for row in toolkit.search_text("disk error")["rows"]]

    assert found() == [1, 3]
    served.fake.answer_hostile_once("gzip")
    with pytest.raises(ToolError) as caught:
        found()
    message = str(caught.value)
    assert "\n" not in message
    assert f"larger than {LIMIT:,} bytes once decompressed (max_decompressed_bytes)" in message
    assert found() == [1, 3]


# -- the deadline: a body or headers one byte at a time ------------------------------------


@ENGINES
@pytest.mark.parametrize("kind", ["drip", "drip-headers"])
def test_the_deadline_closes_the_connection_and_the_request_ends(
    serve: Callable[..., Served], name: str, kind: str
) -> None:
    served = serve(name, deadline=DEADLINE)
    served.check()
    hostile: HostileAnswer = served.fake.answer_hostile_once(kind)
    before = _request_threads(served.thread_name)
    with pytest.raises(EngineError, match=rf"within {DEADLINE:g} seconds \(request_deadline\)"):
        served.call()
    after_return = served.requests()
    assert hostile.closed.wait(WAIT), "the connection was left open"
    assert _ended(_request_threads(served.thread_name) - before)
    assert served.requests() == after_return  # nothing was sent after the call returned
    assert not hostile.finished.is_set()
    served.check()


def test_a_hotdata_deadline_error_stays_an_api_error(serve: Callable[..., Served]) -> None:
    served = serve("hotdata", deadline=DEADLINE)
    served.fake.answer_hostile_once("drip")
    with pytest.raises(HotdataApiError, match="request_deadline"):
        served.call()
    served.check()


# -- what each client asks for, and compressed answers within the limits -------------------


@ENGINES
def test_each_client_asks_only_for_encodings_the_library_reads(
    serve: Callable[..., Served], name: str
) -> None:
    served = serve(name)
    served.check()
    asked = {request.headers.get("accept-encoding") for request in served.fake.requests}
    # the SDK asks for what urllib3 decodes; the turbopuffer client for no compression
    assert asked == {{"hotdata": "gzip, deflate", "turbopuffer": "identity"}[name]}


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_answer_within_the_limits_is_read(
    serve: Callable[..., Served], coding: str
) -> None:
    served = serve("hotdata")
    fake = served.fake
    fake.compress_answers = coding
    compressed = fake.compressed
    try:
        served.check()
        statement = "SELECT id, body FROM docs ORDER BY id"
        assert served.engine.sql(statement).to_pylist() == _docs().to_pylist()
    finally:
        fake.compress_answers = None
    assert fake.compressed == compressed + 2


# -- the limits themselves -----------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_limit_that_is_not_a_whole_number_of_bytes_is_refused(value: Any) -> None:
    with pytest.raises(InvalidLimitError, match="max_response_bytes"):
        ResponseLimits(max_response_bytes=value)
    with pytest.raises(InvalidLimitError, match="max_decompressed_bytes"):
        ResponseLimits(max_decompressed_bytes=value)


def test_limits_of_the_wrong_type_are_refused(hotdata_fake: FakeHotdataApi) -> None:
    with pytest.raises(HotdataConfigError, match="response_limits must be a ResponseLimits"):
        HotdataEngine.connect(
            DATABASE,
            api_key=API_KEY,
            workspace_id=hotdata_fake.workspace_id,
            host=hotdata_fake.url,
            response_limits={"max_response_bytes": 1},  # type: ignore[arg-type]
        )
    with pytest.raises(EngineError, match="response_limits must be a ResponseLimits"):
        TurbopufferEngine(api_key="k", base_url="http://127.0.0.1:9", response_limits=5)  # type: ignore[arg-type]


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[start:end] for start, end in itertools.pairwise(bounds)]


def _deflate(data: bytes, wbits: int) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": lambda data: _deflate(data, zlib.MAX_WBITS),
    "raw deflate": lambda data: _deflate(data, -zlib.MAX_WBITS),
    "gzip, deflate": lambda data: _deflate(gzip.compress(data), zlib.MAX_WBITS),
    "identity": lambda data: data,
    "two gzip members": lambda data: gzip.compress(data[:7]) + gzip.compress(data[7:]),
}
HEADERS = {"raw deflate": "deflate", "two gzip members": "gzip"}


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=3000) | st.just(bytes(300_000)),
    encoding=st.sampled_from(sorted(ENCODERS)),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
)
def test_a_body_decompresses_as_the_standard_library_does_however_it_is_cut(
    data: bytes, encoding: str, cuts: list[int]
) -> None:
    sent = ENCODERS[encoding](data)
    header = HEADERS.get(encoding, encoding)
    pieces = list(bounded_body(_pieces(sent, cuts), header, ResponseLimits()))
    assert b"".join(pieces) == data
    assert all(len(piece) <= CHUNK_BYTES for piece in pieces if header != "identity")


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_limit_holds_to_the_byte(coding: str) -> None:
    data = bytes(range(256)) * 1000
    sent = ENCODERS[coding](data)
    exact = ResponseLimits(max_response_bytes=len(sent), max_decompressed_bytes=len(data))
    assert b"".join(bounded_body([sent], coding, exact)) == data
    over = attrs.evolve(exact, max_decompressed_bytes=len(data) - 1)
    with pytest.raises(ResponseLimitError) as caught:
        b"".join(bounded_body([sent], coding, over, answer="the answer to the test"))
    assert (caught.value.limit, caught.value.value) == ("max_decompressed_bytes", len(data) - 1)
    assert str(caught.value).startswith("the answer to the test is larger than")
    short = attrs.evolve(exact, max_response_bytes=len(sent) - 1)
    with pytest.raises(ResponseLimitError, match="max_response_bytes"):
        b"".join(bounded_body([sent], coding, short))


def test_a_bomb_is_stopped_after_at_most_one_piece_past_the_limit() -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = compressor.compress(bytes(BOMB_BYTES // 64)) + compressor.flush()
    handed: list[int] = []
    with pytest.raises(ResponseLimitError, match="max_decompressed_bytes"):
        for piece in bounded_body([bomb], "gzip", LIMITS):
            handed.append(len(piece))
    assert sum(handed) <= LIMIT  # the piece that passed it is never handed on


def test_a_body_that_is_not_in_its_encoding_is_refused_by_name() -> None:
    with pytest.raises(EngineError, match=r"^the server's answer is not valid gzip data: "):
        b"".join(bounded_body([b"not gzip at all"], "gzip", LIMITS))


def test_accept_encoding_keeps_what_is_read() -> None:
    assert accept_encoding(None) == "gzip, deflate"
    assert accept_encoding("gzip, deflate, br, zstd") == "gzip, deflate"
    assert accept_encoding("br;q=1.0, gzip;q=0.5") == "gzip"
    assert accept_encoding("zstd") == "identity"
    assert accept_encoding("identity") == "identity"


def test_the_deadline_shuts_down_a_socket_another_thread_is_reading() -> None:
    """:func:`call_within` on a bare socket: the reader blocked in ``recv`` returns once the
    call is given up, though its peer never writes."""
    client, server = socket.socketpair()
    got: list[bytes] = []
    call = HttpCall(LIMITS, answer="the test's answer")

    def read() -> None:
        call.watch(client)
        got.append(client.recv(10))

    try:
        ended, pending = call_within(read, 0.2, call=call, name="hdq-test-read")
        assert not ended
        assert pending._ended.wait(WAIT)  # the read returned: its socket was shut down
        assert got == [b""]
        with pytest.raises(CallAbandoned):
            call.watch(server)  # a given-up call refuses a new socket, shutting it down
        assert server.recv(10) == b""
    finally:
        client.close()
        server.close()


class _TlsServer:
    """A TLS server on ``127.0.0.1`` giving each request (read up to its blank line) the
    hostile answer ``answer``."""

    def __init__(self, context: ssl.SSLContext, answer: HostileAnswer) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._context = context
        self._answer = answer
        self.url = f"https://127.0.0.1:{self._listener.getsockname()[1]}/"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            raw, _ = self._listener.accept()
        except OSError:
            return
        with self._context.wrap_socket(raw, server_side=True) as connection:
            request = b""
            while b"\r\n\r\n" not in request:
                received = connection.recv(65536)
                if not received:
                    return
                request += received
            self._answer.serve(connection)

    def close(self) -> None:
        self._listener.close()


@pytest.mark.parametrize("client", ["urllib3", "httpx2"])
@pytest.mark.parametrize("kind", ["endless", "drip"])
def test_a_tls_connection_is_held_to_the_limits_and_shut_down_at_the_deadline(
    client: str, kind: str
) -> None:
    """The bounds on the sockets the remote engines use in production (TLS): the SDK's pool
    manager and the turbopuffer client's transport, each over a local TLS server whose
    certificate a throwaway authority signed."""
    authority = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    hostile = HostileAnswer(kind)
    server = _TlsServer(server_context, hostile)
    send: Callable[[], Any]
    if client == "urllib3":
        manager = BoundedPoolManager(urllib3.PoolManager(ssl_context=client_context), LIMITS)
        send = functools.partial(manager.request, "GET", server.url)
    else:
        http = httpx2.Client(transport=BoundedTransport(LIMITS, verify=client_context))
        send = functools.partial(http.get, server.url)
    call = HttpCall(LIMITS, answer="the TLS server's answer")
    try:
        ended, pending = call_within(
            send, 60.0 if kind == "endless" else DEADLINE, call=call, name="hdq-test-tls"
        )
        if kind == "endless":
            assert ended
            with pytest.raises(ResponseLimitError, match="max_response_bytes"):
                pending.result()
        else:
            assert not ended and call.abandoned
        assert hostile.closed.wait(WAIT), "the connection was left open"
        assert pending._ended.wait(WAIT), "the request's thread is still running"
        assert hostile.sent_when_closed is not None
        assert hostile.sent_when_closed <= LIMIT + BUFFERED
    finally:
        server.close()
