"""The engine contract: every engine is an ``Engine`` with the contract's signatures; the local
and Hotdata engines route
through the one router, and expand a plan the same way (a fused plan projecting a column
named like a branch's debug column runs on both and answers the same)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("hotdata_framework")

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines import OPTIONAL_CAPABILITIES, Engine
from hotdata_retrieval.engines.base import (
    DOCUMENT_CAPABILITIES,
    DocumentEngine,
    missing_capabilities,
)
from hotdata_retrieval.engines.duckdb import DuckdbEngine
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.lancedb import LancedbEngine
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.postgres import PostgresEngine
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.engines.sqlite import SqliteEngine
from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine
from hotdata_retrieval.routing import HOTDATA_ROUTING, LOCAL_ROUTING
from tests.hotdata_api import FakeHotdataApi

API_KEY = "test-key"
WORKSPACE = "ws_contract"
DATABASE_ID = "db_contract"
EMBEDDER = HashingEmbedder(dimensions=16)
BODIES = [
    "the app crashes on start",
    "charged twice for one order",
    "password reset mail never arrives",
    "sync fails with error E1234",
    "refund for a cancelled plan",
    "crash when opening the settings",
    "the app crashes after the upgrade",
]
ENGINES = (LocalEngine, HotdataEngine, SqliteEngine, DuckdbEngine, PostgresEngine, LancedbEngine)
CONTRACT = ("search", "sql", "indexes", "plan_search")


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as engine:
        ids = list(range(1, len(BODIES) + 1))
        engine.load_table(
            "tickets",
            pa.table(
                {
                    "id": ids,
                    "body": BODIES,
                    # a table column named like the text branch's rank column
                    "text_rank": [f"rank-{i}" for i in ids],
                    "embedding": pa.array(
                        EMBEDDER.embed_documents(BODIES), type=pa.list_(pa.float32())
                    ),
                }
            ),
            text_columns=["body"],
        )
        engine.load_table("kb", pa.table({"id": ids, "body": BODIES}), embed_columns=["body"])
        yield engine


@pytest.fixture(scope="module")
def fake(local: LocalEngine) -> Iterator[FakeHotdataApi]:
    with FakeHotdataApi(
        local, api_key=API_KEY, workspace_id=WORKSPACE, database_id=DATABASE_ID
    ) as api:
        api.index_engine_table("tickets")
        api.add_index("tickets", index_type="vector", columns=["embedding"], metric="cosine")
        api.index_engine_table("kb")
        yield api


@pytest.fixture
def hotdata(fake: FakeHotdataApi) -> Iterator[HotdataEngine]:
    with HotdataEngine.connect(
        DATABASE_ID, api_key=API_KEY, workspace_id=WORKSPACE, host=fake.url, embedder=EMBEDDER
    ) as engine:
        yield engine


# -- the contract --------------------------------------------------------------------------


def test_both_engines_are_engines(local: LocalEngine, hotdata: HotdataEngine) -> None:
    for cls in ENGINES:
        assert issubclass(cls, Engine)
    assert isinstance(local, Engine)
    assert isinstance(hotdata, Engine)
    assert not isinstance(object(), Engine)


def _parameters(function: Any) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(function).parameters)


@pytest.mark.parametrize("cls", ENGINES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("method", CONTRACT)
def test_engines_have_the_contracts_signatures(cls: type, method: str) -> None:
    """Every parameter of the contract, with its kind, default and annotation; anything more
    an engine takes is keyword-only and optional."""
    wanted = _parameters(getattr(Engine, method))
    actual = _parameters(getattr(cls, method))
    for name, parameter in wanted.items():
        assert name in actual, f"{cls.__name__}.{method} lacks {name}"
        got = actual[name]
        assert (got.kind, got.default, got.annotation) == (
            parameter.kind,
            parameter.default,
            parameter.annotation,
        ), f"{cls.__name__}.{method}({name})"
    for name, parameter in actual.items():
        if name not in wanted:
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (cls, method, name)
            assert parameter.default is not inspect.Parameter.empty, (cls, method, name)
    assert (
        inspect.signature(getattr(cls, method)).return_annotation
        == inspect.signature(getattr(Engine, method)).return_annotation
    )


DOCUMENT_ENGINE_CLASSES = (*ENGINES, TurbopufferEngine)
KEYED_ROWS = ("read_table", "read_rows", "upsert_rows", "delete_rows")


@pytest.mark.parametrize("cls", DOCUMENT_ENGINE_CLASSES, ids=lambda cls: cls.__name__)
def test_every_engine_keeps_document_tables_with_the_protocols_signatures(cls: type) -> None:
    """Each capability a document table needs, with the protocol's parameters (kind and
    default); anything more an engine takes is keyword-only and optional. (That each is a
    ``DocumentEngine`` mypy checks: ``engines/base.py``.)"""
    assert not missing_capabilities(cls, DOCUMENT_CAPABILITIES)
    assert isinstance(inspect.getattr_static(cls, "tables"), property)
    for method in KEYED_ROWS:
        wanted = _parameters(getattr(DocumentEngine, method))
        actual = _parameters(getattr(cls, method))
        for name, parameter in wanted.items():
            assert name in actual, f"{cls.__name__}.{method} lacks {name}"
            got = actual[name]
            assert (got.kind, got.default) == (parameter.kind, parameter.default), (
                f"{cls.__name__}.{method}({name})"
            )
        for name, parameter in actual.items():
            if name not in wanted:
                assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (cls, method, name)
                assert parameter.default is not inspect.Parameter.empty, (cls, method, name)
    assert set(DOCUMENT_CAPABILITIES) - {"search"} <= set(OPTIONAL_CAPABILITIES)


def test_optional_capabilities_are_outside_the_contract() -> None:
    assert not set(OPTIONAL_CAPABILITIES) & set(CONTRACT)
    assert hasattr(LocalEngine, "stream_sql") and not hasattr(HotdataEngine, "stream_sql")
    assert hasattr(HotdataEngine, "index_catalog") and not hasattr(LocalEngine, "index_catalog")


def test_the_local_engine_names_the_model_that_made_a_tables_vectors(
    local: LocalEngine,
) -> None:
    """``vector_model``, as the stores have it: the embedder of an embedded column, none for
    a caller's vectors; ``embedder_for`` is the engine's embedder only where it made them."""
    assert local.vector_model("kb") == EMBEDDER.name
    assert local.embedder_for("kb") is EMBEDDER
    assert local.vector_model("tickets") is None
    assert local.embedder_for("tickets") is None
    assert "vector_model" in OPTIONAL_CAPABILITIES
    with pytest.raises(EngineError, match=r"table 'default\.public\.nowhere' not found"):
        local.vector_model("nowhere")


def test_each_engine_routes_under_its_policy(local: LocalEngine, hotdata: HotdataEngine) -> None:
    assert local.routing_policy is LOCAL_ROUTING
    assert hotdata.routing_policy is HOTDATA_ROUTING
    # The same table, the same request: the engines' indexes differ (the local engine does
    # not report a caller's vector column), so their plans do.
    assert isinstance(hotdata.plan_search("tickets", "crash").source, ReciprocalRankFusion)
    assert isinstance(local.plan_search("tickets", "crash").source, Bm25Search)
    # An engine-embedded column: semantic means vector_search on both.
    for engine in (local, hotdata):
        plan = engine.plan_search("kb", "crash", mode="semantic", limit=3)
        assert plan.branches[0].kind == "semantic"
        assert plan.projection == ("id", "body")
    plan = local.plan_search("kb", "crash", mode="nearest", key_column="body")
    assert plan.branches[0].column == "body_embedding"
    assert plan.key_column == "body"


def test_plan_search_embeds_with_the_callers_embedder_when_given(
    local: LocalEngine, hotdata: HotdataEngine
) -> None:
    calls: list[str] = []

    def embed(text: str) -> list[float]:
        calls.append(text)
        return EMBEDDER.embed_query(text)

    for engine in (local, hotdata):
        plan = engine.plan_search("kb" if engine is local else "tickets", "q", mode="nearest")
        assert isinstance(plan.branches[0], NearestNeighborSearch)
        engine.plan_search(
            "kb" if engine is local else "tickets", "q", mode="nearest", embed_query=embed
        )
    assert calls == ["q", "q"]


# -- one expansion of search(plan) ---------------------------------------------------------


def _fused(columns: list[str]) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="tickets", column="body", query_text="app crashes"),
                NearestNeighborSearch(
                    table="tickets",
                    column="embedding",
                    query_vector=EMBEDDER.embed_query("the program quits"),
                ),
            ]
        ),
        columns=columns,
        limit=4,
    )


def test_a_fused_plan_projecting_text_rank_runs_the_same_on_both_engines(
    local: LocalEngine, hotdata: HotdataEngine, fake: FakeHotdataApi
) -> None:
    plan = _fused(["id", "text_rank"])
    on_local = local.search(plan)
    on_hotdata = hotdata.search(plan)
    assert on_hotdata.hits == on_local.hits
    assert len(on_local) == 4
    for hit in on_local:
        # the user's column wins: the table's text_rank, not the branch's rank
        assert hit.columns == {"id": hit.key, "text_rank": f"rank-{hit.key}"}
        assert all(branch.rank is None for branch in hit.branches.values())
    # SearchResult.sql is the statement that ran, the same on both
    assert on_hotdata.sql == fake.queries[-1] == on_local.sql == to_sql(executed_plan(plan))


def test_without_a_clash_both_engines_report_branch_ranks(
    local: LocalEngine, hotdata: HotdataEngine
) -> None:
    plan = _fused(["id", "body"])
    on_local = local.search(plan)
    assert hotdata.search(plan).hits == on_local.hits
    assert any(hit.branches["text"].rank == 1 for hit in on_local)


def test_the_local_engine_modules_do_not_import_each_other_in_a_cycle() -> None:
    # engine.py imports _session, _search, hybrid, ...; none of those imports engine.py back at
    # module level, not even for type checking (hybrid_search sees the engine as a HybridHost
    # protocol). The SQL worker's entry point opens an engine in the child process, inside a
    # function: that is not a cycle.
    import ast
    from pathlib import Path

    import hotdata_retrieval.engines.local as local_package

    package = Path(local_package.__file__).parent
    importers = []
    for module in sorted(package.glob("*.py")):
        if module.name in ("engine.py", "__init__.py"):
            continue
        tree = ast.parse(module.read_text(encoding="utf-8"))
        top_level = [
            *tree.body,
            *(child for node in tree.body if isinstance(node, ast.If) for child in node.body),
        ]
        for node in top_level:
            if isinstance(node, ast.ImportFrom) and node.module == (
                "hotdata_retrieval.engines.local.engine"
            ):
                importers.append(module.name)
    assert importers == []


def test_the_local_engine_is_a_small_facade_over_modules_of_few_imports() -> None:
    # engine.py delegates to _catalog, _storage, _session, _functions and _search; no module
    # of the engine imports more than 12 of the library's modules at run time (imports for
    # type annotations only are not counted: they are not executed).
    import ast
    from pathlib import Path

    import hotdata_retrieval.engines.local as local_package

    package = Path(local_package.__file__).parent
    assert len((package / "engine.py").read_text(encoding="utf-8").splitlines()) < 400
    counts = {}
    for module in sorted(package.glob("*.py")):
        imported: set[str] = set()
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for child in ast.walk(node):
                if isinstance(child, ast.ImportFrom) and (child.module or "").startswith(
                    "hotdata_retrieval"
                ):
                    if child.module == "hotdata_retrieval.engines.local":
                        imported.update(f"{child.module}.{alias.name}" for alias in child.names)
                    else:
                        imported.add(str(child.module))
        counts[module.name] = len(imported)
    assert max(counts.values()) <= 12, counts
