"""PostgreSQL and DuckDB compute the documented BM25 term for term — ``idf = ln(1 + (N - df +
0.5) / (df + 0.5))``, k1 1.2, b 0.75, a query term given twice counted twice — so their text
scores equal a NumPy reference within 1e-6, repeated words and empty texts included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hotdata_retrieval.analysis import analyze_text
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import bodies_table, loaded_engine

BODIES = [
    "disk full on node seven",
    "the disk is fine",
    None,
    "",
    "disk disk disk failure",
    "full moon over the node",
    "login page slow after the node restarts and the disk fills up again",
    "node",
]
QUERIES = ["disk full", "disk disk node", "moon node full", "failure failure failure", "absent"]


@pytest.fixture(scope="module", params=["duckdb", "postgres"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "formula_rows", bodies_table(BODIES))


def _reference(query: str) -> dict[int, float]:
    """Each matching key's BM25 by NumPy, over the rows with text (NULL is no document)."""
    documents = {key: analyze_text(body) for key, body in enumerate(BODIES) if body is not None}
    lengths = np.array([len(terms) for terms in documents.values()], dtype=np.float64)
    count, average = len(documents), float(lengths.mean())
    scores: dict[int, float] = {}
    for term in analyze_text(query):
        frequencies = np.array([terms.count(term) for terms in documents.values()], np.float64)
        df = float(np.count_nonzero(frequencies))
        if not df:
            continue
        idf = np.log(1 + (count - df + 0.5) / (df + 0.5))
        weights = idf * 2.2 * frequencies / (frequencies + 1.2 * (0.25 + 0.75 * lengths / average))
        for key, frequency, weight in zip(documents, frequencies, weights):
            if frequency:
                scores[key] = scores.get(key, 0.0) + float(weight)
    return scores


@pytest.mark.parametrize("query", QUERIES)
def test_text_scores_equal_the_documented_bm25(engine: Any, query: str) -> None:
    plan = engine.plan_search(
        SearchRequest(table="formula_rows", query=query, mode="text", limit=20)
    )
    found = {hit.key: hit.score for hit in engine.search(plan).hits}
    expected = _reference(query)
    assert found.keys() == expected.keys()
    for key, score in expected.items():
        assert found[key] == pytest.approx(score, abs=1e-6)
