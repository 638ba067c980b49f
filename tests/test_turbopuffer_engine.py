"""The turbopuffer engine against a fake of turbopuffer's HTTP API (tests/turbopuffer_api.py)
that runs each query on the local engine: the exact requests the official client sends are
pinned by snapshots, and the hits equal the local engine's own search of the same table."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest
from syrupy.assertion import SnapshotAssertion

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    EngineError,
    InList,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TieBreaker,
    UnsupportedFeatureError,
)
from hotdata_retrieval.compile.turbopuffer import turbopuffer_request
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.registry import engine_kind
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine
from tests.turbopuffer_api import FakeTurbopufferApi

BODIES = [
    "disk error on upgrade",
    "login timeout after release",
    "crash on start, disk full",
    "billing error twice",
    "network cache miss",
    "memory error under load error",
    None,
    "token expired at login",
]
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _table() -> pa.Table:
    count = len(BODIES)
    return pa.table(
        {
            "id": list(range(1, count + 1)),
            "body": BODIES,
            "lang": ["en", "fr", None, "en", "de", "en", "fr", None],
            "year": [2020 + key % 4 for key in range(count)],
            "created": pa.array(
                [START + datetime.timedelta(days=key) for key in range(count)],
                pa.timestamp("us", tz="UTC"),
            ),
            "embedding": pa.array(
                [[1.0, key * 0.37 - 1.0, (key * 7 % 5) - 2.0] for key in range(count)],
                pa.list_(pa.float32(), 3),
            ),
        }
    )


TEXT = Bm25Search(table="docs", column="body", query_text="disk error login")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.5, -0.25, 1.0])
PLANS = {
    "text": SearchPlan(source=TEXT, limit=3, offset=1, columns=["id", "body"]),
    "nearest filtered": SearchPlan(
        source=NEAREST,
        limit=4,
        filter=Comparison(column="lang", operator="!=", value="en"),
        columns=["id", "lang", "created"],
    ),
    "hybrid filtered": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], depth=6),
        limit=5,
        filter=InList(column="year", values=[2020, 2021, 2023]),
        columns=["id", "body", "year"],
    ),
}


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeTurbopufferApi]:
    with FakeTurbopufferApi(tmp_path / "fake") as api:
        yield api


@pytest.fixture
def engine(fake: FakeTurbopufferApi) -> Iterator[TurbopufferEngine]:
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as opened:
        opened.load_table("docs", _table(), key_column="id", text_columns=["body"])
        yield opened


def _requests(fake: FakeTurbopufferApi) -> list[dict[str, Any]]:
    return [
        {"method": r.method, "path": r.path, "query": r.query, "body": r.body}
        for r in fake.requests
    ]


def test_load_sends_the_schema_then_the_rows(
    fake: FakeTurbopufferApi, snapshot: SnapshotAssertion
) -> None:
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        indexes = engine.load_table("docs", _table(), key_column="id", text_columns=["body"])
    assert indexes.bm25_columns == ("body",)
    assert [(v.column, v.metric) for v in indexes.vectors] == [("embedding", "cosine")]
    assert _requests(fake) == snapshot
    assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {fake.api_key}"}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_search_is_one_multi_query_of_the_rendered_body(
    engine: TurbopufferEngine,
    fake: FakeTurbopufferApi,
    name: str,
    snapshot: SnapshotAssertion,
) -> None:
    fake.requests.clear()
    engine.search(PLANS[name])
    sent = _requests(fake)
    assert [(r["method"], r["path"], r["query"]) for r in sent] == [
        ("POST", "/v2/namespaces/docs/query", {"stainless_overload": ["multiQuery"]})
    ]
    plan = PLANS[name]
    rendered = turbopuffer_request(executed_plan(plan))
    # each query asks for one row past its bound, to see whether the cut splits a tie
    assert sent[0]["body"]["queries"] == [
        {**query, "top_k": query["top_k"] + 1} for query in rendered["queries"]
    ]
    assert sent[0]["body"] == snapshot


def _hits(result: Any) -> list[tuple[Any, ...]]:
    return [
        (
            hit.key,
            None if hit.score is None else round(hit.score, 5),
            None if hit.distance is None else round(hit.distance, 5),
            dict(hit.columns),
            {name: branch.rank for name, branch in hit.branches.items()},
        )
        for hit in result.hits
    ]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_hits_equal_the_local_engines_search_of_the_same_table(
    engine: TurbopufferEngine, tmp_path: Path, name: str
) -> None:
    with LocalEngine(tmp_path / "reference") as local:
        local.load_table("docs", _table(), key_column="id", text_columns=["body"])
        expected = _hits(local.search(PLANS[name]))
    assert expected  # the plans match rows
    assert _hits(engine.search(PLANS[name])) == expected


def test_rows_tied_at_the_cut_are_asked_for_again_and_kept_by_key(
    fake: FakeTurbopufferApi, tmp_path: Path
) -> None:
    data = pa.table(
        {
            "id": [9, 3, 7, 1, 5, 2],
            "body": ["twin words"] * 5 + ["other"],
            "embedding": pa.array([[1.0, 0.0]] * 6, pa.list_(pa.float32(), 2)),
        }
    )
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="twin"),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
            ],
            depth=2,
        ),
        limit=2,
    )
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("docs", data, key_column="id", text_columns=["body"])
        fake.requests.clear()
        hits = _hits(engine.search(plan))
    asked = [[q["top_k"] for q in body["queries"]] for body in fake.bodies("POST", "/query")]
    assert asked == [[3, 3], [6, 6], [6, 12]]  # 5 rows hold "same"; 6 one vector
    # SQLite's compiled statement keeps tied rows by key at each branch's cut: the text
    # branch keeps 1 and 3, the nearest branch 1 and 2; 2 and 3 then tie on 1/61, 2 first
    from hotdata_retrieval.engines.sqlite import SqliteEngine

    reference = SqliteEngine(tmp_path / "reference.sqlite")
    try:
        reference.load_table("docs", data, key_column="id", text_columns=["body"])
        expected = reference.search(plan)
    finally:
        reference.close()
    assert [hit[0] for hit in hits] == [hit.key for hit in expected.hits] == [1, 2]
    assert [hit[4] for hit in hits] == [
        {name: branch.rank for name, branch in hit.branches.items()} for hit in expected.hits
    ]


def test_dates_come_back_as_the_instants_loaded(engine: TurbopufferEngine) -> None:
    hits = engine.search(PLANS["nearest filtered"]).hits
    created = dict(zip(_table().column("id").to_pylist(), _table().column("created").to_pylist()))
    assert hits and all(hit.columns["created"] == created[hit.key] for hit in hits)


def test_deleted_rows_and_dropped_tables_are_gone(
    engine: TurbopufferEngine, fake: FakeTurbopufferApi
) -> None:
    before = [hit.key for hit in engine.search(PLANS["text"]).hits]
    fake.requests.clear()
    assert engine.delete_rows("docs", [before[0], 999]) == 1  # the documents that existed
    assert fake.bodies("POST", "/v2/namespaces/docs") == [
        {"deletes": [before[0], 999], "return_affected_ids": True}
    ]
    after = [hit.key for hit in engine.search(PLANS["text"]).hits]
    assert before[0] not in after
    engine.drop_table("docs")
    with pytest.raises(EngineError, match=r"table 'default.public.docs' not found"):
        engine.search(PLANS["text"])
    engine.drop_table("docs")  # a missing namespace is no error


def test_what_the_namespace_cannot_hold_is_refused(fake: FakeTurbopufferApi) -> None:
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        with pytest.raises(UnsupportedFeatureError, match="the dot distance"):
            engine.load_table("docs", _table(), text_columns=["body"], vector_metric="dot")
        with pytest.raises(EngineError, match=r"key column 'key'.*key_column='id'"):
            engine.load_table(
                "docs",
                _table().rename_columns(["key", *_table().column_names[1:]]),
                key_column="key",
            )
        with pytest.raises(EngineError, match=r"key column None.*key_column='id'"):
            engine.load_table("docs", _table(), key_column=None)
        assert fake.requests == []  # refused before anything was sent
        engine.load_table("docs", _table(), text_columns=["body"], vector_metric="l2")
        cosine = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0, 0])
        with pytest.raises(UnsupportedFeatureError, match="loaded with euclidean_squared"):
            engine.search(SearchPlan(source=cosine))
        short = NearestNeighborSearch(
            table="docs", column="embedding", query_vector=[1.0], metric="l2"
        )
        with pytest.raises(PlanError, match="query vector has 1 dimension;"):
            engine.search(SearchPlan(source=short))
        with pytest.raises(EngineError, match="no full-text index"):
            engine.search(
                SearchPlan(source=Bm25Search(table="docs", column="lang", query_text="en"))
            )


def test_key_and_region_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, fake: FakeTurbopufferApi
) -> None:
    for name in ("TURBOPUFFER_API_KEY", "TURBOPUFFER_REGION", "TURBOPUFFER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(EngineError, match="needs an API key: set TURBOPUFFER_API_KEY"):
        TurbopufferEngine()
    monkeypatch.setenv("TURBOPUFFER_API_KEY", fake.api_key)
    with pytest.raises(EngineError, match=r"needs a region.*TURBOPUFFER_REGION"):
        TurbopufferEngine()
    monkeypatch.setenv("TURBOPUFFER_REGION", "gcp-us-central1")
    with TurbopufferEngine() as engine:
        assert engine.base_url == "https://gcp-us-central1.turbopuffer.com"
    monkeypatch.setenv("TURBOPUFFER_BASE_URL", fake.url)
    with pytest.raises(EngineError, match=r"a region .'gcp-us-central1'. and an API host"):
        TurbopufferEngine()
    monkeypatch.delenv("TURBOPUFFER_REGION")
    with engine_kind("turbopuffer").open("tickets-", embedder=None) as opened:
        opened.load_table("docs", _table(), text_columns=["body"])
    assert {r.path for r in fake.requests} >= {"/v2/namespaces/tickets-docs"}


def test_a_request_past_its_deadline_fails_with_the_deadline_named(
    engine: TurbopufferEngine, fake: FakeTurbopufferApi
) -> None:
    slow = TurbopufferEngine(api_key=fake.api_key, base_url=fake.url, request_deadline=0.3)
    fake.stall.set()
    try:
        with pytest.raises(EngineError, match=r"no complete answer .* within 0.3 seconds"):
            slow.search(PLANS["text"])
    finally:
        fake.released.set()
        slow.close()


def test_a_deadline_that_is_not_a_positive_number_is_refused(fake: FakeTurbopufferApi) -> None:
    with pytest.raises(EngineError, match="request_deadline must be a positive number"):
        TurbopufferEngine(api_key=fake.api_key, base_url=fake.url, request_deadline=0)


def test_an_l2_namespace_gives_the_local_engines_hits(
    fake: FakeTurbopufferApi, tmp_path: Path
) -> None:
    l2 = NearestNeighborSearch(
        table="docs", column="embedding", query_vector=[0.5, -0.25, 1.0], metric="l2"
    )
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, l2], depth=6), limit=5)
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        indexes = engine.load_table("docs", _table(), text_columns=["body"], vector_metric="l2")
        assert [v.metric for v in indexes.vectors] == ["l2"]
        hits = _hits(engine.search(plan))
    assert fake.bodies("POST", "/v2/namespaces/docs")[0]["schema"]["embedding"] == {
        "type": "[3]f32",
        "ann": {"distance_metric": "euclidean_squared"},
    }
    with LocalEngine(tmp_path / "reference") as local:
        local.load_table("docs", _table(), text_columns=["body"], vector_metric="l2")
        assert hits == _hits(local.search(plan))


def test_tie_breakers_are_refused_before_anything_is_sent(
    engine: TurbopufferEngine, fake: FakeTurbopufferApi
) -> None:
    fake.requests.clear()
    plan = SearchPlan(source=TEXT, tie_breakers=[TieBreaker(column="year")])
    with pytest.raises(UnsupportedFeatureError, match="tie-breakers"):
        engine.search(plan)
    assert fake.requests == []


def test_the_agent_tools_offer_no_sql_tool_and_say_why(engine: TurbopufferEngine) -> None:
    from hotdata_retrieval.adapters.langchain import make_search_tools

    tools = {tool.name: tool for tool in make_search_tools(engine, table="docs")}
    assert not any("sql" in name for name in tools)
    assert any("turbopuffer runs no SQL" in tool.description for tool in tools.values())


def test_unsigned_attributes_past_the_signed_range_read_back(fake: FakeTurbopufferApi) -> None:
    # turbopuffer's uint attribute holds 2**63 and past; Arrow types Python integers as int64,
    # so reading such a value without the declared type overflowed.
    rows = pa.table(
        {
            "id": [1, 2, 3],
            "body": ["disk", "disk full", "login"],
            "count": pa.array([None, 2**63, 2**64 - 1], pa.uint64()),
        }
    )
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("wide", rows, key_column="id", text_columns=["body"])
        assert engine.read_table("wide").equals(rows)
        assert engine.read_rows("wide", [2]).to_pylist() == rows.slice(1, 1).to_pylist()
        engine.upsert_rows("wide", rows.slice(0, 1))
        assert engine.read_table("wide", ["count"]).column(0).to_pylist() == [
            None,
            2**63,
            2**64 - 1,
        ]


@pytest.mark.parametrize(
    "keys",
    [
        pa.array([1, 2], pa.timestamp("us", "UTC")),
        pa.array([1, 2], pa.timestamp("ns")),
        pa.array([0.5, 1.5]),
        pa.array([True, False]),
        pa.array([datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]),
    ],
    ids=["zoned timestamp", "timestamp[ns]", "float", "boolean", "date"],
)
def test_a_key_no_document_id_can_be_is_refused_by_its_type(
    fake: FakeTurbopufferApi, keys: pa.Array
) -> None:
    """turbopuffer's document ids are unsigned 64-bit integers, UUIDs or strings
    (https://turbopuffer.com/docs/write): a timestamp, float, boolean or date key is refused
    naming its type, before anything is sent (the fake failed on a timestamp id, a boolean
    failed in Arrow's own conversion, and the service refuses such an id)."""
    rows = pa.table({"id": keys, "body": ["disk full", "moon node"]})
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        message = re.escape(f"key column 'id' holds {keys.type} values")
        with pytest.raises(EngineError, match=message):
            engine.load_table("docs", rows, text_columns=["body"])
    assert fake.requests == []


@pytest.mark.parametrize(
    "keys",
    [
        pa.array([3, -1, 2], pa.int64()),
        pa.array([3, -(2**63), 2], pa.int64()),
        pa.array([3, -7, 2], pa.int8()),
        pa.array([3, -1, 2], pa.int64()).dictionary_encode(),
    ],
    ids=["int64 -1", "int64 min", "int8", "dictionary"],
)
def test_an_integer_key_no_document_id_can_be_is_refused_naming_it(
    fake: FakeTurbopufferApi, keys: pa.Array
) -> None:
    """turbopuffer's integer document ids are unsigned 64-bit integers
    (https://turbopuffer.com/docs/write): a negative integer key is refused at load and at
    upsert naming the value and its row, before anything is sent (the fake, like the
    service, refuses such an id; it loaded before)."""
    bad = pa.table({"id": keys, "body": ["disk full", "moon node", "login"]})
    value = keys.to_pylist()[1]
    message = re.escape(f"key column 'id' holds {value!r} in row 2; integer keys cannot be")
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        with pytest.raises(EngineError, match=message):
            engine.load_table("docs", bad, text_columns=["body"])
        assert fake.requests == []
        good = pa.table({"id": pa.array([1], keys.type), "body": ["disk"]})
        engine.load_table("docs", good, text_columns=["body"])
        writes = len(fake.bodies("POST", "/namespaces/docs"))
        with pytest.raises(EngineError, match=message):
            engine.upsert_rows("docs", bad)
        assert len(fake.bodies("POST", "/namespaces/docs")) == writes
        assert engine.read_table("docs", ["id"]).column(0).to_pylist() == [1]


def test_unsigned_keys_up_to_the_largest_document_id_load(fake: FakeTurbopufferApi) -> None:
    """The ids' whole range loads: 0 and 2**64 - 1 (uint64) are document ids."""
    rows = pa.table({"id": pa.array([0, 2**64 - 1], pa.uint64()), "body": ["a b", "c d"]})
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("docs", rows, text_columns=["body"])
        assert engine.read_table("docs", ["id"]).column(0).to_pylist() == [0, 2**64 - 1]


_RFC3339_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z")


def _datetime_texts(node: Any, columns: set[str]) -> list[Any]:
    """The operands of filter leaves on ``columns`` anywhere in ``node`` (a filter array)."""
    if not isinstance(node, list) or not node:
        return []
    if node[0] in ("And", "Or"):
        return [text for part in node[1] for text in _datetime_texts(part, columns)]
    if node[0] == "Not":
        return _datetime_texts(node[1], columns)
    column, _, operand = node
    if column not in columns or operand is None:
        return []
    return list(operand) if isinstance(operand, list) else [operand]


@pytest.mark.parametrize("zone", [None, "UTC", "+05:30"], ids=["naive", "utc", "offset"])
def test_timestamps_and_dates_are_sent_as_rfc_3339_in_utc(
    fake: FakeTurbopufferApi, zone: str | None
) -> None:
    """turbopuffer converts a ``datetime`` text to UTC "if the time zone is specified"
    (https://turbopuffer.com/docs/schema) and states no instant for one without a zone, so
    every timestamp and date is written and compared as RFC 3339 text in UTC with ``Z``
    (timestamps without a zone are UTC, as on every engine; a date is its midnight). Before,
    a naive timestamp and a date went as ISO text without a zone, which the fake now refuses.
    The hits are compared with the rows' own instants filtered in Python."""
    base = datetime.datetime(2026, 3, 1, 12, 0, 0, 250000)
    moments = [base + datetime.timedelta(hours=7 * key) for key in range(6)]
    days = [datetime.date(2026, 3, 1 + key) for key in range(6)]
    kind = pa.timestamp("us", tz=zone)
    rows = pa.table(
        {
            "id": list(range(1, 7)),
            "body": ["disk full"] * 6,
            "at": pa.array(moments, pa.timestamp("us")).cast(kind)
            if zone is None
            else pa.array([m.replace(tzinfo=datetime.timezone.utc) for m in moments], kind),
            "day": pa.array(days, pa.date32()),
            "seen": pa.array([[moment, None] for moment in moments], pa.list_(pa.timestamp("us"))),
        }
    )
    cut = base + datetime.timedelta(hours=13)
    cut_day = datetime.date(2026, 3, 4)
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("docs", rows, text_columns=["body"])
        plan = SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text="disk"),
            filter=Comparison(column="at", operator=">=", value=cut)
            & Comparison(column="day", operator="<", value=cut_day),
            key_column="id",
            limit=10,
        )
        hits = engine.search(attrs.evolve(plan, columns=["id", "seen"])).hits
        keys = sorted(hit.key for hit in hits)
        seen = {
            hit.key: [moment, None] for hit in hits for moment in moments[hit.key - 1 : hit.key]
        }
        assert {
            hit.key: [m if m is None else m.replace(tzinfo=None) for m in hit.columns["seen"]]
            for hit in hits
        } == seen
        engine.upsert_rows("docs", rows.slice(0, 2))
        read = engine.read_table("docs", ["id", "at"]).column("at").to_pylist()
        lists = engine.read_table("docs", ["seen"]).column("seen").to_pylist()
    expected = sorted(
        key
        for key, moment, day in zip(range(1, 7), moments, days)
        if moment >= cut and day < cut_day
    )
    assert keys == expected
    assert [moment.replace(tzinfo=None) for moment in read] == moments
    assert [[m if m is None else m.replace(tzinfo=None) for m in v] for v in lists] == [
        [moment, None] for moment in moments
    ]
    sent = []
    for body in fake.bodies("POST", "/namespaces/docs"):
        sent += [
            text
            for name in ("at", "day")
            for text in (body.get("upsert_columns") or {}).get(name, [])
        ]
    for body in fake.bodies("POST", "/namespaces/docs/query"):
        for query in body.get("queries", [body]):
            sent += _datetime_texts(query.get("filters"), {"at", "day"})
    assert len(sent) > 12
    assert all(_RFC3339_UTC.fullmatch(text) for text in sent), sent


