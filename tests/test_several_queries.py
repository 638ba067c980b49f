"""``queries=``: what a request refuses, how the router weighs several query texts, and the
chain and ``hdq search --query`` doors. Every engine runs them in
``tests/parity/test_several_queries.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval import PlanError
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.fusion import competition_ranks, reciprocal_rank_fusion
from hotdata_retrieval.indexes import TableIndexes, VectorIndex
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.routing import MAX_QUERIES, SearchRequest, plan_search, search_request

INDEXES = TableIndexes(
    table=TableName.parse("docs"),
    bm25_columns=("body",),
    vectors=(VectorIndex(column="embedding", metric="cosine"),),
    key_column="id",
)


def _embed(text: str) -> list[float]:
    return [float(len(text)), 1.0]


def _plan(mode: str, **options: object) -> SearchPlan:
    return plan_search(
        INDEXES, search_request("docs", "disk full", mode=mode, **options), embed_query=_embed
    )


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        ("disk", "queries must be a list of query texts"),
        ([("disk",)], "queries[0] must be a query text or a (text, weight) pair"),
        ([(3, 1.0)], "queries[0] holds no text"),
        ([("disk", -1)], "queries[0] has weight -1"),
        ([("disk", True)], "queries[0] has weight True"),
        ([("disk", float("nan"))], "queries[0] has weight nan"),
        (["q"] * MAX_QUERIES, f"a search fuses at most {MAX_QUERIES} query texts"),
    ],
)
def test_a_request_refuses_queries_it_cannot_read(queries: object, message: str) -> None:
    with pytest.raises(PlanError, match=re.escape(message)) as caught:
        SearchRequest(table="docs", query="q", queries=queries)
    assert caught.value.field == "queries"


def test_text_queries_are_weighted_by_their_own_weight() -> None:
    plan = _plan("text", queries=["memory", ("network", 2.5)])
    assert plan.fusion is not None
    assert [branch.query_text for branch in plan.branches] == ["disk full", "memory", "network"]
    assert plan.fusion.weights == (1.0, 1.0, 2.5)
    assert plan.branch_names == ("text", "text_2", "text_3")


def test_hybrid_queries_multiply_the_fusion_pair() -> None:
    plan = _plan("hybrid", queries=[("memory", 2.0)], fusion="min_max", alpha=0.25)
    assert plan.fusion is not None
    assert plan.fusion.weights == (0.75, 0.25, 1.5, 0.5)
    assert plan.branch_names == ("text", "nearest", "text_2", "nearest_2")
    assert plan.branches[3].query_vector == tuple(_embed("memory"))  # type: ignore[union-attr]


def test_weights_of_one_kind_of_branch_are_the_query_weights() -> None:
    with pytest.raises(PlanError, match="weighs each query by its own weight") as caught:
        _plan("text", queries=["memory"], weights=[1, 2])
    assert caught.value.field == "weights"
    with pytest.raises(PlanError, match="takes two weights, the text and the vector"):
        _plan("hybrid", queries=["memory"], weights=[1, 2, 3, 4])


def test_a_fusion_without_queries_is_still_hybrid_only() -> None:
    with pytest.raises(PlanError, match="applies only to hybrid search"):
        _plan("text", fusion="rrf")


BODIES = [
    "the desktop app crashes on start with error E4012",
    "sign in fails after the upgrade",
    "files stop syncing between devices",
    "charged twice for one month",
    "the app crashes when opening settings",
    "sync stopped after the upgrade",
]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("queries")
    source = directory / "tickets.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"t{number}", "body": body}) + "\n"
            for number, body in enumerate(BODIES, start=1)
        ),
        encoding="utf-8",
    )
    path = directory / "db"
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", str(path), "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def _reference(engine: LocalEngine, texts: list[str]) -> list[str]:
    lists, ranks = [], []
    for text in texts:
        hits = engine.table("tickets").search(text, mode="text").limit(100).run()
        lists.append(hits.keys)
        ranks.append(competition_ranks([hit.score for hit in hits]))  # type: ignore[misc]
    return [hit.key for hit in reciprocal_rank_fusion(lists, ranks=ranks, limit=10)]


def test_the_chain_and_hdq_search_fuse_the_queries(database: Path) -> None:
    texts = ["app crashes", "upgrade", "sync"]
    with LocalEngine(database) as engine:
        chained = engine.table("tickets").search(texts[0], mode="text", queries=texts[1:]).run()
        expected = _reference(engine, texts)
    assert chained.keys == expected
    result = CliRunner().invoke(
        main,
        ["search", texts[0], "--query", texts[1], "--query", texts[2], "--table", "tickets",
         "--database", str(database), "--mode", "text", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    assert [hit["key"] for hit in document["hits"]] == expected
    assert document["branches"] == ["text", "text_2", "text_3"]


def test_hdq_search_names_query_in_its_error(database: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["search", "app", *(["--query", "q"] * MAX_QUERIES), "--table", "tickets",
         "--database", str(database), "--mode", "text"],
    )  # fmt: skip
    assert result.exit_code == EXIT_INVALID_PLAN
    assert "--query" in result.stderr
