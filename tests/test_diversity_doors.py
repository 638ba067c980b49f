"""Diversity through the doors that take it — a :class:`SearchRequest`, the chain and
``hdq search`` — each giving LangChain's ``maximal_marginal_relevance`` (the reference) over
the candidates the same search returns without it, and refusing a bad value with one clear
line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from hotdata_retrieval import PlanError
from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.plan.steps import Diversity
from hotdata_retrieval.routing import SearchRequest

QUERY = "app crashes on start"
BODIES = [
    "the app crashes on start",
    "the app crashes on start",
    "app crashes on start every time",
    "the app crashes when opening settings",
    "crash on start after the update",
    "charged twice for one order",
    "start the sync again",
    "the desktop app freezes",
    "crashes on start, then again",
    "refund for a cancelled plan",
    "app start is slow",
    "the app crashes on start",
]
LIMIT, CANDIDATES, LAMBDA = 4, 10, 0.3


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("diversity") / "db"
    table = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    with LocalEngine(directory, embedder=HashingEmbedder()) as engine:
        engine.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
    return directory


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[LocalEngine]:
    with LocalEngine(database, embedder=HashingEmbedder()) as opened:
        yield opened


def _reference(engine: LocalEngine, plan: SearchPlan) -> list[Any]:
    """LangChain's MMR over the plan's candidates, cut to its page."""
    step = plan.steps[0]
    assert isinstance(step, Diversity)
    candidates = attrs.evolve(plan, steps=(), limit=CANDIDATES, offset=0, include_vectors=True)
    hits = engine.search(candidates).hits
    branch = next(b for b in plan.branches if isinstance(b, NearestNeighborSearch))
    chosen = maximal_marginal_relevance(
        np.asarray(branch.query_vector),
        [list(hit.columns[branch.column]) for hit in hits],
        lambda_mult=LAMBDA,
        k=plan.offset + plan.limit,
    )
    return [hits[index].key for index in chosen][plan.offset :]


@pytest.mark.parametrize("mode", ["nearest", "hybrid"])
def test_a_request_and_the_chain_give_the_reference(engine: LocalEngine, mode: str) -> None:
    request = SearchRequest(
        table="docs", query=QUERY, mode=mode, limit=LIMIT, diversity=LAMBDA, candidates=CANDIDATES
    )
    plan = engine.plan_search(request)
    assert plan.steps == (Diversity(mmr_lambda=LAMBDA, candidates=CANDIDATES),)
    expected = _reference(engine, plan)
    assert engine.search(plan).keys == expected
    plain = engine.search(attrs.evolve(plan, steps=())).keys
    assert plain != expected  # the duplicated bodies crowd the plain page
    chained = engine.table("docs").search(QUERY, mode=mode, diversity=LAMBDA, candidates=CANDIDATES)
    assert chained.limit(LIMIT).run().keys == expected
    stepped = engine.table("docs").search(QUERY, mode=mode).limit(LIMIT)
    assert stepped.diversity(LAMBDA, candidates=CANDIDATES).run().keys == expected
    second = attrs.evolve(plan, offset=2, limit=2)
    assert engine.search(second).keys == _reference(engine, second)


def test_the_chain_explains_the_statement_and_the_step(engine: LocalEngine) -> None:
    search = engine.table("docs").search(QUERY, mode="nearest").limit(LIMIT)
    text = search.diversity(LAMBDA, candidates=CANDIDATES).explain()
    assert f"LIMIT {CANDIDATES}" in text
    assert f"-- step 1: diversity: maximal marginal relevance, lambda {LAMBDA}" in text
    assert f"-- page: offset 0, limit {LIMIT}" in text


def test_hdq_search_gives_the_reference(engine: LocalEngine, database: Path) -> None:
    plan = engine.plan_search(
        SearchRequest(
            table="docs", query=QUERY, mode="hybrid", limit=LIMIT, diversity=LAMBDA,
            candidates=CANDIDATES,
        )
    )  # fmt: skip
    result = CliRunner().invoke(
        main,
        [
            "search", QUERY, "--table", "docs", "--database", str(database), "--mode", "hybrid",
            "-k", str(LIMIT), "--diversity", str(LAMBDA), "--candidates", str(CANDIDATES),
            "--format", "json", "--explain",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [hit["key"] for hit in document["hits"]] == _reference(engine, plan)
    assert any(line.startswith("step 1: diversity") for line in document["steps"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--diversity", "1.5"], "--diversity is maximal marginal relevance's lambda"),
        (["--diversity", "0.5", "--candidates", "2000"], "--candidates must be at most 1000"),
        (["--candidates", "20"], "give diversity too"),
        (["--diversity", "0.5", "--mode", "text"], "only a nearest-neighbour branch carries"),
        (["--diversity", "0.5", "--candidates", "2"], "reaches past the 2 rows"),
    ],
)
def test_hdq_search_refuses_a_bad_diversity_in_one_line(
    database: Path, arguments: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        main, ["search", QUERY, "--table", "docs", "--database", str(database), *arguments]
    )
    assert result.exit_code != 0
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_a_request_refuses_a_bad_diversity() -> None:
    with pytest.raises(PlanError, match=r"between 0 .* and 1"):
        SearchRequest(table="docs", query=QUERY, diversity=-0.1)
    with pytest.raises(PlanError, match="diversity must be a number"):
        SearchRequest(table="docs", query=QUERY, diversity="high")


# -- the adapter doors, through SearchSettings ---------------------------------------------


@pytest.fixture(scope="module")
def fused_reference(engine: LocalEngine) -> list[Any]:
    """The reference page of the doors' search: hybrid (the table's auto route), k rows."""
    plan = engine.plan_search(
        SearchRequest(
            table="docs", query=QUERY, mode="auto", limit=LIMIT, diversity=LAMBDA,
            candidates=CANDIDATES,
        )
    )  # fmt: skip
    assert plan.fusion is not None
    return _reference(engine, plan)


def _arguments() -> dict[str, Any]:
    return {"query": QUERY, "k": LIMIT, "diversity": LAMBDA, "candidates": CANDIDATES}


def test_the_toolkit(engine: LocalEngine, fused_reference: list[Any]) -> None:
    from hotdata_retrieval.adapters import SearchToolkit

    toolkit = SearchToolkit(engine, table="docs", k=LIMIT)
    rows = toolkit.search_text(**_arguments())["rows"]
    assert [row["id"] for row in rows] == fused_reference
    assert "`diversity` (0 to 1)" in toolkit.describe_text_search()
    defaulted = SearchToolkit(engine, table="docs", k=LIMIT, diversity=LAMBDA, candidates=10)
    assert [row["id"] for row in defaulted.search_text(QUERY)["rows"]] == fused_reference


def test_the_langchain_tool_and_retriever(engine: LocalEngine, fused_reference: list[Any]) -> None:
    from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_text_search_tool
    from hotdata_retrieval.adapters.settings import SearchSettings

    tool = make_text_search_tool(engine, table="docs", k=LIMIT)
    answer = json.loads(tool.invoke(_arguments()))
    assert [row["id"] for row in answer["rows"]] == fused_reference
    settings = SearchSettings(table="docs", k=LIMIT, diversity=LAMBDA, candidates=CANDIDATES)
    documents = HotdataRetriever(engine=engine, settings=settings).invoke(QUERY)
    assert [int(document.id) for document in documents] == fused_reference


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(
    engine: LocalEngine, fused_reference: list[Any], anyio_backend: str
) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    async with Client(create_server(engine, table="docs", k=LIMIT)) as client:
        result = await client.call_tool("hotdata_search_text", _arguments())
        refused = await client.call_tool("hotdata_search_text", {"query": QUERY, "diversity": 3})
    assert result.is_error is False, result.content
    rows = json.loads(result.content[0].text)["rows"]
    assert [row["id"] for row in rows] == fused_reference
    assert refused.is_error is True
    assert "between 0 (diversity only) and 1" in refused.content[0].text


def test_the_ddn_function(engine: LocalEngine, fused_reference: list[Any]) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="docs", default_top_k=LIMIT))
    values = {"query": QUERY, "diversity": LAMBDA, "candidates": CANDIDATES}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    assert [hit["id"] for hit in row["__value"]] == fused_reference


def test_a_door_refuses_candidates_alone_and_a_text_only_search(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters import SearchToolkit, ToolError
    from hotdata_retrieval.adapters.settings import SearchSettings

    toolkit = SearchToolkit(engine, table="docs", k=LIMIT)
    with pytest.raises(ToolError, match="give diversity too"):
        toolkit.search_text(QUERY, candidates=10)
    with pytest.raises(ToolError, match="candidates must be at most 1000"):
        toolkit.search_text(QUERY, diversity=0.5, candidates=5000)
    with pytest.raises(ToolError, match="between 0"):
        SearchSettings(table="docs", diversity=2)