@pytest.mark.parametrize("operator", ["<", "<=", "=", "!=", ">=", ">"])
@pytest.mark.parametrize("offset", [-1, 0, 1, 999])
def test_a_literal_finer_than_milliseconds_is_sent_on_their_grid(
    fake: FakeTurbopufferApi, operator: str, offset: int
) -> None:
    """A ``datetime`` attribute keeps milliseconds (https://turbopuffer.com/docs/schema) and
    the service's comparison of a finer literal with one is not documented, so a literal
    between two milliseconds is sent as the exactly equivalent comparison on their grid: the
    hits are Python's comparison of the rows' instants with the literal as written, and
    every instant sent is a whole millisecond."""
    base = datetime.datetime(2026, 3, 1, 12, 0, 0)
    moments = [base + datetime.timedelta(milliseconds=key) for key in range(6)]
    literal = moments[2] + datetime.timedelta(microseconds=offset)
    rows = pa.table(
        {
            "id": list(range(1, 7)),
            "body": ["disk full"] * 6,
            "at": pa.array(moments, pa.timestamp("ms")),
        }
    )
    compare = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        ">=": lambda a, b: a >= b,
        ">": lambda a, b: a > b,
    }[operator]
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("docs", rows, text_columns=["body"])
        plan = SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text="disk"),
            filter=Comparison(column="at", operator=operator, value=literal),
            key_column="id",
            limit=10,
        )
        keys = sorted(engine.search(plan).keys)
    assert keys == [key for key, moment in zip(range(1, 7), moments) if compare(moment, literal)]
    sent = [
        text
        for body in fake.bodies("POST", "/namespaces/docs/query")
        for query in body.get("queries", [body])
        for text in _datetime_texts(query.get("filters"), {"at"})
    ]
    instants = [datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) for text in sent]
    assert all(instant.microsecond % 1000 == 0 for instant in instants), sent


