"""The local engine's search path reads a plan's filter from its predicate tree: no plan shape
makes it parse SQL (its own compiled statement, or a filter rendered from it), whether the
native path answers the plan or its statement runs with the nearest-neighbour fast path.
sqlglot's parser and tokenizer are made to raise for the length of each search.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import sqlglot
from sqlglot.dialects.dialect import Dialect
from sqlglot.parser import Parser

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    DistributionBasedScoreFusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    StartsWith,
    TieBreaker,
    VectorSearch,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.fastpath import NEAREST_SCAN
from hotdata_retrieval.plan.filters import Predicate

ROWS = 24


def _table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(ROWS)),
            "body": [f"fox {'red' if i % 3 else 'blue'} {i % 5}" for i in range(ROWS)],
            "lang": [None if i % 7 == 0 else ("en" if i % 2 else "fr") for i in range(ROWS)],
            "year": [2000 + i for i in range(ROWS)],
            "price": pa.array([decimal.Decimal(i) / 4 for i in range(ROWS)], pa.decimal128(8, 2)),
            "day": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(ROWS)],
            "emb": pa.array(
                [[1.0, float(i % 6), float(i % 4)] for i in range(ROWS)], pa.list_(pa.float32())
            ),
        }
    )


FILTERS: dict[str, Predicate | None] = {
    "none": None,
    "comparison": Comparison(column="year", operator=">=", value=2005),
    "every leaf": StartsWith(column="lang", prefix="e")
    & InList(column="year", values=[2001, 2003, 2005, 2009, 2011, 2013])
    & ~IsNull(column="lang")
    & Comparison(column="day", operator="<", value="2024-01-20"),
    "decimal (the mask declines: the statement runs)": Comparison(
        column="price", operator=">", value=1.5
    ),
    "empty IN (the mask declines)": InList(column="year", values=[]) | IsNull(column="lang"),
}


def _branches() -> dict[str, Any]:
    text = Bm25Search(table="docs", column="body", query_text="red fox")
    nearest = NearestNeighborSearch(table="docs", column="emb", query_vector=[1.0, 2.0, 0.5])
    return {
        "text": text,
        "nearest": nearest,
        "exact nearest": NearestNeighborSearch(
            table="docs", column="emb", query_vector=[1.0, 2.0, 0.5], exact=True
        ),
        "l2 nearest": NearestNeighborSearch(
            table="docs", column="emb", query_vector=[1.0, 2.0, 0.5], metric="l2"
        ),
        "semantic": VectorSearch(table="docs", column="body", query_text="red fox"),
        "rrf": ReciprocalRankFusion(branches=[text, nearest]),
        "min-max": MinMaxFusion(branches=[text, nearest]),
        "dbsf": DistributionBasedScoreFusion(branches=[text, nearest]),
        "two nearest": ReciprocalRankFusion(
            branches=[
                nearest,
                NearestNeighborSearch(table="docs", column="emb", query_vector=[0, 1, 1]),
            ]
        ),
    }


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as opened:
        opened.load_table(
            "docs", _table(), key_column="id", text_columns=["body"], embed_columns=["body"]
        )
        yield opened


class _Parsed(AssertionError):
    pass


@pytest.fixture
def no_parsing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []

    def refuse(name: str) -> Any:
        def raising(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise _Parsed(f"the search parsed SQL ({name})")

        return raising

    for owner, name in (
        (sqlglot, "parse"),
        (sqlglot, "parse_one"),
        (sqlglot, "tokenize"),
        (sqlglot, "transpile"),
        (Dialect, "parse"),
        (Dialect, "parse_into"),
        (Dialect, "tokenize"),
        (Parser, "parse"),
        (Parser, "parse_into"),
    ):
        monkeypatch.setattr(owner, name, refuse(f"{getattr(owner, '__name__', owner)}.{name}"))
    yield calls


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
@pytest.mark.parametrize("shape", sorted(_branches()))
def test_a_local_search_parses_no_sql(
    engine: LocalEngine, no_parsing: list[str], shape: str, filter_name: str
) -> None:
    plan = SearchPlan(source=_branches()[shape], filter=FILTERS[filter_name], limit=5, offset=1)
    result = engine.search(plan)
    assert no_parsing == []
    assert len(result.keys) <= 5
    extra = SearchPlan(
        source=_branches()[shape],
        filter=FILTERS[filter_name],
        limit=3,
        tie_breakers=[TieBreaker(column="year", descending=True)],
    )
    engine.search(extra)  # the native path declines tie-breakers: the statement runs
    assert no_parsing == []


def test_the_parser_patch_can_fail(engine: LocalEngine, no_parsing: list[str]) -> None:
    """Raw SQL is parsed (it is the caller's text): the patch sees it."""
    with pytest.raises(_Parsed):
        sqlglot.parse_one("SELECT 1")
    assert no_parsing


def test_a_filtered_nearest_statement_takes_the_fast_path_from_the_predicate(
    engine: LocalEngine, monkeypatch: pytest.MonkeyPatch, no_parsing: list[str]
) -> None:
    """A plan the native path declines (a distribution-based fusion) runs its statement with
    its nearest branch rewritten to ``nearest_scan``, the filter handed over as the plan's
    predicate."""
    ran: list[str] = []
    original = engine._sessions.run

    def recording(statement: str, reported: str) -> Any:
        ran.append(statement)
        return original(statement, reported)

    monkeypatch.setattr(engine._sessions, "run", recording)
    plan = SearchPlan(source=_branches()["dbsf"], filter=FILTERS["every leaf"], limit=5)
    hits = engine.search(plan)
    assert NEAREST_SCAN in ran[-1] and "NULL)" in ran[-1]
    assert no_parsing == []
    monkeypatch.undo()  # the reported statement, run as written (parsed: raw SQL)
    assert [row["id"] for row in engine.sql(hits.sql).to_pylist()] == hits.keys


@pytest.fixture(scope="module")
def hybrid_engine() -> Iterator[LocalEngine]:
    """An engine compiling for ``hotdata-native``: a fusion of one text and one vector branch
    is one ``hybrid_search(...)`` call, its filter written as text in an option."""
    with LocalEngine(embedder=HashingEmbedder(dimensions=8), profile="hotdata-native") as opened:
        opened.load_table(
            "docs", _table(), key_column="id", text_columns=["body"], embed_columns=["body"]
        )
        yield opened


@pytest.mark.parametrize("filter_name", sorted(name for name in FILTERS if name != "none"))
@pytest.mark.parametrize("shape", ["rrf", "min-max", "dbsf"])
def test_a_hybrid_search_call_reads_its_filter_from_the_predicate(
    hybrid_engine: LocalEngine,
    engine: LocalEngine,
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    filter_name: str,
) -> None:
    """Where the native path declines (a decimal column, an empty ``IN`` list, a
    distribution-based fusion), the plan's ``hybrid_search`` statement runs, and the call
    takes the plan's predicate, never parsing the filter text the compiler wrote; its hits
    are the CTE statement's."""
    plan = SearchPlan(source=_branches()[shape], filter=FILTERS[filter_name], limit=5)
    expected = engine.search(plan).keys
    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append("parsed")
        raise _Parsed("the search parsed SQL")

    for owner, name in ((sqlglot, "parse_one"), (Dialect, "tokenize"), (Parser, "parse")):
        monkeypatch.setattr(owner, name, refuse)
    result = hybrid_engine.search(plan)
    assert calls == []
    assert "hybrid_search(" in result.sql
    assert result.keys == expected


def test_a_compiled_filter_stays_known_while_any_statement_holding_it_runs(
    hybrid_engine: LocalEngine,
) -> None:
    """Two statements with the same filter text, one ending first: the other still reads the
    predicate; a predicate need not be hashable (an operator registered from outside)."""
    from hotdata_retrieval.engines.local.hybrid import HybridSearch

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    hybrid = HybridSearch(hybrid_engine)
    first, second = Unhashable(), Unhashable()
    with hybrid.compiled({"a = 1": first}):  # type: ignore[dict-item]
        with hybrid.compiled({"a = 1": second, "b = 2": second}):  # type: ignore[dict-item]
            assert set(hybrid._compiled) == {"a = 1", "b = 2"}
        assert set(hybrid._compiled) == {"a = 1"}  # the first statement still runs
    assert hybrid._compiled == {}
