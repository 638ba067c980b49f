"""Facets through the doors that build plans: ``SearchRequest`` (``plan_search``), the
chain's ``facets`` step, ``hdq search --facet`` (repeatable; the JSON output's ``facets``)
and ``hdq explain``'s note; each door's counts equal a Python count of the rows the query
matches."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval import Bm25Search, PlanError, SearchPlan
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.document import plan_to_document
from hotdata_retrieval.routing import SearchRequest

EMBEDDER = HashingEmbedder(dimensions=16)
ROWS = [
    ("en", "disk full on the server"),
    ("en", "the disk is full again"),
    ("de", "disk full warning"),
    (None, "full disk after the upgrade"),
    ("fr", "network slow"),
    ("en", "disk errors"),
    ("de", "login fails"),
    ("fr", "full backup"),
]


def _text_matches(words: set[str]) -> Counter[str]:
    """The reference: each language's rows whose body holds one of ``words``."""
    return Counter(lang for lang, body in ROWS if lang is not None and words & set(body.split()))


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    table = pa.table(
        {
            "id": list(range(len(ROWS))),
            "lang": [lang for lang, _ in ROWS],
            "body": [body for _, body in ROWS],
        }
    )
    with LocalEngine(embedder=EMBEDDER) as opened:
        opened.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        yield opened


def test_a_request_counts_its_facets(engine: LocalEngine) -> None:
    request = SearchRequest(table="docs", query="disk", mode="text", limit=2, facets=["lang"])
    plan = engine.plan_search(request)
    assert plan.facets == ("lang",)
    result = engine.search(plan)
    assert dict(result.facets["lang"]) == _text_matches({"disk"})
    assert result.facets_cut == {"lang": 0}
    assert len(result) == 2
    with pytest.raises(PlanError) as refused:
        SearchRequest(table="docs", query="disk", facets="lang")
    assert refused.value.field == "facets"


def test_the_chain_counts_facets_and_stops(engine: LocalEngine) -> None:
    search = engine.table("docs").search("full", mode="text").limit(3)
    faceted = search.facets("lang", "id")
    assert faceted.plan.facets == ("lang", "id")
    result = faceted.run()
    assert dict(result.facets["lang"]) == _text_matches({"full"})
    assert sum(result.facets["id"].values()) == sum(_text_matches({"full"}).values()) + 1
    assert faceted.facets().plan == search.plan
    with pytest.raises(PlanError, match="facets count the rows of a plain ranking"):
        faceted.group_by("lang")


def test_a_faceted_pages_cursor_continues_without_facets(engine: LocalEngine) -> None:
    first = SearchRequest(table="docs", query="disk full", mode="text", limit=2, facets=["lang"])
    page = engine.search(engine.plan_search(first))
    assert page.next_after is not None
    with pytest.raises(PlanError, match="ask for the next page without facets") as refused:
        engine.plan_search(SearchRequest(**{**_fields(first), "after": page.next_after}))
    assert refused.value.field == "after"
    plain = SearchRequest(table="docs", query="disk full", mode="text", limit=2)
    following = engine.search(
        engine.plan_search(SearchRequest(**{**_fields(plain), "after": page.next_after}))
    )
    whole = engine.search(engine.plan_search(SearchRequest(**{**_fields(plain), "limit": 4})))
    assert [*page.keys, *following.keys] == list(whole.keys)


def _fields(request: SearchRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in ("table", "query", "mode", "limit", "facets")}


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("facets")
    source = directory / "docs.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": number, "lang": lang, "body": body}) + "\n"
            for number, (lang, body) in enumerate(ROWS)
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
            "search", "disk", "--table", "docs", "--database", database,
            "--format", "json", "--mode", "text", *options,
        ],
    )  # fmt: skip


def test_hdq_search_reports_facets(database: str) -> None:
    result = _search(database, "-k", "1", "--facet", "lang", "--facet", "id")
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    expected = _text_matches({"disk"})
    lang = document["facets"]["lang"]
    assert {entry["value"]: entry["count"] for entry in lang} == expected
    assert [entry["count"] for entry in lang] == sorted(expected.values(), reverse=True)
    assert document["facets_cut"] == {"lang": 0, "id": 0}
    assert len(document["hits"]) == 1
    assert "facets" not in json.loads(_search(database, "-k", "1").stdout)


def test_hdq_search_names_its_facet_option_in_errors(database: str) -> None:
    result = _search(database, "--facet", "score")
    assert result.exit_code == EXIT_INVALID_PLAN
    assert "--facet" in result.stderr


def test_hdq_explain_notes_the_facets() -> None:
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="disk"),
        limit=3,
        facets=["lang"],
    )
    result = CliRunner().invoke(
        main, ["explain", "--plan", "-"], input=json.dumps(plan_to_document(plan))
    )
    assert result.exit_code == EXIT_OK, result.stderr
    assert "-- counts the values of lang among the first 200 ranked rows" in result.stderr
    assert "-- fetches 200 candidate rows for the page and the facets" in result.stderr
    assert "COUNT(*) OVER (PARTITION BY lang)" in result.stdout


def test_a_faceted_page_continues_with_its_cursor(engine: LocalEngine) -> None:
    search = engine.table("docs").search("full disk", mode="text")
    first = search.limit(2).facets("lang").run()
    assert first.next_after is not None
    following = search.limit(2).after(first.next_after).run()
    assert first.keys + following.keys == search.limit(4).run().keys