def _l2_rows(*vectors: list[float]) -> pa.Table:
    return pa.table(
        {
            "id": list(range(1, len(vectors) + 1)),
            "v": pa.array(list(vectors), pa.list_(pa.float32(), 2)),
        }
    )


@pytest.mark.parametrize(
    ("vectors", "row"),
    [
        ([[1.0, 0.5], [1e20, 0.0]], 2),  # its squared norm, 1e40, is past Float32
        ([[1.5e19, 0.0], [1.0, 0.5]], 1),  # 2.25e38 is not, but its distance from -x is
        ([[1.0, 0.5], [5e18, 5e18]], 2),  # 5e37, a little past the limit
    ],
)
def test_an_l2_row_whose_distance_could_pass_float32_is_refused(
    fake: FakeTurbopufferApi, vectors: list[list[float]], row: int
) -> None:
    """The other engines rank a row at an infinite l2 distance once it is past Float32, but
    turbopuffer answers in JSON, which holds no infinity: the fake's ``Infinity`` failed in
    the client's strict JSON parser. A row of an l2 table whose squared norm could make one
    (above ``FLOAT32_MAX / 8``) is refused at load and at upsert naming it and its squared
    norm, as NumPy computes it in float64, before anything is written."""
    squared = float(np.square(np.array(vectors[row - 1], np.float32).astype(np.float64)).sum())
    assert squared > float(np.finfo(np.float32).max) / 8  # the case is past the limit
    message = re.escape(f"row {row} of vector column 'v' has the squared norm {squared:.6g}")
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        with pytest.raises(EngineError, match=message):
            engine.load_table("near", _l2_rows(*vectors), vector_metric="l2")
        assert fake.requests == []
        engine.load_table("near", _l2_rows([1.0, 0.5]), vector_metric="l2")
        with pytest.raises(EngineError, match=message):
            engine.upsert_rows("near", _l2_rows(*vectors))
        assert engine.read_table("near", ["id"]).column(0).to_pylist() == [1]


