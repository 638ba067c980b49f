"""Grouping through the doors that build plans: ``SearchRequest`` (``plan_search``), the
chain's ``group_by`` step and ``hdq search --group-by/--group-size`` give the plan's
``group_by`` and ``group_size``, and their pages hold one row (or ``group_size`` rows) per
parent document, as the ungrouped ranking de-duplicated by parent in Python."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval import PlanError
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.routing import SearchRequest

EMBEDDER = HashingEmbedder(dimensions=16)
# Document "a" has five chunks about a full disk; "b" to "e" one or two each.
CHUNKS = [
    ("a", "disk full on the server"),
    ("a", "the disk is full again"),
    ("b", "disk full warning"),
    ("a", "full disk after the upgrade"),
    ("c", "network slow"),
    ("a", "disk full disk full"),
    ("d", "disk errors"),
    ("a", "clean a full disk"),
    ("b", "login fails"),
    ("e", "full backup"),
]


def _table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(len(CHUNKS))),
            "parent": [parent for parent, _ in CHUNKS],
            "body": [body for _, body in CHUNKS],
        }
    )


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as opened:
        opened.load_table("chunks", _table(), text_columns=["body"], embed_columns=["body"])
        yield opened


def _best_per_parent(rows: list[dict[str, Any]], limit: int, size: int = 1) -> list[Any]:
    """The reference: the ranked rows' first ``size`` of each parent, ``limit`` parents."""
    kept: dict[Any, list[Any]] = {}
    for row in rows:
        chosen = kept.setdefault(row["parent"], [])
        if len(chosen) < size:
            chosen.append(row["id"])
    return [key for keys in list(kept.values())[:limit] for key in keys]


@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_a_request_groups_its_page(engine: LocalEngine, mode: str) -> None:
    everything = engine.search(
        engine.plan_search(SearchRequest(table="chunks", query="disk full", mode=mode, limit=50))
    )
    ungrouped = [{"id": hit.key, "parent": CHUNKS[hit.key][0]} for hit in everything]
    ungrouped = [{"id": row["id"], "parent": CHUNKS[row["id"]][0]} for row in ungrouped]
    for size in (1, 2):
        request = SearchRequest(
            table="chunks", query="disk full", mode=mode, limit=3, group_by="parent",
            group_size=size,
        )  # fmt: skip
        plan = engine.plan_search(request)
        assert (plan.group_by, plan.group_size) == ("parent", size)
        result = engine.search(plan)
        assert result.keys == _best_per_parent(ungrouped, 3, size)
        assert len({hit.columns["parent"] for hit in result}) == 3


@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_a_grouped_page_hands_out_no_cursor(mode: str) -> None:
    # a grouped plan pages its groups with offset; its candidates' own token (a full set of
    # candidates, more rows than they hold) would continue their ungrouped ranking, skipping
    # rows silently if passed to the ungrouped search
    rows = pa.table(
        {
            "id": list(range(600)),
            "parent": [f"p{number % 40}" for number in range(600)],
            "body": [f"disk full number {number}" for number in range(600)],
        }
    )
    with LocalEngine(embedder=EMBEDDER) as opened:
        opened.load_table("many", rows, text_columns=["body"], embed_columns=["body"])
        request = SearchRequest(table="many", query="disk full", mode=mode, limit=2)
        assert opened.search(opened.plan_search(request)).next_after is not None
        grouped = SearchRequest(
            table="many", query="disk full", mode=mode, limit=2, group_by="parent"
        )
        result = opened.search(opened.plan_search(grouped))
    assert len(result) == 2
    assert result.next_after is None


def test_a_request_refuses_a_group_size_without_a_column(engine: LocalEngine) -> None:
    with pytest.raises(PlanError, match="group_size") as raised:
        engine.plan_search(SearchRequest(table="chunks", query="disk", mode="text", group_size=2))
    assert raised.value.field == "group_size"
    with pytest.raises(PlanError, match="101"):
        engine.plan_search(
            SearchRequest(table="chunks", query="disk", group_by="parent", group_size=101)
        )


def test_the_chain_groups_and_ungroups(engine: LocalEngine) -> None:
    search = engine.table("chunks").search("disk full", mode="text").limit(3)
    grouped = search.group_by("parent", group_size=2)
    assert (grouped.plan.group_by, grouped.plan.group_size) == ("parent", 2)
    rows = grouped.to_list()
    parents = [row["parent"] for row in rows]
    assert len(set(parents)) == 3 and all(parents.count(p) <= 2 for p in parents)
    assert grouped.group_by(None).plan == search.plan


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("groups")
    source = directory / "chunks.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": number, "parent": parent, "body": body}) + "\n"
            for number, (parent, body) in enumerate(CHUNKS)
        ),
        encoding="utf-8",
    )
    path = str(directory / "db")
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", path, "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def _search(database: str, *options: str) -> Any:
    return CliRunner().invoke(
        main,
        [
            "search", "disk full", "--table", "chunks", "--database", database,
            "--format", "json", "--mode", "text", "--columns", "id,parent", *options,
        ],
    )  # fmt: skip


def test_hdq_search_groups_by_a_column(database: str) -> None:
    plain = json.loads(_search(database, "-k", "20").stdout)
    ungrouped = [{"id": hit["key"], "parent": hit["columns"]["parent"]} for hit in plain["hits"]]
    result = _search(database, "-k", "2", "--group-by", "parent", "--group-size", "2")
    assert result.exit_code == EXIT_OK, result.stderr
    keys = [hit["key"] for hit in json.loads(result.stdout)["hits"]]
    assert keys == _best_per_parent(ungrouped, 2, 2)


def test_hdq_search_names_its_group_options_in_errors(database: str, tmp_path: Path) -> None:
    result = _search(database, "--group-size", "3")
    assert result.exit_code == EXIT_INVALID_PLAN
    assert "--group-size" in result.stderr
