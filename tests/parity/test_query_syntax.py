"""A text branch's query syntax and empty queries: ``query_syntax="terms"`` quotes each word,
so query syntax in the user's text is data and every engine ranks by the words;
``allow_empty=True`` makes a query with no word an empty branch — no rows, no error — alone
and inside a fusion, on every engine; without it such a query is refused when built;
``query_syntax="verbatim"`` sends the text as written, unanalysed, and ranks as ``"text"``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = ["disk full on host", "network error", "disk error again", "full moon", "quiet"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "notes", bodies_table(BODIES))


def _text(query: str, **options: Any) -> Bm25Search:
    return Bm25Search(table="notes", column="body", query_text=query, **options)


def _keys(engine: Any, source: Any) -> list[Any]:
    return list(engine.search(SearchPlan(source=source, limit=10)).keys)


def test_terms_quotes_each_word() -> None:
    branch = _text('disk: "full" -moon', query_syntax="terms")
    assert branch.words == ("disk", "full", "moon")
    assert '\'"disk" "full" "moon"\'' in to_sql(SearchPlan(source=branch))
    assert _text("disk full").search_text == "disk full"


def test_terms_rank_by_the_words_on_every_engine(engine: Any) -> None:
    plain = _keys(engine, _text("disk full"))
    assert plain  # the words match rows
    assert _keys(engine, _text('"disk" full:', query_syntax="terms")) == plain
    assert _keys(engine, _text("disk full", query_syntax="terms")) == plain


@pytest.mark.parametrize("query", ["", "   ", "?! --", "\u3000"])
def test_a_wordless_query_is_an_empty_branch_where_asked(engine: Any, query: str) -> None:
    assert _keys(engine, _text(query, allow_empty=True)) == []
    assert _keys(engine, _text(query, allow_empty=True, query_syntax="terms")) == []


def test_verbatim_ranks_as_text_and_a_wordless_one_returns_no_rows(engine: Any) -> None:
    assert _keys(engine, _text("disk full", query_syntax="verbatim")) == _keys(
        engine, _text("disk full")
    )
    for query in ("", "!!", "?! --"):
        assert _keys(engine, _text(query, query_syntax="verbatim")) == []


@pytest.mark.parametrize("query", ["!!", "", " a:b ", "it's"])
def test_verbatim_text_reaches_the_statement_as_written(query: str) -> None:
    branch = _text(query, query_syntax="verbatim")
    assert branch.search_text == query
    literal = "'" + query.replace("'", "''") + "'"
    assert f"'body', {literal}, 10)" in to_sql(SearchPlan(source=branch), pretty=False)


def test_an_empty_text_branch_leaves_a_fusion_to_its_other_branches(engine: Any) -> None:
    nearest = NearestNeighborSearch(table="notes", column="embedding", query_vector=[1.0, 0.0])
    fused = ReciprocalRankFusion(branches=[_text("", allow_empty=True), nearest])
    hits = engine.search(SearchPlan(source=fused, limit=3)).hits
    alone = engine.search(SearchPlan(source=nearest, limit=3)).hits
    assert [hit.key for hit in hits] == [hit.key for hit in alone]
    assert all(hit.branches["text"].rank is None for hit in hits)


@pytest.mark.parametrize(
    ("query", "pattern"),
    [
        ("", "query_text must not be empty"),
        ("  ", "query_text must not be empty"),
        ("?!", "query_text holds no word to search for, got '\\?!'; pass allow_empty=True"),
    ],
)
def test_a_wordless_query_is_refused_unless_allowed(query: str, pattern: str) -> None:
    with pytest.raises(PlanError, match=pattern):
        _text(query)


def test_a_bad_query_syntax_is_refused() -> None:
    with pytest.raises(PlanError, match="query_syntax must be one of 'text', 'terms'"):
        _text("q", query_syntax="lucene")


@pytest.mark.parametrize("syntax", ["terms", "verbatim"])
def test_query_syntax_and_empty_branches_round_trip(syntax: str) -> None:
    plan = SearchPlan(source=_text("", allow_empty=True, query_syntax=syntax))
    document = plan_to_document(plan)
    assert document["branches"][0]["query_syntax"] == syntax
    assert document["branches"][0]["allow_empty"] is True
    assert plan_from_document(document) == plan


def test_terms_and_text_compile_to_different_templates() -> None:
    """The syntax is part of a plan's shape: a cached template of one never serves the
    other."""
    text = to_sql(SearchPlan(source=_text("a:b")), pretty=False)
    terms = to_sql(SearchPlan(source=_text("a:b", query_syntax="terms")), pretty=False)
    assert "'a:b'" in text and '\'"a" "b"\'' in terms
