"""The Hotdata engine, run end to end through hotdata-framework's real client against an
in-process fake of the Hotdata REST API (``tests/hotdata_api.py``) that executes SQL on a
LocalEngine: one statement per search, answers equal to the LocalEngine's, the engine's own
error messages, control-plane index metadata, one database resolution, and configuration."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("hotdata_framework")

from hotdata_framework import HotdataClient, ManagedDatabase

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TableName,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hotdata import (
    HotdataApiError,
    HotdataConfigError,
    HotdataEngine,
    engine_error_message,
    result_table,
    route_search,
)
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.results import SearchResult, executed_plan
from hotdata_retrieval.lint.catalog import IndexStatus
from hotdata_retrieval.routing import TableIndexes, VectorIndex
from tests.hotdata_api import FakeHotdataApi

WORDS = [
    *("error", "crash", "login", "billing", "upgrade", "version", "timeout", "refund"),
    *("password", "sync", "disk", "fox", "invoice", "export", "import", "latency"),
]
API_KEY = "test-key"
WORKSPACE = "ws_test"
DATABASE_ID = "db_support"
DATABASE_PATH = f"/v1/databases/{DATABASE_ID}"
EMBEDDER = HashingEmbedder(dimensions=32)


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=7)) for _ in range(count)]


def _connect(
    fake: FakeHotdataApi, database: str = DATABASE_ID, *, embedder: Any = None
) -> HotdataEngine:
    return HotdataEngine.connect(
        database, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url, embedder=embedder
    )


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as engine:
        bodies = _texts(1, 40)
        engine.load_table(
            "tickets",
            pa.table(
                {
                    "id": list(range(1, 41)),
                    "title": [f"ticket {i}" for i in range(1, 41)],
                    "body": bodies,
                    "embedding": pa.array(
                        EMBEDDER.embed_documents(bodies), type=pa.list_(pa.float32())
                    ),
                }
            ),
            text_columns=["body"],
        )
        engine.load_table(
            "kb",
            pa.table({"id": list(range(1, 31)), "body": _texts(2, 30)}),
            embed_columns=["body"],
        )
        engine.load_table("drafts", pa.table({"id": [1, 2], "body": ["login fails", "fox"]}))
        yield engine


@pytest.fixture(scope="module")
def fake(local: LocalEngine) -> Iterator[FakeHotdataApi]:
    with FakeHotdataApi(
        local, api_key=API_KEY, workspace_id=WORKSPACE, database_id=DATABASE_ID
    ) as api:
        # tickets: BM25 + a plain (caller-embedded) vector index; kb: one provider-backed
        # index; drafts: a BM25 index still building.
        api.index_engine_table("tickets")
        api.add_index("tickets", index_type="vector", columns=["embedding"], metric="cosine")
        api.index_engine_table("kb")
        api.add_index("drafts", index_type="bm25", columns=["body"], status="pending")
        api.add_database("db_twin_1", "twin", "conn_twin_1")
        api.add_database("db_twin_2", "twin", "conn_twin_2")
        api.attach("F1", "conn_f1")
        api.attach(None, "conn_unnamed")
        yield api


@pytest.fixture
def engine(fake: FakeHotdataApi) -> Iterator[HotdataEngine]:
    with HotdataEngine.connect(
        DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url, embedder=EMBEDDER
    ) as hotdata:
        yield hotdata


def _search_once(fake: FakeHotdataApi, engine: HotdataEngine, plan: SearchPlan) -> SearchResult:
    with fake.counting() as counts:
        result = engine.search(plan)
    assert counts == {"POST /v1/query": 1}, counts
    statement = fake.queries[-1]
    assert ";" not in statement
    assert result.sql == statement == to_sql(executed_plan(plan))  # the statement that ran
    return result


# -- searches: one statement each, the LocalEngine's answer --------------------------------


def test_text_search_sends_one_statement_and_matches_the_local_engine(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    plan = engine.plan_search("tickets", "login timeout", mode="text", limit=5)
    assert isinstance(plan.source, Bm25Search)
    result = _search_once(fake, engine, plan)
    assert "bm25_search('default.public.tickets', 'body', 'login timeout', 5)" in fake.queries[-1]
    assert result.hits == local.search(plan).hits
    assert len(result) == 5
    scores = [hit.score for hit in result]
    assert scores == sorted(scores, reverse=True)


def test_semantic_search_over_a_provider_backed_index_lets_the_engine_embed(
    fake: FakeHotdataApi, local: LocalEngine
) -> None:
    # No embedder on this side: the engine embeds the query with the index's provider.
    with HotdataEngine.connect(
        DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url
    ) as engine:
        plan = engine.plan_search("kb", "refund invoice", mode="semantic", limit=4)
        assert plan.source == VectorSearch(table="kb", column="body", query_text="refund invoice")
        result = _search_once(fake, engine, plan)
    assert "vector_search('default.public.kb', 'body', 'refund invoice', 4)" in fake.queries[-1]
    assert result.hits == local.search(plan).hits
    distances = [hit.distance for hit in result]
    assert len(distances) == 4 and distances == sorted(distances)


def test_semantic_search_over_a_plain_index_embeds_the_query_here(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    plan = engine.plan_search("tickets", "crash on upgrade", mode="semantic", limit=5)
    assert plan.source == NearestNeighborSearch(
        table="tickets",
        column="embedding",
        query_vector=EMBEDDER.embed_query("crash on upgrade"),
        metric="cosine",
    )
    result = _search_once(fake, engine, plan)
    assert "cosine_distance(embedding, ARRAY[" in fake.queries[-1]
    assert result.hits == local.search(plan).hits


def test_hybrid_search_fuses_bm25_with_the_plain_index_in_one_statement(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    plan = engine.plan_search("tickets", "password sync error", mode="hybrid", limit=6)
    assert isinstance(plan.source, ReciprocalRankFusion)
    assert [type(branch) for branch in plan.branches] == [Bm25Search, NearestNeighborSearch]
    result = _search_once(fake, engine, plan)
    statement = fake.queries[-1]
    assert "bm25_search(" in statement and "cosine_distance(" in statement
    assert "FULL OUTER JOIN" in statement.upper()
    assert result.hits == local.search(plan).hits
    assert len(result) == 6
    assert all(set(hit.branches) == {"text", "nearest"} for hit in result)


def test_auto_mode_is_hybrid_with_an_embedder_and_text_without(
    fake: FakeHotdataApi, engine: HotdataEngine
) -> None:
    assert isinstance(engine.plan_search("tickets", "fox").source, ReciprocalRankFusion)
    engine.embedder = None
    assert isinstance(engine.plan_search("tickets", "fox").source, Bm25Search)
    assert isinstance(engine.plan_search("kb", "fox").source, VectorSearch)


def test_hand_written_plans_run_as_on_the_local_engine(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="tickets", column="body", query_text="billing refund"),
                NearestNeighborSearch(
                    table="tickets",
                    column="embedding",
                    query_vector=EMBEDDER.embed_query("money back"),
                ),
            ],
            rank_constant=10,
        ),
        columns=["title"],
        limit=3,
        offset=2,
    )
    result = _search_once(fake, engine, plan)
    assert result.hits == local.search(plan).hits
    assert all(set(hit.columns) == {"title"} for hit in result)


def test_page_scores_are_computed_in_the_one_statement(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    """A hit the nearest branch did not return carries its distance, computed by the
    statement's final join from the row's stored vector."""
    query = EMBEDDER.embed_query("money back")
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="tickets", column="body", query_text="billing refund error"),
                NearestNeighborSearch(
                    table="tickets", column="embedding", query_vector=query, result_name="d"
                ),
            ],
            weights=[3, 1],  # the text branch's hits first, the nearest branch's few
            depth=5,
        ),
        limit=5,
        page_scores=["nearest"],
    )
    result = _search_once(fake, engine, plan)
    computing = "COALESCE(fused.nearest_distance, cosine_distance(base.embedding, ARRAY["
    assert computing in fake.queries[-1]
    assert result.hits == local.search(plan).hits
    stored = {
        row["id"]: np.asarray(row["embedding"], dtype=np.float64)
        for row in local.read_table("tickets").to_pylist()
    }
    wanted = np.asarray(query, dtype=np.float32).astype(np.float64)
    computed = 0
    for hit in result:
        nearest = hit.branches["nearest"]
        vector = stored[hit.key]
        reference = 1.0 - vector @ wanted / (np.linalg.norm(vector) * np.linalg.norm(wanted))
        assert nearest.raw_score == pytest.approx(reference, abs=1e-6)
        computed += nearest.computed
    assert computed >= 1


# -- errors ---------------------------------------------------------------------------------


def test_an_engine_error_reaches_the_caller_as_the_engines_message(
    fake: FakeHotdataApi, engine: HotdataEngine
) -> None:
    plan = SearchPlan(source=Bm25Search(table="tickets", column="title", query_text="ticket"))
    with pytest.raises(HotdataApiError) as caught:
        engine.search(plan)
    error = caught.value
    assert str(error) == ("No BM25 index found on column 'title' for default.public.tickets")
    assert isinstance(error, EngineError)
    assert error.status == 400
    assert error.sql == fake.queries[-1]
    # The framework's own exception said only "Bad Request".
    assert isinstance(error.__cause__, RuntimeError)
    assert str(error.__cause__) == "Bad Request"


def test_a_missing_table_or_column_is_a_typed_error(engine: HotdataEngine) -> None:
    with pytest.raises(EngineError, match="nope"):
        engine.search(SearchPlan(source=Bm25Search(table="nope", column="body", query_text="x")))
    with pytest.raises(EngineError, match="nope"):
        engine.search(
            SearchPlan(
                source=Bm25Search(table="tickets", column="body", query_text="fox"),
                columns=["id", "nope"],
            )
        )
    with pytest.raises(HotdataApiError, match=r"table 'default\.public\.nope' not found") as caught:
        engine.indexes("nope")
    assert caught.value.status == 404
    assert str(caught.value).endswith("; tables: " + ", ".join(sorted(engine.tables)))
    with pytest.raises(EngineError, match="No field named nope"):
        engine.sql("SELECT nope FROM tickets")


def test_an_unknown_catalog_is_refused_before_any_request(
    fake: FakeHotdataApi, engine: HotdataEngine
) -> None:
    with fake.counting() as counts, pytest.raises(HotdataConfigError, match="catalog 'other'"):
        engine.indexes("other.public.tickets")
    assert counts == {}


def test_an_attached_catalog_is_listed_through_its_own_connection(
    fake: FakeHotdataApi, engine: HotdataEngine
) -> None:
    with fake.counting() as counts, pytest.raises(HotdataApiError, match="not found"):
        engine.indexes("f1.public.results")  # the fake serves no tables there
    assert counts == {"GET /v1/connections/conn_f1/tables/public/results/indexes": 1}


def test_error_bodies_without_a_message(
    fake: FakeHotdataApi, engine: HotdataEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotdata_retrieval._http import pool_manager

    monkeypatch.setattr(pool_manager, "BACKOFF_SECONDS", 0.0)  # 503 and 429 are retried
    fake.respond_once(400, b"")
    with pytest.raises(HotdataApiError, match=r"HTTP 400 \(Bad Request\) with no message") as e:
        engine.sql('SELECT "Title" FROM tickets')
    assert "lower case" in str(e.value)  # the quoted mixed-case hint (engine contract §4)
    for _ in range(pool_manager.MAX_RETRIES + 1):
        fake.respond_once(503, "upstream unavailable")
    with pytest.raises(HotdataApiError, match="HTTP 503 Service Unavailable: upstream") as e:
        engine.sql("SELECT 1")
    assert e.value.status == 503
    for _ in range(pool_manager.MAX_RETRIES + 1):
        fake.respond_once(429, {"error": {"code": "RATE_LIMITED", "message": "slow down"}})
    with pytest.raises(HotdataApiError, match=r"^slow down$") as e:
        engine.sql("SELECT 1")
    assert e.value.code == "RATE_LIMITED"


def test_engine_error_message_reads_a_plain_exception() -> None:
    assert engine_error_message(RuntimeError("Query failed (failed)")) == "Query failed (failed)"


# -- index metadata -------------------------------------------------------------------------


def test_indexes_come_from_the_control_plane_listing(engine: HotdataEngine) -> None:
    tickets = engine.indexes("tickets")
    assert tickets == TableIndexes(
        table=TableName.parse("default.public.tickets"),
        bm25_columns=("body",),
        vectors=(VectorIndex(column="embedding", source_column=None, metric="cosine"),),  # type: ignore[arg-type]
    )
    kb = engine.indexes("kb")
    assert kb.bm25_columns == ()
    assert kb.vectors == (
        VectorIndex(column="body_embedding", source_column="body", metric="cosine"),
    )
    assert engine.embedder_for("tickets") is EMBEDDER
    assert engine.embedder_for("kb") is None


def test_a_pending_index_is_not_offered(engine: HotdataEngine) -> None:
    catalog = engine.index_catalog("drafts")
    assert [entry.status for entry in catalog.indexes] == [IndexStatus.PENDING]
    assert engine.indexes("drafts").bm25_columns == ()
    with pytest.raises(PlanError, match="still building, so not offered: bm25 on body"):
        engine.plan_search("drafts", "login", mode="text")
    with pytest.raises(PlanError, match="no ready BM25 or vector index"):
        engine.plan_search("drafts", "login")


def test_a_semantic_search_over_a_plain_index_needs_an_embedder(fake: FakeHotdataApi) -> None:
    with (
        HotdataEngine.connect(
            DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url
        ) as engine,
        pytest.raises(PlanError, match="needs an embedder"),
    ):
        engine.plan_search("tickets", "crash", mode="semantic")


# -- routing (no server) --------------------------------------------------------------------

PLAIN = VectorIndex(column="embedding", source_column=None, metric="dot")  # type: ignore[arg-type]
PROVIDER = VectorIndex(column="body_embedding", source_column="body")


def _indexes(*vectors: VectorIndex, bm25: tuple[str, ...] = ("body",)) -> TableIndexes:
    return TableIndexes(table=TableName.parse("docs"), bm25_columns=bm25, vectors=vectors)


def test_routing_rules() -> None:
    embed = EMBEDDER.embed_query
    text = route_search(_indexes(PLAIN), "q", mode="text")
    assert text.source == Bm25Search(table="docs", column="body", query_text="q")
    semantic = route_search(_indexes(PROVIDER, bm25=()), "q", mode="semantic")
    assert semantic.source == VectorSearch(table="docs", column="body", query_text="q")
    plain = route_search(_indexes(PLAIN, bm25=()), "q", mode="semantic", embed_query=embed)
    assert isinstance(plain.source, NearestNeighborSearch)
    assert plain.source.metric.value == "dot"
    assert plain.projection == ("id",)
    hybrid = route_search(_indexes(PLAIN), "q", mode="hybrid", embed_query=embed)
    assert isinstance(hybrid.source, ReciprocalRankFusion)
    auto = route_search(_indexes(PLAIN), "q", embed_query=embed)
    assert auto.source == hybrid.source
    assert isinstance(route_search(_indexes(PLAIN), "q").source, Bm25Search)


def test_routing_refusals() -> None:
    embed = EMBEDDER.embed_query
    with pytest.raises(PlanError, match="cannot share its table with a BM25 index"):
        route_search(_indexes(PROVIDER), "q", mode="hybrid", embed_query=embed)
    second = VectorIndex(column="title_vec", source_column=None)  # type: ignore[arg-type]
    with pytest.raises(PlanError, match="2 plain vector indexes"):
        route_search(_indexes(PLAIN, second), "q", mode="hybrid", embed_query=embed)
    chosen = route_search(
        _indexes(PLAIN, second), "q", mode="hybrid", embed_query=embed, vector_column="title_vec"
    )
    assert chosen.branches[1].column == "title_vec"
    # auto declines to guess the pairing
    auto = route_search(_indexes(PLAIN, second), "q", embed_query=embed)
    assert isinstance(auto.source, Bm25Search)
    with pytest.raises(PlanError, match="needs an embedder"):
        route_search(_indexes(PLAIN), "q", mode="hybrid")
    with pytest.raises(PlanError, match="unknown mode"):
        route_search(_indexes(PLAIN), "q", mode="fuzzy")
    with pytest.raises(PlanError, match="no ready BM25 index"):
        route_search(_indexes(PLAIN, bm25=()), "q", mode="text")
    with pytest.raises(PlanError, match="has no ready BM25 index; ready: body"):
        route_search(_indexes(PLAIN), "q", mode="text", text_column="title")


# -- the database is resolved once ----------------------------------------------------------


def test_the_database_is_resolved_once_across_many_calls(fake: FakeHotdataApi) -> None:
    with fake.counting() as counts, _connect(fake, embedder=EMBEDDER) as engine:
        plan = engine.plan_search("tickets", "login", mode="hybrid")
        for _ in range(5):
            engine.search(plan)
        for _ in range(3):
            engine.sql("SELECT count(*) AS n FROM tickets")
        engine.indexes("kb")
    assert counts[f"GET {DATABASE_PATH}"] == 1
    assert counts["POST /v1/query"] == 8
    assert "GET /v1/databases" not in counts
    scoped = [r for r in fake.requests[-9:] if r.path == "/v1/query"]
    assert {r.headers.get("x-database-id") for r in scoped} == {DATABASE_ID}


def test_a_database_name_is_resolved_through_the_listing(fake: FakeHotdataApi) -> None:
    with fake.counting() as counts:
        engine = HotdataEngine.connect(
            "support", api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url
        )
        engine.sql("SELECT 1 AS one")
        engine.sql("SELECT 1 AS one")
        engine.close()
    assert engine.database == ManagedDatabase(
        id=DATABASE_ID, description="support", default_connection_id="conn_support"
    )
    assert counts == {
        "GET /v1/databases/support": 1,  # the id lookup: 404
        "GET /v1/databases": 1,
        f"GET {DATABASE_PATH}": 1,
        "POST /v1/query": 2,
    }


def test_an_unknown_or_ambiguous_database_is_a_configuration_error(fake: FakeHotdataApi) -> None:
    with pytest.raises(HotdataConfigError, match="no database with id or name 'nowhere'"):
        _connect(fake, "nowhere")
    with pytest.raises(HotdataConfigError, match="2 databases are named 'twin'"):
        _connect(fake, "twin")
    with pytest.raises(HotdataConfigError, match="non-empty"):
        _connect(fake, "")


def test_an_existing_client_and_a_resolved_database_cost_no_lookup(fake: FakeHotdataApi) -> None:
    database = ManagedDatabase(
        id=DATABASE_ID, description=None, default_connection_id="conn_support"
    )
    with HotdataClient(API_KEY, WORKSPACE, host=fake.url) as client, fake.counting() as counts:
        engine = HotdataEngine(client, database)
        assert engine.sql("SELECT 2 AS two").column("two").to_pylist() == [2]
        assert engine.indexes("tickets").bm25_columns == ("body",)
        engine.close()  # not its client: left open
        assert engine.sql("SELECT 3 AS three").num_rows == 1
    assert counts == {
        "POST /v1/query": 2,
        "GET /v1/connections/conn_support/tables/public/tickets/indexes": 1,
    }


# -- configuration from the environment ----------------------------------------------------


def test_environment_configuration(fake: FakeHotdataApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOTDATA_API_KEY", API_KEY)
    monkeypatch.setenv("HOTDATA_API_URL", f"{fake.url}/v1/")
    monkeypatch.setenv("HOTDATA_WORKSPACE", WORKSPACE)
    with fake.counting() as counts, HotdataEngine.from_env(database=DATABASE_ID) as engine:
        assert engine.workspace_id == WORKSPACE
        assert engine.client.host == fake.url
        assert engine.sql("SELECT 1 AS one").num_rows == 1
    assert "GET /v1/workspaces" not in counts

    # Without HOTDATA_WORKSPACE the client picks the first active workspace.
    monkeypatch.delenv("HOTDATA_WORKSPACE")
    with fake.counting() as counts, HotdataEngine.from_env(database=DATABASE_ID) as engine:
        assert engine.workspace_id == WORKSPACE
    assert counts["GET /v1/workspaces"] == 1


def test_environment_errors(fake: FakeHotdataApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOTDATA_API_KEY", raising=False)
    monkeypatch.setenv("HOTDATA_API_URL", fake.url)
    monkeypatch.setenv("HOTDATA_WORKSPACE", WORKSPACE)
    with pytest.raises(HotdataConfigError, match="HOTDATA_API_KEY must be set"):
        HotdataEngine.from_env(database=DATABASE_ID)
    monkeypatch.setenv("HOTDATA_API_KEY", "wrong-key")
    with pytest.raises(HotdataApiError, match="invalid API key") as caught:
        HotdataEngine.from_env(database=DATABASE_ID)
    assert caught.value.status == 401
    monkeypatch.delenv("HOTDATA_WORKSPACE")
    with pytest.raises(HotdataApiError) as caught:  # the workspace listing refuses the key
        HotdataEngine.from_env(database=DATABASE_ID)
    assert caught.value.status == 401


# -- results --------------------------------------------------------------------------------


def test_sql_returns_an_arrow_table(engine: HotdataEngine) -> None:
    table = engine.sql("SELECT id, title, embedding FROM tickets WHERE id <= 2 ORDER BY id")
    assert table.column_names == ["id", "title", "embedding"]
    assert table.schema.field("id").type == pa.int64()
    assert table.column("title").to_pylist() == ["ticket 1", "ticket 2"]
    assert table.schema.field("embedding").type == pa.list_(pa.float64())
    assert len(table.column("embedding")[0]) == 32
    empty = engine.sql("SELECT id FROM tickets WHERE id < 0")
    assert empty.num_rows == 0 and empty.column_names == ["id"]


def test_result_table_keeps_duplicate_names_and_mixed_values() -> None:
    table = result_table(["a", "a", "b", "c"], [[1, 2, 1.5, "x"], [3, 4, 2, 7]])
    assert table.column_names == ["a", "a", "b", "c"]
    assert table.column(2).to_pylist() == [1.5, 2.0]
    assert table.column(3).to_pylist() == ["x", "7"]
    with pytest.raises(EngineError, match="row 1"):
        result_table(["a", "b"], [[1]])


# -- the fake server itself -----------------------------------------------------------------


def test_the_fake_api_stops_at_teardown_and_after_its_lifetime(local: LocalEngine) -> None:
    with FakeHotdataApi(local) as api:
        port = int(api.url.rsplit(":", 1)[1])
    with pytest.raises(RuntimeError, match="not running"):
        _ = api.url
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass

    bounded = FakeHotdataApi(local, lifetime_s=0.2).start()
    deadline = time.monotonic() + 5
    while bounded.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bounded.running
    bounded.stop()  # idempotent


def test_a_profile_must_write_the_hotdata_dialect(fake: FakeHotdataApi) -> None:
    database = ManagedDatabase(
        id=DATABASE_ID, description=None, default_connection_id="conn_support"
    )
    with HotdataClient(API_KEY, WORKSPACE, host=fake.url) as client:
        with pytest.raises(EngineError, match="runs the Hotdata dialect's SQL"):
            HotdataEngine(client, database, profile="duckdb")
        engine = HotdataEngine(client, database, profile="hotdata")
        plan = SearchPlan(source=Bm25Search(table="tickets", column="body", query_text="login"))
        assert engine.search(plan).sql == to_sql(executed_plan(plan))


def test_a_list_test_of_a_vector_column_is_refused_as_on_the_local_engine(
    fake: FakeHotdataApi, engine: HotdataEngine, local: LocalEngine
) -> None:
    """A column the API lists as ``List(Float32)`` (a list of floating-point numbers of any
    lengths) is a vector column, as Arrow's type is on every engine (``is_vector_type``):
    ``contains_any`` over it is refused by the local engine and by the Hotdata engine alike,
    with the same message and before any statement is sent (before, the Hotdata engine read
    the listed name as a plain list and sent the filter)."""
    from hotdata_retrieval.plan.filters import ContainsAny

    plan = SearchPlan(
        source=Bm25Search(table="tickets", column="body", query_text="login"),
        filter=ContainsAny(column="embedding", values=[0.5]),
        key_column="id",
        limit=3,
    )
    with pytest.raises(PlanError) as on_local:
        local.search(plan)
    with fake.counting() as counts, pytest.raises(PlanError) as on_hotdata:
        engine.search(plan)
    assert "POST /v1/query" not in counts, counts
    assert str(on_hotdata.value) == str(on_local.value)
    assert "holds vector values" in str(on_local.value)