def test_l2_distances_up_to_the_limit_are_finite_and_exact(fake: FakeTurbopufferApi) -> None:
    """Rows and queries whose squared norms are at most ``FLOAT32_MAX / 8`` load and rank,
    the farthest pair (opposite vectors of the largest norm) included, at NumPy's float64
    distance rounded to Float32; a query past the limit is refused as a plan error."""
    largest = float(np.sqrt(float(np.finfo(np.float32).max) / 8)) * (1 - 1e-6)
    vectors = [[largest, 0.0], [0.0, -largest], [1.0, 2.0], [-largest * 0.6, largest * 0.8]]
    query = [-largest, 0.0]
    rows = np.array(vectors, np.float32).astype(np.float64)
    exact = ((rows - np.array(query, np.float32).astype(np.float64)) ** 2).sum(axis=1)
    expected = sorted(
        zip(range(1, 5), [float(np.float32(value)) for value in exact]),
        key=lambda pair: (pair[1], pair[0]),
    )
    assert all(np.isfinite(distance) for _, distance in expected)
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("near", _l2_rows(*vectors), vector_metric="l2")
        branch = NearestNeighborSearch(table="near", column="v", query_vector=query, metric="l2")
        hits = engine.search(SearchPlan(source=branch, key_column="id", limit=4)).hits
        assert [(hit.key, hit.distance) for hit in hits] == expected
        far = attrs.evolve(branch, query_vector=[1e19, 0.0])
        with pytest.raises(PlanError, match=r"query vector has the squared norm 1e\+38"):
            engine.search(SearchPlan(source=far, key_column="id", limit=4))


def test_a_negative_key_names_no_document_in_reads_and_deletes(
    fake: FakeTurbopufferApi,
) -> None:
    """No document has a negative integer id (a load or upsert refuses one), so a read or
    delete naming one treats it as an unknown key, as every engine does, and sends it nowhere
    (the fake, like the service, refuses such an id: the delete failed with a 400)."""
    rows = pa.table({"id": [1, 2, 3], "body": ["a", "b", "c"]})
    with TurbopufferEngine(api_key=fake.api_key, base_url=fake.url) as engine:
        engine.load_table("docs", rows, text_columns=["body"])
        assert engine.delete_rows("docs", [-1, 2, -(2**63)]) == 1
        assert engine.read_rows("docs", [-5, 1, 3]).to_pylist() == [
            {"id": 1, "body": "a"},
            {"id": 3, "body": "c"},
        ]
        assert engine.delete_rows("docs", [-1]) == 0
    sent = json.dumps([request.body for request in fake.requests])
    assert "-1" not in sent and "-5" not in sent
