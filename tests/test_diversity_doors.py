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
    chained = engine.table("docs").search(
        QUERY, mode=mode, diversity=LAMBDA, candidates=CANDIDATES
    )
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
