"""Cursors through the doors that build plans: ``SearchRequest(after=...)``, the chain's
``after`` step and ``hdq search --after`` (whose JSON output carries ``next_after``) continue
a ranking page by page as the unpaged search ranks it, and refuse a token another search
returned."""

from __future__ import annotations

import json
from collections.abc import Iterator
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
BODIES = [f"disk full {'again ' * (index % 4)}on host {index % 5}" for index in range(23)]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as opened:
        opened.load_table(
            "logs",
            pa.table({"id": list(range(len(BODIES))), "body": BODIES}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield opened


@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_a_request_walks_a_ranking_with_its_cursor(engine: LocalEngine, mode: str) -> None:
    unpaged = engine.search(
        engine.plan_search(SearchRequest(table="logs", query="disk full", mode=mode, limit=23))
    ).keys
    walked: list[Any] = []
    after = None
    while True:
        request = SearchRequest(table="logs", query="disk full", mode=mode, limit=4, after=after)
        page = engine.search(engine.plan_search(request))
        walked.extend(page.keys)
        after = page.next_after
        if after is None:
            break
    assert walked == unpaged


def test_the_chain_continues_after_a_page(engine: LocalEngine) -> None:
    search = engine.table("logs").search("disk full", mode="hybrid")
    first = search.limit(5).run()
    assert first.next_after is not None
    following = search.limit(5).after(first.next_after).run()
    assert following.keys == search.limit(10).run().keys[5:]
    assert search.after(first.next_after).after(None).plan == search.plan
    with pytest.raises(PlanError, match="another search") as refused:
        engine.table("logs").search("host", mode="hybrid").after(first.next_after)
    assert refused.value.field == "after"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("cursors")
    source = directory / "logs.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": number, "body": body}) + "\n" for number, body in enumerate(BODIES)
        ),
        encoding="utf-8",
    )
    path = str(directory / "db")
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", path, "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def _search(database: str, query: str, *options: str) -> Any:
    return CliRunner().invoke(
        main,
        [
            "search", query, "--table", "logs", "--database", database, "--format", "json",
            "--mode", "text", *options,
        ],
    )  # fmt: skip


def test_hdq_search_pages_with_next_after(database: str) -> None:
    unpaged = [
        hit["key"] for hit in json.loads(_search(database, "disk", "-k", "23").stdout)["hits"]
    ]
    walked: list[Any] = []
    options: list[str] = []
    while True:
        result = _search(database, "disk", "-k", "6", *options)
        assert result.exit_code == EXIT_OK, result.stderr
        document = json.loads(result.stdout)
        walked.extend(hit["key"] for hit in document["hits"])
        if document["next_after"] is None:
            break
        options = ["--after", document["next_after"]]
    assert walked == unpaged
    refused = _search(database, "host", "-k", "6", *options[:0], "--after", _first_token(database))
    assert refused.exit_code == EXIT_INVALID_PLAN
    assert "--after" in refused.stderr


def _first_token(database: str) -> str:
    token: str = json.loads(_search(database, "disk", "-k", "3").stdout)["next_after"]
    return token
