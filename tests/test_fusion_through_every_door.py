"""A filtered DBSF search through every door: the toolkit, the LangChain tool and retriever, the
MCP tool, the DDN function and ``hdq search``. Each returns the reference fusion
(``reference_fusion``) of the branches as the engine ranks each alone under the filter; the
filter keeps rows an unfiltered search ranks first, and reciprocal rank fusion orders them
otherwise, so a door that dropped either would fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from mcp import Client

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.adapters.langchain import HotdataRetriever, make_text_search_tool
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.fusion import rank_branch, reference_fusion
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.routing import SearchRequest

QUERY = "app crashes on start"
FILTER = {"lang": "en"}
K = 4
ROWS = [
    ("the app crashes on start", "fr"),
    ("app crashes on start every time", "fr"),
    ("the app crashes when opening settings", "en"),
    ("crash on start after the update", "en"),
    ("charged twice for one order", "en"),
    ("start the sync again", "en"),
    ("the desktop app freezes", "en"),
    ("crashes on start, then again", "en"),
    ("refund for a cancelled plan", "fr"),
    ("app start is slow", "en"),
]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("doors") / "db"
    table = pa.table(
        {
            "id": list(range(1, len(ROWS) + 1)),
            "body": [body for body, _ in ROWS],
            "lang": [lang for _, lang in ROWS],
        }
    )
    with LocalEngine(directory, embedder=HashingEmbedder()) as engine:
        engine.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
    return directory


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[LocalEngine]:
    with LocalEngine(database, embedder=HashingEmbedder()) as opened:
        yield opened


def _plan(engine: LocalEngine, *, filter: Any, fusion: str) -> SearchPlan:
    request = SearchRequest(
        table="docs", query=QUERY, mode="hybrid", limit=K, filter=filter, fusion=fusion
    )
    return engine.plan_search(request)


def _reference(engine: LocalEngine, plan: SearchPlan) -> list[tuple[int, float]]:
    """``(key, fused score)`` of the plan's page, fused in Python from each branch run alone."""
    fusion = plan.fusion
    assert fusion is not None
    lists, ranks, scores = [], [], []
    for branch in fusion.branches:
        alone = SearchPlan(source=branch, columns=["id"], limit=1000, filter=plan.filter)
        candidates = [(hit.key, hit.ranking_value) for hit in engine.search(alone)]
        keys, branch_ranks = rank_branch(
            candidates, higher_is_better=branch.higher_is_better, depth=plan.depth
        )
        raw_of = dict(candidates)
        lists.append(keys)
        ranks.append(branch_ranks)
        scores.append([float(raw_of[key]) for key in keys])
    hits = reference_fusion(fusion, lists, ranks=ranks, scores=scores, limit=plan.limit)
    return [(hit.key, hit.score) for hit in hits]


@pytest.fixture(scope="module")
def expected(engine: LocalEngine) -> list[tuple[int, float]]:
    reference = _reference(engine, _plan(engine, filter=FILTER, fusion="dbsf"))
    unfiltered = _reference(engine, _plan(engine, filter=None, fusion="dbsf"))
    reciprocal = _reference(engine, _plan(engine, filter=FILTER, fusion="rrf"))
    assert {key for key, _ in reference} <= {
        n for n, (_, lang) in enumerate(ROWS, 1) if lang == "en"
    }
    assert unfiltered[0][0] not in {key for key, _ in reference}  # the filter removes the top
    assert [key for key, _ in reciprocal] != [key for key, _ in reference] or [
        score for _, score in reciprocal
    ] != pytest.approx([score for _, score in reference])
    return reference


def _same(rows: list[tuple[Any, float]], expected: list[tuple[int, float]]) -> None:
    assert [int(key) for key, _ in rows] == [key for key, _ in expected]
    assert [score for _, score in rows] == pytest.approx([score for _, score in expected])


def test_the_toolkit(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    toolkit = SearchToolkit(engine, table="docs", k=K)
    rows = toolkit.search_text(QUERY, filter=FILTER, fusion={"method": "dbsf"})["rows"]
    _same([(row["id"], row["score"]) for row in rows], expected)


def test_the_langchain_tool(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    tool = make_text_search_tool(engine, table="docs", k=K)
    answer = json.loads(tool.invoke({"query": QUERY, "filter": FILTER, "fusion": "dbsf"}))
    _same([(row["id"], row["score"]) for row in answer["rows"]], expected)


def test_the_langchain_retriever(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    retriever = HotdataRetriever(
        engine=engine, table="docs", k=K, mode="hybrid", filter=FILTER, fusion="dbsf"
    )
    documents = retriever.invoke(QUERY)
    _same([(document.id, document.metadata["score"]) for document in documents], expected)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_tool(
    engine: LocalEngine, expected: list[tuple[int, float]], anyio_backend: str
) -> None:
    server = create_server(engine, table="docs", k=K)
    async with Client(server) as client:
        result = await client.call_tool(
            "hotdata_search_text",
            {"query": QUERY, "filter": FILTER, "fusion": {"method": "dbsf"}},
        )
    assert result.is_error is False, result.content
    rows = json.loads(result.content[0].text)["rows"]
    _same([(row["id"], row["score"]) for row in rows], expected)


def test_the_ddn_function(engine: LocalEngine, expected: list[tuple[int, float]]) -> None:
    from starlette.testclient import TestClient

    from hotdata_retrieval.adapters.ddn import create_app

    client = TestClient(create_app(engine, table="docs", default_top_k=K))
    values = {"query": QUERY, "filter": FILTER, "fusion": {"method": "dbsf"}}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in values.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    _same([(hit["id"], hit["score"]) for hit in row["__value"]], expected)


def test_hdq_search(database: Path, expected: list[tuple[int, float]]) -> None:
    result = CliRunner().invoke(
        main,
        [
            "search", QUERY, "--table", "docs", "--database", str(database), "--mode", "hybrid",
            "-k", str(K), "--filter", "lang = 'en'", "--fusion", "dbsf", "--format", "json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    _same([(hit["key"], hit["score"]) for hit in hits], expected)


def test_a_fusion_for_a_search_that_does_not_fuse_is_refused(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters import ToolError

    toolkit = SearchToolkit(engine, table="docs", k=K)
    with pytest.raises(ToolError, match="fusion applies only to a search that combines"):
        toolkit.search(toolkit.semantic_route, {"query": QUERY, "fusion": "dbsf"})
    with pytest.raises(ToolError, match="unknown fusion method 'nope'"):
        toolkit.search_text(QUERY, fusion="nope")
    with pytest.raises(ToolError, match=r"filter\.lang\.\$gt"):
        toolkit.search_text(QUERY, filter={"lang": {"$gt": [1]}})
    with pytest.raises(ToolError, match=r"the filter text does not read: .*send a JSON object"):
        toolkit.search_text(QUERY, filter="lang = ")
