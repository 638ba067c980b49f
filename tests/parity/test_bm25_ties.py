"""Rows with the same term statistics get bit-identical BM25 scores on every store, so their
tie falls to the key: each store sums a row's per-term contributions in one fixed order (the
query terms' order). Summed in no fixed order, three contributions can round to scores a last
digit apart (``3.4066461553723815`` and ``3.406646155372381`` on DuckDB at 4,000 rows), and
the tie is then broken by float noise instead of the key, page after page."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hotdata_retrieval.analysis import analyze_text, bm25_score
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import bodies_table, loaded_engine

WORDS = ["fox", "owl", "den", "red", "river", "stone", "moss", "pine", "lake", "hill"]
"""Ten words the analysis keeps as they are (no stop word, nothing to stem)."""
ROWS = 4000
"""Enough rows that DuckDB's parallel sum showed the noise (the repeated word below)."""
QUERY = "moss moss lake fox"
"""A repeated word and three distinct terms: three or more contributions per row."""
LIMIT = 60


def _bodies() -> list[str | None]:
    rng = np.random.default_rng(8)
    return [" ".join(rng.choice(WORDS, rng.integers(1, 12))) for _ in range(ROWS)]


BODIES = _bodies()


@pytest.fixture(scope="module", params=["local", "sqlite", "duckdb", "postgres", "lancedb"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "tied_rows", bodies_table(BODIES))


def _statistics(body: str) -> tuple[tuple[int, ...], int]:
    """What a row's score depends on: each query term's frequency in it, and its length."""
    terms = analyze_text(body)
    return tuple(terms.count(term) for term in dict.fromkeys(analyze_text(QUERY))), len(terms)


def _reference_order() -> list[int]:
    """The matching keys by the documented BM25 (:func:`bm25_score`, in Python) of their
    statistics, descending, ties (the same statistics) by key ascending."""
    documents = [analyze_text(body or "") for body in BODIES]
    query = analyze_text(QUERY)
    held = {term: sum(term in terms for terms in documents) for term in query}
    average = sum(map(len, documents)) / len(documents)
    scores = {
        key: bm25_score(
            query, {t: terms.count(t) for t in query}, len(terms), held, len(documents), average
        )
        for key, terms in enumerate(documents)
        if any(term in terms for term in query)
    }
    by_class: dict[tuple[tuple[int, ...], int], float] = {}
    for key in scores:
        by_class.setdefault(_statistics(BODIES[key] or ""), scores[key])
    ranked = sorted(set(by_class.values()), reverse=True)
    # distinct statistics never come within float noise of each other here, so the
    # order of the classes is the formula's, whatever the order of a sum
    assert all(a - b > 1e-9 for a, b in itertools.pairwise(ranked))
    return sorted(scores, key=lambda key: (-by_class[_statistics(BODIES[key] or "")], key))


def test_rows_with_the_same_statistics_tie_exactly_and_come_in_key_order(engine: Any) -> None:
    plan = engine.plan_search(
        SearchRequest(table="tied_rows", query=QUERY, mode="text", limit=LIMIT)
    )
    hits = engine.search(plan).hits
    classes: dict[tuple[tuple[int, ...], int], set[float]] = {}
    for hit in hits:
        classes.setdefault(_statistics(BODIES[hit.key] or ""), set()).add(hit.score)
    noisy = {found: scores for found, scores in classes.items() if len(scores) > 1}
    assert not noisy, f"{engine.parity_name}: one class of statistics, several scores: {noisy}"
    assert [hit.key for hit in hits] == _reference_order()[:LIMIT]
