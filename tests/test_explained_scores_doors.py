"""``explain_scores`` through the doors built so far: ``SearchRequest`` and ``plan_search``,
the chain API, ``SearchResult.to_list`` and ``hdq search --explain-scores`` (JSON and table).
Each reports contributions that add up to the fused score the same search reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval import PlanError
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

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
    directory = tmp_path_factory.mktemp("explained")
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


def _adds_up(score: float, contributions: list[float]) -> bool:
    total = 0.0
    for contribution in contributions:
        total += contribution
    return math.isclose(total, score, rel_tol=0.0, abs_tol=1e-9)


def test_the_request_refuses_a_flag_that_is_not_one() -> None:
    with pytest.raises(PlanError, match="explain_scores must be true or false") as raised:
        SearchRequest(table="tickets", query="q", explain_scores="yes")  # type: ignore[arg-type]
    assert raised.value.field == "explain_scores"


@pytest.mark.parametrize("fusion", ["rrf", "min_max", "dbsf"])
def test_the_request_and_the_chain_explain(database: Path, fusion: str) -> None:
    with LocalEngine(database) as engine:
        engine.embedder = HashingEmbedder()
        plan = engine.plan_search(
            "tickets", "app crashes upgrade", mode="hybrid", fusion=fusion, explain_scores=True
        )
        assert plan.explain_scores and plan.include_branch_scores
        result = engine.search(plan)
        chained = (
            engine.table("tickets")
            .search("app crashes upgrade", mode="hybrid", fusion=fusion, explain_scores=True)
            .run()
        )
    assert chained == result
    assert len(result) >= 3
    for hit in result:
        assert hit.score is not None
        contributions = [branch.contribution for branch in hit.branches.values()]
        assert all(value is not None for value in contributions)
        assert _adds_up(hit.score, contributions)  # type: ignore[arg-type]
    rows = result.to_list()
    for row in rows:
        assert _adds_up(row["score"], [row["text_contribution"], row["nearest_contribution"]])
        assert {"text_normalized", "nearest_normalized"} <= set(row)


def test_a_single_branch_is_not_explained(database: Path) -> None:
    with LocalEngine(database) as engine:
        result = engine.table("tickets").search("crashes", mode="text", explain_scores=True).run()
    assert result.hits
    assert all(hit.branches["text"].contribution is None for hit in result)


def _search(database: Path, *options: str) -> str:
    result = CliRunner().invoke(
        main,
        ["search", "app crashes upgrade", "--table", "tickets", "--database", str(database),
         "--mode", "hybrid", *options],
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    return result.stdout


@pytest.mark.parametrize("fusion", ["rrf", "min_max", "dbsf"])
def test_hdq_search_explains_in_json(database: Path, fusion: str) -> None:
    document = json.loads(
        _search(database, "--fusion", fusion, "--explain-scores", "--format", "json")
    )
    missed = 0
    for hit in document["hits"]:
        branches = hit["branches"]
        assert _adds_up(hit["score"], [branch["contribution"] for branch in branches.values()])
        for branch in branches.values():
            if branch["rank"] is None:
                missed += 1
                assert branch["normalized"] is None and branch["contribution"] == 0
    plain = json.loads(_search(database, "--fusion", fusion, "--format", "json"))
    assert [hit["key"] for hit in plain["hits"]] == [hit["key"] for hit in document["hits"]]
    assert all(
        "contribution" not in branch for hit in plain["hits"] for branch in hit["branches"].values()
    )


def test_hdq_search_shows_contributions_in_its_table(database: Path) -> None:
    shown = _search(database, "--explain-scores")
    assert "text adds" in shown and "nearest adds" in shown
    assert "adds" not in _search(database)
