"""SQLite, DuckDB and PostgreSQL compute the documented BM25 term for term — ``idf = ln(1 + (N
- df + 0.5) / (df + 0.5))``, k1 1.2, b 0.75, a query term given twice counted twice — so their
text scores equal a NumPy reference within 1e-6, repeated words and empty texts included, and
after rows are replaced and deleted by key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.analysis import analyze_text
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.search import Bm25Search, SearchPlan
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


@pytest.fixture(scope="module", params=["sqlite", "duckdb", "postgres", "lancedb"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "formula_rows", bodies_table(BODIES))


def _reference(query: str, bodies: dict[int, str | None] | None = None) -> dict[int, float]:
    """Each matching key's BM25 by NumPy, over the rows with text (NULL is no document) of
    ``bodies`` (by key; :data:`BODIES` by position unless given)."""
    if bodies is None:
        bodies = dict(enumerate(BODIES))
    documents = {key: analyze_text(body) for key, body in bodies.items() if body is not None}
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


def _rows(bodies: dict[int, str | None]) -> pa.Table:
    keys = list(bodies)
    return pa.table(
        {
            "id": pa.array(keys, pa.int64()),
            "body": pa.array(list(bodies.values()), pa.string()),
            "embedding": pa.array([[1.0, float(key)] for key in keys], pa.list_(pa.float32(), 2)),
        }
    )


def test_text_scores_after_changes_equal_the_documented_bm25(engine: Any) -> None:
    """Rows replaced (a longer text, a text made NULL, a NULL given text), added and deleted by
    key change the row count, the mean length and the terms' document counts as a fresh load
    of the final rows would have them."""
    model: dict[int, str | None] = dict(enumerate(BODIES))
    engine.load_table("changed_rows", _rows(model), key_column="id", text_columns=["body"])
    changes = [
        {0: "disk disk disk disk full full", 2: "a node at last", 1: None, 10: "moon failure"},
        {11: "", 12: "the disk of the node of the moon"},
    ]
    for change in changes:
        engine.upsert_rows("changed_rows", _rows(change))
        model.update(change)
    engine.delete_rows("changed_rows", [4, 5, 99])
    del model[4], model[5]
    for query in QUERIES:
        plan = engine.plan_search(
            SearchRequest(table="changed_rows", query=query, mode="text", limit=20)
        )
        found = {hit.key: hit.score for hit in engine.search(plan).hits}
        expected = _reference(query, model)
        assert found.keys() == expected.keys(), query
        for key, score in expected.items():
            assert found[key] == pytest.approx(score, abs=1e-6), (query, key)


@pytest.mark.parametrize("query", QUERIES)
def test_a_filter_keeps_the_whole_tables_statistics(engine: Any, query: str) -> None:
    """A filter chooses rows, not the corpus: the kept rows score as without the filter (the
    document counts, row count and mean length are the table's)."""
    plan = SearchPlan(
        source=Bm25Search(table="formula_rows", column="body", query_text=query, allow_empty=True),
        filter=Comparison(column="id", operator=">=", value=4),
        limit=20,
    )
    found = {hit.key: hit.score for hit in engine.search(plan).hits}
    expected = {key: score for key, score in _reference(query).items() if key >= 4}
    assert found.keys() == expected.keys()
    for key, score in expected.items():
        assert found[key] == pytest.approx(score, abs=1e-6)
